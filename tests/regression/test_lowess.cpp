// LOWESS (regression/lowess.hpp) against R's lowess on real data and on a curve with gross
// outliers (python/make_fixture_lowess.py): R's defaults (f = 2/3, 3 robustness passes, delta 1%
// of the range), no robustness and no skipping, a small span with 5 passes and a coarse delta.
// Then what R cannot tell us: the order of ties kept, straight lines reproduced, robustness that
// ignores outliers, predictions between the points, and bad input refused.
#include "kernelformer/regression/lowess.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernelformer/io/npy.hpp"
#include "test_paths.hpp"

namespace kf {
namespace {

matrix<double> fixture(const std::string& name) {
  return io::npy_read(std::string(KF_FIXTURES_DIR).append("/lowess_").append(name).append(".npy"))
      .to_matrix<double>();
}

// The settings of python/make_fixture_lowess.py, in its order (delta < 0: 1% of the range).
lowess_spec setting(int k, double range) {
  if (k == 0) return {2.0 / 3.0, 3, -1};
  if (k == 1) return {0.3, 0, 0};
  return {0.1, 5, 0.05 * range};
}

TEST(Lowess, MatchesRsLowess) {
  for (const char* name : {"cars", "faithful", "outliers"}) {
    const matrix<double> data = fixture(name), ref = fixture(std::string(name) + "_fit");
    std::vector<double> x, y;
    for (index i = 0; i < data.rows(); ++i) x.push_back(data(i, 0)), y.push_back(data(i, 1));
    const double range =
        *std::max_element(x.begin(), x.end()) - *std::min_element(x.begin(), x.end());
    double y_scale = 0;
    for (double v : y) y_scale = std::max(y_scale, std::abs(v));
    for (int k = 0; k < 3; ++k) {
      SCOPED_TRACE(std::string(name) + " setting " + std::to_string(k));
      const lowess_fit f = lowess(x, y, setting(k, range));
      ASSERT_EQ(static_cast<index>(f.fitted.size()), ref.rows());
      double worst = 0;
      for (index i = 0; i < ref.rows(); ++i)
        worst = std::max(worst, std::abs(f.fitted[static_cast<std::size_t>(i)] - ref(i, k)));
      EXPECT_LE(worst, 1e-12 * y_scale);
      // delta 0: one local fit per distinct x (ties copy it); delta > 0 skips more.
      std::vector<double> xs = f.x;
      const auto n_distinct = static_cast<index>(std::unique(xs.begin(), xs.end()) - xs.begin());
      if (k == 1) {
        EXPECT_EQ(f.local_fits, n_distinct) << "delta 0 fits every distinct x";
      } else {
        EXPECT_LE(f.local_fits, n_distinct);
        if (std::string(name) == "outliers") {
          EXPECT_LT(f.local_fits, n_distinct / 2) << "delta skips points";
        }
      }
    }
  }
}

TEST(Lowess, TiesKeepTheirOrderAndGetOneValue) {
  const std::vector<double> x{3, 1, 2, 2, 1, 3, 2, 4, 5, 4}, y{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const lowess_fit f = lowess(x, y, {0.6, 2, 0});
  ASSERT_EQ(f.order.size(), x.size());
  EXPECT_EQ(f.order, (std::vector<index>{1, 4, 2, 3, 6, 0, 5, 7, 9, 8}));
  for (std::size_t k = 1; k < f.x.size(); ++k) {
    if (f.x[k] == f.x[k - 1]) {
      EXPECT_EQ(f.fitted[k], f.fitted[k - 1]) << k;
    }
  }
}

TEST(Lowess, StraightLinesAreReproducedAndOutliersIgnored) {
  std::vector<double> x, y;
  for (int i = 0; i < 200; ++i) x.push_back(0.05 * i), y.push_back(2.0 - 0.5 * x.back());
  const lowess_fit line = lowess(x, y, {0.3, 0, 0});
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(line.fitted[i], y[i], 1e-12) << i;
  // Gross outliers pull the plain local fit; the robustness passes give them weight 0.
  std::vector<double> bad = y;
  for (int i : {20, 60, 100, 140, 180}) bad[static_cast<std::size_t>(i)] += 50.0;
  const lowess_fit plain = lowess(x, bad, {0.3, 0, 0}), robust = lowess(x, bad, {0.3, 3, 0});
  double plain_err = 0, robust_err = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    plain_err = std::max(plain_err, std::abs(plain.fitted[i] - y[i]));
    robust_err = std::max(robust_err, std::abs(robust.fitted[i] - y[i]));
  }
  EXPECT_GT(plain_err, 1.0);
  EXPECT_LT(robust_err, 1e-9);
  for (int i : {20, 60, 100, 140, 180}) EXPECT_EQ(robust.weights[static_cast<std::size_t>(i)], 0);
}

// A prediction is the local fit at the point itself: at the training x (fitted without delta
// skipping) the fitted value, robustness weights included; beyond the data the end's local
// line (a straight line is extended exactly).
TEST(Lowess, PredictionsAreLocalFitsAtThePoints) {
  std::vector<double> x, y;
  for (int i = 0; i < 80; ++i)
    x.push_back(0.1 * i), y.push_back(std::sin(x.back()) + (i == 30 ? 5 : 0));
  const lowess_fit f = lowess(x, y, {0.3, 2, 0});
  const auto at_data = lowess_predict(f, f.x);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(at_data[i], f.fitted[i], 1e-13) << i;
  std::vector<double> line;
  for (double v : x) line.push_back(1.0 + 2.0 * v);
  const lowess_fit g = lowess(x, line, {0.3, 0, 0});
  const auto out = lowess_predict(g, std::vector<double>{-1.0, 3.05, 9.0});
  EXPECT_NEAR(out[0], -1.0, 1e-10);
  EXPECT_NEAR(out[1], 7.1, 1e-10);
  EXPECT_NEAR(out[2], 19.0, 1e-10);
  EXPECT_THROW(lowess_predict(g, std::vector<double>{NAN}), std::invalid_argument);
}

TEST(Lowess, BadInputIsRefused) {
  const std::vector<double> x{0, 1, 2}, y{0, 1, 2};
  EXPECT_THROW(lowess(x, std::vector<double>{0, 1}), std::invalid_argument);
  EXPECT_THROW(lowess(std::vector<double>{1}, std::vector<double>{1}), std::invalid_argument);
  EXPECT_THROW(lowess(x, y, {0.0, 3, -1}), std::invalid_argument);
  EXPECT_THROW(lowess(x, y, {1.5, 3, -1}), std::invalid_argument);
  EXPECT_THROW(lowess(x, y, {0.5, -1, -1}), std::invalid_argument);
  EXPECT_THROW(lowess(std::vector<double>{0, NAN, 2}, y), std::invalid_argument);
  // Two points, all at one x: a weighted mean, no slope.
  const lowess_fit flat = lowess(std::vector<double>{1, 1}, std::vector<double>{2, 4});
  EXPECT_DOUBLE_EQ(flat.fitted[0], 3.0);
}

}  // namespace
}  // namespace kf
