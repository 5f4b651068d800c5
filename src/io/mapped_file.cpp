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

// Takes a free slot (compare-exchange, so threads mapping at once never share one) and fills it;
// returns its index, or −1 when all are taken. `end` is stored last, with release: a handler that
// sees a non-zero end (acquire) also sees the begin and path written before it. Paths longer
// than 255 bytes are cut.
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

// The reverse order: end = 0 first hides the slot from the handler before it is reused.
void release_slot(int s) {
  if (s < 0) return;
  g_slots[s].end.store(0, std::memory_order_release);
  g_slots[s].begin.store(0, std::memory_order_relaxed);
  g_slot_used[s].store(false);
}

// write(2) to stderr until done; gives up silently on an error (there is no one left to tell).
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
  if (path == nullptr) {  // not one of our maps: the default action (a core dump), as without us
    ::signal(SIGBUS, SIG_DFL);
    return;  // the faulting instruction runs again and faults again
  }
  write_all("kf: error: ", 11);
  write_all(path, std::strlen(path));
  constexpr char msg[] = ": the file changed size while it was being read; nothing was written\n";
  write_all(msg, sizeof msg - 1);
  ::_exit(1);
}

}  // namespace

mapped_file::mapped_file(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error(fmt::format("{}: cannot read ({})", path, std::strerror(err)));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(fmt::format("{}: is a directory, expected a file", path));
  }
  if (!S_ISREG(st.st_mode) || st.st_size == 0) {
    // A pipe, FIFO or /dev/stdin (or a procfs file that reports size 0): nothing to map, so
    // the bytes are read into memory instead.
    char buf[1 << 16];
    while (true) {
      const ssize_t got = ::read(fd, buf, sizeof buf);
      if (got == 0) break;
      if (got < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        ::close(fd);
        throw std::runtime_error(fmt::format("{}: read error ({})", path, std::strerror(err)));
      }
      owned_.append(buf, static_cast<std::size_t>(got));
    }
    ::close(fd);
    data_ = owned_.data();
    size_ = owned_.size();
    return;
  }
  size_ = static_cast<std::size_t>(st.st_size);  // fixed now: a later truncation is the SIGBUS case
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);  // read-only, never dirty
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

mapped_file::mapped_file(mapped_file&& o) noexcept { *this = std::move(o); }

mapped_file& mapped_file::operator=(mapped_file&& o) noexcept {
  if (this != &o) {
    reset();
    const bool owned = o.read_not_mapped();
    data_ = o.data_;
    size_ = o.size_;
    path_ = std::move(o.path_);
    owned_ = std::move(o.owned_);
    if (owned) data_ = owned_.data();  // a moved string may change address (short-string buffer)
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
  if (data_ != nullptr && !read_not_mapped()) ::munmap(const_cast<char*>(data_), size_);
  owned_.clear();
  data_ = nullptr;
  size_ = 0;
}

// MADV_DONTNEED on a clean private file map only drops the pages: touching them again reloads
// them from the file, so a wrong offset costs time, never data. The length is rounded down to
// whole pages, keeping the page the cursor is in. A no-op for bytes read into memory.
void mapped_file::release_before(std::size_t offset) const {
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t len = std::min(offset, size_) / page * page;
  if (data_ != nullptr && len > 0 && !read_not_mapped())
    ::madvise(const_cast<char*>(data_), len, MADV_DONTNEED);
}

void mapped_file_guard() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;  // the handler needs si_addr to find the file
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, nullptr);
  });
}

}  // namespace kf::io
