// LOWESS (kernelformer/regression/lowess.hpp): the sorted-window local fits, the delta skipping
// with linear interpolation, the bisquare robustness passes.
#include "kernelformer/regression/lowess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace kf {
namespace {

double cube(double v) { return v * v * v; }
double square(double v) { return v * v; }

struct sorted_data {
  const std::vector<double>& x;
  const std::vector<double>& y;
  double range;
};

// The local-linear fit at xs over the sorted window [left, right] — extended to the right over
// points tied within 0.999 h — with tricube weights times ROBUST (when given); W is scratch.
// False when every weight is 0 (the caller keeps y).
bool local_fit(const sorted_data& d, double xs, std::size_t left, std::size_t right,
               const std::vector<double>* robust, std::vector<double>& w, double& out) {
  const std::size_t n = d.x.size();
  const double h = std::max(xs - d.x[left], d.x[right] - xs);
  const double h9 = 0.999 * h, h1 = 0.001 * h;
  double total = 0;
  std::size_t end = left;
  for (; end < n; ++end) {
    w[end] = 0;
    const double r = std::abs(d.x[end] - xs);
    if (r <= h9) {
      w[end] = r <= h1 ? 1.0 : cube(1.0 - cube(r / h));
      if (robust != nullptr) w[end] *= (*robust)[end];
      total += w[end];
    } else if (d.x[end] > xs) {
      break;
    }
  }
  if (total <= 0) return false;
  for (std::size_t j = left; j < end; ++j) w[j] /= total;
  if (h > 0) {
    double mean = 0;
    for (std::size_t j = left; j < end; ++j) mean += w[j] * d.x[j];
    double slope = xs - mean, spread = 0;
    for (std::size_t j = left; j < end; ++j) spread += w[j] * square(d.x[j] - mean);
    if (std::sqrt(spread) > 0.001 * d.range) {  // spread out enough for a slope
      slope /= spread;
      for (std::size_t j = left; j < end; ++j) w[j] *= slope * (d.x[j] - mean) + 1.0;
    }
  }
  double v = 0;
  for (std::size_t j = left; j < end; ++j) v += w[j] * d.y[j];
  out = v;
  return true;
}

// Where a pass fits: the points, each with its window of nearest neighbours (the points tied
// with one take its value; those between two are interpolated). It depends on x and delta only,
// so it is planned once for every pass.
struct fit_site {
  std::size_t i, left, right;
};

std::vector<fit_site> plan_sites(const sorted_data& d, std::size_t neighbours, double delta) {
  const std::size_t n = d.x.size();
  std::vector<fit_site> sites;
  std::size_t left = 0, right = neighbours - 1, i = 0;
  for (;;) {
    // Slide the window right while that brings the nearest points closer to x_i.
    while (right < n - 1 && d.x[i] - d.x[left] > d.x[right + 1] - d.x[i]) ++left, ++right;
    sites.push_back({i, left, right});
    auto at = i;  // the last point fitted or tied with it
    const double cut = d.x[at] + delta;
    std::size_t k = at + 1;
    for (; k < n; ++k) {
      if (d.x[k] > cut) break;
      if (d.x[k] == d.x[at]) at = k;
    }
    if (at >= n - 1) break;
    i = std::max(at + 1, k - 1);
  }
  return sites;
}

// One pass: the local fits at the planned sites (in parallel: each is independent and computed
// exactly as alone), then ties copied and the points between sites interpolated.
void fit_pass(const sorted_data& d, const std::vector<fit_site>& sites,
              const std::vector<double>* robust, std::vector<double>& fitted) {
  const auto m = static_cast<std::ptrdiff_t>(sites.size());
#pragma omp parallel
  {
    std::vector<double> w(d.x.size());
#pragma omp for schedule(dynamic, 4)
    for (std::ptrdiff_t s = 0; s < m; ++s) {
      const fit_site& site = sites[static_cast<std::size_t>(s)];
      double v = 0;
      if (!local_fit(d, d.x[site.i], site.left, site.right, robust, w, v)) v = d.y[site.i];
      fitted[site.i] = v;
    }
  }
  const std::size_t n = d.x.size();
  for (std::size_t s = 0; s < sites.size(); ++s) {
    const std::size_t i = sites[s].i;
    std::size_t at = i;  // ties of x_i take its value
    while (at + 1 < n && d.x[at + 1] == d.x[i]) fitted[++at] = fitted[i];
    if (s + 1 == sites.size()) break;
    const std::size_t next = sites[s + 1].i;  // the points between two fits: interpolated
    const double gap = d.x[next] - d.x[at];
    for (std::size_t j = at + 1; j < next; ++j) {
      const double a = (d.x[j] - d.x[at]) / gap;
      fitted[j] = a * fitted[next] + (1.0 - a) * fitted[at];
    }
  }
}

// The bisquare robustness weights from the residuals; false when the residuals are effectively
// zero (6 × median |r| < 1e-7 × mean |r|): the passes stop.
bool robustness_weights(const std::vector<double>& residual, std::vector<double>& rw) {
  const std::size_t n = residual.size();
  std::vector<double> a(n);
  double mean_abs = 0;
  for (std::size_t j = 0; j < n; ++j) mean_abs += (a[j] = std::abs(residual[j]));
  mean_abs /= static_cast<double>(n);
  const std::size_t m1 = n / 2;
  std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(m1), a.end());
  double six_median = 6.0 * a[m1];
  if (n % 2 == 0) {
    const std::size_t m2 = n - m1 - 1;
    std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(m2), a.end());
    six_median = 3.0 * (a[m1] + a[m2]);
  }
  if (six_median < 1e-7 * mean_abs) return false;
  const double c9 = 0.999 * six_median, c1 = 0.001 * six_median;
  for (std::size_t j = 0; j < n; ++j) {
    const double r = std::abs(residual[j]);
    rw[j] = r <= c1 ? 1.0 : r <= c9 ? square(1.0 - square(r / six_median)) : 0.0;
  }
  return true;
}

