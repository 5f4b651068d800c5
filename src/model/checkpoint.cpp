// safetensors checkpoints (model/checkpoint.hpp): the metadata readers every model's
// from_metadata uses, encoding, the parse that checks every size against the bytes present before
// it copies anything, the comparison with a model's parameters, and the training state stored
// beside the weights (model/train_state.hpp).
#include "kernelformer/model/checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/mapped_file.hpp"
#include "kernelformer/model/train_state.hpp"

namespace kf::model {

std::string checkpoint_quote(const std::string& text) {
  std::string q = text.size() <= 80 ? text : text.substr(0, 77) + "...";
  for (char& c : q)  // one line: control bytes shown as '?'
    if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f') c = '?';
  return q;
}

std::string checkpoint_metadata_get(const std::map<std::string, std::string>& m,
                                    const std::string& key) {
  const auto it = m.find(key);
  if (it == m.end()) throw std::runtime_error("checkpoint metadata is missing '" + key + "'");
  return it->second;
}

index checkpoint_metadata_index(const std::map<std::string, std::string>& m, const std::string& key,
                                index lo, index hi) {
  const std::string v = checkpoint_metadata_get(m, key);
  long long x = 0;  // from_chars: the whole text, no spaces, no '+', no locale
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty())
    throw std::runtime_error(
        fmt::format("checkpoint metadata '{}' = '{}' is not an integer", key, checkpoint_quote(v)));
  if (x < lo || x > hi)
    throw std::runtime_error(
        fmt::format("checkpoint metadata '{}' = {} is outside {}..{}", key, x, lo, hi));
  return static_cast<index>(x);
}

double checkpoint_metadata_double(const std::map<std::string, std::string>& m,
                                  const std::string& key, double lo, double hi, bool hi_open) {
  const std::string v = checkpoint_metadata_get(m, key);
  double x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty() || !std::isfinite(x))
    throw std::runtime_error(fmt::format("checkpoint metadata '{}' = '{}' is not a finite number",
                                         key, checkpoint_quote(v)));
  if (x < lo || x > hi || (hi_open && x == hi))  // "inf"/"nan" parse, but failed isfinite above
    throw std::runtime_error(fmt::format("checkpoint metadata '{}' = {} is outside [{}, {}{}", key,
                                         x, lo, hi, hi_open ? ")" : "]"));
  return x;
}

bool checkpoint_metadata_bool(const std::map<std::string, std::string>& m, const std::string& key) {
  const std::string v = checkpoint_metadata_get(m, key);
  if (v == "true") return true;
  if (v == "false") return false;
  throw std::runtime_error(fmt::format("checkpoint metadata '{}' = '{}' is not true or false", key,
                                       checkpoint_quote(v)));
}

