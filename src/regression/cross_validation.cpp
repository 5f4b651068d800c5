// k-fold and grouped cross-validation (regression/cross_validation.hpp): the folds, the data split
// once per fold, and CV_K on whatever route the smoother of each training part takes.
#include "kernelformer/regression/cross_validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>

#include "kernelformer/regression/smoother.hpp"
#include "regression/knn.hpp"

namespace kf {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The k-fold residual sums for every k from one neighbor list of a held-out point (nearest
// first, m entries): entry j gets (y_i − fit from the first min(j + 1, m) neighbors)².
void add_knn_residuals(const regression_spec& spec, std::span<const double> y_train, double yi,
                       const index* idx, const double* dist, index m, std::vector<double>& total) {
  double sy = 0, sw = 0, swy = 0, sy0 = 0;
  index zeros = 0;
  double f = 0;
  for (std::size_t j = 0; j < total.size(); ++j) {
    if (static_cast<index>(j) < m) {
      const double yj = y_train[static_cast<std::size_t>(idx[j])];
      if (!spec.knn_distance_weights) {
        sy += yj;
        f = sy / double(j + 1);
      } else if (dist[j] == 0) {  // exact matches take all the weight
        ++zeros;
        sy0 += yj;
        f = sy0 / double(zeros);
      } else {
        sw += 1 / dist[j];
        swy += yj / dist[j];
        f = zeros > 0 ? sy0 / double(zeros) : swy / sw;
      }
    }
    total[j] += (yi - f) * (yi - f);
  }
}

}  // namespace

cv_folds cv_folds_kfold(index n, index k, std::uint64_t seed) {
  if (k < 2 || k > n)
    throw std::invalid_argument(fmt::format(
        "k-fold cross-validation: k = {} must be in 2..{} (the number of points)", k, n));
  std::vector<index> order(static_cast<std::size_t>(n));
  for (index i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  std::mt19937_64 rng(seed);
  for (index i = n - 1; i > 0; --i) {  // Fisher–Yates with a portable draw (no distribution)
    const auto j = static_cast<index>(rng() % static_cast<std::uint64_t>(i + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  cv_folds f;
  f.count = k;
  f.fold_of.assign(static_cast<std::size_t>(n), 0);
  for (index i = 0; i < n; ++i)
    f.fold_of[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i % k;
  f.name = fmt::format("{}-fold (seed {})", k, seed);
  return f;
}

cv_folds cv_folds_groups(std::span<const double> groups) {
  std::map<double, index> number;
  for (double g : groups) {
    if (!std::isfinite(g))
      throw std::invalid_argument("grouped cross-validation: a group value is not finite");
    number.emplace(g, 0);
  }
  if (number.size() < 2)
    throw std::invalid_argument(
        fmt::format("grouped cross-validation needs at least 2 groups, got {}", number.size()));
  index next = 0;
  for (auto& [value, id] : number) id = next++;
  cv_folds f;
  f.count = next;
  f.fold_of.reserve(groups.size());
  for (double g : groups) f.fold_of.push_back(number.at(g));
  f.name = fmt::format("leave-one-group-out ({} groups)", next);
  return f;
}

cv_folds cv_folds_from_ids(std::span<const index> ids, std::string name) {
  std::vector<double> as_double(ids.begin(), ids.end());
  for (index id : ids)
    if (id < 0) throw std::invalid_argument("cross-validation folds: a fold id is negative");
  cv_folds f = cv_folds_groups(as_double);
  f.name = std::move(name);
  return f;
}

struct cv_splits::part {
  matrix<double> x_train, x_test;
  std::vector<double> y_train, y_test;
};

cv_splits::cv_splits(const_matrix_view<double> x, std::span<const double> y, const cv_folds& folds)
    : n_(x.rows) {
  if (static_cast<index>(folds.fold_of.size()) != x.rows || folds.count < 2)
    throw std::invalid_argument(fmt::format(
        "cross-validation folds: {} fold ids for {} points, {} folds (expected one per point, "
        "at least 2 folds)",
        folds.fold_of.size(), x.rows, folds.count));
  std::vector<index> size(static_cast<std::size_t>(folds.count), 0);
  for (index f : folds.fold_of) {
    if (f < 0 || f >= folds.count)
      throw std::invalid_argument("cross-validation folds: a fold id is out of range");
    ++size[static_cast<std::size_t>(f)];
  }
  for (index f = 0; f < folds.count; ++f) {
    const index held = size[static_cast<std::size_t>(f)];
    if (held == 0 || held == x.rows)
      throw std::invalid_argument(fmt::format(
          "cross-validation folds: fold {} holds {} of {} points (each needs some, and some left "
          "to train on)",
          f, held, x.rows));
    auto p = std::make_unique<part>();
    p->x_train = matrix<double>(x.rows - held, x.cols);
    p->x_test = matrix<double>(held, x.cols);
    index tr = 0, te = 0;
    for (index i = 0; i < x.rows; ++i) {
      const bool test = folds.fold_of[static_cast<std::size_t>(i)] == f;
      matrix<double>& dst = test ? p->x_test : p->x_train;
      const index r = test ? te++ : tr++;
      for (index c = 0; c < x.cols; ++c) dst(r, c) = x(i, c);
      (test ? p->y_test : p->y_train).push_back(y[static_cast<std::size_t>(i)]);
    }
    parts_.push_back(std::move(p));
  }
}

cv_splits::~cv_splits() = default;

index cv_splits::folds() const { return static_cast<index>(parts_.size()); }

double cv_splits::criterion(const regression_spec& spec0) const {
  regression_spec spec = spec0;
  spec.folds.reset();
  spec.per_point = true;
  double sum = 0;
  for (const auto& p : parts_) {
    const regression_eval e =
        regression_evaluate(spec, p->x_train.cview(), p->y_train, p->x_test.cview(), false);
    if (e.undefined > 0) return kInf;
    for (std::size_t i = 0; i < p->y_test.size(); ++i) {
      const double r = p->y_test[i] - e.fit[i];
      sum += r * r;
    }
  }
  return sum / double(n_);
}

std::vector<double> cv_splits::knn_curve(const regression_spec& spec, index k_max) const {
  std::vector<double> total(static_cast<std::size_t>(std::max<index>(k_max, 0)), 0.0);
  for (const auto& p : parts_) {
    const detail::knn_search search(p->x_train.cview());
    const index cols = p->x_test.cols();
#pragma omp parallel
    {
      std::vector<double> local(total.size(), 0.0);
      std::vector<index> idx(static_cast<std::size_t>(k_max));
      std::vector<double> dist(static_cast<std::size_t>(k_max)), q(static_cast<std::size_t>(cols));
#pragma omp for schedule(dynamic, 256)
      for (index i = 0; i < p->x_test.rows(); ++i) {
        for (index c = 0; c < cols; ++c) q[static_cast<std::size_t>(c)] = p->x_test(i, c);
        const index m = search.query(q.data(), k_max, idx.data(), dist.data());
        add_knn_residuals(spec, p->y_train, p->y_test[static_cast<std::size_t>(i)], idx.data(),
                          dist.data(), m, local);
      }
#pragma omp critical
      for (std::size_t j = 0; j < total.size(); ++j) total[j] += local[j];
    }
  }
  for (double& v : total) v /= double(n_);
  return total;
}

}  // namespace kf
