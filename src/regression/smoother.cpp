// Nadaraya–Watson, local-linear and KNN regression: the fit (bandwidth or k chosen by a
// criterion), its per-point diagnostics and predictions. regression_evaluate picks the route
// (smoother_routes.hpp) and regression_route names it.
#include "kernelformer/regression/smoother.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "kernelformer/progress.hpp"
#include "kernelformer/regression/binned.hpp"
#include "kernelformer/smooth.hpp"
#include "regression/binned2d.hpp"
#include "regression/knn.hpp"
#include "regression/smoother_routes.hpp"

namespace kf {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

namespace {

using detail::check_regression_data;
using detail::from_moments;
using detail::local_quantities;
using detail::regression_bandwidths;

// Column 0 of x as a contiguous span: x's own storage when its rows are one value apart (one
// column, the common 1-D case: no copy of 10^7 values), else a copy kept in `hold`.
std::span<const double> column0(const_matrix_view<double> x, std::vector<double>& hold) {
  if (x.ld == 1 || x.rows <= 1) return {x.data, static_cast<std::size_t>(x.rows)};
  hold.resize(static_cast<std::size_t>(x.rows));
  for (index i = 0; i < x.rows; ++i) hold[static_cast<std::size_t>(i)] = x(i, 0);
  return hold;
}

criterion_values criteria_of(const regression_eval& e, std::span<const double> y, index n,
                             const data_shard& shard);

// One column, NW or local linear: the 1-D binned grid (binned.hpp).
bool use_binned(const regression_spec& spec, index n, index d) {
  return !spec.exact && d == 1 && n >= spec.binned_min_n && spec.method != regression_method::knn &&
         binned_supports(spec.kernel);
}

// Two columns, Nadaraya–Watson: the 2-D binned grid (binned2d.hpp).
bool use_binned2d(const regression_spec& spec, index n, index d) {
  return !spec.exact && d == 2 && n >= spec.binned_min_n && spec.method == regression_method::nw &&
         binned_supports(spec.kernel);
}

// spec's kernel at its bandwidth, for the 1-D routes (one column, one bandwidth).
any_kernel kernel_with_bandwidth(const regression_spec& spec) {
  any_kernel k = spec.kernel;
  kernel_set_param(k, regression_bandwidths(spec, 1)[0]);
  return k;
}

// Calls fn(i, q) for each query row i with the binned moments' local quantities, or fn(i,
// nullptr) where the binned smoother is undefined there (outside the data's range, or no
// weight): the one loop behind evaluate_binned and the fit's summary-only mode.
template <class Fn>
void binned_each(const regression_spec& spec, std::span<const double> x, std::span<const double> y,
                 const_matrix_view<double> xq, Fn&& fn) {
  double lo = x[0], hi = x[0];
  for (double v : x) lo = std::min(lo, v), hi = std::max(hi, v);
  const double xmin = lo, xmax = hi;
  for (index i = 0; i < xq.rows; ++i) lo = std::min(lo, xq(i, 0)), hi = std::max(hi, xq(i, 0));
  const binned_data bd(x, y, lo, hi, spec.shard);  // over the data and the queries
  const int degree = spec.method == regression_method::local_linear ? 1 : 0;
  const binned_settings st;
  const any_kernel k = kernel_with_bandwidth(spec);
  const double k0 = kernel_at_distance(k, 0.0);
  const auto m = bd.compute(k, degree, true, st.cells_per_h, st);
  auto rd = [&](const std::vector<double>& v, double at) {
    return v.empty() ? 0.0 : binned_data::read(m, v, at);
  };
  progress_step step(fmt::format("evaluating at {} points", xq.rows), xq.rows);
  for (std::size_t i = 0; i < static_cast<std::size_t>(xq.rows); ++i) {
    step.tick(static_cast<index>(i));
    const double at = xq(static_cast<index>(i), 0);
    if (at < xmin || at > xmax) {  // extrapolation amplifies binning error: exact instead
      fn(i, nullptr);
      continue;
    }
    const auto q =
        from_moments(degree, k0, rd(m.s[0], at), rd(m.s[1], at), rd(m.s[2], at), rd(m.t[0], at),
                     rd(m.t[1], at), rd(m.q[0], at), rd(m.q[1], at), rd(m.q[2], at));
    fn(i, q.defined ? &q : nullptr);
  }
}

regression_eval evaluate_binned(const regression_spec& spec, std::span<const double> x,
                                std::span<const double> y, const_matrix_view<double> xq,
                                bool at_training) {
  const auto nq = static_cast<std::size_t>(xq.rows);
  regression_eval r = detail::regression_eval_for(nq, at_training);
  binned_each(spec, x, y, xq, [&](std::size_t i, const local_quantities* q) {
    if (q == nullptr) {
      ++r.undefined;
      return;
    }
    r.ll_fallback += q->fallback ? 1 : 0;
    r.defined[i] = 1;
    r.fit[i] = q->fit;
    r.sum_l2[i] = std::max(q->sum_l2, 0.0);
    if (at_training) r.self_weight[i] = q->self;
  });
  return r;
}

// The criteria from binned moments, summed over bins: Σ_i w(x_i)(y_i − f(x_i))² ≈
// Σ_g w(g)(cyy − 2 cy f + c f²)(g), so an evaluation costs O(grid), not O(n).
criterion_values criteria_binned(const regression_spec& spec, const binned_data& bd,
                                 double cells_per_h) {
  const int degree = spec.method == regression_method::local_linear ? 1 : 0;
  const any_kernel k = kernel_with_bandwidth(spec);
  const double k0 = kernel_at_distance(k, 0.0);
  const auto m = bd.compute(k, degree, false, cells_per_h, binned_settings{});
  criterion_values c{0, 0, 0, 0, 0, 0};
  double loo = 0;
  for (std::size_t g = 0; g < m.c.size(); ++g) {
    if (!(m.c[g] > 0)) continue;
    const auto q = from_moments(degree, k0, m.s[0][g], degree ? m.s[1][g] : 0,
                                degree ? m.s[2][g] : 0, m.t[0][g], degree ? m.t[1][g] : 0, 0, 0, 0);
    if (!q.defined) return {kInf, kInf, kInf, kInf, kInf, 1};  // occupied, Σ K ≤ 1e-3 K(0)
    // The bin's Σ (y_i − ŷ)², all its points given the fit ŷ and self weight W at node g.
    const double sq = std::max(m.cyy[g] - 2 * m.cy[g] * q.fit + m.c[g] * q.fit * q.fit, 0.0);
    c.rss += sq;
    c.df += m.c[g] * q.self;  // tr(W) ≈ Σ_g c_g W_g
    const double denom = 1.0 - q.self;
    loo += denom > 1e-10 ? sq / (denom * denom) : kInf;  // Σ (r_i / (1 − W_ii))² over the bin
  }
  return criteria_from_sums(c.rss, c.df, loo, bd.n());
}

}  // namespace

namespace {

// regression_evaluate, with the fit's 2-D grid when it has one (regression_predict).
regression_eval evaluate(const regression_spec& spec, const_matrix_view<double> x,
                         std::span<const double> y, const_matrix_view<double> xq, bool at_training,
                         const detail::nw_binned2d_grid* grid2d) {
  check_regression_data(x, y);
  const index n = x.rows, d = x.cols, nq = xq.rows;
  if (xq.cols != d)
    throw std::invalid_argument(
        fmt::format("regression: prediction points have {} columns but x has {}", xq.cols, d));
  if (at_training && nq != n) throw std::logic_error("at_training needs xq = x");
  if (spec.method == regression_method::knn && (spec.k < 1 || spec.k > n))
    throw std::invalid_argument(
        fmt::format("knn: k = {} must be in 1..{} (the number of points)", spec.k, n));
  // Routes in order: neighbors (knn), binned 1-D / 2-D, sorted windows, k-d tree, all pairs.
  if (spec.method == regression_method::knn && !spec.exact)
    return detail::knn_evaluate(spec, x, y, xq, at_training);
  if (use_binned(spec, n, d) || use_binned2d(spec, n, d)) {
    (void)regression_bandwidths(spec, d);  // validates
    std::vector<double> hold;
    regression_eval r =
        d == 2 ? detail::nw_binned2d_evaluate(spec, x, y, xq, at_training,
                                              detail::binned2d_settings{}.cells_per_h, grid2d)
               : evaluate_binned(spec, column0(x, hold), y, xq, at_training);
    if (r.undefined == 0) return r;
    // Points beyond the binned kernel's reach (a truncated gaussian far from the data): evaluate
    // them exactly, so both paths share one policy.
    std::vector<index> rows;
    for (index i = 0; i < nq; ++i)
      if (!r.defined[static_cast<std::size_t>(i)]) rows.push_back(i);
    matrix<double> sub(static_cast<index>(rows.size()), d);
    for (std::size_t a = 0; a < rows.size(); ++a)
      for (index c = 0; c < d; ++c) sub(static_cast<index>(a), c) = xq(rows[a], c);
    regression_spec exact = spec;
    exact.exact = true;
    const regression_eval e = regression_evaluate(exact, x, y, sub.cview(), false);
    r.undefined = e.undefined;
    for (std::size_t a = 0; a < rows.size(); ++a) {
      const auto iu = static_cast<std::size_t>(rows[a]);
      r.fit[iu] = e.fit[a];
      r.sum_l2[iu] = e.sum_l2[a];
      r.defined[iu] = e.defined[a];
    }
    return r;
  }

  if (d == 1 && spec.method != regression_method::knn &&
      detail::sorted_window_supports(spec.kernel))
    return detail::sorted_window_evaluate(spec, x, y, xq, at_training);
  if (detail::radius_supports(spec, d) &&
      detail::support_fraction(spec, x) <= detail::kRadiusMaxFraction)
    return detail::radius_evaluate(spec, x, y, xq, at_training);
  return detail::evaluate_all_pairs(spec, x, y, xq, at_training);
}

}  // namespace

regression_eval regression_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                                    std::span<const double> y, const_matrix_view<double> xq,
                                    bool at_training) {
  return evaluate(spec, x, y, xq, at_training, nullptr);
}

