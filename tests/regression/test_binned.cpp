// The binned 1-D fast path against the exact smoother (the primitive): predictions within
// 1e-6 of the range of y at the default resolution, and the same criteria and bandwidth.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "kernelformer/regression/binned.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

struct data {
  matrix<double> x;
  std::vector<double> y;
  double yrange = 0;
};

data make(index n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 10);
  std::normal_distribution<double> e(0, 0.3);
  data d{matrix<double>(n, 1), std::vector<double>(static_cast<std::size_t>(n)), 0};
  double lo = 1e300, hi = -1e300;
  for (index i = 0; i < n; ++i) {
    d.x(i, 0) = u(rng);
    const double y = std::sin(d.x(i, 0)) + e(rng);
    d.y[static_cast<std::size_t>(i)] = y;
    lo = std::min(lo, y), hi = std::max(hi, y);
  }
  d.yrange = hi - lo;
  return d;
}

TEST(Binned, PredictionsMatchExactWithinOneMillionthOfTheRange) {
  const data d = make(3000, 1);
  const auto q = test::random_matrix<double>(300, 1, 2, -0.5, 10.5);
  for (const any_kernel& k : {any_kernel(kernel_gaussian{})})
    for (auto m : {regression_method::nw, regression_method::local_linear})
      for (double h : {0.05, 0.4}) {
        SCOPED_TRACE(std::string(kernel_name(k)) + (m == regression_method::nw ? " nw" : " ll") +
                     " h=" + std::to_string(h));
        regression_spec s;
        s.method = m;
        s.kernel = k;
        s.bandwidth = {h};
        s.binned_min_n = 1000;
        regression_spec exact = s;
        exact.exact = true;
        const auto fast = regression_evaluate(s, d.x.cview(), d.y, q.cview(), false);
        const auto ref = regression_evaluate(exact, d.x.cview(), d.y, q.cview(), false);
        const auto fast_t = regression_evaluate(s, d.x.cview(), d.y, d.x.cview(), true);
        const auto ref_t = regression_evaluate(exact, d.x.cview(), d.y, d.x.cview(), true);
        double worst = 0, worst_l2 = 0, worst_self = 0;
        for (std::size_t i = 0; i < fast.fit.size(); ++i) {
          ASSERT_EQ(fast.defined[i], ref.defined[i]) << i;
          if (!ref.defined[i]) continue;
          worst = std::max(worst, std::abs(fast.fit[i] - ref.fit[i]));
          worst_l2 = std::max(worst_l2, std::abs(fast.sum_l2[i] - ref.sum_l2[i]) / ref.sum_l2[i]);
        }
        for (std::size_t i = 0; i < fast_t.fit.size(); ++i) {
          worst = std::max(worst, std::abs(fast_t.fit[i] - ref_t.fit[i]));
          worst_self = std::max(worst_self, std::abs(fast_t.self_weight[i] - ref_t.self_weight[i]) /
                                                ref_t.self_weight[i]);
        }
        EXPECT_LT(worst, 1e-6 * d.yrange);
        EXPECT_LT(worst_l2, 1e-4);
        EXPECT_LT(worst_self, 1e-4);
        const auto cf = regression_criteria(s, d.x.cview(), d.y);
        const auto cr = regression_criteria(exact, d.x.cview(), d.y);
        EXPECT_NEAR(cf.loo_cv, cr.loo_cv, 1e-5 * cr.loo_cv);
        EXPECT_NEAR(cf.df, cr.df, 1e-4 * cr.df);
        EXPECT_NEAR(cf.rss, cr.rss, 1e-5 * cr.rss);
        EXPECT_NEAR(cf.gcv, cr.gcv, 1e-4 * cr.gcv);
        EXPECT_NEAR(cf.aicc, cr.aicc, 1e-4 * (1 + std::abs(cr.aicc)));
        // GCV and AICc as their formulas give them from rss and df (written out here).
        const double n = double(d.y.size());
        EXPECT_NEAR(cf.gcv, (cf.rss / n) / ((1 - cf.df / n) * (1 - cf.df / n)), 1e-12 * cf.gcv);
        EXPECT_NEAR(cf.aicc, std::log(cf.rss / n) + 1 + 2 * (cf.df + 1) / (n - cf.df - 2),
                    1e-12 * (1 + std::abs(cf.aicc)));
      }
}

