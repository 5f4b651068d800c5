// Kernel classification (regression/classifier.hpp): the primitive with one-hot values.
#include "kernelformer/regression/classifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernelformer/masks.hpp"
#include "kernelformer/progress.hpp"
#include "kernelformer/smooth.hpp"
#include "regression/knn.hpp"

namespace kf {
namespace {

constexpr double kProbFloor = 1e-15;  // log-loss clipping (scikit-learn's historical eps)

// Throws std::invalid_argument unless there is one label per row, each in 0..num_classes − 1.
void check_labels(const std::vector<index>& labels, index n, index num_classes) {
  if (static_cast<index>(labels.size()) != n)
    throw std::invalid_argument(
        fmt::format("classify: {} labels for {} rows of x", labels.size(), n));
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] < 0 || labels[i] >= num_classes)
      throw std::invalid_argument(
          fmt::format("classify: row {}: label {} is not in 0..{}", i, labels[i], num_classes - 1));
}

// The kernel, mask and options of one evaluation (nw: the bandwidth per column; knn: top-k).
struct evaluation_setup {
  kernel_spec kern;    // nw: spec's kernel with its bandwidth; knn: uniform or inverse distance
  mask msk;            // j ≠ i under loo; knn adds top-k by distance
  smooth_options opt;  // d > 1: bandwidth_per_dim
};

// Validates the spec for n training rows of d columns (std::invalid_argument: k out of range, a
// non-distance kernel, a bandwidth count other than 1 or d, a non-positive bandwidth).
evaluation_setup make_setup(const classify_spec& spec, index n, index d, bool loo) {
  evaluation_setup s;
  const mask base = loo ? mask::causal(-1) | mask::window(-1, n) : mask::none();  // j ≠ i
  if (spec.method == classify_method::knn) {
    const index available = loo ? n - 1 : n;
    if (spec.k < 1 || spec.k > available)
      throw std::invalid_argument(
          fmt::format("knn: k = {} must be in 1..{} (the number of {}points)", spec.k, available,
                      loo ? "other " : ""));
    s.kern = spec.knn_distance_weights ? kernel_spec(kernel_inverse_distance{})
                                       : kernel_spec(kernel_uniform{});
    s.msk = base.topk(spec.k, topk_rank::distance);
    return s;
  }
  if (kernel_arg_of(spec.kernel) != kernel_arg::sqdist)
    throw std::invalid_argument(
        fmt::format("classification needs a distance kernel (gaussian, epanechnikov, …), not {}",
                    kernel_name(spec.kernel)));
  std::vector<double> h = spec.bandwidth;
  if (h.size() == 1) h.assign(static_cast<std::size_t>(d), h[0]);
  if (static_cast<index>(h.size()) != d)
    throw std::invalid_argument(
        fmt::format("classify: {} bandwidths for {} columns of x", h.size(), d));
  for (double v : h)
    if (!(std::isfinite(v) && v > 0))
      throw std::invalid_argument(fmt::format("classify: bandwidth {} must be positive", v));
  any_kernel k = spec.kernel;
  // One column: the kernel's own bandwidth. Several: the primitive divides column c by h_c and
  // the kernel runs at bandwidth 1 (smooth_options::bandwidth_per_dim).
  if (d == 1) {
    kernel_set_param(k, h[0]);
  } else {
    kernel_set_param(k, 1.0);
    s.opt.bandwidth_per_dim = h;
  }
  s.kern = k;
  s.msk = base;
  return s;
}

// A neighbor list's class distribution into row (C): uniform weights, or 1/distance with the
// exact matches (distance 0, first in the list) taking all the weight — the top-k mask's weights.
void class_distribution(const index* idx, const double* dist, index m,
                        const std::vector<index>& labels, bool distance_weights, double* row,
                        index num_classes) {
  std::fill(row, row + num_classes, 0.0);
  index zeros = 0;
  if (distance_weights)
    while (zeros < m && dist[zeros] == 0) ++zeros;
  const index use = distance_weights && zeros > 0 ? zeros : m;
  double sum = 0;
  for (index j = 0; j < use; ++j) {
    const double w = distance_weights && zeros == 0 ? 1.0 / dist[j] : 1.0;
    row[labels[static_cast<std::size_t>(idx[j])]] += w;
    sum += w;
  }
  for (index c = 0; c < num_classes; ++c) row[c] /= sum;
}