bool regression_kernel_supported(const any_kernel& k, regression_method method) {
  return kernel_arg_of(k) == kernel_arg::sqdist ||
         (std::holds_alternative<kernel_rff>(k) && method == regression_method::nw);
}

std::string regression_route(const regression_spec& spec, index n, index d) {
  if (spec.method == regression_method::knn)
    return spec.exact ? "exact (all pairs, top-k mask)"
                      : (d == 1 ? "neighbors (sorted, two pointers)" : "neighbors (k-d tree)");
  if (std::holds_alternative<kernel_rff>(spec.kernel))
    return "features (random Fourier features, prefix sums: O(n·r))";
  if (use_binned(spec, n, d)) return "binned (linear binning + FFT)";
  if (use_binned2d(spec, n, d)) return "binned 2-D (bilinear binning + FFT)";
  if (d == 1 && detail::sorted_window_supports(spec.kernel))
    return "exact (sorted windows, running polynomial sums)";
  if (detail::radius_supports(spec, d))
    return "exact (k-d tree over each support; all pairs where it spans over 5% of the data's "
           "box)";
  return "exact (all pairs)";
}

std::string regression_shard_refusal(const regression_spec& spec, index /*n*/, index /*d*/) {
  if (spec.method == regression_method::knn && spec.exact)
    return "knn --exact ranks all points with a top-k mask, which is not sharded (drop --exact: "
           "the neighbor route splits the points over the processes)";
  if (std::holds_alternative<kernel_rff>(spec.kernel))
    return "--kernel rff is not sharded: its signed partial sums do not merge in the log domain";
  return "";
}

