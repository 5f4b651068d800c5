// The generic forecasting pieces (model/forecast.hpp, model/regressor_train.hpp) against hand
// computations and brute force: windows, rollout and teacher forcing, the seasonal-naive
// baseline, period detection, the NW forecaster and its LOO-CV bandwidth, early stopping.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "kernelformer/model/forecast.hpp"
#include "kernelformer/model/regressor_train.hpp"
#include "test_util.hpp"

namespace kf::model {
namespace {

TEST(Forecast, WindowsHoldTheValuesBeforeEachTarget) {
  std::vector<double> s;
  for (int t = 0; t < 10; ++t) s.push_back(t * t);
  const auto w = series_windows_make(s, 3, 4, 8);  // targets t = 4 … 7
  ASSERT_EQ(w.x.rows(), 4);
  ASSERT_EQ(w.x.cols(), 3);
  for (index i = 0; i < 4; ++i) {
    const index t = 4 + i;
    EXPECT_EQ(w.y[std::size_t(i)], float(t * t));
    for (index j = 0; j < 3; ++j) EXPECT_EQ(w.x(i, j), float((t - 3 + j) * (t - 3 + j)));
  }
  EXPECT_EQ(series_windows_make(s, 3, 5, 5).x.rows(), 0);
  EXPECT_THROW(series_windows_make(s, 3, 2, 5), std::invalid_argument);  // first < window
  EXPECT_THROW(series_windows_make(s, 3, 4, 11), std::invalid_argument);
}

TEST(Forecast, RolloutFeedsPredictionsBackTeacherForcingDoesNot) {
  const std::vector<double> context = {5, 6, 7, 8, 9}, truth = {1, 2, 3, 4};
  // The mean of the last 3 values, computed by hand below.
  const window_predictor mean3 = [](const std::vector<double>& w) {
    EXPECT_EQ(w.size(), 3u);
    return (w[0] + w[1] + w[2]) / 3;
  };
  const auto fc = forecast_run(context, truth, 3, mean3);
  std::vector<double> roll = {7, 8, 9}, known = {7, 8, 9, 1, 2, 3, 4};
  double mse_r = 0, mse_t = 0;
  for (std::size_t s = 0; s < 4; ++s) {
    const double p = (roll[s] + roll[s + 1] + roll[s + 2]) / 3;
    roll.push_back(p);
    const double tf = (known[s] + known[s + 1] + known[s + 2]) / 3;
    EXPECT_DOUBLE_EQ(fc.rollout[s], p);
    EXPECT_DOUBLE_EQ(fc.teacher_forced[s], tf);
    mse_r += (p - truth[s]) * (p - truth[s]) / 4;
    mse_t += (tf - truth[s]) * (tf - truth[s]) / 4;
  }
  EXPECT_NEAR(fc.mse_rollout, mse_r, 1e-12);
  EXPECT_NEAR(fc.mse_teacher_forced, mse_t, 1e-12);
  const auto fut = forecast_rollout(context, 4, 3, mean3);
  EXPECT_EQ(fut, fc.rollout);  // the rollout does not look at the truth
  const auto e = forecast_score(fc.rollout, truth);
  EXPECT_NEAR(e.mse, mse_r, 1e-12);
  EXPECT_NEAR(e.rmse, std::sqrt(mse_r), 1e-12);
  EXPECT_THROW(forecast_run(context, truth, 6, mean3), std::invalid_argument);
}

TEST(Forecast, SeasonalNaiveRepeatsTheLastPeriod) {
  // Period 4; the known part ends …, 10, 20, 30, 40; the truth continues differently.
  const std::vector<double> context = {1, 2, 3, 4, 10, 20, 30, 40};
  const std::vector<double> truth = {11, 21, 31, 41, 12, 22};
  const auto fc = forecast_run(context, truth, 6, seasonal_naive_predictor(4));
  // Rollout: ŷ_{T+h} = y_{T+h−4k}: the last period again and again.
  const std::vector<double> roll = {10, 20, 30, 40, 10, 20};
  // Teacher-forced: ŷ_t = y_{t−4}, the true value one period back.
  const std::vector<double> tf = {10, 20, 30, 40, 11, 21};
  EXPECT_EQ(fc.rollout, roll);
  EXPECT_EQ(fc.teacher_forced, tf);
  EXPECT_THROW(forecast_run(context, truth, 3, seasonal_naive_predictor(4)), std::invalid_argument);
}

std::vector<double> noisy_seasonal(index n, double period, double noise, double trend,
                                   std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, noise);
  std::vector<double> s;
  for (index t = 0; t < n; ++t)
    s.push_back(50 + trend * double(t) + 10 * std::sin(2 * std::numbers::pi * double(t) / period) +
                g(rng));
  return s;
}

TEST(Forecast, PeriodDetectedOnANoisySinusoidWithATrend) {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    // Monthly-like: 20 years, noise of half the amplitude, a trend of 24 amplitudes over the span.
    const auto s = noisy_seasonal(240, 12, 5, 1.0, seed);
    const auto p = series_period_detect(s, 60);
    EXPECT_EQ(p.period, 12) << "seed " << seed;
    EXPECT_GT(p.acf, 0.3);
    ASSERT_EQ(p.acf_curve.size(), 61u);
    EXPECT_DOUBLE_EQ(p.acf_curve[0], 1.0);
  }
  // A non-integer period lands on a neighbouring integer.
  const auto p = series_period_detect(noisy_seasonal(400, 17.5, 2, 0, 4), 40);
  EXPECT_GE(p.period, 17);
  EXPECT_LE(p.period, 18);
  // White noise: no peak clears 3/√n, no period.
  for (std::uint64_t seed : {5u, 6u, 7u}) {
    std::vector<double> noise(300);
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g;
    for (double& v : noise) v = g(rng);
    EXPECT_EQ(series_period_detect(noise, 60).period, 1) << "seed " << seed;
  }
  // The autocorrelation against its formula at one lag (after removing the line).
  const std::vector<double> y = {1, 3, 2, 5, 4, 6, 5, 8};
  const auto q = series_period_detect(y, 3);
  double tm = 3.5, ym = 0;
  for (double v : y) ym += v / 8;
  double stt = 0, sty = 0;
  for (int t = 0; t < 8; ++t) stt += (t - tm) * (t - tm), sty += (t - tm) * (y[t] - ym);
  std::vector<double> r;
  for (int t = 0; t < 8; ++t) r.push_back(y[t] - ym - sty / stt * (t - tm));
  double c0 = 0, c2 = 0;
  for (int t = 0; t < 8; ++t) c0 += r[t] * r[t];
  for (int t = 0; t + 2 < 8; ++t) c2 += r[t] * r[t + 2];
  EXPECT_NEAR(q.acf_curve[2], c2 / c0, 1e-12);
  EXPECT_THROW(series_period_detect(y, 8), std::invalid_argument);
}

