// Holt–Winters (model/holt_winters.hpp): the recursions against a hand computation, forecasts of
// noise-free series with additive and multiplicative seasons within a stated error, and the
// errors for series too short or not positive. The transforms of the sequence regressor
// (level_inputs, input_log) round-trip exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "kernelformer/model/holt_winters.hpp"
#include "kernelformer/model/periodic_experiment.hpp"
#include "kernelformer/model/sequence_regressor.hpp"

namespace kf::model {
namespace {

TEST(HoltWinters, RecursionsAgainstHandComputation) {
  holt_winters h;
  h.season = hw_season::additive;
  h.period = 2;
  h.alpha = 0.5, h.beta = 0.2, h.gamma = 0.1;
  h.level = 10, h.trend = 1;
  h.seasonal = {2, -2};
  EXPECT_DOUBLE_EQ(h.predict_next(), 13);    // 10 + 1 + 2
  h.update(15);                              // e = 2
  EXPECT_DOUBLE_EQ(h.level, 12);             // 11 + 0.5·2
  EXPECT_DOUBLE_EQ(h.trend, 1.2);            // 1 + 0.5·0.2·2
  EXPECT_DOUBLE_EQ(h.seasonal[0], 2.2);      // 2 + 0.1·2
  EXPECT_DOUBLE_EQ(h.predict_next(), 11.2);  // 12 + 1.2 − 2
  const auto f = h.forecast(3);
  EXPECT_DOUBLE_EQ(f[0], 11.2);
  EXPECT_DOUBLE_EQ(f[1], 12 + 2 * 1.2 + 2.2);
  EXPECT_DOUBLE_EQ(f[2], 12 + 3 * 1.2 - 2);
  h.season = hw_season::multiplicative;
  h.seasonal = {1.5, 0.5};
  h.head = 0;
  EXPECT_DOUBLE_EQ(h.predict_next(), (12 + 1.2) * 1.5);
}

std::vector<double> series(bool multiplicative, int n) {
  std::vector<double> y;
  for (int t = 0; t < n; ++t) {
    const double s = std::sin(2 * std::numbers::pi * t / 12);
    y.push_back(multiplicative ? (100 + 2 * t) * (1 + 0.3 * s) : 100 + 2 * t + 20 * s);
  }
  return y;
}

TEST(HoltWinters, NoiseFreeSeriesForecastWithinOnePercent) {
  for (const auto kind : {hw_season::additive, hw_season::multiplicative}) {
    SCOPED_TRACE(hw_season_name(kind));
    const auto all = series(kind == hw_season::multiplicative, 144);
    const std::vector<double> known(all.begin(), all.end() - 24);
    const auto h = holt_winters_fit(known, kind, 12);
    const auto f = h.forecast(24);
    for (int k = 0; k < 24; ++k)
      EXPECT_NEAR(f[std::size_t(k)], all[std::size_t(120 + k)], 0.01 * all[std::size_t(120 + k)])
          << "step " << k + 1;
    EXPECT_GT(h.alpha, 0);
    EXPECT_LT(h.alpha, 1);
  }
  const std::vector<double> line = {1, 2, 3, 4, 5, 6, 7, 8};
  const auto h = holt_winters_fit(line, hw_season::none, 0);
  EXPECT_NEAR(h.forecast(2)[1], 10, 1e-6);
}

// The fitted start (level, trend and seasons by least squares for each α, β, γ) fits at least as
// well as the classical one, and an exactly additive series (no noise) to rounding.
TEST(HoltWinters, FittedStartFitsAtLeastAsWellAsTheClassical) {
  for (const auto kind : {hw_season::additive, hw_season::multiplicative}) {
    SCOPED_TRACE(hw_season_name(kind));
    auto y = series(kind == hw_season::multiplicative, 96);
    for (std::size_t t = 0; t < y.size(); ++t) y[t] += 3 * std::sin(0.7 * double(t * t));  // noise
    const auto fitted = holt_winters_fit(y, kind, 12, hw_start::fitted);
    const auto classical = holt_winters_fit(y, kind, 12, hw_start::classical);
    EXPECT_LE(fitted.sse, classical.sse * (1 + 1e-9));
  }
  const auto exact = holt_winters_fit(series(false, 96), hw_season::additive, 12);
  EXPECT_LT(exact.sse, 1e-12 * 96 * 100 * 100);
}

TEST(HoltWinters, ErrorsSayWhatIsMissing) {
  const std::vector<double> short_series(20, 1.0);
  try {
    holt_winters_fit(short_series, hw_season::additive, 12);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs at least 26"), std::string::npos) << e.what();
  }
  auto y = series(true, 60);
  y[5] = -1;
  EXPECT_THROW(holt_winters_fit(y, hw_season::multiplicative, 12), std::invalid_argument);
}

// level_inputs: f(x + c) = f(x) + c for a constant c (the window's level is put back exactly);
// input_log: the model on raw windows equals exp of the same weights on log windows.
TEST(SeriesTransforms, LevelAndLogRoundTrip) {
  regressor_config c = periodic_config("quick");
  c.seq_len = 12;
  c.block.dropout = 0;
  c.level_inputs = true;
  sequence_regressor<double> m(c, 3);
  matrix<double> x(2, 12);
  for (index j = 0; j < 12; ++j) x(0, j) = std::sin(0.5 * double(j)), x(1, j) = x(0, j) + 7.25;
  std::vector<double> p(2);
  m.forward(x.cview(), p, nullptr);
  EXPECT_NEAR(p[1], p[0] + 7.25, 1e-12);
  regressor_config c2 = c;
  c2.level_inputs = false;
  sequence_regressor<double> plain(c2, 3), logged(c2, 3);
  logged.set_input_normalization(0, 1, true);
  matrix<double> raw(1, 12), lx(1, 12);
  for (index j = 0; j < 12; ++j)
    raw(0, j) = 2 + std::cos(double(j)), lx(0, j) = std::log(raw(0, j));
  double a = 0, b = 0;
  plain.forward(lx.cview(), std::span<double>(&a, 1), nullptr);
  logged.forward(raw.cview(), std::span<double>(&b, 1), nullptr);
  EXPECT_NEAR(b, std::exp(a), 1e-12 * std::exp(a));
}

}  // namespace
}  // namespace kf::model