criterion_values criteria_from_sums(double rss, double df, double loo, index n) {
  const double nn = double(n);
  criterion_values c{loo / nn, kInf, kInf, df, rss, 0};
  if (df < nn) c.gcv = (rss / nn) / ((1 - df / nn) * (1 - df / nn));  // else +inf
  if (nn - df - 2 > 0 && rss > 0) c.aicc = std::log(rss / nn) + 1 + 2 * (df + 1) / (nn - df - 2);
  return c;
}

criterion_values regression_criteria(const regression_spec& spec, const_matrix_view<double> x,
                                     std::span<const double> y) {
  const index n = x.rows;
  if (use_binned2d(spec, n, x.cols)) {
    check_regression_data(x, y);
    (void)regression_bandwidths(spec, 2);
    return detail::nw_binned2d_criteria(spec, x, y, detail::binned2d_settings{}.cells_per_h);
  }
  if (use_binned(spec, n, x.cols)) {
    check_regression_data(x, y);
    (void)regression_bandwidths(spec, 1);
    std::vector<double> hold;
    const auto xs = column0(x, hold);
    const binned_data bd(xs, y, *std::min_element(xs.begin(), xs.end()),
                         *std::max_element(xs.begin(), xs.end()), spec.shard);
    return criteria_binned(spec, bd, binned_settings{}.cells_per_h);
  }
  // Every other route's criteria are sums over the training points: with an active shard this
  // process evaluates its block of them (against all of the data, which it holds) and the sums
  // are added over the processes.
  check_regression_data(x, y);
  const auto b = spec.shard.block_of(n);
  const auto xb = x.block(b.lo, 0, b.size(), x.cols);
  const auto yb = y.subspan(static_cast<std::size_t>(b.lo), static_cast<std::size_t>(b.size()));
  if (x.cols == 1 && spec.method != regression_method::knn &&
      detail::sorted_window_supports(spec.kernel))
    return criteria_of(detail::sorted_window_evaluate(spec, x, y, xb, true, false), yb, n,
                       spec.shard);
  if (!spec.shard.active()) return criteria_of(regression_evaluate(spec, x, y, x, true), y, n, {});
  regression_spec local = spec;
  local.shard = {};
  const bool tree = detail::radius_supports(spec, x.cols) &&
                    detail::support_fraction(spec, x) <= detail::kRadiusMaxFraction;
  const auto e = tree ? detail::radius_evaluate(local, x, y, xb, true)
                      : detail::evaluate_all_pairs(local, x, y, xb, true);
  return criteria_of(e, yb, n, spec.shard);
}

