// The seeds' demonstrations (explore/demos.hpp) against independent computations written here:
// plain sums in double (log-sum-exp where a bandwidth is tiny) for every curve, weight and
// criterion, closed forms for the kernel shapes, a hand-written LayerNorm for seed 003's identity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "kernelformer/explore/demos.hpp"

namespace kf::demo {
namespace {

constexpr double kPi = std::numbers::pi;

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// Gaussian NW weights of one query over keys x, bandwidth h, by log-sum-exp (h may be 1e-5).
std::vector<double> gaussian_weights(double q, const std::vector<double>& x, double h) {
  std::vector<double> lw(x.size()), w(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) lw[j] = -(q - x[j]) * (q - x[j]) / (2 * h * h);
  const double mx = *std::max_element(lw.begin(), lw.end());
  double s = 0;
  for (std::size_t j = 0; j < x.size(); ++j) s += w[j] = std::exp(lw[j] - mx);
  for (auto& v : w) v /= s;
  return w;
}

std::vector<double> brute_nw(const std::vector<double>& x, const std::vector<double>& y,
                             const std::vector<double>& q, double h) {
  std::vector<double> out;
  for (double x0 : q) {
    const auto w = gaussian_weights(x0, x, h);
    double s = 0;
    for (std::size_t j = 0; j < x.size(); ++j) s += w[j] * y[j];
    out.push_back(s);
  }
  return out;
}

// Leave-one-out CV of Gaussian NW (mean squared residual with point i left out) and tr(L).
void brute_loo(const std::vector<double>& x, const std::vector<double>& y, double h, double& cv,
               double& df) {
  cv = df = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    double num = 0, den = 0, self = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
      const double k = std::exp(-(x[i] - x[j]) * (x[i] - x[j]) / (2 * h * h));
      if (j == i)
        self = k;
      else
        num += k * y[j], den += k;
    }
    cv += (y[i] - num / den) * (y[i] - num / den) / double(x.size());
    df += self / (den + self);
  }
}

// The kernel-weighted least-squares line at x0, evaluated at x0.
double brute_local_linear(const std::vector<double>& x, const std::vector<double>& y, double x0,
                          double h) {
  double s0 = 0, s1 = 0, s2 = 0, t0 = 0, t1 = 0;
  for (std::size_t j = 0; j < x.size(); ++j) {
    const double d = x[j] - x0, w = std::exp(-d * d / (2 * h * h));
    s0 += w, s1 += w * d, s2 += w * d * d, t0 += w * y[j], t1 += w * d * y[j];
  }
  return (s2 * t0 - s1 * t1) / (s0 * s2 - s1 * s1);
}

