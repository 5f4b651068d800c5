// Multi-head attention speed, beside this machine's sgemm in the same run:
//   heads_forward      8 heads × head dim 64 of the fused primitive, heads split across the
//                      threads (each head single-threaded), q, k, v given (n × 512, PyTorch's
//                      packed head layout) — the core that PyTorch's softmax(QKᵀ/√d)V computes
//   heads_fwd_bwd      the same, then smooth_backward for dq, dk, dv
//   heads_kernel       the forward with a distance kernel (gaussian, laplacian, cauchy,
//                      epanechnikov) instead of exp_dot — same shapes
//   layer_forward      nn::multi_head_attention (in-projection + core + out-projection), the
//                      counterpart of torch.nn.MultiheadAttention; layer_fwd_bwd adds backward
//   sgemm              one OpenBLAS sgemm with the core's FLOP count (the ceiling)
//   tile_gemms         the forward's two per-tile products alone, as the smoother runs them
//                      (each thread its own row block, OpenBLAS single-threaded): S = Q·Kᵀ
//                      (256 × 256 × 64) and O += P·V (256 × 64 × 256). Their rate is the
//                      ceiling of the core at head dim 64, below sgemm's (docs/performance.md)
// GFLOP/s counts the core's 4·n²·d·H (forward: Q·Kᵀ, P·V) or 14·n²·d·H (forward + backward:
// Q·Kᵀ recomputed, dV, dP, dQ, dK, as FlashAttention counts); causal runs count the same FLOPs,
// so skipped tiles show as effective GFLOP/s. python/bench_attention_vs_torch.py runs this binary
// beside PyTorch.
//   build/release/bench/bench_attention --benchmark_filter='heads_forward|sgemm'
#include <benchmark/benchmark.h>
#include <omp.h>

#include <random>
#include <string>
#include <vector>

#include "detail/blas.hpp"
#include "detail/tile_kernel.hpp"
#include "kernelformer/nn/attention.hpp"
#include "kernelformer/smooth.hpp"

