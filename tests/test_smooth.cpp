// The smoothing primitive: fast path tied to the reference for every kernel × mask × shape,
// the identities of a weighted average, the seed-001 golden fixture, extreme inputs and the
// empty-row policy.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "detail/tile_kernel.hpp"
#include "kernelformer/io/npy.hpp"
#include "kernelformer/smooth.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

using test::all_close;
using test::random_matrix;

struct named_kernel {
  std::string label;
  kernel_spec spec;
};

std::vector<named_kernel> all_kernels() {
  std::vector<named_kernel> ks = {
      {"gaussian", kernel_gaussian{0.7}},
      {"laplacian", kernel_laplacian{0.8}},
      {"cauchy", kernel_cauchy{0.5}},
      {"rational_quadratic", kernel_rational_quadratic{0.6, 2.0}},
      {"rational_quadratic_a1", kernel_rational_quadratic{0.6, 1.0}},  // the ratio form
      {"periodic", kernel_periodic{1.0, 1.5}},
      {"locally_periodic", kernel_locally_periodic{1.0, 1.5}},
      {"boxcar", kernel_boxcar{1.1}},
      {"epanechnikov", kernel_epanechnikov{1.1}},
      {"biweight", kernel_biweight{1.1}},
      {"triweight", kernel_triweight{1.1}},
      {"tricube", kernel_tricube{1.1}},
      {"cosine", kernel_cosine{1.1}},
      {"uniform", kernel_uniform{}},
      {"inverse_distance", kernel_inverse_distance{}},
      {"exp_dot", kernel_exp_dot{}},
      {"exp_dot_t", kernel_exp_dot{0.3}},
      {"linear", kernel_linear{}},
      {"polynomial2", kernel_polynomial{0.0, 1.0, 2}},
      {"polynomial3", kernel_polynomial{0.7, 0.2, 3}},
  };
  return ks;
}

struct named_mask {
  std::string label;
  mask msk;
};

std::vector<named_mask> all_masks(index n, index m, std::uint64_t seed) {
  std::vector<index> lens(static_cast<std::size_t>(n));
  for (index i = 0; i < n; ++i) lens[static_cast<std::size_t>(i)] = (i * 7 + 3) % (m + 1);
  std::vector<std::uint8_t> bits(static_cast<std::size_t>(n * m));
  std::mt19937_64 rng(seed);
  for (auto& b : bits) b = static_cast<std::uint8_t>(rng() % 3 != 0);
  return {
      {"none", mask::none()},
      {"causal", mask::causal()},
      {"causal-3", mask::causal(-3)},
      {"window2,5", mask::window(2, 5)},
      {"padding", mask::key_padding(lens)},
      {"radius", mask::radius(1.2)},
      {"topk5", mask::none().topk(5)},
      {"knn3", mask::none().topk(3, topk_rank::distance)},
      {"causal&window", mask::causal() & mask::window(4, 0)},
      {"causal|radius", mask::causal() | mask::radius(0.8)},
      {"matrix", mask::matrix(n, m, bits)},
      {"radius&topk", (mask::radius(1.5) & mask::causal(2)).topk(4)},
  };
}

struct shape {
  index n, m, d, dv;
};

template <class T>
struct problem {
  matrix<T> q, k, v, dout;
  problem(const shape& s, std::uint64_t seed)
      : q(random_matrix<T>(s.n, s.d, seed)),
        k(random_matrix<T>(s.m, s.d, seed + 1)),
        v(random_matrix<T>(s.m, s.dv, seed + 2, -2, 2)),
        dout(random_matrix<T>(s.n, s.dv, seed + 3)) {}
};

