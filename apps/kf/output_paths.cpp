// Output paths checked before any work starts, and created only when outputs are staged
// (common.hpp: require_output, require_output_under, check_output_dir, make_output_*).
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

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

namespace {

// Every argument of this process's command line (set by main) and every output path checked so
// far: an output must name neither an input nor another output.
std::vector<std::string>& command_line() {
  static std::vector<std::string> args;
  return args;
}
struct checked_output {
  std::string option, path, canonical;
};
std::vector<checked_output>& checked_outputs() {
  static std::vector<checked_output> outs;
  return outs;
}

struct file_id {
  dev_t dev;
  ino_t ino;
  bool operator==(const file_id&) const = default;
};
// The (device, inode) of an existing regular file at PATH (links followed), else nothing.
std::optional<file_id> identify(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return file_id{st.st_dev, st.st_ino};
}

// The paths the command line names: every argument, and the value of --option=value; the values
// of --resume are left out (a run resumed from a checkpoint may save over it).
std::vector<std::string> named_paths() {
  std::vector<std::string> paths;
  const auto& args = command_line();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--resume") {
      ++i;
      continue;
    }
    if (a.starts_with("--resume=")) continue;
    const auto eq = a.find('=');
    paths.push_back(a.starts_with("-") && eq != std::string::npos ? a.substr(eq + 1) : a);
  }
  return paths;
}

std::string shown(const std::string& path) {
  return path.size() > 120 ? path.substr(0, 117) + "..." : path;
}

// Throws when PATH is an existing file that the command line names as an input. The output's own
// argument names it once per output option that names it; more than that is an input too.
void refuse_if_input(const std::string& path, const std::string& label) {
  const auto id = identify(path);
  if (!id) return;
  std::size_t named = 0, outputs = 0;
  for (const auto& p : named_paths())
    if (identify(p) == id) ++named;
  for (const auto& o : checked_outputs())
    if (identify(o.path) == id) ++outputs;
  if (named > outputs)
    throw user_error(fmt::format(
        "{}: is also an input of this command; writing it would replace the data being read "
        "(choose another output name or folder)",
        label));
}

// Refuses PATH when another output option already names the same file (any spelling), or when
// PATH is an existing file that the command line also names as an input: the (device, inode)
// pairs are compared, so ./sub/../data.csv and a hard link are caught too.
void check_output_alias(const std::string& path, const std::string& option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string canonical = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
  const auto id = identify(path);
  for (const auto& o : checked_outputs()) {
    if (o.option == option && o.path == path) return;  // the same option checked twice
    if (o.canonical == canonical || (id && identify(o.path) == id))
      throw user_error(fmt::format("{} {}: the same file as {} {}: two outputs cannot share a path",
                                   option, shown(path), o.option, shown(o.path)));
  }
  checked_outputs().push_back({option, path, canonical});
  refuse_if_input(path, option + " " + shown(path));
}

// The files written, in order, each once (commits may come from job threads: kf report --full).
struct written_list {
  std::mutex lock;
  std::vector<std::string> paths;
};
written_list& written() {
  static written_list w;
  return w;
}

void record_written(const std::string& path) {
  written_list& w = written();
  const std::lock_guard<std::mutex> hold(w.lock);
  if (std::find(w.paths.begin(), w.paths.end(), path) == w.paths.end()) w.paths.push_back(path);
}

}  // namespace

std::vector<std::string> written_files() {
  written_list& w = written();
  const std::lock_guard<std::mutex> hold(w.lock);
  return w.paths;
}

void set_command_line(int argc, char** argv) {
  command_line().assign(argv + std::min(argc, 1), argv + argc);
  checked_outputs().clear();
  // The last line of defence: a file written into an output folder (OUT/forecast.csv, …) that
  // the command line names as an input is refused before its temporary is made.
  io::set_output_guard([](const std::string& path) { refuse_if_input(path, shown(path)); });
  io::set_commit_observer(record_written);
}

std::string command_line_text() {
  std::string text = "kf";
  for (const auto& a : command_line())
    text += " " + (a.find_first_of(" \t'\"") == std::string::npos ? a : "'" + a + "'");
  return text;
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
  check_output_alias(path, option);
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
      check_output_alias(path, option);
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
