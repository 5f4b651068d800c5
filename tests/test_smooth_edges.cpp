// The edge behaviours docs/numerics.md documents, each by a test that fails without it: the
// support edge of compact kernels included at ‖q − k‖ = h (the primitive's fast path and
// reference, float and double; the regression routes), top-k ties with duplicated keys (smaller
// distance, then smaller key index), float32 beyond its bandwidth range (rescaled or refused), and
// the Laplacian's gradient at q = k (the kink's subgradient 0: finite, and only the other keys).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/smooth.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

// Integer points (exact squared distances in float32 and float64): n queries, m keys in 2-D.
matrix<double> integer_points(index n, std::uint64_t seed, int lo, int hi) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  matrix<double> x(n, 2);
  for (index i = 0; i < x.size(); ++i) x.data()[i] = u(rng);
  return x;
}

template <class T>
matrix<T> cast(const matrix<double>& a) {
  matrix<T> b(a.rows(), a.cols());
  for (index i = 0; i < a.size(); ++i) b.data()[i] = static_cast<T>(a.data()[i]);
  return b;
}

// With h = 5 (and 13) many keys sit at exactly ‖q − k‖ = h (3-4-5, 5-12-13, axis points). The
// boxcar counts them (weight 1), so p_ij = 1/|{j : ‖q_i − k_j‖ ≤ h}| exactly on that set.
template <class T>
void expect_boxcar_edge_included(double h) {
  const matrix<double> q = integer_points(37, 1, -20, 20), k = integer_points(301, 2, -20, 20);
  index on_edge = 0;
  matrix<double> expect(q.rows(), k.rows());
  std::vector<index> counts(static_cast<std::size_t>(q.rows()));
  for (index i = 0; i < q.rows(); ++i) {
    index& count = counts[static_cast<std::size_t>(i)];
    for (index j = 0; j < k.rows(); ++j) {
      const double dx = q(i, 0) - k(j, 0), dy = q(i, 1) - k(j, 1), s = dx * dx + dy * dy;
      count += s <= h * h;
      on_edge += s == h * h;
    }
    for (index j = 0; j < k.rows(); ++j) {
      const double dx = q(i, 0) - k(j, 0), dy = q(i, 1) - k(j, 1);
      expect(i, j) = dx * dx + dy * dy <= h * h ? 1.0 / double(count) : 0.0;
    }
  }
  ASSERT_GT(on_edge, 20) << "the test needs keys at exactly distance h";
  const matrix<T> qt = cast<T>(q), kt = cast<T>(k);
  matrix<T> ones(k.rows(), 1), w(q.rows(), k.rows()), out(q.rows(), 1), ref(q.rows(), 1);
  for (index j = 0; j < k.rows(); ++j) ones(j, 0) = T(1);
  smooth_weights<T>(w.view(), {}, qt.cview(), kt.cview(), kernel_boxcar{h}, mask::none());
  EXPECT_TRUE(test::all_close(w, expect, 1e-6, 0));
  // Σ_j K(q_i, k_j)·1 / Σ_j K: 1 on every row; a row whose only keys sat on the edge would be 0.
  smooth_forward<T>(out.view(), {}, qt.cview(), kt.cview(), ones.cview(), kernel_boxcar{h},
                    mask::none());
  reference::smooth_forward<T>(ref.view(), {}, qt.cview(), kt.cview(), ones.cview(),
                               kernel_boxcar{h}, mask::none());
  for (index i = 0; i < q.rows(); ++i) {
    const double expect_out = counts[static_cast<std::size_t>(i)] > 0 ? 1.0 : 0.0;
    EXPECT_NEAR(double(out(i, 0)), expect_out, 1e-6) << i;
    EXPECT_NEAR(double(ref(i, 0)), expect_out, 1e-6) << i;
  }
}

TEST(SmoothEdges, BoxcarIncludesKeysAtExactlyTheBandwidthDouble) {
  expect_boxcar_edge_included<double>(5);
  expect_boxcar_edge_included<double>(13);
}

TEST(SmoothEdges, BoxcarIncludesKeysAtExactlyTheBandwidthFloat) {
  expect_boxcar_edge_included<float>(5);
  expect_boxcar_edge_included<float>(13);
}

