// The radius route (multivariate compact kernels through a k-d tree) against the all-pairs
// route: d = 2 and 3, every compact kernel, Nadaraya–Watson and local linear, one bandwidth and
// one per column, at the training points (ties among them) and at queries inside, between and
// far outside the data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/smooth.hpp"
#include "regression/smoother_routes.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

void expect_same(const regression_eval& a, const regression_eval& b, bool self,
                 const std::string& what) {
  ASSERT_EQ(a.fit.size(), b.fit.size());
  EXPECT_EQ(a.undefined, b.undefined) << what;
  EXPECT_EQ(a.ll_fallback, b.ll_fallback) << what;
  for (std::size_t i = 0; i < a.fit.size(); ++i) {
    ASSERT_EQ(a.defined[i], b.defined[i]) << what << " at " << i;
    if (!a.defined[i]) continue;
    // An extrapolating or saturated local plane (Σℓ² ≳ 1: about as many points as parameters)
    // keeps fewer digits in the all-pairs route's sums, centered on the data's mean.
    const double cond = b.sum_l2[i] > 0.5 ? 1e3 * std::max(1.0, b.sum_l2[i]) : 1.0;
    EXPECT_NEAR(a.fit[i], b.fit[i], 1e-8 * cond * (1 + std::abs(b.fit[i]))) << what << " " << i;
    EXPECT_NEAR(a.sum_l2[i], b.sum_l2[i], 1e-7 * cond * b.sum_l2[i]) << what << " " << i;
    if (self) {
      EXPECT_NEAR(a.self_weight[i], b.self_weight[i], 1e-8 * cond) << what << " " << i;
    }
  }
}

TEST(Radius, MatchesAllPairsForEveryCompactKernel) {
  for (index d : {2, 3}) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(d));
    std::uniform_real_distribution<double> u(0, 1);
    const index n = 401;
    matrix<double> x(n, d);
    std::vector<double> y(static_cast<std::size_t>(n));
    for (index i = 0; i < n; ++i) {
      for (index c = 0; c < d; ++c) x(i, c) = i % 9 == 0 ? 0.5 : u(rng) * double(c + 1);
      y[static_cast<std::size_t>(i)] = std::sin(3 * x(i, 0)) + x(i, d - 1) + 0.1 * u(rng);
    }
    const auto q = test::random_matrix<double>(97, d, 11, -0.4, 2.5);
    for (const any_kernel& k : {any_kernel(kernel_boxcar{}), any_kernel(kernel_epanechnikov{}),
                                any_kernel(kernel_biweight{}), any_kernel(kernel_triweight{}),
                                any_kernel(kernel_tricube{}), any_kernel(kernel_cosine{})})
      for (auto method : {regression_method::nw, regression_method::local_linear})
        for (const std::vector<double>& h :
             {std::vector<double>{0.237}, std::vector<double>(std::size_t(d), 0.61),
              std::vector<double>{0.3, 0.9, 0.5}}) {
          if (h.size() > 1 && static_cast<index>(h.size()) != d) continue;
          regression_spec spec;
          spec.method = method;
          spec.kernel = k;
          spec.bandwidth = h;
          const std::string what = std::string(kernel_name(k)) + " d=" + std::to_string(d) +
                                   (method == regression_method::nw ? " nw" : " ll") +
                                   " h0=" + std::to_string(h[0]);
          expect_same(detail::radius_evaluate(spec, x.cview(), y, x.cview(), true),
                      detail::evaluate_all_pairs(spec, x.cview(), y, x.cview(), true), true,
                      what + " (training)");
          expect_same(detail::radius_evaluate(spec, x.cview(), y, q.cview(), false),
                      detail::evaluate_all_pairs(spec, x.cview(), y, q.cview(), false), false,
                      what + " (queries)");
        }
  }
}

TEST(Radius, KernelSumsMatchThePrimitiveWithAndWithoutTheOwnPoint) {
  // Σ_j K over each support (the density sums of kde) against the primitive's lse over all
  // pairs, for every compact kernel, 2 and 3 columns, per-column bandwidths, duplicates and
  // queries outside the data (sum 0).
  for (index d : {2, 3}) {
    auto x = test::random_matrix<double>(303, d, 5, 0, 3);
    for (index c = 0; c < d; ++c) x(7, c) = x(8, c);  // a duplicated point
    auto q = test::random_matrix<double>(41, d, 6, -1, 4);
    std::vector<double> h(static_cast<std::size_t>(d));
    for (index c = 0; c < d; ++c) h[static_cast<std::size_t>(c)] = 0.3 + 0.2 * double(c);
    for (const any_kernel& k : {any_kernel(kernel_boxcar{}), any_kernel(kernel_epanechnikov{}),
                                any_kernel(kernel_biweight{}), any_kernel(kernel_triweight{}),
                                any_kernel(kernel_tricube{}), any_kernel(kernel_cosine{})})
      for (const bool loo : {false, true}) {
        const auto& qq = loo ? x : q;
        const auto s = detail::radius_kernel_sums(k, x.cview(), h, qq.cview(), loo);
        any_kernel unit = k;
        kernel_set_param(unit, 1.0);
        smooth_options opt;
        opt.bandwidth_per_dim = h;
        matrix<double> v(x.rows(), 0), out(qq.rows(), 0);
        std::vector<double> lse(static_cast<std::size_t>(qq.rows()));
        const mask m = loo ? (mask::causal(-1) | mask::window(-1, x.rows())) : mask::none();
        smooth_forward<double>(out.view(), lse, qq.cview(), x.cview(), v.cview(), unit, m, opt);
        for (std::size_t i = 0; i < s.size(); ++i) {
          const double ref = std::exp(lse[i]);  // 0 where no key is in the support
          EXPECT_NEAR(s[i], ref, 1e-12 * (1 + ref))
              << kernel_name(k) << " d=" << d << " loo=" << loo << " row " << i;
        }
      }
  }
}

// A grid of 100000 points spanning 10 per column: h = 0.1 covers 2% of each column.
matrix<double> spread(index d) {
  matrix<double> x(100000, d);
  for (index i = 0; i < x.rows(); ++i)
    for (index c = 0; c < d; ++c) x(i, c) = double((i * (c + 7)) % 1001) * 0.01;
  return x;
}

TEST(Radius, IsTheRouteForCompactKernelsInSeveralColumns) {
  regression_spec spec;
  spec.kernel = kernel_epanechnikov{};
  spec.method = regression_method::local_linear;
  spec.bandwidth = {0.1};
  const matrix<double> x2 = spread(2), x3 = spread(3);
  const std::string tree = "exact (k-d tree over each support)";
  EXPECT_EQ(choose_regression_route(spec, x3.cview()).name(), tree);
  spec.method = regression_method::nw;
  EXPECT_EQ(choose_regression_route(spec, x2.cview()).name(),
            "binned 2-D (bilinear binning + FFT)");
  spec.exact = true;
  EXPECT_EQ(choose_regression_route(spec, x2.cview()).name(), tree);
  spec.bandwidth = {2.0};  // 40% of each column: all pairs
  const route wide = choose_regression_route(spec, x2.cview());
  EXPECT_EQ(wide.name(), "exact (all pairs)");
  EXPECT_NE(wide.why.find("> 5%"), std::string::npos) << wide.why;
  spec.kernel = kernel_gaussian{};
  EXPECT_EQ(choose_regression_route(spec, x3.cview()).name(), "exact (all pairs)");
}

}  // namespace
}  // namespace kf