namespace {

// LOO-CV, GCV and AICc from an evaluation at the training points (the one place they are
// computed from per-point values; the binned route sums them over bins instead). e and y may be
// a block of the n training points: the sums are then added over the processes of shard.
criterion_values criteria_of(const regression_eval& e, std::span<const double> y, index n,
                             const data_shard& shard) {
  double sums[4] = {0, 0, 0, double(e.undefined)};  // rss, df, Σ loo², undefined
  for (std::size_t i = 0; i < y.size() && e.undefined == 0; ++i) {
    const double r = y[i] - e.fit[i];
    sums[0] += r * r;
    sums[1] += e.self_weight[i];
    const double denom = 1.0 - e.self_weight[i];
    sums[2] += denom > 1e-10 ? (r / denom) * (r / denom) : kInf;  // W_ii → 1: LOO undefined
  }
  shard.sum_all(sums);
  const auto undefined = static_cast<index>(sums[3]);
  if (undefined > 0) return {kInf, kInf, kInf, kInf, kInf, undefined};
  return criteria_from_sums(sums[0], sums[1], sums[2], n);
}

// The binned route's count of training points where the fit is undefined, without per-point
// vectors: the points the binned smoother leaves undefined are evaluated exactly, as
// regression_evaluate does.
index undefined_at_training_binned(const regression_spec& spec, const_matrix_view<double> x,
                                   std::span<const double> y) {
  // Over several processes: each checks its block of the points (exactly over all the data,
  // which it holds) and the counts are summed.
  std::vector<double> hold;
  const auto xs = column0(x, hold);
  const auto b = spec.shard.block_of(x.rows);
  std::vector<index> rows;
  binned_each(spec, xs, y, x.block(b.lo, 0, b.size(), 1),
              [&](std::size_t i, const local_quantities* q) {
                if (q == nullptr) rows.push_back(b.lo + static_cast<index>(i));
              });
  double undefined = 0;
  if (!rows.empty()) {
    matrix<double> sub(static_cast<index>(rows.size()), 1);
    for (std::size_t a = 0; a < rows.size(); ++a) sub(static_cast<index>(a), 0) = x(rows[a], 0);
    regression_spec exact = spec;
    exact.exact = true;
    exact.shard = {};
    undefined = double(regression_evaluate(exact, x, y, sub.cview(), false).undefined);
  }
  return static_cast<index>(spec.shard.sum_all(undefined));
}

// The fit's criteria at its chosen bandwidth, and (spec.per_point) its per-point diagnostics.
// The binned route's criteria are sums over bins (as in the search); the exact route's come
// from the same evaluation as the per-point diagnostics.
criterion_values fit_diagnostics(regression_fit& f) {
  const regression_spec& spec = f.spec;
  const const_matrix_view<double> x = f.x.cview();
  const std::span<const double> y = f.y;
  const index n = x.rows;
  const bool binned = use_binned(spec, n, x.cols) || use_binned2d(spec, n, x.cols);
  criterion_values cv{};
  if (binned && x.cols == 1) cv = regression_criteria(spec, x, y);
  if (binned && x.cols == 2 && spec.per_point) cv = regression_criteria(spec, x, y);
  if (binned && !spec.per_point && x.cols == 1) {
    f.undefined = undefined_at_training_binned(spec, x, y);  // O(grid) memory, no n-vectors
    return cv;
  }
  if (binned && !spec.per_point && x.cols == 2) {
    // One grid for the criteria and the points it leaves undefined; those are evaluated
    // exactly, as regression_evaluate does.
    std::vector<index> rows;
    cv = detail::nw_binned2d_criteria(spec, x, y, detail::binned2d_settings{}.cells_per_h, &rows,
                                      &f.binned2d_grid);
    f.undefined = 0;
    if (rows.empty()) return cv;
    matrix<double> sub(static_cast<index>(rows.size()), 2);
    for (std::size_t a = 0; a < rows.size(); ++a)
      for (index c = 0; c < 2; ++c) sub(static_cast<index>(a), c) = x(rows[a], c);
    regression_spec exact = spec;
    exact.exact = true;
    f.undefined = regression_evaluate(exact, x, y, sub.cview(), false).undefined;
    return cv;
  }
  if (spec.shard.active()) {
    if (spec.per_point)
      throw std::invalid_argument("regression: per-point diagnostics are not kept over processes");
    if (!binned) cv = regression_criteria(spec, x, y);  // summed over blocks of the points
    f.undefined = cv.undefined;
    return cv;
  }
  regression_eval e = regression_evaluate(spec, x, y, x, true);
  if (!binned) cv = criteria_of(e, y, n, {});
  f.undefined = e.undefined;
  if (!spec.per_point) return cv;
  f.loo_residuals = std::move(e.sum_l2);  // its buffer, reused (Σℓ² at training not kept)
  f.loo_residuals.resize(static_cast<std::size_t>(n));
  for (index i = 0; i < n; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    const double denom = 1.0 - e.self_weight[iu];
    f.loo_residuals[iu] = denom > 1e-10 ? (y[iu] - e.fit[iu]) / denom : kInf;
  }
  f.fitted = std::move(e.fit);
  f.hat_diag = std::move(e.self_weight);
  return cv;
}

// One column x and y reordered by x.
void sorted_copy(const_matrix_view<double> x, std::span<const double> y, matrix<double>& xs,
                 std::vector<double>& ys) {
  std::vector<index> order(static_cast<std::size_t>(x.rows));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<index>(i);
  std::sort(order.begin(), order.end(), [&](index a, index b) { return x(a, 0) < x(b, 0); });
  xs = matrix<double>(x.rows, 1);
  ys.resize(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    xs(static_cast<index>(i), 0) = x(order[i], 0);
    ys[i] = y[static_cast<std::size_t>(order[i])];
  }
}

// A data-driven bandwidth (loo_cv, gcv, aicc) into spec.bandwidth: the criterion minimized by
// bandwidth_search from the Silverman rule, on the route the fit will take; the search's curve
// and boundary flag into f.
void search_bandwidth(regression_spec& spec, const_matrix_view<double> x, std::span<const double> y,
                      bandwidth_criterion criterion, const progress_fn& progress,
                      regression_fit& f) {
  const index n = x.rows, d = x.cols;
  const index need = criterion == bandwidth_criterion::aicc ? 5 : 3;
  if (n < need)
    throw std::invalid_argument(
        fmt::format("bandwidth selection by {} needs at least {} points, got {}",
                    bandwidth_criterion_name(criterion), need, n));
  // The binned path bins once per grid size and searches at a coarser resolution.
  std::unique_ptr<binned_data> bd;
  std::vector<double> hold;
  const auto xs = use_binned(spec, n, d) ? column0(x, hold) : std::span<const double>{};
  if (!xs.empty())
    bd = std::make_unique<binned_data>(xs, y, *std::min_element(xs.begin(), xs.end()),
                                       *std::max_element(xs.begin(), xs.end()), spec.shard);
  // The sorted-window route searches a sorted copy (sorted once, not per bandwidth).
  matrix<double> x_sorted;
  std::vector<double> y_sorted;
  if (!bd && d == 1 && spec.method != regression_method::knn &&
      detail::sorted_window_supports(spec.kernel))
    sorted_copy(x, y, x_sorted, y_sorted);
  auto objective = [&](const std::vector<double>& h) {
    regression_spec s = spec;
    s.bandwidth = h;
    const auto cv =
        bd ? criteria_binned(s, *bd, binned_settings{}.search_cells_per_h)
        : use_binned2d(s, n, d)
            ? detail::nw_binned2d_criteria(s, x, y, detail::binned2d_settings{}.search_cells_per_h)
        : !y_sorted.empty() ? regression_criteria(s, x_sorted.cview(), y_sorted)
                            : regression_criteria(s, x, y);
    return criterion == bandwidth_criterion::loo_cv ? cv.loo_cv
           : criterion == bandwidth_criterion::gcv  ? cv.gcv
                                                    : cv.aicc;
  };
  const auto res = bandwidth_search(objective, bandwidth_rule(x, bandwidth_criterion::silverman),
                                    bandwidth_criterion_name(criterion), progress);
  spec.bandwidth = res.bandwidth;
  f.curve = res.curve;
  f.at_search_boundary = res.at_boundary;
}

// spec.bandwidth by the criterion (given, a rule of thumb, or searched); f.criterion records it
// (knn: fixed, k being its smoothing parameter). Throws for a density criterion.
void choose_bandwidth(regression_spec& spec, const_matrix_view<double> x, std::span<const double> y,
                      bandwidth_criterion criterion, const progress_fn& progress,
                      regression_fit& f) {
  f.criterion = criterion;
  if (spec.method == regression_method::knn) {
    if (spec.k == 0 && spec.exact)
      throw std::invalid_argument("knn: k by LOO-CV takes the neighbor route, not exact");
    f.criterion = bandwidth_criterion::fixed;  // k is the smoothing parameter
    return;
  }
  switch (criterion) {
    case bandwidth_criterion::fixed:
      spec.bandwidth = regression_bandwidths(spec, x.cols);
      break;
    case bandwidth_criterion::silverman:
    case bandwidth_criterion::scott:
      spec.bandwidth = bandwidth_rule(x, criterion);
      break;
    case bandwidth_criterion::loo_cv:
    case bandwidth_criterion::gcv:
    case bandwidth_criterion::aicc:
      search_bandwidth(spec, x, y, criterion, progress, f);
      break;
    default:
      throw std::invalid_argument(fmt::format("{} is a density criterion, not a regression one",
                                              bandwidth_criterion_name(criterion)));
  }
}

// The fit's summary from its criterion values: df, RSS, R² against the mean of y, σ² (residual
// variance on n − df degrees of freedom, or n when df ≈ n), and the chosen criterion's value.
void summarize_fit(regression_fit& f, const criterion_values& cv) {
  const std::span<const double> y = f.y;
  const index n = f.x.rows();
  double ybar = 0, tss = 0;
  for (double v : y) ybar += v / double(n);
  for (double v : y) tss += (v - ybar) * (v - ybar);
  f.df = cv.df;
  f.rss = cv.rss;
  f.r2 = tss > 0 ? 1.0 - cv.rss / tss : 0.0;
  f.sigma2 = double(n) - cv.df > 0.5 ? cv.rss / (double(n) - cv.df) : cv.rss / double(n);  // σ̂²
  f.loo_cv = cv.loo_cv;
  f.gcv = cv.gcv;
  f.aicc = cv.aicc;
  f.criterion_value = f.criterion == bandwidth_criterion::gcv    ? cv.gcv
                      : f.criterion == bandwidth_criterion::aicc ? cv.aicc
                                                                 : cv.loo_cv;
}

}  // namespace

