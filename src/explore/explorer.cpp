#include "kernelformer/explore/explorer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <random>
#include <stdexcept>

#include "kernelformer/masks.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/smooth.hpp"

namespace kf {
namespace {

constexpr double kPi = std::numbers::pi;

double truth_of(const std::string& f, double x) {
  if (f == "seed001") return 2 * std::sin(x);
  if (f == "sin") return std::sin(2 * kPi * x);
  if (f == "sinusoids") return std::sin(2 * kPi * x) + 0.5 * std::sin(6 * kPi * x);
  if (f == "linear") return 1 + 2 * x;
  return x >= 0.5 ? 1.0 : 0.0;  // step
}

any_kernel distance_kernel(const explorer_request& r) {
  kernel_spec ks;
  try {
    ks = kernel_parse(r.kernel);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("kernel: {}", e.what()));
  }
  if (ks.is_product() || kernel_arg_of(ks.first) != kernel_arg::sqdist)
    throw std::invalid_argument(fmt::format(
        "kernel: '{}' is not a distance kernel (gaussian, epanechnikov, boxcar, …)", r.kernel));
  any_kernel k = ks.first;
  kernel_set_param(k, r.bandwidth);
  return k;
}

kernel_spec attention_kernel(double temperature) {
  kernel_exp_dot k;
  k.temperature = temperature;
  return k;
}

matrix<double> column(const std::vector<double>& v) {
  matrix<double> m(static_cast<index>(v.size()), 1);
  for (std::size_t i = 0; i < v.size(); ++i) m(static_cast<index>(i), 0) = v[i];
  return m;
}

// Smooths y at the queries; NaN where the row is empty.
std::vector<double> smooth_curve(const const_matrix_view<double> q,
                                 const const_matrix_view<double> k, const std::vector<double>& y,
                                 const kernel_spec& kern) {
  const index g = q.rows;
  const matrix<double> v = column(y);
  matrix<double> out(g, 1);
  std::vector<double> lse(static_cast<std::size_t>(g));
  smooth_forward<double>(out.view(), lse, q, k, v.cview(), kern, mask::none());
  std::vector<double> r(static_cast<std::size_t>(g));
  for (index i = 0; i < g; ++i)
    r[static_cast<std::size_t>(i)] = std::isinf(lse[static_cast<std::size_t>(i)])
                                         ? std::numeric_limits<double>::quiet_NaN()
                                         : out(i, 0);
  return r;
}

}  // namespace

std::vector<explorer_function_info> explorer_functions() {
  return {
      {"seed001", "2 sin x + noise, x ~ U(0, 6) (seed 001: KNN vs Gaussian kernel regression)", 0,
       6},
      {"sin", "sin 2πx + noise, x ~ U(0, 1)", 0, 1},
      {"sinusoids", "sin 2πx + ½ sin 6πx + noise on n evenly spaced points of [0, 1] (seed 002)", 0,
       1},
      {"linear", "1 + 2x + noise: nearly linear, so a large bandwidth is fine (seed 000)", 0, 1},
      {"step", "1[x ≥ ½] + noise: a jump that every smoother blurs", 0, 1}};
}

void explorer_validate(const explorer_request& r) {
  const auto fs = explorer_functions();
  if (std::none_of(fs.begin(), fs.end(), [&](const auto& f) { return f.name == r.function; }))
    throw std::invalid_argument(
        fmt::format("function: unknown '{}' (seed001, sin, sinusoids, linear, step)", r.function));
  if (r.n < 2 || r.n > 2000)
    throw std::invalid_argument(fmt::format("n: {} is outside 2..2000", r.n));
  if (!(r.noise >= 0 && r.noise <= 10))
    throw std::invalid_argument(fmt::format("noise: {} is outside [0, 10]", r.noise));
  if (!(r.bandwidth > 0 && r.bandwidth <= 1e3))
    throw std::invalid_argument(fmt::format("bandwidth: {} is outside (0, 1000]", r.bandwidth));
  if (!(r.temperature > 0 && r.temperature <= 1e3))
    throw std::invalid_argument(fmt::format("temperature: {} is outside (0, 1000]", r.temperature));
  if (r.grid < 10 || r.grid > 2000)
    throw std::invalid_argument(fmt::format("grid: {} is outside 10..2000", r.grid));
  distance_kernel(r);
}