// Runs fast and reference forward and backward; compares everything.
template <class T>
void tie_fast_to_reference(const problem<T>& p, const kernel_spec& kern, const mask& msk,
                           double rtol, double atol, const smooth_options& opt = {}) {
  const index n = p.q.rows(), m = p.k.rows(), d = p.q.cols(), dv = p.v.cols();
  matrix<T> out(n, dv), out_ref(n, dv);
  std::vector<T> lse(static_cast<std::size_t>(n)), lse_ref(static_cast<std::size_t>(n));
  const auto st =
      smooth_forward<T>(out.view(), lse, p.q.cview(), p.k.cview(), p.v.cview(), kern, msk, opt);
  const auto st_ref = reference::smooth_forward<T>(out_ref.view(), lse_ref, p.q.cview(),
                                                   p.k.cview(), p.v.cview(), kern, msk, opt);
  EXPECT_EQ(st.empty_rows, st_ref.empty_rows);
  // The route (src/smooth/route.hpp): top-k masks select, double never takes the register tiles.
  EXPECT_EQ(st.route == smooth_route::topk, msk.topk_k() > 0) << smooth_route_name(st.route);
  if (std::is_same_v<T, double>) {
    EXPECT_NE(st.route, smooth_route::register_tiles);
  }
  EXPECT_EQ(st_ref.route, smooth_route::reference);
  EXPECT_TRUE(all_close(out, out_ref, rtol, atol)) << "forward out";
  for (index i = 0; i < n; ++i) {
    const double a = lse[static_cast<std::size_t>(i)], b = lse_ref[static_cast<std::size_t>(i)];
    if (std::isinf(b)) {
      EXPECT_EQ(a, b) << "lse row " << i;
    } else {
      EXPECT_NEAR(a, b, atol + rtol * std::abs(b)) << "lse row " << i;
    }
  }
  if (opt.dropout == 0) {
    // The squared-weight output Σ_j p_ij² v_j (every standard-error band rests on it).
    matrix<T> o2(n, dv), sq(n, dv), o2_ref(n, dv), sq_ref(n, dv);
    const auto sq_st = smooth_forward_sq<T>(o2.view(), sq.view(), {}, p.q.cview(), p.k.cview(),
                                            p.v.cview(), kern, msk, opt);
    EXPECT_NE(sq_st.route, smooth_route::register_tiles);  // Σ p² v is the GEMM tiles' alone
    reference::smooth_forward_sq<T>(o2_ref.view(), sq_ref.view(), {}, p.q.cview(), p.k.cview(),
                                    p.v.cview(), kern, msk, opt);
    EXPECT_TRUE(all_close(o2, out, rtol, atol)) << "forward_sq's out";
    EXPECT_TRUE(all_close(sq, sq_ref, rtol, atol)) << "forward out_sq";
  }
  matrix<T> dq(n, d), dk(m, d), dvv(m, dv), dq_r(n, d), dk_r(m, d), dv_r(m, dv);
  smooth_grads<T> g{dq.view(), dk.view(), dvv.view()}, gr{dq_r.view(), dk_r.view(), dv_r.view()};
  const auto bst = smooth_backward<T>(g, p.dout.cview(), out.cview(), lse, p.q.cview(), p.k.cview(),
                                      p.v.cview(), kern, msk, opt);
  // The parameter gradient is asked for: never the register tiles (they serve attention only).
  EXPECT_EQ(bst.route, msk.topk_k() > 0 ? smooth_route::topk : smooth_route::gemm_tiles);
  reference::smooth_backward<T>(gr, p.dout.cview(), out_ref.cview(), lse_ref, p.q.cview(),
                                p.k.cview(), p.v.cview(), kern, msk, opt);
  // Gradients accumulate sums of many terms of both signs: compare relative to their scale.
  auto scale = [](const matrix<T>& a) {
    double s = 0;
    for (index i = 0; i < a.size(); ++i) s = std::max(s, std::abs(double(a.data()[i])));
    return s;
  };
  EXPECT_TRUE(all_close(dq, dq_r, rtol, atol + rtol * scale(dq_r))) << "dq";
  EXPECT_TRUE(all_close(dk, dk_r, rtol, atol + rtol * scale(dk_r))) << "dk";
  EXPECT_TRUE(all_close(dvv, dv_r, rtol, atol + rtol * scale(dv_r))) << "dv";
  for (int f = 0; f < 2; ++f)
    EXPECT_NEAR(g.dparam[f], gr.dparam[f], atol * 10 + rtol * 10 * std::abs(gr.dparam[f]))
        << "dparam " << f;
  ASSERT_EQ(g.dbandwidth_per_dim.size(), gr.dbandwidth_per_dim.size());
  for (std::size_t c = 0; c < g.dbandwidth_per_dim.size(); ++c)
    EXPECT_NEAR(g.dbandwidth_per_dim[c], gr.dbandwidth_per_dim[c],
                atol * 10 + rtol * 10 * std::abs(gr.dbandwidth_per_dim[c]));
}

TEST(SmoothFast, MatchesReferenceEveryKernelMaskShapeDouble) {
  const std::vector<shape> shapes = {
      {1, 1, 1, 1}, {7, 13, 1, 2}, {70, 300, 3, 5}, {65, 257, 12, 3}, {130, 70, 2, 1}};
  std::uint64_t seed = 1;
  for (const auto& s : shapes) {
    const problem<double> p(s, seed += 10);
    for (const auto& nk : all_kernels())
      for (const auto& nm : all_masks(s.n, s.m, seed)) {
        SCOPED_TRACE(nk.label + " / " + nm.label + " / n=" + std::to_string(s.n) +
                     " m=" + std::to_string(s.m) + " d=" + std::to_string(s.d));
        tie_fast_to_reference(p, nk.spec, nm.msk, 1e-9, 1e-11);
      }
  }
}

TEST(SmoothFast, MatchesReferenceFloat) {
  const std::vector<shape> shapes = {{70, 300, 3, 5}, {65, 257, 12, 3}, {9, 600, 1, 1}};
  std::uint64_t seed = 100;
  for (const auto& s : shapes) {
    const problem<float> p(s, seed += 10);
    for (const auto& nk : all_kernels()) {
      if (nk.label == "boxcar") continue;  // discontinuous: float rounding flips edge keys
      for (const auto& nm : {named_mask{"none", mask::none()}, named_mask{"causal", mask::causal()},
                             named_mask{"topk5", mask::none().topk(5)}}) {
        SCOPED_TRACE(nk.label + " / " + nm.label + " / d=" + std::to_string(s.d));
        tie_fast_to_reference(p, nk.spec, nm.msk, 2e-4, 2e-5);
      }
    }
  }
}

TEST(SmoothFast, ProductKernelMatchesReference) {
  const problem<double> p({70, 300, 5, 3}, 7);
  const std::vector<kernel_spec> specs = {
      kernel_spec::product(kernel_exp_dot{}, kernel_gaussian{0.5}, 3),
      kernel_spec::product(kernel_exp_dot{1.0}, kernel_epanechnikov{0.9}, 2),
      kernel_spec::product(kernel_gaussian{0.8}, kernel_periodic{1.0, 2.0}, 4)};
  for (const auto& k : specs)
    for (const auto& nm : all_masks(70, 300, 3)) {
      SCOPED_TRACE(kernel_describe(k) + " / " + nm.label);
      tie_fast_to_reference(p, k, nm.msk, 1e-9, 1e-11);
    }
}

TEST(SmoothFast, PerDimensionBandwidthMatchesReference) {
  smooth_options opt;
  opt.bandwidth_per_dim = {0.5, 2.0, 1.3};
  const problem<double> p({70, 300, 3, 2}, 11);
  for (const kernel_spec& k :
       {kernel_spec(kernel_gaussian{0.9}), kernel_spec(kernel_epanechnikov{1.2})})
    for (const auto& nm : {named_mask{"none", mask::none()},
                           named_mask{"knn", mask::none().topk(4, topk_rank::distance)}}) {
      SCOPED_TRACE(kernel_describe(k) + " / " + nm.label);
      tie_fast_to_reference(p, k, nm.msk, 1e-9, 1e-11, opt);
    }
}

