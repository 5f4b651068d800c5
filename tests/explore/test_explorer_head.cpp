// The explorer's attention heads: the random head is attention_mimic's starting point, the mimic
// head reads back as the smoother's kernel, the data head's gradient matches central differences
// and its training lowers the leave-one-out error, the identity head is symmetric, and the cache
// key changes with exactly what the head depends on.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernelformer/explore/attention_fit.hpp"
#include "kernelformer/explore/explorer.hpp"
#include "kernelformer/explore/explorer_head.hpp"
#include "kernelformer/explore/head_kernel.hpp"

namespace kf {
namespace {

explorer_request sin_request(const std::string& mode) {
  explorer_request r;
  r.function = "sin";
  r.n = 60;
  r.kernel = "gaussian";
  r.bandwidth = 0.1;
  r.attention = mode;
  r.seed = 3;
  return r;
}

TEST(ExplorerHead, RandomHeadIsTheMimicsStartingPointAndNotSymmetric) {
  const auto rnd = explorer_make_head(sin_request("random"));
  const auto mim = explorer_make_head(sin_request("mimic"));
  std::vector<double> pos(50);
  for (std::size_t i = 0; i < 50; ++i) pos[i] = double(i) / 49;
  const auto start = attention_mimic(pos, 0, 1, matrix<double>(50, 50), 8, 0, 0.05, 3);
  EXPECT_EQ(rnd.wq.values(), start.wq.values());
  EXPECT_EQ(rnd.wk.values(), start.wk.values());
  EXPECT_EQ(rnd.steps, 0);
  EXPECT_NEAR(mim.loss.front(), rnd.loss_before, 1e-12);  // training starts where random is
  EXPECT_GT(explorer_head_diagnose(rnd, 0, 1).asymmetry, 0.05);
  EXPECT_EQ(explorer_head_diagnose(explorer_make_head(sin_request("identity")), 0, 1).asymmetry,
            0.0);
}

TEST(ExplorerHead, MimicHeadReadsBackAsTheSmoothersKernel) {
  const auto h = explorer_make_head(sin_request("mimic"));
  EXPECT_EQ(h.steps, 300);
  EXPECT_LT(h.loss_after, h.loss_before / 10) << h.loss_before << " -> " << h.loss_after;
  const auto dg = explorer_head_diagnose(h, 0, 1);
  const auto& best = dg.fit.shapes[std::size_t(dg.fit.best)];
  EXPECT_EQ(best.kernel, "gaussian");
  EXPECT_NEAR(best.median_bandwidth, 0.1, 0.01);
  EXPECT_NEAR(best.median_offset, 0.0, 0.01);
  EXPECT_GT(best.r2, 0.99);
}

TEST(ExplorerHead, DataFitGradientMatchesCentralDifferences) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> x(23), y(23);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 2 + 3 * double(i) / 22, y[i] = g(rng);
  attention_fit_params p;
  p.wq = matrix<double>(4, 3), p.wk = matrix<double>(4, 3);
  for (double& w : p.wq.values()) w = 0.7 * g(rng);
  for (double& w : p.wk.values()) w = 0.7 * g(rng);
  for (int i = 0; i < 6; ++i) p.wv.push_back(0.5 * g(rng));
  attention_fit_params grad;
  attention_fit_loss(p, x, y, 2, 5, &grad);
  auto check = [&](std::vector<double>& w, const std::vector<double>& dw, const char* what) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double w0 = w[i], eps = 1e-6;
      w[i] = w0 + eps;
      const double up = attention_fit_loss(p, x, y, 2, 5, nullptr);
      w[i] = w0 - eps;
      const double down = attention_fit_loss(p, x, y, 2, 5, nullptr);
      w[i] = w0;
      const double fd = (up - down) / (2 * eps);
      EXPECT_NEAR(dw[i], fd, 1e-6 * (1 + std::abs(fd))) << what << "[" << i << "]";
    }
  };
  check(p.wq.values(), grad.wq.values(), "W_q");
  check(p.wk.values(), grad.wk.values(), "W_k");
  check(p.wv, grad.wv, "w_v");
}

