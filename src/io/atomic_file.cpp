#include "kernelformer/io/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kf::io {

atomic_writer::~atomic_writer() {
  for (const auto& [tmp, dest] : staged_) std::remove(tmp.c_str());
}

void atomic_writer::stage(const std::string& path, std::string_view bytes) {
  stage_stream(path, [&](std::FILE* f) {
    return std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  });
}

void atomic_writer::stage_stream(const std::string& path,
                                 const std::function<bool(std::FILE*)>& write) {
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), staged_.size());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw std::runtime_error(fmt::format("{}: cannot write ({})", path, std::strerror(errno)));
  staged_.emplace_back(tmp, path);
  bool ok = false;
  try {
    ok = write(f);
  } catch (...) {
    std::fclose(f);
    throw;
  }
  ok = ok && std::ferror(f) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed)
    throw std::runtime_error(fmt::format("{}: write failed ({})", path, std::strerror(errno)));
}

void atomic_writer::commit() {
  for (const auto& [tmp, dest] : staged_) {
    std::error_code ec;
    std::filesystem::rename(tmp, dest, ec);
    if (ec)
      throw std::runtime_error(fmt::format("{}: cannot move into place ({})", dest, ec.message()));
  }
  staged_.clear();
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  atomic_writer w;
  w.stage(path, bytes);
  w.commit();
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::runtime_error(fmt::format("{}: is a directory, expected a file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error(fmt::format("{}: read error", path));
  return ss.str();
}

}  // namespace kf::io
