// Forecasting a series from sliding windows (model/forecast.hpp): the windows, rollout and
// teacher-forced forecasts with any window → next-value predictor, the Nadaraya–Watson forecaster
// (the smoothing primitive over the training windows), period detection and the seasonal naive.
#include "kernelformer/model/forecast.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernelformer/progress.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/smooth.hpp"

namespace kf::model {

series_windows series_windows_make(std::span<const double> series, index window, index first,
                                   index last) {
  if (window < 1 || first < window || last < first || last > static_cast<index>(series.size()))
    throw std::invalid_argument(fmt::format(
        "series_windows_make: targets [{}, {}) with window {} do not fit a series of {}", first,
        last, window, series.size()));
  series_windows s;
  const index rows = last - first;
  s.x = matrix<float>(rows, window);           // (rows, window)
  s.y.resize(static_cast<std::size_t>(rows));  // (rows)
  for (index i = 0; i < rows; ++i) {  // row i: series[t − window, t) → series[t], t = first + i
    const index t = first + i;
    for (index j = 0; j < window; ++j)
      s.x(i, j) = static_cast<float>(series[static_cast<std::size_t>(t - window + j)]);
    s.y[static_cast<std::size_t>(i)] = static_cast<float>(series[static_cast<std::size_t>(t)]);
  }
  return s;
}

forecast forecast_run(std::span<const double> context, std::span<const double> truth, index window,
                      const window_predictor& predict) {
  if (window < 1 || static_cast<index>(context.size()) < window)
    throw std::invalid_argument(
        fmt::format("forecast: a context of {} values, a window of {}", context.size(), window));
  forecast fc;
  std::vector<double> roll(context.end() - window, context.end());  // the last window, rolled on
  std::vector<double> known = roll;  // the true series, for teacher forcing
  for (std::size_t s = 0; s < truth.size(); ++s) {
    const double p = predict(roll);
    const double tf = predict(std::vector<double>(known.end() - window, known.end()));
    fc.rollout.push_back(p);
    fc.teacher_forced.push_back(tf);
    roll.erase(roll.begin());
    roll.push_back(p);  // feed the prediction back
    known.push_back(truth[s]);
    fc.mse_rollout += (p - truth[s]) * (p - truth[s]) / double(truth.size());
    fc.mse_teacher_forced += (tf - truth[s]) * (tf - truth[s]) / double(truth.size());
  }
  return fc;
}

std::vector<double> forecast_rollout(std::span<const double> context, index steps, index window,
                                     const window_predictor& predict) {
  if (window < 1 || static_cast<index>(context.size()) < window || steps < 0)
    throw std::invalid_argument(
        fmt::format("forecast: a context of {} values, a window of {}", context.size(), window));
  std::vector<double> roll(context.end() - window, context.end()), out;
  for (index s = 0; s < steps; ++s) {
    const double p = predict(roll);
    out.push_back(p);
    roll.erase(roll.begin());
    roll.push_back(p);
  }
  return out;
}

window_predictor forecast_predictor(sequence_regressor<float>& m) {
  return [&m](const std::vector<double>& w) {          // m must outlive the predictor
    matrix<float> x(1, static_cast<index>(w.size()));  // (1, T): a batch of one window
    for (std::size_t i = 0; i < w.size(); ++i)
      x(0, static_cast<index>(i)) = static_cast<float>(w[i]);
    float p = 0;
    m.forward(x.cview(), std::span<float>(&p, 1), nullptr);
    return double(p);
  };
}

forecast_errors forecast_score(std::span<const double> prediction, std::span<const double> truth) {
  if (prediction.size() != truth.size() || truth.empty())
    throw std::invalid_argument("forecast_score: prediction and truth sizes differ or are empty");
  forecast_errors e;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    const double r = prediction[i] - truth[i];
    e.mse += r * r;
    e.mae += std::abs(r);
  }
  e.mse /= double(truth.size());
  e.mae /= double(truth.size());
  e.rmse = std::sqrt(e.mse);
  return e;
}

