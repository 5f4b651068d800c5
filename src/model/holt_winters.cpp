// Holt–Winters (model/holt_winters.hpp): the error-correction recursions, the classical start and
// a Nelder–Mead least-squares fit of the smoothing parameters and the initial level and trend.
#include "kernelformer/model/holt_winters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "detail/eigen.hpp"

namespace kf::model {

const char* hw_season_name(hw_season s) {
  switch (s) {
    case hw_season::none:
      return "none";
    case hw_season::additive:
      return "additive";
    case hw_season::multiplicative:
      return "multiplicative";
  }
  return "?";
}

const char* hw_start_name(hw_start s) { return s == hw_start::fitted ? "fitted" : "classical"; }

double holt_winters::predict_next() const {
  const double lb = level + trend;
  if (seasonal.empty()) return lb;
  const double s = seasonal[static_cast<std::size_t>(head)];
  return season == hw_season::multiplicative ? lb * s : lb + s;
}

void holt_winters::update(double y) {
  const double lb = level + trend, e = y - predict_next();
  if (seasonal.empty()) {
    level = lb + alpha * e;
    trend += alpha * beta * e;
  } else {
    double& s = seasonal[static_cast<std::size_t>(head)];
    if (season == hw_season::multiplicative) {
      level = lb + alpha * e / s;
      trend += alpha * beta * e / s;
      s += gamma * e / lb;
    } else {
      level = lb + alpha * e;
      trend += alpha * beta * e;
      s += gamma * e;
    }
    head = (head + 1) % period;  // the updated value is now the newest
  }
  ++fitted;
}

std::vector<double> holt_winters::forecast(index steps) const {
  std::vector<double> f(static_cast<std::size_t>(std::max<index>(steps, 0)));
  for (index k = 1; k <= steps; ++k) {
    const double lb = level + double(k) * trend;
    double& out = f[static_cast<std::size_t>(k - 1)];
    if (seasonal.empty()) {
      out = lb;
      continue;
    }
    const double s = seasonal[static_cast<std::size_t>((head + k - 1) % period)];
    out = season == hw_season::multiplicative ? lb * s : lb + s;
  }
  return f;
}

namespace {

double logistic(double u) { return 1 / (1 + std::exp(-u)); }
double logit(double p) { return std::log(p / (1 - p)); }

// Minimizes f from x0 (simplex steps `step` per coordinate): the textbook Nelder–Mead
// (reflection 1, expansion 2, contraction ½, shrink ½), stopped when the simplex's values agree
// to `tol` (relative) or after max_evals.
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, const std::vector<double>& step,
                                int max_evals, double tol) {
  const std::size_t k = x0.size();
  std::vector<std::vector<double>> p(k + 1, x0);
  std::vector<double> v(k + 1);
  for (std::size_t i = 0; i < k; ++i) p[i + 1][i] += step[i];
  int evals = 0;
  for (std::size_t i = 0; i <= k; ++i, ++evals) v[i] = f(p[i]);
  std::vector<std::size_t> order(k + 1);
  while (evals < max_evals) {
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
    const std::size_t best = order[0], worst = order[k], second = order[k - 1];
    if (std::isfinite(v[worst]) &&
        std::abs(v[worst] - v[best]) <= tol * (std::abs(v[best]) + 1e-300))
      break;
    std::vector<double> c(k, 0.0);  // centroid of all but the worst
    for (std::size_t i = 0; i <= k; ++i)
      if (i != worst)
        for (std::size_t j = 0; j < k; ++j) c[j] += p[i][j] / double(k);
    auto along = [&](double t) {
      std::vector<double> x(k);
      for (std::size_t j = 0; j < k; ++j) x[j] = c[j] + t * (p[worst][j] - c[j]);
      return x;
    };
    const auto xr = along(-1.0);
    const double fr = f(xr);
    ++evals;
    if (fr < v[best]) {
      const auto xe = along(-2.0);
      const double fe = f(xe);
      ++evals;
      if (fe < fr) {
        p[worst] = xe, v[worst] = fe;
      } else {
        p[worst] = xr, v[worst] = fr;
      }
    } else if (fr < v[second]) {
      p[worst] = xr, v[worst] = fr;
    } else {
      const auto xc = along(fr < v[worst] ? -0.5 : 0.5);
      const double fc = f(xc);
      ++evals;
      if (fc < std::min(fr, v[worst])) {
        p[worst] = xc, v[worst] = fc;
      } else {  // shrink towards the best
        for (std::size_t i = 0; i <= k; ++i) {
          if (i == best) continue;
          for (std::size_t j = 0; j < k; ++j) p[i][j] = p[best][j] + 0.5 * (p[i][j] - p[best][j]);
          v[i] = f(p[i]);
          ++evals;
        }
      }
    }
  }
  return p[static_cast<std::size_t>(std::min_element(v.begin(), v.end()) - v.begin())];
}

double mean_of(std::span<const double> y, index from, index count) {
  double s = 0;
  for (index i = from; i < from + count; ++i) s += y[static_cast<std::size_t>(i)];
  return s / double(count);
}

// The classical start: level and trend from the first two periods, each season's deviation from
// the first period's mean (normalized to sum 0, or to mean 1), the level placed one step before
// the first value.
holt_winters classical_start(std::span<const double> y, hw_season season, index m) {
  holt_winters h;
  h.season = season;
  h.period = season == hw_season::none ? 0 : m;
  const index p = std::max<index>(m, 2);
  const double m1 = mean_of(y, 0, p), m2 = mean_of(y, p, p);
  h.trend = (m2 - m1) / double(p);
  h.level = m1 - h.trend * double(p + 1) / 2;
  if (season != hw_season::none) {
    h.seasonal.resize(static_cast<std::size_t>(m));
    double sum = 0;
    for (index i = 0; i < m; ++i) {
      const double yi = y[static_cast<std::size_t>(i)];
      // the first period's values against the trend line through them
      const double base = m1 + h.trend * (double(i) - double(m - 1) / 2);
      h.seasonal[static_cast<std::size_t>(i)] =
          season == hw_season::multiplicative ? yi / base : yi - base;
      sum += h.seasonal[static_cast<std::size_t>(i)];
    }
    for (double& s : h.seasonal)
      s = season == hw_season::multiplicative ? s * double(m) / sum : s - sum / double(m);
  }
  return h;
}

// The sum of squared one-step errors of h run over y (+inf when the state leaves the model's
// domain: a non-finite prediction, or l + b ≤ 0 with multiplicative seasons).
double run_sse(holt_winters& h, std::span<const double> y) {
  double sse = 0;
  for (double v : y) {
    const double p = h.predict_next();
    if (!std::isfinite(p) || (h.season == hw_season::multiplicative && !(h.level + h.trend > 0)))
      return std::numeric_limits<double>::infinity();
    sse += (v - p) * (v - p);
    h.update(v);
  }
  return sse;
}

// The predictions of h run over y, into pred (false when the state leaves the model's domain).
bool run_predictions(holt_winters h, std::span<const double> y, std::vector<double>& pred) {
  pred.resize(y.size());
  for (std::size_t t = 0; t < y.size(); ++t) {
    pred[t] = h.predict_next();
    if (!std::isfinite(pred[t]) ||
        (h.season == hw_season::multiplicative && !(h.level + h.trend > 0)))
      return false;
    h.update(y[t]);
  }
  return true;
}

// The initial state's free coordinates: level, trend and the first m − 1 seasons (the last one
// makes them sum to 0, or average 1: level and seasons are otherwise not identified).
std::vector<double> initial_coords(const holt_winters& h) {
  std::vector<double> c = {h.level, h.trend};
  for (std::size_t i = 0; i + 1 < h.seasonal.size(); ++i) c.push_back(h.seasonal[i]);
  return c;
}
void set_initial(holt_winters& h, const std::vector<double>& c) {
  h.level = c[0];
  h.trend = c[1];
  if (h.seasonal.empty()) return;
  double sum = 0;
  for (std::size_t i = 0; i + 1 < h.seasonal.size(); ++i) sum += h.seasonal[i] = c[i + 2];
  const double total = h.season == hw_season::multiplicative ? double(h.period) : 0.0;
  h.seasonal.back() = total - sum;
}

// The initial state that minimizes the one-step SSE for h's smoothing parameters, by
// Gauss–Newton from h's own: the predictions are linear in the initial state for additive
// seasons (one step is exact), nearly so for multiplicative ones (three steps, each halved until
// the SSE falls). The Jacobian by differences of whole runs: m + 2 runs per step.
void fit_initial_state(holt_winters& h, std::span<const double> y, double scale) {
  const bool linear = h.season != hw_season::multiplicative;
  std::vector<double> c = initial_coords(h), base, moved;
  const auto k = c.size();
  const auto n = static_cast<Eigen::Index>(y.size());
  if (!run_predictions(h, y, base)) return;
  double sse = 0;
  for (std::size_t t = 0; t < y.size(); ++t) sse += (y[t] - base[t]) * (y[t] - base[t]);
  for (int it = 0; it < (linear ? 1 : 3); ++it) {
    Eigen::MatrixXd jac(n, static_cast<Eigen::Index>(k));
    Eigen::VectorXd r(n);
    for (Eigen::Index t = 0; t < n; ++t) r(t) = y[std::size_t(t)] - base[std::size_t(t)];
    for (std::size_t j = 0; j < k; ++j) {
      const double delta = linear ? scale : 1e-6 * (std::abs(c[j]) + scale * 1e-3);
      holt_winters p = h;
      auto cj = c;
      cj[j] += delta;
      set_initial(p, cj);
      if (!run_predictions(p, y, moved)) return;
      for (Eigen::Index t = 0; t < n; ++t)
        jac(t, Eigen::Index(j)) = (moved[std::size_t(t)] - base[std::size_t(t)]) / delta;
    }
    const Eigen::VectorXd step = (jac.transpose() * jac).ldlt().solve(jac.transpose() * r);
    bool better = false;
    for (double f = 1; f > 1e-3 && !better; f /= 2) {
      holt_winters p = h;
      auto cn = c;
      for (std::size_t j = 0; j < k; ++j) cn[j] += f * step(Eigen::Index(j));
      set_initial(p, cn);
      double s2 = std::numeric_limits<double>::infinity();
      if (run_predictions(p, y, moved)) {
        s2 = 0;
        for (std::size_t t = 0; t < y.size(); ++t) s2 += (y[t] - moved[t]) * (y[t] - moved[t]);
      }
      if (s2 < sse) better = true, sse = s2, c = cn, h = p, base = moved;
    }
    if (!better) break;
  }
}

}  // namespace

