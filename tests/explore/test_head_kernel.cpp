// The head-as-kernel diagnostic recovers the shape, bandwidth and offset of weights made by a
// known kernel; attention trained to mimic a Gaussian smoother gets close to it.
#include <gtest/gtest.h>

#include <cmath>

#include "kernelformer/explore/explorer.hpp"
#include "kernelformer/explore/head_kernel.hpp"
#include "kernelformer/masks.hpp"
#include "kernelformer/smooth.hpp"

namespace kf {
namespace {

// Weights of kernel `name` with bandwidth h, each query looking at x_i + offset.
matrix<double> synth(const std::string& name, double h, double offset,
                     const std::vector<double>& x) {
  const index n = static_cast<index>(x.size());
  matrix<double> q(n, 1), k(n, 1), w(n, n);
  for (index i = 0; i < n; ++i) q(i, 0) = x[std::size_t(i)] + offset, k(i, 0) = x[std::size_t(i)];
  kernel_spec ks = kernel_parse(name);
  kernel_set_param(ks.first, h);
  smooth_weights<double>(w.view(), {}, q.cview(), k.cview(), ks, mask::none());
  return w;
}

TEST(HeadKernel, RecoversShapeBandwidthAndOffset) {
  std::vector<double> x(60);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = double(i) / 59.0;
  const auto g = synth("gaussian", 0.08, -0.2, x);
  const auto rep = head_kernel_fit(g.cview(), x, x);
  const auto& best = rep.shapes[std::size_t(rep.best)];
  EXPECT_EQ(best.kernel, "gaussian");
  EXPECT_GT(best.r2, 0.999);
  EXPECT_NEAR(best.median_bandwidth, 0.08, 0.004);
  EXPECT_NEAR(best.median_offset, -0.2, 1.0 / 59);
  const auto e = synth("epanechnikov", 0.15, 0.0, x);
  const auto rep2 = head_kernel_fit(e.cview(), x, x);
  EXPECT_EQ(rep2.shapes[std::size_t(rep2.best)].kernel, "epanechnikov");
  EXPECT_NEAR(rep2.shapes[std::size_t(rep2.best)].median_bandwidth, 0.15, 0.01);
  EXPECT_THROW(head_kernel_fit(g.cview(), std::vector<double>(3), x), std::invalid_argument);
}

TEST(HeadKernel, AttentionLearnsToMimicAGaussianSmoother) {
  std::vector<double> x(50);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = double(i) / 49.0;
  const auto target = synth("gaussian", 0.1, 0.0, x);
  const auto r = attention_mimic(x, 0, 1, target, 8, 400, 0.05, 1);
  EXPECT_LT(r.rmse_after, r.rmse_before / 3) << r.rmse_before << " -> " << r.rmse_after;
  EXPECT_LT(r.loss.back(), r.loss.front());
  // Rows of the trained head still sum to one.
  for (index i = 0; i < 50; ++i) {
    double s = 0;
    for (index j = 0; j < 50; ++j) s += r.after(i, j);
    EXPECT_NEAR(s, 1.0, 1e-12);
  }
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

// attention_mimic's hand-written gradient (dW = φᵀ dq, dq from the primitive's backward) against
// central differences in double, every entry of W_q and W_k.
TEST(HeadKernel, MimicGradientMatchesFiniteDifferences) {
  std::vector<double> x;
  for (int i = 0; i < 13; ++i) x.push_back(0.07 * i + 0.01 * std::sin(i));
  const index n = static_cast<index>(x.size()), d = 3;
  matrix<double> target(n, n);
  for (index i = 0; i < n; ++i) {  // a gaussian smoother's weights, rows summing to 1
    double s = 0;
    for (index j = 0; j < n; ++j) {
      const double dx = x[static_cast<std::size_t>(i)] - x[static_cast<std::size_t>(j)];
      s += target(i, j) = std::exp(-dx * dx / 0.02);
    }
    for (index j = 0; j < n; ++j) target(i, j) /= s;
  }
  matrix<double> wq(4, d), wk(4, d);
  for (index i = 0; i < wq.size(); ++i)
    wq.data()[i] = std::sin(1.3 * double(i) + 0.2), wk.data()[i] = std::cos(0.7 * double(i));
  std::vector<double> grad;
  attention_mimic_loss(x, 0, 1, target, wq, wk, &grad);
  ASSERT_EQ(grad.size(), std::size_t(2 * 4 * d));
  double scale = 0;
  for (double g : grad) scale = std::max(scale, std::abs(g));
  const double eps = 1e-6;
  for (index p = 0; p < 2 * 4 * d; ++p) {
    double& w = p < 4 * d ? wq.data()[p] : wk.data()[p - 4 * d];
    const double w0 = w;
    w = w0 + eps;
    const double lp = attention_mimic_loss(x, 0, 1, target, wq, wk, nullptr);
    w = w0 - eps;
    const double lm = attention_mimic_loss(x, 0, 1, target, wq, wk, nullptr);
    w = w0;
    const double fd = (lp - lm) / (2 * eps);
    EXPECT_NEAR(grad[static_cast<std::size_t>(p)], fd, 1e-6 * std::max(scale, std::abs(fd)))
        << "parameter " << p;
  }
  EXPECT_GT(scale, 1e-6) << "a gradient worth checking";
}

}  // namespace
}  // namespace kf
