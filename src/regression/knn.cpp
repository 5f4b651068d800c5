// k nearest neighbors by a sorted copy (1-D) or a k-d tree (nanoflann), see knn.hpp.
#include "regression/knn.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "kernelformer/progress.hpp"
#include "kernelformer/regression/cross_validation.hpp"
#include "regression/kd_tree.hpp"

namespace kf::detail {
namespace {

// The weighted mean of y over a neighbor list (uniform, or 1/distance with exact matches
// taking all the weight), Σℓ², and the weight of row `self` (−1: none).
struct neighbor_fit {
  double fit = 0, sum_l2 = 0, self = 0;
};

// idx, dist: (k) the neighbor list, nearest first (exact matches, dist 0, lead it). Uniform:
// ℓ_j = 1/m, so Σℓ² = 1/m; 1/distance: ℓ_j = w_j/Σw, Σℓ² = Σw²/(Σw)².
neighbor_fit fit_from(const index* idx, const double* dist, index k, std::span<const double> y,
                      bool distance_weights, index self) {
  neighbor_fit r;
  index zeros = 0;
  if (distance_weights)
    while (zeros < k && dist[zeros] == 0) ++zeros;
  if (!distance_weights || zeros > 0) {  // uniform over all k, or over the exact matches
    const index m = distance_weights ? zeros : k;
    for (index j = 0; j < m; ++j) {
      r.fit += y[static_cast<std::size_t>(idx[j])];
      if (idx[j] == self) r.self = 1.0 / double(m);
    }
    r.fit /= double(m);
    r.sum_l2 = 1.0 / double(m);
    return r;
  }
  // No exact match, so `self` (at distance 0 if listed) is absent: its weight stays 0.
  double sw = 0, swy = 0, sw2 = 0;
  for (index j = 0; j < k; ++j) {
    const double w = 1.0 / dist[j];
    sw += w;
    swy += w * y[static_cast<std::size_t>(idx[j])];
    sw2 += w * w;
  }
  r.fit = swy / sw;
  r.sum_l2 = sw2 / (sw * sw);
  return r;
}

}  // namespace

// Drops row `self` from a neighbor list of length m (or, if it is not there, the last entry, or
// an exact duplicate of it when the list has one): what is left are the nearest other points.
index knn_drop_self(index* idx, double* dist, index m, index self) {
  index at = m - 1;
  for (index j = 0; j < m; ++j)
    if (idx[j] == self) {
      at = j;
      break;
    }
  for (index j = at; j + 1 < m; ++j) idx[j] = idx[j + 1], dist[j] = dist[j + 1];
  return m - 1;
}

struct knn_search::tree {
  matrix<double> rows;  // (n, d) the tree's own copy of the training rows
  cloud pts;            // nanoflann's view of rows
  kd_tree_any kd;       // the tree, its type chosen by d (monostate until built)
  tree(const_matrix_view<double> x, index d) : rows(x.rows, d), pts{} {
    for (index i = 0; i < x.rows; ++i)
      for (index c = 0; c < d; ++c) rows(i, c) = x(i, c);
    pts.x = rows.cview();
    kd_tree_build(kd, pts, d);
  }
  // Runs fn on the built tree (its type fixes the number of columns).
  template <class F>
  auto visit(F&& fn) const {
    using R = decltype(fn(std::declval<const kd_tree&>()));
    return std::visit(
        [&](const auto& t) -> R {
          if constexpr (std::is_same_v<std::decay_t<decltype(t)>, std::monostate>)
            throw std::logic_error("knn_search: no tree");
          else
            return fn(t);
        },
        kd);
  }
};

// 1-D: the rows sorted by x (stable: equal values keep row order); d ≥ 2: a k-d tree, whose
// vAcc (its permutation of the rows, leaf by leaf) is the locality order.
knn_search::knn_search(const_matrix_view<double> x) : n_(x.rows), d_(x.cols) {
  if (d_ == 1) {
    order_.resize(static_cast<std::size_t>(n_));
    std::iota(order_.begin(), order_.end(), index(0));
    std::stable_sort(order_.begin(), order_.end(),
                     [&](index a, index b) { return x(a, 0) < x(b, 0); });
    sorted_.resize(order_.size());
    for (std::size_t i = 0; i < order_.size(); ++i) sorted_[i] = x(order_[i], 0);
  } else {
    tree_ = std::make_unique<tree>(x, d_);
    tree_->visit([&](const auto& t) { order_.assign(t.vAcc.begin(), t.vAcc.end()); });
  }
}

knn_search::~knn_search() = default;

index knn_search::query(const double* q, index k, index* idx, double* dist) const {
  k = std::min(k, n_);
  if (d_ == 1) {
    const double a = q[0];
    const auto s = std::span<const double>(sorted_);
    // Two pointers outward from a's position: l the nearest unused value below, r above; each
    // step takes the nearer one (the lower on a tie), so the list comes out nearest first.
    auto r = static_cast<index>(std::lower_bound(s.begin(), s.end(), a) - s.begin());
    index l = r - 1;
    for (index j = 0; j < k; ++j) {
      const double dl = l >= 0 ? a - sorted_[static_cast<std::size_t>(l)]
                               : std::numeric_limits<double>::infinity();
      const double dr = r < n_ ? sorted_[static_cast<std::size_t>(r)] - a
                               : std::numeric_limits<double>::infinity();
      if (dl <= dr) {
        idx[j] = order_[static_cast<std::size_t>(l--)];
        dist[j] = dl;
      } else {
        idx[j] = order_[static_cast<std::size_t>(r++)];
        dist[j] = dr;
      }
    }
    return k;
  }
  // index and std::size_t are the signed and unsigned forms of one type: the tree writes the
  // rows straight into idx (they are < n, so the values are the same).
  static_assert(sizeof(index) == sizeof(std::size_t));
  auto* rows = reinterpret_cast<std::size_t*>(idx);
  const std::size_t got = tree_->visit(
      [&](const auto& t) { return t.knnSearch(q, static_cast<std::size_t>(k), rows, dist); });
  for (std::size_t j = 0; j < got; ++j) dist[j] = std::sqrt(dist[j]);  // the tree gives |·|²
  return static_cast<index>(got);
}

regression_eval knn_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                             std::span<const double> y, const_matrix_view<double> xq,
                             bool at_training, const knn_search* prebuilt) {
  std::unique_ptr<knn_search> own;
  if (prebuilt == nullptr) own = std::make_unique<knn_search>(x);
  const knn_search& search = prebuilt != nullptr ? *prebuilt : *own;
  const index nq = xq.rows, k = spec.k;
  // Every query gets min(k, n) ≥ 1 neighbors, so every fit is defined.
  regression_eval r;
  const auto nqu = static_cast<std::size_t>(nq);
  r.fit.assign(nqu, 0.0);
  r.sum_l2.assign(nqu, 0.0);
  r.defined.assign(nqu, 1);
  if (at_training) r.self_weight.assign(nqu, 0.0);
  progress_step step(fmt::format("neighbor queries ({} points)", nq), nq);
#pragma omp parallel
  {
    std::vector<index> idx(static_cast<std::size_t>(k));  // (k) per thread
    std::vector<double> dist(static_cast<std::size_t>(k)), q(static_cast<std::size_t>(xq.cols));
#pragma omp for schedule(static)
    for (index i = 0; i < nq; ++i) {
      step.tick(i);
      for (index c = 0; c < xq.cols; ++c) q[static_cast<std::size_t>(c)] = xq(i, c);
      const index m = search.query(q.data(), k, idx.data(), dist.data());
      const auto f =
          fit_from(idx.data(), dist.data(), m, y, spec.knn_distance_weights, at_training ? i : -1);
      const auto iu = static_cast<std::size_t>(i);
      r.fit[iu] = f.fit;
      r.sum_l2[iu] = f.sum_l2;
      if (at_training) r.self_weight[iu] = f.self;
    }
  }
  return r;
}

