// .npy reader and writer. Format: "\x93NUMPY", major, minor, header length (uint16 for 1.0,
// uint32 for 2.0/3.0, little-endian), then an ASCII Python dict literal
// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), } padded with spaces and '\n' so the
// data starts on a 64-byte boundary, then the raw data.
#include "kernelformer/io/npy.hpp"

#include <fmt/format.h>

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "kernelformer/io/atomic_file.hpp"

namespace kf::io {
namespace {

// Every error of this file: std::runtime_error "NAME: what".
[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", name, what));
}

// At most ~80 characters of a header fragment, for messages: one line, so control bytes (a line
// break inside a corrupted header) are shown as '?'.
std::string quote(std::string_view s) {
  const std::size_t end = s.find_first_of(",}");  // up to the end of this dict value
  s = s.substr(0, end);
  std::string q = s.size() > 80 ? std::string(s.substr(0, 77)) + "..." : std::string(s);
  for (char& c : q)
    if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f') c = '?';
  return q;
}

// The value text after 'key': in the header dict (numpy writes single quotes; double quotes are
// accepted too), leading spaces skipped. The rest of the header follows it: callers read only a
// prefix. Throws when the key is missing.
std::string_view dict_value(std::string_view header, std::string_view key,
                            const std::string& name) {
  const std::string quoted1 = fmt::format("'{}'", key), quoted2 = fmt::format("\"{}\"", key);
  auto pos = header.find(quoted1);
  if (pos == std::string_view::npos) pos = header.find(quoted2);
  if (pos == std::string_view::npos) fail(name, fmt::format("npy header has no '{}' entry", key));
  pos = header.find(':', pos);
  if (pos == std::string_view::npos) fail(name, "malformed npy header");
  std::string_view rest = header.substr(pos + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest;
}

// The dims of "(3, 4)", "(5,)" or "()" and their product, with overflow-safe arithmetic: a
// dimension beyond the index range or a product that wraps is an error, never a small number.
std::vector<index> parse_shape(std::string_view text, std::size_t& count, const std::string& name) {
  if (text.empty() || text.front() != '(') fail(name, "malformed shape in npy header");
  const auto close = text.find(')');
  if (close == std::string_view::npos) fail(name, "malformed shape in npy header");
  text = text.substr(1, close - 1);
  std::vector<index> shape;
  std::uint64_t product = 1;
  while (true) {
    while (!text.empty() && (text.front() == ' ' || text.front() == ',')) text.remove_prefix(1);
    if (text.empty()) break;
    if (text.front() == '-') fail(name, "negative dimension in npy header");
    std::uint64_t dim = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), dim);
    if (ec == std::errc::result_out_of_range ||
        (ec == std::errc() && dim > static_cast<std::uint64_t>(std::numeric_limits<index>::max())))
      fail(name, fmt::format("dimension {} in the npy header is too large", quote(text)));
    if (ec != std::errc() || p == text.data())
      fail(name, fmt::format("malformed shape in npy header ({})", quote(text)));
    if (shape.size() == 2) fail(name, "has more than 2 dimensions; expected a 1-D or 2-D array");
    // product stays exact in 64 bits, or the header is refused: a wrapped count could pass the
    // size check below with a tiny number.
    shape.push_back(static_cast<index>(dim));
    if (__builtin_mul_overflow(product, dim, &product))
      fail(name, "the npy header's shape has more values than any file can hold");
    text.remove_prefix(static_cast<std::size_t>(p - text.data()));
  }
  count = static_cast<std::size_t>(product);
  return shape;
}

// Reads count values of type From (stored in h's byte order and layout) into dst, a row-major
// rows × cols buffer of T. memcpy, not a cast: the source may be unaligned inside the file.
template <class From, class T>
void convert_values(const char* src, const npy_header& h, T* dst) {
  const index rows = h.rows(), cols = h.cols();
  auto value = [&](std::size_t i) {
    From f;
    std::memcpy(&f, src + i * sizeof(From), sizeof(From));
    if (h.big_endian) {  // swap the bytes as an integer of the same width
      using U = std::conditional_t<sizeof(From) == 4, std::uint32_t, std::uint64_t>;
      U u;
      std::memcpy(&u, &f, sizeof u);
      u = sizeof(From) == 4 ? static_cast<U>(__builtin_bswap32(static_cast<std::uint32_t>(u)))
                            : static_cast<U>(__builtin_bswap64(static_cast<std::uint64_t>(u)));
      std::memcpy(&f, &u, sizeof u);
    }
    return static_cast<T>(f);
  };
  // Fortran order stores column by column: element (i, c) is at c * rows + i. An empty array
  // (a zero dimension) has nothing to convert, however large its other dimension (a fuzzing
  // finding: a (2^57, 0) shape spun through 2^57 empty rows).
  if (h.count == 0) return;
  for (index i = 0; i < rows; ++i)
    for (index c = 0; c < cols; ++c) {
      const auto at = static_cast<std::size_t>(h.fortran_order ? c * rows + i : i * cols + c);
      dst[i * cols + c] = value(at);
    }
}

template <class T>
void convert(std::string_view bytes, const npy_header& h, T* dst) {
  const char* src = bytes.data() + h.data_offset;
  if (h.dtype == npy_dtype::f32)
    convert_values<float>(src, h, dst);
  else
    convert_values<double>(src, h, dst);
}

}  // namespace

