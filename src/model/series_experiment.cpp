// A user's series, forecast (model/series_experiment.hpp): regularized (gaps filled, ends trimmed,
// optionally resampled), split into training / validation / test, standardized by the training
// part, and the Transformer compared with the NW forecaster and the seasonal naive on the test.
#include "kernelformer/model/series_experiment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "kernelformer/progress.hpp"

namespace kf::model {

// Throws std::invalid_argument naming the value and the accepted names.
series_fill series_fill_parse(const std::string& name) {
  if (name == "error") return series_fill::error;
  if (name == "linear") return series_fill::linear;
  if (name == "previous") return series_fill::previous;
  throw std::invalid_argument("unknown fill '" + name + "' (error, linear, previous)");
}

namespace {

// Throws naming the first row whose time does not increase.
void check_increasing(const std::vector<double>& time,
                      const std::function<std::string(index)>& row) {
  for (std::size_t i = 1; i < time.size(); ++i)
    if (!(time[i] > time[i - 1]))
      throw std::invalid_argument(fmt::format(
          "{}: time {} does not increase (the row before has {}); sort the rows and remove "
          "duplicate times",
          row(index(i)), time[i], time[i - 1]));
}

// Fills the missing values (NaN) between known ones, in place; the ends are known.
index fill_gaps(std::vector<double>& v, const std::vector<double>& t, series_fill how) {
  index filled = 0;
  std::size_t last = 0;  // the last known value's position
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (std::isnan(v[i])) continue;
    for (std::size_t j = last + 1; j < i; ++j, ++filled)
      // linear interpolates in time, not by row, so uneven time steps are respected.
      v[j] = how == series_fill::previous
                 ? v[last]
                 : v[last] + (v[i] - v[last]) * (t[j] - t[last]) / (t[i] - t[last]);
    last = i;
  }
  return filled;
}

// Linear interpolation of (t, v) at the grid t_0 + k·step, k = 0 … ⌊(t_last − t_0)/step⌋.
void resample_linear(regular_series& s, double step) {
  const double t0 = s.time.front(), span = s.time.back() - t0;
  // (1 + 1e-12): a span that is a whole number of steps keeps its last point despite rounding.
  const auto k_max = static_cast<index>(std::floor(span / step * (1 + 1e-12)));
  if (k_max > (index(1) << 26))  // 67 million values: a step far too small for the span
    throw std::invalid_argument(
        fmt::format("resampling a time span of {} at a step of {} would make {} values", span, step,
                    k_max + 1));
  std::vector<double> time, values;
  std::size_t j = 0;
  for (index k = 0; k <= k_max; ++k) {
    const double t = std::min(t0 + double(k) * step, s.time.back());
    while (j + 2 < s.time.size() && s.time[j + 1] < t) ++j;
    const double a = s.time[j], b = s.time[j + 1];
    const double w = std::clamp((t - a) / (b - a), 0.0, 1.0);
    time.push_back(t0 + double(k) * step);
    values.push_back(s.values[j] + w * (s.values[j + 1] - s.values[j]));
  }
  s.time = std::move(time);
  s.values = std::move(values);
  s.step = step;
  s.resampled = true;
}

// The median step of an increasing time column; throws naming the first step off it by more than
// 2%.
double check_regular(const std::vector<double>& t, index offset,
                     const std::function<std::string(index)>& row, const std::string& hint) {
  std::vector<double> d(t.size() - 1);
  for (std::size_t i = 1; i < t.size(); ++i) d[i - 1] = t[i] - t[i - 1];
  std::vector<double> sorted = d;
  std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(sorted.size() / 2),
                   sorted.end());
  const double step = sorted[sorted.size() / 2];
  for (std::size_t i = 0; i < d.size(); ++i)
    if (std::abs(d[i] - step) > 0.02 * step)
      throw std::invalid_argument(fmt::format(
          "{}: time {} comes {:.6g} after the row before; the series' step is {:.6g} (time steps "
          "must be regular: a missing or extra row?){}",
          row(offset + index(i) + 1), t[i + 1], d[i], step, hint));
  // The step returned is the mean spacing, not the median the check used: the two agree within
  // 2% here, and the mean places future times t_last + k·step in line with the whole series.
  return (t.back() - t.front()) / double(t.size() - 1);
}

}  // namespace