holt_winters holt_winters_fit(std::span<const double> y, hw_season season, index period,
                              hw_start start_kind) {
  const index n = static_cast<index>(y.size());
  const index m = season == hw_season::none ? 0 : period;
  if (season != hw_season::none && m < 2)
    throw std::invalid_argument("Holt–Winters: a seasonal model needs a period of at least 2");
  const index need = 2 * std::max<index>(m, 2) + 2;
  if (n < need)
    throw std::invalid_argument(fmt::format(
        "Holt–Winters: {} values, needs at least {} (two periods and two more)", n, need));
  for (double v : y)
    if (!std::isfinite(v)) throw std::invalid_argument("Holt–Winters: a value is not finite");
  if (season == hw_season::multiplicative)
    for (double v : y)
      if (!(v > 0))
        throw std::invalid_argument(
            "Holt–Winters: multiplicative seasons need every value above 0");
  const holt_winters start = classical_start(y, season, m);
  double mean = 0, var = 0;
  for (double v : y) mean += v / double(n);
  for (double v : y) var += (v - mean) * (v - mean) / double(n);
  const double scale = std::sqrt(var) > 0 ? std::sqrt(var) : 1.0;
  // Up to kProfiledPeriod, the initial state (level, trend, seasons) is fitted for each α, β, γ
  // (profiled out, as statsmodels' "estimated" start fits it too); beyond it (weekly seasons:
  // m + 2 runs and an (m + 1)² system per evaluation) Nelder–Mead moves the classical start's
  // level and trend only.
  const bool profiled = start_kind == hw_start::fitted && m <= kProfiledPeriod;
  // θ = (logit α, logit β, logit γ[, level offset / scale, trend offset / (scale / m)])
  const double trend_unit = scale / double(std::max<index>(m, 1));
  auto state_of = [&](const std::vector<double>& t) {
    holt_winters h = start;
    h.alpha = logistic(t[0]);
    h.beta = logistic(t[1]);
    h.gamma = season == hw_season::none ? 0 : logistic(t[2]) * (1 - h.alpha);
    if (profiled) {
      fit_initial_state(h, y, scale);
    } else {
      h.level = start.level + t[3] * scale;
      h.trend = start.trend + t[4] * trend_unit;
    }
    return h;
  };
  const auto sse = [&](const std::vector<double>& t) {
    holt_winters h = state_of(t);
    return run_sse(h, y);
  };
  std::vector<double> theta = {logit(0.3), logit(0.1), logit(0.1)};
  std::vector<double> step = {1.0, 1.0, 1.0};
  if (!profiled) theta.insert(theta.end(), {0.0, 0.0}), step.insert(step.end(), {0.1, 0.1});
  for (int restart = 0; restart < 3; ++restart)  // restarts: Nelder–Mead can stall early
    theta = nelder_mead(sse, theta, step, 2000, 1e-12);
  holt_winters h = state_of(theta);
  h.sse = run_sse(h, y);
  if (!std::isfinite(h.sse))
    throw std::invalid_argument("Holt–Winters: no parameters keep the fit finite");
  return h;
}

}  // namespace kf::model