TEST(SmoothFast, ThreadCountDoesNotChangeForward) {
  const problem<float> p({300, 700, 16, 8}, 5);
  matrix<float> a(300, 8), b(300, 8);
  smooth_options one, two;
  one.threads = 1;
  two.threads = 2;
  smooth_forward<float>(a.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(), kernel_exp_dot{},
                        mask::causal(), one);
  smooth_forward<float>(b.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(), kernel_exp_dot{},
                        mask::causal(), two);
  EXPECT_TRUE(all_close(a, b, 0, 0));
}

// Attention's kernel keeps its score tile zeroed between tiles (the GEMM adds to it): rows
// with nothing allowed in one key tile and keys in the next (a band mask past the first tile's
// queries), the last, narrower key tile, and a call after one that threw mid-tile (leaving the
// tile dirty) must all match the reference.
TEST(SmoothFast, ExpDotZeroedScoreTileAcrossMaskedRowsAndAfterAThrow) {
  const problem<float> p({600, 700, 8, 6}, 31);
  for (const auto& nm :
       {named_mask{"window2,5", mask::window(2, 5)}, named_mask{"causal-300", mask::causal(-300)},
        named_mask{"none", mask::none()}}) {
    SCOPED_TRACE(nm.label);
    tie_fast_to_reference(p, kernel_exp_dot{0.7}, nm.msk, 2e-4, 2e-5);
  }
  matrix<float> big = p.q;
  for (float& x : big.values()) x *= 1e22f;  // q·k/T overflows to ±inf with T = 1e-18
  matrix<float> out(600, 6), ref(600, 6);
  EXPECT_THROW(smooth_forward<float>(out.view(), {}, big.cview(), p.k.cview(), p.v.cview(),
                                     kernel_exp_dot{1e-18}, mask::none()),
               std::overflow_error);
  smooth_forward<float>(out.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(), kernel_exp_dot{},
                        mask::none());
  reference::smooth_forward<float>(ref.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(),
                                   kernel_exp_dot{}, mask::none());
  EXPECT_TRUE(all_close(out, ref, 2e-4, 2e-5));
}

// Attention's register-tiled route (detail/tile_kernel.hpp) against the reference and against
// the GEMM route it replaces: partial row groups, partial key and value panels, masked tiles,
// dropout, and keys too many to pack once per call (each tile packs its own).
// Turns the register-tiled route on for a test and restores the previous setting after it.
struct tile_route_on {
  bool was = detail::set_tile_kernel_enabled(true);
  ~tile_route_on() { detail::set_tile_kernel_enabled(was); }
};

TEST(SmoothFast, RegisterTiledRouteMatchesReferenceAndGemmRoute) {
  const tile_route_on guard;
  if (!detail::tile_kernel_enabled()) GTEST_SKIP() << "no AVX2 tile products on this CPU";
  const std::vector<shape> shapes = {
      {1, 1, 1, 5}, {7, 13, 3, 5}, {61, 300, 5, 20}, {257, 530, 64, 64}, {300, 270, 12, 17}};
  std::uint64_t seed = 500;
  for (const auto& s : shapes) {
    const problem<float> p(s, seed += 10);
    for (const auto& nm : all_masks(s.n, s.m, seed)) {
      if (nm.label.find("topk") != std::string::npos || nm.label.find("knn") != std::string::npos)
        continue;  // top-k takes its own path
      for (const double temp : {1.0, 0.7}) {
        SCOPED_TRACE(nm.label + " / T=" + std::to_string(temp) + " / n=" + std::to_string(s.n) +
                     " m=" + std::to_string(s.m) + " d=" + std::to_string(s.d) +
                     " dv=" + std::to_string(s.dv));
        const kernel_exp_dot kern{temp * std::sqrt(double(s.d))};
        tie_fast_to_reference(p, kern, nm.msk, 2e-4, 2e-5);
        matrix<float> tiled(s.n, s.dv), gemm(s.n, s.dv);
        std::vector<float> lt(static_cast<std::size_t>(s.n)), lg(lt);
        const auto st = smooth_forward<float>(tiled.view(), lt, p.q.cview(), p.k.cview(),
                                              p.v.cview(), kern, nm.msk);
        EXPECT_EQ(st.route, smooth_route::register_tiles);
        detail::set_tile_kernel_enabled(false);
        const auto sg = smooth_forward<float>(gemm.view(), lg, p.q.cview(), p.k.cview(),
                                              p.v.cview(), kern, nm.msk);
        EXPECT_EQ(sg.route, smooth_route::gemm_tiles);
        detail::set_tile_kernel_enabled(true);
        EXPECT_TRUE(all_close(tiled, gemm, 1e-5, 1e-6));
        for (std::size_t i = 0; i < lt.size(); ++i) {
          if (std::isinf(lg[i]))
            EXPECT_EQ(lt[i], lg[i]) << "lse " << i;  // empty rows
          else
            EXPECT_NEAR(lt[i], lg[i], 1e-5 * (1 + std::abs(lg[i]))) << "lse " << i;
        }
      }
    }
  }
  smooth_options opt;
  opt.dropout = 0.2;
  opt.dropout_seed = 99;
  tie_fast_to_reference(problem<float>({61, 300, 5, 20}, 77), kernel_exp_dot{}, mask::causal(),
                        2e-4, 2e-5, opt);
  // q·k ≈ 1e38 − 1e38 stays finite, but q·(k/T) with T = 0.01 would be +inf − inf = NaN: the
  // route steps aside for inputs this large, and the result is the GEMM route's, finite.
  matrix<float> q(1, 2), k(2, 2), v = random_matrix<float>(2, 16, 79), o(1, 16), og(1, 16);
  q(0, 0) = q(0, 1) = 1e19f;
  k(0, 0) = 1e19f;
  k(0, 1) = -1e19f;
  k(1, 0) = k(1, 1) = 0.f;
  EXPECT_EQ(smooth_forward<float>(o.view(), {}, q.cview(), k.cview(), v.cview(),
                                  kernel_exp_dot{0.01}, mask::none())
                .route,
            smooth_route::gemm_tiles);  // the route stepped aside
  detail::set_tile_kernel_enabled(false);
  smooth_forward<float>(og.view(), {}, q.cview(), k.cview(), v.cview(), kernel_exp_dot{0.01},
                        mask::none());
  detail::set_tile_kernel_enabled(true);
  for (index c = 0; c < 16; ++c) {
    EXPECT_TRUE(std::isfinite(o(0, c))) << c;
    EXPECT_EQ(o(0, c), og(0, c)) << c;
  }
  // 20,000 keys × (60 + 80) packed floats pass the once-per-call limit: per-tile packing (the
  // backward's three packed operands too).
  tie_fast_to_reference(problem<float>({9, 20000, 60, 70}, 78), kernel_exp_dot{}, mask::none(),
                        2e-4, 2e-5);
}

