// The sorted-window route (exact 1-D sums for compact kernels from running polynomial sums)
// against the all-pairs route: every compact kernel, Nadaraya–Watson and local linear, at the
// training points and at other points (odd sizes, n ≠ m, duplicates, a single point, queries
// outside the data and in gaps wider than the support).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "kernelformer/regression/smoother.hpp"
#include "regression/smoother_routes.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

const std::vector<any_kernel> kCompact = {kernel_boxcar{},   kernel_epanechnikov{},
                                          kernel_biweight{}, kernel_triweight{},
                                          kernel_tricube{},  kernel_cosine{}};

TEST(SortedWindow, PolynomialsReproduceTheKernels) {
  for (const any_kernel& k0 : kCompact) {
    any_kernel k = k0;
    kernel_set_param(k, 1.0);
    const auto c = detail::compact_polynomial(k);
    for (double u = 0; u < 0.999; u += 0.037) {
      double v = 0, p = 1;
      for (double cm : c) v += cm * p, p *= u;
      const double ref =
          std::visit([&](const auto& kk) { return kk.template weight<double>(u * u); }, k);
      EXPECT_NEAR(v, ref, 1e-15) << kernel_name(k) << " u=" << u;
    }
  }
}

struct data {
  matrix<double> x;
  std::vector<double> y;
};

// Clustered x with ties and a gap wider than the bandwidths used below.
data make(index n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> e(0, 0.3);
  data d{matrix<double>(n, 1), std::vector<double>(static_cast<std::size_t>(n))};
  for (index i = 0; i < n; ++i) {
    double v = i % 3 == 0 ? 2 + 0.5 * u(rng) : 5 * u(rng);
    if (v > 3 && v < 3.8) v += 1.0;               // a gap (3, 4.8) without data
    if (i % 7 == 0) v = std::round(v * 10) / 10;  // ties
    d.x(i, 0) = v;
    d.y[std::size_t(i)] = std::sin(2 * v) + e(rng);
  }
  return d;
}

void expect_same(const regression_eval& a, const regression_eval& b, bool self,
                 const std::string& what) {
  ASSERT_EQ(a.fit.size(), b.fit.size());
  EXPECT_EQ(a.undefined, b.undefined) << what;
  EXPECT_EQ(a.ll_fallback, b.ll_fallback) << what;
  for (std::size_t i = 0; i < a.fit.size(); ++i) {
    ASSERT_EQ(a.defined[i], b.defined[i]) << what << " at " << i;
    if (!a.defined[i]) continue;
    // Σℓ² ≫ 1 marks an ill-conditioned local line (extrapolation), whose digits are fewer.
    const double cond = std::max(1.0, b.sum_l2[i]);
    EXPECT_NEAR(a.fit[i], b.fit[i], 1e-9 * cond * (1 + std::abs(b.fit[i]))) << what << " at " << i;
    EXPECT_NEAR(a.sum_l2[i], b.sum_l2[i], 1e-9 * cond * b.sum_l2[i] + 1e-12) << what << " at " << i;
    if (self) {
      EXPECT_NEAR(a.self_weight[i], b.self_weight[i], 1e-9) << what << " at " << i;
    }
  }
}

// An independent oracle in long double, with the moments taken about each query (the
// all-pairs route centers x on the training mean, which costs it digits where the local line
// extrapolates with a small bandwidth): the same fit, Σℓ² and undefined/fallback rules.
regression_eval oracle(const regression_spec& spec, const matrix<double>& x,
                       const std::vector<double>& y, const matrix<double>& q) {
  any_kernel unit = spec.kernel;
  kernel_set_param(unit, 1.0);
  const long double h = spec.bandwidth[0];
  const bool ll = spec.method == regression_method::local_linear;
  regression_eval r;
  for (index i = 0; i < q.rows(); ++i) {
    long double s[3] = {0, 0, 0}, t[2] = {0, 0}, qq[3] = {0, 0, 0};
    for (index j = 0; j < x.rows(); ++j) {
      const long double d = (static_cast<long double>(x(j, 0)) - q(i, 0)) / h;
      if (std::abs(d) > 1) continue;
      const long double u = std::abs(d);
      long double k = 0, p = 1;
      for (double c : detail::compact_polynomial(unit)) k += c * p, p *= u;
      if (kernel_name(unit) == "cosine") k = std::cos(std::numbers::pi_v<long double> / 2 * u);
      p = 1;
      for (int a = 0; a < 3; ++a, p *= d) {
        s[a] += k * p, qq[a] += k * k * p;
        if (a < 2) t[a] += k * p * y[std::size_t(j)];
      }
    }
    const bool defined = s[0] > 0;
    long double fit = defined ? t[0] / s[0] : 0, l2 = defined ? qq[0] / (s[0] * s[0]) : 0;
    const long double det = s[0] * s[2] - s[1] * s[1];
    if (defined && ll && s[2] > 0 && det > 1e-9L * s[0] * s[0]) {
      fit = (s[2] * t[0] - s[1] * t[1]) / det;
      l2 = (s[2] * s[2] * qq[0] - 2 * s[1] * s[2] * qq[1] + s[1] * s[1] * qq[2]) / (det * det);
    } else if (defined && ll) {
      ++r.ll_fallback;
    }
    r.fit.push_back(double(fit));
    r.sum_l2.push_back(double(l2));
    r.defined.push_back(defined ? 1 : 0);
    r.undefined += defined ? 0 : 1;
  }
  return r;
}

