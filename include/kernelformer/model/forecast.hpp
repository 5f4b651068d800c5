// kernelformer/model/forecast.hpp — one-step forecasters on any equally spaced series, and how
// they are scored.
//
// Windows: a series y_0 … y_{n−1} gives one sample per target t ≥ w: input y_{t−w} … y_{t−1}
// (a window of w values), target y_t (stride 1).
// Forecasts over a horizon (the values `truth` that follow a known `context`):
//   rollout         predict, append the prediction to the window, slide, repeat — the forecast
//                   a user gets for the future;
//   teacher-forced  the true window at every step — one-step errors.
// Forecasters: the sequence regressor (forecast_predictor), the Nadaraya–Watson forecaster
// (attention with a fixed gaussian kernel over the training windows) and the seasonal-naive
// baseline ŷ_t = y_{t−P} (rollout: the last period repeated), P given or detected from the
// autocorrelation.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "kernelformer/model/sequence_regressor.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::model {

// The samples whose targets are series[first, last): row i holds series[t − window, t) and
// y[i] = series[t] for t = first + i. Needs window ≤ first ≤ last ≤ series.size().
struct series_windows {
  matrix<float> x;       // (last − first, window)
  std::vector<float> y;  // (last − first)
};
series_windows series_windows_make(std::span<const double> series, index window, index first,
                                   index last);

// One-step predictor: a window of values → the next value.
using window_predictor = std::function<double(const std::vector<double>& window)>;
struct forecast {
  std::vector<double> rollout, teacher_forced;
  double mse_rollout = 0, mse_teacher_forced = 0;
};
// Forecasts truth.size() steps after context (its last `window` values are the first window;
// context.size() ≥ window) and scores both forecasts by their MSE against truth.
forecast forecast_run(std::span<const double> context, std::span<const double> truth, index window,
                      const window_predictor& predict);
// Rollout only, `steps` values beyond the end of context (no truth: the future).
std::vector<double> forecast_rollout(std::span<const double> context, index steps, index window,
                                     const window_predictor& predict);

// A trained regressor as a predictor (evaluation mode, one window per forward).
window_predictor forecast_predictor(sequence_regressor<float>& m);

// Errors of a forecast against the truth.
struct forecast_errors {
  double mse = 0, rmse = 0, mae = 0;
};
forecast_errors forecast_score(std::span<const double> prediction, std::span<const double> truth);

// The Nadaraya–Watson forecaster: keys = the training windows, values = their next values,
// one isotropic gaussian bandwidth.
// scaled (an improvement option): every window is divided by its RMS s and its next value too,
// and a prediction is multiplied back by the query window's s — the smoother then sees shapes,
// not amplitudes, and follows a growing amplitude beyond the training range.
// Bandwidth rules: loo_cv (leave-one-out CV of the one-step errors, over h ∈ [0.01, 10]) or
// rollout: the bandwidth that forecasts the training series' own last `holdout` values best by
// rollout, from the windows before them (a geometric grid over [0.02, 5]; the smallest h wins a
// tie) — the criterion a rollout is scored by, on training data only. LOO-CV picks a smoother h;
// on a square wave that blurs the jumps.
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
// x, y: the training windows and next values (series_windows). The rollout rule also needs the
// series they come from, row i of x being series[i, i + window), and holdout < x.rows().
// Progress: the LOO-CV search is a step of its own ("choosing the bandwidth", progress.hpp), the
// rollout rule's grid one named "NW forecaster: rollout-validated bandwidth".
nw_forecaster nw_forecaster_fit(const matrix<float>& x, const std::vector<float>& y,
                                bool scaled = false,
                                nw_bandwidth_rule rule = nw_bandwidth_rule::loo_cv,
                                std::span<const double> series = {}, index holdout = 0);

// The seasonal period of a series: its least-squares line removed, the autocorrelation
// r_k = Σ_t (y_t − ȳ)(y_{t+k} − ȳ) / Σ_t (y_t − ȳ)² (the biased estimator: long lags, seen over
// fewer pairs, are damped) for k = 0 … max_lag. Peaks: local maxima at lags ≥ 2 with
// r_k > 3/√n (white noise stays below at almost every lag). The period is the first peak within
// 80% of the highest (a multiple of the period peaks about as high as the period itself), or 1
// (no season: the naive forecast repeats the last value) when there is no peak.
struct period_estimate {
  index period = 1;
  double acf = 0;                 // r at the period (0 when the period is 1 by default)
  std::vector<double> acf_curve;  // r_0 … r_max_lag
};
// Needs series.size() ≥ 3 and 2 ≤ max_lag < series.size(); throws std::invalid_argument.
period_estimate series_period_detect(std::span<const double> series, index max_lag);

// The seasonal-naive predictor: the value one period before the next, window[size − period]
// (needs period ≤ the window's length).
window_predictor seasonal_naive_predictor(index period);

}  // namespace kf::model
