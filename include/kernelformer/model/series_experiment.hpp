// kernelformer/model/series_experiment.hpp — forecasting any numeric series (kf train series):
// the series made regular, split, standardized, and three forecasters side by side.
//
// Regular: the values are equally spaced. A time column, when given, must increase by the same
// step at every row (within 2% of the median step, so rounded times pass); otherwise the first
// row where it does not is an error, or, with a resampling step, the series is interpolated
// linearly onto t_0, t_0 + step, … ≤ t_last. A missing value (NaN) is an error naming its row,
// or is filled: linear (interpolated in time between its neighbours) or previous (the last
// value carried forward); missing values at either end are dropped when filling.
//
// Split of the n values, by target t (each sample: the `window` values before t → y_t):
//   [window, train_end) training  |  [train_end, known) validation  |  [known, n) test
// The test part is the last `horizon` values; the validation tail is the last
// validation_fraction of the known targets (early stopping, model/regressor_train.hpp).
// Standardized by the training part: μ, σ of y_0 … y_{train_end − 1}; the transformer and the NW
// forecaster see (y − μ)/σ, the checkpoint carries μ and σ (regressor_config::input_shift,
// input_scale), so kf predict takes raw windows.
// Defaults: horizon min(200, 20% of n) (or test_fraction·n), window min(99, (n − horizon)/4),
// period detected on the known part (series_period_detect, lags ≤ min(window, known/2)).
//
// Level, trend and scale, chosen by the data of the known part (never the test part) and
// reported (series_data::choices):
//   log     the forecasters model log y when every known value is positive and the seasonal
//           swing grows with the level (each whole period's standard deviation against its mean:
//           correlation > 0.5, means spanning ≥ 20%); the transformer's checkpoint carries it
//           (input_log), so kf predict still takes raw windows;
//   level   the windows are taken relative to their last value (regressor_config::level_inputs,
//           and the NW forecaster's keys likewise) when that forecasts the validation tail better
//           by rollout than the global standardization does (the NW forecaster fitted on the
//           training windows both ways) — a trending series' level beyond the training range.
// Forecasters over the test part, each by rollout (from the last `window` known values) and
// teacher-forced: the transformer, the NW forecaster (keys: every known window; bandwidth by
// LOO-CV), Holt–Winters (model/holt_winters.hpp: additive, or multiplicative with the log
// choice; fitted on the known part) and the seasonal-naive baseline; also the known part's
// mean, as the floor any forecaster should beat.
// Backtest (series_backtest.cpp): K rolling origins in the second half of the validation tail
// (its first half stops the transformer's training early, so no forecaster is scored on the
// values its epoch was chosen by; a tail of fewer than 4 serves both), each forecaster's
// rollout from each origin (Holt–Winters refitted there; the NW forecaster on the training
// windows only), its MSE per origin; the recommended forecaster has the lowest mean, and its
// residuals by horizon step give the 80% and 95% bands (±1.2816 σ_k, ±1.96 σ_k, σ_k the RMS
// residual at step k, non-decreasing in k, extrapolated as √k beyond the steps the backtest saw).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernelformer/model/forecast.hpp"
#include "kernelformer/model/holt_winters.hpp"
#include "kernelformer/model/regressor_train.hpp"
#include "kernelformer/model/sequence_regressor.hpp"