// Brute force NW: Σ_j exp(−|q − k_j|²/(2h²)) v_j / Σ_j exp(…), in double.
double nw_brute(const matrix<double>& keys, const std::vector<double>& values,
                const std::vector<double>& q, double h) {
  double num = 0, den = 0;
  for (index j = 0; j < keys.rows(); ++j) {
    double d2 = 0;
    for (index c = 0; c < keys.cols(); ++c)
      d2 += (q[std::size_t(c)] - keys(j, c)) * (q[std::size_t(c)] - keys(j, c));
    const double w = std::exp(-d2 / (2 * h * h));
    num += w * values[std::size_t(j)];
    den += w;
  }
  return num / den;
}

TEST(Forecast, NadarayaWatsonForecasterAgainstBruteForce) {
  // Windows of a noisy sinusoid.
  const auto s = noisy_seasonal(80, 12, 1, 0, 9);
  std::vector<double> z;
  for (double v : s) z.push_back((v - 50) / 10);
  const auto w = series_windows_make(z, 6, 6, 80);
  for (bool scaled : {false, true}) {
    SCOPED_TRACE(scaled ? "scaled" : "plain");
    const auto f = nw_forecaster_fit(w.x, w.y, scaled);
    ASSERT_GT(f.bandwidth, 0);
    // The keys and values as the fit made them.
    matrix<double> keys(w.x.rows(), 6);
    std::vector<double> values;
    for (index i = 0; i < w.x.rows(); ++i) {
      double ss = 0;
      for (index j = 0; j < 6; ++j) ss += double(w.x(i, j)) * double(w.x(i, j));
      const double rms = scaled ? std::sqrt(ss / 6) : 1.0;
      for (index j = 0; j < 6; ++j) keys(i, j) = double(w.x(i, j)) / rms;
      values.push_back(double(w.y[std::size_t(i)]) / rms);
    }
    // Predictions at a few windows.
    for (index i : {0, 17, 73}) {
      std::vector<double> q(z.begin() + i, z.begin() + i + 6);
      double ss = 0;
      for (double v : q) ss += v * v;
      const double rms = scaled ? std::sqrt(ss / 6) : 1.0;
      std::vector<double> qs = q;
      for (double& v : qs) v /= rms;
      EXPECT_NEAR(f.predict(q), rms * nw_brute(keys, values, qs, f.bandwidth), 1e-10);
    }
    // The LOO-CV criterion by brute force: its value at the chosen h, and h a local minimum.
    auto loo = [&](double h) {
      double sse = 0;
      for (index i = 0; i < keys.rows(); ++i) {
        double num = 0, den = 0;
        for (index j = 0; j < keys.rows(); ++j) {
          if (j == i) continue;
          double d2 = 0;
          for (index c = 0; c < 6; ++c) d2 += (keys(i, c) - keys(j, c)) * (keys(i, c) - keys(j, c));
          const double wt = std::exp(-d2 / (2 * h * h));
          num += wt * values[std::size_t(j)];
          den += wt;
        }
        sse += std::pow(values[std::size_t(i)] - num / den, 2);
      }
      return sse / double(keys.rows());
    };
    EXPECT_NEAR(f.loo_cv, loo(f.bandwidth), 1e-9 * loo(f.bandwidth));
    EXPECT_LE(loo(f.bandwidth), loo(f.bandwidth * 1.05) * (1 + 1e-9));
    EXPECT_LE(loo(f.bandwidth), loo(f.bandwidth / 1.05) * (1 + 1e-9));
  }
}