// The neighbor route: the k nearest of each query (loo: of the other points) from one search.
matrix<double> knn_probabilities(const classify_spec& spec, const detail::knn_search& search,
                                 const std::vector<index>& labels, index num_classes,
                                 const_matrix_view<double> xq, bool loo) {
  matrix<double> out(xq.rows, num_classes);
  const index want = loo ? spec.k + 1 : spec.k;
  progress_step step(fmt::format("neighbor queries ({} points)", xq.rows), xq.rows);
#pragma omp parallel
  {
    std::vector<index> idx(static_cast<std::size_t>(want));
    std::vector<double> dist(static_cast<std::size_t>(want)), q(static_cast<std::size_t>(xq.cols));
#pragma omp for schedule(static)
    for (index i = 0; i < xq.rows; ++i) {
      step.tick(i);
      for (index c = 0; c < xq.cols; ++c) q[static_cast<std::size_t>(c)] = xq(i, c);
      index m = search.query(q.data(), want, idx.data(), dist.data());
      if (loo) m = detail::knn_drop_self(idx.data(), dist.data(), m, i);
      class_distribution(idx.data(), dist.data(), std::min(m, spec.k), labels,
                         spec.knn_distance_weights, out.view().row(i), num_classes);
    }
  }
  return out;
}

// k by the LOO criterion over 1..k_max from one search of k_max + 1 neighbors per point (each
// list without the point itself); returns the curve, the best k into spec.k.
std::vector<criterion_point> knn_choose_k(classify_spec& spec, const_matrix_view<double> x,
                                          const std::vector<index>& labels, index num_classes,
                                          index k_max, const progress_fn& progress);

// LOO criterion of one candidate: the log-loss, or 1 − accuracy with the log-loss breaking ties
// (its weight 1e-9 × at most 34.5 = −log 1e-15 stays below one row's accuracy step 1/n up to
// ~10^7 rows). Lower is better; one all-pairs evaluation, O(n²).
double criterion_value(const classify_spec& spec, const_matrix_view<double> x,
                       const std::vector<index>& labels, index num_classes) {
  const matrix<double> p = classify_probabilities(spec, x, labels, num_classes, x, true);
  const classify_scores s = classify_score(p.cview(), labels);
  return spec.criterion == classify_criterion::log_loss ? s.log_loss
                                                        : (1.0 - s.accuracy) + 1e-9 * s.log_loss;
}

}  // namespace

std::string classify_criterion_name(classify_criterion c) {
  return c == classify_criterion::log_loss ? "loo-log-loss" : "loo-accuracy";
}

// Strict > keeps the first maximum: the smaller class index wins a tie.
index classify_argmax(const double* row, index num_classes) {
  index best = 0;
  for (index c = 1; c < num_classes; ++c)
    if (row[c] > row[best]) best = c;
  return best;
}

classify_scores classify_score(const_matrix_view<double> proba, const std::vector<index>& labels) {
  classify_scores s;
  const index n = proba.rows;
  if (n == 0) return s;
  index right = 0;
  for (index i = 0; i < n; ++i) {
    const index y = labels[static_cast<std::size_t>(i)];
    s.log_loss -= std::log(std::clamp(proba(i, y), kProbFloor, 1.0));  // −log p_{y_i}(x_i)
    right += classify_argmax(proba.row(i), proba.cols) == y;
  }
  s.log_loss /= double(n);
  s.accuracy = double(right) / double(n);
  return s;
}

