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
  // Known: 90 values, 82 targets; validation round(0.2·82) = 16; training targets [8, 74).
  EXPECT_EQ(d.known, 90);
  EXPECT_EQ(d.train_end, 74);
  EXPECT_EQ(d.train.x.rows(), 66);
  EXPECT_EQ(d.validation.x.rows(), 16);
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
  ASSERT_EQ(r.forecasters.size(), 3u);
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

}  // namespace
}  // namespace kf::model
