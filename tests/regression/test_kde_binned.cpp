// The binned 1-D density route against the exact one (all pairs through the primitive), kernel by
// kernel: density within 1e-4 of its maximum (and of itself where it is small), the likelihood
// and least-squares criteria, odd sizes, ties, an isolated point, heavy tails, clustered data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "kernelformer/regression/kde.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

std::vector<any_kernel> density_kernels() {
  return {any_kernel(kernel_gaussian{}),     any_kernel(kernel_laplacian{}),
          any_kernel(kernel_cauchy{}),       any_kernel(kernel_boxcar{}),
          any_kernel(kernel_epanechnikov{}), any_kernel(kernel_biweight{}),
          any_kernel(kernel_triweight{}),    any_kernel(kernel_tricube{}),
          any_kernel(kernel_cosine{}),       any_kernel(kernel_rational_quadratic{1.0, 3.0})};
}

enum class shape { uniform, normal_with_outlier, heavy_tails, clustered_ties };

matrix<double> sample(index n, shape s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  matrix<double> x(n, 1);
  std::uniform_real_distribution<double> u(0, 6);
  std::normal_distribution<double> g(0, 1);
  std::cauchy_distribution<double> c(0, 1);
  for (index i = 0; i < n; ++i) {
    switch (s) {
      case shape::uniform:
        x(i, 0) = u(rng);
        break;
      case shape::normal_with_outlier:
        x(i, 0) = i == 7 ? 40.0 : g(rng);
        break;
      case shape::heavy_tails:
        x(i, 0) = std::clamp(c(rng), -300.0, 300.0);
        break;
      case shape::clustered_ties:
        x(i, 0) = std::round(g(rng) * 8) / 8 + (i % 3 == 0 ? 5 : 0);
        break;
    }
  }
  return x;
}

std::string name_of(shape s) {
  switch (s) {
    case shape::uniform:
      return "uniform";
    case shape::normal_with_outlier:
      return "normal+outlier";
    case shape::heavy_tails:
      return "cauchy";
    case shape::clustered_ties:
      return "clustered ties";
  }
  return "";
}

kde_options binned_at(index n) {
  kde_options o;
  o.binned_min_n = n;
  return o;
}

TEST(KdeBinned, DensityMatchesExactForEveryKernelAndShape) {
  for (shape sh :
       {shape::uniform, shape::normal_with_outlier, shape::heavy_tails, shape::clustered_ties}) {
    const matrix<double> x = sample(701, sh, 5);
    matrix<double> at(501, 1);
    for (index i = 0; i < at.rows(); ++i) at(i, 0) = -4 + 14.0 * double(i) / 500.0;
    at(0, 0) = 45.0;  // beyond every point
    for (const any_kernel& k : density_kernels()) {
      SCOPED_TRACE(name_of(sh) + " " + std::string(kernel_name(k)));
      const auto fast =
          kde_fit_data(k, x.cview(), bandwidth_criterion::silverman, {}, {}, binned_at(500));
      kde_options ex;
      ex.exact = true;
      const auto ref = kde_fit_data(k, x.cview(), bandwidth_criterion::silverman, {}, {}, ex);
      ASSERT_TRUE(fast.route.binned());
      ASSERT_FALSE(ref.route.binned());
      ASSERT_EQ(fast.bandwidth, ref.bandwidth);
      const auto f = kde_evaluate(fast, at.cview()), r = kde_evaluate(ref, at.cview());
      double peak = 0;
      for (double v : r) peak = std::max(peak, v);
      // The laplacian's kink at 0 makes binning first-order at tied points (every point of the
      // clustered sample is a tie): 3e-4 there, 1e-4 for everything else.
      const double tol = kernel_name(k) == "laplacian" ? 3e-4 : 1e-4;
      for (std::size_t i = 0; i < f.size(); ++i) {
        ASSERT_TRUE(std::isfinite(f[i]) && f[i] >= 0) << i;
        EXPECT_LE(std::abs(f[i] - r[i]), tol * peak) << at(static_cast<index>(i), 0);
      }
      // Where the grid is not used (beyond the data) the value is exact.
      double xmax = x(0, 0);
      for (index i = 0; i < x.rows(); ++i) xmax = std::max(xmax, x(i, 0));
      if (at(0, 0) > xmax) {
        EXPECT_NEAR(f[0], r[0], 1e-9 * r[0] + 1e-300);
      }
      if (std::isfinite(ref.criterion_value))
        EXPECT_NEAR(fast.criterion_value, ref.criterion_value,
                    2e-3 * std::abs(ref.criterion_value) + 1e-9);
      else
        EXPECT_FALSE(std::isfinite(fast.criterion_value));
    }
  }
}