namespace {

// A safetensors header (JSON) is parsed into a tree several times its size: 8 MiB bounds that
// at ~150 MB. kf's own headers are a few KiB (a word model's vocabulary: ~250 KiB).
constexpr std::uint64_t kMaxHeader = std::uint64_t{8} << 20;

// Every parse error: "<file>: <what>", one line.
[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", name, what));
}

const char* dtype_name(checkpoint_dtype d) {
  return d == checkpoint_dtype::f32 ? "F32" : d == checkpoint_dtype::f64 ? "F64" : "I64";
}
// Bytes per element.
std::size_t dtype_size(checkpoint_dtype d) { return d == checkpoint_dtype::f32 ? 4 : 8; }

// A JSON value for a message: primitives and short flat arrays as they are (bounded), anything
// nested by its kind only (dumping it whole could recurse as deep as the file nests).
std::string brief(const nlohmann::json& j) {
  if (j.is_primitive()) return checkpoint_quote(j.dump());
  if (j.is_array() && j.size() <= 8 &&
      std::all_of(j.begin(), j.end(), [](const auto& x) { return x.is_primitive(); }))
    return checkpoint_quote(j.dump());
  return j.is_array() ? fmt::format("an array of {} items", j.size()) : "an object";
}

// The number of elements, the product of the shape (1 for a scalar []); callers have bounded it.
std::size_t tensor_count(const checkpoint_tensor& t) {
  std::size_t n = 1;
  for (index s : t.shape) n *= static_cast<std::size_t>(s);
  return n;
}

// One header entry, checked: dtype, shape (each dimension and the product overflow-safe) and
// data_offsets that match the shape and lie inside the data section.
struct entry {
  checkpoint_tensor t;
  std::uint64_t begin = 0, end = 0;
};

entry parse_entry(const std::string& name, const std::string& key, const nlohmann::json& e,
                  std::uint64_t data_size) {
  const std::string q = "tensor '" + checkpoint_quote(key) + "'";
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
    fail(name, q + ": the entry needs dtype, shape and data_offsets");
  entry r;
  r.t.name = key;
  const auto& dt = e["dtype"];
  const std::string d = dt.is_string() ? dt.get<std::string>() : brief(dt);
  if (d == "F32")
    r.t.dtype = checkpoint_dtype::f32;
  else if (d == "F64")
    r.t.dtype = checkpoint_dtype::f64;
  else if (d == "I64")
    r.t.dtype = checkpoint_dtype::i64;
  else
    fail(name,
         fmt::format("{}: dtype {} is not supported (F32, F64, I64)", q, checkpoint_quote(d)));
  const auto& shape = e["shape"];
  if (!shape.is_array() || shape.size() > 8)
    fail(name, q + ": shape must be an array of at most 8 dimensions");
  std::uint64_t count = 1;
  for (const auto& s : shape) {
    // 2^48 per dimension: far beyond any real tensor, and small enough that index (signed) holds
    // it.
    if (!s.is_number_unsigned() || s.get<std::uint64_t>() > (std::uint64_t(1) << 48))
      fail(name, fmt::format("{}: shape {} has a dimension that is not a size", q, brief(shape)));
    const auto dim = s.get<std::uint64_t>();
    if (dim != 0 && count > std::numeric_limits<std::uint64_t>::max() / dim)
      fail(name, fmt::format("{}: shape {} overflows", q, brief(shape)));
    count *= dim;
    r.t.shape.push_back(static_cast<index>(dim));
  }
  const std::uint64_t esize = dtype_size(r.t.dtype);
  if (count > data_size / esize)  // division, not count·esize: cannot wrap
    fail(name, fmt::format("{}: shape {} needs more bytes than the file's data section holds ({})",
                           q, brief(shape), data_size));
  const auto& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned())
    fail(name, fmt::format("{}: data_offsets {} is not a pair of byte offsets", q, brief(off)));
  r.begin = off[0].get<std::uint64_t>();
  r.end = off[1].get<std::uint64_t>();
  // count·esize ≤ data_size now (checked above), so the product below is exact.
  if (r.end < r.begin || r.end - r.begin != count * esize)
    fail(name, fmt::format("{}: data_offsets [{}, {}] do not match its shape ({} bytes)", q,
                           r.begin, r.end, count * esize));
  if (r.end > data_size)
    fail(name, fmt::format("truncated: {} ends at byte {} but the data section has {}", q, r.end,
                           data_size));
  return r;
}

// "__metadata__" into ck.metadata: an object of strings, as the format prescribes.
void parse_metadata(const std::string& name, const nlohmann::json& md, checkpoint& ck) {
  if (!md.is_object()) fail(name, "__metadata__ is not an object of strings");
  for (auto m = md.begin(); m != md.end(); ++m) {
    if (!m->is_string())
      fail(name, fmt::format("__metadata__ '{}' is not a string (safetensors stores strings only)",
                             checkpoint_quote(m.key())));
    ck.metadata[m.key()] = m->get<std::string>();
  }
}

