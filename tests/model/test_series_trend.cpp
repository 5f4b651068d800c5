// The kernel-trend forecaster (model/series_trend.hpp): a line plus a season is forecast to
// rounding, the season is centered, the bandwidth is as given or chosen, and bad input is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernelformer/model/series_trend.hpp"

namespace {

using kf::model::kernel_trend_fit;

std::vector<double> line_and_season(int n, double slope) {
  std::vector<double> y;
  for (int t = 0; t < n; ++t)
    y.push_back(10 + slope * t + 3 * std::sin(2 * std::numbers::pi * t / 12));
  return y;
}

TEST(KernelTrend, LinePlusSeasonForecastToRounding) {
  const auto all = line_and_season(120, 0.5);
  const std::vector<double> known(all.begin(), all.end() - 24);
  const auto k = kernel_trend_fit(known, 12, 24);
  EXPECT_EQ(k.bandwidth, 24);
  ASSERT_EQ(k.season.size(), 12u);
  double sum = 0;
  for (double s : k.season) sum += s;
  EXPECT_NEAR(sum, 0, 1e-9);
  EXPECT_NEAR(k.slope, 0.5, 1e-6);  // a local line reproduces a line exactly
  const auto f = k.forecast(24);
  for (std::size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], all[96 + i], 1e-6) << i;
}

TEST(KernelTrend, WithoutAPeriodItIsTheLocalLine) {
  std::vector<double> y;
  for (int t = 0; t < 40; ++t) y.push_back(2 - 0.25 * t);
  const auto k = kernel_trend_fit(y, 0);  // bandwidth by leave-one-out CV
  EXPECT_TRUE(k.season.empty());
  EXPECT_GT(k.bandwidth, 0);
  EXPECT_NEAR(k.level, 2 - 0.25 * 39, 1e-8);
  EXPECT_NEAR(k.forecast(4)[3], 2 - 0.25 * 43, 1e-7);
}

TEST(KernelTrend, RefusesShortOrNonFiniteSeries) {
  try {
    kernel_trend_fit(std::vector<double>(20, 1.0), 12);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs at least 24"), std::string::npos) << e.what();
  }
  auto y = line_and_season(48, 1);
  y[7] = std::nan("");
  EXPECT_THROW(kernel_trend_fit(y, 12), std::invalid_argument);
}

}  // namespace
