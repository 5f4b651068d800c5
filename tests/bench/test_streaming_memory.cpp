// The streaming claim, checked: smooth_forward at n = m = 16,384 (d = dv = 64, float32) never
// holds an n×m buffer (1 GiB here) nor one per query row; its extra heap stays within a fixed
// budget (docs/performance.md). Memory is deterministic enough to assert; time is not. Measured
// on 2 threads: 11.3 MiB (none), 8.1 MiB (causal), 16.3 MiB (gaussian).
#include <gtest/gtest.h>

#include <omp.h>

#include <cstdio>
#include <random>
#include <string>

#include "kernelformer/smooth.hpp"
#include "memory_probe.hpp"  // replaces operator new/delete in this binary: counts every byte

namespace kf {
namespace {

// The bound smooth.hpp states: extra memory O((n + m)(d + dv)) plus fixed tiles per thread. Here
// (n + m)(d + dv) floats are 16 MiB, tiles are budgeted at 4 MiB per thread; the n×m scores would
// be 1024 MiB and a buffer of n rows × one key tile (~256 keys) 16 MiB per thread.
double budget_mib(index n, index m, index d, index dv) {
  const double mib = 1024.0 * 1024.0;
  return double((n + m) * (d + dv) * index(sizeof(float))) / mib + 4.0 * omp_get_max_threads();
}

// Extra heap of one call beyond its inputs and output, in MiB.
template <class Call>
double peak_extra_heap_mib(Call&& call) {
  const memory_probe mem;
  call();
  return double(g_peak.load() - mem.heap0) / (1024.0 * 1024.0);
}

TEST(StreamingMemory, ForwardAt16kKeepsExtraHeapSmall) {
  const index n = 16384, d = 64;
  matrix<float> q(n, d), k(n, d), v(n, d), out(n, d);  // 4 MiB each
  std::mt19937 rng(1);
  std::normal_distribution<float> g(0.f, 1.f);
  for (auto* a : {&q, &k, &v})
    for (float& x : a->values()) x = g(rng);
  const double budget = budget_mib(n, n, d, d);
  for (const mask& msk : {mask::none(), mask::causal()}) {
    SCOPED_TRACE(msk.describe());
    const double mib = peak_extra_heap_mib([&] {
      smooth_forward<float>(out.view(), {}, q.cview(), k.cview(), v.cview(), kernel_exp_dot{}, msk);
    });
    RecordProperty("peak_extra_heap_MiB_" + msk.describe(), std::to_string(mib));
    std::printf("peak extra heap, %s: %.2f MiB\n", msk.describe().c_str(), mib);
    EXPECT_LT(mib, budget) << "peak extra heap " << mib << " MiB";
    EXPECT_GT(mib, 0.0) << "the probe counts the library's allocations";
  }
  // The distance-kernel route too (its norms and centred copies are O((n + m) d)).
  const double mib = peak_extra_heap_mib([&] {
    smooth_forward<float>(out.view(), {}, q.cview(), k.cview(), v.cview(), kernel_gaussian{8.0},
                          mask::none());
  });
  std::printf("peak extra heap, gaussian: %.2f MiB\n", mib);
  EXPECT_LT(mib, budget) << "gaussian: peak extra heap " << mib << " MiB";
}

}  // namespace
}  // namespace kf