void check_input(std::span<const double> x, std::span<const double> y, const lowess_spec& s) {
  if (x.size() != y.size())
    throw std::invalid_argument(
        fmt::format("lowess: {} x values but {} y values", x.size(), y.size()));
  if (x.size() < 2) throw std::invalid_argument("lowess: needs at least 2 points");
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]))
      throw std::invalid_argument(fmt::format("lowess: point {} is not finite", i + 1));
  if (!(s.span > 0 && s.span <= 1))
    throw std::invalid_argument(fmt::format("lowess: span {} must be in (0, 1]", s.span));
  if (s.iterations < 0 || s.iterations > 100)
    throw std::invalid_argument(
        fmt::format("lowess: iterations {} must be in 0..100", s.iterations));
  if (!std::isfinite(s.delta))
    throw std::invalid_argument("lowess: delta must be finite (negative: 1% of the range)");
}

}  // namespace

lowess_fit lowess(std::span<const double> x, std::span<const double> y, const lowess_spec& spec) {
  check_input(x, y, spec);
  const std::size_t n = x.size();
  lowess_fit f;
  f.order.resize(n);
  std::iota(f.order.begin(), f.order.end(), index{0});
  std::stable_sort(f.order.begin(), f.order.end(), [&](index a, index b) {
    return x[static_cast<std::size_t>(a)] < x[static_cast<std::size_t>(b)];
  });
  f.x.resize(n);
  f.y.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    f.x[k] = x[static_cast<std::size_t>(f.order[k])];
    f.y[k] = y[static_cast<std::size_t>(f.order[k])];
  }
  const sorted_data d{f.x, f.y, f.x.back() - f.x.front()};
  f.spec = spec;
  if (f.spec.delta < 0) f.spec.delta = 0.01 * d.range;
  const auto ns = static_cast<std::size_t>(spec.span * static_cast<double>(n) + 1e-7);
  f.neighbours = static_cast<index>(std::clamp<std::size_t>(ns, 2, n));
  f.fitted.assign(n, 0.0);
  f.weights.assign(n, 1.0);
  std::vector<double> residual(n);
  const auto sites = plan_sites(d, static_cast<std::size_t>(f.neighbours), f.spec.delta);
  f.local_fits = static_cast<index>(sites.size());
  for (int pass = 0;; ++pass) {
    fit_pass(d, sites, pass > 0 ? &f.weights : nullptr, f.fitted);
    f.passes = pass + 1;
    if (pass >= spec.iterations) break;
    for (std::size_t j = 0; j < n; ++j) residual[j] = f.y[j] - f.fitted[j];
    if (!robustness_weights(residual, f.weights)) break;
  }
  return f;
}

std::vector<double> lowess_predict(const lowess_fit& fit, std::span<const double> at) {
  const std::size_t n = fit.x.size(), ns = static_cast<std::size_t>(fit.neighbours);
  if (n < 2 || ns < 2 || ns > n || fit.y.size() != n || fit.weights.size() != n)
    throw std::invalid_argument("lowess_predict: not a fitted lowess");
  const sorted_data d{fit.x, fit.y, fit.x.back() - fit.x.front()};
  const std::vector<double>* robust = fit.passes > 1 ? &fit.weights : nullptr;
  std::vector<double> out(at.size()), w(n);
  for (std::size_t q = 0; q < at.size(); ++q) {
    const double v = at[q];
    if (!std::isfinite(v))
      throw std::invalid_argument(fmt::format("lowess_predict: point {} is not finite", q + 1));
    // The ns points nearest v: from a window left of them, slid right while that brings them
    // closer (as the fit's own windows are).
    const auto near =
        static_cast<std::size_t>(std::lower_bound(fit.x.begin(), fit.x.end(), v) - fit.x.begin());
    std::size_t left = std::min(near > ns ? near - ns : 0, n - ns), right = left + ns - 1;
    while (right < n - 1 && v - d.x[left] > d.x[right + 1] - v) ++left, ++right;
    double y = 0;
    out[q] = local_fit(d, v, left, right, robust, w, y) ? y : std::nan("");
  }
  return out;
}

}  // namespace kf
