// Internal to kf train series (series_backtest.cpp, series_tuning.cpp): the backtest's scoring,
// and the Holt–Winters and kernel-trend forecasters with the choices made on the tuning origins.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernelformer/model/holt_winters.hpp"
#include "kernelformer/model/series_experiment.hpp"

namespace kf::model::detail {

// A forecaster as the comparison runs it: rollout `steps` values after context (the whole
// series before the origin).
using rollout_fn = std::function<std::vector<double>(std::span<const double> context, index steps)>;

// A Holt–Winters variant as the comparison fits it: the season, the start, and with the log
// choice either multiplicative seasons on y or additive ones on log y (forecasts exponentiated).
struct hw_choice {
  hw_season season = hw_season::none;
  index period = 0;
  hw_start start = hw_start::fitted;
  bool on_log = false;
  std::string name() const;
};

// Holt–Winters fitted on y (log y for on_log), predicting in data units.
struct hw_model {
  holt_winters h;
  bool on_log = false;
  hw_model(const hw_choice& c, std::span<const double> y);
  double predict_next() const;
  void update(double v);
  std::vector<double> forecast(index steps) const;
};

// The kernel trend as the comparison fits it: the smoother's bandwidth in steps, and whether the
// forecast follows the last value's slope or stays level (slope 0: the trend's last value
// carried forward with the season).
struct trend_choice {
  double bandwidth = 0;
  bool flat = false;
};

// The kernel-trend forecaster on the context's modelled values (log y with the log choice).
std::vector<double> kernel_trend_forecast(const series_data& d, std::span<const double> c,
                                          index steps, const trend_choice& t);

// The score of a backtest's residuals (one vector per origin, the residual at each step).
series_backtest_score backtest_score(const std::vector<std::vector<double>>& resid, index horizon);

// From each origin, roll's forecast of up to d.horizon values against the truth (which stops at
// `end`; 0: at the known part's end): the residuals, appended to resid, and their score.
series_backtest_score backtest(const series_data& d, const std::vector<index>& origins,
                               const rollout_fn& roll, std::vector<std::vector<double>>& resid,
                               index end = 0);

// The choices made on the tuning origins (before the validation tail), each with why.
std::pair<hw_choice, std::string> choose_holt_winters(const series_data& d);
std::pair<trend_choice, std::string> choose_trend(const series_data& d);

}  // namespace kf::model::detail
