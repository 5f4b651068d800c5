// kf train series's tuning (series_tuning.hpp): the backtest's scoring, Holt–Winters' variants
// and the kernel trend's bandwidth, chosen on origins before the validation tail.
#include "series_tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kernelformer/model/series_trend.hpp"

namespace kf::model::detail {
namespace {

constexpr index kTuningOrigins = 12;

// The variants the backtest chooses among: the fitted and the classical start, and with the log
// choice multiplicative seasons or additive ones on log y; no season without a period that fits
// twice in the training part.
std::vector<hw_choice> holt_winters_candidates(const series_data& d) {
  const index m = d.period.period;
  const bool seasonal = m >= 2 && d.train_end >= 2 * m + 2;
  std::vector<hw_choice> c;
  for (const hw_start st : {hw_start::fitted, hw_start::classical}) {
    if (!seasonal) {
      c.push_back({hw_season::none, 0, st, false});
      continue;
    }
    c.push_back({d.log ? hw_season::multiplicative : hw_season::additive, m, st, false});
    if (d.log) c.push_back({hw_season::additive, m, st, true});
  }
  return c;
}

}  // namespace

std::string hw_choice::name() const {
  return fmt::format("{}, {} start",
                     on_log ? std::string("additive seasons on log y")
                            : fmt::format("{} seasons", hw_season_name(season)),
                     hw_start_name(start));
}

hw_model::hw_model(const hw_choice& c, std::span<const double> y) : on_log(c.on_log) {
  if (!on_log) {
    h = holt_winters_fit(y, c.season, c.period, c.start);
    return;
  }
  std::vector<double> ly(y.begin(), y.end());
  for (double& v : ly) v = std::log(v);
  h = holt_winters_fit(ly, c.season, c.period, c.start);
}
double hw_model::predict_next() const {
  return on_log ? std::exp(h.predict_next()) : h.predict_next();
}
void hw_model::update(double v) { h.update(on_log ? std::log(v) : v); }
std::vector<double> hw_model::forecast(index steps) const {
  auto f = h.forecast(steps);
  if (on_log)
    for (double& v : f) v = std::exp(v);
  return f;
}

series_backtest_score backtest_score(const std::vector<std::vector<double>>& resid, index horizon) {
  series_backtest_score s;
  std::vector<double> mses, ss(static_cast<std::size_t>(horizon), 0.0), count(ss.size(), 0.0);
  for (const auto& r : resid) {
    double mse = 0;
    for (std::size_t k = 0; k < r.size(); ++k) {
      mse += r[k] * r[k] / double(r.size());
      ss[k] += r[k] * r[k];
      count[k] += 1;
    }
    mses.push_back(mse);
  }
  s.origins = static_cast<index>(resid.size());
  if (mses.empty()) return s;
  s.mean_mse = std::accumulate(mses.begin(), mses.end(), 0.0) / double(mses.size());
  for (double m : mses) s.sd_mse += (m - s.mean_mse) * (m - s.mean_mse) / double(mses.size());
  s.sd_mse = std::sqrt(s.sd_mse);
  for (std::size_t k = 0; k < ss.size() && count[k] > 0; ++k)
    s.step_rms.push_back(std::sqrt(ss[k] / count[k]));
  return s;
}

series_backtest_score backtest(const series_data& d, const std::vector<index>& origins,
                               const rollout_fn& roll, std::vector<std::vector<double>>& resid,
                               index end) {
  if (end <= 0) end = d.known;
  const auto& v = d.series.values;
  for (index o : origins) {
    const index h = std::min(d.horizon, end - o);
    const auto f = roll(std::span<const double>(v.data(), std::size_t(o)), h);
    std::vector<double> r(static_cast<std::size_t>(h));
    for (index k = 0; k < h; ++k) r[std::size_t(k)] = v[std::size_t(o + k)] - f[std::size_t(k)];
    resid.push_back(std::move(r));
  }
  return backtest_score(resid, d.horizon);
}

std::vector<double> kernel_trend_forecast(const series_data& d, std::span<const double> c,
                                          index steps, const trend_choice& t) {
  std::vector<double> z(c.begin(), c.end());
  if (d.log)
    for (double& v : z) v = std::log(v);
  kernel_trend k = kernel_trend_fit(z, d.period.period, t.bandwidth);
  if (t.flat) k.slope = 0;
  auto f = k.forecast(steps);
  if (d.log)
    for (double& v : f) v = std::exp(v);
  return f;
}

namespace {

// The tuning origins, where Holt–Winters' variant and the kernel trend's bandwidth are chosen:
// up to k, evenly from the middle of the training part (and at least three periods in) to
// train_end − horizon, each forecast scored on values before train_end only — so the comparison,
// from train_end on, scores every forecaster where none of its choices was made. Empty (the
// defaults are used) when fewer than 3 fit.
std::vector<index> tuning_origins(const series_data& d, index k) {
  const index m = std::max<index>(d.period.period, 2);
  const index from = std::max(d.train_end / 2, 3 * m + 2), last = d.train_end - d.horizon;
  std::vector<index> o;
  if (last - from + 1 < 3) return o;
  k = std::min(k, last - from + 1);
  for (index j = 0; j < k; ++j) o.push_back(from + (k == 1 ? 0 : j * (last - from) / (k - 1)));
  o.erase(std::unique(o.begin(), o.end()), o.end());
  return o;
}

}  // namespace

// The Holt–Winters variant with the lowest mean MSE over the tuning origins (the first, the
// fitted start, for a series too short for them), and why, for the summary.
std::pair<hw_choice, std::string> choose_holt_winters(const series_data& d) {
  const auto candidates = holt_winters_candidates(d);
  const auto origins = tuning_origins(d, kTuningOrigins);
  if (origins.empty())
    return {candidates.front(),
            candidates.front().name() + " (the default: too short to choose on the training part)"};
  std::size_t best = 0;
  std::vector<double> mse;
  for (const auto& c : candidates) {
    std::vector<std::vector<double>> resid;
    const auto roll = [&](std::span<const double> ctx, index steps) {
      return hw_model(c, ctx).forecast(steps);
    };
    mse.push_back(backtest(d, origins, roll, resid, d.train_end).mean_mse);
    if (mse.back() < mse[best]) best = mse.size() - 1;
  }
  std::string why;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    why += fmt::format("{}{} {:.4g}", i ? "; " : "", candidates[i].name(), mse[i]);
  return {candidates[best],
          fmt::format("{} (lowest mean MSE of {} variants over {} tuning origins: {})",
                      candidates[best].name(), candidates.size(), origins.size(), why)};
}

// The kernel trend's bandwidth, in steps — one of m/2, m, 2m, 3m, 4m, 6m, 8m (m the period, 12
// without one) — and slope (the local line's, or flat): the pair with the lowest mean MSE over
// the tuning origins (refitted at each; 2m, sloped, without them). Not by leave-one-out CV or AICc:
// over serially correlated noise both pick a bandwidth of one or two steps, which fits the noise
// and extrapolates its last slope.
std::pair<trend_choice, std::string> choose_trend(const series_data& d) {
  const double m = double(d.period.period >= 2 ? d.period.period : 12);
  const auto origins = tuning_origins(d, kTuningOrigins);
  if (origins.empty())
    return {{2 * m, false},
            fmt::format("bandwidth {:.4g} steps, sloped (the default: too short to choose on the "
                        "training part)",
                        2 * m)};
  trend_choice best;
  double best_mse = std::numeric_limits<double>::infinity();
  std::string why;
  for (const bool flat : {false, true})
    for (const double h : {m / 2, m, 2 * m, 3 * m, 4 * m, 6 * m, 8 * m}) {
      const trend_choice t{h, flat};
      std::vector<std::vector<double>> resid;
      const auto roll = [&](std::span<const double> c, index s) {
        return kernel_trend_forecast(d, c, s, t);
      };
      const double mse = backtest(d, origins, roll, resid, d.train_end).mean_mse;
      why += fmt::format("{}{:.4g}{} {:.4g}", why.empty() ? "" : "; ", h, flat ? " flat" : "", mse);
      if (mse < best_mse) best = t, best_mse = mse;
    }
  return {best, fmt::format("bandwidth {:.4g} steps, {} (lowest mean MSE of 14 choices over {} "
                            "tuning origins: {})",
                            best.bandwidth, best.flat ? "flat" : "sloped", origins.size(), why)};
}

}  // namespace kf::model::detail