// Every distance kernel but the boxcar takes the binned route; kinks (laplacian at 0, compact
// kernels at their edge) make the error first-order on the points near them: within 1e-4 of the
// range of y at the default resolution, the criteria within 1e-3. The boxcar's jump would make
// it 1e-3: it stays on the exact route.
TEST(Binned, EveryKernelMatchesExactWithinTenThousandthOfTheRange) {
  const data d = make(2001, 4);
  const auto q = test::random_matrix<double>(200, 1, 5, 0, 10);
  for (const any_kernel& k :
       {any_kernel(kernel_laplacian{}), any_kernel(kernel_cauchy{}),
        any_kernel(kernel_rational_quadratic{1.0, 2.0}), any_kernel(kernel_epanechnikov{}),
        any_kernel(kernel_biweight{}), any_kernel(kernel_triweight{}), any_kernel(kernel_tricube{}),
        any_kernel(kernel_cosine{})})
    for (auto m : {regression_method::nw, regression_method::local_linear}) {
      SCOPED_TRACE(std::string(kernel_name(k)) + (m == regression_method::nw ? " nw" : " ll"));
      regression_spec s;
      s.method = m;
      s.kernel = k;
      s.bandwidth = {0.3};
      s.binned_min_n = 1000;
      regression_spec exact = s;
      exact.exact = true;
      const auto fast = regression_evaluate(s, d.x.cview(), d.y, q.cview(), false);
      const auto ref = regression_evaluate(exact, d.x.cview(), d.y, q.cview(), false);
      double worst = 0;
      for (std::size_t i = 0; i < fast.fit.size(); ++i) {
        ASSERT_EQ(fast.defined[i], ref.defined[i]) << i;
        if (ref.defined[i]) worst = std::max(worst, std::abs(fast.fit[i] - ref.fit[i]));
      }
      EXPECT_LT(worst, 1e-4 * d.yrange);
      const auto cf = regression_criteria(s, d.x.cview(), d.y);
      const auto cr = regression_criteria(exact, d.x.cview(), d.y);
      EXPECT_NEAR(cf.loo_cv, cr.loo_cv, 1e-3 * cr.loo_cv);
      EXPECT_NEAR(cf.df, cr.df, 1e-3 * cr.df);
    }
}

TEST(Binned, TheBoxcarStaysExact) {
  EXPECT_FALSE(binned_supports(kernel_boxcar{}));
  EXPECT_TRUE(binned_supports(kernel_tricube{}));
  EXPECT_FALSE(binned_supports(kernel_exp_dot{}));
}