// Order of the checks: shapes and options, increasing time, missing values (o.fill), then the
// step's regularity; every message names the row through o.row_name.
regular_series series_regularize(std::vector<double> time, std::vector<double> values,
                                 const series_regular_options& o) {
  const auto row = o.row_name ? o.row_name : [](index i) { return fmt::format("row {}", i + 1); };
  if (values.empty()) throw std::invalid_argument("the series is empty");
  if (!time.empty() && time.size() != values.size())
    throw std::invalid_argument("the time and value columns differ in length");
  if (o.resample < 0 || !std::isfinite(o.resample))
    throw std::invalid_argument(fmt::format("resampling step {}: expected > 0", o.resample));
  if (o.resample > 0 && time.empty()) throw std::invalid_argument("resampling needs a time column");
  check_increasing(time, row);
  const auto missing =
      std::find_if(values.begin(), values.end(), [](double v) { return std::isnan(v); });
  if (missing != values.end() && o.fill == series_fill::error)
    throw std::invalid_argument(
        fmt::format("{}: the value is missing{}", row(missing - values.begin()), o.hint_missing));
  // Missing values at the ends have no neighbour on one side: dropped.
  std::size_t first = 0, last = values.size();
  while (first < last && std::isnan(values[first])) ++first;
  while (last > first && std::isnan(values[last - 1])) --last;
  if (first == last) throw std::invalid_argument("every value of the series is missing");
  regular_series s;
  s.trimmed = index(first + values.size() - last);
  s.values.assign(values.begin() + std::ptrdiff_t(first), values.begin() + std::ptrdiff_t(last));
  if (time.empty()) {  // no time column: the row numbers (of the original rows) are the time
    s.time.resize(s.values.size());
    std::iota(s.time.begin(), s.time.end(), double(first));
  } else {
    s.time.assign(time.begin() + std::ptrdiff_t(first), time.begin() + std::ptrdiff_t(last));
  }
  s.filled = fill_gaps(s.values, s.time, o.fill);
  if (o.resample > 0 && s.values.size() >= 2)
    resample_linear(s, o.resample);
  else if (!time.empty() && s.values.size() >= 2)
    s.step = check_regular(s.time, index(first), row, o.hint_irregular);
  return s;
}