knn_training knn_training_pass(const regression_spec& spec, const knn_search& search,
                               const_matrix_view<double> x, std::span<const double> y) {
  const index n = x.rows, k = spec.k;
  knn_training t;
  const auto nu = static_cast<std::size_t>(n);
  t.fitted.assign(nu, 0.0);
  t.self_weight.assign(nu, 0.0);
  t.loo_residuals.assign(nu, std::numeric_limits<double>::infinity());  // n = 1: none exists
  // Points in locality order, in chunks of 1024 per thread: consecutive queries touch the same
  // part of the tree and of y.
  const auto& order = search.locality_order();
  // With an active shard, this process's block of the locality order (the caller sums).
  const auto b = spec.shard.block_of(n);
  progress_step step(fmt::format("the fit's neighbors ({} points, k = {})", b.size(), k), b.size());
#pragma omp parallel
  {
    std::vector<index> idx(static_cast<std::size_t>(k + 1));
    std::vector<double> dist(static_cast<std::size_t>(k + 1)), q(static_cast<std::size_t>(x.cols));
#pragma omp for schedule(dynamic, 1024)
    for (index r = b.lo; r < b.hi; ++r) {
      step.tick(r - b.lo);
      const index i = order[static_cast<std::size_t>(r)];
      const auto iu = static_cast<std::size_t>(i);
      for (index c = 0; c < x.cols; ++c) q[static_cast<std::size_t>(c)] = x(i, c);
      index m = search.query(q.data(), k + 1, idx.data(), dist.data());
      // The fit at x_i: its k nearest, x_i (distance 0) among them unless k + 1 points tie at 0
      // and x_i is the one left out — the fit is the same either way.
      const auto f =
          fit_from(idx.data(), dist.data(), std::min(m, k), y, spec.knn_distance_weights, i);
      t.fitted[iu] = f.fit;
      t.self_weight[iu] = f.self;
      if (m < 2) continue;  // a single point has no leave-one-out fit
      m = knn_drop_self(idx.data(), dist.data(), m, i);
      const auto g = fit_from(idx.data(), dist.data(), m, y, spec.knn_distance_weights, -1);
      t.loo_residuals[iu] = y[iu] - g.fit;
    }
  }
  return t;
}

