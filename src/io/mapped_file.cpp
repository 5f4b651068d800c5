// A read-only file map, and the SIGBUS guard that names the file when a mapped input is truncated
// under us.
//
// The guard's table is a fixed array of (begin, end, path) slots written before the map is used
// and cleared before it is unmapped; the handler only reads it and calls write(2) and _exit(2),
// both async-signal-safe.
#include "kernelformer/io/mapped_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace kf::io {
namespace {

constexpr int kSlots = 32;
constexpr std::size_t kPathBytes = 256;

struct guard_slot {
  std::atomic<std::uintptr_t> begin{0}, end{0};
  char path[kPathBytes] = {};
};
guard_slot g_slots[kSlots];
std::atomic<bool> g_slot_used[kSlots];

int claim_slot(const char* data, std::size_t size, const std::string& path) {
  for (int s = 0; s < kSlots; ++s) {
    bool expected = false;
    if (!g_slot_used[s].compare_exchange_strong(expected, true)) continue;
    guard_slot& g = g_slots[s];
    const std::size_t n = std::min(path.size(), kPathBytes - 1);
    std::memcpy(g.path, path.data(), n);
    g.path[n] = '\0';
    g.begin.store(reinterpret_cast<std::uintptr_t>(data), std::memory_order_relaxed);
    g.end.store(reinterpret_cast<std::uintptr_t>(data) + size, std::memory_order_release);
    return s;
  }
  return -1;  // more live maps than slots: a fault there still ends in the generic message
}

void release_slot(int s) {
  if (s < 0) return;
  g_slots[s].end.store(0, std::memory_order_release);
  g_slots[s].begin.store(0, std::memory_order_relaxed);
  g_slot_used[s].store(false);
}

void write_all(const char* s, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

extern "C" void on_sigbus(int, siginfo_t* info, void*) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  const char* path = nullptr;
  for (auto& g : g_slots) {
    const std::uintptr_t e = g.end.load(std::memory_order_acquire);
    if (e != 0 && addr >= g.begin.load(std::memory_order_relaxed) && addr < e) path = g.path;
  }
  write_all("kf: error: ", 11);
  if (path != nullptr) {
    write_all(path, std::strlen(path));
    constexpr char msg[] = ": the file changed size while it was being read; nothing was written\n";
    write_all(msg, sizeof msg - 1);
  } else {
    constexpr char msg[] = "bus error (a mapped file was truncated?); nothing was written\n";
    write_all(msg, sizeof msg - 1);
  }
  ::_exit(1);
}

}  // namespace

mapped_file::mapped_file(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    throw std::runtime_error(fmt::format(
        "{}: {}", path, dir ? "is a directory, expected a file" : "is not a regular file"));
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw std::runtime_error(fmt::format("{}: cannot map ({})", path, std::strerror(err)));
    }
    data_ = static_cast<const char*>(p);
    slot_ = claim_slot(data_, size_, path);
  }
  ::close(fd);  // the map keeps the file
}

mapped_file::mapped_file(mapped_file&& o) noexcept
    : data_(o.data_), size_(o.size_), path_(std::move(o.path_)), slot_(o.slot_) {
  o.data_ = nullptr;
  o.size_ = 0;
  o.slot_ = -1;
}

mapped_file& mapped_file::operator=(mapped_file&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = o.data_;
    size_ = o.size_;
    path_ = std::move(o.path_);
    slot_ = o.slot_;
    o.data_ = nullptr;
    o.size_ = 0;
    o.slot_ = -1;
  }
  return *this;
}

mapped_file::~mapped_file() { reset(); }

void mapped_file::reset() noexcept {
  release_slot(slot_);
  slot_ = -1;
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

void mapped_file::release_before(std::size_t offset) const {
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t len = std::min(offset, size_) / page * page;
  if (data_ != nullptr && len > 0) ::madvise(const_cast<char*>(data_), len, MADV_DONTNEED);
}

void mapped_file_guard() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, nullptr);
  });
}

}  // namespace kf::io
