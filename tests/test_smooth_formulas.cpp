// The primitive against each kernel's documented formula, written out here (kernels.hpp's doc
// strings): weights K(q_i, k_j) computed in this file, normalized, and the weighted means and
// log-sums compared with smooth_forward (the fast routes) and the reference loops, under a
// causal mask. The other suites tie the fast routes to the reference loops and check identities
// that hold for any kernel; this one is what catches a kernel whose formula itself is wrong
// (a factor of 2 in a bandwidth, a wrong exponent), which a finite-difference check of its
// derivatives would not.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "kernelformer/feature_kernels.hpp"
#include "kernelformer/smooth.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

struct formula_case {
  std::string label;
  kernel_spec spec;
  // K from the query and key rows (d columns)
  std::function<double(const double*, const double*, index)> k;
};

double dist(const double* q, const double* k, index d) {
  double s = 0;
  for (index c = 0; c < d; ++c) s += (q[c] - k[c]) * (q[c] - k[c]);
  return std::sqrt(s);
}
double dot(const double* q, const double* k, index d) {
  double s = 0;
  for (index c = 0; c < d; ++c) s += q[c] * k[c];
  return s;
}

std::vector<formula_case> cases() {
  using std::exp;
  using std::pow;
  const double pi = std::numbers::pi;
  auto radial = [](std::function<double(double)> f) {
    return [f](const double* q, const double* k, index d) { return f(dist(q, k, d)); };
  };
  return {
      {"gaussian", kernel_gaussian{0.7}, radial([](double r) { return exp(-r * r / (2 * 0.49)); })},
      {"laplacian", kernel_laplacian{0.8}, radial([](double r) { return exp(-r / 0.8); })},
      {"cauchy", kernel_cauchy{0.5}, radial([](double r) { return 1 / (1 + r * r / 0.25); })},
      {"rational_quadratic", kernel_rational_quadratic{0.6, 2.0},
       radial([](double r) { return pow(1 + r * r / (2 * 2.0 * 0.36), -2.0); })},
      {"periodic", kernel_periodic{0.9, 1.5}, radial([pi](double r) {
         const double s = std::sin(pi * r / 1.5);
         return exp(-2 * s * s / 0.81);
       })},
      {"locally_periodic", kernel_locally_periodic{0.9, 1.5}, radial([pi](double r) {
         const double s = std::sin(pi * r / 1.5);
         return exp(-2 * s * s / 0.81) * exp(-r * r / (2 * 0.81));
       })},
      {"boxcar", kernel_boxcar{1.1}, radial([](double r) { return r <= 1.1 ? 1.0 : 0.0; })},
      {"epanechnikov", kernel_epanechnikov{1.1},
       radial([](double r) { return r <= 1.1 ? 1 - (r / 1.1) * (r / 1.1) : 0.0; })},
      {"biweight", kernel_biweight{1.1},
       radial([](double r) { return r <= 1.1 ? pow(1 - (r / 1.1) * (r / 1.1), 2) : 0.0; })},
      {"triweight", kernel_triweight{1.1},
       radial([](double r) { return r <= 1.1 ? pow(1 - (r / 1.1) * (r / 1.1), 3) : 0.0; })},
      {"tricube", kernel_tricube{1.1},
       radial([](double r) { return r <= 1.1 ? pow(1 - pow(r / 1.1, 3), 3) : 0.0; })},
      {"cosine", kernel_cosine{1.1},
       radial([pi](double r) { return r <= 1.1 ? std::cos(pi * r / 1.1 / 2) : 0.0; })},
      {"inverse_distance", kernel_inverse_distance{}, radial([](double r) { return 1 / r; })},
      {"uniform", kernel_uniform{}, [](const double*, const double*, index) { return 1.0; }},
      {"exp_dot (T = √d)", kernel_exp_dot{},
       [](const double* q, const double* k, index d) {
         return exp(dot(q, k, d) / std::sqrt(double(d)));
       }},
      {"exp_dot (T = 0.3)", kernel_exp_dot{0.3},
       [](const double* q, const double* k, index d) { return exp(dot(q, k, d) / 0.3); }},
      // A feature map (the features route): φ(x) = elu(x) + 1 per column, K = φ(q)·φ(k).
      {"elu1", kernel_elu1{},
       [](const double* q, const double* k, index d) {
         const auto phi = [](double x) { return x > 0 ? x + 1 : exp(x); };
         double s = 0;
         for (index c = 0; c < d; ++c) s += phi(q[c]) * phi(k[c]);
         return s;
       }},
  };
}

void check_case(const formula_case& c, index d);

// d = 3, and d = 12: distance kernels above 8 columns take ‖q‖² + ‖k‖² − 2q·k on centered
// copies (docs/numerics.md), here against distances summed directly.
TEST(SmoothFormula, EveryKernelAgainstItsDocumentedFormula) {
  for (const index d : {3, 12})
    for (const auto& c : cases()) {
      SCOPED_TRACE(c.label + " d=" + std::to_string(d));
      check_case(c, d);
    }
}

void check_case(const formula_case& c, index d) {
  const index n = 37, m = 53, dv = 2;  // odd sizes: the tiles' remainders run
  // Points in [−1, 1]^d scaled so the distances stay within the kernels' reach (~1–2) in d = 12.
  const double scale = d > 3 ? 0.45 : 1.0;
  const auto q = test::random_matrix<double>(n, d, 71, -scale, scale);
  const auto k = test::random_matrix<double>(m, d, 72, -scale, scale);
  const auto v = test::random_matrix<double>(m, dv, 73, -2, 2);
  const mask msk = mask::causal(5);  // key j ≤ i + 5
  {
    matrix<double> out(n, dv), out_ref(n, dv);
    std::vector<double> lse(static_cast<std::size_t>(n)), lse_ref(lse.size());
    smooth_forward<double>(out.view(), lse, q.cview(), k.cview(), v.cview(), c.spec, msk);
    reference::smooth_forward<double>(out_ref.view(), lse_ref, q.cview(), k.cview(), v.cview(),
                                      c.spec, msk);
    for (index i = 0; i < n; ++i) {
      double s = 0, sv[dv] = {0, 0};
      for (index j = 0; j <= std::min(i + 5, m - 1); ++j) {
        const double w = c.k(&q(i, 0), &k(j, 0), d);
        s += w;
        for (index a = 0; a < dv; ++a) sv[a] += w * v(j, a);
      }
      const auto iu = static_cast<std::size_t>(i);
      if (s == 0) {  // the empty-row policy: out 0, lse −inf
        EXPECT_EQ(lse[iu], -std::numeric_limits<double>::infinity()) << i;
        EXPECT_EQ(lse_ref[iu], -std::numeric_limits<double>::infinity()) << i;
        for (index a = 0; a < dv; ++a) EXPECT_EQ(out(i, a), 0.0) << i;
        continue;
      }
      EXPECT_NEAR(lse[iu], std::log(s), 1e-9 * (1 + std::abs(std::log(s)))) << i;
      EXPECT_NEAR(lse_ref[iu], std::log(s), 1e-9 * (1 + std::abs(std::log(s)))) << i;
      for (index a = 0; a < dv; ++a) {
        EXPECT_NEAR(out(i, a), sv[a] / s, 1e-9) << i << "," << a;
        EXPECT_NEAR(out_ref(i, a), sv[a] / s, 1e-9) << i << "," << a;
      }
    }
  }
}

}  // namespace
}  // namespace kf