TEST(Demos, Seed000FitsCriteriaAndLocalLinearMatchPlainSums) {
  const auto r = seed000();
  ASSERT_EQ(r.x.size(), 120u);
  ASSERT_EQ(r.grid.size(), 400u);
  EXPECT_TRUE(std::is_sorted(r.x.begin(), r.x.end()));
  ASSERT_EQ(r.fits.size(), 3u);
  EXPECT_EQ(r.fits[0].bandwidth, 0.08);
  EXPECT_EQ(r.fits[2].bandwidth, 2.0);
  for (const auto& f : r.fits) {
    EXPECT_LT(max_abs_diff(f.fit, brute_nw(r.x, r.y, r.grid, f.bandwidth)), 1e-12) << f.bandwidth;
    double s = 0;
    for (std::size_t i = 0; i < r.grid.size(); ++i)
      s += (f.fit[i] - std::sin(r.grid[i])) * (f.fit[i] - std::sin(r.grid[i]));
    EXPECT_NEAR(f.mse, s / 400, 1e-14);
    double cv, df;
    brute_loo(r.x, r.y, f.bandwidth, cv, df);
    EXPECT_NEAR(f.loo_cv, cv, 1e-10 * cv) << f.bandwidth;
    EXPECT_NEAR(f.df, df, 1e-9 * df) << f.bandwidth;
  }
  // LOO-CV's choice is a minimum of the brute-force criterion (within 1% of h either way) and
  // beats both extremes against the truth.
  const double h = r.fits[r.kChosen].bandwidth;
  double at, below, above, df;
  brute_loo(r.x, r.y, h, at, df);
  brute_loo(r.x, r.y, h * 0.99, below, df);
  brute_loo(r.x, r.y, h * 1.01, above, df);
  EXPECT_LE(at, below);
  EXPECT_LE(at, above);
  EXPECT_LT(r.fits[1].mse, r.fits[0].mse);
  EXPECT_LT(r.fits[1].mse, r.fits[2].mse);
  // The nearly linear case: same noise draws, f = 0.3x + 1; NW and local linear by plain sums.
  for (std::size_t i = 0; i < r.x.size(); ++i)
    EXPECT_NEAR(r.y_linear[i] - (0.3 * r.x[i] + 1), r.y[i] - std::sin(r.x[i]), 1e-12);
  EXPECT_LT(max_abs_diff(r.nw_linear, brute_nw(r.x, r.y_linear, r.grid, 1.5)), 1e-12);
  double ll_gap = 0, nw_in = 0;
  for (std::size_t i = 0; i < r.grid.size(); ++i)
    ll_gap = std::max(
        ll_gap, std::abs(r.ll_linear[i] - brute_local_linear(r.x, r.y_linear, r.grid[i], 1.5)));
  EXPECT_LT(ll_gap, 1e-9);
  for (std::size_t i = r.kInteriorFrom; i < r.kInteriorTo; ++i)
    nw_in += std::pow(r.nw_linear[i] - (0.3 * r.grid[i] + 1), 2) / 160;
  EXPECT_NEAR(r.mse_nw_interior, nw_in, 1e-14);
  // What the figure claims: NW is biased at the edges, local linear is not.
  EXPECT_LT(r.mse_nw_interior, r.mse_nw);
  EXPECT_LT(r.mse_ll, r.mse_nw);
}

TEST(Demos, Seed001NwKnnAndAttentionMatchBruteForce) {
  const auto r = seed001();
  ASSERT_EQ(r.data.x.size(), 40u);
  EXPECT_EQ(r.data.x[0], seed001_x[0]);
  EXPECT_EQ(r.data.y[39], seed001_y[39]);
  EXPECT_DOUBLE_EQ(r.bandwidth, 1 / std::sqrt(2 * 5.0));  // scikit-learn's γ = 5
  ASSERT_EQ(r.query.size(), 500u);
  EXPECT_EQ(r.query.front(), 0.0);
  EXPECT_EQ(r.query.back(), 6.0);
  const auto nw = brute_nw(r.data.x, r.data.y, r.query, r.bandwidth);
  std::vector<double> knn;
  for (double q : r.query) {  // the mean of the 10 nearest values
    std::vector<std::pair<double, double>> by_distance;
    for (std::size_t j = 0; j < 40; ++j)
      by_distance.emplace_back(std::abs(q - r.data.x[j]), r.data.y[j]);
    std::sort(by_distance.begin(), by_distance.end());
    double s = 0;
    for (int k = 0; k < 10; ++k) s += by_distance[std::size_t(k)].second / 10;
    knn.push_back(s);
  }
  EXPECT_LT(max_abs_diff(r.nw, nw), 1e-12);
  EXPECT_LT(max_abs_diff(r.knn, knn), 1e-12);
  EXPECT_LT(max_abs_diff(r.attention, nw), 1e-12);  // attention on lifted features IS NW
  EXPECT_LT(r.max_nw_attention, 1e-12);
  double mse_nw = 0, mse_knn = 0;
  for (std::size_t i = 0; i < 500; ++i) {
    const double f = 2 * std::sin(r.query[i]);
    EXPECT_EQ(r.truth[i], f);
    mse_nw += (nw[i] - f) * (nw[i] - f) / 500, mse_knn += (knn[i] - f) * (knn[i] - f) / 500;
  }
  EXPECT_NEAR(r.mse_nw, mse_nw, 1e-12);
  EXPECT_NEAR(r.mse_knn, mse_knn, 1e-12);
  EXPECT_LT(r.mse_nw, r.mse_knn);  // seed 001's point: the smooth kernel wins
}

