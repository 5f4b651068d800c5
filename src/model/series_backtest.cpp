// kf train series's choices and comparison (model/series_experiment.hpp): the log and level
// choices, the NW forecaster through the transforms, Holt–Winters beside the window
// forecasters, the rolling-origin backtest that recommends one, and its prediction bands.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "kernelformer/model/series_experiment.hpp"
#include "kernelformer/progress.hpp"
#include "series_tuning.hpp"

namespace kf::model {
namespace detail {
namespace {

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = double(a.size());
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n;
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

// The windows of z (the modelled values, standardized) with targets in [first, last), relative
// to their last value when d.level (keys z − L, values y − L).
series_windows modelled_windows(const series_data& d, index first, index last) {
  std::vector<double> z(d.work.begin(), d.work.begin() + last);
  for (double& v : z) v = (v - d.shift) / d.scale;
  series_windows w = series_windows_make(z, d.window, first, last);
  if (d.level)
    for (index i = 0; i < w.x.rows(); ++i) {
      const float level = w.x(i, d.window - 1);
      for (index j = 0; j < d.window; ++j) w.x(i, j) -= level;
      w.y[static_cast<std::size_t>(i)] -= level;
    }
  return w;
}

// The rollout MSE over the validation tail (from train_end, at most `horizon` steps) of an NW
// forecaster fitted on the training windows, with d.level as given.
double validation_rollout_mse(const series_data& d) {
  const nw_forecaster nw = series_nw_fit(d, d.window, d.train_end);
  const auto& v = d.series.values;
  const index steps = std::min(d.horizon, d.known - d.train_end);
  const std::span<const double> context(v.data(), std::size_t(d.train_end));
  const std::span<const double> truth(v.data() + d.train_end, std::size_t(steps));
  return forecast_run(context, truth, d.window, series_nw_predictor(d, nw)).mse_rollout;
}

}  // namespace

void series_choose_log(series_data& d, const series_spec& spec) {
  const auto& v = d.series.values;
  const index m = d.period.period;
  d.log = false;
  if (spec.log == 0) {
    d.log_why = "none (--transform none)";
  } else if (spec.log == 1) {
    for (index i = 0; i < d.known; ++i)
      if (!(v[std::size_t(i)] > 0))
        throw std::invalid_argument("--transform log needs every value above 0");
    d.log = true;
    d.log_why = "log (--transform log)";
  } else {
    const bool positive =
        std::all_of(v.begin(), v.begin() + d.known, [](double x) { return x > 0; });
    const index periods = m >= 2 ? d.known / m : 0;
    if (!positive || periods < 3) {
      d.log_why = !positive ? "none (the series is not positive)"
                            : "none (fewer than 3 whole seasons to compare)";
    } else {
      std::vector<double> means, sds;
      for (index p = 0; p < periods; ++p) {
        double mean = 0, ss = 0;
        for (index i = p * m; i < (p + 1) * m; ++i) mean += v[std::size_t(i)] / double(m);
        for (index i = p * m; i < (p + 1) * m; ++i)
          ss += (v[std::size_t(i)] - mean) * (v[std::size_t(i)] - mean);
        means.push_back(mean);
        sds.push_back(std::sqrt(ss / double(m)));
      }
      const double r = pearson(means, sds);
      const auto [lo, hi] = std::minmax_element(means.begin(), means.end());
      d.log = r > 0.5 && *hi >= 1.2 * *lo;
      d.log_why = fmt::format(
          "{} (seasonal swing against level: correlation {:.2f} over {} "
          "seasons, levels {:.4g} to {:.4g})",
          d.log ? "log" : "none", r, periods, *lo, *hi);
    }
  }
  d.work = v;
  if (d.log)
    for (double& x : d.work) x = std::log(x);
}

void series_choose_level(series_data& d, const series_spec& spec) {
  if (spec.level >= 0) {
    d.level = spec.level == 1;
    d.level_why = fmt::format("{} (--level {})", d.level ? "per window" : "global",
                              d.level ? "window" : "global");
    return;
  }
  if (d.known - d.train_end < 1) {
    d.level = false;
    d.level_why = "global (no validation tail to choose on)";
    return;
  }
  d.level = false;
  const double global = validation_rollout_mse(d);
  d.level = true;
  const double window = validation_rollout_mse(d);
  d.level = window < global;
  d.level_why = fmt::format(
      "{} (validation rollout MSE of the NW forecaster: per window {:.4g}, global {:.4g})",
      d.level ? "per window" : "global", window, global);
}

nw_forecaster series_nw_fit(const series_data& d, index first, index last) {
  const series_windows w = modelled_windows(d, first, last);
  return nw_forecaster_fit(w.x, w.y);
}

window_predictor series_nw_predictor(const series_data& d, const nw_forecaster& nw) {
  return [&d, &nw](const std::vector<double>& w) {
    std::vector<double> z(w.size());
    for (std::size_t j = 0; j < w.size(); ++j)
      z[j] = ((d.log ? std::log(w[j]) : w[j]) - d.shift) / d.scale;
    const double level = d.level ? z.back() : 0.0;
    for (double& v : z) v -= level;
    const double t = d.shift + d.scale * (level + nw.predict(z));
    return d.log ? std::exp(t) : t;
  };
}

}  // namespace detail

namespace {

using detail::backtest;
using detail::backtest_score;
using detail::hw_choice;
using detail::hw_model;
using detail::kernel_trend_forecast;
using detail::rollout_fn;

// Throws naming the forecaster, the forecast and the first step that is not finite.
void check_finite(const std::string& name, const std::vector<double>& v, const char* what) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw std::runtime_error(fmt::format(
          "the {} forecast ({}) is {} at step {}: the model diverged", name, what, v[i], i + 1));
}

// The origins: up to k, evenly spaced from train_end (the first value no forecaster was fitted
// on) to known − horizon (the last origin whose whole horizon is known) — or to known − 1 when
// the validation tail is shorter than the horizon.
std::vector<index> backtest_origins(const series_data& d, index k) {
  const index from = d.train_end;
  const index last = d.known - d.horizon >= from ? d.known - d.horizon : d.known - 1;
  const index span = last - from + 1;
  std::vector<index> o;
  if (d.known - from < 1) return o;
  k = std::min(k, span);
  for (index j = 0; j < k; ++j) o.push_back(from + (k == 1 ? 0 : j * (span - 1) / (k - 1)));
  o.erase(std::unique(o.begin(), o.end()), o.end());
  return o;
}

// σ_k for k = 1 … steps from the backtest's RMS residuals: non-decreasing, √k beyond them.
std::vector<double> band_sigma(const std::vector<double>& step_rms, index steps) {
  std::vector<double> s(static_cast<std::size_t>(steps), 0.0);
  if (step_rms.empty()) return s;
  double run = 0;
  for (index k = 0; k < steps; ++k) {
    const auto ku = static_cast<std::size_t>(k);
    const double here = ku < step_rms.size()
                            ? step_rms[ku]
                            : step_rms.back() * std::sqrt(double(k + 1) / double(step_rms.size()));
    run = std::max(run, here);
    s[ku] = run;
  }
  return s;
}

series_interval make_band(const std::vector<double>& f, const std::vector<double>& sigma) {
  series_interval b;
  for (std::size_t k = 0; k < f.size(); ++k) {
    b.lo80.push_back(f[k] - 1.2816 * sigma[k]);
    b.hi80.push_back(f[k] + 1.2816 * sigma[k]);
    b.lo95.push_back(f[k] - 1.96 * sigma[k]);
    b.hi95.push_back(f[k] + 1.96 * sigma[k]);
  }
  return b;
}

}  // namespace