// The radius mask's edge too: |q − k| ≤ r keeps keys at exactly r (a boxcar wide enough to see
// every key, so the weights are exactly 1).
TEST(SmoothEdges, RadiusMaskIncludesItsEdge) {
  const matrix<double> q(1, 2, {0, 0}), k(4, 2, {3, 4, 0, 5, 6, 0, 1, 1}), v(4, 1, {1, 2, 4, 8});
  matrix<double> out(1, 1), ref(1, 1);
  smooth_forward<double>(out.view(), {}, q.cview(), k.cview(), v.cview(), kernel_boxcar{100},
                         mask::radius(5));
  reference::smooth_forward<double>(ref.view(), {}, q.cview(), k.cview(), v.cview(),
                                    kernel_boxcar{100}, mask::radius(5));
  EXPECT_DOUBLE_EQ(out(0, 0), (1 + 2 + 8) / 3.0);
  EXPECT_DOUBLE_EQ(ref(0, 0), (1 + 2 + 8) / 3.0);
}

// Regression's own routes for compact kernels (sorted windows in 1-D, a k-d tree over each
// support in 2-D) include the edge as well: NW boxcar at x0 = the mean of every y within h.
TEST(SmoothEdges, RegressionRoutesIncludeTheSupportEdge) {
  for (index d : {1, 2}) {
    SCOPED_TRACE(d);
    const index n = 40;
    matrix<double> x(n, d);
    std::vector<double> y(static_cast<std::size_t>(n));
    for (index i = 0; i < n; ++i) {
      for (index c = 0; c < d; ++c) x(i, c) = double((i * (c + 3)) % 17);
      y[static_cast<std::size_t>(i)] = std::sin(double(i));
    }
    regression_spec spec;
    spec.kernel = kernel_boxcar{};
    spec.bandwidth = {2.0};
    spec.exact = true;
    const matrix<double> xq = x;
    const auto e = regression_evaluate(spec, x.cview(), y, xq.cview(), false);
    for (index i = 0; i < n; ++i) {
      double sum = 0, count = 0;
      index at_edge = 0;
      for (index j = 0; j < n; ++j) {
        double s = 0;
        for (index c = 0; c < d; ++c) s += (x(i, c) - x(j, c)) * (x(i, c) - x(j, c));
        if (s <= 4) sum += y[static_cast<std::size_t>(j)], count += 1;
        at_edge += s == 4;
      }
      EXPECT_NEAR(e.fit[static_cast<std::size_t>(i)], sum / count, 1e-12)
          << i << " (" << at_edge << " points at distance h)";
    }
  }
}

// Top-k ranks by weight; equal weights go to the smaller distance, then the smaller key index.
template <class T>
void expect_topk_ties() {
  // exp_dot with q = (1, 0): keys 0 and 2 tie in weight with key 1 (q·k = 2) but sit farther;
  // keys 1, 3 and 4 are the same point (duplicates): the order among them is the key index.
  const matrix<T> q(1, 2, {1, 0}), k(6, 2, {2, 5, 2, 0, 2, -3, 2, 0, 2, 0, -1, 0});
  const matrix<T> v(6, 1, {1, 2, 4, 8, 16, 32});
  const kernel_exp_dot dot{1.0};
  for (index kk = 1; kk <= 5; ++kk) {
    SCOPED_TRACE(kk);
    // Ranked: 1, 3, 4 (duplicates, by index), then 2 (distance √10) before 0 (distance √26).
    const std::vector<index> order = {1, 3, 4, 2, 0};
    double expect = 0;
    for (index r = 0; r < kk; ++r) expect += double(v(order[static_cast<std::size_t>(r)], 0));
    expect /= double(kk);  // all kept keys have the same weight
    matrix<T> out(1, 1), ref(1, 1), w(1, 6);
    smooth_forward<T>(out.view(), {}, q.cview(), k.cview(), v.cview(), dot, mask::none().topk(kk));
    reference::smooth_forward<T>(ref.view(), {}, q.cview(), k.cview(), v.cview(), dot,
                                 mask::none().topk(kk));
    EXPECT_NEAR(double(out(0, 0)), expect, 1e-6 * expect);
    EXPECT_NEAR(double(ref(0, 0)), expect, 1e-6 * expect);
    smooth_weights<T>(w.view(), {}, q.cview(), k.cview(), dot, mask::none().topk(kk));
    for (index j = 0; j < 6; ++j) {
      const bool kept = std::find(order.begin(), order.begin() + kk, j) != order.begin() + kk;
      EXPECT_EQ(w(0, j) > T(0), kept) << "key " << j;
    }
  }
  // By distance (knn): duplicates of the nearest point, lowest indices first.
  const matrix<T> qn(1, 2, {2, 0});
  matrix<T> out(1, 1);
  smooth_forward<T>(out.view(), {}, qn.cview(), k.cview(), v.cview(), kernel_gaussian{1.0},
                    mask::none().topk(2, topk_rank::distance));
  EXPECT_NEAR(double(out(0, 0)), (2 + 8) / 2.0, 1e-5);
}