namespace {

// The window's root mean square, or 1 for an all-zero window (nothing to scale).
double window_rms(const double* w, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += w[i] * w[i];
  const double r = std::sqrt(s / double(n));
  return r > 1e-12 ? r : 1.0;
}

// Rollout MSE over the series' last `steps` training targets, the forecaster's keys restricted
// to the windows whose next value comes before them.
double holdout_rollout_mse(std::span<const double> series, const nw_forecaster& full, index steps,
                           double h) {
  const index win = full.keys.cols();
  const index first = full.keys.rows() - steps;  // the window whose next value is held out first
  nw_forecaster f;
  f.scaled = full.scaled;
  f.bandwidth = h;
  f.keys = matrix<double>(first, win);
  std::copy_n(full.keys.data(), first * win, f.keys.data());
  f.values.assign(full.values.begin(), full.values.begin() + first);
  std::vector<double> ctx(series.begin() + first, series.begin() + first + win);
  double sse = 0;
  for (index s = 0; s < steps; ++s) {
    const std::vector<double> w(ctx.end() - win, ctx.end());
    const double p = f.predict(w);
    const double e = p - series[static_cast<std::size_t>(first + win + s)];
    sse += e * e;
    ctx.push_back(p);
  }
  return sse / double(steps);
}

}  // namespace

// ŷ = s · Σ_j K(w/s, key_j) value_j / Σ_j K(w/s, key_j), s the window's RMS when scaled (else
// 1): one query row through the primitive with the gaussian kernel.
double nw_forecaster::predict(const std::vector<double>& window) const {
  const double s = scaled ? window_rms(window.data(), window.size()) : 1.0;
  std::vector<double> w = window;
  for (double& x : w) x /= s;
  const matrix<double> q(1, static_cast<index>(w.size()), w);            // (1, T)
  matrix<double> out(1, 1);                                              // (1, 1)
  const matrix<double> v(static_cast<index>(values.size()), 1, values);  // (n, 1); keys (n, T)
  smooth_forward<double>(out.view(), {}, q.cview(), keys.cview(), v.cview(),
                         kernel_gaussian{bandwidth}, mask::none());
  return out(0, 0) * s;
}

nw_forecaster nw_forecaster_fit(const matrix<float>& x, const std::vector<float>& y, bool scaled,
                                nw_bandwidth_rule rule, std::span<const double> series,
                                index holdout) {
  if (x.rows() < 2 || static_cast<index>(y.size()) != x.rows())
    throw std::invalid_argument(fmt::format(
        "NW forecaster: {} windows and {} values (needs at least 2)", x.rows(), y.size()));
  nw_forecaster f;
  f.scaled = scaled;
  f.rule = rule;
  f.keys = matrix<double>(x.rows(), x.cols());  // (n, T), a double copy of the windows
  for (index i = 0; i < f.keys.size(); ++i) f.keys.data()[i] = x.data()[i];
  f.values.assign(y.begin(), y.end());
  if (scaled)  // each window and its next value divided by the window's RMS: shapes, not sizes
    for (index r = 0; r < f.keys.rows(); ++r) {
      double* row = f.keys.data() + r * f.keys.cols();
      const double s = window_rms(row, static_cast<std::size_t>(f.keys.cols()));
      for (index c = 0; c < f.keys.cols(); ++c) row[c] /= s;
      f.values[static_cast<std::size_t>(r)] /= s;
    }
  if (rule == nw_bandwidth_rule::rollout) {
    if (holdout < 1 || holdout >= x.rows() ||
        static_cast<index>(series.size()) < x.rows() + x.cols())
      throw std::invalid_argument(fmt::format(
          "NW forecaster: a rollout holdout of {} steps needs more than {} windows and their "
          "series",
          holdout, x.rows()));
    f.validation_mse = std::numeric_limits<double>::infinity();
    progress_step step("NW forecaster: rollout-validated bandwidth", 32);
    for (int g = 0; g < 32; ++g) {  // 32 log-spaced bandwidths over [0.02, 5]
      const double h = 0.02 * std::pow(250.0, double(g) / 31.0);
      const double mse = holdout_rollout_mse(series, f, holdout, h);
      if (mse < f.validation_mse) {
        f.validation_mse = mse;
        f.bandwidth = h;
      }
      step.set(g + 1);
    }
    return f;
  }
  // One isotropic bandwidth over the windows, chosen by leave-one-out CV over h ∈ [0.01, 10]
  // (for seed 003's sin, the windows of adjacent samples are ~0.7 apart).
  const auto r = bandwidth_search(
      [&](const std::vector<double>& h) {
        regression_spec s;
        s.bandwidth = {h[0]};
        return regression_criteria(s, f.keys.cview(), f.values).loo_cv;
      },
      {1.0}, "loo_cv");
  f.bandwidth = r.bandwidth[0];
  f.loo_cv = r.value;
  return f;
}

