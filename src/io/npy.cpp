// .npy reader and writer. Format: "\x93NUMPY", major, minor, header length (uint16 for 1.0,
// uint32 for 2.0/3.0, little-endian), then an ASCII Python dict literal
// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), } padded with spaces and '\n' so the
// data starts on a 64-byte boundary, then the raw data.
#include "kernelformer/io/npy.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "kernelformer/io/atomic_file.hpp"

namespace kf::io {
namespace {

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", name, what));
}

// The value text after 'key': in the header dict.
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

}  // namespace

index npy_array::rows() const { return shape.empty() ? 1 : shape[0]; }
index npy_array::cols() const { return shape.size() < 2 ? 1 : shape[1]; }

template <class T>
matrix<T> npy_array::to_matrix() const {
  matrix<T> m(rows(), cols());
  for (std::size_t i = 0; i < values.size(); ++i) m.data()[i] = static_cast<T>(values[i]);
  return m;
}
template matrix<float> npy_array::to_matrix<float>() const;
template matrix<double> npy_array::to_matrix<double>() const;

npy_array npy_parse(const std::string& bytes, const std::string& name) {
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
  if (bytes.size() < hstart + hlen) fail(name, "truncated .npy header");
  const std::string_view header(bytes.data() + hstart, hlen);

  npy_array a;
  const std::string_view descr = dict_value(header, "descr", name);
  if (descr.starts_with("'<f4'") || descr.starts_with("\"<f4\"")) {
    a.dtype = npy_dtype::f32;
  } else if (descr.starts_with("'<f8'") || descr.starts_with("\"<f8\"")) {
    a.dtype = npy_dtype::f64;
  } else {
    const auto end = descr.find_first_of(",}");
    fail(name, fmt::format("dtype {} is not supported; expected float32 '<f4' or float64 '<f8' "
                           "(convert with arr.astype(np.float64))",
                           descr.substr(0, end)));
  }
  if (dict_value(header, "fortran_order", name).starts_with("True"))
    fail(name, "Fortran-order arrays are not supported; save np.ascontiguousarray(arr)");
  std::string_view shape = dict_value(header, "shape", name);
  if (shape.empty() || shape.front() != '(') fail(name, "malformed shape in npy header");
  shape = shape.substr(1, shape.find(')') - 1);
  std::size_t count = 1;
  while (!shape.empty()) {
    while (!shape.empty() && (shape.front() == ' ' || shape.front() == ',')) shape.remove_prefix(1);
    if (shape.empty()) break;
    std::size_t used = 0;
    long long dim = 0;
    try {
      dim = std::stoll(std::string(shape), &used);
    } catch (const std::exception&) {
      fail(name, "malformed shape in npy header");
    }
    if (dim < 0) fail(name, "negative dimension in npy header");
    a.shape.push_back(static_cast<index>(dim));
    count *= static_cast<std::size_t>(dim);
    shape.remove_prefix(used);
  }
  if (a.shape.size() > 2)
    fail(name, fmt::format("has {} dimensions; expected a 1-D or 2-D array", a.shape.size()));
  const std::size_t esize = a.dtype == npy_dtype::f32 ? 4 : 8;
  const std::size_t have = bytes.size() - hstart - hlen;
  if (have < count * esize)
    fail(name, fmt::format("truncated: the header promises {} values ({} bytes) but only {} bytes "
                           "of data follow",
                           count, count * esize, have));
  a.values.resize(count);
  const char* p = bytes.data() + hstart + hlen;
  for (std::size_t i = 0; i < count; ++i) {
    if (a.dtype == npy_dtype::f32) {
      float f;
      std::memcpy(&f, p + i * 4, 4);
      a.values[i] = f;
    } else {
      std::memcpy(&a.values[i], p + i * 8, 8);
    }
  }
  return a;
}

npy_array npy_read(const std::string& path) { return npy_parse(read_file(path), path); }

template <class T>
std::string npy_encode(const_matrix_view<T> a, bool as_vector) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  const char* descr = std::is_same_v<T, float> ? "<f4" : "<f8";
  std::string dict =
      as_vector ? fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}", descr,
                              a.rows * a.cols)
                : fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}, {}), }}",
                              descr, a.rows, a.cols);
  const std::size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>((dict.size() >> 8) & 0xff));
  out += dict;
  out.reserve(out.size() + static_cast<std::size_t>(a.rows * a.cols) * sizeof(T));
  for (index i = 0; i < a.rows; ++i)
    out.append(reinterpret_cast<const char*>(a.row(i)),
               static_cast<std::size_t>(a.cols) * sizeof(T));
  return out;
}

template <class T>
void npy_write(const std::string& path, const_matrix_view<T> a, bool as_vector) {
  write_file_atomic(path, npy_encode(a, as_vector));
}

template std::string npy_encode<float>(const_matrix_view<float>, bool);
template std::string npy_encode<double>(const_matrix_view<double>, bool);
template void npy_write<float>(const std::string&, const_matrix_view<float>, bool);
template void npy_write<double>(const std::string&, const_matrix_view<double>, bool);

}  // namespace kf::io