std::vector<double> knn_loo_cv_curve(const regression_spec& spec, const knn_search& search,
                                     const_matrix_view<double> x, std::span<const double> y,
                                     index k_max) {
  // Per point, one list of k_max + 1 neighbors less the point itself; the fit for k is the mean
  // of its first k entries, so running sums give every k's residual in one pass: O(k_max).
  const index n = x.rows;
  const auto& order = search.locality_order();
  k_max = std::min(k_max, n - 1);
  std::vector<double> total(static_cast<std::size_t>(std::max<index>(k_max, 0)), 0.0);  // (k_max)
  if (k_max < 1) return total;
  const auto b = spec.shard.block_of(n);  // this process's block of the locality order
  progress_step step(fmt::format("choosing k by LOO-CV (1..{}, {} points)", k_max, b.size()),
                     b.size());
#pragma omp parallel
  {
    std::vector<double> local(total.size(), 0.0);  // this thread's sums, merged at the end
    std::vector<index> idx(static_cast<std::size_t>(k_max + 1));
    std::vector<double> dist(static_cast<std::size_t>(k_max + 1)),
        q(static_cast<std::size_t>(x.cols));
#pragma omp for schedule(dynamic, 1024)
    for (index r = b.lo; r < b.hi; ++r) {
      step.tick(r - b.lo);
      const index i = order[static_cast<std::size_t>(r)];
      for (index c = 0; c < x.cols; ++c) q[static_cast<std::size_t>(c)] = x(i, c);
      index m = search.query(q.data(), k_max + 1, idx.data(), dist.data());
      m = knn_drop_self(idx.data(), dist.data(), m, i);
      const double yi = y[static_cast<std::size_t>(i)];
      if (!spec.knn_distance_weights) {
        double sy = 0;
        for (index j = 0; j < m; ++j) {
          sy += y[static_cast<std::size_t>(idx[static_cast<std::size_t>(j)])];
          const double res = yi - sy / double(j + 1);  // k = j + 1
          local[static_cast<std::size_t>(j)] += res * res;
        }
        continue;
      }
      // 1/distance weights; exact matches (first in the list) take all the weight.
      double sy0 = 0, sw = 0, swy = 0;
      index zeros = 0;
      for (index j = 0; j < m; ++j) {
        const double d = dist[static_cast<std::size_t>(j)];
        const double yj = y[static_cast<std::size_t>(idx[static_cast<std::size_t>(j)])];
        if (d == 0) {
          ++zeros;
          sy0 += yj;
        } else {
          sw += 1 / d;
          swy += yj / d;
        }
        const double f = zeros > 0 ? sy0 / double(zeros) : swy / sw;
        local[static_cast<std::size_t>(j)] += (yi - f) * (yi - f);
      }
    }
#pragma omp critical
    for (std::size_t j = 0; j < total.size(); ++j) total[j] += local[j];
  }
  spec.shard.sum_all(total);  // the other processes' blocks
  for (double& v : total) v /= double(n);
  return total;
}