index npy_header::rows() const { return shape.empty() ? 1 : shape[0]; }
index npy_header::cols() const { return shape.size() < 2 ? 1 : shape[1]; }
index npy_array::rows() const { return shape.empty() ? 1 : shape[0]; }
index npy_array::cols() const { return shape.size() < 2 ? 1 : shape[1]; }

// Layout: magic (6 bytes), major, minor, header length (2 bytes in 1.0, 4 in 2.0/3.0; 3.0 differs
// only in encoding the dict as UTF-8, which changes nothing here), the dict. Every read is
// bounds-checked against bytes.size() before it is made.
npy_header npy_parse_header(std::string_view bytes, const std::string& name) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    fail(name, "not a .npy file (missing the \\x93NUMPY magic); save arrays with numpy.save");
  const auto major = static_cast<unsigned char>(bytes[6]);
  std::size_t hlen = 0, hstart = 0;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) |
           (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(name, "truncated .npy header");
    for (int b = 0; b < 4; ++b)
      hlen |= static_cast<std::size_t>(
                  static_cast<unsigned char>(bytes[8 + static_cast<std::size_t>(b)]))
              << (8 * b);
    hstart = 12;
  } else {
    fail(name, fmt::format("unsupported .npy format version {}", major));
  }
  if (bytes.size() - hstart < hlen) fail(name, "truncated .npy header");
  const std::string_view header(bytes.data() + hstart, hlen);

  npy_header h;
  const std::string_view descr = dict_value(header, "descr", name);
  // descr must be a quoted 3-character type string: '<f4', '>f4', '<f8' or '>f8'.
  const std::string_view d = descr.size() >= 5 ? descr.substr(1, 3) : std::string_view{};
  const bool quoted =
      descr.size() >= 5 && (descr[0] == '\'' || descr[0] == '"') && descr[4] == descr[0];
  if (quoted && (d == "<f4" || d == ">f4" || d == "<f8" || d == ">f8")) {
    h.dtype = d[2] == '4' ? npy_dtype::f32 : npy_dtype::f64;
    h.big_endian = d[0] == '>';
  } else {
    fail(name, fmt::format("dtype {} is not supported; expected float32 '<f4' or float64 '<f8' "
                           "(convert with arr.astype(np.float64))",
                           quote(descr)));
  }
  const std::string_view order = dict_value(header, "fortran_order", name);
  if (order.starts_with("True"))
    h.fortran_order = true;
  else if (!order.starts_with("False"))
    fail(name, fmt::format("fortran_order {} is not True or False", quote(order)));
  h.data_offset = hstart + hlen;
  const std::size_t esize = h.dtype == npy_dtype::f32 ? 4 : 8;
  const std::size_t have = bytes.size() - h.data_offset;
  h.shape = parse_shape(dict_value(header, "shape", name), h.count, name);
  if (h.count > have / esize)  // (count * esize could wrap; this cannot)
    fail(name, fmt::format("truncated: the header promises {} values of {} bytes but only {} "
                           "bytes of data follow",
                           h.count, esize, have));
  return h;
}

npy_file::npy_file(const std::string& path)
    : file_(path), header_(npy_parse_header(file_.bytes(), path)) {}

// In place needs: the requested T, C order, the file's byte order equal to the machine's (both
// little-endian), and the data's address aligned for T. The map is page-aligned, so the last
// condition is about data_offset: numpy pads it to 64 bytes, a hand-made file may not.
template <class T>
bool npy_file::in_place() const {
  constexpr npy_dtype want = std::is_same_v<T, float> ? npy_dtype::f32 : npy_dtype::f64;
  const auto addr = reinterpret_cast<std::uintptr_t>(file_.bytes().data() + header_.data_offset);
  return header_.dtype == want && !header_.big_endian && !header_.fortran_order &&
         std::endian::native == std::endian::little && addr % alignof(T) == 0;
}

