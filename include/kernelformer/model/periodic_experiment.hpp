// kernelformer/model/periodic_experiment.hpp — seed 003's experiment, as its authors' code runs it
// (../shared/docs/periodic-protocol.md): Transformers forecasting periodic functions.
//
// Data: y_t = f(0.1·t), t = 0..999; every length-100 window (stride 1) gives a sample whose
// input is its first 99 values and whose target is the 100th: 901 samples. Test: context = the
// last 99 training values (x = 90.1 … 99.9), targets at x = 100.0 … 119.9 (200 steps).
// Rollout: predict, append the prediction, slide, 200 times; test MSE = mean squared error of
// the 200 predictions. Teacher-forced: the true context at every step.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernelformer/model/data_parallel.hpp"
#include "kernelformer/model/sequence_regressor.hpp"
#include "kernelformer/model/train_state.hpp"
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

// One-step predictor: a window of 99 values → the next value.
using window_predictor = std::function<double(const std::vector<double>& window)>;
struct forecast {
  std::vector<double> rollout, teacher_forced;
  double mse_rollout = 0, mse_teacher_forced = 0;
};
forecast periodic_forecast(const periodic_data& d, const window_predictor& predict);

// The Nadaraya–Watson forecaster: attention with a fixed gaussian kernel over the training set
// (keys = the 901 windows, values = their next values), bandwidth by leave-one-out CV.
// scaled (an improvement option, reported separately): every window is divided by its RMS s
// and its next value too, and a prediction is multiplied back by the query window's s — the
// smoother then sees shapes, not amplitudes, and follows a growing amplitude (sin·exp) beyond the
// training range instead of clipping to it.
//
// rollout-validated bandwidth (an improvement option, reported separately): the bandwidth that
// forecasts the training series' own last 200 values best by rollout, from the windows before
// them — the criterion the experiment is scored by, measured on training data only. LOO-CV scores
// one-step errors and picks a smoother bandwidth; on the square wave that blurs the jumps.
enum class nw_bandwidth_rule { loo_cv, rollout };
struct nw_forecaster {
  double bandwidth = 0;
  double loo_cv = 0;          // loo_cv rule: the LOO-CV criterion at the bandwidth
  double validation_mse = 0;  // rollout rule: the held-out rollout MSE at the bandwidth
  nw_bandwidth_rule rule = nw_bandwidth_rule::loo_cv;
  bool scaled = false;
  matrix<double> keys;
  std::vector<double> values;
  double predict(const std::vector<double>& window) const;
};
nw_forecaster nw_forecaster_fit(const periodic_data& d, bool scaled = false,
                                nw_bandwidth_rule rule = nw_bandwidth_rule::loo_cv);

// Mini-batch training of a regressor: Adam(W), shuffled batches, MSE; deterministic for a seed.
struct train_options {
  index epochs = 100, batch = 512;
  double lr = 1e-3, weight_decay = 0.0, clip = 0.0;  // clip = 0: no gradient clipping
  // An improvement option (the protocol keeps lr constant): linear warmup over the first 5% of
  // the steps, then cosine decay to 0 — the last steps stop shaking the weights.
  bool cosine_lr = false;
  std::uint64_t seed = 0;
  data_parallel parallel;  // several processes: each computes its rows of every batch
  // Resumable training (model/train_state.hpp): continue from `resume` (the caller has loaded the
  // model's weights from the same checkpoint) — the epochs after it give bit-identical losses and
  // weights to a run never stopped; every `save_every` epochs and after the last one,
  // `on_checkpoint` receives the state after that epoch.
  const train_state* resume = nullptr;
  index save_every = 0;
  std::function<void(const train_state&)> on_checkpoint;
};
struct train_result {
  std::vector<double> epoch_loss, epoch_seconds;
  double train_seconds = 0;
};
using epoch_callback = std::function<void(index epoch, index epochs, double loss)>;
train_result train_regressor(sequence_regressor<float>& m, const matrix<float>& x,
                             const std::vector<float>& y, const train_options& o,
                             const epoch_callback& on_epoch = {});

// Forecasts with a trained regressor (window → next value, evaluation mode).
forecast periodic_forecast_model(const periodic_data& d, sequence_regressor<float>& m);

// Model configurations: paper (d 512, H 2, PE 128 concatenated, FFN 512), code (d 128, H 2,
// FFN 128, PE added), quick (d 16, H 2, FFN 32, one layer; seconds, for tests and the demo).
regressor_config periodic_config(const std::string& name);

}  // namespace kf::model
