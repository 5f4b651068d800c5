// The feature-map route (linear attention) beside the exact kernel it approximates, same run:
//   exact/N            exp_dot, n = m = N, H = 1, d = dv = 64, float, every thread (the baseline)
//   favor/N            favor:features=256 on the same inputs: the route's prefix sums
//   elu1/N             elu1 (linear attention, r = d = 64) on the same inputs
//   (exact, favor and elu1 at N = 256…4096: the crossover where the linear route wins)
//   exact_causal/N     exp_dot with a causal mask (skipped tiles)
//   favor_causal/N     favor:features=256, causal: the RNN of linear attention walked in chunks
//   error_features/R   favor:features=R vs exp_dot at n = m = 4096: relative error of the outputs
//                      (Frobenius) in the counter rel_err; no timing of interest
//   error_n/N          favor:features=256 vs exp_dot at n = m = N
//   error_rff/R        rff:features=R,h=8 vs gaussian:h=8 at n = m = 4096
// Inputs: q, k, v with i.i.d. N(0, 1) entries (so q·k/√d has unit variance). items/s counts
// query rows. docs/feature_maps.md holds the figures;
//   build/release/bench/bench_features --benchmark_filter='/65536|causal'
#include <benchmark/benchmark.h>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "kernelformer/smooth.hpp"

namespace {

using kf::index;
constexpr index kDim = 64;

kf::matrix<float> random(index r, index c, unsigned seed) {
  kf::matrix<float> m(r, c);
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  for (float& x : m.values()) x = g(rng);
  return m;
}

struct inputs {
  kf::matrix<float> q, k, v, out;
  explicit inputs(index n)
      : q(random(n, kDim, 1)), k(random(n, kDim, 2)), v(random(n, kDim, 3)), out(n, kDim) {}
};

// One set of inputs per size, kept across benchmarks (65,536 × 64 × 3 floats: 50 MB).
inputs& inputs_of(index n) {
  static std::map<index, inputs> cache;
  return cache.try_emplace(n, n).first->second;
}

kf::smooth_options options() {
  kf::smooth_options o;
  o.check_finite = false;
  return o;
}

void run(benchmark::State& state, const char* kernel, const kf::mask& msk) {
  const index n = state.range(0);
  inputs& x = inputs_of(n);
  const kf::kernel_spec kern = kf::kernel_parse(kernel);
  kf::smooth_stats st;
  for (auto _ : state) {
    st = kf::smooth_forward<float>(x.out.view(), {}, x.q.cview(), x.k.cview(), x.v.cview(), kern,
                                   msk, options());
    benchmark::DoNotOptimize(x.out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel(std::string(kf::smooth_route_name(st.route)));
}

void exact(benchmark::State& s) { run(s, "exp_dot", kf::mask::none()); }
void favor(benchmark::State& s) { run(s, "favor:features=256", kf::mask::none()); }
void elu1(benchmark::State& s) { run(s, "elu1", kf::mask::none()); }
void exact_causal(benchmark::State& s) { run(s, "exp_dot", kf::mask::causal()); }
void favor_causal(benchmark::State& s) { run(s, "favor:features=256", kf::mask::causal()); }

// ||approx − exact||_F / ||exact||_F of the outputs.
double rel_error(index n, const std::string& approx, const std::string& exact_kernel) {
  inputs& x = inputs_of(n);
  kf::matrix<float> a(n, kDim), e(n, kDim);
  kf::smooth_forward<float>(a.view(), {}, x.q.cview(), x.k.cview(), x.v.cview(),
                            kf::kernel_parse(approx), kf::mask::none(), options());
  kf::smooth_forward<float>(e.view(), {}, x.q.cview(), x.k.cview(), x.v.cview(),
                            kf::kernel_parse(exact_kernel), kf::mask::none(), options());
  double num = 0, den = 0;
  for (index t = 0; t < a.size(); ++t) {
    const double diff = double(a.data()[t]) - double(e.data()[t]);
    num += diff * diff;
    den += double(e.data()[t]) * double(e.data()[t]);
  }
  return std::sqrt(num / den);
}

void error_features(benchmark::State& state) {
  double err = 0;
  for (auto _ : state)
    err = rel_error(4096, "favor:features=" + std::to_string(state.range(0)), "exp_dot");
  state.counters["rel_err"] = err;
}
void error_n(benchmark::State& state) {
  double err = 0;
  for (auto _ : state) err = rel_error(state.range(0), "favor:features=256", "exp_dot");
  state.counters["rel_err"] = err;
}
void error_rff(benchmark::State& state) {
  double err = 0;
  for (auto _ : state)
    err = rel_error(4096, "rff:h=8,features=" + std::to_string(state.range(0)), "gaussian:h=8");
  state.counters["rel_err"] = err;
}

BENCHMARK(exact)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->Arg(4096)->Unit(
    benchmark::kMillisecond);
BENCHMARK(exact)->Arg(16384)->Arg(65536)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(favor)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->Arg(4096)->Arg(16384)->Arg(65536)->Unit(
    benchmark::kMillisecond);
BENCHMARK(elu1)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(exact_causal)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);
BENCHMARK(favor_causal)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);
BENCHMARK(error_features)
    ->RangeMultiplier(2)
    ->Range(64, 1024)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(error_n)->Arg(256)->Arg(1024)->Arg(4096)->Arg(16384)->Iterations(1)->Unit(
    benchmark::kMillisecond);
BENCHMARK(error_rff)->RangeMultiplier(2)->Range(64, 1024)->Iterations(1)->Unit(
    benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