TEST(Demos, Seed004KernelShapesAreNormalizedClosedForms) {
  const auto r = seed004();
  ASSERT_EQ(r.u.size(), 601u);
  ASSERT_EQ(r.kernels.size(), 6u);
  auto closed = [](const std::string& k, double u) {
    const double a = std::abs(u);
    if (k == "gaussian") return std::exp(-u * u / 2);
    if (k == "boxcar") return a <= 1 ? 1.0 : 0.0;
    if (k == "epanechnikov") return std::max(1 - u * u, 0.0);
    if (k == "laplacian") return std::exp(-a);
    if (k == "tricube") return a <= 1 ? std::pow(1 - a * a * a, 3) : 0.0;
    return 1 / (1 + u * u);  // cauchy
  };
  for (const auto& k : r.kernels) {
    ASSERT_EQ(k.values.size(), r.u.size()) << k.name;
    EXPECT_EQ(k.values[300], 1.0) << k.name;  // u = 0: scaled to K(0) = 1, the maximum
    EXPECT_EQ(*std::max_element(k.values.begin(), k.values.end()), 1.0) << k.name;
    for (std::size_t i = 0; i < r.u.size(); ++i)
      ASSERT_NEAR(k.values[i], closed(k.name, r.u[i]), 1e-12) << k.name << " u = " << r.u[i];
  }
}

TEST(Demos, Seed004PoolingGoesFromLookupToAverage) {
  const auto r = seed004();
  ASSERT_EQ(r.keys.x.size(), 40u);
  EXPECT_TRUE(std::is_sorted(r.keys.x.begin(), r.keys.x.end()));
  EXPECT_LT(max_abs_diff(r.lookup, brute_nw(r.keys.x, r.keys.y, r.query, r.lookup_h)), 1e-9);
  EXPECT_LT(max_abs_diff(r.smoothing, brute_nw(r.keys.x, r.keys.y, r.query, r.smoothing_h)), 1e-12);
  EXPECT_LT(max_abs_diff(r.average, brute_nw(r.keys.x, r.keys.y, r.query, r.average_h)), 1e-12);
  // The weights a query equal to key 10 gives: one-hot, then (nearly) 1/40 each; they sum to 1.
  const double xq = r.keys.x[std::size_t(r.kKey)];
  const auto w1 = gaussian_weights(xq, r.keys.x, r.lookup_h),
             w2 = gaussian_weights(xq, r.keys.x, r.average_h);
  EXPECT_NEAR(r.lookup_weight, w1[std::size_t(r.kKey)], 1e-14);
  EXPECT_NEAR(r.lookup_weight, 1.0, 1e-14);
  EXPECT_NEAR(r.average_weight, w2[0], 1e-15);
  EXPECT_NEAR(r.average_weight, 1.0 / 40, 1e-6);
  double mean = 0;
  for (double v : r.keys.y) mean += v / 40;
  EXPECT_NEAR(r.mean, mean, 1e-14);
  for (double v : r.average) EXPECT_NEAR(v, mean, 1e-4);
}

