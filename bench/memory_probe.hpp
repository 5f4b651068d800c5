// bench/memory_probe.hpp — peak extra memory of a benchmark: every operator new in the process
// (the library allocates only through it, including its 64-byte-aligned tiles) and the growth of
// peak resident memory. Include it from exactly one translation unit per benchmark binary: it
// replaces the global operator new/delete.
#pragma once

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

// Heap accounting: every operator new in the process (the library allocates only through it,
// including its 64-byte-aligned tiles) adds to a live count whose peak is tracked.
namespace {
std::atomic<long long> g_live{0}, g_peak{0};
constexpr std::size_t kHeader = 64;  // keeps the caller's alignment (≤ 64)

void* counted_alloc(std::size_t n, std::size_t align) {
  void* raw = std::aligned_alloc(align < kHeader ? kHeader : align, kHeader + ((n + 63) / 64) * 64);
  if (!raw) throw std::bad_alloc();
  *static_cast<std::size_t*>(raw) = n;
  const long long live = g_live += static_cast<long long>(n);
  long long peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
  return static_cast<char*>(raw) + kHeader;
}
void counted_free(void* p) {
  if (!p) return;
  char* raw = static_cast<char*>(p) - kHeader;
  g_live -= static_cast<long long>(*reinterpret_cast<std::size_t*>(raw));
  std::free(raw);
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n, 16); }
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }

namespace {

// Peak resident memory growth: counts everything (BLAS buffers, thread stacks) but only means
// something in a fresh process (freed memory stays resident). Writing "5" to
// /proc/self/clear_refs resets VmHWM to the current RSS.
long long status_kib(const char* key) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long long v = -1;
  const std::size_t len = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, len) == 0) v = std::atoll(line + len);
  std::fclose(f);
  return v;
}

struct memory_probe {
  long long heap0, rss0;
  memory_probe() {
    if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
      std::fputs("5", f);
      std::fclose(f);
    }
    rss0 = status_kib("VmRSS:");
    g_peak = g_live.load();
    heap0 = g_live.load();
  }
  void report(benchmark::State& st) const {
    st.counters["peak_heap_MiB"] = double(g_peak.load() - heap0) / (1024.0 * 1024.0);
    st.counters["peak_rss_MiB"] = double(status_kib("VmHWM:") - rss0) / 1024.0;
  }
};

}  // namespace