// The tensors must tile the data section: sorted by offset, each starts where the previous one
// ended, and the last ends at the end of the file (what the safetensors library checks too).
void check_layout(const std::string& name, std::vector<entry>& es, std::uint64_t data_size) {
  // Sorted by (begin, end), so zero-length tensors at one offset come before the one that starts
  // there and never read as an overlap.
  std::sort(es.begin(), es.end(), [](const entry& a, const entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t at = 0;
  const entry* prev = nullptr;
  for (const auto& e : es) {
    if (e.begin < at)
      fail(name,
           fmt::format("tensors '{}' and '{}' overlap (bytes {} to {})",
                       checkpoint_quote(prev->t.name), checkpoint_quote(e.t.name), e.begin, at));
    if (e.begin > at)
      fail(name,
           fmt::format("bytes {} to {} of the data section belong to no tensor", at, e.begin));
    at = e.end;
    prev = &e;
  }
  if (at != data_size)
    fail(name,
         fmt::format("bytes {} to {} of the data section belong to no tensor", at, data_size));
}

// Copies t's bytes from src (inside the data section, checked by the caller) into the vector of
// its dtype; floating-point values must be finite (a NaN weight would only surface as NaN
// losses later).
void read_values(const std::string& name, const char* src, checkpoint_tensor& t) {
  const std::size_t n = tensor_count(t);
  auto finite = [&](auto* v) {
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isfinite(v[i]))
        fail(name, fmt::format("tensor '{}' holds a non-finite value ({}) at element {}",
                               checkpoint_quote(t.name), double(v[i]), i));
  };
  if (n == 0) return;  // an empty tensor (a run with no history yet): nothing to copy from
  // memcpy: src is at an arbitrary offset in the string, so it may not be aligned for the type.
  // The bytes are taken as they are: right for safetensors' little-endian data on a little-endian
  // machine, which checkpoint_encode assumes too.
  if (t.dtype == checkpoint_dtype::f32) {
    t.values.resize(n);
    std::memcpy(t.values.data(), src, n * sizeof(float));
    finite(t.values.data());
  } else if (t.dtype == checkpoint_dtype::f64) {
    t.values_f64.resize(n);
    std::memcpy(t.values_f64.data(), src, n * sizeof(double));
    finite(t.values_f64.data());
  } else {
    t.values_i64.resize(n);
    std::memcpy(t.values_i64.data(), src, n * sizeof(std::int64_t));
  }
}

}  // namespace

// Linear scan; called once per parameter when a checkpoint is checked or applied.
const checkpoint_tensor* checkpoint::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

