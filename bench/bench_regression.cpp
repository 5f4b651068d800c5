// Regression at scale, each case with its peak extra memory:
//   seed001      seed 001's Gaussian kernel regression (rbf_kernel(testx, x, gamma=5), rows
//                normalized, times y) at n training points × m queries, x ~ U(0, 6),
//                y = 2 sin x + N(0, 1), queries linspace(0, 6): the fused primitive in double (the
//                precision scikit-learn computes in) and in float; arg 2 = threads (1 or 2)
//   seed001_se   the same fit with pointwise standard errors (regression_evaluate, exact path)
//   kernel_1d    the same data with x sorted (order does not change a smoother), double, 2
//                threads: arg 0 gaussian (h = 0.316, the seed's), 1 epanechnikov h = 0.7,
//                2 epanechnikov h = 0.05, 3 boxcar h = 0.05 — compact kernels skip the key tiles
//                outside their support, so a small support costs less
//   loo_cv_1d    1-D Nadaraya–Watson with its leave-one-out CV bandwidth (regression_fit_data:
//                search, fit and diagnostics; the binned path) at n points
// The scikit-learn and statsmodels side of the comparison: python/bench_vs_python.py.
//   build/release/bench/bench_regression
//   build/release/bench/bench_regression --benchmark_filter=loo_cv_1d/10000000
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/smooth.hpp"
#include "memory_probe.hpp"

namespace {

using kf::index;

struct seed001_data {
  kf::matrix<double> x, v, xq;
  std::vector<double> y;
  seed001_data(index n, index m) : x(n, 1), v(n, 1), xq(m, 1), y(static_cast<std::size_t>(n)) {
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> u(0.0, 6.0);
    std::normal_distribution<double> g(0.0, 1.0);
    for (index j = 0; j < n; ++j) {
      x(j, 0) = u(rng);
      y[static_cast<std::size_t>(j)] = v(j, 0) = 2 * std::sin(x(j, 0)) + g(rng);
    }
    for (index i = 0; i < m; ++i) xq(i, 0) = 6.0 * double(i) / double(m - 1);
  }
};

// gamma = 5 in exp(−gamma |u − v|²) is a Gaussian of bandwidth h = 1/√(2 gamma).
const double seed001_bandwidth = 1.0 / std::sqrt(10.0);

template <class T>
void seed001_primitive(benchmark::State& st) {
  const index n = st.range(0), m = st.range(1);
  const seed001_data data(n, m);
  kf::matrix<T> x(n, 1), v(n, 1), xq(m, 1), out(m, 1);
  for (index j = 0; j < n; ++j) {
    x(j, 0) = T(data.x(j, 0));
    v(j, 0) = T(data.v(j, 0));
  }
  for (index i = 0; i < m; ++i) xq(i, 0) = T(data.xq(i, 0));
  kf::smooth_options opt;
  opt.threads = int(st.range(2));
  const memory_probe mem;
  for (auto _ : st) {
    kf::smooth_forward<T>(out.view(), {}, xq.cview(), x.cview(), v.cview(),
                          kf::kernel_gaussian{seed001_bandwidth}, kf::mask::none(), opt);
    benchmark::DoNotOptimize(out.data());
  }
  st.counters["kernel_evals/s"] = benchmark::Counter(
      double(n) * double(m) * double(st.iterations()), benchmark::Counter::kIsRate);
  mem.report(st);
}

void BM_seed001_double(benchmark::State& st) { seed001_primitive<double>(st); }
void BM_seed001_float(benchmark::State& st) { seed001_primitive<float>(st); }

void BM_kernel_1d(benchmark::State& st) {
  const index n = 100000, m = 1000;
  seed001_data data(n, m);
  std::vector<std::pair<double, double>> xy(static_cast<std::size_t>(n));
  for (index j = 0; j < n; ++j) xy[static_cast<std::size_t>(j)] = {data.x(j, 0), data.v(j, 0)};
  std::sort(xy.begin(), xy.end());
  for (index j = 0; j < n; ++j)
    std::tie(data.x(j, 0), data.v(j, 0)) = xy[static_cast<std::size_t>(j)];
  const kf::kernel_spec kern = st.range(0) == 0
                                   ? kf::kernel_spec(kf::kernel_gaussian{seed001_bandwidth})
                               : st.range(0) == 1 ? kf::kernel_spec(kf::kernel_epanechnikov{0.7})
                               : st.range(0) == 2 ? kf::kernel_spec(kf::kernel_epanechnikov{0.05})
                                                  : kf::kernel_spec(kf::kernel_boxcar{0.05});
  st.SetLabel(kf::kernel_describe(kern));
  kf::matrix<double> out(m, 1);
  kf::smooth_options opt;
  opt.threads = 2;
  const memory_probe mem;
  for (auto _ : st) {
    kf::smooth_forward<double>(out.view(), {}, data.xq.cview(), data.x.cview(), data.v.cview(),
                               kern, kf::mask::none(), opt);
    benchmark::DoNotOptimize(out.data());
  }
  mem.report(st);
}

void BM_seed001_se(benchmark::State& st) {
  const index n = st.range(0), m = st.range(1);
  const seed001_data data(n, m);
  kf::regression_spec spec;
  spec.bandwidth = {seed001_bandwidth};
  spec.exact = true;
  const memory_probe mem;
  for (auto _ : st) {
    auto e = kf::regression_evaluate(spec, data.x.cview(), data.y, data.xq.cview(), false);
    benchmark::DoNotOptimize(e.fit.data());
  }
  mem.report(st);
}

void BM_loo_cv_1d(benchmark::State& st) {
  const index n = st.range(0);
  kf::matrix<double> x(n, 1);
  std::vector<double> y(static_cast<std::size_t>(n));
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, 0.3);
  for (index j = 0; j < n; ++j) {
    x(j, 0) = u(rng);
    y[static_cast<std::size_t>(j)] = std::sin(2 * M_PI * x(j, 0)) + g(rng);
  }
  kf::regression_spec spec;
  const memory_probe mem;
  double h = 0;
  for (auto _ : st) {
    auto fit = kf::regression_fit_data(spec, x.cview(), y, kf::bandwidth_criterion::loo_cv);
    h = fit.spec.bandwidth[0];
    benchmark::DoNotOptimize(fit.fitted.data());
  }
  st.counters["bandwidth"] = h;
  mem.report(st);
}

}  // namespace

BENCHMARK(BM_seed001_double)
    ->Args({100000, 1000, 1})
    ->Args({100000, 1000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_seed001_float)
    ->Args({100000, 1000, 1})
    ->Args({100000, 1000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_kernel_1d)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_seed001_se)->Args({100000, 1000})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_loo_cv_1d)
    ->Arg(2000)
    ->Arg(1000000)
    ->Arg(10000000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_MAIN();
