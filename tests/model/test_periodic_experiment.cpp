// Seed 003's protocol: the windowing, the test range, the rollout, the NW forecaster, and the
// quick configuration reaching a fixed MSE bound with a fixed seed (in seconds).
#include <gtest/gtest.h>

#include <cmath>

#include "kernelformer/model/periodic_experiment.hpp"

namespace kf::model {
namespace {

TEST(Periodic, DataFollowsTheProtocol) {
  const auto d = periodic_make(periodic_function::sin);
  EXPECT_EQ(d.train_x.rows(), 901);
  EXPECT_EQ(d.train_x.cols(), 99);
  EXPECT_FLOAT_EQ(d.train_x(0, 0), 0.0f);
  EXPECT_FLOAT_EQ(d.train_x(5, 3), static_cast<float>(std::sin(0.8)));
  EXPECT_FLOAT_EQ(d.train_y[900], static_cast<float>(std::sin(99.9)));
  ASSERT_EQ(d.test_x.size(), 200u);
  EXPECT_NEAR(d.test_x.front(), 100.0, 1e-12);
  EXPECT_NEAR(d.test_x.back(), 119.9, 1e-12);
  EXPECT_NEAR(d.context.front(), std::sin(90.1), 1e-12);
  EXPECT_NEAR(d.context.back(), std::sin(99.9), 1e-12);
  EXPECT_EQ(periodic_value(periodic_function::square, 0.0), 1.0);
  EXPECT_EQ(periodic_value(periodic_function::square, 3.2), -1.0);
  EXPECT_EQ(periodic_value(periodic_function::square, 6.3), 1.0);
  EXPECT_NEAR(periodic_value(periodic_function::sin_exp, 100.0), std::sin(100.0) * std::exp(1.0),
              1e-12);
}

TEST(Periodic, RolloutFeedsPredictionsBack) {
  const auto d = periodic_make(periodic_function::sin);
  // A predictor that returns the last value + 1: the rollout drifts by one per step while
  // teacher forcing stays at the truth + 1.
  const auto fc = periodic_forecast(d, [](const std::vector<double>& w) { return w.back() + 1.0; });
  EXPECT_NEAR(fc.rollout[0], d.context.back() + 1.0, 1e-12);
  EXPECT_NEAR(fc.rollout[9], d.context.back() + 10.0, 1e-12);
  EXPECT_NEAR(fc.teacher_forced[9], d.test_y[8] + 1.0, 1e-12);
}

TEST(Periodic, NadarayaWatsonForecasterOnSin) {
  const auto d = periodic_make(periodic_function::sin);
  const auto nw = nw_forecaster_fit(d);
  EXPECT_GT(nw.bandwidth, 0.0);
  const auto fc = periodic_forecast(d, [&](const std::vector<double>& w) { return nw.predict(w); });
  // The protocol's reference is ≈ 8e-7; a bound a few times that, not 1000× (issue 28).
  EXPECT_LT(fc.mse_rollout, 4e-6) << "rollout MSE " << fc.mse_rollout;
  EXPECT_GT(fc.mse_rollout, 0.0);
}

TEST(Periodic, RolloutValidatedBandwidthKeepsTheSquareWavesJumps) {
  // LOO-CV scores one-step errors and smooths the jumps; validating the bandwidth by rollout over
  // the training series' last 200 values (never the test range) picks a sharper one.
  const auto d = periodic_make(periodic_function::square);
  const auto loo = nw_forecaster_fit(d);
  const auto ro = nw_forecaster_fit(d, false, nw_bandwidth_rule::rollout);
  EXPECT_EQ(ro.rule, nw_bandwidth_rule::rollout);
  EXPECT_LT(ro.bandwidth, loo.bandwidth);
  EXPECT_GT(ro.bandwidth, 0.0);
  EXPECT_TRUE(std::isfinite(ro.validation_mse));
  auto mse = [&](const nw_forecaster& f) {
    return periodic_forecast(d, [&](const std::vector<double>& w) { return f.predict(w); })
        .mse_rollout;
  };
  const double a = mse(loo), b = mse(ro);
  EXPECT_NEAR(a, 0.0101, 0.0005);  // the protocol's NW reference: ≈ 0.010
  EXPECT_LT(b, 0.0090) << "measured 0.0074";
}

TEST(Periodic, ScaledWindowsFollowTheGrowingAmplitude) {
  // sin·exp leaves the training amplitude during the test range: the plain forecaster clips to
  // values it has seen; with RMS-scaled windows it follows the growth.
  const auto d = periodic_make(periodic_function::sin_exp);
  const auto plain = nw_forecaster_fit(d), scaled = nw_forecaster_fit(d, true);
  EXPECT_TRUE(scaled.scaled);
  auto mse = [&](const nw_forecaster& f) {
    return periodic_forecast(d, [&](const std::vector<double>& w) { return f.predict(w); })
        .mse_rollout;
  };
  const double a = mse(plain), b = mse(scaled);
  EXPECT_LT(b, 2e-5) << "measured 6.4e-6, got " << b;
  EXPECT_LT(b, a / 100) << a << " vs " << b;
}

TEST(Periodic, QuickConfigLearnsSinWithAFixedSeed) {
  const auto d = periodic_make(periodic_function::sin);
  sequence_regressor<float> m(periodic_config("quick"), 0);
  train_options o;
  o.epochs = 10;
  o.batch = 64;
  o.lr = 3e-3;
  const auto tr = train_regressor(m, d.train_x, d.train_y, o);
  EXPECT_LT(tr.epoch_loss.back(), 0.2 * tr.epoch_loss.front());
  const auto fc = periodic_forecast(d, [&](const std::vector<double>& w) {
    matrix<float> x(1, 99);
    for (index i = 0; i < 99; ++i) x(0, i) = static_cast<float>(w[static_cast<std::size_t>(i)]);
    float p = 0;
    m.forward(x.cview(), std::span<float>(&p, 1), nullptr);
    return double(p);
  });
  EXPECT_LT(fc.mse_teacher_forced, 0.05);
  EXPECT_TRUE(std::isfinite(fc.mse_rollout));
}

}  // namespace
}  // namespace kf::model