namespace {

// The split's sizes from the spec (see the header); throws when they do not fit.
void series_split(series_data& d, const series_spec& spec) {
  const index n = static_cast<index>(d.series.values.size());
  if (spec.horizon < 0 || spec.window < 0 || spec.period < 0)
    throw std::invalid_argument("the window, horizon and period must be positive");
  if (!(spec.test_fraction >= 0 && spec.test_fraction < 1))
    throw std::invalid_argument(
        fmt::format("test fraction {}: expected a number in (0, 1)", spec.test_fraction));
  if (!(spec.validation_fraction >= 0 && spec.validation_fraction < 1))
    throw std::invalid_argument(fmt::format("validation fraction {}: expected a number in [0, 1)",
                                            spec.validation_fraction));
  d.horizon = spec.horizon > 0 ? spec.horizon
              : spec.test_fraction > 0
                  ? std::max<index>(1, std::llround(spec.test_fraction * double(n)))
                  : std::clamp<index>(std::llround(0.2 * double(n)), 1, 200);
  d.known = n - d.horizon;
  d.window = spec.window > 0 ? spec.window : std::clamp<index>(d.known / 4, 2, 99);
  const index targets = d.known - d.window;  // known samples: training + validation
  const index val =
      spec.validation_fraction > 0
          ? std::max<index>(1, std::llround(spec.validation_fraction * double(targets)))
          : 0;
  constexpr index kMinTrain = 8;
  if (d.known < 1 || targets - val < kMinTrain)
    throw std::invalid_argument(fmt::format(
        "the series has {} values: a window of {} and a test horizon of {}{} leave {} training "
        "windows, at least {} are needed (needs {} values; shorten the window or the horizon)",
        n, d.window, d.horizon,
        val > 0 ? fmt::format(" (and a validation tail of {})", val) : std::string(),
        std::max<index>(0, targets - val), kMinTrain, d.window + kMinTrain + val + d.horizon));
  d.train_end = d.known - val;
  // The validation tail's first half stops the training early, its second half is the
  // backtest's: a forecaster is never compared on the values its epoch was chosen by. A tail of
  // fewer than 4 serves both.
  d.backtest_from = val >= 4 ? d.train_end + val / 2 : d.train_end;
}

// μ and σ of the training part (values before train_end); a constant part has nothing to learn.
void series_standardize(series_data& d) {
  const auto& v = d.work;
  const auto n = static_cast<std::size_t>(d.train_end);
  double mean = 0, ss = 0;
  for (std::size_t i = 0; i < n; ++i) mean += v[i] / double(n);
  for (std::size_t i = 0; i < n; ++i) ss += (v[i] - mean) * (v[i] - mean);
  const double sd = std::sqrt(ss / double(n));  // population σ (divided by n)
  if (!(sd > 1e-12 * std::max(1.0, std::abs(mean))))
    throw std::invalid_argument(fmt::format(
        "the training part (the first {} values) is constant at {:.6g}: nothing to learn", n,
        mean));
  d.shift = mean;
  d.scale = sd;
}

// z = (y − μ) / σ for the first `end` values.
std::vector<double> standardized(const series_data& d, index end) {
  std::vector<double> z(d.work.begin(), d.work.begin() + end);
  for (double& x : z) x = (x - d.shift) / d.scale;
  return z;
}

}  // namespace

series_data series_make(regular_series s, const series_spec& spec) {
  series_data d;
  d.series = std::move(s);
  series_split(d, spec);
  const auto& v = d.series.values;
  if (spec.period > 0) {
    if (spec.period > d.window)
      throw std::invalid_argument(fmt::format(
          "a period of {} is longer than the window of {}: the seasonal-naive forecast looks one "
          "period back within a window",
          spec.period, d.window));
    d.period.period = spec.period;
    d.period_given = true;
  } else {
    const index max_lag = std::min(d.window, d.known / 2);
    if (max_lag >= 2)
      d.period =
          series_period_detect(std::span<const double>(v.data(), std::size_t(d.known)), max_lag);
  }
  detail::series_choose_log(d, spec);  // d.work: log y or y
  series_standardize(d);
  // Windows over z: training targets [window, train_end), validation targets [train_end, known).
  const std::vector<double> z = standardized(d, d.known);
  d.train = series_windows_make(z, d.window, d.window, d.train_end);
  d.validation = series_windows_make(z, d.window, d.train_end,
                                     d.backtest_from > d.train_end ? d.backtest_from : d.known);
  detail::series_choose_level(d, spec);
  return d;
}

train_result series_train(const series_data& d, sequence_regressor<float>& m, train_options o,
                          const epoch_callback& on_epoch) {
  if (m.config().seq_len != d.window)
    throw std::invalid_argument(fmt::format("series: the model takes windows of {}, the data {}",
                                            m.config().seq_len, d.window));
  if (m.config().normalizes())
    throw std::invalid_argument("series: the model already normalizes its inputs");
  if (m.config().level_inputs != d.level)
    throw std::invalid_argument(
        "series: the model's level_inputs must be the data's level choice (series_data::level)");
  const bool validate = d.validation.x.rows() > 0;
  o.validation_x = validate ? &d.validation.x : nullptr;
  o.validation_y = validate ? &d.validation.y : nullptr;
  train_result r = train_regressor(m, d.train.x, d.train.y, o, on_epoch);
  // Trained on z (of log y with the log choice): from now on it takes raw values.
  m.set_input_normalization(d.shift, d.scale, d.log);
  return r;
}

}  // namespace kf::model
