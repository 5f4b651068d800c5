// The explorer's computations: deterministic data (seed 001's 40 points exactly), NW curve = the
// regression module's fit with the kernel's own parameters, identity attention on positional
// encodings = a stationary kernel exp((cos ω1 d + cos ω2 d) / T), heatmap columns that sum their
// runs of points, profiles that sum to one, range checks that name the parameter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "kernelformer/explore/explorer.hpp"
#include "kernelformer/explore/explorer_head.hpp"
#include "kernelformer/explore/seed001_data.hpp"
#include "kernelformer/masks.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/smooth.hpp"

namespace kf {
namespace {

matrix<double> column(const std::vector<double>& v) {
  return matrix<double>(static_cast<index>(v.size()), 1, v);
}

TEST(Explorer, DataIsDeterministicSortedAndSized) {
  explorer_request r;
  r.function = "seed001";
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

TEST(Explorer, Seed001NumpyIsTheSeedsFortyPointsWhateverNNoiseAndSeed) {
  explorer_request r;
  r.function = "seed001_numpy";
  r.n = 7, r.noise = 3, r.seed = 9;  // ignored by a fixed data set
  const auto d = explorer_make_data(r);
  ASSERT_EQ(d.x.size(), 40u);
  EXPECT_TRUE(std::is_sorted(d.x.begin(), d.x.end()));
  for (std::size_t i = 0; i < 40; ++i) {
    const auto it = std::find(demo::seed001_x.begin(), demo::seed001_x.end(), d.x[i]);
    ASSERT_NE(it, demo::seed001_x.end()) << i;
    EXPECT_EQ(d.y[i], demo::seed001_y[std::size_t(it - demo::seed001_x.begin())]) << i;
  }
  r.n = 5000;  // out of range for drawn data, fine for a fixed set
  EXPECT_NO_THROW(explorer_validate(r));
}

TEST(Explorer, NwCurveIsTheRegressionFitWithTheKernelsParameters) {
  for (const char* kernel : {"epanechnikov", "periodic:period=2.5", "rational_quadratic:alpha=3"}) {
    explorer_request r;
    r.kernel = kernel;
    r.bandwidth = 0.8;
    const auto res = explorer_compute(r, explorer_make_head(r));
    regression_spec spec;
    spec.kernel = kernel_parse(kernel).first;
    spec.bandwidth = {0.8};
    const auto ev = regression_evaluate(spec, column(res.data.x).cview(), res.data.y,
                                        column(res.data.grid).cview(), false);
    for (std::size_t i = 0; i < 200; ++i) {
      if (ev.defined[i]) {
        EXPECT_NEAR(res.nw[i], ev.fit[i], 1e-12) << kernel << " " << i;
      } else {
        EXPECT_TRUE(std::isnan(res.nw[i])) << i;  // undefined: no point within the support
      }
    }
  }
  explorer_request r;
  r.kernel = "periodic:period=2.5";
  EXPECT_DOUBLE_EQ(std::get<kernel_periodic>(explorer_nw_kernel(r).first).period, 2.5);
  EXPECT_GT(explorer_loo_bandwidth(r), 0);
}

TEST(Explorer, IdentityAttentionIsAStationaryKernelOfTheDistance) {
  explorer_request r;
  r.function = "sin";
  r.n = 30;
  r.temperature = 0.05;
  const auto d = explorer_make_data(r);
  const auto p = explorer_point_profile(r, explorer_make_head(r), d, 12);
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
  EXPECT_THROW(explorer_point_profile(r, explorer_make_head(r), d, 30), std::out_of_range);
}

TEST(Explorer, HeatmapColumnsSumTheWeightsOfTheirRunsOfPoints) {
  for (index n : {40, 500}) {  // one point per column; runs of ⌈500/120⌉ = 5
    explorer_request r;
    r.function = "seed001";
    r.n = n;
    r.attention = "random";
    const auto head = explorer_make_head(r);
    const auto res = explorer_compute(r, head);
    const auto& first = res.heat_col_first;
    ASSERT_EQ(first.back(), n);
    EXPECT_EQ(static_cast<index>(first.size()) - 1, n == 40 ? 40 : 100);
    ASSERT_EQ(res.heat_x.size(), 60u);
    // Row 17 by hand from smooth_weights over all n points.
    const std::vector<index> row = {17 * 199 / 59};
    matrix<double> w(1, n);
    smooth_weights<double>(w.view(), row, column(res.data.grid).cview(), column(res.data.x).cview(),
                           explorer_nw_kernel(r), mask::none());
    double total = 0;
    for (std::size_t c = 0; c + 1 < first.size(); ++c) {
      double s = 0;
      for (index j = first[c]; j < first[c + 1]; ++j) s += w(0, j);
      EXPECT_NEAR(res.heat_nw(17, index(c)), s, 1e-12) << n << " " << c;
      total += res.heat_attention(17, index(c));
    }
    EXPECT_NEAR(total, 1.0, 1e-12);
  }
}

TEST(Explorer, NearestPointPicksByX) {
  explorer_data d;
  d.x = {0.0, 1.0, 2.0, 4.0};
  EXPECT_EQ(explorer_nearest_point(d, -3), 0);
  EXPECT_EQ(explorer_nearest_point(d, 0.5), 0);  // a tie: the lower index
  EXPECT_EQ(explorer_nearest_point(d, 0.6), 1);
  EXPECT_EQ(explorer_nearest_point(d, 3.1), 3);
  EXPECT_EQ(explorer_nearest_point(d, 9), 3);
}

TEST(Explorer, RangeChecksNameTheParameter) {
  auto bad = [](auto edit, const std::string& word) {
    explorer_request r;
    r.function = "seed001";
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
  bad([](auto& r) { r.kernel = "periodic:period=500"; }, "period = 500");
  bad([](auto& r) { r.attention = "trained"; }, "attention: unknown mode");
  bad([](auto& r) { r.attention_kernel = "gaussian"; }, "attention_kernel");
  bad([](auto& r) { r.attention_kernel = "polynomial:degree=12"; }, "degree = 12");
}

}  // namespace
}  // namespace kf
