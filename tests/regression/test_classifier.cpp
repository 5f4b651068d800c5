// Kernel classification (regression/classifier.hpp) against brute-force loops in double: NW
// leave-one-out and new-point probabilities (gaussian per-column bandwidths, epanechnikov with
// its empty rows), KNN with the k nearest other points, the k and bandwidth searches, errors.
#include "kernelformer/regression/classifier.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "kernelformer/io/npy.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

struct labelled {
  matrix<double> x;
  std::vector<index> y;
};

// Three overlapping Gaussian clouds in d columns (class c centred at c·0.8 on every axis).
labelled clouds(index n, index d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> e(0.0, 0.6);
  labelled s{matrix<double>(n, d), {}};
  for (index i = 0; i < n; ++i) {
    const index c = i % 3;
    s.y.push_back(c);
    for (index j = 0; j < d; ++j) s.x(i, j) = 0.8 * double(c) + e(rng);
  }
  return s;
}

// Brute force: p_c(q) = Σ_j K(q, x_j)[y_j = c] / Σ_j K, skipping j = skip; K from a distance
// function of the scaled squared distance. An all-zero row gets the class frequencies.
template <class K>
matrix<double> brute_nw(const labelled& s, const_matrix_view<double> q, bool loo,
                        const std::vector<double>& h, K kern) {
  const index n = s.x.rows(), C = 3;
  matrix<double> p(q.rows, C);
  for (index i = 0; i < q.rows; ++i) {
    double total = 0;
    for (index j = 0; j < n; ++j) {
      if (loo && j == i) continue;
      double u2 = 0;
      for (index c = 0; c < s.x.cols(); ++c) {
        const double t = (q(i, c) - s.x(j, c)) / h[static_cast<std::size_t>(c)];
        u2 += t * t;
      }
      const double w = kern(u2);
      p(i, s.y[static_cast<std::size_t>(j)]) += w;
      total += w;
    }
    for (index c = 0; c < C; ++c) {
      const auto freq = double(std::count(s.y.begin(), s.y.end(), c)) / double(n);
      p(i, c) = total > 0 ? p(i, c) / total : freq;
    }
  }
  return p;
}

// Brute force KNN: the k nearest (distance, then index) points other than `skip`.
matrix<double> brute_knn(const labelled& s, const_matrix_view<double> q, bool loo, index k) {
  const index n = s.x.rows();
  matrix<double> p(q.rows, 3);
  for (index i = 0; i < q.rows; ++i) {
    std::vector<std::pair<double, index>> by;
    for (index j = 0; j < n; ++j) {
      if (loo && j == i) continue;
      double r2 = 0;
      for (index c = 0; c < s.x.cols(); ++c) r2 += (q(i, c) - s.x(j, c)) * (q(i, c) - s.x(j, c));
      by.push_back({r2, j});
    }
    std::sort(by.begin(), by.end());
    for (index t = 0; t < k; ++t)
      p(i, s.y[static_cast<std::size_t>(by[static_cast<std::size_t>(t)].second)]) +=
          1.0 / double(k);
  }
  return p;
}

TEST(Classifier, NwGaussianMatchesBruteForceLooAndNewPoints) {
  const labelled s = clouds(97, 2, 1);
  classify_spec spec;
  spec.bandwidth = {0.4, 0.7};
  const auto gauss = [](double u2) { return std::exp(-0.5 * u2); };
  const matrix<double> loo = classify_probabilities(spec, s.x.cview(), s.y, 3, s.x.cview(), true);
  EXPECT_TRUE(test::all_close(
      loo.cview(), brute_nw(s, s.x.cview(), true, spec.bandwidth, gauss).cview(), 1e-10, 1e-12));
  const matrix<double> q = test::random_matrix<double>(31, 2, 7, -1, 3);
  const matrix<double> at = classify_probabilities(spec, s.x.cview(), s.y, 3, q.cview(), false);
  EXPECT_TRUE(test::all_close(
      at.cview(), brute_nw(s, q.cview(), false, spec.bandwidth, gauss).cview(), 1e-10, 1e-12));
  for (index i = 0; i < at.rows(); ++i)
    EXPECT_NEAR(at(i, 0) + at(i, 1) + at(i, 2), 1.0, 1e-12) << i;
}