// Every other kernel on the register-tiled forward (one factor on dot products, or on squared
// distances by the expansion, whose centered keys are packed times −2) against the GEMM route and
// the reference: partial tiles, every mask (radius masks read the distance tile), compact
// kernels' skipped tiles, and keys packed per tile (20,000 keys).
TEST(SmoothFast, RegisterTiledRouteServesDistanceAndDotKernels) {
  const tile_route_on guard;
  if (!detail::tile_kernel_enabled()) GTEST_SKIP() << "no AVX2 tile products on this CPU";
  std::uint64_t seed = 700;
  for (const auto& s : {shape{300, 270, 12, 17}, shape{70, 530, 64, 64}, shape{9, 20000, 60, 70}}) {
    const problem<float> p(s, seed += 10);
    const bool small = s.m < 1000;
    auto kernels = all_kernels();
    // A narrow periodic kernel: log-weights down to −200.
    kernels.push_back({"periodic_narrow", kernel_periodic{0.1, 1.5}});
    for (const auto& nk : kernels) {
      if (nk.label == "boxcar") continue;  // discontinuous: float rounding flips edge keys
      if (nk.label.rfind("exp_dot", 0) == 0) continue;  // its own test above
      for (const auto& nm : all_masks(s.n, s.m, seed)) {
        if (nm.label.find("topk") != std::string::npos || nm.label.find("knn") != std::string::npos)
          continue;  // top-k takes its own path
        if (!small && nm.label != "none") continue;
        SCOPED_TRACE(nk.label + " / " + nm.label + " / n=" + std::to_string(s.n) +
                     " m=" + std::to_string(s.m) + " d=" + std::to_string(s.d));
        // Compact kernels' gradients jump at the support edge, where float rounding flips a few
        // pairs (as boxcar's weights): their tie to the reference is the GEMM route's tests'.
        const bool compact = nk.label == "epanechnikov" || nk.label == "biweight" ||
                             nk.label == "triweight" || nk.label == "tricube" ||
                             nk.label == "cosine";
        // periodic_narrow's log-weights, −200·sin²(…), amplify float's rounding of the angle
        // (on either route) 100-fold: only its order of magnitude is held to.
        const double tol = nk.label == "periodic_narrow" ? 20 : 1;
        if (small && !compact) tie_fast_to_reference(p, nk.spec, nm.msk, 2e-4 * tol, 2e-5 * tol);
        matrix<float> tiled(s.n, s.dv), gemm(s.n, s.dv);
        std::vector<float> lt(static_cast<std::size_t>(s.n)), lg(lt);
        const auto st = smooth_forward<float>(tiled.view(), lt, p.q.cview(), p.k.cview(),
                                              p.v.cview(), nk.spec, nm.msk);
        // One factor on dot products or, beyond 8 columns, on squared distances by the expansion.
        EXPECT_EQ(st.route, smooth_route::register_tiles);
        detail::set_tile_kernel_enabled(false);
        const auto sg = smooth_forward<float>(gemm.view(), lg, p.q.cview(), p.k.cview(),
                                              p.v.cview(), nk.spec, nm.msk);
        EXPECT_EQ(sg.route, smooth_route::gemm_tiles);
        detail::set_tile_kernel_enabled(true);
        EXPECT_TRUE(all_close(tiled, gemm, 1e-4 * tol, 1e-5 * tol));
        for (std::size_t i = 0; i < lt.size(); ++i) {
          if (std::isinf(lg[i]))
            EXPECT_EQ(lt[i], lg[i]) << "lse " << i;  // empty rows
          else
            EXPECT_NEAR(lt[i], lg[i], 1e-4 * tol * (1 + std::abs(lg[i]))) << "lse " << i;
        }
      }
    }
  }
}