matrix<double> classify_probabilities(const classify_spec& spec, const_matrix_view<double> x,
                                      const std::vector<index>& labels, index num_classes,
                                      const_matrix_view<double> xq, bool loo, index* undefined) {
  const index n = x.rows, d = x.cols;
  check_labels(labels, n, num_classes);
  if (loo && (xq.rows != n || xq.data != x.data))
    throw std::invalid_argument("classify: leave-one-out probabilities are at the training rows");
  if (xq.cols != d)
    throw std::invalid_argument(
        fmt::format("classify: query points have {} columns, the data {}", xq.cols, d));
  const evaluation_setup s = make_setup(spec, n, d, loo);
  if (spec.method == classify_method::knn && !spec.exact) {
    if (undefined != nullptr) *undefined = 0;  // every row has k ≥ 1 neighbors
    return knn_probabilities(spec, detail::knn_search(x), labels, num_classes, xq, loo);
  }
  // p_c(x) = Σ_j K(x, x_j) [y_j = c] / Σ_j K(x, x_j): NW with the one-hot rows as values.
  // V: the one-hot labels (n × C); the primitive's output row is then the class distribution.
  matrix<double> onehot(n, num_classes);
  std::vector<double> prior(static_cast<std::size_t>(num_classes), 0.0);  // (C) class frequencies
  for (index i = 0; i < n; ++i) {
    onehot(i, labels[static_cast<std::size_t>(i)]) = 1.0;
    prior[static_cast<std::size_t>(labels[static_cast<std::size_t>(i)])] += 1.0 / double(n);
  }
  matrix<double> out(xq.rows, num_classes);  // (nq, C)
  smooth_forward<double>(out.view(), {}, xq, x, onehot.cview(), s.kern, s.msk, s.opt);
  index empty = 0;
  for (index i = 0; i < xq.rows; ++i) {
    double sum = 0;
    for (index c = 0; c < num_classes; ++c) sum += out(i, c);
    if (sum > 0.5) continue;  // a distribution (sums to 1 up to rounding)
    ++empty;                  // the empty-row policy gave 0: fall back to the class frequencies
    for (index c = 0; c < num_classes; ++c) out(i, c) = prior[static_cast<std::size_t>(c)];
  }
  if (undefined != nullptr) *undefined = empty;
  return out;
}

classify_fit classify_fit_data(classify_spec spec, const_matrix_view<double> x,
                               const std::vector<index>& labels, index num_classes,
                               const progress_fn& progress) {
  const index n = x.rows, d = x.cols;
  check_labels(labels, n, num_classes);
  if (d < 1) throw std::invalid_argument("classify: x has no columns");
  std::vector<index> counts(static_cast<std::size_t>(num_classes), 0);
  for (index y : labels) ++counts[static_cast<std::size_t>(y)];
  const auto present = std::count_if(counts.begin(), counts.end(), [](index c) { return c > 0; });
  if (present < 2)
    throw std::invalid_argument(
        fmt::format("classify: the labels hold {} class; at least 2 are needed", present));
  if (n < 3) throw std::invalid_argument(fmt::format("classify: {} rows; at least 3 needed", n));
  // The parameter: k by trying every k in 1..k_max (k_max ≤ n − 1, the other points), or the
  // bandwidth by bandwidth_search around Silverman's rule, each scored by criterion_value.
  classify_fit f;
  f.num_classes = num_classes;
  const std::string name = classify_criterion_name(spec.criterion);
  if (spec.method == classify_method::knn && spec.k == 0) {
    const index k_max = std::min(spec.k_max, n - 1);
    if (k_max < 1) throw std::invalid_argument("knn: --k-max must be at least 1");
    if (!spec.exact) {
      f.curve = knn_choose_k(spec, x, labels, num_classes, k_max, progress);
      f.spec.k = spec.k;
      f.at_search_boundary = spec.k == k_max && k_max < n - 1;
    }
  }
  if (spec.method == classify_method::knn && spec.k == 0) {
    const index k_max = std::min(spec.k_max, n - 1);
    double best = INFINITY;
    progress_step step("choosing k", k_max, static_cast<bool>(progress));
    for (index k = 1; k <= k_max; ++k) {
      spec.k = k;
      const double v = criterion_value(spec, x, labels, num_classes);
      f.curve.push_back({double(k), {double(k)}, v});
      if (v < best) best = v, f.spec.k = k;
      if (progress) progress(static_cast<int>(k), static_cast<int>(k_max));
      step.set(k);
    }
    spec.k = f.spec.k;
    // At the largest k tried, unless that was every other point (no larger k exists).
    f.at_search_boundary = spec.k == k_max && k_max < n - 1;
  } else if (spec.method == classify_method::nw && spec.bandwidth.empty()) {
    const std::vector<double> ref = bandwidth_rule(x, bandwidth_criterion::silverman);
    const auto objective = [&](const std::vector<double>& h) {
      classify_spec s = spec;
      s.bandwidth = h;
      return criterion_value(s, x, labels, num_classes);
    };
    bandwidth_search_result r = bandwidth_search(objective, ref, name, progress);
    spec.bandwidth = std::move(r.bandwidth);
    f.at_search_boundary = r.at_boundary;
    f.curve = std::move(r.curve);
  }
  if (spec.method == classify_method::nw && spec.bandwidth.size() == 1)
    spec.bandwidth.assign(static_cast<std::size_t>(d), spec.bandwidth[0]);
  f.spec = spec;
  // The diagnostics at the chosen parameter: LOO probabilities (n, C), scores, confusion matrix.
  f.loo_proba = classify_probabilities(spec, x, labels, num_classes, x, true, &f.undefined);
  f.loo = classify_score(f.loo_proba.cview(), labels);
  f.confusion.assign(static_cast<std::size_t>(num_classes),
                     std::vector<index>(static_cast<std::size_t>(num_classes), 0));
  for (index i = 0; i < n; ++i) {
    const index truth = labels[static_cast<std::size_t>(i)];
    const index predicted = classify_argmax(f.loo_proba.cview().row(i), num_classes);
    ++f.confusion[static_cast<std::size_t>(truth)][static_cast<std::size_t>(predicted)];
  }
  return f;
}