namespace {

double coverage(std::span<const double> truth, const std::vector<double>& lo,
                const std::vector<double>& hi) {
  if (truth.empty() || lo.size() < truth.size()) return 0;
  double in = 0;
  for (std::size_t k = 0; k < truth.size(); ++k) in += truth[k] >= lo[k] && truth[k] <= hi[k];
  return in / double(truth.size());
}

// The order the one-standard-error rule prefers among forecasters the backtest cannot tell
// apart: Holt–Winters (a handful of parameters, the classical method), then the combination —
// among forecasters a short backtest cannot separate, their mean is the safer bet than any one
// of them (the forecasting competitions' finding: Makridakis et al., M3 and M4) — then the
// single learned ones, simplest first (the kernel trend's bandwidth, the NW forecaster's one
// bandwidth over every window, the transformer's thousands of weights). The seasonal naive is
// the baseline every forecaster should beat and is never recommended: its rollout repeats the
// last period, so it cannot follow a trend, which a backtest of short horizons does not show.
int simplicity(const std::string& name) {
  return name == "holt_winters"   ? 1
         : name == "combination"  ? 2
         : name == "kernel_trend" ? 3
         : name == "nw"           ? 4
                                  : 5;
}
bool recommendable(const series_forecaster& f) {
  return f.name != "seasonal_naive" && f.backtest.origins > 0;
}

double origin_mse(const std::vector<double>& r) {
  double s = 0;
  for (double v : r) s += v * v / double(r.size());
  return s;
}

// The one-standard-error rule (Hastie, Tibshirani & Friedman, ESL §7.10): the forecaster with the
// lowest mean backtest MSE, unless a simpler one is within one standard error of it (the standard
// error of their paired per-origin MSE differences); with fewer than 3 origins, the lowest.
std::size_t recommended_index(const std::vector<series_forecaster>& fs,
                              const std::vector<std::vector<std::vector<double>>>& residuals,
                              std::string& why) {
  std::size_t best = 0;  // the transformer when nothing has a backtest
  for (std::size_t i = 1; i < fs.size(); ++i)
    if (recommendable(fs[i]) &&
        (!recommendable(fs[best]) || fs[i].backtest.mean_mse < fs[best].backtest.mean_mse))
      best = i;
  const auto& b = fs[best].backtest;
  why = fmt::format("lowest mean backtest MSE over {} origins ({:.4g} ± {:.4g})", b.origins,
                    b.mean_mse, b.sd_mse);
  if (b.origins < 3) return best;
  std::size_t pick = best;
  for (std::size_t i = 0; i < fs.size(); ++i) {
    if (i == best || !recommendable(fs[i]) || fs[i].backtest.origins != b.origins ||
        simplicity(fs[i].name) >= simplicity(fs[pick].name))
      continue;
    double mean = 0, ss = 0;
    const auto k = residuals[i].size();
    std::vector<double> diff(k);
    for (std::size_t o = 0; o < k; ++o)
      mean += (diff[o] = origin_mse(residuals[i][o]) - origin_mse(residuals[best][o])) / double(k);
    for (double x : diff) ss += (x - mean) * (x - mean);
    const double se = std::sqrt(ss / double(k - 1) / double(k));
    if (mean <= se) {
      pick = i;
      why = fmt::format(
          "simplest within one standard error of the lowest mean backtest MSE over {} origins "
          "({:.4g} against {}'s {:.4g}; standard error of the difference {:.3g})",
          b.origins, fs[i].backtest.mean_mse, fs[best].name, b.mean_mse, se);
    }
  }
  return pick;
}

// The recommended forecaster (recommended_index; the transformer without a backtest), its
// bands over the test part and the future, and their coverage.
void recommend(const series_data& d, series_result& r,
               const std::vector<std::vector<std::vector<double>>>& residuals) {
  const auto& fs = r.forecasters;
  const std::size_t best = recommended_index(fs, residuals, r.recommended_why);
  r.recommended = static_cast<index>(best);
  const auto& b = fs[best].backtest;
  if (b.origins == 0) {
    r.recommended_why = "the transformer (no validation tail: no backtest to choose by)";
    return;
  }
  const auto sigma_test = band_sigma(b.step_rms, d.horizon);
  r.test_band = make_band(fs[best].test.rollout, sigma_test);
  r.future_band = make_band(fs[best].future,
                            band_sigma(b.step_rms, static_cast<index>(fs[best].future.size())));
  const auto& v = d.series.values;
  const std::span<const double> truth(v.data() + d.known, std::size_t(d.horizon));
  r.test_coverage95 = coverage(truth, r.test_band.lo95, r.test_band.hi95);
  r.test_coverage80 = coverage(truth, r.test_band.lo80, r.test_band.hi80);
  double in = 0, all = 0;
  for (const auto& res : residuals[best])
    for (std::size_t k = 0; k < res.size(); ++k, ++all)
      in += std::abs(res[k]) <= 1.96 * sigma_test[k];
  r.backtest_coverage95 = all > 0 ? in / all : 0;
}

}  // namespace

