// kernelformer/model/periodic_experiment.hpp — seed 003's experiment, as its authors' code runs it
// (../shared/docs/periodic-protocol.md): Transformers forecasting periodic functions.
//
// Data: y_t = f(0.1·t), t = 0..999; every length-100 window (stride 1) gives a sample whose
// input is its first 99 values and whose target is the 100th: 901 samples. Test: context = the
// last 99 training values (x = 90.1 … 99.9), targets at x = 100.0 … 119.9 (200 steps).
// Rollout: predict, append the prediction, slide, 200 times; test MSE = mean squared error of
// the 200 predictions. Teacher-forced: the true context at every step.
// The generic pieces (windows, rollout, the NW forecaster, training) are model/forecast.hpp and
// model/regressor_train.hpp; this header fixes the protocol's data and configurations.
#pragma once

#include <string>
#include <vector>

#include "kernelformer/model/forecast.hpp"
#include "kernelformer/model/regressor_train.hpp"
#include "kernelformer/model/sequence_regressor.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::model {

enum class periodic_function { sin, sin_exp, square };
periodic_function periodic_function_parse(const std::string& name);  // sin | sin-exp | square
std::string periodic_function_name(periodic_function f);
// sin(x); sin(x)·exp(0.01x); square(x) = +1 on the first half of each 2π period, −1 on the second.
double periodic_value(periodic_function f, double x);

struct periodic_data {
  static constexpr index kWindow = 99, kSeries = 1000, kSteps = 200;
  matrix<float> train_x;               // (901, 99)
  std::vector<float> train_y;          // (901)
  std::vector<double> series;          // the 1000 training values
  std::vector<double> context;         // the last 99 training values
  std::vector<double> test_x, test_y;  // x = 100.0 … 119.9 and f there
};
periodic_data periodic_make(periodic_function f);

// Forecasts the 200 test values from the context (forecast_run with a window of 99).
forecast periodic_forecast(const periodic_data& d, const window_predictor& predict);

// The Nadaraya–Watson forecaster (model/forecast.hpp) over the 901 training windows; the
// rollout rule holds out the training series' last 200 values.
nw_forecaster nw_forecaster_fit(const periodic_data& d, bool scaled = false,
                                nw_bandwidth_rule rule = nw_bandwidth_rule::loo_cv);

// Forecasts with a trained regressor (window → next value, evaluation mode).
forecast periodic_forecast_model(const periodic_data& d, sequence_regressor<float>& m);

// Model configurations: paper (d 512, H 2, PE 128 concatenated, FFN 512), code (d 128, H 2,
// FFN 128, PE added), quick (d 16, H 2, FFN 32, one layer; seconds, for tests and the demo).
regressor_config periodic_config(const std::string& name);

}  // namespace kf::model
