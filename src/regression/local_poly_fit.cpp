// The local polynomial fit (regression/local_poly.hpp): the route chosen once (exact or binned),
// the bandwidth by a rule or a criterion of the degree-p fit of the function, its diagnostics, and
// predictions of m̂^(ν) with standard errors on the same route.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "kernelformer/regression/binned.hpp"
#include "kernelformer/regression/local_poly.hpp"
#include "kernelformer/regression/smoother.hpp"

namespace kf {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr index kMinGrid = 401, kMaxGrid = index(1) << 21;

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("local polynomial: " + what);
}

any_kernel kernel_at(const local_poly_spec& spec, double h) {
  any_kernel k = spec.kernel;
  kernel_set_param(k, h);
  return k;
}

bool binned_route(const local_poly_spec& spec, std::span<const double> x) {
  return !spec.exact && static_cast<index>(x.size()) >= spec.binned_min_n &&
         binned_supports(spec.kernel);
}

// Grid nodes for h/δ = cells_per_h over the data's range, within [401, 2^21].
index grid_for(std::span<const double> x, double h, double cells_per_h) {
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  const double nodes = std::ceil((*hi - *lo) / h * cells_per_h) + 1;
  return static_cast<index>(std::clamp(nodes, double(kMinGrid), double(kMaxGrid)));
}

using grid_ptr = std::shared_ptr<const detail::local_poly_grid>;

grid_ptr grid_at(const local_poly_spec& spec, double h, int derivative, std::span<const double> x,
                 std::span<const double> y, double cells_per_h) {
  return std::make_shared<const detail::local_poly_grid>(detail::local_poly_binned_grid(
      kernel_at(spec, h), spec.degree, derivative, x, y, grid_for(x, h, cells_per_h)));
}

// The function's fit at the training points and its criteria: RSS, df = Σ ℓ_i(x_i) and the
// leave-one-out residuals (y_i − ŷ_i)/(1 − ℓ_i(x_i)); undefined points make LOO infinite.
// On the binned route the grid of the function's fit goes to *grid (when asked).
criterion_values criteria_at(const local_poly_spec& spec, double h, std::span<const double> x,
                             std::span<const double> y, double cells_per_h, index* undefined,
                             grid_ptr* grid = nullptr) {
  local_poly_eval e;
  if (binned_route(spec, x)) {  // the function's grid: given (*grid set), or made here
    grid_ptr g = grid && *grid ? *grid : grid_at(spec, h, 0, x, y, cells_per_h);
    e = detail::local_poly_interpolate(*g, x);
    if (grid) *grid = std::move(g);
  } else {
    e = local_poly_exact(kernel_at(spec, h), spec.degree, 0, x, y, x, true);
  }
  double rss = 0, df = 0, loo = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!e.defined[i]) continue;
    const double r = y[i] - e.fit[i];
    rss += r * r;
    df += e.self_weight[i];
    loo +=
        e.self_weight[i] < 1 ? (r / (1 - e.self_weight[i])) * (r / (1 - e.self_weight[i])) : kInf;
  }
  if (undefined) *undefined = e.undefined;
  criterion_values c = criteria_from_sums(rss, df, loo, static_cast<index>(x.size()));
  if (e.undefined > 0) c.loo_cv = c.gcv = c.aicc = kInf;
  c.undefined = e.undefined;
  return c;
}

double pick(const criterion_values& c, bandwidth_criterion criterion) {
  return criterion == bandwidth_criterion::gcv    ? c.gcv
         : criterion == bandwidth_criterion::aicc ? c.aicc
                                                  : c.loo_cv;
}

void choose_bandwidth(local_poly_fit& f, bandwidth_criterion criterion,
                      const progress_fn& progress) {
  const std::span<const double> x = f.x, y = f.y;
  const const_matrix_view<double> xm{x.data(), static_cast<index>(x.size()), 1};
  switch (criterion) {
    case bandwidth_criterion::fixed:
      if (!(f.spec.bandwidth > 0) || !std::isfinite(f.spec.bandwidth))
        fail(fmt::format("bandwidth {} must be positive", f.spec.bandwidth));
      return;
    case bandwidth_criterion::silverman:
    case bandwidth_criterion::scott:
      f.spec.bandwidth = bandwidth_rule(xm, criterion)[0];
      return;
    case bandwidth_criterion::loo_cv:
    case bandwidth_criterion::gcv:
    case bandwidth_criterion::aicc: {
      // The degree-p fit needs more points than a line: start from twice Silverman's rule.
      const double start = 2 * bandwidth_rule(xm, bandwidth_criterion::silverman)[0];
      const double cells = f.spec.cells_per_h / 2;
      auto objective = [&](const std::vector<double>& h) {
        return pick(criteria_at(f.spec, h[0], x, y, cells, nullptr), criterion);
      };
      const auto r =
          bandwidth_search(objective, {start}, bandwidth_criterion_name(criterion), progress);
      f.spec.bandwidth = r.bandwidth[0];
      f.curve = r.curve;
      f.at_search_boundary = r.at_boundary;
      f.search_evaluations = r.evaluations;
      return;
    }
    default:
      fail(
          fmt::format("--bandwidth {} does not apply (use a number, silverman, scott, cv, gcv or "
                      "aic)",
                      bandwidth_criterion_name(criterion)));
  }
}

}  // namespace

