// k-fold and grouped cross-validation (regression/cross_validation.hpp): the folds, CV_K against
// a plain refit per fold, leave-one-out as n folds equal to the closed form, knn's curve, and the
// fit's search minimizing CV_K. Python ties CV_K to scikit-learn's cross_val_score
// (python/tests/test_cross_validation.py).
#include "kernelformer/regression/cross_validation.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernelformer/regression/smoother.hpp"

namespace kf {
namespace {

struct sample {
  matrix<double> x;
  std::vector<double> y;
};

sample noisy_sine(index n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 10.0);
  std::normal_distribution<double> e(0.0, 0.3);
  sample s{matrix<double>(n, 1), {}};
  for (index i = 0; i < n; ++i) {
    s.x(i, 0) = u(rng);
    s.y.push_back(std::sin(s.x(i, 0)) + e(rng));
  }
  return s;
}

// CV_K by hand: gaussian NW written out, every held-out point against its fold's training part.
double plain_kfold_nw(const sample& s, double h, const cv_folds& f) {
  double sum = 0;
  for (index i = 0; i < s.x.rows(); ++i) {
    double num = 0, den = 0;
    for (index j = 0; j < s.x.rows(); ++j) {
      if (f.fold_of[static_cast<std::size_t>(j)] == f.fold_of[static_cast<std::size_t>(i)])
        continue;
      const double d = (s.x(i, 0) - s.x(j, 0)) / h;
      const double w = std::exp(-0.5 * d * d);
      num += w * s.y[static_cast<std::size_t>(j)];
      den += w;
    }
    const double r = s.y[static_cast<std::size_t>(i)] - num / den;
    sum += r * r;
  }
  return sum / double(s.x.rows());
}

TEST(CrossValidation, KfoldFoldsAreBalancedSeededAndCoverEveryRow) {
  const cv_folds a = cv_folds_kfold(103, 5, 7), b = cv_folds_kfold(103, 5, 7),
                 c = cv_folds_kfold(103, 5, 8);
  EXPECT_EQ(a.fold_of, b.fold_of);
  EXPECT_NE(a.fold_of, c.fold_of);
  std::vector<index> size(5, 0);
  for (index f : a.fold_of) ++size[static_cast<std::size_t>(f)];
  for (index s : size) EXPECT_TRUE(s == 20 || s == 21) << s;
  EXPECT_EQ(std::accumulate(size.begin(), size.end(), index(0)), 103);
  EXPECT_EQ(a.name, "5-fold (seed 7)");
}

TEST(CrossValidation, GroupsNumberedInIncreasingOrder) {
  const std::vector<double> g{3.5, -1, 3.5, 7, -1};
  const cv_folds f = cv_folds_groups(g);
  EXPECT_EQ(f.count, 3);
  EXPECT_EQ(f.fold_of, (std::vector<index>{1, 0, 1, 2, 0}));
  EXPECT_EQ(f.name, "leave-one-group-out (3 groups)");
}

TEST(CrossValidation, CriterionEqualsAPlainRefitPerFold) {
  const sample s = noisy_sine(300, 1);
  const cv_folds f = cv_folds_kfold(300, 5, 0);
  const cv_splits splits(s.x.cview(), s.y, f);
  regression_spec spec;
  spec.bandwidth = {0.3};
  EXPECT_NEAR(splits.criterion(spec), plain_kfold_nw(s, 0.3, f), 1e-12);
  // the same on the sorted-window route (a compact kernel) against its all-pairs reference
  spec.kernel = kernel_epanechnikov{};
  spec.bandwidth = {0.8};
  const double windows = splits.criterion(spec);
  spec.exact = true;
  EXPECT_NEAR(windows, splits.criterion(spec), 1e-12);
}

TEST(CrossValidation, NFoldsAreLeaveOneOutInClosedForm) {
  const sample s = noisy_sine(150, 2);
  std::vector<index> ids(150);
  std::iota(ids.begin(), ids.end(), index(0));
  const cv_splits splits(s.x.cview(), s.y, cv_folds_from_ids(ids, "n folds"));
  for (auto method : {regression_method::nw, regression_method::local_linear}) {
    regression_spec spec;
    spec.method = method;
    spec.bandwidth = {0.4};
    EXPECT_NEAR(splits.criterion(spec), regression_criteria(spec, s.x.cview(), s.y).loo_cv, 1e-10);
  }
  // knn: n folds hold each point out of its own neighborhood, as knn's leave-one-out does
  regression_spec knn;
  knn.method = regression_method::knn;
  knn.k = 0;
  knn.k_max = 30;
  const regression_fit loo =
      regression_fit_data(knn, s.x.cview(), s.y, bandwidth_criterion::loo_cv);
  const auto curve = splits.knn_curve(knn, 30);
  ASSERT_EQ(curve.size(), loo.curve.size());
  for (std::size_t k = 0; k < curve.size(); ++k) EXPECT_NEAR(curve[k], loo.curve[k].value, 1e-12);
}

TEST(CrossValidation, TheFitMinimizesCvK) {
  const sample s = noisy_sine(300, 3);
  regression_spec spec;
  spec.folds = std::make_shared<const cv_folds>(cv_folds_kfold(300, 4, 1));
  const regression_fit fit =
      regression_fit_data(spec, s.x.cview(), s.y, bandwidth_criterion::loo_cv);
  const cv_splits splits(s.x.cview(), s.y, *spec.folds);
  EXPECT_NEAR(fit.criterion_value, splits.criterion(fit.spec), 1e-12);
  for (const auto& p : fit.curve) EXPECT_LE(fit.criterion_value, p.value * (1 + 1e-12));
  EXPECT_NE(fit.criterion_value, fit.loo_cv);  // the LOO value is kept beside it
}

TEST(CrossValidation, UndefinedHeldOutPointsMakeItInfinite) {
  // two clusters, one per fold: a compact kernel narrower than the gap reaches nothing
  sample s{matrix<double>(6, 1), {1, 2, 3, 4, 5, 6}};
  for (index i = 0; i < 6; ++i) s.x(i, 0) = i < 3 ? double(i) : 100.0 + double(i);
  const cv_splits splits(s.x.cview(), s.y,
                         cv_folds_from_ids(std::vector<index>{0, 0, 0, 1, 1, 1}, ""));
  regression_spec spec;
  spec.kernel = kernel_epanechnikov{};
  spec.bandwidth = {5};
  EXPECT_TRUE(std::isinf(splits.criterion(spec)));
}

TEST(CrossValidation, RefusesBadFolds) {
  const sample s = noisy_sine(10, 4);
  EXPECT_THROW(cv_folds_kfold(10, 1, 0), std::invalid_argument);
  EXPECT_THROW(cv_folds_kfold(10, 11, 0), std::invalid_argument);
  EXPECT_THROW(cv_folds_groups(std::vector<double>{1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(cv_folds_groups(std::vector<double>{1, NAN}), std::invalid_argument);
  EXPECT_THROW(cv_folds_from_ids(std::vector<index>{0, -1}, ""), std::invalid_argument);
  EXPECT_THROW(cv_splits(s.x.cview(), s.y, cv_folds_kfold(9, 3, 0)), std::invalid_argument);
  regression_spec spec;
  spec.folds = std::make_shared<const cv_folds>(cv_folds_kfold(10, 2, 0));
  EXPECT_THROW(regression_fit_data(spec, s.x.cview(), s.y, bandwidth_criterion::gcv),
               std::invalid_argument);
}

}  // namespace
}  // namespace kf