explorer_data explorer_make_data(const explorer_request& r) {
  explorer_validate(r);
  explorer_data d;
  for (const auto& f : explorer_functions())
    if (f.name == r.function) d.lo = f.lo, d.hi = f.hi;
  std::mt19937_64 rng(r.seed);
  std::uniform_real_distribution<double> u(d.lo, d.hi);
  std::normal_distribution<double> g(0.0, 1.0);
  const auto n = static_cast<std::size_t>(r.n);
  d.x.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    d.x[i] = r.function == "sinusoids" ? d.lo + (d.hi - d.lo) * double(i) / double(n - 1) : u(rng);
  std::sort(d.x.begin(), d.x.end());
  d.y.resize(n);
  for (std::size_t i = 0; i < n; ++i) d.y[i] = truth_of(r.function, d.x[i]) + r.noise * g(rng);
  const auto G = static_cast<std::size_t>(r.grid);
  d.grid.resize(G);
  d.truth.resize(G);
  for (std::size_t i = 0; i < G; ++i) {
    d.grid[i] = d.lo + (d.hi - d.lo) * double(i) / double(G - 1);
    d.truth[i] = truth_of(r.function, d.grid[i]);
  }
  return d;
}

matrix<double> explorer_features(const std::vector<double>& x, double lo, double hi) {
  const double R = hi - lo, w1 = kPi / (2 * R), w2 = kPi / R;
  matrix<double> f(static_cast<index>(x.size()), 4);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double t = x[i] - lo;
    const auto r = static_cast<index>(i);
    f(r, 0) = std::sin(w1 * t), f(r, 1) = std::cos(w1 * t);
    f(r, 2) = std::sin(w2 * t), f(r, 3) = std::cos(w2 * t);
  }
  return f;
}

double explorer_equivalent_bandwidth(double temperature, double lo, double hi) {
  const double R = hi - lo, w1 = kPi / (2 * R), w2 = kPi / R;
  return std::sqrt(temperature / (w1 * w1 + w2 * w2));
}

explorer_result explorer_compute(const explorer_request& r) {
  explorer_result res;
  res.data = explorer_make_data(r);
  const auto& d = res.data;
  const kernel_spec nw_kernel = distance_kernel(r);
  const kernel_spec att_kernel = attention_kernel(r.temperature);
  const matrix<double> xg = column(d.grid), xk = column(d.x);
  const matrix<double> fg = explorer_features(d.grid, d.lo, d.hi),
                       fk = explorer_features(d.x, d.lo, d.hi);
  res.nw = smooth_curve(xg.cview(), xk.cview(), d.y, nw_kernel);
  res.attention = smooth_curve(fg.cview(), fk.cview(), d.y, att_kernel);
  res.attention_bandwidth = explorer_equivalent_bandwidth(r.temperature, d.lo, d.hi);
  try {
    regression_spec spec;
    spec.kernel = distance_kernel(r);
    kernel_set_param(spec.kernel, 1.0);
    spec.bandwidth = {r.bandwidth};
    spec.exact = true;
    const auto fit = regression_fit_data(spec, xk.cview(), d.y, bandwidth_criterion::loo_cv);
    res.bandwidth_loo = fit.spec.bandwidth.at(0);
  } catch (const std::invalid_argument&) {
    res.bandwidth_loo = std::numeric_limits<double>::quiet_NaN();
  }
  // Heatmap rows: up to 60 grid points, evenly spaced.
  const index G = r.grid, rows = std::min<index>(60, G);
  std::vector<index> pick(static_cast<std::size_t>(rows));
  for (index i = 0; i < rows; ++i)
    pick[static_cast<std::size_t>(i)] = rows > 1 ? i * (G - 1) / (rows - 1) : 0;
  res.heat_rows = rows;
  for (index p : pick) res.heat_x.push_back(d.grid[static_cast<std::size_t>(p)]);
  res.heat_nw = matrix<double>(rows, r.n);
  res.heat_attention = matrix<double>(rows, r.n);
  smooth_weights<double>(res.heat_nw.view(), pick, xg.cview(), xk.cview(), nw_kernel, mask::none());
  smooth_weights<double>(res.heat_attention.view(), pick, fg.cview(), fk.cview(), att_kernel,
                         mask::none());
  return res;
}

explorer_profile explorer_point_profile(const explorer_request& r, index point) {
  const explorer_data d = explorer_make_data(r);
  if (point < 0 || point >= r.n)
    throw std::out_of_range(fmt::format("point: {} is outside 0..{}", point, r.n - 1));
  explorer_profile p;
  p.x0 = d.x[static_cast<std::size_t>(point)];
  const matrix<double> xk = column(d.x), fk = explorer_features(d.x, d.lo, d.hi);
  matrix<double> w(1, r.n);
  const std::vector<index> rows = {point};
  smooth_weights<double>(w.view(), rows, xk.cview(), xk.cview(), distance_kernel(r), mask::none());
  p.nw.assign(w.values().begin(), w.values().end());
  smooth_weights<double>(w.view(), rows, fk.cview(), fk.cview(), attention_kernel(r.temperature),
                         mask::none());
  p.attention.assign(w.values().begin(), w.values().end());
  return p;
}

}  // namespace kf
