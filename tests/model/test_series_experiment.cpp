// A user's series (model/series_experiment.hpp): irregular or missing time steps, fills and
// resampling against hand computations; the split and the standardization on a hand-made
// series; and a short noisy monthly-like series (20 years) where the transformer, trained in a
// few seconds with early stopping, beats the mean predictor.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "kernelformer/model/periodic_experiment.hpp"
#include "kernelformer/model/series_experiment.hpp"

namespace kf::model {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Series, IrregularOrMissingStepsAreErrorsNamingTheRow) {
  series_regular_options o;
  // Rows 1–5 at t = 0, 1, 2, 4, 5: the step into row 4 is 2.
  auto e = error_of([&] { series_regularize({0, 1, 2, 4, 5}, {1, 2, 3, 4, 5}, o); });
  EXPECT_NE(e.find("row 4: time 4 comes 2 after the row before"), std::string::npos) << e;
  e = error_of([&] { series_regularize({0, 1, 1, 2}, {1, 2, 3, 4}, o); });
  EXPECT_NE(e.find("row 3: time 1 does not increase"), std::string::npos) << e;
  o.hint_missing = " (fill it)";
  e = error_of([&] { series_regularize({}, {1, 2, kNaN, 4}, o); });
  EXPECT_EQ(e, "row 3: the value is missing (fill it)");
  o.row_name = [](index i) { return "line " + std::to_string(i + 2); };
  e = error_of([&] { series_regularize({}, {1, kNaN}, o); });
  EXPECT_EQ(e, "line 3: the value is missing (fill it)");
  // Rounded times (decimal years, 3 digits) are regular within 2% of the step.
  const auto s = series_regularize({1949.0, 1949.083, 1949.167, 1949.25}, {1, 2, 3, 4}, {});
  EXPECT_NEAR(s.step, 0.25 / 3, 1e-12);
}

TEST(Series, FillsAndResamplingAgainstHandComputation) {
  series_regular_options o;
  o.fill = series_fill::linear;
  // Interior gaps interpolated in time, the missing ends dropped.
  auto s = series_regularize({0, 1, 2, 3, 4, 5, 6}, {kNaN, 1, kNaN, kNaN, 7, 9, kNaN}, o);
  EXPECT_EQ(s.values, (std::vector<double>{1, 3, 5, 7, 9}));  // the ends dropped
  EXPECT_EQ(s.time, (std::vector<double>{1, 2, 3, 4, 5}));
  EXPECT_EQ(s.filled, 2);
  EXPECT_EQ(s.trimmed, 2);
  o.fill = series_fill::previous;
  s = series_regularize({}, {4, kNaN, kNaN, 2}, o);
  EXPECT_EQ(s.values, (std::vector<double>{4, 4, 4, 2}));
  EXPECT_EQ(s.time, (std::vector<double>{0, 1, 2, 3}));
  // Resampling: (0, 0), (1, 10), (4, 40), (4.5, 0) onto a step of 1.5 → t = 0, 1.5, 3, 4.5.
  o.fill = series_fill::error;
  o.resample = 1.5;
  s = series_regularize({0, 1, 4, 4.5}, {0, 10, 40, 0}, o);
  EXPECT_TRUE(s.resampled);
  EXPECT_EQ(s.time, (std::vector<double>{0, 1.5, 3, 4.5}));
  ASSERT_EQ(s.values.size(), 4u);
  EXPECT_NEAR(s.values[1], 15, 1e-12);
  EXPECT_NEAR(s.values[2], 30, 1e-12);
  EXPECT_NEAR(s.values[3], 0, 1e-12);
  o.resample = 1;
  EXPECT_NE(error_of([&] {
              series_regularize({}, {1, 2}, o);
            }).find("needs a time column"),
            std::string::npos);
}

