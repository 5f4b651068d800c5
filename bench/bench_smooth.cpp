// The smoothing primitive's speed and memory, always beside its baselines in the same run:
//   fused        smooth_forward (tiled, streaming, never an n×m buffer)
//   materialized S = Q·Kᵀ (n×m) by one sgemm, row softmax, out = P·V by a second sgemm — the
//                "two-GEMM" implementation most frameworks run
//   reference    the plain double-precision loops kept for testing
//   sgemm        OpenBLAS sgemm of the same FLOP count: the machine's ceiling
// exp_dot kernel, d = dv = 64, float32. FLOPs counted as 4·n·m·d (Q·Kᵀ and P·V). Peak extra
// memory beyond inputs and output: peak_heap_MiB (every operator new, counted) and peak_rss_MiB
// (growth of peak resident memory; meaningful for the first benchmark of a process, e.g. with
// --benchmark_filter=memory_64k).
//   build/release/bench/bench_smooth                        # the table for issue notes
//   build/release/bench/bench_smooth --benchmark_filter=memory_64k   # n = m = 65,536
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "detail/blas.hpp"
#include "kernelformer/smooth.hpp"

#include "memory_probe.hpp"

namespace {

using kf::index;

struct inputs {
  kf::matrix<float> q, k, v, out;
  inputs(index n, index m, index d, index dv) : q(n, d), k(m, d), v(m, dv), out(n, dv) {
    std::mt19937 rng(1);
    std::normal_distribution<float> g(0.f, 1.f);
    for (auto* a : {&q, &k, &v, &out})
      for (float& x : a->values()) x = g(rng);
  }
};

double flops(index n, index m, index d) { return 4.0 * double(n) * double(m) * double(d); }

void report(benchmark::State& st, index n, index m, index d, const memory_probe& mem) {
  st.counters["GFLOP/s"] = benchmark::Counter(flops(n, m, d) * double(st.iterations()) * 1e-9,
                                              benchmark::Counter::kIsRate);
  mem.report(st);
}

void BM_fused(benchmark::State& st) {
  const index n = st.range(0), d = 64;
  inputs in(n, n, d, d);
  const kf::mask msk = st.range(1) ? kf::mask::causal() : kf::mask::none();
  const memory_probe mem;
  for (auto _ : st)
    kf::smooth_forward<float>(in.out.view(), {}, in.q.cview(), in.k.cview(), in.v.cview(),
                              kf::kernel_exp_dot{}, msk);
  report(st, n, n, d, mem);
}

void BM_fused_gaussian(benchmark::State& st) {
  const index n = st.range(0), d = 64;
  inputs in(n, n, d, d);
  const memory_probe mem;
  for (auto _ : st)
    kf::smooth_forward<float>(in.out.view(), {}, in.q.cview(), in.k.cview(), in.v.cview(),
                              kf::kernel_gaussian{8.0}, kf::mask::none());
  report(st, n, n, d, mem);
}

void BM_materialized(benchmark::State& st) {
  const index n = st.range(0), d = 64;
  inputs in(n, n, d, d);
  const memory_probe mem;
  for (auto _ : st) {
    std::vector<float> s(static_cast<std::size_t>(n * n));
    kf::detail::gemm(false, true, n, n, d, 1.0f / 8.0f, in.q.data(), d, in.k.data(), d, 0.0f,
                     s.data(), n);
    for (index i = 0; i < n; ++i) {
      float* r = s.data() + i * n;
      const float mx = *std::max_element(r, r + n);
      float sum = 0;
      for (index j = 0; j < n; ++j) sum += (r[j] = std::exp(r[j] - mx));
      for (index j = 0; j < n; ++j) r[j] /= sum;
    }
    kf::detail::gemm(false, false, n, d, n, 1.0f, s.data(), n, in.v.data(), d, 0.0f, in.out.data(),
                     d);
    benchmark::DoNotOptimize(in.out.data());
  }
  report(st, n, n, d, mem);
}

void BM_reference(benchmark::State& st) {
  const index n = st.range(0), d = 64;
  inputs in(n, n, d, d);
  const memory_probe mem;
  for (auto _ : st)
    kf::reference::smooth_forward<float>(in.out.view(), {}, in.q.cview(), in.k.cview(),
                                         in.v.cview(), kf::kernel_exp_dot{}, kf::mask::none());
  report(st, n, n, d, mem);
}

// The ceiling: one sgemm doing the same number of FLOPs (n×n×2d).
void BM_sgemm(benchmark::State& st) {
  const index n = st.range(0), d = 64;
  inputs in(n, n, 2 * d, d);
  std::vector<float> c(static_cast<std::size_t>(n * n));
  for (auto _ : st) {
    kf::detail::gemm(false, true, n, n, 2 * d, 1.0f, in.q.data(), 2 * d, in.k.data(), 2 * d, 0.0f,
                     c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(flops(n, n, d) * double(st.iterations()) * 1e-9,
                                              benchmark::Counter::kIsRate);
}

// n = m = 65,536, d = dv = 64: inputs and output are 16 MiB each; the budget for
// everything else is 64 MiB.
void BM_memory_64k(benchmark::State& st) {
  const index n = 65536, d = 64;
  inputs in(n, n, d, d);
  const memory_probe mem;
  for (auto _ : st)
    kf::smooth_forward<float>(in.out.view(), {}, in.q.cview(), in.k.cview(), in.v.cview(),
                              kf::kernel_exp_dot{}, kf::mask::none());
  report(st, n, n, d, mem);
}

}  // namespace

BENCHMARK(BM_sgemm)->Arg(256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_fused)
    ->Args({256, 0})
    ->Args({1024, 0})
    ->Args({4096, 0})
    ->Args({4096, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_fused_gaussian)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_materialized)
    ->Arg(256)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_reference)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_memory_64k)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

BENCHMARK_MAIN();