TEST(Classifier, NwCompactKernelEmptyRowsTakeClassFrequencies) {
  labelled s = clouds(40, 1, 2);
  s.x(5, 0) = 50.0;  // alone: no other point within reach
  classify_spec spec;
  spec.kernel = kernel_epanechnikov{};
  spec.bandwidth = {0.3};
  const auto epa = [](double u2) { return std::max(0.0, 1.0 - u2); };
  index undefined = -1;
  const matrix<double> loo =
      classify_probabilities(spec, s.x.cview(), s.y, 3, s.x.cview(), true, &undefined);
  const matrix<double> ref = brute_nw(s, s.x.cview(), true, {0.3}, epa);
  EXPECT_TRUE(test::all_close(loo.cview(), ref.cview(), 1e-10, 1e-12));
  EXPECT_GE(undefined, 1);
  EXPECT_NEAR(loo(5, 0), 14.0 / 40.0, 1e-15);  // 40 rows: classes 14, 13, 13
}

TEST(Classifier, KnnMatchesBruteForceAndTheKSearchTakesTheBestK) {
  const labelled s = clouds(61, 3, 3);
  classify_spec spec;
  spec.method = classify_method::knn;
  spec.k = 5;
  const matrix<double> loo = classify_probabilities(spec, s.x.cview(), s.y, 3, s.x.cview(), true);
  EXPECT_TRUE(test::all_close(loo.cview(), brute_knn(s, s.x.cview(), true, 5).cview(), 0, 1e-12));
  // k by LOO log-loss over 1..12: the brute-force minimum.
  spec.k = 0;
  spec.k_max = 12;
  const classify_fit fit = classify_fit_data(spec, s.x.cview(), s.y, 3);
  double best = INFINITY;
  index best_k = 0;
  for (index k = 1; k <= 12; ++k) {
    const matrix<double> p = brute_knn(s, s.x.cview(), true, k);
    const double v = classify_score(p.cview(), s.y).log_loss;
    EXPECT_NEAR(fit.curve[static_cast<std::size_t>(k - 1)].value, v, 1e-12) << k;
    if (v < best) best = v, best_k = k;
  }
  EXPECT_EQ(fit.spec.k, best_k);
  EXPECT_NEAR(fit.loo.log_loss, best, 1e-12);
  index total = 0, right = 0;
  for (index t = 0; t < 3; ++t)
    for (index p = 0; p < 3; ++p) {
      total += fit.confusion[static_cast<std::size_t>(t)][static_cast<std::size_t>(p)];
      if (t == p) right += fit.confusion[static_cast<std::size_t>(t)][static_cast<std::size_t>(p)];
    }
  EXPECT_EQ(total, 61);
  EXPECT_NEAR(double(right) / 61.0, fit.loo.accuracy, 1e-15);
}

TEST(Classifier, BandwidthSearchFindsALocalMinimumOfTheLooLogLoss) {
  const labelled s = clouds(90, 2, 4);
  for (const auto crit : {classify_criterion::log_loss, classify_criterion::accuracy}) {
    classify_spec spec;
    spec.criterion = crit;
    const classify_fit fit = classify_fit_data(spec, s.x.cview(), s.y, 3);
    ASSERT_EQ(fit.spec.bandwidth.size(), 2u);
    EXPECT_FALSE(fit.curve.empty());
    EXPECT_FALSE(fit.at_search_boundary);
    if (crit != classify_criterion::log_loss) continue;
    const auto score = [&](double f) {
      classify_spec t = fit.spec;
      for (double& h : t.bandwidth) h *= f;
      const matrix<double> p = classify_probabilities(t, s.x.cview(), s.y, 3, s.x.cview(), true);
      return classify_score(p.cview(), s.y).log_loss;
    };
    EXPECT_NEAR(score(1.0), fit.loo.log_loss, 1e-12);
    EXPECT_LE(fit.loo.log_loss, score(0.7) + 1e-9);
    EXPECT_LE(fit.loo.log_loss, score(1.4) + 1e-9);
    EXPECT_GT(fit.loo.accuracy, 0.5);  // overlapping clouds, far better than 1/3
  }
}

TEST(Classifier, ScoresClipAndBreakTiesTowardTheSmallerClass) {
  matrix<double> p(2, 2, {0.5, 0.5, 1.0, 0.0});
  const classify_scores s = classify_score(p.cview(), {1, 1});
  EXPECT_NEAR(s.log_loss, (std::log(2.0) - std::log(1e-15)) / 2, 1e-12);
  EXPECT_EQ(s.accuracy, 0.0);  // the tie predicts class 0
}