TEST(Demos, Seed002WeightsOutputsAndTheMimicHead) {
  const auto r = seed002();
  ASSERT_EQ(r.x.size(), 50u);
  for (std::size_t i = 0; i < 50; ++i) {
    EXPECT_NEAR(r.x[i], double(i) / 49, 1e-15);
    EXPECT_NEAR(r.y[i], std::sin(2 * kPi * r.x[i]) + 0.5 * std::sin(6 * kPi * r.x[i]), 1e-12);
    const auto w = gaussian_weights(r.x[i], r.x, 0.05);
    for (std::size_t j = 0; j < 50; ++j)
      ASSERT_NEAR(r.mimic.target(index(i), index(j)), w[j], 1e-14);
  }
  // Outputs are the weight matrices times y; the weight RMSE is over all 50 × 50 entries.
  auto apply = [&](const matrix<double>& w, std::size_t i) {
    double s = 0;
    for (std::size_t j = 0; j < 50; ++j) s += w(index(i), index(j)) * r.y[j];
    return s;
  };
  double sq_before = 0, sq_after = 0;
  for (std::size_t i = 0; i < 50; ++i) {
    EXPECT_NEAR(r.smoother[i], apply(r.mimic.target, i), 1e-14);
    EXPECT_NEAR(r.random[i], apply(r.mimic.before, i), 1e-14);
    EXPECT_NEAR(r.trained[i], apply(r.mimic.after, i), 1e-14);
    double row = 0;
    for (std::size_t j = 0; j < 50; ++j) {
      const double t = r.mimic.target(index(i), index(j));
      sq_before += std::pow(r.mimic.before(index(i), index(j)) - t, 2) / 2500;
      sq_after += std::pow(r.mimic.after(index(i), index(j)) - t, 2) / 2500;
      row += r.mimic.after(index(i), index(j));
    }
    EXPECT_NEAR(row, 1.0, 1e-12);  // attention weights are normalized
  }
  EXPECT_NEAR(r.mimic.rmse_before, std::sqrt(sq_before), 1e-14);
  EXPECT_NEAR(r.mimic.rmse_after, std::sqrt(sq_after), 1e-14);
  EXPECT_EQ(r.mimic.loss.size(), 1500u);
  EXPECT_LT(r.mimic.rmse_after, 0.01);
  EXPECT_LT(r.mimic.rmse_after, r.mimic.rmse_before / 10);
  // Read back as kernels: the smoother and the trained head are Gaussians of h = 0.05 at offset 0.
  ASSERT_EQ(r.heads.size(), 3u);
  for (std::size_t k : {0u, 2u}) {
    EXPECT_EQ(r.heads[k].kernel, "gaussian") << r.heads[k].head;
    EXPECT_NEAR(r.heads[k].bandwidth, 0.05, 0.0025) << r.heads[k].head;
    EXPECT_NEAR(r.heads[k].offset, 0.0, 1e-3) << r.heads[k].head;
    EXPECT_GT(r.heads[k].r2, 0.999) << r.heads[k].head;
    EXPECT_EQ(r.heads[k].gaussian_r2, r.heads[k].r2);
  }
  EXPECT_EQ(r.heads[2].head, "seed 002: attention, trained to mimic");
}

// LayerNorm without affine, by hand: (x − mean) / √(biased var + ε), row by row.
matrix<double> hand_layer_norm(const matrix<double>& x, double eps) {
  matrix<double> q(x.rows(), x.cols());
  for (index i = 0; i < x.rows(); ++i) {
    double m = 0, v = 0;
    for (index j = 0; j < x.cols(); ++j) m += x(i, j) / double(x.cols());
    for (index j = 0; j < x.cols(); ++j) v += (x(i, j) - m) * (x(i, j) - m) / double(x.cols());
    for (index j = 0; j < x.cols(); ++j) q(i, j) = (x(i, j) - m) / std::sqrt(v + eps);
  }
  return q;
}

// Row i's normalized weights over the rows of q from the log-weights lw(i, j) (log-sum-exp).
std::vector<double> softmax_row(const matrix<double>& q, index i, bool rbf) {
  const index n = q.rows(), d = q.cols();
  const double sd = std::sqrt(double(d));
  std::vector<double> lw(static_cast<std::size_t>(n));
  for (index j = 0; j < n; ++j) {
    double dot = 0, sq = 0;
    for (index t = 0; t < d; ++t)
      dot += q(i, t) * q(j, t), sq += (q(i, t) - q(j, t)) * (q(i, t) - q(j, t));
    // exp(q·k/√d), or the Gaussian with h = d^¼: exp(−|q − k|² / (2 h²)) = exp(−|q − k|²/(2√d))
    lw[std::size_t(j)] = rbf ? -sq / (2 * sd) : dot / sd;
  }
  const double mx = *std::max_element(lw.begin(), lw.end());
  double s = 0;
  for (auto& v : lw) s += v = std::exp(v - mx);
  for (auto& v : lw) v /= s;
  return lw;
}

