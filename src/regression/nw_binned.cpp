// Nadaraya–Watson and local linear in one column on the linear-binned grid (binned.hpp): the
// grid over the data's range, its reads at the queries, the criteria as sums over bins.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "kernelformer/progress.hpp"
#include "kernelformer/regression/binned.hpp"
#include "regression/smoother_routes.hpp"

namespace kf::detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int degree_of(const regression_spec& spec) {
  return spec.method == regression_method::local_linear ? 1 : 0;
}

// spec's kernel at its bandwidth (one column, one bandwidth).
any_kernel kernel_with_bandwidth(const regression_spec& spec) {
  any_kernel k = spec.kernel;
  kernel_set_param(k, regression_bandwidths(spec, 1)[0]);
  return k;
}

// The grid from binned data bd (over the data's range) for spec at cells_per_h; the moments'
// views of bd's bins are dropped, so the grid outlives bd.
binned1d_grid grid_of(const regression_spec& spec, const binned_data& bd, double xmin,
                      double xmax) {
  binned1d_grid g;
  g.xmin = xmin;
  g.xmax = xmax;
  g.degree = degree_of(spec);
  g.bandwidth = regression_bandwidths(spec, 1)[0];
  g.kernel = kernel_name(spec.kernel);
  const any_kernel k = kernel_with_bandwidth(spec);
  g.k0 = kernel_at_distance(k, 0.0);
  const binned_settings st;
  const double cells = spec.binned_cells_per_h > 0 ? spec.binned_cells_per_h : st.cells_per_h;
  g.m = bd.compute(k, g.degree, true, cells, st);
  g.m.c = g.m.cy = g.m.cyy = {};
  return g;
}

}  // namespace

std::span<const double> column0(const_matrix_view<double> x, std::vector<double>& hold) {
  if (x.ld == 1 || x.rows <= 1) return {x.data, static_cast<std::size_t>(x.rows)};
  hold.resize(static_cast<std::size_t>(x.rows));
  for (index i = 0; i < x.rows; ++i) hold[static_cast<std::size_t>(i)] = x(i, 0);
  return hold;
}

std::shared_ptr<const binned1d_grid> binned1d_make(const regression_spec& spec,
                                                   const_matrix_view<double> x,
                                                   std::span<const double> y) {
  std::vector<double> hold;
  const auto xs = column0(x, hold);
  const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
  const binned_data bd(xs, y, *lo, *hi, spec.shard);
  return std::make_shared<const binned1d_grid>(grid_of(spec, bd, *lo, *hi));
}

bool binned1d_grid::fits(const regression_spec& spec) const {
  return degree == degree_of(spec) && kernel == kernel_name(spec.kernel) &&
         regression_bandwidths(spec, 1)[0] == bandwidth;
}

std::size_t binned1d_grid::bytes() const {
  std::size_t b = 0;
  for (const auto& v : m.s) b += v.size();
  for (const auto& v : m.t) b += v.size();
  for (const auto& v : m.q) b += v.size();
  return 8 * b;
}

local_quantities binned1d_grid::at(double x) const {
  if (x < xmin || x > xmax) return {};  // extrapolation amplifies binning error: exact instead
  auto rd = [&](const std::vector<double>& v) {
    return v.empty() ? 0.0 : binned_data::read(m, v, x);
  };
  return from_moments(degree, k0, rd(m.s[0]), rd(m.s[1]), rd(m.s[2]), rd(m.t[0]), rd(m.t[1]),
                      rd(m.q[0]), rd(m.q[1]), rd(m.q[2]));
}

regression_eval binned1d_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                                  std::span<const double> y, const_matrix_view<double> xq,
                                  bool at_training, const binned1d_grid* prepared) {
  std::shared_ptr<const binned1d_grid> made;
  if (prepared == nullptr || !prepared->fits(spec)) {
    made = binned1d_make(spec, x, y);
    prepared = made.get();
  }
  const auto nq = static_cast<std::size_t>(xq.rows);
  regression_eval r = regression_eval_for(nq, at_training);
  progress_step step(fmt::format("evaluating at {} points", xq.rows), xq.rows);
  for (std::size_t i = 0; i < nq; ++i) {
    step.tick(static_cast<index>(i));
    const local_quantities q = prepared->at(xq(static_cast<index>(i), 0));
    if (!q.defined) {
      ++r.undefined;
      continue;
    }
    r.ll_fallback += q.fallback ? 1 : 0;
    r.defined[i] = 1;
    r.fit[i] = q.fit;
    r.sum_l2[i] = std::max(q.sum_l2, 0.0);
    if (at_training) r.self_weight[i] = q.self;
  }
  return r;
}

std::vector<index> binned1d_undefined_rows(const binned1d_grid& g, const_matrix_view<double> xq,
                                           index first) {
  std::vector<index> rows;
  for (index i = 0; i < xq.rows; ++i)
    if (!g.at(xq(i, 0)).defined) rows.push_back(first + i);
  return rows;
}

// Σ_i w(x_i)(y_i − f(x_i))² ≈ Σ_g w(g)(cyy − 2 cy f + c f²)(g): an evaluation costs O(grid).
criterion_values binned1d_criteria(const regression_spec& spec, const binned_data& bd,
                                   double cells_per_h) {
  const int degree = degree_of(spec);
  const any_kernel k = kernel_with_bandwidth(spec);
  const double k0 = kernel_at_distance(k, 0.0);
  const auto m = bd.compute(k, degree, false, cells_per_h, binned_settings{});
  double rss = 0, df = 0, loo = 0;
  for (std::size_t g = 0; g < m.c.size(); ++g) {
    if (!(m.c[g] > 0)) continue;
    const auto q = from_moments(degree, k0, m.s[0][g], degree ? m.s[1][g] : 0,
                                degree ? m.s[2][g] : 0, m.t[0][g], degree ? m.t[1][g] : 0, 0, 0, 0);
    if (!q.defined) return {kInf, kInf, kInf, kInf, kInf, 1};  // occupied, Σ K ≤ 1e-3 K(0)
    // The bin's Σ (y_i − ŷ)², all its points given the fit ŷ and self weight W at node g.
    const double sq = std::max(m.cyy[g] - 2 * m.cy[g] * q.fit + m.c[g] * q.fit * q.fit, 0.0);
    rss += sq;
    df += m.c[g] * q.self;  // tr(W) ≈ Σ_g c_g W_g
    const double denom = 1.0 - q.self;
    loo += denom > 1e-10 ? sq / (denom * denom) : kInf;  // Σ (r_i / (1 − W_ii))² over the bin
  }
  return criteria_from_sums(rss, df, loo, bd.n());
}

}  // namespace kf::detail
