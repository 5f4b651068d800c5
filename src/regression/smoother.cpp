// Nadaraya–Watson, local-linear and KNN regression: the fit (bandwidth or k chosen by a
// criterion), its per-point diagnostics and predictions, each switching once on the route
// (choose_regression_route, route.cpp; the routes' functions in smoother_routes.hpp).
#include "kernelformer/regression/smoother.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "kernelformer/progress.hpp"
#include "kernelformer/regression/bandwidth_dpi.hpp"
#include "kernelformer/regression/binned.hpp"
#include "kernelformer/regression/cross_validation.hpp"
#include "kernelformer/smooth.hpp"
#include "regression/binned2d.hpp"
#include "regression/knn.hpp"
#include "regression/smoother_routes.hpp"

namespace kf {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using detail::check_regression_data;
using detail::column0;
using detail::regression_bandwidths;

criterion_values criteria_of(const regression_eval& e, std::span<const double> y, index n,
                             const data_shard& shard);

// The caches a fit keeps for its predictions (none for a bare regression_evaluate).
struct prepared_grids {
  const detail::binned1d_grid* grid1d = nullptr;
  const detail::nw_binned2d_grid* grid2d = nullptr;
};

// The rows of xq as a matrix (the points a binned route leaves to the exact one).
matrix<double> rows_of(const_matrix_view<double> xq, const std::vector<index>& rows) {
  matrix<double> sub(static_cast<index>(rows.size()), xq.cols);
  for (std::size_t a = 0; a < rows.size(); ++a)
    for (index c = 0; c < xq.cols; ++c) sub(static_cast<index>(a), c) = xq(rows[a], c);
  return sub;
}

// The exact evaluation (spec with exact = true, one process) at the given rows of xq.
regression_eval exact_at(const regression_spec& spec, const_matrix_view<double> x,
                         std::span<const double> y, const_matrix_view<double> xq,
                         const std::vector<index>& rows) {
  regression_spec exact = spec;
  exact.exact = true;
  const matrix<double> sub = rows_of(xq, rows);
  return regression_evaluate(exact, x, y, sub.cview(), false);
}

// The binned routes (1-D and 2-D); the points beyond the binned kernel's reach (a truncated
// gaussian far from the data) are evaluated exactly, so both paths share one policy.
regression_eval evaluate_binned(const route& r, const regression_spec& spec,
                                const_matrix_view<double> x, std::span<const double> y,
                                const_matrix_view<double> xq, bool at_training,
                                const prepared_grids& grids) {
  (void)regression_bandwidths(spec, x.cols);  // validates
  regression_eval e =
      r.kind == route_kind::binned2d
          ? detail::nw_binned2d_evaluate(spec, x, y, xq, at_training,
                                         detail::binned2d_settings{}.cells_per_h, grids.grid2d)
          : detail::binned1d_evaluate(spec, x, y, xq, at_training, grids.grid1d);
  if (e.undefined == 0) return e;
  std::vector<index> rows;
  for (index i = 0; i < xq.rows; ++i)
    if (!e.defined[static_cast<std::size_t>(i)]) rows.push_back(i);
  const regression_eval ex = exact_at(spec, x, y, xq, rows);
  e.undefined = ex.undefined;
  for (std::size_t a = 0; a < rows.size(); ++a) {
    const auto iu = static_cast<std::size_t>(rows[a]);
    e.fit[iu] = ex.fit[a];
    e.sum_l2[iu] = ex.sum_l2[a];
    e.defined[iu] = ex.defined[a];
  }
  return e;
}

// The evaluation on route r (chosen by the caller, once): the one switch over the routes.
regression_eval evaluate_on(const route& r, const regression_spec& spec,
                            const_matrix_view<double> x, std::span<const double> y,
                            const_matrix_view<double> xq, bool at_training,
                            const prepared_grids& grids) {
  switch (r.kind) {
    case route_kind::neighbors:
      return detail::knn_evaluate(spec, x, y, xq, at_training);
    case route_kind::binned:
    case route_kind::binned2d:
      return evaluate_binned(r, spec, x, y, xq, at_training, grids);
    case route_kind::sorted_windows:
      return detail::sorted_window_evaluate(spec, x, y, xq, at_training);
    case route_kind::kd_tree:
      return detail::radius_evaluate(spec, x, y, xq, at_training);
    case route_kind::all_pairs_topk:
    case route_kind::features:
    case route_kind::all_pairs:
      break;
  }
  return detail::evaluate_all_pairs(spec, x, y, xq, at_training);
}

// The checks of the queries (the training data are checked by the caller: at every
// regression_evaluate, once at a fit).
void check_queries(const regression_spec& spec, const_matrix_view<double> x,
                   const_matrix_view<double> xq, bool at_training) {
  const index n = x.rows;
  if (xq.cols != x.cols)
    throw std::invalid_argument(
        fmt::format("regression: prediction points have {} columns but x has {}", xq.cols, x.cols));
  if (at_training && xq.rows != n) throw std::logic_error("at_training needs xq = x");
  if (spec.method == regression_method::knn && (spec.k < 1 || spec.k > n))
    throw std::invalid_argument(
        fmt::format("knn: k = {} must be in 1..{} (the number of points)", spec.k, n));
}

}  // namespace