// The backward's five products on the register-tiled route against the GEMM route: every
// gradient, and each one requested alone (the others' buffers absent), one and two threads
// (with weight dropout). (tie_fast_to_reference asks for the temperature's gradient too, which the
// route leaves to the GEMM route.)
TEST(SmoothFast, RegisterTiledBackwardMatchesGemmRoute) {
  const tile_route_on guard;
  if (!detail::tile_kernel_enabled()) GTEST_SKIP() << "no AVX2 tile products on this CPU";
  // {9, 20000, 60, 70}: the three packed operands pass the once-per-call limit (per-tile packing).
  for (const shape s : {shape{300, 270, 12, 17}, shape{257, 530, 64, 64}, shape{5, 40, 3, 5},
                        shape{9, 20000, 60, 70}}) {
    const problem<float> p(s, 900 + std::uint64_t(s.n));
    for (const auto& nm : {named_mask{"none", mask::none()}, named_mask{"causal", mask::causal()}})
      for (const int threads : {1, 2}) {
        const double dropout = threads == 2 ? 0.2 : 0.0;
        SCOPED_TRACE(nm.label + " / threads=" + std::to_string(threads) +
                     " / dropout=" + std::to_string(dropout) + " / n=" + std::to_string(s.n) +
                     " d=" + std::to_string(s.d) + " dv=" + std::to_string(s.dv));
        smooth_options opt;
        opt.threads = threads;
        opt.dropout = dropout;
        opt.dropout_seed = 7;
        const kernel_exp_dot kern{0.8 * std::sqrt(double(s.d))};
        matrix<float> out(s.n, s.dv);
        std::vector<float> lse(static_cast<std::size_t>(s.n));
        smooth_forward<float>(out.view(), lse, p.q.cview(), p.k.cview(), p.v.cview(), kern, nm.msk,
                              opt);
        auto grads = [&](bool tiled, int which) {  // which: -1 = all, else 0 dq, 1 dk, 2 dv
          std::array<matrix<float>, 3> gm = {matrix<float>(s.n, s.d), matrix<float>(s.m, s.d),
                                             matrix<float>(s.m, s.dv)};
          smooth_grads<float> g;
          g.want_dparam = false;  // as attention asks: the route serves that request only
          if (which < 0 || which == 0) g.dq = gm[0].view();
          if (which < 0 || which == 1) g.dk = gm[1].view();
          if (which < 0 || which == 2) g.dv = gm[2].view();
          detail::set_tile_kernel_enabled(tiled);
          const auto st = smooth_backward<float>(g, p.dout.cview(), out.cview(), lse, p.q.cview(),
                                                 p.k.cview(), p.v.cview(), kern, nm.msk, opt);
          EXPECT_EQ(st.route, tiled ? smooth_route::register_tiles : smooth_route::gemm_tiles);
          detail::set_tile_kernel_enabled(true);
          return gm;
        };
        const auto tiled = grads(true, -1), gemm = grads(false, -1);
        const char* names[3] = {"dq", "dk", "dv"};
        for (int w = 0; w < 3; ++w) {
          double scale = 0;
          for (index i = 0; i < gemm[w].size(); ++i)
            scale = std::max(scale, std::abs(double(gemm[w].data()[i])));
          EXPECT_TRUE(all_close(tiled[w], gemm[w], 1e-4, 1e-5 * (1 + scale))) << names[w];
          const auto alone = grads(true, w);
          EXPECT_TRUE(all_close(alone[w], tiled[w], 1e-6, 1e-7 * (1 + scale)))
              << names[w] << " alone";
        }
      }
  }
}

// Gradients without the kernel parameter's (as attention asks) are the same gradients: the
// forward's shortcuts that skip the argument tile (attention's fused scores, 1-D weights straight
// from q − k) must not reach a backward that reads the arguments. Every kernel, one and three
// columns, both precisions' paths.
TEST(SmoothFast, GradientsWithoutParameterGradientAreTheSame) {
  for (const index d : {index(1), index(3)}) {
    const problem<double> p({40, 300, d, 2}, 40 + std::uint64_t(d));
    for (const auto& nk : all_kernels())
      for (const auto& nm :
           {named_mask{"none", mask::none()}, named_mask{"causal", mask::causal()}}) {
        SCOPED_TRACE(nk.label + " / " + nm.label + " / d=" + std::to_string(d));
        matrix<double> out(40, 2);
        std::vector<double> lse(40);
        smooth_forward<double>(out.view(), lse, p.q.cview(), p.k.cview(), p.v.cview(), nk.spec,
                               nm.msk);
        auto grads = [&](bool want_dparam) {
          std::array<matrix<double>, 3> gm = {matrix<double>(40, d), matrix<double>(300, d),
                                              matrix<double>(300, 2)};
          smooth_grads<double> g{gm[0].view(), gm[1].view(), gm[2].view()};
          g.want_dparam = want_dparam;
          smooth_backward<double>(g, p.dout.cview(), out.cview(), lse, p.q.cview(), p.k.cview(),
                                  p.v.cview(), nk.spec, nm.msk);
          return gm;
        };
        const auto with = grads(true), without = grads(false);
        for (int w = 0; w < 3; ++w) EXPECT_TRUE(all_close(without[w], with[w], 1e-12, 1e-14)) << w;
      }
  }
}

TEST(SmoothDropout, FastMatchesReferenceAndKeepsTheRowNormalizer) {
  smooth_options opt;
  opt.dropout = 0.3;
  opt.dropout_seed = 0x1234abcd5678ULL;
  const problem<double> p({70, 300, 4, 3}, 21);  // crosses query and key tiles
  for (const kernel_spec& k : {kernel_spec(kernel_exp_dot{}), kernel_spec(kernel_gaussian{0.9}),
                               kernel_spec(kernel_epanechnikov{1.5}),
                               kernel_spec::product(kernel_exp_dot{}, kernel_gaussian{0.8}, 2)})
    for (const auto& nm :
         {named_mask{"none", mask::none()}, named_mask{"causal", mask::causal()}}) {
      SCOPED_TRACE(kernel_describe(k) + " / " + nm.label);
      tie_fast_to_reference(p, k, nm.msk, 1e-9, 1e-11, opt);
      // lse is the whole row's; out differs from the undropped output.
      matrix<double> a(70, 3), b(70, 3);
      std::vector<double> la(70), lb(70);
      smooth_forward<double>(a.view(), la, p.q.cview(), p.k.cview(), p.v.cview(), k, nm.msk, opt);
      smooth_forward<double>(b.view(), lb, p.q.cview(), p.k.cview(), p.v.cview(), k, nm.msk);
      EXPECT_EQ(la, lb);
      EXPECT_FALSE(all_close(a, b, 1e-3, 1e-3));
    }
  const problem<float> pf({99, 99, 64, 64}, 22);  // the periodic model's head shape, float
  smooth_options of = opt;
  of.dropout = 0.1;
  tie_fast_to_reference(pf, kernel_exp_dot{}, mask::none(), 2e-4, 2e-5, of);
}