regression_fit regression_fit_data(regression_spec spec, const_matrix_view<double> x,
                                   std::span<const double> y, bandwidth_criterion criterion,
                                   const progress_fn& progress) {
  check_regression_data(x, y);
  matrix<double> xc(x.rows, x.cols);
  for (index i = 0; i < x.rows; ++i)
    for (index c = 0; c < x.cols; ++c) xc(i, c) = x(i, c);
  return regression_fit_data(std::move(spec), std::move(xc),
                             std::vector<double>(y.begin(), y.end()), criterion, progress);
}

// The fit keeps the training data it is given (moved in, no copy) and computes its per-point
// diagnostics from one evaluation at the training points, reusing that evaluation's buffers:
// at n = 10^7 in 1-D the peak is the data plus four n-vectors (fitted, hat diagonal, LOO
// residuals, and Σℓ² while they are computed) and a byte per point; with spec.per_point = false
// on the binned route, the data plus O(grid).
regression_fit regression_fit_data(regression_spec spec, matrix<double> x_data,
                                   std::vector<double> y_data, bandwidth_criterion criterion,
                                   const progress_fn& progress) {
  regression_fit f;
  f.x = std::move(x_data);
  f.y = std::move(y_data);
  const const_matrix_view<double> x = f.x.cview();
  const std::span<const double> y = f.y;
  check_regression_data(x, y);
  const index n = x.rows, d = x.cols;
  if (spec.shard.active() && !regression_shard_refusal(spec, n, d).empty())
    throw std::invalid_argument("regression: " + regression_shard_refusal(spec, n, d));
  choose_bandwidth(spec, x, y, criterion, progress, f);
  f.spec = spec;
  const criterion_values cv = spec.method == regression_method::knn && !spec.exact
                                  ? detail::knn_fit(f, spec)
                                  : fit_diagnostics(f);
  summarize_fit(f, cv);
  return f;
}