namespace {

std::vector<double> mean_of(const std::vector<const std::vector<double>*>& parts) {
  std::vector<double> m(parts.front()->size(), 0.0);
  for (const auto* p : parts)
    for (std::size_t k = 0; k < m.size(); ++k) m[k] += (*p)[k] / double(parts.size());
  return m;
}

// The combination: the mean of the forecasts (all but the seasonal naive's) whose mean backtest MSE
// is within kCombineWithin of the best of them (at least two; otherwise none is added). Its
// backtest residuals are the mean of theirs, origin by origin.
void add_combination(const series_data& d, series_result& r,
                     std::vector<std::vector<std::vector<double>>>& residuals) {
  constexpr double kCombineWithin = 2.0;
  auto& fs = r.forecasters;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& f : fs)
    if (f.name != "seasonal_naive" && f.backtest.origins > 0)
      best = std::min(best, f.backtest.mean_mse);
  std::vector<std::size_t> members;
  for (std::size_t i = 0; i < fs.size(); ++i)
    if (fs[i].name != "seasonal_naive" && fs[i].backtest.origins > 0 &&
        fs[i].backtest.mean_mse <= kCombineWithin * best)
      members.push_back(i);
  if (members.size() < 2) return;
  auto pick = [&](auto member) {
    std::vector<const std::vector<double>*> v;
    for (std::size_t i : members) v.push_back(&member(fs[i]));
    return mean_of(v);
  };
  series_forecaster c;
  c.name = "combination";
  c.test.rollout = pick([](const series_forecaster& f) -> const auto& { return f.test.rollout; });
  c.test.teacher_forced =
      pick([](const series_forecaster& f) -> const auto& { return f.test.teacher_forced; });
  if (!fs.front().future.empty())
    c.future = pick([](const series_forecaster& f) -> const auto& { return f.future; });
  const auto& v = d.series.values;
  const std::span<const double> truth(v.data() + d.known, std::size_t(d.horizon));
  c.rollout = forecast_score(c.test.rollout, truth);
  c.teacher_forced = forecast_score(c.test.teacher_forced, truth);
  c.test.mse_rollout = c.rollout.mse;
  c.test.mse_teacher_forced = c.teacher_forced.mse;
  std::vector<std::vector<double>> resid;
  for (std::size_t o = 0; o < residuals[members.front()].size(); ++o) {
    std::vector<const std::vector<double>*> parts;
    for (std::size_t i : members) parts.push_back(&residuals[i][o]);
    resid.push_back(mean_of(parts));
  }
  c.backtest = backtest_score(resid, d.horizon);
  for (std::size_t i : members) r.combination_of.push_back(fs[i].name);
  fs.push_back(std::move(c));
  residuals.push_back(std::move(resid));
}