TEST(SmoothDropout, MaskIsUnbiasedDeterministicAndSeedDependent) {
  // Uniform kernel, one constant value column: out_i = Σ_j p_ij m_ij = kept fraction × scale,
  // whose mean over many rows is 1 (inverted dropout) and whose kept fraction is 1 − rate.
  const index n = 400, m = 500;
  matrix<double> q(n, 1), k(m, 1), v(m, 1);
  for (index j = 0; j < m; ++j) v(j, 0) = 1.0;
  smooth_options opt;
  opt.dropout = 0.1;
  opt.dropout_seed = 7;
  matrix<double> a(n, 1), b(n, 1), c(n, 1);
  smooth_forward<double>(a.view(), {}, q.cview(), k.cview(), v.cview(), kernel_uniform{},
                         mask::none(), opt);
  smooth_forward<double>(b.view(), {}, q.cview(), k.cview(), v.cview(), kernel_uniform{},
                         mask::none(), opt);
  opt.dropout_seed = 8;
  smooth_forward<double>(c.view(), {}, q.cview(), k.cview(), v.cview(), kernel_uniform{},
                         mask::none(), opt);
  double mean = 0;
  for (index i = 0; i < n; ++i) mean += a(i, 0) / n;
  EXPECT_NEAR(mean, 1.0, 0.005);  // sd of the mean ≈ 0.3/√(n·m)·(1/0.9) ≈ 0.0008
  EXPECT_TRUE(all_close(a, b, 0, 0));
  EXPECT_FALSE(all_close(a, c, 1e-6, 0));
}

TEST(SmoothDropout, BadRateAndUnsupportedCombinationsThrow) {
  const problem<double> p({4, 5, 2, 1}, 1);
  matrix<double> out(4, 1), sq(4, 1);
  smooth_options opt;
  for (double r : {-0.1, 1.0, 1.5}) {
    opt.dropout = r;
    EXPECT_THROW(smooth_forward<double>(out.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(),
                                        kernel_exp_dot{}, mask::none(), opt),
                 std::invalid_argument);
  }
  opt.dropout = 0.2;
  EXPECT_THROW(smooth_forward<double>(out.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(),
                                      kernel_exp_dot{}, mask::none().topk(2), opt),
               std::invalid_argument);
  EXPECT_THROW(smooth_forward_sq<double>(out.view(), sq.view(), {}, p.q.cview(), p.k.cview(),
                                         p.v.cview(), kernel_exp_dot{}, mask::none(), opt),
               std::invalid_argument);
}

// ---- identities ----

TEST(SmoothIdentity, WeightsSumToOneAndMatchForward) {
  const problem<double> p({40, 90, 3, 2}, 21);
  for (const auto& nk : all_kernels()) {
    SCOPED_TRACE(nk.label);
    matrix<double> w(40, 90), out(40, 2), wv(40, 2);
    smooth_weights<double>(w.view(), {}, p.q.cview(), p.k.cview(), nk.spec, mask::causal(3));
    const auto st = smooth_forward<double>(out.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(),
                                           nk.spec, mask::causal(3));
    index empty = 0;
    for (index i = 0; i < 40; ++i) {
      double s = 0;
      for (index j = 0; j < 90; ++j) {
        EXPECT_GE(w(i, j), 0.0);
        if (j > i + 3) {
          EXPECT_EQ(w(i, j), 0.0) << "masked key has weight";
        }
        s += w(i, j);
      }
      if (s == 0) {
        ++empty;
      } else {
        EXPECT_NEAR(s, 1.0, 1e-12);
      }
      for (index c = 0; c < 2; ++c) {
        double acc = 0;
        for (index j = 0; j < 90; ++j) acc += w(i, j) * p.v(j, c);
        wv(i, c) = acc;
      }
    }
    EXPECT_EQ(empty, st.empty_rows);
    EXPECT_TRUE(all_close(out, wv, 1e-10, 1e-12));
  }
}

TEST(SmoothIdentity, SelectedRowsOfWeights) {
  const problem<double> p({20, 30, 2, 1}, 3);
  matrix<double> all(20, 30), some(2, 30);
  const std::vector<index> rows = {17, 4};
  smooth_weights<double>(all.view(), {}, p.q.cview(), p.k.cview(), kernel_gaussian{0.5},
                         mask::none());
  smooth_weights<double>(some.view(), rows, p.q.cview(), p.k.cview(), kernel_gaussian{0.5},
                         mask::none());
  for (index j = 0; j < 30; ++j) {
    EXPECT_EQ(some(0, j), all(17, j));
    EXPECT_EQ(some(1, j), all(4, j));
  }
}

TEST(SmoothIdentity, ConstantValuesComeBackUnchanged) {
  problem<double> p({50, 120, 4, 3}, 31);
  for (index j = 0; j < 120; ++j)
    for (index c = 0; c < 3; ++c) p.v(j, c) = 2.5 - double(c);
  for (const auto& nk : all_kernels()) {
    SCOPED_TRACE(nk.label);
    matrix<double> out(50, 3);
    smooth_forward<double>(out.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(), nk.spec,
                           mask::none());
    for (index i = 0; i < 50; ++i) {
      double s = 0;
      for (index c = 0; c < 3; ++c) s += std::abs(out(i, c));
      if (s == 0) continue;  // empty row (compact kernel far from every key)
      for (index c = 0; c < 3; ++c) EXPECT_NEAR(out(i, c), 2.5 - double(c), 1e-12);
    }
  }
}

TEST(SmoothIdentity, PermutingKeysChangesNothing) {
  const problem<double> p({33, 77, 3, 2}, 41);
  std::vector<index> perm(77);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(9);
  std::shuffle(perm.begin(), perm.end(), rng);
  matrix<double> kp(77, 3), vp(77, 2);
  for (index j = 0; j < 77; ++j) {
    for (index c = 0; c < 3; ++c) kp(j, c) = p.k(perm[static_cast<std::size_t>(j)], c);
    for (index c = 0; c < 2; ++c) vp(j, c) = p.v(perm[static_cast<std::size_t>(j)], c);
  }
  for (const auto& nk : all_kernels()) {
    SCOPED_TRACE(nk.label);
    matrix<double> a(33, 2), b(33, 2);
    smooth_forward<double>(a.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(), nk.spec,
                           mask::radius(1.4));
    smooth_forward<double>(b.view(), {}, p.q.cview(), kp.cview(), vp.cview(), nk.spec,
                           mask::radius(1.4));
    EXPECT_TRUE(all_close(a, b, 1e-11, 1e-12));
  }
}

