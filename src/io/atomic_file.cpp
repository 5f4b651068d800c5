#include "kernelformer/io/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>

namespace kf::io {

// Removes whatever is still staged: after commit() nothing is (staged_ was cleared), and an
// entry already renamed by a commit() that threw later is simply not found. Then the folders this
// writer made, deepest first; rmdir(2) removes only an empty one, so a folder that received a
// committed file (or anyone else's) stays. Never throws.
atomic_writer::~atomic_writer() {
  for (const auto& [tmp, dest] : staged_) std::remove(tmp.c_str());
  for (auto it = made_folders_.rbegin(); it != made_folders_.rend(); ++it) ::rmdir(it->c_str());
}

void atomic_writer::stage(const std::string& path, std::string_view bytes) {
  stage_stream(path, [&](std::FILE* f) {
    return std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  });
}

namespace {

// This machine's name, part of every temporary's name: a process id is only meaningful on the
// machine (and in the process namespace) that made it, so only our host's temporaries are ever
// judged stale (a shared folder may hold another machine's live temporaries).
const std::string& host_tag() {
  static const std::string tag = [] {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return std::string("localhost");
    std::string h(buf);
    for (char& c : h)
      if (c == '/' || c == '.') c = '_';  // '.' separates the name's fields; '/' is a path
    return h;
  }();
  return tag;
}

// Temporaries of our own naming, PATH.tmp.<host>.<pid>.<k>, left on this host by a process that
// no longer exists (killed with -9 mid-write): removed before a new one is made beside them. A
// live process's temporaries, and other hosts', are never touched.
void remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dest(path);
  const fs::path dir = dest.parent_path().empty() ? fs::path(".") : dest.parent_path();
  const std::string prefix = dest.filename().string() + ".tmp." + host_tag() + ".";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string rest = name.substr(prefix.size());
    const auto dot = rest.find('.');
    if (dot == std::string::npos || dot == 0) continue;  // rest must be "<pid>.<k>"
    const std::string pid_text = rest.substr(0, dot), k_text = rest.substr(dot + 1);
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || k_text.empty() ||
        k_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9)
      continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));  // ≤ 9 digits: no overflow
    // kill(pid, 0) probes without signalling. Only ESRCH ("no such process") proves the writer
    // is gone; EPERM means it exists under another user, so its file is kept.
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    fs::remove(it->path(), ec);
  }
}

}  // namespace

// The temporary is PATH.tmp.<host>.<pid>.<k>, in PATH's directory so the final rename stays on
// one file system. It is created with O_CREAT|O_EXCL|O_NOFOLLOW: a file or a symbolic link
// already at that name (planted by someone who guessed it) is never opened, followed or
// truncated — the next k is tried instead. k counts over the whole process, so two writers never
// race for one name. It is registered in staged_ before anything is written, so every failure
// below leaves it to the destructor to remove.
namespace {

std::FILE* create_temporary(const std::string& path, std::string& tmp) {
  static std::atomic<unsigned long> counter{0};
  for (int attempt = 0; attempt < 1000; ++attempt) {
    tmp = fmt::format("{}.tmp.{}.{}.{}", path, host_tag(), ::getpid(), counter++);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST || errno == ELOOP) continue;  // taken: never touch it, try the next k
      throw std::runtime_error(fmt::format("{}: cannot write ({})", path, std::strerror(errno)));
    }
    std::FILE* f = ::fdopen(fd, "wb");
    if (!f) {
      const int err = errno;
      ::close(fd);
      std::remove(tmp.c_str());
      throw std::runtime_error(fmt::format("{}: cannot write ({})", path, std::strerror(err)));
    }
    return f;
  }
  throw std::runtime_error(
      fmt::format("{}: cannot write (1000 temporary names beside it are taken)", path));
}

}  // namespace

namespace {
std::atomic<output_guard> the_output_guard{nullptr};
std::atomic<commit_observer> the_commit_observer{nullptr};
}  // namespace

void set_output_guard(output_guard guard) { the_output_guard = guard; }
void set_commit_observer(commit_observer observer) { the_commit_observer = observer; }

namespace {

// PATH's missing parent folders, made outermost first and appended to MADE; one that appears
// meanwhile (another process) is not ours and is not recorded.
void make_parent_folders(const std::string& path, std::vector<std::string>& made) {
  namespace fs = std::filesystem;
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path at = fs::path(path).parent_path(); !at.empty() && !fs::exists(at, ec);
       at = at.parent_path())
    missing.push_back(at);
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) == 0) {
      made.push_back(it->string());
    } else if (errno != EEXIST) {
      throw std::runtime_error(fmt::format("{}: cannot create the folder {} ({})", path,
                                           it->string(), std::strerror(errno)));
    }
  }
}

}  // namespace

// In memory, the bytes wait for commit(); the guard runs now either way, so a refused path fails
// before the work that follows.
void atomic_writer::stage_stream(const std::string& path,
                                 const std::function<bool(std::FILE*)>& write) {
  if (const output_guard guard = the_output_guard.load()) guard(path);
  if (!how_.in_memory) {
    make_temporary(path, write);
    return;
  }
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = ::open_memstream(&buf, &len);
  if (!f) throw std::bad_alloc();
  bool ok = false;
  try {
    ok = write(f);
  } catch (...) {
    std::fclose(f);
    std::free(buf);
    throw;
  }
  ok = ok && std::ferror(f) == 0;
  ok = std::fclose(f) == 0 && ok;  // fclose sets buf and len
  std::string bytes = ok ? std::string(buf, len) : std::string();
  std::free(buf);
  if (!ok) throw std::runtime_error(fmt::format("{}: write failed (out of memory)", path));
  pending_.emplace_back(path, std::move(bytes));
}

void atomic_writer::make_temporary(const std::string& path,
                                   const std::function<bool(std::FILE*)>& write) {
  if (how_.make_folders) make_parent_folders(path, made_folders_);
  remove_stale_temporaries(path);
  std::string tmp;
  std::FILE* f = create_temporary(path, tmp);
  staged_.emplace_back(tmp, path);
  bool ok = false;
  try {
    ok = write(f);
  } catch (...) {  // close, then let the writer's own error through unchanged
    std::fclose(f);
    throw;
  }
  ok = ok && std::ferror(f) == 0;
  const bool closed = std::fclose(f) == 0;  // fclose flushes: a full disk may only show here
  if (!ok || !closed)
    throw std::runtime_error(fmt::format("{}: write failed ({})", path, std::strerror(errno)));
}

// rename() replaces each destination atomically. Throws std::runtime_error naming the first
// destination that could not be replaced; the files renamed before it stay in place, the rest
// are removed by the destructor.
void atomic_writer::commit() {
  for (const auto& entry : pending_) {
    const std::string& bytes = entry.second;  // a named reference: clang 14 cannot capture bindings
    make_temporary(entry.first, [&bytes](std::FILE* f) {
      return std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    });
  }
  pending_.clear();
  const commit_observer observer = the_commit_observer.load();
  for (const auto& [tmp, dest] : staged_) {
    std::error_code ec;
    std::filesystem::rename(tmp, dest, ec);
    if (ec)
      throw std::runtime_error(fmt::format("{}: cannot move into place ({})", dest, ec.message()));
    if (observer) observer(dest);
  }
  staged_.clear();
  made_folders_.clear();  // they hold committed files now: kept
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  atomic_writer w;
  w.stage(path, bytes);
  w.commit();
}

// The directory check comes first: open(2) accepts a directory read-only, so the ifstream would
// open it without error and the failure would only come, less clearly, at the read.
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