// [u64 header length N][N bytes of JSON, space-padded to a multiple of 8][F32 parameters in
// registration order][extra tensors, 8 bytes per element]; data_offsets are relative to the data
// section.
std::string checkpoint_encode(const nn::parameters<float>& params,
                              const std::map<std::string, std::string>& metadata,
                              const std::vector<checkpoint_tensor>& extra) {
  nlohmann::ordered_json header;  // keys in insertion order: the file lists tensors as written
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::size_t offset = 0;
  auto add = [&](const std::string& name, const char* dtype, const std::vector<index>& shape,
                 std::size_t bytes) {
    header[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  };
  for (const auto& pi : params.info())
    add(pi.name, "F32", pi.shape, static_cast<std::size_t>(pi.size) * sizeof(float));
  for (const auto& t : extra) add(t.name, dtype_name(t.dtype), t.shape, tensor_count(t) * 8);
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  std::string out(8, '\0');               // N, little-endian
  const std::uint64_t n = h.size();
  for (int b = 0; b < 8; ++b)
    out[static_cast<std::size_t>(b)] = static_cast<char>((n >> (8 * b)) & 0xff);
  out += h;
  const auto values = params.values();  // the flat buffer: every parameter, in order
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  for (const auto& t : extra) {
    if (t.dtype == checkpoint_dtype::f64 && t.values_f64.size() == tensor_count(t))
      out.append(reinterpret_cast<const char*>(t.values_f64.data()), t.values_f64.size() * 8);
    else if (t.dtype == checkpoint_dtype::i64 && t.values_i64.size() == tensor_count(t))
      out.append(reinterpret_cast<const char*>(t.values_i64.data()), t.values_i64.size() * 8);
    else
      throw std::logic_error("checkpoint_encode: extra tensor '" + t.name +
                             "' is not F64/I64 or its values do not match its shape");
  }
  return out;
}

void checkpoint_save(const std::string& path, const nn::parameters<float>& params,
                     const std::map<std::string, std::string>& metadata) {
  io::write_file_atomic(path, checkpoint_encode(params, metadata));
}

// Order of trust: header length against the file (and kMaxHeader), JSON, each entry against the
// data section, the layout (no overlap, no gap), and only then the values copied. `name` (the path)
// prefixes every message.
checkpoint checkpoint_parse(std::string_view bytes, const std::string& name) {
  if (bytes.size() < 8)
    fail(name, "not a safetensors file (shorter than its 8-byte header length)");
  std::uint64_t n = 0;
  for (int b = 0; b < 8; ++b)
    n |= std::uint64_t(static_cast<unsigned char>(bytes[static_cast<std::size_t>(b)])) << (8 * b);
  if (n > bytes.size() - 8)
    fail(name, fmt::format("corrupted or truncated: header length {} exceeds the file ({} bytes)",
                           n, bytes.size()));
  if (n > kMaxHeader)
    fail(name, fmt::format("header length {} is over the {} MiB this reader accepts (the largest "
                           "model header kf writes is well under 1 MiB)",
                           n, kMaxHeader >> 20));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.data() + 8, bytes.data() + 8 + n);
  } catch (const nlohmann::json::parse_error& e) {
    fail(name,
         fmt::format("corrupted safetensors header: not valid JSON (at byte {} of {})", e.byte, n));
  } catch (const nlohmann::json::exception&) {
    fail(name, "corrupted safetensors header: not valid JSON");
  }
  if (!header.is_object()) fail(name, "corrupted safetensors header (not a JSON object)");
  checkpoint ck;
  const std::size_t data_start = 8 + static_cast<std::size_t>(n);
  const std::uint64_t data_size = bytes.size() - data_start;
  std::vector<entry> es;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__")
      parse_metadata(name, *it, ck);
    else
      es.push_back(parse_entry(name, it.key(), *it, data_size));
  }
  check_layout(name, es, data_size);
  // Only now, with every size checked against the bytes present, are values copied.
  for (auto& e : es) {
    read_values(name, bytes.data() + data_start + e.begin, e.t);
    ck.tensors.push_back(std::move(e.t));
  }
  std::sort(ck.tensors.begin(), ck.tensors.end(),  // by name: the file's order carries nothing
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return ck;
}

// The file is mapped, not read: a crafted file is refused after its 8-byte length (and its
// header) are read, whatever its size, and only the tensors the header describes are copied.
checkpoint checkpoint_load(const std::string& path) {
  const io::mapped_file file(path);
  return checkpoint_parse(file.bytes(), path);
}

void checkpoint_check_shapes(const checkpoint& ck, const nn::parameters<float>& params,
                             const std::string& config) {
  std::string missing;  // names of the absent tensors, listed together (bounded)
  for (const auto& pi : params.info()) {
    const auto* t = ck.find(pi.name);
    if (!t) {
      if (missing.size() < 200) missing += (missing.empty() ? "" : ", ") + pi.name;
      continue;
    }
    if (t->dtype != checkpoint_dtype::f32)
      throw std::runtime_error(fmt::format("checkpoint tensor '{}' is {}, the model stores F32",
                                           pi.name, dtype_name(t->dtype)));
    if (t->shape != pi.shape)
      throw std::runtime_error(
          fmt::format("checkpoint tensor '{}' has shape [{}], but the metadata ({}) makes it [{}]",
                      pi.name, fmt::join(t->shape, ", "), config, fmt::join(pi.shape, ", ")));
  }
  if (!missing.empty())
    throw std::runtime_error(
        fmt::format("checkpoint is missing tensors the metadata ({}) implies: {}", config,
                    checkpoint_quote(missing)));
  for (const auto& t : ck.tensors)
    if (t.name.rfind(kTrainStatePrefix, 0) != 0 && params.find(t.name) < 0)
      throw std::runtime_error(fmt::format("checkpoint has a tensor the model ({}) does not: '{}'",
                                           config, checkpoint_quote(t.name)));
}

