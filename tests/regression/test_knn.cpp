// KNN's neighbor-search route (sorted 1-D, k-d tree for d ≥ 2) against the primitive's top-k
// mask, leave-one-out that drops the point itself, and k chosen by LOO-CV.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernelformer/regression/smoother.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

std::vector<double> response(const matrix<double>& x) {
  std::vector<double> y(static_cast<std::size_t>(x.rows()));
  for (index i = 0; i < x.rows(); ++i) {
    double s = 0;
    for (index c = 0; c < x.cols(); ++c) s += std::sin(2 * x(i, c));
    y[static_cast<std::size_t>(i)] = s + 0.2 * std::cos(31.0 * double(i));
  }
  return y;
}

// The mean of y over the k nearest rows of x to q, all pairs sorted (rows `skip` left out).
double brute_mean(const matrix<double>& x, const std::vector<double>& y, const double* q, index k,
                  index skip) {
  std::vector<std::pair<double, index>> d;
  for (index j = 0; j < x.rows(); ++j) {
    if (j == skip) continue;
    double s = 0;
    for (index c = 0; c < x.cols(); ++c) s += (x(j, c) - q[c]) * (x(j, c) - q[c]);
    d.push_back({s, j});
  }
  std::sort(d.begin(), d.end());
  double m = 0;
  for (index j = 0; j < k; ++j)
    m += y[static_cast<std::size_t>(d[static_cast<std::size_t>(j)].second)];
  return m / double(k);
}

TEST(KnnSearch, MatchesTheTopKMaskInOneToThreeDimensions) {
  for (index d : {1, 2, 3})
    for (bool distance : {false, true}) {
      SCOPED_TRACE("d=" + std::to_string(d) + (distance ? " distance" : " uniform"));
      const auto x = test::random_matrix<double>(701, d, 3 + d, 0, 5);
      const auto q = test::random_matrix<double>(53, d, 9, -1, 6);
      const auto y = response(x);
      regression_spec s;
      s.method = regression_method::knn;
      s.k = 7;
      s.knn_distance_weights = distance;
      regression_spec exact = s;
      exact.exact = true;
      EXPECT_EQ(choose_regression_route(s, x.cview()).kind, route_kind::neighbors);
      EXPECT_EQ(choose_regression_route(exact, x.cview()).kind, route_kind::all_pairs_topk);
      const auto fast = regression_evaluate(s, x.cview(), y, q.cview(), false);
      const auto ref = regression_evaluate(exact, x.cview(), y, q.cview(), false);
      const auto fast_t = regression_evaluate(s, x.cview(), y, x.cview(), true);
      const auto ref_t = regression_evaluate(exact, x.cview(), y, x.cview(), true);
      for (std::size_t i = 0; i < fast.fit.size(); ++i) {
        EXPECT_NEAR(fast.fit[i], ref.fit[i], 1e-9) << i;
        EXPECT_NEAR(fast.sum_l2[i], ref.sum_l2[i], 1e-9) << i;
      }
      for (std::size_t i = 0; i < fast_t.fit.size(); ++i) {
        EXPECT_NEAR(fast_t.fit[i], ref_t.fit[i], 1e-9) << i;
        EXPECT_NEAR(fast_t.self_weight[i], ref_t.self_weight[i], 1e-9) << i;
      }
    }
}