period_estimate series_period_detect(std::span<const double> series, index max_lag) {
  const index n = static_cast<index>(series.size());
  if (n < 3 || max_lag < 2 || max_lag >= n)
    throw std::invalid_argument(
        fmt::format("period detection: lags up to {} in a series of {} values (needs 2 ≤ lag < n)",
                    max_lag, n));
  // Residuals of the least-squares line a + b·t (a trend would put its own slow decay into
  // every lag and hide the season).
  double tm = 0, ym = 0;
  for (index t = 0; t < n; ++t)  // means of t and y
    tm += double(t) / double(n), ym += series[std::size_t(t)] / double(n);
  double stt = 0, sty = 0;
  for (index t = 0; t < n; ++t) {
    stt += (double(t) - tm) * (double(t) - tm);
    sty += (double(t) - tm) * (series[std::size_t(t)] - ym);
  }
  const double b = sty / stt;
  std::vector<double> r(static_cast<std::size_t>(n));
  for (index t = 0; t < n; ++t)
    r[std::size_t(t)] = series[std::size_t(t)] - ym - b * (double(t) - tm);
  double c0 = 0;  // lag-0 sum: r_k = Σ_t r_t r_{t+k} / c0
  for (double v : r) c0 += v * v;
  period_estimate p;
  // One lag beyond max_lag (when there is one), so that a peak at max_lag can be confirmed.
  const index top = std::min(max_lag + 1, n - 1);
  p.acf_curve.assign(static_cast<std::size_t>(top + 1), 0.0);
  for (index k = 0; k <= top; ++k) {
    double s = 0;
    for (index t = 0; t + k < n; ++t) s += r[std::size_t(t)] * r[std::size_t(t + k)];
    p.acf_curve[std::size_t(k)] = c0 > 0 ? s / c0 : 0.0;
  }
  // A peak must clear 3/√n: white noise's r_k has a spread of 1/√n, and the highest of some 50
  // lags would clear 2/√n more often than not. Multiples of the period peak nearly as high as
  // the period itself (noise decides which is highest), so the period is the first peak within
  // 80% of the highest.
  const double floor = 3.0 / std::sqrt(double(n));
  std::vector<index> peaks;
  double highest = 0;
  for (index k = 2; k <= max_lag; ++k) {
    const double a = p.acf_curve[std::size_t(k)];
    if (a > floor && a > p.acf_curve[std::size_t(k - 1)] &&
        (k == top || a >= p.acf_curve[std::size_t(k + 1)])) {
      peaks.push_back(k);
      highest = std::max(highest, a);
    }
  }
  for (const index k : peaks)
    if (p.acf_curve[std::size_t(k)] >= 0.8 * highest) {
      p.period = k;
      p.acf = p.acf_curve[std::size_t(k)];
      break;
    }
  p.acf_curve.resize(static_cast<std::size_t>(max_lag + 1));  // lags 0..max_lag, as documented
  return p;
}

window_predictor seasonal_naive_predictor(index period) {
  if (period < 1) throw std::invalid_argument("seasonal naive: the period must be >= 1");
  return [period](const std::vector<double>& w) {  // ŷ_t = y_{t − period}
    if (static_cast<index>(w.size()) < period)
      throw std::invalid_argument(
          fmt::format("seasonal naive: a window of {} values cannot look back a period of {}",
                      w.size(), period));
    return w[w.size() - static_cast<std::size_t>(period)];
  };
}

}  // namespace kf::model
