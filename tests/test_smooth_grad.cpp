// Finite-difference gradient checks in double for the smoothing primitive: every kernel, every
// input (q, k, v) and the kernel parameter (bandwidth or temperature), per-dimension bandwidths
// and both factors of a product kernel. Loss = Σ r ⊙ out with a fixed random r; central
// differences with ε = 1e-6. Points within a few ε of a kink (a compact kernel's support edge,
// q = k for the laplacian, a zero polynomial base) are avoided by construction.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "kernelformer/smooth.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

using test::random_matrix;

constexpr double kEps = 1e-6;

struct setup {
  matrix<double> q, k, v, r;
  kernel_spec kern;
  mask msk;
  smooth_options opt;
};

double loss(const setup& s) {
  matrix<double> out(s.q.rows(), s.v.cols());
  reference::smooth_forward<double>(out.view(), {}, s.q.cview(), s.k.cview(), s.v.cview(), s.kern,
                                    s.msk, s.opt);
  double l = 0;
  for (index i = 0; i < out.size(); ++i) l += out.data()[i] * s.r.data()[i];
  return l;
}

// Central difference of the loss w.r.t. one scalar reached through `at`.
double fd(setup s, const std::function<double&(setup&)>& at) {
  const double x0 = at(s);
  at(s) = x0 + kEps;
  const double lp = loss(s);
  at(s) = x0 - kEps;
  const double lm = loss(s);
  return (lp - lm) / (2 * kEps);
}

void expect_grad(double analytic, double numeric, const std::string& what) {
  EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1.0, std::abs(numeric))) << what;
}

// True when some pair sits within `tol` of a compact support edge (s = h²) or at q = k.
bool near_kink(const setup& s) {
  for (index i = 0; i < s.q.rows(); ++i)
    for (index j = 0; j < s.k.rows(); ++j) {
      double r2 = 0;
      for (index c = 0; c < s.q.cols(); ++c) {
        const double t =
            (s.q(i, c) - s.k(j, c)) / (s.opt.bandwidth_per_dim.empty()
                                           ? 1.0
                                           : s.opt.bandwidth_per_dim[static_cast<std::size_t>(c)]);
        r2 += t * t;
      }
      if (r2 < 1e-4) return true;
      if (kernel_compact(s.kern.first)) {
        const double h = kernel_param(s.kern.first);
        if (std::abs(r2 - h * h) < 1e-3) return true;
      }
    }
  return false;
}

void check_all_grads(setup s, const std::string& label) {
  SCOPED_TRACE(label);
  ASSERT_FALSE(near_kink(s)) << "test data too close to a kink; change the seed";
  const index n = s.q.rows(), m = s.k.rows(), d = s.q.cols(), dv = s.v.cols();
  matrix<double> out(n, dv), dq(n, d), dk(m, d), dvv(m, dv);
  std::vector<double> lse(static_cast<std::size_t>(n));
  reference::smooth_forward<double>(out.view(), lse, s.q.cview(), s.k.cview(), s.v.cview(), s.kern,
                                    s.msk, s.opt);
  smooth_grads<double> g{dq.view(), dk.view(), dvv.view()};
  reference::smooth_backward<double>(g, s.r.cview(), out.cview(), lse, s.q.cview(), s.k.cview(),
                                     s.v.cview(), s.kern, s.msk, s.opt);
  for (index i = 0; i < n; ++i)
    for (index c = 0; c < d; ++c)
      expect_grad(dq(i, c), fd(s, [&](setup& x) -> double& { return x.q(i, c); }), "dq");
  for (index j = 0; j < m; ++j)
    for (index c = 0; c < d; ++c)
      expect_grad(dk(j, c), fd(s, [&](setup& x) -> double& { return x.k(j, c); }), "dk");
  for (index j = 0; j < m; ++j)
    for (index c = 0; c < dv; ++c)
      expect_grad(dvv(j, c), fd(s, [&](setup& x) -> double& { return x.v(j, c); }), "dv");
  // The kernel parameter(s).
  for (int f = 0; f < (s.kern.is_product() ? 2 : 1); ++f) {
    any_kernel& kk = f == 0 ? s.kern.first : *s.kern.second;
    if (kernel_param(kk) == 0.0) continue;  // uniform: no parameter
    const double p0 = kernel_param(kk);
    setup sp = s, sm = s;
    kernel_set_param(f == 0 ? sp.kern.first : *sp.kern.second, p0 + kEps);
    kernel_set_param(f == 0 ? sm.kern.first : *sm.kern.second, p0 - kEps);
    expect_grad(g.dparam[f], (loss(sp) - loss(sm)) / (2 * kEps), "dparam");
  }
  for (std::size_t c = 0; c < s.opt.bandwidth_per_dim.size(); ++c)
    expect_grad(g.dbandwidth_per_dim[c],
                fd(s, [&](setup& x) -> double& { return x.opt.bandwidth_per_dim[c]; }),
                "dbandwidth_per_dim");
}