TEST(Series, SplitAndStandardizationOnAHandMadeSeries) {
  regular_series r;
  for (int t = 0; t < 100; ++t) r.values.push_back(double(t % 5) + 0.1 * t), r.time.push_back(t);
  series_spec spec;
  spec.window = 8;
  spec.horizon = 10;
  const auto d = series_make(r, spec);
  // Known: 90 values, 82 targets; validation tail round(0.2·82) = 16; training targets [8, 74).
  EXPECT_EQ(d.known, 90);
  EXPECT_EQ(d.train_end, 74);
  EXPECT_EQ(d.train.x.rows(), 66);
  EXPECT_EQ(d.validation.x.rows(), 8);  // the tail's first half; the second is the backtest's
  EXPECT_EQ(d.backtest_from, 82);
  double mean = 0, ss = 0;
  for (int t = 0; t < 74; ++t) mean += r.values[std::size_t(t)] / 74;
  for (int t = 0; t < 74; ++t) ss += std::pow(r.values[std::size_t(t)] - mean, 2);
  EXPECT_NEAR(d.shift, mean, 1e-12);
  EXPECT_NEAR(d.scale, std::sqrt(ss / 74), 1e-12);
  // Row 0 of the training windows: the standardized values 0 … 7, target value 8.
  EXPECT_FLOAT_EQ(d.train.x(0, 3), float((r.values[3] - mean) / d.scale));
  EXPECT_FLOAT_EQ(d.train.y[0], float((r.values[8] - mean) / d.scale));
  EXPECT_FLOAT_EQ(d.validation.y[0], float((r.values[74] - mean) / d.scale));
  EXPECT_EQ(d.period.period, 5);  // detected
  // Defaults: horizon 20 (20%), window min(99, 80/4) = 20.
  const auto dd = series_make(r, {});
  EXPECT_EQ(dd.horizon, 20);
  EXPECT_EQ(dd.window, 20);
  spec.test_fraction = 0.3;
  spec.horizon = 0;
  EXPECT_EQ(series_make(r, spec).horizon, 30);
  // Too short, constant, a period beyond the window.
  spec = {};
  spec.window = 45;
  spec.horizon = 50;
  auto e = error_of([&] { series_make(r, spec); });
  EXPECT_NE(e.find("the series has 100 values"), std::string::npos) << e;
  EXPECT_NE(e.find("at least 8 are needed"), std::string::npos) << e;
  regular_series flat;
  flat.values.assign(50, 3.0);
  EXPECT_NE(error_of([&] { series_make(flat, {}); }).find("constant"), std::string::npos);
  spec = {};
  spec.window = 8;
  spec.period = 9;
  EXPECT_NE(error_of([&] { series_make(r, spec); }).find("longer than the window"),
            std::string::npos);
}

// Monthly-like: 240 values, level 100, a trend, a yearly season with a second harmonic, noise
// of a third of the season's amplitude.
regular_series monthly(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 3.0);
  regular_series r;
  for (int t = 0; t < 240; ++t) {
    const double a = 2 * std::numbers::pi * t / 12;
    r.time.push_back(t);
    r.values.push_back(100 + 0.05 * t + 10 * std::sin(a) + 4 * std::cos(2 * a) + g(rng));
  }
  return r;
}

TEST(Series, ShortNoisyMonthlySeriesBeatsTheMean) {
  series_spec spec;
  spec.window = 24;
  spec.horizon = 24;
  const auto d = series_make(monthly(1), spec);
  EXPECT_EQ(d.period.period, 12);
  regressor_config c = periodic_config("quick");
  c.seq_len = d.window;
  c.block.dropout = 0;
  c.level_inputs = d.level;  // the data's choice (series_make)
  sequence_regressor<float> m(c, 0);
  train_options o;
  o.epochs = 60;
  o.batch = 32;
  o.lr = 3e-3;
  o.patience = 10;
  const auto tr = series_train(d, m, o);
  EXPECT_GE(tr.best_epoch, 1);
  EXPECT_TRUE(m.config().normalizes());
  const auto r = series_evaluate(d, m, 12);
  // the five, and the combination when two of them are within 2× of the best backtest
  ASSERT_GE(r.forecasters.size(), 5u);
  ASSERT_LE(r.forecasters.size(), 6u);
  EXPECT_EQ(r.forecasters.size() == 6u, !r.combination_of.empty());
  for (const auto& f : r.forecasters) {
    SCOPED_TRACE(f.name);
    ASSERT_EQ(f.test.rollout.size(), 24u);
    ASSERT_EQ(f.future.size(), 12u);
    // Every forecaster beats the known part's mean, by rollout and one step ahead.
    EXPECT_LT(f.rollout.mse, 0.5 * r.mean.mse) << f.rollout.mse << " vs " << r.mean.mse;
    EXPECT_LT(f.teacher_forced.mse, 0.5 * r.mean.mse);
  }
  EXPECT_EQ(r.future_time.front(), 240);
  // The transformer's forecast on raw windows equals standardize → network → back.
  sequence_regressor<float> plain(c, 0);
  std::copy(m.params().values().begin(), m.params().values().end(),
            plain.params().values().begin());
  const auto& v = d.series.values;
  matrix<float> z(1, d.window);
  for (index j = 0; j < d.window; ++j)
    z(0, j) = float((v[std::size_t(d.known - d.window + j)] - d.shift) / d.scale);
  float p = 0;
  plain.forward(z.cview(), std::span<float>(&p, 1), nullptr);
  EXPECT_NEAR(r.forecasters[0].test.teacher_forced[0], d.shift + d.scale * p, 1e-4 * d.scale);
}

// Trend and multiplicative seasonality with known parts: y_t = (50 + 0.8 t)(1 + 0.25 sin(2πt/12))
// (1 + 1% noise), 192 months, the last 24 held out.
regular_series trend_multiplicative(std::uint64_t seed, double test_scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 0.01);
  regular_series r;
  for (int t = 0; t < 192; ++t) {
    const double y =
        (50 + 0.8 * t) * (1 + 0.25 * std::sin(2 * std::numbers::pi * t / 12)) * (1 + g(rng));
    r.time.push_back(t);
    r.values.push_back(t >= 168 ? y * test_scale : y);
  }
  return r;
}