namespace {

// The routes that need every key for each query (neighbors, sorted windows, the k-d tree): over
// several processes they split the queries instead of the keys.
bool splits_queries(const regression_spec& spec, const_matrix_view<double> x) {
  const index n = x.rows, d = x.cols;
  if (spec.method == regression_method::knn) return !spec.exact;
  if (use_binned(spec, n, d) || use_binned2d(spec, n, d)) return false;
  if (d == 1 && detail::sorted_window_supports(spec.kernel)) return true;
  return detail::radius_supports(spec, d) &&
         detail::support_fraction(spec, x) <= detail::kRadiusMaxFraction;
}

// The fit's evaluation at xq: knn reuses the fit's neighbor search; the 2-D binned route its
// grid (evaluate decides).
regression_eval predict_eval(const regression_fit& fit, const_matrix_view<double> xq) {
  const bool reuse = fit.knn_index && fit.spec.method == regression_method::knn &&
                     !fit.spec.exact && xq.cols == fit.x.cols();
  return reuse
             ? detail::knn_evaluate(fit.spec, fit.x.cview(), fit.y, xq, false, fit.knn_index.get())
             : evaluate(fit.spec, fit.x.cview(), fit.y, xq, false, fit.binned2d_grid.get());
}

// predict_eval over the processes of shard, each evaluating its block of the queries: the
// blocks are put together by one sum of zero-filled vectors (adding zeros is exact), so every
// process holds the whole result, equal to one process's.
regression_eval predict_eval_split(const regression_fit& fit, const_matrix_view<double> xq,
                                   const data_shard& shard) {
  const auto b = shard.block_of(xq.rows);
  const regression_eval mine = predict_eval(fit, xq.block(b.lo, 0, b.size(), xq.cols));
  const auto nq = static_cast<std::size_t>(xq.rows);
  std::vector<double> all(3 * nq, 0.0);  // [fit | Σℓ² | defined]
  for (std::size_t i = 0; i < mine.fit.size(); ++i) {
    const std::size_t at = static_cast<std::size_t>(b.lo) + i;
    all[at] = mine.fit[i];
    all[nq + at] = mine.sum_l2[i];
    all[2 * nq + at] = mine.defined[i];
  }
  shard.sum_all(all);
  regression_eval r = detail::regression_eval_for(nq, false);
  for (std::size_t i = 0; i < nq; ++i) {
    r.fit[i] = all[i];
    r.sum_l2[i] = all[nq + i];
    r.defined[i] = all[2 * nq + i] > 0.5 ? 1 : 0;
    r.undefined += r.defined[i] ? 0 : 1;
  }
  return r;
}

}  // namespace

regression_prediction regression_predict(const regression_fit& fit, const_matrix_view<double> xq) {
  const regression_eval e = fit.spec.shard.active() && splits_queries(fit.spec, fit.x.cview())
                                ? predict_eval_split(fit, xq, fit.spec.shard)
                                : predict_eval(fit, xq);
  regression_prediction p;
  p.fit = e.fit;
  p.defined = e.defined;
  p.undefined = e.undefined;
  p.se.resize(e.fit.size());
  for (std::size_t i = 0; i < e.fit.size(); ++i)
    p.se[i] = e.defined[i] ? std::sqrt(fit.sigma2 * e.sum_l2[i]) : 0.0;  // σ̂·√(Σ_j ℓ_j²)
  return p;
}

}  // namespace kf