namespace kf::model {

enum class series_fill { error, linear, previous };
series_fill series_fill_parse(const std::string& name);  // error | linear | previous

struct series_regular_options {
  series_fill fill = series_fill::error;
  double resample = 0;  // > 0: linear interpolation onto a grid of this step (needs time)
  // How a message names row i (0-based, as given): default "row i+1"; a CSV reader passes its
  // line numbers.
  std::function<std::string(index row)> row_name;
  // Appended to the messages of a missing value and of an irregular step (a command names its
  // options there).
  std::string hint_missing, hint_irregular;
};
struct regular_series {
  std::vector<double> time, values;
  double step = 1;
  index filled = 0;   // missing values filled in
  index trimmed = 0;  // missing values dropped at either end
  bool resampled = false;
};
// values: NaN marks a missing value; time: empty (the rows are the steps, 0, 1, …) or one per
// value. Throws std::invalid_argument naming the row.
regular_series series_regularize(std::vector<double> time, std::vector<double> values,
                                 const series_regular_options& o);

struct series_spec {
  index window = 0, horizon = 0;  // 0: the defaults above
  index backtest = 10;            // rolling origins in the validation tail (at most its length)
  int log = -1, level = -1;       // -1: chosen by the data (above); 0 or 1: forced
  double test_fraction = 0;       // > 0 (and no horizon): horizon = round(test_fraction · n)
  double validation_fraction = 0.2;
  index period = 0;  // 0: detected
};
struct series_data {
  regular_series series;
  index window = 0, horizon = 0, train_end = 0, known = 0;
  index backtest_from =
      0;  // validation: [train_end, backtest_from), backtest: [backtest_from, known)
  double shift = 0, scale = 1;       // μ and σ of the training part
  series_windows train, validation;  // standardized; validation empty when its fraction is 0
  period_estimate period;
  bool period_given = false;
  bool log = false, level = false;  // the choices above
  std::string log_why, level_why;   // one line each, for the summary
  std::vector<double> work;         // the modelled values: log y or y (n)
};
// Throws std::invalid_argument: sizes that do not fit (naming what is needed), a constant
// training part, a period beyond the window.
series_data series_make(regular_series s, const series_spec& spec);

// Trains m (its seq_len = d.window) on d.train with early stopping on d.validation (when there is
// one; o.validation_* are set here), then sets m's input normalization to d's μ, σ: afterwards m
// takes raw windows.
train_result series_train(const series_data& d, sequence_regressor<float>& m, train_options o,
                          const epoch_callback& on_epoch = {});

struct series_backtest_score {
  double mean_mse = 0, sd_mse = 0;  // over the origins
  index origins = 0;
  std::vector<double> step_rms;  // RMS residual at horizon step k (k = 1 …)
};
struct series_forecaster {
  std::string name;  // transformer | nw | holt_winters | seasonal_naive | kernel_trend |
                     // combination
  forecast test;     // over the test part, data units
  forecast_errors rollout, teacher_forced;
  std::vector<double> future;  // rollout beyond the end of the series
  series_backtest_score backtest;
};
struct series_interval {
  std::vector<double> lo80, hi80, lo95, hi95;
};
struct series_result {
  std::vector<series_forecaster> forecasters;
  index recommended = 0;  // the forecaster with the lowest mean backtest MSE
  std::string recommended_why;
  series_interval test_band, future_band;           // the recommended forecaster's bands
  double test_coverage95 = 0, test_coverage80 = 0;  // of the test part (reported, never used)
  double backtest_coverage95 = 0;                   // the bands over the backtest's own points
  std::string holt_winters_season;
  std::string holt_winters;                 // the variant the backtest chose, and why
  std::string kernel_trend;                 // its bandwidth, and why
  std::vector<std::string> combination_of;  // the "combination" forecaster's members (if any)
  forecast_errors mean;                     // predicting the known part's mean at every test step
  nw_forecaster nw;                         // on standardized windows
  std::vector<double> future_time;
};
// m: after series_train. future: steps forecast beyond the last value (rollout from the last
// `window` values of the whole series; the models are the ones trained without the test part).
// Throws std::runtime_error when a forecast turns non-finite (naming the forecaster and step).
// Progress (progress.hpp): the NW forecaster's bandwidth search (seconds on thousands of
// windows), then a step "forecasts" counting every prediction.
series_result series_evaluate(const series_data& d, sequence_regressor<float>& m, index future = 0,
                              index backtest = 10);

namespace detail {
// The pieces series_evaluate is made of (series_backtest.cpp): raw window → one-step forecast
// through the data's transforms, for an NW forecaster fitted on the modelled windows.
window_predictor series_nw_predictor(const series_data& d, const nw_forecaster& nw);
// The NW forecaster on the modelled (transformed) windows with targets in [first, last).
nw_forecaster series_nw_fit(const series_data& d, index first, index last);
// The header's choices, called by series_make: log (fills d.work) before the standardization,
// level after the windows are made.
void series_choose_log(series_data& d, const series_spec& spec);
void series_choose_level(series_data& d, const series_spec& spec);
}  // namespace detail

}  // namespace kf::model