sequence_regressor<float> untrained(const series_data& d) {
  regressor_config c = periodic_config("quick");
  c.seq_len = d.window;
  c.block.dropout = 0;
  c.level_inputs = d.level;
  sequence_regressor<float> m(c, 0);
  m.set_input_normalization(d.shift, d.scale, d.log);
  return m;
}

// The log and level choices fire on a trending multiplicative series (and are reported); the
// recommended forecaster is at least as good as Holt–Winters on the test part within a stated
// error (4% of the level), and its 95% band covers most of the test part.
TEST(SeriesChoices, TrendAndMultiplicativeSeasonality) {
  series_spec spec;
  spec.window = 24;
  spec.horizon = 24;
  const auto d = series_make(trend_multiplicative(3), spec);
  EXPECT_EQ(d.period.period, 12);
  EXPECT_TRUE(d.log) << d.log_why;
  EXPECT_NE(d.log_why.find("seasonal swing"), std::string::npos);
  EXPECT_TRUE(d.level) << d.level_why;
  auto m = untrained(d);
  const auto r = series_evaluate(d, m, 12, 10);
  ASSERT_GE(r.forecasters.size(), 5u);
  EXPECT_EQ(r.holt_winters_season, "multiplicative");
  EXPECT_NE(r.holt_winters.find("variants over"), std::string::npos) << r.holt_winters;
  const auto& rec = r.forecasters[std::size_t(r.recommended)];
  const auto& hw = r.forecasters[2];
  ASSERT_EQ(hw.name, "holt_winters");
  EXPECT_GE(rec.backtest.origins, 3);  // the full-horizon origins of the validation tail
  EXPECT_LE(rec.backtest.origins, 10);
  const double level = d.series.values.back();
  EXPECT_LT(rec.rollout.rmse, 0.04 * level) << rec.name;
  EXPECT_LT(hw.rollout.rmse, 0.04 * level);
  ASSERT_EQ(r.test_band.lo95.size(), 24u);
  EXPECT_GE(r.test_coverage95, 0.7);
  for (std::size_t k = 0; k < 24; ++k) {
    EXPECT_LE(r.test_band.lo95[k], r.test_band.lo80[k]);
    EXPECT_LE(r.test_band.lo80[k], rec.test.rollout[k]);
    EXPECT_LE(rec.test.rollout[k], r.test_band.hi80[k]);
  }
}

// The choices and the recommendation use no test data: changing only the test part (scaled by
// 3) changes no choice, no backtest score and not the recommendation.
TEST(SeriesChoices, TestPartDoesNotInfluenceTheChoices) {
  series_spec spec;
  spec.window = 24;
  spec.horizon = 24;
  const auto a = series_make(trend_multiplicative(5), spec);
  const auto b = series_make(trend_multiplicative(5, 3.0), spec);
  EXPECT_EQ(a.log, b.log);
  EXPECT_EQ(a.level, b.level);
  EXPECT_EQ(a.log_why, b.log_why);
  EXPECT_EQ(a.level_why, b.level_why);
  auto ma = untrained(a);
  auto mb = untrained(b);
  const auto ra = series_evaluate(a, ma, 0, 8);
  const auto rb = series_evaluate(b, mb, 0, 8);
  EXPECT_EQ(ra.recommended, rb.recommended);
  EXPECT_EQ(ra.recommended_why, rb.recommended_why);
  EXPECT_EQ(ra.holt_winters, rb.holt_winters);  // the variant, chosen on the known part
  EXPECT_EQ(ra.combination_of, rb.combination_of);
  ASSERT_EQ(ra.forecasters.size(), rb.forecasters.size());
  for (std::size_t i = 0; i < ra.forecasters.size(); ++i)
    EXPECT_EQ(ra.forecasters[i].backtest.mean_mse, rb.forecasters[i].backtest.mean_mse);
  EXPECT_NE(ra.forecasters[0].rollout.mse, rb.forecasters[0].rollout.mse);  // the test differs
}

// A stationary series keeps the global standardization and no log (a zero-mean season).
TEST(SeriesChoices, StationarySeriesKeepsTheDefaults) {
  series_spec spec;
  spec.window = 24;
  spec.horizon = 24;
  regular_series r;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g(0.0, 0.5);
  for (int t = 0; t < 240; ++t)
    r.time.push_back(t), r.values.push_back(10 * std::sin(2 * std::numbers::pi * t / 12) + g(rng));
  const auto d = series_make(r, spec);
  EXPECT_FALSE(d.log) << d.log_why;
  spec.level = 0;
  spec.log = 0;
  const auto forced = series_make(r, spec);
  EXPECT_FALSE(forced.level);
  EXPECT_NE(forced.level_why.find("--level"), std::string::npos);
}

}  // namespace
}  // namespace kf::model