TEST(SmoothIdentity, SingleOpenKeyReturnsItsValue) {
  const problem<double> p({10, 40, 2, 3}, 51);
  for (const auto& nk : all_kernels()) {
    if (kernel_compact(nk.spec.first) || nk.label.starts_with("linear") ||
        nk.label.starts_with("polynomial3"))
      continue;  // these may give the one key weight 0: the empty-row policy, tested below
    SCOPED_TRACE(nk.label);
    matrix<double> out(10, 3);
    smooth_forward<double>(out.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(), nk.spec,
                           mask::key_padding({1}));
    for (index i = 0; i < 10; ++i)
      for (index c = 0; c < 3; ++c) EXPECT_NEAR(out(i, c), p.v(0, c), 1e-13);
  }
}

TEST(SmoothIdentity, GaussianLimitsNearestNeighbourAndMaskedMean) {
  const problem<double> p({25, 60, 2, 1}, 61);
  matrix<double> nn(25, 1), mean(25, 1);
  smooth_forward<double>(nn.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(),
                         kernel_gaussian{1e-6}, mask::none());
  smooth_forward<double>(mean.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(),
                         kernel_gaussian{1e6}, mask::causal(10));
  for (index i = 0; i < 25; ++i) {
    index best = 0;
    double bd = 1e300, acc = 0;
    for (index j = 0; j < 60; ++j) {
      const double dx = p.q(i, 0) - p.k(j, 0), dy = p.q(i, 1) - p.k(j, 1);
      if (dx * dx + dy * dy < bd) {
        bd = dx * dx + dy * dy;
        best = j;
      }
    }
    for (index j = 0; j <= i + 10; ++j) acc += p.v(j, 0);
    EXPECT_NEAR(nn(i, 0), p.v(best, 0), 1e-12) << "h -> 0 gives the nearest neighbour";
    EXPECT_NEAR(mean(i, 0), acc / double(i + 11), 1e-9) << "h -> inf gives the masked mean";
  }
}

TEST(SmoothIdentity, ExpDotEqualsPlainSoftmaxAttention) {
  const problem<double> p({37, 53, 16, 8}, 71);
  matrix<double> out(37, 8), ref(37, 8);
  smooth_forward<double>(out.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(), kernel_exp_dot{},
                         mask::none());
  for (index i = 0; i < 37; ++i) {
    std::vector<double> s(53);
    double mx = -1e300, sum = 0;
    for (index j = 0; j < 53; ++j) {
      double dot = 0;
      for (index c = 0; c < 16; ++c) dot += p.q(i, c) * p.k(j, c);
      s[static_cast<std::size_t>(j)] = dot / std::sqrt(16.0);
      mx = std::max(mx, s[static_cast<std::size_t>(j)]);
    }
    for (double& x : s) sum += (x = std::exp(x - mx));
    for (index c = 0; c < 8; ++c) {
      double acc = 0;
      for (index j = 0; j < 53; ++j) acc += s[static_cast<std::size_t>(j)] / sum * p.v(j, c);
      ref(i, c) = acc;
    }
  }
  EXPECT_TRUE(all_close(out, ref, 1e-12, 1e-13));
}

// Seed 001: sklearn rbf_kernel(gamma = 5), row-normalized, K @ y — our gaussian with h = 1/√10.
TEST(SmoothGolden, Seed001MatchesScikitLearn) {
  const std::string dir = KF_FIXTURES_DIR;
  const auto x = io::npy_read(dir + "/seed001_x.npy").to_matrix<double>();
  const auto y = io::npy_read(dir + "/seed001_y.npy").to_matrix<double>();
  const auto tx = io::npy_read(dir + "/seed001_testx.npy").to_matrix<double>();
  const auto expected = io::npy_read(dir + "/seed001_nw.npy").to_matrix<double>();
  ASSERT_EQ(x.rows(), 40);
  ASSERT_EQ(tx.rows(), 500);
  matrix<double> out(500, 1);
  smooth_forward<double>(out.view(), {}, tx.cview(), x.cview(), y.cview(),
                         kernel_gaussian{1 / std::sqrt(10.0)}, mask::none());
  EXPECT_TRUE(all_close(out, expected, 1e-12, 1e-12));
}

// ---- extreme inputs ----

template <class T>
void check_extreme_dot() {
  // |q·k| up to 1e4 with T = 1: the running max keeps it finite.
  problem<T> p({20, 40, 4, 2}, 81);
  for (index i = 0; i < p.q.size(); ++i) p.q.data()[i] *= T(50);
  for (index i = 0; i < p.k.size(); ++i) p.k.data()[i] *= T(50);
  matrix<T> out(20, 2), ref(20, 2);
  std::vector<T> lse(20);
  smooth_forward<T>(out.view(), lse, p.q.cview(), p.k.cview(), p.v.cview(), kernel_exp_dot{1.0},
                    mask::causal(5));
  reference::smooth_forward<T>(ref.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(),
                               kernel_exp_dot{1.0}, mask::causal(5));
  for (index i = 0; i < out.size(); ++i) ASSERT_TRUE(std::isfinite(out.data()[i]));
  for (T l : lse) ASSERT_TRUE(std::isfinite(l));
  // float64: log-weights up to 1e4 carry ~1e4·eps of rounding into each weight.
  constexpr bool is_double = std::is_same_v<T, double>;
  EXPECT_TRUE(all_close(out, ref, is_double ? 1e-11 : 1e-4, is_double ? 1e-12 : 1e-5));
}

TEST(SmoothExtreme, LargeDotProductsStayFinite) {
  check_extreme_dot<float>();
  check_extreme_dot<double>();
}