regression_eval regression_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                                    std::span<const double> y, const_matrix_view<double> xq,
                                    bool at_training) {
  check_regression_data(x, y);
  check_queries(spec, x, xq, at_training);
  return evaluate_on(choose_regression_route(spec, x), spec, x, y, xq, at_training, {});
}

bool regression_kernel_supported(const any_kernel& k, regression_method method) {
  return kernel_arg_of(k) == kernel_arg::sqdist ||
         (std::holds_alternative<kernel_rff>(k) && method == regression_method::nw);
}

std::string regression_shard_refusal(const regression_spec& spec, index /*n*/, index /*d*/) {
  if (spec.method == regression_method::knn && spec.exact)
    return "knn --exact ranks all points with a top-k mask, which is not sharded (drop --exact: "
           "the neighbor route splits the points over the processes)";
  if (std::holds_alternative<kernel_rff>(spec.kernel))
    return "--kernel rff is not sharded: its signed partial sums do not merge in the log domain";
  if (spec.folds)
    return "k-fold and grouped cross-validation (--cv) are not sharded: each fold refits on one "
           "process (leave-one-out is)";
  return "";
}

criterion_values criteria_from_sums(double rss, double df, double loo, index n) {
  const double nn = double(n);
  criterion_values c{loo / nn, kInf, kInf, df, rss, 0};
  if (df < nn) c.gcv = (rss / nn) / ((1 - df / nn) * (1 - df / nn));  // else +inf
  if (nn - df - 2 > 0 && rss > 0) c.aicc = std::log(rss / nn) + 1 + 2 * (df + 1) / (nn - df - 2);
  return c;
}

namespace {

// The criteria on route r: sums over bins on the binned routes, else sums over the training
// points. With an active shard this process evaluates its block of the points (against all of
// the data, which it holds) and the sums are added over the processes.
criterion_values criteria_on(const route& r, const regression_spec& spec,
                             const_matrix_view<double> x, std::span<const double> y) {
  const index n = x.rows;
  if (r.kind == route_kind::binned2d) {
    (void)regression_bandwidths(spec, 2);
    return detail::nw_binned2d_criteria(spec, x, y, detail::binned2d_settings{}.cells_per_h);
  }
  if (r.kind == route_kind::binned) {
    (void)regression_bandwidths(spec, 1);
    std::vector<double> hold;
    const auto xs = column0(x, hold);
    const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
    const binned_data bd(xs, y, *lo, *hi, spec.shard);
    return detail::binned1d_criteria(spec, bd, binned_settings{}.cells_per_h);
  }
  const auto b = spec.shard.block_of(n);
  const auto xb = x.block(b.lo, 0, b.size(), x.cols);
  const auto yb = y.subspan(static_cast<std::size_t>(b.lo), static_cast<std::size_t>(b.size()));
  if (r.kind == route_kind::sorted_windows)
    return criteria_of(detail::sorted_window_evaluate(spec, x, y, xb, true, false), yb, n,
                       spec.shard);
  if (!spec.shard.active()) return criteria_of(evaluate_on(r, spec, x, y, x, true, {}), y, n, {});
  regression_spec local = spec;
  local.shard = {};
  return criteria_of(evaluate_on(r, local, x, y, xb, true, {}), yb, n, spec.shard);
}

}  // namespace

