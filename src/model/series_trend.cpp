// The kernel-trend forecaster (model/series_trend.hpp): moving-average season, local-linear
// trend, extrapolated from the last value's local line.
#include "kernelformer/model/series_trend.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "kernelformer/regression/smoother.hpp"

namespace kf::model {

namespace {

// The centered moving average over one period (2×m for an even m: half weights at both ends);
// NaN where the window does not fit.
std::vector<double> centered_moving_average(std::span<const double> z, index m) {
  const auto n = static_cast<index>(z.size());
  std::vector<double> ma(z.size(), std::nan(""));
  const index half = m / 2;
  for (index t = half; t + half < n; ++t) {
    double s = 0;
    if (m % 2 == 1) {
      for (index j = t - half; j <= t + half; ++j) s += z[std::size_t(j)];
      ma[std::size_t(t)] = s / double(m);
    } else {
      for (index j = t - half + 1; j < t + half; ++j) s += z[std::size_t(j)];
      s += 0.5 * (z[std::size_t(t - half)] + z[std::size_t(t + half)]);
      ma[std::size_t(t)] = s / double(m);
    }
  }
  return ma;
}

// The season (m offsets by phase t mod m, summing to 0) of z against its moving average.
std::vector<double> seasonal_offsets(std::span<const double> z, index m) {
  const auto ma = centered_moving_average(z, m);
  std::vector<double> sum(std::size_t(m), 0.0), count(std::size_t(m), 0.0);
  for (std::size_t t = 0; t < z.size(); ++t)
    if (!std::isnan(ma[t])) sum[t % std::size_t(m)] += z[t] - ma[t], count[t % std::size_t(m)]++;
  double mean = 0;
  for (std::size_t p = 0; p < sum.size(); ++p)
    mean += (sum[p] = count[p] > 0 ? sum[p] / count[p] : 0.0) / double(m);
  for (double& s : sum) s -= mean;
  return sum;
}

}  // namespace

std::vector<double> kernel_trend::forecast(index steps) const {
  std::vector<double> f;
  for (index k = 1; k <= steps; ++k) {
    double v = level + double(k) * slope;
    if (!season.empty()) v += season[std::size_t((k - 1) % index(season.size()))];
    f.push_back(v);
  }
  return f;
}

kernel_trend kernel_trend_fit(std::span<const double> z, index period, double bandwidth) {
  const auto n = static_cast<index>(z.size());
  const index m = period >= 2 ? period : 0;
  if (n < std::max<index>(2 * m, 8))
    throw std::invalid_argument(
        fmt::format("kernel trend: {} values, needs at least {}", n, std::max<index>(2 * m, 8)));
  for (double v : z)
    if (!std::isfinite(v)) throw std::invalid_argument("kernel trend: a value is not finite");
  kernel_trend k;
  std::vector<double> deseason(z.begin(), z.end());
  if (m > 0) {
    const auto by_phase = seasonal_offsets(z, m);
    for (std::size_t t = 0; t < deseason.size(); ++t) deseason[t] -= by_phase[t % std::size_t(m)];
    for (index j = 1; j <= m; ++j)  // the phase of the step j after the last value
      k.season.push_back(by_phase[std::size_t((n - 1 + j) % m)]);
  }
  matrix<double> t(n, 1);
  for (index i = 0; i < n; ++i) t(i, 0) = double(i);
  regression_spec spec;
  spec.method = regression_method::local_linear;
  spec.per_point = false;
  if (bandwidth > 0) spec.bandwidth = {bandwidth};
  const regression_fit fit =
      regression_fit_data(spec, std::move(t), std::move(deseason),
                          bandwidth > 0 ? bandwidth_criterion::fixed : bandwidth_criterion::loo_cv);
  matrix<double> at(2, 1);
  at(0, 0) = double(n - 2);
  at(1, 0) = double(n - 1);
  const auto p = regression_predict(fit, at.cview());
  k.level = p.fit[1];
  k.slope = p.fit[1] - p.fit[0];
  k.bandwidth = fit.spec.bandwidth.front();
  return k;
}

}  // namespace kf::model
