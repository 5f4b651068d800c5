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
// Forecasters over the test part, each by rollout (from the last `window` known values) and
// teacher-forced: the transformer, the NW forecaster (keys: every known window, standardized;
// bandwidth by LOO-CV) and the seasonal-naive baseline; also the known part's mean, as the
// floor any forecaster should beat.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernelformer/model/forecast.hpp"
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
  double test_fraction = 0;       // > 0 (and no horizon): horizon = round(test_fraction · n)
  double validation_fraction = 0.2;
  index period = 0;  // 0: detected
};
struct series_data {
  regular_series series;
  index window = 0, horizon = 0, train_end = 0, known = 0;
  double shift = 0, scale = 1;       // μ and σ of the training part
  series_windows train, validation;  // standardized; validation empty when its fraction is 0
  period_estimate period;
  bool period_given = false;
};
// Throws std::invalid_argument: sizes that do not fit (naming what is needed), a constant
// training part, a period beyond the window.
series_data series_make(regular_series s, const series_spec& spec);

// Trains m (its seq_len = d.window) on d.train with early stopping on d.validation (when there is
// one; o.validation_* are set here), then sets m's input normalization to d's μ, σ: afterwards m
// takes raw windows.
train_result series_train(const series_data& d, sequence_regressor<float>& m, train_options o,
                          const epoch_callback& on_epoch = {});

struct series_forecaster {
  std::string name;  // transformer | nw | seasonal_naive
  forecast test;     // over the test part, data units
  forecast_errors rollout, teacher_forced;
  std::vector<double> future;  // rollout beyond the end of the series
};
struct series_result {
  std::vector<series_forecaster> forecasters;
  forecast_errors mean;  // predicting the known part's mean at every test step
  nw_forecaster nw;      // on standardized windows
  std::vector<double> future_time;
};
// m: after series_train. future: steps forecast beyond the last value (rollout from the last
// `window` values of the whole series; the models are the ones trained without the test part).
// Throws std::runtime_error when a forecast turns non-finite (naming the forecaster and step).
// Progress (progress.hpp): the NW forecaster's bandwidth search (seconds on thousands of
// windows), then a step "forecasts" counting every prediction.
series_result series_evaluate(const series_data& d, sequence_regressor<float>& m, index future = 0);

}  // namespace kf::model