template <class T>
void check_extreme_bandwidth() {
  const problem<T> p({30, 50, 2, 1}, 91);
  for (double h : {1e-6, 1e6}) {
    SCOPED_TRACE(h);
    matrix<T> out(30, 1), ref(30, 1);
    smooth_forward<T>(out.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(), kernel_gaussian{h},
                      mask::none());
    reference::smooth_forward<T>(ref.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(),
                                 kernel_gaussian{h}, mask::none());
    for (index i = 0; i < 30; ++i) ASSERT_TRUE(std::isfinite(out(i, 0)));
    constexpr bool is_double = std::is_same_v<T, double>;
    EXPECT_TRUE(all_close(out, ref, is_double ? 1e-12 : 1e-4, is_double ? 1e-12 : 1e-5));
  }
}

TEST(SmoothExtreme, BandwidthsFromMicroToMega) {
  check_extreme_bandwidth<float>();
  check_extreme_bandwidth<double>();
}

TEST(SmoothExtreme, OverflowingLogWeightThrows) {
  matrix<float> q(1, 1, {1e20f}), k(2, 1, {1e20f, -1e20f}), v(2, 1, {1.f, 2.f}), out(1, 1);
  EXPECT_THROW(smooth_forward<float>(out.view(), {}, q.cview(), k.cview(), v.cview(),
                                     kernel_exp_dot{1.0}, mask::none()),
               std::overflow_error);
}

// ---- the empty-row policy ----

TEST(SmoothEmptyRows, OutputZeroLseMinusInfNoGradient) {
  // Queries far from every key under a compact kernel; one query near the keys.
  matrix<double> q(3, 1, {100.0, 0.1, -50.0}), k(4, 1, {0.0, 0.2, 0.4, 0.6});
  matrix<double> v(4, 1, {1, 2, 3, 4}), dout(3, 1, {1, 1, 1});
  for (bool fast : {true, false}) {
    matrix<double> out(3, 1);
    std::vector<double> lse(3);
    const kernel_spec kern = kernel_epanechnikov{0.5};
    const auto st = fast ? smooth_forward<double>(out.view(), lse, q.cview(), k.cview(), v.cview(),
                                                  kern, mask::none())
                         : reference::smooth_forward<double>(out.view(), lse, q.cview(), k.cview(),
                                                             v.cview(), kern, mask::none());
    EXPECT_EQ(st.empty_rows, 2);
    EXPECT_EQ(out(0, 0), 0.0);
    EXPECT_EQ(out(2, 0), 0.0);
    EXPECT_EQ(lse[0], -std::numeric_limits<double>::infinity());
    EXPECT_GT(out(1, 0), 1.0);
    matrix<double> dq(3, 1), dk(4, 1), dv(4, 1);
    smooth_grads<double> g{dq.view(), dk.view(), dv.view()};
    smooth_backward<double>(g, dout.cview(), out.cview(), lse, q.cview(), k.cview(), v.cview(),
                            kern, mask::none());
    EXPECT_EQ(dq(0, 0), 0.0);
    EXPECT_EQ(dq(2, 0), 0.0);
    for (index i = 0; i < 4; ++i) EXPECT_TRUE(std::isfinite(dk(i, 0)) && std::isfinite(dv(i, 0)));
  }
  // An empty mask: every row empty.
  const problem<float> p({5, 6, 2, 2}, 3);
  matrix<float> out(5, 2);
  const auto st = smooth_forward<float>(out.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(),
                                        kernel_exp_dot{}, mask::causal(-10));
  EXPECT_EQ(st.empty_rows, 5);
  for (float x : out.values()) EXPECT_EQ(x, 0.0f);
}

TEST(SmoothEmptyRows, LinearKernelWithNoPositiveSimilarity) {
  matrix<double> q(1, 2, {1, 0}), k(2, 2, {-1, 0, -2, 1}), v(2, 1, {5, 6}), out(1, 1);
  const auto st = smooth_forward<double>(out.view(), {}, q.cview(), k.cview(), v.cview(),
                                         kernel_linear{}, mask::none());
  EXPECT_EQ(st.empty_rows, 1);
  EXPECT_EQ(out(0, 0), 0.0);
}

// ---- errors at the API edge ----

TEST(SmoothErrors, BadInputsThrowClearly) {
  const problem<double> p({4, 5, 2, 1}, 1);
  matrix<double> out(4, 1);
  auto run = [&](const matrix<double>& q, const matrix<double>& k, const matrix<double>& v,
                 const kernel_spec& kern) {
    smooth_forward<double>(out.view(), {}, q.cview(), k.cview(), v.cview(), kern, mask::none());
  };
  matrix<double> bad = p.q;
  bad(2, 1) = std::nan("");
  EXPECT_THROW(run(bad, p.k, p.v, kernel_gaussian{}), std::invalid_argument);
  EXPECT_THROW(run(p.q, random_matrix<double>(5, 3, 1), p.v, kernel_gaussian{}),
               std::invalid_argument);
  EXPECT_THROW(run(p.q, p.k, random_matrix<double>(6, 1, 1), kernel_gaussian{}),
               std::invalid_argument);
  EXPECT_THROW(run(p.q, p.k, p.v, kernel_gaussian{0.0}), std::invalid_argument);
  EXPECT_THROW(run(p.q, p.k, p.v, kernel_gaussian{-1.0}), std::invalid_argument);
  EXPECT_THROW(run(p.q, p.k, p.v, kernel_exp_dot{-2.0}), std::invalid_argument);
  EXPECT_THROW(run(p.q, p.k, p.v, kernel_spec::product(kernel_exp_dot{}, kernel_gaussian{}, 2)),
               std::invalid_argument);
  try {
    run(p.q, p.k, p.v, kernel_gaussian{0.0});
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bandwidth"), std::string::npos) << e.what();
  }
  // float32 cannot hold 1/h² for h = 1e-25
  const problem<float> pf({2, 2, 1, 1}, 1);
  matrix<float> of(2, 1);
  EXPECT_THROW(smooth_forward<float>(of.view(), {}, pf.q.cview(), pf.k.cview(), pf.v.cview(),
                                     kernel_gaussian{1e-25}, mask::none()),
               std::invalid_argument);
}

}  // namespace
}  // namespace kf
