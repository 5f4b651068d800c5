#include "kernelformer/model/checkpoint.hpp"

#include <fmt/format.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "kernelformer/io/atomic_file.hpp"

namespace kf::model {

std::string checkpoint_metadata_get(const std::map<std::string, std::string>& m,
                                    const std::string& key) {
  const auto it = m.find(key);
  if (it == m.end()) throw std::runtime_error("checkpoint metadata is missing '" + key + "'");
  return it->second;
}

namespace {

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", name, what));
}

}  // namespace

const checkpoint_tensor* checkpoint::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string checkpoint_encode(const nn::parameters<float>& params,
                              const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::size_t offset = 0;
  for (const auto& pi : params.info()) {
    const std::size_t bytes = static_cast<std::size_t>(pi.size) * sizeof(float);
    header[pi.name] = {
        {"dtype", "F32"}, {"shape", pi.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const std::uint64_t n = h.size();
  for (int b = 0; b < 8; ++b)
    out[static_cast<std::size_t>(b)] = static_cast<char>((n >> (8 * b)) & 0xff);
  out += h;
  const auto values = params.values();
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return out;
}

void checkpoint_save(const std::string& path, const nn::parameters<float>& params,
                     const std::map<std::string, std::string>& metadata) {
  io::write_file_atomic(path, checkpoint_encode(params, metadata));
}

checkpoint checkpoint_parse(const std::string& bytes, const std::string& name) {
  if (bytes.size() < 8)
    fail(name, "not a safetensors file (shorter than its 8-byte header length)");
  std::uint64_t n = 0;
  for (int b = 0; b < 8; ++b)
    n |= std::uint64_t(static_cast<unsigned char>(bytes[static_cast<std::size_t>(b)])) << (8 * b);
  if (n > bytes.size() - 8 || n > (100u << 20))
    fail(name, fmt::format("corrupted or truncated: header length {} exceeds the file ({} bytes)",
                           n, bytes.size()));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, static_cast<std::size_t>(n)));
  } catch (const nlohmann::json::exception& e) {
    fail(name, std::string("corrupted safetensors header: ") + e.what());
  }
  if (!header.is_object()) fail(name, "corrupted safetensors header (not a JSON object)");
  checkpoint ck;
  const std::size_t data_start = 8 + static_cast<std::size_t>(n),
                    data_size = bytes.size() - data_start;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      for (auto m = it->begin(); m != it->end(); ++m)
        if (m->is_string()) ck.metadata[m.key()] = m->get<std::string>();
      continue;
    }
    const auto& e = *it;
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") ||
        !e.contains("data_offsets"))
      fail(name, fmt::format("tensor '{}': entry needs dtype, shape and data_offsets", it.key()));
    if (e["dtype"] != "F32")
      fail(name, fmt::format("tensor '{}': dtype {} is not supported (F32 expected)", it.key(),
                             e["dtype"].dump()));
    checkpoint_tensor t;
    t.name = it.key();
    std::size_t count = 1;
    for (const auto& d : e["shape"]) {
      if (!d.is_number_integer() || d.get<long long>() < 0)
        fail(name, fmt::format("tensor '{}': bad shape", t.name));
      t.shape.push_back(d.get<index>());
      count *= d.get<std::size_t>();
    }
    const auto& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2)
      fail(name, fmt::format("tensor '{}': bad data_offsets", t.name));
    const auto b0 = off[0].get<std::size_t>(), b1 = off[1].get<std::size_t>();
    if (b1 < b0 || b1 - b0 != count * sizeof(float))
      fail(name, fmt::format("tensor '{}': data_offsets [{}, {}] do not match its shape", t.name,
                             b0, b1));
    if (b1 > data_size)
      fail(name, fmt::format("truncated: tensor '{}' ends at byte {} but the data section has {}",
                             t.name, b1, data_size));
    t.values.resize(count);
    std::memcpy(t.values.data(), bytes.data() + data_start + b0, count * sizeof(float));
    ck.tensors.push_back(std::move(t));
  }
  return ck;
}

checkpoint checkpoint_load(const std::string& path) {
  return checkpoint_parse(io::read_file(path), path);
}

void checkpoint_apply(const checkpoint& ck, nn::parameters<float>& params) {
  std::string missing;
  for (const auto& pi : params.info()) {
    const auto* t = ck.find(pi.name);
    if (!t) {
      missing += (missing.empty() ? "" : ", ") + pi.name;
      continue;
    }
    if (t->shape != pi.shape)
      throw std::runtime_error(
          fmt::format("checkpoint tensor '{}' has shape [{}], the model expects [{}]", pi.name,
                      fmt::join(t->shape, ", "), fmt::join(pi.shape, ", ")));
    std::copy(t->values.begin(), t->values.end(), params.values().begin() + pi.offset);
  }
  if (!missing.empty()) throw std::runtime_error("checkpoint is missing tensors: " + missing);
  for (const auto& t : ck.tensors)
    if (params.find(t.name) < 0)
      throw std::runtime_error(
          fmt::format("checkpoint has a tensor the model does not: '{}'", t.name));
}

}  // namespace kf::model