setup make(const kernel_spec& kern, const mask& msk, std::uint64_t seed, index d = 2) {
  setup s{random_matrix<double>(5, d, seed),
          random_matrix<double>(7, d, seed + 1),
          random_matrix<double>(7, 2, seed + 2, -2, 2),
          random_matrix<double>(5, 2, seed + 3),
          kern,
          msk,
          {}};
  return s;
}

TEST(SmoothGrad, EveryKernelFiniteDifferences) {
  // Temperatures are explicit (not auto) so the parameter derivative is well defined.
  const std::vector<std::pair<std::string, kernel_spec>> ks = {
      {"gaussian", kernel_gaussian{0.7}},
      {"laplacian", kernel_laplacian{0.8}},
      {"cauchy", kernel_cauchy{0.5}},
      {"rational_quadratic", kernel_rational_quadratic{0.6, 2.0}},
      {"periodic", kernel_periodic{1.0, 1.5}},
      {"locally_periodic", kernel_locally_periodic{1.0, 1.5}},
      {"boxcar", kernel_boxcar{1.7}},
      {"epanechnikov", kernel_epanechnikov{1.7}},
      {"biweight", kernel_biweight{1.7}},
      {"triweight", kernel_triweight{1.7}},
      {"tricube", kernel_tricube{1.7}},
      {"cosine", kernel_cosine{1.7}},
      {"uniform", kernel_uniform{}},
      {"inverse_distance", kernel_inverse_distance{}},
      {"exp_dot", kernel_exp_dot{1.3}},
      {"linear", kernel_linear{1.0, 2.5}},
      {"polynomial2", kernel_polynomial{0.8, 1.0, 2}},
      {"polynomial3", kernel_polynomial{1.5, 2.0, 3}},
  };
  for (const auto& [name, kern] : ks) {
    check_all_grads(make(kern, mask::none(), 7), name + "/none");
    check_all_grads(make(kern, mask::causal(1), 7), name + "/causal");
  }
}

TEST(SmoothGrad, TopkSelectionIsFixed) {
  check_all_grads(make(kernel_gaussian{0.6}, mask::none().topk(3), 17), "gaussian/topk");
  check_all_grads(make(kernel_uniform{}, mask::none().topk(2, topk_rank::distance), 17), "knn");
}

TEST(SmoothGrad, PerDimensionBandwidths) {
  setup s = make(kernel_gaussian{0.9}, mask::none(), 27, 3);
  s.opt.bandwidth_per_dim = {0.5, 1.5, 0.8};
  check_all_grads(s, "gaussian/per-dim");
  setup e = make(kernel_epanechnikov{2.0}, mask::none(), 27, 3);
  e.opt.bandwidth_per_dim = {0.7, 1.5, 0.9};
  check_all_grads(e, "epanechnikov/per-dim");
}

TEST(SmoothGrad, ProductKernelBothFactors) {
  check_all_grads(
      make(kernel_spec::product(kernel_exp_dot{1.1}, kernel_gaussian{0.6}, 2), mask::none(), 37, 4),
      "exp_dot*gaussian");
  check_all_grads(make(kernel_spec::product(kernel_gaussian{0.9}, kernel_epanechnikov{3.5}, 1),
                       mask::causal(2), 37, 3),
                  "gaussian*epanechnikov");
}

TEST(SmoothGrad, WeightDropoutFixedMask) {
  // The mask is a pure function of (seed, i, j): the dropped smoother is a fixed differentiable
  // function of q, k, v and the parameter.
  for (const auto& [name, kern] : std::vector<std::pair<std::string, kernel_spec>>{
           {"exp_dot", kernel_exp_dot{1.3}},
           {"gaussian", kernel_gaussian{0.7}},
           {"epanechnikov", kernel_epanechnikov{1.7}}}) {
    setup s = make(kern, mask::causal(1), 7);
    s.opt.dropout = 0.4;
    s.opt.dropout_seed = 99;
    check_all_grads(s, name + "/dropout");
  }
}

}  // namespace
}  // namespace kf