TEST(Binned, SearchChoosesTheSameBandwidth) {
  const data d = make(1000, 3);
  for (auto m : {regression_method::nw, regression_method::local_linear}) {
    regression_spec s;
    s.method = m;
    s.bandwidth = {1.0};
    s.binned_min_n = 500;
    regression_spec exact = s;
    exact.exact = true;
    const auto fast = regression_fit_data(s, d.x.cview(), d.y, bandwidth_criterion::loo_cv);
    const auto ref = regression_fit_data(exact, d.x.cview(), d.y, bandwidth_criterion::loo_cv);
    EXPECT_NEAR(fast.spec.bandwidth[0], ref.spec.bandwidth[0], 0.01 * ref.spec.bandwidth[0]);
    EXPECT_NEAR(fast.criterion_value, ref.criterion_value, 1e-5 * ref.criterion_value);
  }
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

// Compact kernels on large 1-D data go through sorted keys; unsorted input gives the same fit.
TEST(SortedWindow, CompactKernelsSortedEqualsUnsorted) {
  const data d = make(5000, 7);
  const auto q = test::random_matrix<double>(100, 1, 8, 0, 10);
  for (auto m : {regression_method::nw, regression_method::local_linear}) {
    regression_spec s;
    s.method = m;
    s.kernel = kernel_epanechnikov{};
    s.bandwidth = {0.2};
    s.exact = true;  // the exact route (sorted keys), not the binned one
    const auto big = regression_evaluate(s, d.x.cview(), d.y, q.cview(), false);
    const auto tr = regression_evaluate(s, d.x.cview(), d.y, d.x.cview(), true);
    // The same computed point by point without sorting (one query at a time is below the
    // sorting threshold for queries but not keys, so compare with brute-force sums instead).
    for (index i = 0; i < 100; i += 9) {
      double sw = 0, swy = 0;
      for (index j = 0; j < 5000; ++j) {
        const double u = (q(i, 0) - d.x(j, 0)) / 0.2;
        const double w = u * u <= 1 ? 1 - u * u : 0;
        sw += w;
        swy += w * d.y[static_cast<std::size_t>(j)];
      }
      if (m == regression_method::nw) {
        EXPECT_NEAR(big.fit[static_cast<std::size_t>(i)], swy / sw, 1e-10);
      }
    }
    double df = 0;
    for (double v : tr.self_weight) df += v;
    EXPECT_GT(df, 10.0);
    EXPECT_EQ(tr.undefined, 0);
  }
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

// The summary-only fit (spec.per_point = false, what kf smooth uses at any n) reports the same
// bandwidth, df, RSS, R², σ², criteria and undefined count as the full fit, and predicts the same.
TEST(BinnedFit, SummaryOnlyFitEqualsTheFullFit) {
  const auto x = test::random_matrix<double>(20000, 1, 11, 0, 6);
  std::vector<double> y(20000);
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = 2 * std::sin(x(static_cast<index>(i), 0)) + 0.3 * std::cos(17.0 * double(i));
  for (auto m : {regression_method::nw, regression_method::local_linear})
    for (auto crit : {bandwidth_criterion::silverman, bandwidth_criterion::loo_cv}) {
      regression_spec full;
      full.method = m;
      regression_spec lean = full;
      lean.per_point = false;
      const auto a = regression_fit_data(full, x.cview(), y, crit);
      const auto b = regression_fit_data(lean, x.cview(), y, crit);
      EXPECT_EQ(a.spec.bandwidth, b.spec.bandwidth);
      EXPECT_EQ(a.df, b.df);
      EXPECT_EQ(a.rss, b.rss);
      EXPECT_EQ(a.r2, b.r2);
      EXPECT_EQ(a.sigma2, b.sigma2);
      EXPECT_EQ(a.loo_cv, b.loo_cv);
      EXPECT_EQ(a.gcv, b.gcv);
      EXPECT_EQ(a.aicc, b.aicc);
      EXPECT_EQ(a.undefined, b.undefined);
      EXPECT_EQ(a.fitted.size(), 20000u);
      EXPECT_TRUE(b.fitted.empty() && b.hat_diag.empty() && b.loo_residuals.empty());
      const auto q = test::random_matrix<double>(101, 1, 12, -1, 7);
      EXPECT_EQ(regression_predict(a, q.cview()).fit, regression_predict(b, q.cview()).fit);
    }
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

// Nadaraya–Watson in two columns on the 2-D grid against the exact smoother.
TEST(Binned2d, NadarayaWatsonMatchesExact) {
  const auto x = test::random_matrix<double>(2001, 2, 31, 0, 5);
  std::vector<double> y(2001);
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = std::sin(x(static_cast<index>(i), 0)) * std::cos(x(static_cast<index>(i), 1)) +
           0.2 * std::cos(13.0 * double(i));
  const auto q = test::random_matrix<double>(150, 2, 32, -0.5, 5.5);
  for (const any_kernel& k : {any_kernel(kernel_gaussian{}), any_kernel(kernel_epanechnikov{}),
                              any_kernel(kernel_laplacian{})}) {
    SCOPED_TRACE(std::string(kernel_name(k)));
    regression_spec s;
    s.kernel = k;
    s.bandwidth = {0.5, 0.4};
    s.binned_min_n = 1000;
    regression_spec exact = s;
    exact.exact = true;
    EXPECT_EQ(choose_regression_route(s, x.cview()).name(), "binned 2-D (bilinear binning + FFT)");
    const auto fast = regression_evaluate(s, x.cview(), y, q.cview(), false);
    const auto ref = regression_evaluate(exact, x.cview(), y, q.cview(), false);
    for (std::size_t i = 0; i < fast.fit.size(); ++i) {
      ASSERT_EQ(fast.defined[i], ref.defined[i]) << i;
      if (ref.defined[i]) {
        EXPECT_NEAR(fast.fit[i], ref.fit[i], 2e-3) << i;
      }
    }
    const auto cf = regression_criteria(s, x.cview(), y);
    const auto cr = regression_criteria(exact, x.cview(), y);
    EXPECT_NEAR(cf.loo_cv, cr.loo_cv, 2e-3 * cr.loo_cv);
    EXPECT_NEAR(cf.df, cr.df, 2e-3 * cr.df);
    EXPECT_NEAR(cf.rss, cr.rss, 2e-3 * cr.rss);
    EXPECT_NEAR(cf.gcv, cr.gcv, 2e-3 * cr.gcv);
    EXPECT_NEAR(cf.aicc, cr.aicc, 2e-3 * (1 + std::abs(cr.aicc)));
  }
}

// The summary-only 2-D fit keeps its grid and sums; predictions inside the data's box read them
// (no second binning), those beyond it rebin on a wider grid. Both against Nadaraya–Watson
// summed directly here, and equal to the full fit's predictions (which bin anew).
TEST(Binned2dFit, SummaryOnlyFitPredictsFromItsGridAndMatchesADirectSum) {
  const index n = 6001;
  const auto x = test::random_matrix<double>(n, 2, 41, 0, 4);
  std::vector<double> y(static_cast<std::size_t>(n));
  for (index i = 0; i < n; ++i)
    y[static_cast<std::size_t>(i)] = std::sin(2 * x(i, 0)) + x(i, 1) * x(i, 1) / 4;
  const double yrange = 1 + 4 + 1;  // sin ∈ [−1, 1], x₁²/4 ∈ [0, 4]: a bound on the range
  const auto inside = test::random_matrix<double>(40, 2, 42, 0.2, 3.8);
  const auto wider = test::random_matrix<double>(40, 2, 43, -0.6, 4.6);
  // K(r) of |u| in bandwidth units, written out (the kernels' documented formulas).
  const std::vector<std::pair<any_kernel, double (*)(double)>> kernels = {
      {kernel_gaussian{}, [](double r) { return std::exp(-r * r / 2); }},
      {kernel_laplacian{}, [](double r) { return std::exp(-r); }},
      {kernel_epanechnikov{}, [](double r) { return std::max(1 - r * r, 0.0); }}};
  for (const auto& [k, kernel_of] : kernels) {
    SCOPED_TRACE(std::string(kernel_name(k)));
    regression_spec full;
    full.kernel = k;
    full.bandwidth = {0.35, 0.3};
    regression_spec lean = full;
    lean.per_point = false;
    const auto a = regression_fit_data(full, x.cview(), y, bandwidth_criterion::fixed);
    const auto b = regression_fit_data(lean, x.cview(), y, bandwidth_criterion::fixed);
    EXPECT_EQ(a.binned2d_grid, nullptr);
    ASSERT_NE(b.binned2d_grid, nullptr);
    for (const auto* q : {&inside, &wider}) {
      const auto pa = regression_predict(a, q->cview());
      const auto pb = regression_predict(b, q->cview());
      for (index i = 0; i < q->rows(); ++i) {
        const auto iu = static_cast<std::size_t>(i);
        double s0 = 0, s1 = 0;
        for (index j = 0; j < n; ++j) {
          const double u0 = ((*q)(i, 0) - x(j, 0)) / 0.35, u1 = ((*q)(i, 1) - x(j, 1)) / 0.3;
          const double w = kernel_of(std::sqrt(u0 * u0 + u1 * u1));
          s0 += w;
          s1 += w * y[static_cast<std::size_t>(j)];
        }
        if (s0 == 0) {  // a compact kernel beyond the data: no point has weight
          EXPECT_FALSE(pb.defined[iu]) << i;
          EXPECT_FALSE(pa.defined[iu]) << i;
          continue;
        }
        ASSERT_TRUE(pb.defined[iu]) << i;
        EXPECT_NEAR(pb.fit[iu], s1 / s0, 2e-3 * yrange) << i;
        EXPECT_NEAR(pb.fit[iu], pa.fit[iu], 1e-12 * yrange) << i;
        EXPECT_NEAR(pb.se[iu], pa.se[iu], 1e-12 + 1e-9 * pa.se[iu]) << i;
      }
    }
  }
}

}  // namespace
}  // namespace kf