// The fit on the neighbor-search route (see knn.hpp); sets spec.k when it is chosen.
criterion_values knn_fit(regression_fit& f, regression_spec& spec) {
  const const_matrix_view<double> x = f.x.cview();
  const std::span<const double> y = f.y;
  const index n = x.rows;
  auto index_ptr = std::make_shared<const knn_search>(x);
  const knn_search& search = *index_ptr;
  f.knn_index = index_ptr;                   // predictions reuse it
  f.criterion = bandwidth_criterion::fixed;  // k is the smoothing parameter: given, or
  if (spec.k == 0) {                         // chosen by leave-one-out CV
    if (n < 3) throw std::invalid_argument("knn: choosing k by LOO-CV needs at least 3 points");
    // Leave-one-out from the fit's own search, or k-fold / grouped CV from one search per fold.
    const auto curve =
        spec.folds ? cv_splits(x, y, *spec.folds).knn_curve(spec, std::min(spec.k_max, n - 1))
                   : knn_loo_cv_curve(spec, search, x, y, spec.k_max);
    const auto best = std::min_element(curve.begin(), curve.end());
    spec.k = static_cast<index>(best - curve.begin()) + 1;
    for (std::size_t j = 0; j < curve.size(); ++j)
      f.curve.push_back({double(j + 1), {double(j + 1)}, curve[j]});  // k in both
    f.criterion = bandwidth_criterion::loo_cv;
    f.criterion_value = *best;  // CV_K with folds (summarize_fit keeps it), else LOO-CV
    f.at_search_boundary = spec.k == static_cast<index>(curve.size()) && curve.size() > 1;
  }
  if (spec.k < 1 || spec.k > n)
    throw std::invalid_argument(
        fmt::format("knn: k = {} must be in 1..{} (the number of points)", spec.k, n));
  f.spec = spec;
  auto t = knn_training_pass(spec, search, x, y);
  // Sums over the points this process evaluated (all of them, or its block of the locality
  // order), added over the processes: rss, df = Σ self weights (n/k for uniform weights without
  // ties), loo = Σ of the residuals that drop the point itself (not the (y − ŷ)/(1 − L_ii)
  // shortcut).
  const auto b = spec.shard.block_of(n);
  const auto& order = search.locality_order();
  double sums[3] = {0, 0, 0};  // rss, df, loo
  for (index r = b.lo; r < b.hi; ++r) {
    const auto iu = static_cast<std::size_t>(order[static_cast<std::size_t>(r)]);
    const double res = y[iu] - t.fitted[iu];
    sums[0] += res * res;
    sums[1] += t.self_weight[iu];
    sums[2] += t.loo_residuals[iu] * t.loo_residuals[iu];
  }
  spec.shard.sum_all(sums);
  const criterion_values cv = criteria_from_sums(sums[0], sums[1], sums[2], n);
  f.undefined = 0;
  if (spec.per_point) {
    f.fitted = std::move(t.fitted);
    f.hat_diag = std::move(t.self_weight);
    f.loo_residuals = std::move(t.loo_residuals);
  }
  return cv;
}

}  // namespace kf::detail
