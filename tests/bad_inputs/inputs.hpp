// The bad-input suite's inputs, made once in a temporary folder: valid files to start from and
// broken ones — .npy headers and data, CSV tables, safetensors checkpoints whose header or
// metadata has been edited, text corpora. Models are trained by kf itself (seconds).
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "bad_inputs.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/npy.hpp"
#include "test_paths.hpp"

namespace kf::bad {

namespace fs = std::filesystem;

inline void put(const std::string& path, const std::string& bytes) {
  io::write_file_atomic(path, bytes);
}

inline std::string npy_header(const std::string& dict, bool v1 = true) {
  std::string h = dict;
  const std::size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(v1 ? '\x01' : '\x02');
  out.push_back('\0');
  const auto n = static_cast<std::uint16_t>(h.size());
  out.push_back(static_cast<char>(n & 0xff));
  out.push_back(static_cast<char>(n >> 8));
  return out + h;
}

inline std::string doubles(std::size_t n, double v = 0.5) {
  std::string s(n * 8, '\0');
  for (std::size_t i = 0; i < n; ++i) {
    const double x = v * double(i + 1);
    std::memcpy(s.data() + i * 8, &x, 8);
  }
  return s;
}

inline matrix<double> grid_matrix(index rows, index cols, double scale = 1.0) {
  matrix<double> m(rows, cols);
  for (index i = 0; i < rows; ++i)
    for (index j = 0; j < cols; ++j) m(i, j) = scale * (0.1 * double(i) + 0.01 * double(j));
  return m;
}

// A safetensors file with its header (JSON) edited by F.
template <class F>
void edit_safetensors(const std::string& src, const std::string& dst, F&& f) {
  const std::string b = io::read_file(src);
  std::uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  nlohmann::ordered_json h = nlohmann::ordered_json::parse(b.substr(8, n));
  std::string data = b.substr(8 + n);
  f(h, data);
  std::string hs = h.dump();
  hs.append((8 - hs.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const std::uint64_t len = hs.size();
  std::memcpy(out.data(), &len, 8);
  put(dst, out + hs + data);
}

inline void set_meta(const std::string& src, const std::string& dst, const std::string& key,
                     const std::string& value) {
  edit_safetensors(src, dst, [&](auto& h, std::string&) { h["__metadata__"][key] = value; });
}

// bad_inputs_data.cpp: every input into IN (made afresh); the inputs folder of this build
// (KF_BAD_INPUTS_DIR), made first if it is not complete.
void make_inputs(const std::string& in);
std::string inputs_dir();

}  // namespace kf::bad