TEST(SmoothEdges, TopkTiesWithDuplicatedKeysDouble) { expect_topk_ties<double>(); }
TEST(SmoothEdges, TopkTiesWithDuplicatedKeysFloat) { expect_topk_ties<float>(); }

// Many duplicated keys across tiles: ties at the k-th place resolved by index on every row, the
// fast path equal to the reference.
TEST(SmoothEdges, TopkTiesAcrossTilesMatchReference) {
  const index n = 23, m = 517;
  matrix<double> q = test::random_matrix<double>(n, 3, 7), k(m, 3), v(m, 2);
  const matrix<double> base = test::random_matrix<double>(5, 3, 8);
  for (index j = 0; j < m; ++j) {
    for (index c = 0; c < 3; ++c) k(j, c) = base(j % 5, c);  // 5 distinct points, ~103 copies
    v(j, 0) = double(j), v(j, 1) = std::cos(double(j));
  }
  for (const mask& msk : {mask::none().topk(7), mask::none().topk(130, topk_rank::distance)}) {
    SCOPED_TRACE(msk.describe());
    matrix<double> out(n, 2), ref(n, 2);
    smooth_forward<double>(out.view(), {}, q.cview(), k.cview(), v.cview(), kernel_gaussian{0.8},
                           msk);
    reference::smooth_forward<double>(ref.view(), {}, q.cview(), k.cview(), v.cview(),
                                      kernel_gaussian{0.8}, msk);
    EXPECT_TRUE(test::all_close(out, ref, 1e-12, 1e-12));
    // topk(7): the 7 lowest-index copies of the nearest point, j = j0, j0 + 5, …, j0 + 30.
    if (msk.topk_k() == 7)
      for (index i = 0; i < n; ++i) {
        index j0 = 0;
        double best = INFINITY;
        for (index b = 0; b < 5; ++b) {
          double s = 0;
          for (index c = 0; c < 3; ++c) s += (q(i, c) - base(b, c)) * (q(i, c) - base(b, c));
          if (s < best) best = s, j0 = b;
        }
        EXPECT_NEAR(out(i, 0), double(j0) + 15, 1e-9) << i;  // mean of j0 + 5r, r = 0..6
      }
  }
}

