// The route objects (regression/route.hpp), one table per layer: every regression route and
// every density route, each case fitted and checked for the route that ran (fit.route, not a
// name derived on the side) and its predictions against the all-pairs reference (exact = true,
// or the brute-force density). Also: the 1-D binned fit keeps its grid and predictions read it
// bit for bit as a fresh evaluation does; a copied fit predicts the same.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernelformer/regression/kde.hpp"
#include "kernelformer/regression/route.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

struct regression_route_case {
  std::string label;
  route_kind kind;
  regression_method method;
  any_kernel kernel;
  index n, d;
  double h;    // one bandwidth for all columns (knn: k = 7)
  bool exact;  // spec.exact
  double tol;  // prediction error against all pairs, × the range of y
};

std::vector<double> response(const matrix<double>& x) {
  std::vector<double> y(static_cast<std::size_t>(x.rows()));
  for (index i = 0; i < x.rows(); ++i) {
    double v = 0;
    for (index c = 0; c < x.cols(); ++c) v += std::sin(2.0 * x(i, c));
    y[static_cast<std::size_t>(i)] = v + 0.1 * std::cos(17.0 * double(i));
  }
  return y;
}

class RegressionRoute : public ::testing::TestWithParam<regression_route_case> {};

TEST_P(RegressionRoute, TheFitRecordsTheRouteItRanAndAgreesWithAllPairs) {
  const auto& c = GetParam();
  const auto x = test::random_matrix<double>(c.n, c.d, 7 + static_cast<std::uint64_t>(c.d), 0, 4);
  const auto q = test::random_matrix<double>(97, c.d, 11, 0.2, 3.8);
  const auto y = response(x);
  regression_spec s;
  s.method = c.method;
  s.kernel = c.kernel;
  s.bandwidth = {c.h};
  s.k = 7;
  s.exact = c.exact;
  s.binned_min_n = 2000;
  const regression_fit fit = regression_fit_data(s, x.cview(), y, bandwidth_criterion::fixed);
  EXPECT_EQ(fit.route.kind, c.kind) << fit.route.name() << " (" << fit.route.why << ")";
  EXPECT_FALSE(fit.route.why.empty());
  EXPECT_EQ(choose_regression_route(fit.spec, x.cview()).kind, c.kind);
  regression_spec ref = s;
  ref.exact = true;
  const auto fast = regression_predict(fit, q.cview());
  const auto all = c.kind == route_kind::features
                       ? regression_evaluate(s, x.cview(), y, q.cview(), false)  // rff: itself
                       : regression_evaluate(ref, x.cview(), y, q.cview(), false);
  for (std::size_t i = 0; i < fast.fit.size(); ++i) {
    ASSERT_EQ(bool(fast.defined[i]), bool(all.defined[i])) << i;
    if (all.defined[i]) {
      EXPECT_NEAR(fast.fit[i], all.fit[i], c.tol * 2.0) << i;
    }
  }
}

std::vector<regression_route_case> regression_cases() {
  using M = regression_method;
  using K = route_kind;
  const any_kernel g = kernel_gaussian{}, e = kernel_epanechnikov{};
  return {{"neighbors_1d", K::neighbors, M::knn, g, 500, 1, 0, false, 1e-12},
          {"neighbors_2d", K::neighbors, M::knn, g, 500, 2, 0, false, 1e-12},
          {"binned_nw", K::binned, M::nw, g, 3000, 1, 0.2, false, 1e-6},
          {"binned_ll", K::binned, M::local_linear, e, 3000, 1, 0.4, false, 1e-4},
          {"binned2d", K::binned2d, M::nw, g, 3000, 2, 0.3, false, 2e-3},
          {"sorted_windows", K::sorted_windows, M::nw, e, 500, 1, 0.3, false, 1e-10},
          {"sorted_windows_exact", K::sorted_windows, M::local_linear, e, 3000, 1, 0.3, true, 1e-9},
          {"kd_tree", K::kd_tree, M::nw, e, 500, 3, 0.15, false, 1e-10},
          {"kd_tree_exact_2d", K::kd_tree, M::nw, e, 3000, 2, 0.15, true, 1e-10},
          {"all_pairs_wide_support", K::all_pairs, M::nw, e, 500, 3, 1.5, false, 1e-12},
          {"all_pairs_gaussian", K::all_pairs, M::local_linear, g, 500, 2, 0.4, false, 1e-12},
          {"all_pairs_exact", K::all_pairs, M::nw, g, 3000, 1, 0.2, true, 1e-12}};
}

INSTANTIATE_TEST_SUITE_P(Table, RegressionRoute, ::testing::ValuesIn(regression_cases()),
                         [](const auto& i) { return i.param.label; });