template <class T>
const_matrix_view<T> npy_file::view() const {
  if (!in_place<T>()) fail(path(), "cannot be used in place (dtype, byte order or layout)");
  const auto* p = reinterpret_cast<const T*>(file_.bytes().data() + header_.data_offset);
  return {p, header_.rows(), header_.cols()};  // valid while this npy_file lives
}

template <class T>
matrix<T> npy_file::to_matrix() const {
  matrix<T> m(header_.rows(), header_.cols());
  convert(file_.bytes(), header_, m.data());
  return m;
}

template <class T>
matrix<T> npy_array::to_matrix() const {
  matrix<T> m(rows(), cols());
  for (std::size_t i = 0; i < values.size(); ++i) m.data()[i] = static_cast<T>(values[i]);
  return m;
}

npy_array npy_parse(std::string_view bytes, const std::string& name) {
  const npy_header h = npy_parse_header(bytes, name);
  npy_array a;
  a.dtype = h.dtype;
  a.shape = h.shape;
  a.values.resize(h.count);
  convert(bytes, h, a.values.data());
  return a;
}

npy_array npy_read(const std::string& path) {
  const mapped_file f(path);
  return npy_parse(f.bytes(), path);
}

namespace {
// The version-1.0 preamble and dict for a C-order (rows, cols) array, or (rows·cols,) as a vector.
// '<' is declared and the writers copy the machine's bytes: right on little-endian machines.
template <class T>
std::string npy_header_bytes(index rows, index cols, bool as_vector) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  const char* descr = std::is_same_v<T, float> ? "<f4" : "<f8";
  std::string dict =
      as_vector ? fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}", descr,
                              rows * cols)
                : fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}, {}), }}",
                              descr, rows, cols);
  const std::size_t total = 10 + dict.size() + 1;  // preamble + dict + '\n'
  dict.append((64 - total % 64) % 64, ' ');        // pad: the data starts at a multiple of 64
  dict.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);  // length 8: the string holds a NUL (minor 0)
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>((dict.size() >> 8) & 0xff));
  return out + dict;
}
}  // namespace

template <class T>
std::string npy_encode(const_matrix_view<T> a, bool as_vector) {
  std::string out = npy_header_bytes<T>(a.rows, a.cols, as_vector);
  out.reserve(out.size() + static_cast<std::size_t>(a.rows * a.cols) * sizeof(T));
  for (index i = 0; i < a.rows; ++i)  // row by row: a view may have a stride ld > cols
    out.append(reinterpret_cast<const char*>(a.row(i)),
               static_cast<std::size_t>(a.cols) * sizeof(T));
  return out;
}

template <class T>
bool npy_write_stream(std::FILE* f, const_matrix_view<T> a, bool as_vector) {
  const std::string head = npy_header_bytes<T>(a.rows, a.cols, as_vector);
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  const auto cols = static_cast<std::size_t>(a.cols);
  if (ok && a.ld == a.cols)  // contiguous: one write
    return std::fwrite(a.data, sizeof(T), cols * static_cast<std::size_t>(a.rows), f) ==
           cols * static_cast<std::size_t>(a.rows);
  for (index i = 0; ok && i < a.rows; ++i) ok = std::fwrite(a.row(i), sizeof(T), cols, f) == cols;
  return ok;
}

template <class T>
void npy_write(const std::string& path, const_matrix_view<T> a, bool as_vector) {
  atomic_writer w;
  w.stage_stream(path, [&](std::FILE* f) { return npy_write_stream<T>(f, a, as_vector); });
  w.commit();
}

template bool npy_file::in_place<float>() const;
template bool npy_file::in_place<double>() const;
template const_matrix_view<float> npy_file::view<float>() const;
template const_matrix_view<double> npy_file::view<double>() const;
template matrix<float> npy_file::to_matrix<float>() const;
template matrix<double> npy_file::to_matrix<double>() const;
template matrix<float> npy_array::to_matrix<float>() const;
template matrix<double> npy_array::to_matrix<double>() const;
template std::string npy_encode<float>(const_matrix_view<float>, bool);
template std::string npy_encode<double>(const_matrix_view<double>, bool);
template bool npy_write_stream<float>(std::FILE*, const_matrix_view<float>, bool);
template bool npy_write_stream<double>(std::FILE*, const_matrix_view<double>, bool);
template void npy_write<float>(const std::string&, const_matrix_view<float>, bool);
template void npy_write<double>(const std::string&, const_matrix_view<double>, bool);

}  // namespace kf::io