// The data head's loss, written out: φ(x) = [sin w1 t, cos w1 t, sin w2 t, cos w2 t] (t = x − lo,
// w1 = π/2R, w2 = π/R), q = φ W_q, k = φ W_k, v = [φ, y, 1]·w_v, softmax of q·k/√d over j ≠ i: a
// head that could see its own y (a dropped mask) would not give this number.
TEST(ExplorerHead, DataLossIsTheLeaveOneOutErrorWrittenOut) {
  const double lo = 1, hi = 4, pi = 3.141592653589793;
  const std::vector<double> x = {1.0, 1.3, 1.9, 2.2, 2.8, 3.1, 3.5, 4.0},
                            y = {0.3, -0.5, 1.1, 0.2, -0.8, 0.9, 0.4, -0.1};
  attention_fit_params p;
  p.wq = matrix<double>(4, 2, {0.9, -0.4, 0.3, 1.2, -0.7, 0.5, 0.2, -1.1});
  p.wk = matrix<double>(4, 2, {-0.6, 0.8, 1.0, 0.1, 0.4, -0.9, -0.3, 0.7});
  p.wv = {0.2, -0.3, 0.5, 0.1, 0.8, -0.2};
  const auto phi = [&](double v) {
    const double t = v - lo, w1 = pi / (2 * (hi - lo)), w2 = pi / (hi - lo);
    return std::vector<double>{std::sin(w1 * t), std::cos(w1 * t), std::sin(w2 * t),
                               std::cos(w2 * t)};
  };
  const auto project = [&](const std::vector<double>& f, const matrix<double>& w, index c) {
    double s = 0;
    for (index r = 0; r < 4; ++r) s += f[static_cast<std::size_t>(r)] * w(r, c);
    return s;
  };
  double mse = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto fi = phi(x[i]);
    double z = 0, zv = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
      if (j == i) continue;
      const auto fj = phi(x[j]);
      double score = 0;
      for (index c = 0; c < 2; ++c) score += project(fi, p.wq, c) * project(fj, p.wk, c);
      double v = p.wv[4] * y[j] + p.wv[5];
      for (std::size_t c = 0; c < 4; ++c) v += p.wv[c] * fj[c];
      const double w = std::exp(score / std::sqrt(2.0));
      z += w, zv += w * v;
    }
    mse += (zv / z - y[i]) * (zv / z - y[i]) / double(x.size());
  }
  EXPECT_NEAR(attention_fit_loss(p, x, y, lo, hi, nullptr), mse, 1e-12);
}

TEST(ExplorerHead, DataHeadTrainingLowersTheLeaveOneOutError) {
  auto r = sin_request("data");
  r.noise = 0.3;
  const auto h = explorer_make_head(r);
  EXPECT_EQ(h.train_points, 60);
  ASSERT_EQ(h.loss.size(), 300u);
  EXPECT_LT(h.loss_after, h.loss_before / 2) << h.loss_before << " -> " << h.loss_after;
  EXPECT_EQ(h.wv.size(), 6u);
  r.n = 1000;  // trained on 200 of them
  EXPECT_EQ(explorer_make_head(r).train_points, 200);
  // Its curve is the head's prediction: rows of weights still sum to 1.
  const auto d = explorer_make_data(r);
  const auto p = explorer_point_profile(r, h, d, 10);
  double s = 0;
  for (double w : p.attention) s += w;
  EXPECT_NEAR(s, 1.0, 1e-12);
}

TEST(ExplorerHead, KeyChangesWithWhatTheHeadDependsOn) {
  auto key = [](const std::string& mode, auto edit) {
    auto r = sin_request(mode);
    const std::string k0 = explorer_head_key(r);
    edit(r);
    return k0 != explorer_head_key(r);
  };
  const auto bw = [](explorer_request& r) { r.bandwidth = 0.2; };
  const auto temp = [](explorer_request& r) { r.temperature = 0.3; };
  const auto seed = [](explorer_request& r) { r.seed = 4; };
  const auto n = [](explorer_request& r) { r.n = 61; };
  EXPECT_TRUE(key("identity", temp));
  EXPECT_FALSE(key("identity", bw));
  EXPECT_TRUE(key("random", seed));
  EXPECT_FALSE(key("random", bw));
  EXPECT_FALSE(key("random", n));
  EXPECT_TRUE(key("mimic", bw));
  EXPECT_FALSE(key("mimic", temp));
  EXPECT_FALSE(key("mimic", n));
  EXPECT_TRUE(key("data", n));
  EXPECT_TRUE(key("data", seed));
  EXPECT_FALSE(key("data", bw));
  EXPECT_FALSE(key("data", temp));
}

}  // namespace
}  // namespace kf