// float32 holds h² and 1/h² only for h in ~(5.4e-20, 1.8e19). A distance kernel of one length
// (gaussian, laplacian, cauchy, rational quadratic, the compact ones) beyond that is computed by
// dividing q and k by h first: the same as h = 1 on q/h, k/h. A kernel that cannot be rescaled
// (a product) is refused with a message asking for float64; float64 computes it.
TEST(SmoothEdges, Float32BeyondItsBandwidthRangeRescalesOrRefuses) {
  const matrix<double> q = test::random_matrix<double>(3, 2, 1),
                       k = test::random_matrix<double>(4, 2, 2),
                       v = test::random_matrix<double>(4, 1, 3);
  matrix<double> unit(3, 1);
  smooth_forward<double>(unit.view(), {}, q.cview(), k.cview(), v.cview(), kernel_gaussian{1.0},
                         mask::none());
  for (double h : {1e-21, 1e-20, 1e20, 1e25}) {
    SCOPED_TRACE(h);
    matrix<double> qs = q, ks = k;  // data in units of h, so the result is not trivial
    for (double& x : qs.values()) x *= h;
    for (double& x : ks.values()) x *= h;
    const matrix<float> qf = cast<float>(qs), kf = cast<float>(ks), vf = cast<float>(v);
    EXPECT_THROW(kernel_resolve(kernel_gaussian{h}, 2, true), std::invalid_argument);
    matrix<float> outf(3, 1);
    ASSERT_NO_THROW(smooth_forward<float>(outf.view(), {}, qf.cview(), kf.cview(), vf.cview(),
                                          kernel_gaussian{h}, mask::none()));
    EXPECT_TRUE(test::all_close(outf, unit, 1e-5, 1e-6)) << "float32, rescaled";
    matrix<double> out(3, 1);
    smooth_forward<double>(out.view(), {}, qs.cview(), ks.cview(), v.cview(), kernel_gaussian{h},
                           mask::none());
    EXPECT_TRUE(test::all_close(out, unit, 1e-12, 1e-14)) << "float64";
    // A product kernel is not rescaled: float32 refuses, naming float64; float64 computes.
    const kernel_spec prod = kernel_spec::product(kernel_gaussian{h}, kernel_gaussian{h}, 1);
    try {
      smooth_forward<float>(outf.view(), {}, qf.cview(), kf.cview(), vf.cview(), prod,
                            mask::none());
      ADD_FAILURE() << "float32 accepted a product kernel with h = " << h;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(smooth_forward<double>(out.view(), {}, qs.cview(), ks.cview(), v.cview(), prod,
                                           mask::none()));
  }
  for (double h : {1e-19, 1e18}) {  // inside the range: float32 takes the kernel as it is
    EXPECT_NO_THROW(kernel_resolve(kernel_gaussian{h}, 2, true)) << h;
  }
}

// Laplacian at q = k: d log K / dq = −(q − k)/(h‖q − k‖) is 0/0; the kink's subgradient 0 is
// taken, so dq is finite and is the other keys' contribution alone:
//   dq = Σ_{j : k_j ≠ q} p_j g_j · (−(q − k_j)/(h‖q − k_j‖)),  g_j = dout·(v_j − out).
TEST(SmoothEdges, LaplacianGradientAtCoincidentKeyIsTheSubgradientZero) {
  const double h = 0.7;
  const matrix<double> q(1, 2, {0.3, -0.2}), k(3, 2, {0.3, -0.2, 1.0, 0.5, -0.4, 0.1});
  const matrix<double> v(3, 1, {1.0, -2.0, 0.5}), dout(1, 1, {1.3});
  matrix<double> out(1, 1), dq(1, 2), dk(3, 2), dv(3, 1);
  std::vector<double> lse(1);
  smooth_forward<double>(out.view(), lse, q.cview(), k.cview(), v.cview(), kernel_laplacian{h},
                         mask::none());
  smooth_grads<double> g(dq.view(), dk.view(), dv.view());
  smooth_backward<double>(g, dout.cview(), out.cview(), lse, q.cview(), k.cview(), v.cview(),
                          kernel_laplacian{h}, mask::none());
  std::vector<double> p(3);
  double sum = 0;
  for (index j = 0; j < 3; ++j) {
    const double r = std::hypot(q(0, 0) - k(j, 0), q(0, 1) - k(j, 1));
    p[static_cast<std::size_t>(j)] = std::exp(-r / h);
    sum += p[static_cast<std::size_t>(j)];
  }
  double expect[2] = {0, 0};
  for (index j = 1; j < 3; ++j) {  // key 0 coincides with q: contributes 0
    const double r = std::hypot(q(0, 0) - k(j, 0), q(0, 1) - k(j, 1));
    const double gj = p[static_cast<std::size_t>(j)] / sum * dout(0, 0) * (v(j, 0) - out(0, 0));
    for (index c = 0; c < 2; ++c) expect[c] += gj * (-(q(0, c) - k(j, c)) / (h * r));
  }
  for (index c = 0; c < 2; ++c) {
    ASSERT_TRUE(std::isfinite(dq(0, c)));
    EXPECT_NEAR(dq(0, c), expect[c], 1e-12) << c;
    EXPECT_TRUE(std::isfinite(dk(0, c)));
  }
  // The reference takes the same subgradient.
  matrix<double> rdq(1, 2), rdk(3, 2), rdv(3, 1);
  smooth_grads<double> rg(rdq.view(), rdk.view(), rdv.view());
  reference::smooth_backward<double>(rg, dout.cview(), out.cview(), lse, q.cview(), k.cview(),
                                     v.cview(), kernel_laplacian{h}, mask::none());
  EXPECT_TRUE(test::all_close(rdq, dq, 1e-12, 1e-15));
  EXPECT_TRUE(test::all_close(rdk, dk, 1e-12, 1e-15));
}

}  // namespace
}  // namespace kf
