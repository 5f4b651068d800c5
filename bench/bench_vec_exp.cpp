// The smoother's exp pass (src/detail/vec_exp.hpp) beside std::exp and Eigen's vectorized exp, in
// the same run, on the forward's own shape: rows of 256 log-weights, each shifted by a row maximum
// and summed (exp_shift_sum), over a 256 × 256 tile (256 KiB in float: in L2, as in the smoother).
//   exp_shift_sum/<isa>   every instruction-set variant this CPU runs (baseline, avx2, avx512)
//   std_exp               the same pass with std::exp, element by element
//   eigen_exp             the same pass with Eigen's array exp (what the smoother used before)
// The counter ns/value is the time per exp in nanoseconds (lower is better; Google Benchmark
// prints an inverted rate with an "s" suffix); compare within one run.
//   build/release/bench/bench_vec_exp
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>
#include "detail/eigen.hpp"

#include "detail/vec_exp.hpp"

namespace {

using kf::index;
constexpr index kRows = 256, kCols = 256;

// Log-weights like attention's after the shift: spread over [−12, 0], with a few far below.
template <class T>
std::vector<T> tile() {
  std::vector<T> x(static_cast<std::size_t>(kRows * kCols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = -T(i % 997) * T(0.012) - T(i % 13 == 0) * 90;
  return x;
}

template <class T, class Pass>
void run(benchmark::State& st, Pass&& pass) {
  const std::vector<T> src = tile<T>();
  std::vector<T> x = src;
  T total = 0;
  for (auto _ : st) {
    st.PauseTiming();
    x = src;
    st.ResumeTiming();
    for (index r = 0; r < kRows; ++r) total += pass(x.data() + r * kCols, kCols);
    benchmark::DoNotOptimize(total);
  }
  st.counters["ns/value"] =
      benchmark::Counter(double(st.iterations()) * double(kRows * kCols) * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

template <class T>
void BM_exp_shift_sum(benchmark::State& st) {
  const auto& v = kf::detail::exp_variants()[static_cast<std::size_t>(st.range(0))];
  st.SetLabel(v.isa);
  if (!v.available) {
    st.SkipWithError((std::string(v.isa) + " does not run on this CPU").c_str());
    return;
  }
  if constexpr (std::is_same_v<T, float>)
    run<T>(st, [&](T* x, index n) { return v.exp_shift_sum_f(x, n, T(0.5)); });
  else
    run<T>(st, [&](T* x, index n) { return v.exp_shift_sum_d(x, n, T(0.5)); });
}

template <class T>
void BM_std_exp(benchmark::State& st) {
  run<T>(st, [](T* x, index n) {
    T s = 0;
    for (index i = 0; i < n; ++i) s += x[i] = std::exp(x[i] - T(0.5));
    return s;
  });
}

template <class T>
void BM_eigen_exp(benchmark::State& st) {
  run<T>(st, [](T* x, index n) {
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> a(x, n);
    a = (a - T(0.5)).exp();
    return a.sum();
  });
}

void variants(benchmark::internal::Benchmark* b) {
  for (std::size_t i = 0; i < kf::detail::exp_variants().size(); ++i) b->Arg(index(i));
}

}  // namespace

BENCHMARK(BM_exp_shift_sum<float>)->Apply(variants);
BENCHMARK(BM_std_exp<float>);
BENCHMARK(BM_eigen_exp<float>);
BENCHMARK(BM_exp_shift_sum<double>)->Apply(variants);
BENCHMARK(BM_std_exp<double>);
BENCHMARK(BM_eigen_exp<double>);

BENCHMARK_MAIN();