criterion_values regression_criteria(const regression_spec& spec, const_matrix_view<double> x,
                                     std::span<const double> y) {
  check_regression_data(x, y);
  return criteria_on(choose_regression_route(spec, x), spec, x, y);
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
// vectors: the points the grid leaves undefined are evaluated exactly, as regression_evaluate
// does. Over several processes each checks its block of the points (exactly over all the data,
// which it holds) and the counts are summed.
index undefined_at_training_binned(const regression_fit& f, const detail::binned1d_grid& grid) {
  const const_matrix_view<double> x = f.x.cview();
  const auto b = f.spec.shard.block_of(x.rows);
  const auto rows = detail::binned1d_undefined_rows(grid, x.block(b.lo, 0, b.size(), 1), b.lo);
  regression_spec one = f.spec;
  one.shard = {};
  const double undefined = rows.empty() ? 0.0 : double(exact_at(one, x, f.y, x, rows).undefined);
  return static_cast<index>(f.spec.shard.sum_all(undefined));
}

// The 2-D binned route without per-point diagnostics: one grid for the criteria and the points
// it leaves undefined (evaluated exactly, as regression_evaluate does), kept for predictions.
criterion_values summary_binned2d(regression_fit& f) {
  const const_matrix_view<double> x = f.x.cview();
  std::vector<index> rows;
  const criterion_values cv = detail::nw_binned2d_criteria(
      f.spec, x, f.y, detail::binned2d_settings{}.cells_per_h, &rows, &f.binned2d_grid);
  f.undefined = rows.empty() ? 0 : exact_at(f.spec, x, f.y, x, rows).undefined;
  return cv;
}

// The per-point diagnostics from one evaluation at the training points, reusing its buffers.
void keep_per_point(regression_fit& f, regression_eval& e) {
  const std::span<const double> y = f.y;
  const index n = f.x.rows();
  f.loo_residuals = std::move(e.sum_l2);  // its buffer, reused (Σℓ² at training not kept)
  f.loo_residuals.resize(static_cast<std::size_t>(n));
  for (index i = 0; i < n; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    const double denom = 1.0 - e.self_weight[iu];
    f.loo_residuals[iu] = denom > 1e-10 ? (y[iu] - e.fit[iu]) / denom : kInf;
  }
  f.fitted = std::move(e.fit);
  f.hat_diag = std::move(e.self_weight);
}

// The fit's criteria at its chosen bandwidth, and (spec.per_point) its per-point diagnostics,
// on f.route. The binned routes' criteria are sums over bins (as in the search); the exact
// routes' come from the same evaluation as the per-point diagnostics. The 1-D binned route
// keeps its grid (when small enough) for the predictions.
criterion_values fit_diagnostics(regression_fit& f) {
  const regression_spec& spec = f.spec;
  const const_matrix_view<double> x = f.x.cview();
  const std::span<const double> y = f.y;
  const bool binned = f.route.binned();
  std::shared_ptr<const detail::binned1d_grid> grid1d;
  if (f.route.kind == route_kind::binned) {
    grid1d = detail::binned1d_make(spec, x, y);
    if (grid1d->bytes() <= detail::kBinned1dKeepBytes) f.binned1d_grid = grid1d;
    if (!spec.per_point) {
      const criterion_values cv = criteria_on(f.route, spec, x, y);
      f.undefined = undefined_at_training_binned(f, *grid1d);  // O(grid), no n-vectors
      return cv;
    }
  }
  if (f.route.kind == route_kind::binned2d && !spec.per_point) return summary_binned2d(f);
  criterion_values cv{};
  if (binned) cv = criteria_on(f.route, spec, x, y);
  if (spec.shard.active()) {
    if (spec.per_point)
      throw std::invalid_argument("regression: per-point diagnostics are not kept over processes");
    cv = criteria_on(f.route, spec, x, y);  // summed over blocks of the points
    f.undefined = cv.undefined;
    return cv;
  }
  regression_eval e = evaluate_on(f.route, spec, x, y, x, true, {grid1d.get(), nullptr});
  if (!binned) cv = criteria_of(e, y, x.rows, {});
  f.undefined = e.undefined;
  if (spec.per_point) keep_per_point(f, e);
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
  const index n = x.rows;
  const index need = criterion == bandwidth_criterion::aicc ? 5 : 3;
  if (n < need)
    throw std::invalid_argument(
        fmt::format("bandwidth selection by {} needs at least {} points, got {}",
                    bandwidth_criterion_name(criterion), need, n));
  // The route's family does not depend on the bandwidth (the k-d tree's share of the box does:
  // regression_criteria chooses per candidate). The binned path bins once per grid size and
  // searches at a coarser resolution.
  regression_spec start = spec;
  start.bandwidth = bandwidth_rule(x, bandwidth_criterion::silverman);
  const route family = choose_regression_route(start, x);
  std::unique_ptr<binned_data> bd;
  std::vector<double> hold;
  if (family.kind == route_kind::binned) {
    const auto xs = column0(x, hold);
    const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
    bd = std::make_unique<binned_data>(xs, y, *lo, *hi, spec.shard);
  }
  // The sorted-window route searches a sorted copy (sorted once, not per bandwidth).
  matrix<double> x_sorted;
  std::vector<double> y_sorted;
  if (family.kind == route_kind::sorted_windows) sorted_copy(x, y, x_sorted, y_sorted);
  // k-fold or grouped CV: the data split once, each fold's smoother on its own route.
  std::unique_ptr<cv_splits> splits;
  if (spec.folds) splits = std::make_unique<cv_splits>(x, y, *spec.folds);
  auto objective = [&](const std::vector<double>& h) {
    regression_spec s = spec;
    s.bandwidth = h;
    if (splits) {  // each fold's binned route at the search resolution, as LOO's
      s.binned_cells_per_h = binned_settings{}.search_cells_per_h;
      return splits->criterion(s);
    }
    const auto cv =
        family.kind == route_kind::binned
            ? detail::binned1d_criteria(s, *bd, binned_settings{}.search_cells_per_h)
        : family.kind == route_kind::binned2d
            ? detail::nw_binned2d_criteria(s, x, y, detail::binned2d_settings{}.search_cells_per_h)
        : family.kind == route_kind::sorted_windows
            ? criteria_on(family, s, x_sorted.cview(), y_sorted)
            : regression_criteria(s, x, y);
    return criterion == bandwidth_criterion::loo_cv ? cv.loo_cv
           : criterion == bandwidth_criterion::gcv  ? cv.gcv
                                                    : cv.aicc;
  };
  const auto res =
      bandwidth_search(objective, start.bandwidth, bandwidth_criterion_name(criterion), progress);
  spec.bandwidth = res.bandwidth;
  if (splits) {  // CV_K at the chosen bandwidth, at full resolution; summarize_fit keeps it
    regression_spec s = spec;
    s.bandwidth = res.bandwidth;
    f.criterion_value = splits->criterion(s);
  }
  f.curve = res.curve;
  f.at_search_boundary = res.at_boundary;
  f.search_evaluations = res.evaluations;
}

std::vector<double> column(const_matrix_view<double> x, index c) {
  std::vector<double> v(static_cast<std::size_t>(x.rows));
  for (index r = 0; r < x.rows; ++r) v[static_cast<std::size_t>(r)] = x(r, c);
  return v;
}

// spec.bandwidth by the criterion (given, a rule of thumb, or searched); f.criterion records it
// (knn: fixed, k being its smoothing parameter). Throws for a density criterion.
void choose_bandwidth(regression_spec& spec, const_matrix_view<double> x, std::span<const double> y,
                      bandwidth_criterion criterion, const progress_fn& progress,
                      regression_fit& f) {
  f.criterion = criterion;
  if (spec.folds && spec.method != regression_method::knn &&
      criterion != bandwidth_criterion::loo_cv)
    throw std::invalid_argument(
        fmt::format("cross-validation folds ({}) choose a bandwidth by cv, not by {}",
                    spec.folds->name, bandwidth_criterion_name(criterion)));
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
      if (spec.folds && criterion != bandwidth_criterion::loo_cv)
        throw std::invalid_argument(
            fmt::format("{} is a leave-one-out criterion; cross-validation folds ({}) apply to cv",
                        bandwidth_criterion_name(criterion), spec.folds->name));
      search_bandwidth(spec, x, y, criterion, progress, f);
      break;
    case bandwidth_criterion::dpi:
      if (spec.method != regression_method::local_linear || x.cols != 1 ||
          !std::holds_alternative<kernel_gaussian>(spec.kernel))
        throw std::invalid_argument(
            "dpi is the direct plug-in of gaussian local-linear regression on one column "
            "(KernSmooth's dpill): use --method local-linear --kernel gaussian, or cv");
      spec.bandwidth = {bandwidth_dpi(column(x, 0), y)};
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
  if (f.spec.folds && f.criterion == bandwidth_criterion::loo_cv) return;  // CV_K, kept
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
  f.route = choose_regression_route(spec, x);
  const criterion_values cv = spec.method == regression_method::knn && !spec.exact
                                  ? detail::knn_fit(f, spec)
                                  : fit_diagnostics(f);
  summarize_fit(f, cv);
  return f;
}

namespace {

// The fit's evaluation at xq on its route: knn reuses the fit's neighbor search, the binned
// routes their grids.
regression_eval predict_eval(const regression_fit& fit, const_matrix_view<double> xq) {
  check_queries(fit.spec, fit.x.cview(), xq, false);
  if (fit.route.kind == route_kind::neighbors && fit.knn_index)
    return detail::knn_evaluate(fit.spec, fit.x.cview(), fit.y, xq, false, fit.knn_index.get());
  return evaluate_on(fit.route, fit.spec, fit.x.cview(), fit.y, xq, false,
                     {fit.binned1d_grid.get(), fit.binned2d_grid.get()});
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
  regression_eval e = fit.spec.shard.active() && fit.route.splits_queries()
                          ? predict_eval_split(fit, xq, fit.spec.shard)
                          : predict_eval(fit, xq);
  regression_prediction p;
  p.fit = std::move(e.fit);
  p.defined = std::move(e.defined);
  p.undefined = e.undefined;
  p.se.resize(p.fit.size());
  for (std::size_t i = 0; i < p.fit.size(); ++i)
    p.se[i] = p.defined[i] ? std::sqrt(fit.sigma2 * e.sum_l2[i]) : 0.0;  // σ̂·√(Σ_j ℓ_j²)
  p.sum_l2 = std::move(e.sum_l2);
  return p;
}

}  // namespace kf