TEST(KnnLeaveOneOut, DropsThePointItselfAndChoosesKByCv) {
  for (index d : {1, 3}) {
    SCOPED_TRACE("d=" + std::to_string(d));
    const auto x = test::random_matrix<double>(301, d, 17 + d, 0, 4);
    const auto y = response(x);
    regression_spec s;
    s.method = regression_method::knn;
    s.k = 5;
    const auto fit = regression_fit_data(s, x.cview(), y, bandwidth_criterion::loo_cv);
    ASSERT_EQ(fit.loo_residuals.size(), 301u);
    double mse = 0;
    for (index i = 0; i < x.rows(); ++i) {
      const double r = y[static_cast<std::size_t>(i)] - brute_mean(x, y, &x(i, 0), 5, i);
      EXPECT_NEAR(fit.loo_residuals[static_cast<std::size_t>(i)], r, 1e-12) << i;
      mse += r * r / double(x.rows());
    }
    EXPECT_NEAR(fit.loo_cv, mse, 1e-12);
    // k by LOO-CV: the chosen k minimizes the brute-force curve over 1..k_max.
    regression_spec cv = s;
    cv.k = 0;
    cv.k_max = 12;
    const auto chosen = regression_fit_data(cv, x.cview(), y, bandwidth_criterion::loo_cv);
    ASSERT_EQ(chosen.curve.size(), 12u);
    index best = 0;
    double best_v = 1e300;
    for (index k = 1; k <= 12; ++k) {
      double m = 0;
      for (index i = 0; i < x.rows(); ++i) {
        const double r = y[static_cast<std::size_t>(i)] - brute_mean(x, y, &x(i, 0), k, i);
        m += r * r / double(x.rows());
      }
      EXPECT_NEAR(chosen.curve[static_cast<std::size_t>(k - 1)].value, m, 1e-12) << k;
      if (m < best_v) best_v = m, best = k;
    }
    EXPECT_EQ(chosen.spec.k, best);
    EXPECT_EQ(chosen.criterion, bandwidth_criterion::loo_cv);
    EXPECT_NEAR(chosen.criterion_value, best_v, 1e-12);
  }
}

TEST(KnnSearch, DuplicatesAndKEqualToN) {
  matrix<double> x(6, 1, {1, 1, 1, 2, 3, 3});
  const std::vector<double> y = {1, 2, 3, 4, 5, 6};
  regression_spec s;
  s.method = regression_method::knn;
  s.k = 6;
  const matrix<double> q(2, 1, {0, 10});
  const auto e = regression_evaluate(s, x.cview(), y, q.cview(), false);
  EXPECT_NEAR(e.fit[0], 3.5, 1e-12);
  EXPECT_NEAR(e.fit[1], 3.5, 1e-12);
  s.knn_distance_weights = true;
  s.k = 2;
  const auto w = regression_evaluate(s, x.cview(), y, x.cview(), true);
  EXPECT_NEAR(w.fit[3], 4.0, 1e-12);  // an exact match takes all the weight
  s.k = 7;
  EXPECT_THROW(regression_evaluate(s, x.cview(), y, q.cview(), false), std::invalid_argument);
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

TEST(KnnFit, PredictionsReuseTheFitsSearchWhichOutlivesItsData) {
  // regression_predict takes the fit's own search (no second tree); a copy of the fit predicts
  // the same after the original and its data are gone: the search keeps what it searches.
  for (index d : {1, 3}) {
    const auto q = test::random_matrix<double>(37, d, 9, -0.2, 1.2);
    regression_prediction first;
    regression_fit copy;
    {
      const auto x = test::random_matrix<double>(500, d, 8);
      regression_spec spec;
      spec.method = regression_method::knn;
      spec.k = 7;
      const auto fit =
          regression_fit_data(spec, x.cview(), response(x), bandwidth_criterion::fixed);
      ASSERT_TRUE(fit.knn_index != nullptr);
      first = regression_predict(fit, q.cview());
      const regression_eval fresh =
          regression_evaluate(fit.spec, x.cview(), fit.y, q.cview(), false);
      for (std::size_t i = 0; i < first.fit.size(); ++i) {
        EXPECT_EQ(first.fit[i], fresh.fit[i]);
        // and both are the k-nearest mean, found here by sorting all distances
        EXPECT_NEAR(first.fit[i], brute_mean(x, fit.y, &q(static_cast<index>(i), 0), 7, -1), 1e-12);
      }
      copy = fit;
    }
    const auto again = regression_predict(copy, q.cview());
    for (std::size_t i = 0; i < first.fit.size(); ++i) EXPECT_EQ(again.fit[i], first.fit[i]);
  }
}

}  // namespace
}  // namespace kf
