// Nadaraya–Watson in two columns on the bilinear-binned grid (see binned2d.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "kernelformer/progress.hpp"
#include "kernelformer/regression/binned.hpp"
#include "regression/binned2d.hpp"
#include "regression/smoother_routes.hpp"

namespace kf::detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct grid_setup {
  std::array<double, 2> lo, hi, h;  // the grid's box and the bandwidth per column
  any_kernel unit;                  // spec's kernel at bandwidth 1 (binned_2d scales by h)
  double k0;                        // K(0): one point's weight on itself
};

// The grid over the data, widened to the queries within the kernel's reach (farther ones are
// left to the exact route).
grid_setup setup(const regression_spec& spec, const_matrix_view<double> x,
                 const_matrix_view<double> xq) {
  grid_setup g;
  for (int a = 0; a < 2; ++a)
    g.h[a] = spec.bandwidth.size() == 1 ? spec.bandwidth[0] : spec.bandwidth[std::size_t(a)];
  g.unit = spec.kernel;
  kernel_set_param(g.unit, 1.0);
  g.k0 = kernel_at_distance(g.unit, 0.0);
  const double reach = binned_reach(g.unit, binned_settings{}.tail_tolerance);
  for (int a = 0; a < 2; ++a) {
    g.lo[a] = g.hi[a] = x(0, a);
    for (index i = 0; i < x.rows; ++i)
      g.lo[a] = std::min(g.lo[a], x(i, a)), g.hi[a] = std::max(g.hi[a], x(i, a));
    const double out = std::min(reach * g.h[a], g.hi[a] - g.lo[a] + g.h[a]);
    const double xlo = g.lo[a], xhi = g.hi[a];
    for (index i = 0; i < xq.rows; ++i) {
      const double v = xq(i, a);
      if (v < g.lo[a] && v >= xlo - out) g.lo[a] = v;
      if (v > g.hi[a] && v <= xhi + out) g.hi[a] = v;
    }
  }
  return g;
}

}  // namespace

regression_eval nw_binned2d_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                                     std::span<const double> y, const_matrix_view<double> xq,
                                     bool at_training, double cells_per_h,
                                     const nw_binned2d_grid* prepared) {
  // The prepared grid serves when it is the one these queries need: the same box (no query
  // widened it), bandwidths, resolution and kernel, with Σ K² for the standard errors.
  const grid_setup g = setup(spec, x, xq);
  std::optional<binned_2d> own;
  binned_2d::sums own_sums;
  const bool reuse = prepared != nullptr && prepared->lo == g.lo && prepared->hi == g.hi &&
                     prepared->h == g.h && prepared->cells_per_h == cells_per_h &&
                     prepared->kernel == kernel_name(spec.kernel) && !prepared->sm.q0.empty();
  if (!reuse) {
    own.emplace(x, y, g.lo, g.hi, g.h, cells_per_h, binned2d_settings{}, spec.shard);
    own_sums = own->convolve(g.unit, true);
  }
  const binned_2d& bd = reuse ? prepared->bd : *own;
  const binned_2d::sums& sm = reuse ? prepared->sm : own_sums;
  const auto nq = static_cast<std::size_t>(xq.rows);
  regression_eval r = regression_eval_for(nq, at_training);
  progress_step step(fmt::format("evaluating at {} points", xq.rows), xq.rows);
  for (index i = 0; i < xq.rows; ++i) {
    step.tick(i);
    const auto iu = static_cast<std::size_t>(i);
    const double a0 = xq(i, 0), a1 = xq(i, 1);
    const double s0 = bd.inside(a0, a1) ? bd.read(sm.s0, a0, a1) : 0.0;
    // Less than one data point's weight: binning's spill across a compact kernel's edge could
    // decide whether the fit is defined at all, so the caller evaluates these exactly.
    if (!(s0 >= g.k0)) {
      ++r.undefined;
      continue;
    }
    // ŷ = Σ K y / Σ K, Σℓ² = Σ K² / (Σ K)² (clamped: FFT round-off can leave Σ K² slightly
    // negative where it is ~0), hat diagonal K(0)/Σ K.
    r.defined[iu] = 1;
    r.fit[iu] = bd.read(sm.t0, a0, a1) / s0;
    r.sum_l2[iu] = std::max(bd.read(sm.q0, a0, a1) / (s0 * s0), 0.0);
    if (at_training) r.self_weight[iu] = g.k0 / s0;
  }
  return r;
}

criterion_values nw_binned2d_criteria(const regression_spec& spec, const_matrix_view<double> x,
                                      std::span<const double> y, double cells_per_h,
                                      std::vector<index>* undefined_rows,
                                      std::shared_ptr<const nw_binned2d_grid>* keep) {
  // The criteria are sums over the training points: the grid spans the data alone.
  const_matrix_view<double> no_queries = x;
  no_queries.rows = 0;
  const grid_setup g = setup(spec, x, no_queries);
  auto grid = std::make_shared<nw_binned2d_grid>(nw_binned2d_grid{
      g.lo,
      g.hi,
      g.h,
      cells_per_h,
      std::string(kernel_name(spec.kernel)),
      binned_2d(x, y, g.lo, g.hi, g.h, cells_per_h, binned2d_settings{}, spec.shard),
      {}});
  const binned_2d& bd = grid->bd;
  grid->sm = bd.convolve(g.unit, keep != nullptr);
  const binned_2d::sums& sm = grid->sm;
  if (undefined_rows != nullptr) {
    undefined_rows->clear();
    for (index i = 0; i < x.rows; ++i)
      if (!(bd.read(sm.s0, x(i, 0), x(i, 1)) >= g.k0)) undefined_rows->push_back(i);
  }
  // Sums over bins: every point binned at node q is given the fit ŷ_q = t0/s0 and the self
  // weight W_q = K(0)/s0 read there, so a bin's Σ (y_i − ŷ_q)² = Σy² − 2ŷ_q Σy + c ŷ_q² from
  // the binned c, cy, cyy; df = Σ_q c_q W_q; loo = Σ_q (that sum)/(1 − W_q)².
  criterion_values c{0, 0, 0, 0, 0, 0};
  double loo = 0;
  const auto& cc = bd.c();
  for (std::size_t q = 0; q < cc.size(); ++q) {
    if (!(cc[q] > 0)) continue;
    const double s0 = sm.s0[q];
    // An occupied bin the grid cannot trust: the criteria are undefined at this bandwidth.
    if (!(s0 > 1e-3 * g.k0)) return {kInf, kInf, kInf, kInf, kInf, 1};
    const double fit = sm.t0[q] / s0, self = g.k0 / s0;
    const double sq = std::max(bd.cyy()[q] - 2 * bd.cy()[q] * fit + cc[q] * fit * fit, 0.0);
    c.rss += sq;
    c.df += cc[q] * self;
    const double denom = 1.0 - self;  // W_q → 1: the point alone in its window, LOO undefined
    loo += denom > 1e-10 ? sq / (denom * denom) : kInf;
  }
  if (keep != nullptr) {
    grid->bd.release_bins();  // predictions read the sums only
    *keep = std::move(grid);
  }
  return criteria_from_sums(c.rss, c.df, loo, x.rows);
}

}  // namespace kf::detail