struct evaluated {
  std::string name;
  window_predictor predict;   // on the models fitted for the test part (empty: refit)
  window_predictor backtest;  // on the models the backtest may use (empty: refit)
  rollout_fn refit;           // a forecaster fitted on the whole context (Holt–Winters' is hw)
};

// A refitted forecaster over the test part: fitted on the known part (rollout), on the known
// part and the true values before each step (one step ahead), and on all of the series.
void refit_forecasts(const series_data& d, const rollout_fn& refit, index future,
                     series_forecaster& f) {
  const auto& v = d.series.values;
  f.test.rollout = refit(std::span<const double>(v.data(), std::size_t(d.known)), d.horizon);
  for (index k = 0; k < d.horizon; ++k)
    f.test.teacher_forced.push_back(
        refit(std::span<const double>(v.data(), std::size_t(d.known + k)), 1).front());
  if (future > 0) f.future = refit(v, future);
}

// Holt–Winters over the test part: fitted on the known part, rollout and one-step (the state
// updated with each true value), and beyond the series refitted on all of it.
void holt_winters_forecasts(const series_data& d, const hw_choice& hc, index future,
                            series_forecaster& f) {
  const auto& v = d.series.values;
  const std::span<const double> known(v.data(), std::size_t(d.known));
  hw_model h(hc, known);
  f.test.rollout = h.forecast(d.horizon);
  for (index k = 0; k < d.horizon; ++k) {
    f.test.teacher_forced.push_back(h.predict_next());
    h.update(v[std::size_t(d.known + k)]);
  }
  if (future > 0) f.future = hw_model(hc, v).forecast(future);
}