TEST(SortedWindow, MatchesAllPairsAndALongDoubleOracle) {
  const data d = make(1001, 7);
  const auto q = test::random_matrix<double>(333, 1, 3, -0.7, 5.9);
  for (const any_kernel& k : kCompact)
    for (auto method : {regression_method::nw, regression_method::local_linear})
      for (double h : {0.0537, 0.3137, 2.0137, 50.0}) {  // no tie at exactly h (boxcar)
        regression_spec spec;
        spec.method = method;
        spec.kernel = k;
        spec.bandwidth = {h};
        const std::string what = std::string(kernel_name(k)) +
                                 (method == regression_method::nw ? " nw" : " ll") +
                                 " h=" + std::to_string(h);
        expect_same(detail::sorted_window_evaluate(spec, d.x.cview(), d.y, d.x.cview(), true),
                    detail::evaluate_all_pairs(spec, d.x.cview(), d.y, d.x.cview(), true), true,
                    what + " (training)");
        expect_same(detail::sorted_window_evaluate(spec, d.x.cview(), d.y, q.cview(), false),
                    oracle(spec, d.x, d.y, q), false, what + " (queries)");
      }
}

TEST(SortedWindow, SinglePointDuplicatesAndFarQueries) {
  matrix<double> x1(1, 1);
  x1(0, 0) = 0.25;
  const std::vector<double> y1{3.0};
  matrix<double> q(3, 1);
  q(0, 0) = 0.2, q(1, 0) = 0.25, q(2, 0) = 9;
  matrix<double> xd(5, 1);
  for (index i = 0; i < 5; ++i) xd(i, 0) = 1.0;  // all tied: local linear falls back to NW
  const std::vector<double> yd{1, 2, 3, 4, 5};
  for (const any_kernel& k : kCompact)
    for (auto method : {regression_method::nw, regression_method::local_linear}) {
      regression_spec spec;
      spec.method = method;
      spec.kernel = k;
      spec.bandwidth = {0.1};
      expect_same(detail::sorted_window_evaluate(spec, x1.cview(), y1, q.cview(), false),
                  detail::evaluate_all_pairs(spec, x1.cview(), y1, q.cview(), false), false,
                  "single point");
      const auto e = detail::sorted_window_evaluate(spec, xd.cview(), yd, xd.cview(), true);
      expect_same(e, detail::evaluate_all_pairs(spec, xd.cview(), yd, xd.cview(), true), true,
                  "ties");
      EXPECT_NEAR(e.fit[0], 3.0, 1e-12);
    }
}

TEST(SortedWindow, IsTheExactRouteForCompactKernelsInOneColumn) {
  regression_spec spec;
  spec.kernel = kernel_tricube{};
  spec.exact = true;
  const matrix<double> x(100000, 1);
  EXPECT_EQ(choose_regression_route(spec, x.cview()).name(),
            "exact (sorted windows, running polynomial sums)");
  spec.kernel = kernel_gaussian{};
  EXPECT_EQ(choose_regression_route(spec, x.cview()).name(), "exact (all pairs)");
  // Two columns: the k-d tree route (test_radius.cpp) while the support is a small part of the
  // data's box (here 0.02² of it), all pairs beyond.
  spec.kernel = kernel_tricube{};
  spec.bandwidth = {0.1};
  matrix<double> x2(100000, 2);
  for (index i = 0; i < x2.rows(); ++i)
    x2(i, 0) = double(i % 1000) * 0.01, x2(i, 1) = double(i / 1000) * 0.1;
  EXPECT_EQ(choose_regression_route(spec, x2.cview()).name(), "exact (k-d tree over each support)");
  spec.bandwidth = {3.0};
  EXPECT_EQ(choose_regression_route(spec, x2.cview()).name(), "exact (all pairs)");
}

}  // namespace
}  // namespace kf