// max |out_attention − out_rbf| over the outputs (weights times v), and max |weight difference|.
void brute_gap(const matrix<double>& q, const matrix<double>& v, double& out_gap,
               double& weight_gap) {
  out_gap = weight_gap = 0;
  for (index i = 0; i < q.rows(); ++i) {
    const auto a = softmax_row(q, i, false), b = softmax_row(q, i, true);
    weight_gap = std::max(weight_gap, max_abs_diff(a, b));
    for (index c = 0; c < v.cols(); ++c) {
      double oa = 0, ob = 0;
      for (index j = 0; j < q.rows(); ++j)
        oa += a[std::size_t(j)] * v(j, c), ob += b[std::size_t(j)] * v(j, c);
      out_gap = std::max(out_gap, std::abs(oa - ob));
    }
  }
}

TEST(Demos, Seed003AttentionAfterLayerNormIsRbfSmoothing) {
  const auto r = seed003();
  ASSERT_EQ(r.rows.size(), 3u);
  for (const auto& row : r.rows) {
    const auto c = seed003_case(row.d);
    ASSERT_EQ(c.x.rows(), 64);
    ASSERT_EQ(c.x.cols(), row.d);
    EXPECT_DOUBLE_EQ(row.length_scale, std::pow(double(row.d), 0.25));
    // ε = 0: the attention weights ARE the RBF kernel's weights, to rounding in double.
    double out0, w0;
    brute_gap(hand_layer_norm(c.x, 0), c.v, out0, w0);
    EXPECT_LT(w0, 1e-12) << row.d;
    EXPECT_LT(out0, 1e-12) << row.d;
    EXPECT_LT(row.max_diff_exact, 1e-12) << row.d;
    // ε = 1e-5: a small gap, the same as the plain sums'.
    const auto q = hand_layer_norm(c.x, 1e-5);
    double out, w;
    brute_gap(q, c.v, out, w);
    EXPECT_NEAR(row.max_diff, out, 1e-12) << row.d;
    EXPECT_GT(row.max_diff, 100 * row.max_diff_exact) << row.d;  // ε's gap is above rounding
    EXPECT_LT(row.max_diff, 1e-4) << row.d;
    double max_sum = 0, max_gap = 0;
    for (index i = 0; i < 64; ++i) {
      double s = 0, n2 = 0;
      for (index j = 0; j < row.d; ++j) s += q(i, j), n2 += q(i, j) * q(i, j);
      max_sum = std::max(max_sum, std::abs(s));
      max_gap = std::max(max_gap, std::abs(std::sqrt(n2) - std::sqrt(double(row.d))));
    }
    EXPECT_NEAR(row.max_abs_sum, max_sum, 1e-12) << row.d;
    EXPECT_NEAR(row.max_norm_gap, max_gap, 1e-12) << row.d;
  }
  // The scatter (d = 64): score − log-weight = (|q|² + |k|²) / (2√d) ≈ √d = 8 for every pair.
  ASSERT_EQ(r.score.size(), 16u * 64u);
  ASSERT_EQ(r.gaussian_log_weight.size(), r.score.size());
  for (std::size_t i = 0; i < r.score.size(); ++i)
    ASSERT_NEAR(r.score[i] - r.gaussian_log_weight[i], 8.0, 1e-4) << i;
}

TEST(Demos, Seed001SortedIsTheExplorerPresetOrder) {
  const auto s = seed001_sorted();
  ASSERT_EQ(s.x.size(), 40u);
  EXPECT_TRUE(std::is_sorted(s.x.begin(), s.x.end()));
  for (std::size_t i = 0; i < 40; ++i) {
    const auto it = std::find(seed001_x.begin(), seed001_x.end(), s.x[i]);
    ASSERT_NE(it, seed001_x.end());
    EXPECT_EQ(s.y[i], seed001_y[std::size_t(it - seed001_x.begin())]);
  }
}

}  // namespace
}  // namespace kf::demo