regressor_config tiny_config(index window) {
  regressor_config c;
  c.seq_len = window;
  c.layers = 1;
  c.block.d_model = 8;
  c.block.heads = 2;
  c.block.d_ff = 16;
  c.block.dropout = 0;
  return c;
}

TEST(Forecast, EarlyStoppingKeepsTheBestEpochsWeights) {
  // Training windows of a sinusoid; validation targets that are noise, so the validation loss
  // stops improving soon and patience runs out.
  const auto s = noisy_seasonal(200, 12, 0.1, 0, 3);
  std::vector<double> z;
  for (double v : s) z.push_back((v - 50) / 10);
  const auto tr = series_windows_make(z, 8, 8, 200);
  auto val = series_windows_make(z, 8, 8, 40);
  std::mt19937_64 rng(1);
  std::normal_distribution<float> g;
  for (float& v : val.y) v = g(rng);
  sequence_regressor<float> m(tiny_config(8), 2);
  train_options o;
  o.epochs = 200;
  o.batch = 32;
  o.lr = 3e-3;
  o.validation_x = &val.x;
  o.validation_y = &val.y;
  o.patience = 3;
  index calls = 0;
  o.on_validation = [&](index, double, index) { ++calls; };
  const auto r = train_regressor(m, tr.x, tr.y, o);
  ASSERT_EQ(r.validation_loss.size(), r.epoch_loss.size());
  EXPECT_EQ(calls, index(r.epoch_loss.size()));
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(index(r.epoch_loss.size()), r.best_epoch + 3);
  const auto best = std::min_element(r.validation_loss.begin(), r.validation_loss.end());
  EXPECT_EQ(r.best_epoch, index(best - r.validation_loss.begin()) + 1);
  // The weights are the best epoch's: the validation MSE now is the one recorded then.
  EXPECT_EQ(regressor_mse(m, val.x, val.y), *best);
  // Not with resume or save_every; mismatched validation data.
  o.save_every = 1;
  EXPECT_THROW(train_regressor(m, tr.x, tr.y, o), std::invalid_argument);
  o.save_every = 0;
  const auto narrow = series_windows_make(z, 6, 6, 40);
  o.validation_x = &narrow.x;
  EXPECT_THROW(train_regressor(m, tr.x, tr.y, o), std::invalid_argument);
}

TEST(Forecast, DivergedTrainingIsAnError) {
  const auto s = noisy_seasonal(100, 12, 0.1, 0, 3);
  const auto tr = series_windows_make(s, 8, 8, 100);  // raw values around 50, lr absurd
  sequence_regressor<float> m(tiny_config(8), 2);
  train_options o;
  o.epochs = 50;
  o.batch = 16;
  o.lr = 1e30;
  try {
    train_regressor(m, tr.x, tr.y, o);
    FAIL() << "expected the training to diverge";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("diverged"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kf::model