// e's forecasts over the test part and `future` steps beyond the series, into f; returns its
// rollout for the backtest.
rollout_fn test_forecasts(const series_data& d, const evaluated& e, const hw_choice& hc,
                          index future, series_forecaster& f) {
  const auto& v = d.series.values;
  if (e.predict) {
    const std::span<const double> known(v.data(), std::size_t(d.known));
    const std::span<const double> truth(v.data() + d.known, std::size_t(d.horizon));
    f.test = forecast_run(known, truth, d.window, e.predict);
    if (future > 0) f.future = forecast_rollout(v, future, d.window, e.predict);
    return [&d, &e](std::span<const double> c, index s) {
      return forecast_rollout(c, s, d.window, e.backtest);
    };
  }
  if (e.refit) {
    refit_forecasts(d, e.refit, future, f);
    return e.refit;
  }
  holt_winters_forecasts(d, hc, future, f);
  return [hc](std::span<const double> c, index s) { return hw_model(hc, c).forecast(s); };
}

}  // namespace

// Every forecaster on the test horizon (rollout and teacher-forced), `future` steps past the
// series, and the backtest that recommends one; the known part's mean as the floor.
series_result series_evaluate(const series_data& d, sequence_regressor<float>& m, index future,
                              index backtest_k) {
  const auto& v = d.series.values;
  const std::span<const double> known(v.data(), std::size_t(d.known)), all(v);
  const std::span<const double> truth(v.data() + d.known, std::size_t(d.horizon));
  series_result r;
  r.nw = detail::series_nw_fit(d, d.window, d.known);  // keys: every known window
  const nw_forecaster nw_train = detail::series_nw_fit(d, d.window, d.train_end);
  const std::vector<index> origins = backtest_origins(d, backtest_k);
  const auto [hc, hw_why] = detail::choose_holt_winters(d);
  r.holt_winters_season = hw_season_name(hc.on_log ? hw_season::multiplicative : hc.season);
  r.holt_winters = hw_why;
  const auto [trend, trend_why] = detail::choose_trend(d);
  r.kernel_trend = trend_why;
  const window_predictor transformer = forecast_predictor(m);
  const std::vector<evaluated> forecasters = {
      {"transformer", transformer, transformer, {}},
      {"nw", detail::series_nw_predictor(d, r.nw), detail::series_nw_predictor(d, nw_train), {}},
      {"holt_winters", {}, {}, {}},
      {"seasonal_naive",
       seasonal_naive_predictor(d.period.period),
       seasonal_naive_predictor(d.period.period),
       {}},
      {"kernel_trend", {}, {}, [&d, t = trend](std::span<const double> c, index s) {
         return kernel_trend_forecast(d, c, s, t);
       }}};
  progress_step step(fmt::format("forecasts ({} steps, {} backtest origins, {} forecasters)",
                                 d.horizon + future, origins.size(), forecasters.size()),
                     static_cast<index>(forecasters.size()));
  std::vector<std::vector<std::vector<double>>> residuals(forecasters.size());
  for (std::size_t i = 0; i < forecasters.size(); ++i) {
    const evaluated& e = forecasters[i];
    series_forecaster f;
    f.name = e.name;
    const rollout_fn roll = test_forecasts(d, e, hc, future, f);
    check_finite(e.name, f.test.rollout, "rollout");
    check_finite(e.name, f.test.teacher_forced, "teacher-forced");
    check_finite(e.name, f.future, "future");
    f.rollout = forecast_score(f.test.rollout, truth);
    f.teacher_forced = forecast_score(f.test.teacher_forced, truth);
    f.test.mse_rollout = f.rollout.mse;
    f.test.mse_teacher_forced = f.teacher_forced.mse;
    f.backtest = backtest(d, origins, roll, residuals[i]);
    r.forecasters.push_back(std::move(f));
    step.set(static_cast<index>(i + 1));
  }
  add_combination(d, r, residuals);
  recommend(d, r, residuals);
  const double mean = std::accumulate(known.begin(), known.end(), 0.0) / double(known.size());
  r.mean = forecast_score(std::vector<double>(truth.size(), mean), truth);
  for (index k = 1; k <= future; ++k)
    r.future_time.push_back(d.series.time.back() + double(k) * d.series.step);
  return r;
}

}  // namespace kf::model