TEST(RegressionRouteExtra, TopKAndFeaturesAreRecorded) {
  const auto x = test::random_matrix<double>(300, 1, 3, 0, 4);
  const auto y = response(x);
  regression_spec s;
  s.method = regression_method::knn;
  s.k = 5;
  s.exact = true;
  EXPECT_EQ(regression_fit_data(s, x.cview(), y, bandwidth_criterion::fixed).route.kind,
            route_kind::all_pairs_topk);
  regression_spec r;
  r.kernel = kernel_parse(std::string("rff:features=64,seed=1")).first;
  r.bandwidth = {0.5};
  EXPECT_EQ(regression_fit_data(r, x.cview(), y, bandwidth_criterion::fixed).route.kind,
            route_kind::features);
}

// The 1-D binned fit keeps its grid (over the data's range): predictions read it, and give
// exactly what a fresh evaluation (which builds the same grid) gives, also from a copy of the
// fit and at queries outside the data (evaluated exactly).
TEST(BinnedGrid, TheFitKeepsItAndPredictionsReadItBitForBit) {
  const auto x = test::random_matrix<double>(6000, 1, 5, 0, 4);
  const auto y = response(x);
  auto q = test::random_matrix<double>(400, 1, 6, -0.5, 4.5);
  for (regression_method m : {regression_method::nw, regression_method::local_linear}) {
    regression_spec s;
    s.method = m;
    s.bandwidth = {0.15};
    const regression_fit fit = regression_fit_data(s, x.cview(), y, bandwidth_criterion::loo_cv);
    ASSERT_EQ(fit.route.kind, route_kind::binned);
    ASSERT_NE(fit.binned1d_grid, nullptr);
    const auto a = regression_predict(fit, q.cview());
    const auto b = regression_evaluate(fit.spec, x.cview(), y, q.cview(), false);
    const regression_fit copy = fit;
    const auto c = regression_predict(copy, q.cview());
    for (std::size_t i = 0; i < a.fit.size(); ++i) {
      EXPECT_EQ(a.fit[i], b.fit[i]) << i;
      EXPECT_EQ(a.sum_l2[i], b.sum_l2[i]) << i;
      EXPECT_EQ(c.fit[i], a.fit[i]) << i;
    }
  }
}

// Density routes: the fit records the route that ran; the k-d tree is taken for compact
// kernels in 2+ columns whose support is a small part of the box, and `kf kde` prints it.
struct kde_route_case {
  std::string label;
  route_kind kind;
  any_kernel kernel;
  index n, d;
  double h;
  bool exact;
};

class KdeRoute : public ::testing::TestWithParam<kde_route_case> {};

TEST_P(KdeRoute, TheFitRecordsTheRouteItRanAndAgreesWithTheDirectSum) {
  const auto& c = GetParam();
  const auto x = test::random_matrix<double>(c.n, c.d, 21 + static_cast<std::uint64_t>(c.d), 0, 4);
  const auto at = test::random_matrix<double>(31, c.d, 22, 0.5, 3.5);
  kde_options o;
  o.exact = c.exact;
  o.binned_min_n = 2000;
  const kde_fit f = kde_fit_data(c.kernel, x.cview(), bandwidth_criterion::fixed, {c.h}, {}, o);
  EXPECT_EQ(f.route.kind, c.kind) << f.route.name() << " (" << f.route.why << ")";
  EXPECT_EQ(kde_route_name(f), std::string(f.route.name()));
  // The direct sum Σ_j K(|a − x_j| / h) at each point: the density is proportional to it.
  any_kernel unit = c.kernel;
  kernel_set_param(unit, 1.0);
  const auto dens = kde_evaluate(f, at.cview());
  double scale = 0;
  for (index i = 0; i < at.rows(); ++i) {
    double sum = 0;
    for (index j = 0; j < x.rows(); ++j) {
      double s2 = 0;
      for (index k = 0; k < c.d; ++k) s2 += std::pow((at(i, k) - x(j, k)) / c.h, 2);
      sum += std::exp(kernel_log_weight(unit, s2));
    }
    const double got = dens[static_cast<std::size_t>(i)];
    if (scale == 0 && sum > 0) scale = got / sum;
    const double tol = f.route.binned() ? 2e-3 : 1e-10;
    EXPECT_NEAR(got, scale * sum, tol * scale * (sum + 1)) << "point " << i;
  }
}

std::vector<kde_route_case> kde_cases() {
  using K = route_kind;
  const any_kernel g = kernel_gaussian{}, e = kernel_epanechnikov{};
  return {{"binned_1d", K::binned, g, 3000, 1, 0.2, false},
          {"binned_2d", K::binned2d, g, 3000, 2, 0.3, false},
          {"kd_tree_2d", K::kd_tree, e, 500, 2, 0.2, false},
          {"kd_tree_2d_exact", K::kd_tree, e, 3000, 2, 0.1, true},
          {"all_pairs_wide", K::all_pairs, e, 500, 2, 1.5, false},
          {"all_pairs_gaussian", K::all_pairs, g, 500, 3, 0.3, false}};
}

INSTANTIATE_TEST_SUITE_P(Table, KdeRoute, ::testing::ValuesIn(kde_cases()),
                         [](const auto& i) { return i.param.label; });

}  // namespace
}  // namespace kf
