// The explorer's computations: deterministic data, NW curve = the regression module's fit,
// attention on positional encodings = a stationary kernel exp((cos ω1 d + cos ω2 d) / T),
// profiles that sum to one, range checks that name the parameter.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "kernelformer/explore/explorer.hpp"
#include "kernelformer/regression/smoother.hpp"

namespace kf {
namespace {

TEST(Explorer, DataIsDeterministicSortedAndSized) {
  explorer_request r;
  const auto a = explorer_make_data(r), b = explorer_make_data(r);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.y, b.y);
  ASSERT_EQ(a.x.size(), 40u);
  EXPECT_TRUE(std::is_sorted(a.x.begin(), a.x.end()));
  EXPECT_EQ(a.grid.size(), 200u);
  EXPECT_DOUBLE_EQ(a.grid.front(), 0.0);
  EXPECT_DOUBLE_EQ(a.grid.back(), 6.0);
  r.seed = 1;
  EXPECT_NE(explorer_make_data(r).x, a.x);
  r.function = "sinusoids";  // seed 002: evenly spaced on [0, 1]
  r.n = 50;
  r.noise = 0;
  const auto s = explorer_make_data(r);
  EXPECT_DOUBLE_EQ(s.x[49], 1.0);
  EXPECT_NEAR(s.x[1] - s.x[0], 1.0 / 49, 1e-15);
  EXPECT_NEAR(
      s.y[10],
      std::sin(2 * std::numbers::pi * s.x[10]) + 0.5 * std::sin(6 * std::numbers::pi * s.x[10]),
      1e-15);
}

TEST(Explorer, NwCurveIsTheRegressionFit) {
  explorer_request r;
  r.kernel = "epanechnikov";
  r.bandwidth = 0.8;
  const auto res = explorer_compute(r);
  regression_spec spec;
  spec.kernel = kernel_epanechnikov{};
  spec.bandwidth = {0.8};
  matrix<double> x(40, 1), g(200, 1);
  for (index i = 0; i < 40; ++i) x(i, 0) = res.data.x[std::size_t(i)];
  for (index i = 0; i < 200; ++i) g(i, 0) = res.data.grid[std::size_t(i)];
  const auto ev = regression_evaluate(spec, x.cview(), res.data.y, g.cview(), false);
  for (std::size_t i = 0; i < 200; ++i) {
    if (ev.defined[i]) {
      EXPECT_NEAR(res.nw[i], ev.fit[i], 1e-12) << i;
    } else {
      EXPECT_TRUE(std::isnan(res.nw[i])) << i;  // undefined: no point within the support
    }
  }
  EXPECT_GT(res.bandwidth_loo, 0);
  EXPECT_EQ(res.heat_rows, 60);
  EXPECT_EQ(res.heat_nw.cols(), 40);
}

TEST(Explorer, AttentionIsAStationaryKernelOfTheDistance) {
  explorer_request r;
  r.function = "sin";
  r.n = 30;
  r.temperature = 0.05;
  const auto d = explorer_make_data(r);
  const auto p = explorer_point_profile(r, 12);
  const double w1 = std::numbers::pi / 2, w2 = std::numbers::pi;  // R = 1
  double z = 0;
  std::vector<double> want(30);
  for (std::size_t j = 0; j < 30; ++j) {
    const double dd = d.x[12] - d.x[j];
    want[j] = std::exp((std::cos(w1 * dd) + std::cos(w2 * dd)) / r.temperature);
    z += want[j];
  }
  double s_att = 0, s_nw = 0;
  for (std::size_t j = 0; j < 30; ++j) {
    EXPECT_NEAR(p.attention[j], want[j] / z, 1e-12) << j;
    s_att += p.attention[j];
    s_nw += p.nw[j];
  }
  EXPECT_NEAR(s_att, 1.0, 1e-12);
  EXPECT_NEAR(s_nw, 1.0, 1e-12);
  // Equivalent bandwidth: curvature of the exponent at d = 0.
  EXPECT_NEAR(explorer_equivalent_bandwidth(0.05, 0, 1), std::sqrt(0.05 / (w1 * w1 + w2 * w2)),
              1e-15);
  EXPECT_THROW(explorer_point_profile(r, 30), std::out_of_range);
}

TEST(Explorer, RangeChecksNameTheParameter) {
  auto bad = [](auto edit, const std::string& word) {
    explorer_request r;
    edit(r);
    try {
      explorer_validate(r);
      ADD_FAILURE() << "accepted: " << word;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  };
  bad([](auto& r) { r.n = 1; }, "n:");
  bad([](auto& r) { r.n = 2001; }, "n:");
  bad([](auto& r) { r.bandwidth = 0; }, "bandwidth");
  bad([](auto& r) { r.bandwidth = NAN; }, "bandwidth");
  bad([](auto& r) { r.temperature = -1; }, "temperature");
  bad([](auto& r) { r.noise = 11; }, "noise");
  bad([](auto& r) { r.grid = 5; }, "grid");
  bad([](auto& r) { r.function = "cosh"; }, "function");
  bad([](auto& r) { r.kernel = "exp_dot"; }, "distance kernel");
  bad([](auto& r) { r.kernel = "nope"; }, "kernel");
}

}  // namespace
}  // namespace kf