// Copies tensor by tensor as it checks: after a throw the parameters may be partly overwritten.
// To keep a model intact on a bad file, call checkpoint_check_shapes first.
void checkpoint_apply(const checkpoint& ck, nn::parameters<float>& params) {
  std::string missing;
  for (const auto& pi : params.info()) {
    const auto* t = ck.find(pi.name);
    if (!t) {
      missing += (missing.empty() ? "" : ", ") + pi.name;
      continue;
    }
    if (t->shape != pi.shape || t->dtype != checkpoint_dtype::f32)
      throw std::runtime_error(fmt::format(
          "checkpoint tensor '{}' has shape [{}] ({}), the model expects [{}] (F32)", pi.name,
          fmt::join(t->shape, ", "), dtype_name(t->dtype), fmt::join(pi.shape, ", ")));
    std::copy(t->values.begin(), t->values.end(), params.values().begin() + pi.offset);
  }
  if (!missing.empty())
    throw std::runtime_error("checkpoint is missing tensors: " + checkpoint_quote(missing));
  for (const auto& t : ck.tensors)
    if (t.name.rfind(kTrainStatePrefix, 0) != 0 && params.find(t.name) < 0)
      throw std::runtime_error(fmt::format("checkpoint has a tensor the model does not: '{}'",
                                           checkpoint_quote(t.name)));
}

// ---- training state (model/train_state.hpp) ----

// The standard text form (operator<<): portable across implementations of std::mt19937_64.
std::string rng_save(const std::mt19937_64& g) {
  std::ostringstream os;
  os << g;
  return os.str();
}

// Parses into a scratch generator and assigns only on success, so g is unchanged on a throw.
void rng_load(std::mt19937_64& g, const std::string& text, const std::string& what) {
  std::istringstream is(text);
  std::mt19937_64 r;
  is >> r;
  if (!is.fail() && !is.eof()) is >> std::ws;  // trailing spaces only
  if (is.fail() || !is.eof())
    throw std::runtime_error(
        fmt::format("checkpoint metadata '{}' is not a generator state", what));
  g = r;
}

void train_state_store(train_state& s, const optim::adamw<float>& opt, const std::mt19937_64& rng,
                       const std::mt19937_64& dropout_rng) {
  s.adam_steps = opt.steps();
  s.exp_avg = opt.exp_avg();
  s.exp_avg_sq = opt.exp_avg_sq();
  s.rng = rng_save(rng);
  s.dropout_rng = rng_save(dropout_rng);
}

void train_state_restore(const train_state& s, optim::adamw<float>& opt, std::mt19937_64& rng,
                         std::mt19937_64& dropout_rng) {
  opt.restore(s.exp_avg, s.exp_avg_sq, s.adam_steps);
  rng_load(rng, s.rng, "kf_train.rng");
  rng_load(dropout_rng, s.dropout_rng, "kf_train.dropout_rng");
}

namespace {

const std::string kT = kTrainStatePrefix;

// An F64 state tensor kf_train.<name>: (n) or, with cols, (n / cols, cols).
checkpoint_tensor f64_tensor(const std::string& name, std::vector<double> v, index cols = 0) {
  checkpoint_tensor t;
  t.name = kT + name;
  t.dtype = checkpoint_dtype::f64;
  const auto n = static_cast<index>(v.size());
  t.shape = cols > 0 ? std::vector<index>{n / cols, cols} : std::vector<index>{n};
  t.values_f64 = std::move(v);
  return t;
}

// kf_train.<name> with the expected dtype and rank, or nullptr when absent (an optional field);
// throws when present but of another dtype or rank.
const checkpoint_tensor* state_tensor(const checkpoint& ck, const std::string& name,
                                      checkpoint_dtype dt, std::size_t rank) {
  const auto* t = ck.find(kT + name);
  if (!t) return nullptr;
  if (t->dtype != dt || t->shape.size() != rank)
    throw std::runtime_error(
        fmt::format("checkpoint tensor '{}{}' has the wrong dtype or rank", kT, name));
  return t;
}

}  // namespace

