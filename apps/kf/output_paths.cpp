// Output paths checked before any work starts, and created only when outputs are staged
// (common.hpp: require_output, require_output_under, check_output_dir, make_output_*).
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>

#include "common.hpp"

namespace kf::cli {

void require_extension(const std::string& path, const std::string& option,
                       std::initializer_list<const char*> exts) {
  std::string list;
  for (const char* e : exts) {
    if (path.size() >= std::string(e).size() && path.ends_with(e)) return;
    list += (list.empty() ? "" : " or ") + std::string(e);
  }
  throw user_error(fmt::format("{} {}: expected a {} file", option, path, list));
}

void check_output_path(const std::string& path, const std::string& option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw user_error(fmt::format("{} {}: is a folder, expected a file name", option, path));
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  if (!fs::is_directory(dir, ec))
    throw user_error(fmt::format("{} {}: the folder {} does not exist", option, path, dir));
  if (::access(dir.c_str(), W_OK) != 0)
    throw user_error(fmt::format("{} {}: the folder {} is not writable", option, path, dir));
}

void check_output_dir(const std::string& dir, const std::string& option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path at = fs::absolute(dir, ec);
  if (fs::exists(at, ec) && !fs::is_directory(at, ec))
    throw user_error(fmt::format("{} {}: exists and is not a folder", option, dir));
  while (!at.empty() && !fs::exists(at, ec)) at = at.parent_path();
  if (!fs::is_directory(at, ec))
    throw user_error(fmt::format("{} {}: {} is not a folder", option, dir, at.string()));
  if (::access(at.c_str(), W_OK) != 0)
    throw user_error(fmt::format("{} {}: the folder {} is not writable", option, dir, at.string()));
}

void make_output_dir(const std::string& dir, const std::string& option) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw user_error(
        fmt::format("{} {}: cannot create the folder ({})", option, dir, ec.message()));
}

void require_output_under(const std::string& path, const std::string& option,
                          std::initializer_list<const char*> exts, const std::string& out_dir) {
  namespace fs = std::filesystem;
  require_extension(path, option, exts);
  std::error_code ec;
  const fs::path parent = fs::absolute(fs::path(path), ec).parent_path().lexically_normal();
  if (!out_dir.empty() && !fs::exists(parent, ec)) {
    const fs::path out = fs::absolute(fs::path(out_dir), ec).lexically_normal();
    const auto rel = parent.lexically_relative(out);
    if (!rel.empty() && *rel.begin() != "..") {
      check_output_dir(parent.string(), option);
      return;
    }
  }
  check_output_path(path, option);
}

void make_output_parent(const std::string& path, const std::string& option) {
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::exists(parent, ec))
    make_output_dir(parent.string(), option);
}

void require_output(const std::string& path, const std::string& option,
                    std::initializer_list<const char*> exts) {
  require_extension(path, option, exts);
  check_output_path(path, option);
}

}  // namespace kf::cli