TEST(KdeBinned, FitKeepsItsGridAndACopyBinsAgain) {
  // A rule or fixed bandwidth bins the data once, in the fit, over the range kde_evaluate reads;
  // a copied fit has no grid and bins again over the evaluation points' range. The two agree
  // within the binning tolerance; a searched bandwidth keeps no grid.
  const matrix<double> x = sample(5003, shape::normal_with_outlier, 9);
  matrix<double> at(301, 1);
  for (index i = 0; i < at.rows(); ++i) at(i, 0) = -5 + 50.0 * double(i) / 300.0;
  for (const any_kernel& k : {any_kernel(kernel_gaussian{}), any_kernel(kernel_epanechnikov{})}) {
    SCOPED_TRACE(std::string(kernel_name(k)));
    const auto fit = kde_fit_data(k, x.cview(), bandwidth_criterion::scott);
    ASSERT_TRUE(fit.route.binned());
    ASSERT_TRUE(fit.cache.grid != nullptr);
    const kde_fit copy = fit;
    EXPECT_TRUE(copy.cache.grid == nullptr);
    const auto f = kde_evaluate(fit, at.cview()), g = kde_evaluate(copy, at.cview());
    double peak = 0;
    for (double v : g) peak = std::max(peak, v);
    for (std::size_t i = 0; i < f.size(); ++i)
      EXPECT_LE(std::abs(f[i] - g[i]), 1e-4 * peak) << at(static_cast<index>(i), 0);
    kde_fit target = kde_fit_data(k, x.cview(), bandwidth_criterion::fixed, {0.2});
    ASSERT_TRUE(target.cache.grid != nullptr);
    const auto before = kde_evaluate(target, at.cview());
    const kde_fit taken = std::move(target);
    EXPECT_TRUE(taken.cache.grid != nullptr);
    EXPECT_EQ(kde_evaluate(taken, at.cview()), before);
  }
  EXPECT_TRUE(kde_fit_data(kernel_gaussian{}, x.cview(), bandwidth_criterion::cv_ml).cache.grid ==
              nullptr);
}

TEST(KdeBinned, BothCriteriaMatchExactAtSeveralBandwidths) {
  for (shape sh : {shape::normal_with_outlier, shape::clustered_ties}) {
    const matrix<double> x = sample(1001, sh, 9);
    for (const any_kernel& k : density_kernels()) {
      for (auto c : {bandwidth_criterion::cv_ml, bandwidth_criterion::cv_ls}) {
        if (c == bandwidth_criterion::cv_ls && kernel_name(k) == "rational_quadratic")
          continue;                      // no K∗K here: refused by both routes
        for (double h : {0.04, 0.47}) {  // not at the ties: a boxcar edge on a tie is ill-posed
          SCOPED_TRACE(name_of(sh) + " " + std::string(kernel_name(k)) + " " +
                       bandwidth_criterion_name(c) + " h=" + std::to_string(h));
          kde_options ex;
          ex.exact = true;
          const double fast = kde_criterion(k, x.cview(), {h}, c, binned_at(1000));
          double ref = kde_criterion(k, x.cview(), {h}, c, ex);
          if (c == bandwidth_criterion::cv_ls && kernel_name(k) == "boxcar") {
            // The exact route integrates f̂² by Simpson's rule, first-order at the boxcar's jumps;
            // the pairs summed directly are the reference here (K∗K = (2 − |t|)₊).
            const double nn = double(x.rows());
            double sq = 0, cross = 0;
            for (index i = 0; i < x.rows(); ++i)
              for (index j = 0; j < x.rows(); ++j) {
                const double t = std::abs(x(i, 0) - x(j, 0)) / h;
                sq += std::max(0.0, 2 - t);
                cross += i != j && t <= 1 ? 1 : 0;
              }
            EXPECT_NEAR(ref, sq / (nn * nn * h * 4) - 2 * cross / (nn * (nn - 1) * 2 * h),
                        5e-3 * std::abs(ref));
            ref = sq / (nn * nn * h * 4) - 2 * cross / (nn * (nn - 1) * 2 * h);
          }
          if (!std::isfinite(ref)) {
            EXPECT_FALSE(std::isfinite(fast));
            continue;
          }
          EXPECT_NEAR(fast, ref, 1e-3 * std::abs(ref) + 1e-6);
        }
      }
    }
  }
}

TEST(KdeBinned, SearchChoosesTheSameBandwidth) {
  const matrix<double> x = sample(1001, shape::uniform, 2);
  for (const any_kernel& k : {any_kernel(kernel_gaussian{}), any_kernel(kernel_epanechnikov{})})
    for (auto c : {bandwidth_criterion::cv_ml, bandwidth_criterion::cv_ls}) {
      SCOPED_TRACE(std::string(kernel_name(k)) + " " + bandwidth_criterion_name(c));
      kde_options ex;
      ex.exact = true;
      const auto fast = kde_fit_data(k, x.cview(), c, {}, {}, binned_at(1000));
      const auto ref = kde_fit_data(k, x.cview(), c, {}, {}, ex);
      EXPECT_NEAR(fast.bandwidth[0], ref.bandwidth[0], 0.02 * ref.bandwidth[0]);
    }
}

