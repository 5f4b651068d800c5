// kernelformer/model/holt_winters.hpp — Holt–Winters exponential smoothing, the classical
// forecaster `kf train series` puts beside its own (what users compare against).
//
// Additive trend; seasonality none, additive or multiplicative, period m (the error form of
// Hyndman & Athanasopoulos, "Forecasting: Principles and Practice", §8.3):
//   additive:        ŷ = l + b + s_{t−m}
//                    l' = l + b + α e,  b' = b + αβ e,  s' = s_{t−m} + γ e,     e = y − ŷ
//   multiplicative:  ŷ = (l + b) s_{t−m}
//                    l' = l + b + α e / s_{t−m},  b' = b + αβ e / s_{t−m},
//                    s' = s_{t−m} + γ e / (l + b)
// h steps ahead of the last state: (l + h b) ⊕ s (⊕ = + or ×, s the season's latest value).
// Fitted by least squares on the one-step errors of the fitted part: α, β, γ in (0, 1) by
// Nelder–Mead, and for each of them the initial level, trend and seasons that minimize the
// errors (Gauss–Newton from the classical start: the first period's mean, the mean change between
// the first two periods, each season's deviation from the first mean) — statsmodels'
// ExponentialSmoothing(trend="add", seasonal=…) fits the same model the same way. With
// hw_start::classical (or periods above kProfiledPeriod) the seasons keep their classical start
// and Nelder–Mead moves the initial level and trend only: fewer parameters, which forecasts a
// changing season better when the fitted start would freeze it (γ → 0).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf::model {

enum class hw_season { none, additive, multiplicative };
const char* hw_season_name(hw_season s);  // none | additive | multiplicative
enum class hw_start { fitted, classical };
const char* hw_start_name(hw_start s);  // fitted | classical

struct holt_winters {
  hw_season season = hw_season::additive;
  index period = 0;  // m; 0 with season none
  double alpha = 0.5, beta = 0.1, gamma = 0.1;
  double level = 0, trend = 0;
  std::vector<double> seasonal;  // the last m seasonal values, a ring (empty: none)
  index head = 0;                // seasonal[head]: the oldest, the season of the next step
  double sse = 0;                // the fit's sum of squared one-step errors
  index fitted = 0;              // values the state has seen

  double predict_next() const;                      // one step ahead
  void update(double y);                            // the state after observing y
  std::vector<double> forecast(index steps) const;  // 1 … steps ahead
};

inline constexpr index kProfiledPeriod = 24;

// Fits the model to y (y.size() ≥ 2 m + 2; multiplicative needs every y > 0). Throws
// std::invalid_argument saying what is missing.
holt_winters holt_winters_fit(std::span<const double> y, hw_season season, index period,
                              hw_start start = hw_start::fitted);

}  // namespace kf::model