local_poly_fit local_poly_fit_data(local_poly_spec spec, std::vector<double> x,
                                   std::vector<double> y, bandwidth_criterion criterion,
                                   const progress_fn& progress) {
  if (spec.degree < 0 || spec.degree > 3)
    fail(fmt::format("degree {} is not in 0..3", spec.degree));
  if (spec.derivative < 0 || spec.derivative > spec.degree)
    fail(fmt::format("derivative {} is not in 0..degree ({})", spec.derivative, spec.degree));
  if (x.size() != y.size()) fail(fmt::format("{} x values and {} y values", x.size(), y.size()));
  if (static_cast<index>(x.size()) < spec.degree + 2)
    fail(fmt::format("degree {} needs at least {} points, got {}", spec.degree, spec.degree + 2,
                     x.size()));
  if (!(spec.cells_per_h >= 10)) fail("cells_per_h must be at least 10");
  local_poly_fit f;
  f.spec = std::move(spec);
  f.x = std::move(x);
  f.y = std::move(y);
  f.criterion = criterion;
  choose_bandwidth(f, criterion, progress);
  const bool binned = binned_route(f.spec, f.x);
  kernel_set_param(f.spec.kernel, f.spec.bandwidth);
  f.route = binned                          ? "binned (linear binning, direct sums on the grid)"
            : kernel_compact(f.spec.kernel) ? "exact (sorted windows)"
                                            : "exact (all pairs)";
  f.why = binned ? fmt::format("{} >= {} points", f.x.size(), f.spec.binned_min_n)
                 : (f.spec.exact ? std::string("--exact")
                                 : fmt::format("{} < {} points", f.x.size(), f.spec.binned_min_n));
  grid_ptr function_grid;
  if (binned && f.spec.derivative > 0) {  // the function's and the derivative's grids at once
    const int v[2] = {0, f.spec.derivative};
    auto g =
        detail::local_poly_binned_grids(kernel_at(f.spec, f.spec.bandwidth), f.spec.degree, v, f.x,
                                        f.y, grid_for(f.x, f.spec.bandwidth, f.spec.cells_per_h));
    function_grid = std::make_shared<const detail::local_poly_grid>(std::move(g[0]));
    f.grid = std::make_shared<const detail::local_poly_grid>(std::move(g[1]));
  }
  const criterion_values c = criteria_at(f.spec, f.spec.bandwidth, f.x, f.y, f.spec.cells_per_h,
                                         &f.undefined, &function_grid);
  if (binned && f.spec.derivative == 0) f.grid = function_grid;  // what predictions interpolate
  if (f.undefined == static_cast<index>(f.x.size()))
    fail(
        fmt::format("bandwidth {:.6g} leaves the fit undefined at every point (too small for "
                    "degree {})",
                    f.spec.bandwidth, f.spec.degree));
  double ybar = 0, tss = 0;
  for (double v : f.y) ybar += v / double(f.y.size());
  for (double v : f.y) tss += (v - ybar) * (v - ybar);
  const double n = double(f.x.size());
  f.df = c.df;
  f.rss = c.rss;
  f.r2 = tss > 0 ? 1 - c.rss / tss : 0;
  f.sigma2 = n - c.df > 0.5 ? c.rss / (n - c.df) : c.rss / n;
  f.loo_cv = c.loo_cv;
  f.gcv = c.gcv;
  f.aicc = c.aicc;
  f.criterion_value = pick(c, criterion);
  return f;
}

local_poly_prediction local_poly_predict(const local_poly_fit& fit, std::span<const double> xq) {
  const local_poly_eval e =
      fit.grid ? detail::local_poly_interpolate(*fit.grid, xq)
               : local_poly_exact(kernel_at(fit.spec, fit.spec.bandwidth), fit.spec.degree,
                                  fit.spec.derivative, fit.x, fit.y, xq, false);
  local_poly_prediction p;
  p.fit = e.fit;
  p.defined = e.defined;
  p.undefined = e.undefined;
  p.se.resize(e.fit.size());
  for (std::size_t i = 0; i < e.fit.size(); ++i)
    p.se[i] = e.defined[i] ? std::sqrt(fit.sigma2 * e.sum_l2[i]) : 0.0;
  return p;
}

}  // namespace kf