namespace {

std::vector<criterion_point> knn_choose_k(classify_spec& spec, const_matrix_view<double> x,
                                          const std::vector<index>& labels, index num_classes,
                                          index k_max, const progress_fn& progress) {
  const index n = x.rows;
  const detail::knn_search search(x);
  const auto width = static_cast<std::size_t>(k_max + 1);
  std::vector<index> idx(static_cast<std::size_t>(n) * width), len(static_cast<std::size_t>(n));
  std::vector<double> dist(idx.size());
  {
    progress_step step(fmt::format("neighbors of {} points (k_max = {})", n, k_max), n);
#pragma omp parallel
    {
      std::vector<double> q(static_cast<std::size_t>(x.cols));
#pragma omp for schedule(static)
      for (index i = 0; i < n; ++i) {
        step.tick(i);
        for (index c = 0; c < x.cols; ++c) q[static_cast<std::size_t>(c)] = x(i, c);
        index* li = idx.data() + static_cast<std::size_t>(i) * width;
        double* di = dist.data() + static_cast<std::size_t>(i) * width;
        const index m = search.query(q.data(), k_max + 1, li, di);
        len[static_cast<std::size_t>(i)] = detail::knn_drop_self(li, di, m, i);
      }
    }
  }
  std::vector<criterion_point> curve;
  double best = INFINITY;
  matrix<double> p(n, num_classes);
  for (index k = 1; k <= k_max; ++k) {
    for (index i = 0; i < n; ++i) {
      const std::size_t at = static_cast<std::size_t>(i) * width;
      class_distribution(idx.data() + at, dist.data() + at,
                         std::min(k, len[static_cast<std::size_t>(i)]), labels,
                         spec.knn_distance_weights, p.view().row(i), num_classes);
    }
    const classify_scores s = classify_score(p.cview(), labels);
    const double v = spec.criterion == classify_criterion::log_loss
                         ? s.log_loss
                         : (1.0 - s.accuracy) + 1e-9 * s.log_loss;
    curve.push_back({double(k), {double(k)}, v});
    if (v < best) best = v, spec.k = k;
    if (progress) progress(static_cast<int>(k), static_cast<int>(k_max));
  }
  return curve;
}

}  // namespace

}  // namespace kf