// Scalars and generator states as metadata strings; vectors as F64/I64 tensors (an empty one
// with 0 rows, so every field is always present).
void train_state_encode(const train_state& s, std::map<std::string, std::string>& metadata,
                        std::vector<checkpoint_tensor>& tensors) {
  metadata[kT + "done"] = std::to_string(s.done);
  metadata[kT + "adam_steps"] = std::to_string(s.adam_steps);
  metadata[kT + "rng"] = s.rng;
  metadata[kT + "dropout_rng"] = s.dropout_rng;
  for (const auto& [k, v] : s.run) metadata[kT + "run." + k] = v;
  tensors.push_back(f64_tensor("exp_avg", s.exp_avg));
  tensors.push_back(f64_tensor("exp_avg_sq", s.exp_avg_sq));
  tensors.push_back(f64_tensor("losses", s.losses));
  tensors.push_back(f64_tensor("seconds", s.seconds));
  tensors.push_back(f64_tensor("evals", s.evals, 4));
  checkpoint_tensor order;
  order.name = kT + "order";
  order.dtype = checkpoint_dtype::i64;
  order.shape = {static_cast<index>(s.order.size())};
  order.values_i64.assign(s.order.begin(), s.order.end());
  tensors.push_back(std::move(order));
}

std::optional<train_state> train_state_decode(const checkpoint& ck, index parameters) {
  if (!ck.metadata.count(kT + "done")) return std::nullopt;  // a final model: no state
  train_state s;
  const index big = std::numeric_limits<index>::max() / 4;  // any count, with room to add to it
  s.done = checkpoint_metadata_index(ck.metadata, kT + "done", 0, big);
  s.adam_steps = checkpoint_metadata_index(ck.metadata, kT + "adam_steps", 0, big);
  s.rng = checkpoint_metadata_get(ck.metadata, kT + "rng");
  s.dropout_rng = checkpoint_metadata_get(ck.metadata, kT + "dropout_rng");
  std::mt19937_64 probe;  // the states parse (the run loads them later, into its own generators)
  rng_load(probe, s.rng, kT + "rng");
  rng_load(probe, s.dropout_rng, kT + "dropout_rng");
  for (const auto& [k, v] : ck.metadata)
    if (k.rfind(kT + "run.", 0) == 0) s.run[k.substr(kT.size() + 4)] = v;
  const auto* m = state_tensor(ck, "exp_avg", checkpoint_dtype::f64, 1);
  const auto* v = state_tensor(ck, "exp_avg_sq", checkpoint_dtype::f64, 1);
  if (!m || !v || m->shape[0] != parameters || v->shape[0] != parameters)
    throw std::runtime_error(fmt::format(
        "checkpoint tensors '{0}exp_avg' and '{0}exp_avg_sq' must hold one value per parameter "
        "({1})",
        kT, parameters));
  s.exp_avg = m->values_f64;
  s.exp_avg_sq = v->values_f64;
  for (double x : s.exp_avg_sq)
    if (x < 0) throw std::runtime_error("checkpoint tensor 'kf_train.exp_avg_sq' is negative");
  if (const auto* t = state_tensor(ck, "losses", checkpoint_dtype::f64, 1))
    s.losses = t->values_f64;
  if (const auto* t = state_tensor(ck, "seconds", checkpoint_dtype::f64, 1))
    s.seconds = t->values_f64;
  if (const auto* t = state_tensor(ck, "evals", checkpoint_dtype::f64, 2)) {
    if (t->shape[1] != 4)
      throw std::runtime_error("checkpoint tensor 'kf_train.evals' is not (n, 4)");
    s.evals = t->values_f64;
  }
  if (const auto* t = state_tensor(ck, "order", checkpoint_dtype::i64, 1))
    s.order.assign(t->values_i64.begin(), t->values_i64.end());
  return s;
}

void train_state_check_run(const train_state& s, const std::map<std::string, std::string>& run) {
  for (const auto& [k, v] : run) {
    const auto it = s.run.find(k);
    const std::string saved = it == s.run.end() ? "(none)" : it->second;
    if (saved != v)
      // Only options this run passes are compared; one the checkpoint lacks shows as "(none)".
      throw std::runtime_error(
          fmt::format("the checkpoint's run has {} = {}, this one {}: resume with the same options",
                      k, checkpoint_quote(saved), checkpoint_quote(v)));
  }
}

}  // namespace kf::model