TEST(KdeBinned, SinglePointDuplicatesAndOddSizes) {
  for (index n : {1, 2, 5, 7, 1001}) {
    matrix<double> x(n, 1);
    for (index i = 0; i < n; ++i) x(i, 0) = n == 1 ? 3.0 : double(i % 4);  // ties
    matrix<double> at(9, 1);
    for (index i = 0; i < 9; ++i) at(i, 0) = -1 + 0.7 * double(i);
    for (const any_kernel& k : {any_kernel(kernel_gaussian{}), any_kernel(kernel_boxcar{}),
                                any_kernel(kernel_tricube{})}) {
      SCOPED_TRACE(std::string(kernel_name(k)) + " n=" + std::to_string(n));
      kde_options ex;
      ex.exact = true;
      const auto fast =
          kde_fit_data(k, x.cview(), bandwidth_criterion::fixed, {0.3}, {}, binned_at(1));
      const auto ref = kde_fit_data(k, x.cview(), bandwidth_criterion::fixed, {0.3}, {}, ex);
      const auto f = kde_evaluate(fast, at.cview()), r = kde_evaluate(ref, at.cview());
      double peak = 0;
      for (double v : r) peak = std::max(peak, v);
      for (std::size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], r[i], 1e-4 * peak) << i;
      if (std::isfinite(ref.criterion_value))
        EXPECT_NEAR(fast.criterion_value, ref.criterion_value,
                    1e-3 * std::abs(ref.criterion_value) + 1e-9);
      else
        EXPECT_FALSE(std::isfinite(fast.criterion_value));
    }
  }
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

// Two columns: any density kernel (radial, per-column bandwidths) on the 2-D grid against the
// exact sums; density within 2e-3 of its peak at the default 16 cells per bandwidth.
TEST(KdeBinned2d, DensityAndLikelihoodCvMatchExact) {
  const auto x = test::random_matrix<double>(1501, 2, 21, 0, 4);
  matrix<double> xs = x;
  for (index i = 0; i < xs.rows(); ++i) xs(i, 1) = 0.5 * xs(i, 1) + 0.3 * xs(i, 0);
  matrix<double> with_outlier = xs;
  with_outlier(3, 0) = 30;  // an isolated point (and a grid 30 units wide)
  const auto at = test::random_matrix<double>(200, 2, 22, -1, 5);
  for (const any_kernel& k : {any_kernel(kernel_gaussian{}), any_kernel(kernel_epanechnikov{}),
                              any_kernel(kernel_tricube{}), any_kernel(kernel_laplacian{})}) {
    SCOPED_TRACE(std::string(kernel_name(k)));
    kde_options ex;
    ex.exact = true;
    const auto fast =
        kde_fit_data(k, xs.cview(), bandwidth_criterion::fixed, {0.4, 0.3}, {}, binned_at(1000));
    const auto ref = kde_fit_data(k, xs.cview(), bandwidth_criterion::fixed, {0.4, 0.3}, {}, ex);
    ASSERT_TRUE(fast.route.binned());
    const auto f = kde_evaluate(fast, at.cview()), r = kde_evaluate(ref, at.cview());
    double peak = 0;
    for (double v : r) peak = std::max(peak, v);
    for (std::size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], r[i], 2e-3 * peak) << i;
    EXPECT_NEAR(fast.criterion_value, ref.criterion_value, 2e-3 * std::abs(ref.criterion_value));
    const double fo = kde_criterion(k, with_outlier.cview(), {0.4, 0.3}, bandwidth_criterion::cv_ml,
                                    binned_at(1000));
    const double ro =
        kde_criterion(k, with_outlier.cview(), {0.4, 0.3}, bandwidth_criterion::cv_ml, ex);
    if (std::isfinite(ro)) {
      EXPECT_NEAR(fo, ro, 5e-3 * std::abs(ro));
    } else {
      EXPECT_FALSE(std::isfinite(fo));
    }
  }
  // Least-squares CV, gaussian.
  kde_options ex;
  ex.exact = true;
  const double fast = kde_criterion(kernel_gaussian{}, xs.cview(), {0.4, 0.3},
                                    bandwidth_criterion::cv_ls, binned_at(1000));
  const double ref =
      kde_criterion(kernel_gaussian{}, xs.cview(), {0.4, 0.3}, bandwidth_criterion::cv_ls, ex);
  EXPECT_NEAR(fast, ref, 2e-3 * std::abs(ref));
  EXPECT_THROW(kde_fit_data(kernel_cauchy{}, xs.cview(), bandwidth_criterion::silverman),
               std::invalid_argument);  // not a density in 2-D
}

}  // namespace
}  // namespace kf