TEST(Classifier, ErrorsNameTheProblem) {
  const labelled s = clouds(20, 1, 5);
  const auto msg = [&](classify_spec spec, std::vector<index> y, index C) {
    try {
      classify_fit_data(spec, s.x.cview(), y, C);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg({}, std::vector<index>(20, 1), 2).find("at least 2"), std::string::npos);
  std::vector<index> bad = s.y;
  bad[3] = 7;
  EXPECT_NE(msg({}, bad, 3).find("row 3"), std::string::npos);
  classify_spec knn;
  knn.method = classify_method::knn;
  knn.k = 20;
  EXPECT_NE(msg(knn, s.y, 3).find("1..19"), std::string::npos);
  classify_spec dot;
  dot.kernel = kernel_exp_dot{};
  dot.bandwidth = {1.0};
  EXPECT_NE(msg(dot, s.y, 3).find("distance kernel"), std::string::npos);
}

matrix<double> fixture(const std::string& name) {
  return io::npy_read(std::string(KF_FIXTURES_DIR).append("/clf_").append(name).append(".npy"))
      .to_matrix<double>();
}

// scikit-learn's KNeighborsClassifier(n_neighbors=7): probabilities at new points (uniform and
// 'distance' weights) and leave-one-out (python/make_fixture_classifier.py).
TEST(Classifier, KnnMatchesScikitLearn) {
  const matrix<double> x = fixture("x"), yv = fixture("y"), q = fixture("q");
  std::vector<index> y;
  for (index i = 0; i < yv.size(); ++i) y.push_back(static_cast<index>(yv.data()[i]));
  classify_spec spec;
  spec.method = classify_method::knn;
  spec.k = 7;
  const auto at = classify_probabilities(spec, x.cview(), y, 3, q.cview(), false);
  EXPECT_TRUE(test::all_close(at.cview(), fixture("knn7_q").cview(), 0, 1e-12));
  const auto loo = classify_probabilities(spec, x.cview(), y, 3, x.cview(), true);
  EXPECT_TRUE(test::all_close(loo.cview(), fixture("knn7_loo").cview(), 0, 1e-12));
  spec.knn_distance_weights = true;
  const auto dist = classify_probabilities(spec, x.cview(), y, 3, q.cview(), false);
  EXPECT_TRUE(test::all_close(dist.cview(), fixture("knn7_dist_q").cview(), 1e-9, 1e-12));
}

// The neighbor route (the default) against the top-k mask over all pairs (spec.exact): the same
// probabilities, leave-one-out and at new points, uniform and 1/distance weights, in 1 to 3
// columns (continuous data: no ties in distance); the k search picks the same k on both.
TEST(Classifier, KnnNeighborRouteMatchesAllPairs) {
  for (index d : {1, 2, 3})
    for (bool distance : {false, true}) {
      SCOPED_TRACE("d=" + std::to_string(d) + (distance ? " distance" : " uniform"));
      const labelled s = clouds(203, d, 4);
      const auto q = test::random_matrix<double>(37, d, 17, -1, 3);
      classify_spec fast;
      fast.method = classify_method::knn;
      fast.k = 6;
      fast.knn_distance_weights = distance;
      classify_spec exact = fast;
      exact.exact = true;
      for (bool loo : {true, false}) {
        const auto xq = loo ? s.x.cview() : q.cview();
        const auto a = classify_probabilities(fast, s.x.cview(), s.y, 3, xq, loo);
        const auto b = classify_probabilities(exact, s.x.cview(), s.y, 3, xq, loo);
        EXPECT_TRUE(test::all_close(a.cview(), b.cview(), 0, 1e-12)) << (loo ? "loo" : "new");
      }
      fast.k = exact.k = 0;
      fast.k_max = exact.k_max = 15;
      const auto fa = classify_fit_data(fast, s.x.cview(), s.y, 3);
      const auto fb = classify_fit_data(exact, s.x.cview(), s.y, 3);
      EXPECT_EQ(fa.spec.k, fb.spec.k);
      ASSERT_EQ(fa.curve.size(), fb.curve.size());
      for (std::size_t i = 0; i < fa.curve.size(); ++i)
        EXPECT_NEAR(fa.curve[i].value, fb.curve[i].value, 1e-12) << "k=" << i + 1;
    }
}

}  // namespace
}  // namespace kf