namespace {

using kf::index;
constexpr index kHeads = 8, kDim = 64, kWidth = kHeads * kDim;

kf::matrix<float> random(index r, index c, unsigned seed) {
  kf::matrix<float> m(r, c);
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  for (float& x : m.values()) x = g(rng);
  return m;
}

struct heads {
  kf::matrix<float> q, k, v, out, dout, dq, dk, dv;
  std::vector<float> lse;
  explicit heads(index n)
      : q(random(n, kWidth, 1)),
        k(random(n, kWidth, 2)),
        v(random(n, kWidth, 3)),
        out(n, kWidth),
        dout(random(n, kWidth, 4)),
        dq(n, kWidth),
        dk(n, kWidth),
        dv(n, kWidth),
        lse(static_cast<std::size_t>(n * kHeads)) {}
  kf::const_matrix_view<float> blk(const kf::matrix<float>& a, index h) const {
    return a.cview().block(0, h * kDim, a.rows(), kDim);
  }
  kf::matrix_view<float> blk(kf::matrix<float>& a, index h) {
    return a.view().block(0, h * kDim, a.rows(), kDim);
  }
  std::span<float> lse_of(index h) {
    return {lse.data() + h * q.rows(), static_cast<std::size_t>(q.rows())};
  }
};

kf::smooth_options one_thread() {
  kf::smooth_options o;
  o.threads = 1;
  o.check_finite = false;
  return o;
}

void forward(heads& x, const kf::kernel_spec& kern, const kf::mask& msk) {
  const auto opt = one_thread();
#pragma omp parallel for schedule(dynamic, 1)
  for (index h = 0; h < kHeads; ++h)
    kf::smooth_forward<float>(x.blk(x.out, h), x.lse_of(h), x.blk(x.q, h), x.blk(x.k, h),
                              x.blk(x.v, h), kern, msk, opt);
}

void backward(heads& x, const kf::kernel_spec& kern, const kf::mask& msk) {
  const auto opt = one_thread();
#pragma omp parallel for schedule(dynamic, 1)
  for (index h = 0; h < kHeads; ++h) {
    kf::smooth_grads<float> g(x.blk(x.dq, h), x.blk(x.dk, h), x.blk(x.dv, h));
    g.want_dparam = false;
    kf::smooth_backward<float>(g, x.blk(x.dout, h), x.blk(x.out, h), x.lse_of(h), x.blk(x.q, h),
                               x.blk(x.k, h), x.blk(x.v, h), kern, msk, opt);
  }
}

void rate(benchmark::State& st, index n, double per_pair) {
  st.counters["GFLOP/s"] = benchmark::Counter(
      per_pair * double(n) * double(n) * kDim * kHeads * double(st.iterations()) * 1e-9,
      benchmark::Counter::kIsRate);
}

kf::mask mask_of(int64_t causal) { return causal ? kf::mask::causal() : kf::mask::none(); }

void BM_heads_forward(benchmark::State& st) {
  const index n = st.range(0);
  heads x(n);
  const kf::mask msk = mask_of(st.range(1));
  for (auto _ : st) forward(x, kf::kernel_exp_dot{}, msk);
  rate(st, n, 4);
}

void BM_heads_fwd_bwd(benchmark::State& st) {
  const index n = st.range(0);
  heads x(n);
  const kf::mask msk = mask_of(st.range(1));
  for (auto _ : st) {
    forward(x, kf::kernel_exp_dot{}, msk);
    backward(x, kf::kernel_exp_dot{}, msk);
  }
  rate(st, n, 14);
}

// range(1): 0 gaussian, 1 laplacian, 2 cauchy, 3 epanechnikov (support wide enough to keep
// every pair of these random points: the same work as exp_dot, no tile skipped), 4 periodic.
void BM_heads_kernel(benchmark::State& st) {
  const index n = st.range(0);
  heads x(n);
  const kf::kernel_spec kern = st.range(1) == 0   ? kf::kernel_spec(kf::kernel_gaussian{8.0})
                               : st.range(1) == 1 ? kf::kernel_spec(kf::kernel_laplacian{8.0})
                               : st.range(1) == 2 ? kf::kernel_spec(kf::kernel_cauchy{8.0})
                               : st.range(1) == 3 ? kf::kernel_spec(kf::kernel_epanechnikov{40.0})
                                                  : kf::kernel_spec(kf::kernel_periodic{8.0, 20.0});
  st.SetLabel(kf::kernel_describe(kern));
  for (auto _ : st) forward(x, kern, kf::mask::none());
  rate(st, n, 4);
}

struct layer {
  kf::nn::parameters<float> p;
  kf::nn::multi_head_attention<float> att;
  kf::nn::multi_head_attention<float>::cache c;
  kf::nn::multi_head_attention<float>::shape sh;
  kf::matrix<float> x, y, dy, dx;
  explicit layer(index n)
      : x(random(n, kWidth, 5)), y(n, kWidth), dy(random(n, kWidth, 6)), dx(n, kWidth) {
    att = kf::nn::multi_head_attention<float>(p, "attn", kWidth, kHeads);
    p.finalize(1);
    sh.batch = 1;
    sh.t = sh.s = n;
  }
};

void BM_layer_forward(benchmark::State& st) {
  const index n = st.range(0);
  layer l(n);
  for (auto _ : st) l.att.forward(l.p, l.y.view(), l.x.cview(), l.x.cview(), l.sh, l.c);
  rate(st, n, 4);
}

void BM_layer_fwd_bwd(benchmark::State& st) {
  const index n = st.range(0);
  layer l(n);
  for (auto _ : st) {
    l.att.forward(l.p, l.y.view(), l.x.cview(), l.x.cview(), l.sh, l.c);
    l.p.zero_grad();
    l.att.backward(l.p, l.dx.view(), l.dx.view(), l.dy.cview(), l.x.cview(), l.x.cview(), l.sh,
                   l.c);
  }
  rate(st, n, 14);
}

// The ceiling: n × n × (2·d·H) sgemm = the forward core's FLOPs.
void BM_sgemm(benchmark::State& st) {
  const index n = st.range(0);
  const kf::matrix<float> a = random(n, 2 * kWidth, 7), b = random(n, 2 * kWidth, 8);
  std::vector<float> c(static_cast<std::size_t>(n * n));
  for (auto _ : st) {
    kf::detail::gemm(false, true, n, n, 2 * kWidth, 1.0f, a.data(), 2 * kWidth, b.data(),
                     2 * kWidth, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  rate(st, n, 4);
}

// The forward's per-tile products for one head at n = m (arg 0), each of the 2 threads sweeping
// its own 256-row block over all key tiles, as smooth() does; arg 1: 0 = S = Q·Kᵀ only, 1 = P·V
// only, 2 = both, 3 = both by the register-tiled products (detail/tile_kernel.hpp) on K and V
// packed once, as attention's route runs them. GFLOP/s counts 2·n·d·256 per product kind per
// thread and block.
void BM_tile_gemms(benchmark::State& st) {
  const index n = st.range(0), which = st.range(1), bq = 256, bk = 256, threads = 2;
  const kf::matrix<float> q = random(n, kWidth, 1), k = random(n, kWidth, 2),
                          v = random(n, kWidth, 3);
  std::vector<kf::matrix<float>> s, o;
  for (index t = 0; t < threads; ++t) {
    s.push_back(random(bq, bk, 10 + static_cast<unsigned>(t)));
    o.emplace_back(bq, kDim);
  }
  std::vector<float> kp, vp;
  if (which == 3) {
    kp.resize(static_cast<std::size_t>(n * kDim));
    vp.resize(static_cast<std::size_t>(n * kDim));
    kf::detail::pack_row_panels(k.data(), kWidth, n, kDim, 0.125f, kp.data());
    kf::detail::pack_column_panels(v.data(), kWidth, n, kDim, vp.data(), n * kf::detail::kPanel);
  }
  for (auto _ : st) {
#pragma omp parallel num_threads(2)
    {
      const int t = omp_get_thread_num();
      const float* qb = q.cview().row(t * bq);
      for (index j = 0; j < n && which == 3; j += bk) {
        float* sb = s[static_cast<std::size_t>(t)].data();
        kf::detail::tile_scores(qb, kWidth, bq, kDim, kp.data() + j * kDim, bk / 16, sb, bk);
        kf::detail::tile_accumulate(sb, bk, bq, bk, vp.data() + j * kf::detail::kPanel,
                                    n * kf::detail::kPanel, kDim / 16,
                                    o[static_cast<std::size_t>(t)].data(), kDim);
      }
      for (index j = 0; j < n && which != 3; j += bk) {
        if (which != 1)
          kf::detail::gemm(false, true, bq, bk, kDim, 0.125f, qb, kWidth, k.cview().row(j), kWidth,
                           0.0f, s[static_cast<std::size_t>(t)].data(), bk);
        if (which != 0)
          kf::detail::gemm(false, false, bq, kDim, bk, 1.0f, s[static_cast<std::size_t>(t)].data(),
                           bk, v.cview().row(j), kWidth, 1.0f,
                           o[static_cast<std::size_t>(t)].data(), kDim);
      }
    }
    benchmark::ClobberMemory();
  }
  const double kinds = which >= 2 ? 2.0 : 1.0;
  st.counters["GFLOP/s"] =
      benchmark::Counter(kinds * 2.0 * static_cast<double>(threads * bq * n * kDim) *
                             static_cast<double>(st.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_tile_gemms)
    ->ArgsProduct({{4096}, {0, 1, 2, 3}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_sgemm)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_heads_forward)
    ->Args({1024, 0})
    ->Args({4096, 0})
    ->Args({1024, 1})
    ->Args({4096, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_heads_fwd_bwd)
    ->Args({1024, 0})
    ->Args({4096, 0})
    ->Args({4096, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_heads_kernel)
    ->ArgsProduct({{1024, 4096}, {0, 1, 2, 3, 4}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_layer_forward)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_layer_fwd_bwd)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
