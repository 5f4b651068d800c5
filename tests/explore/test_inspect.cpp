// A model's heads read as smoothers: tr W of known weight matrices, a synthetic gaussian head
// recovered by head_inspect, and every head of small regressors and language models inspected.
#include "kernelformer/explore/inspect.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "kernelformer/masks.hpp"
#include "kernelformer/model/periodic_experiment.hpp"
#include "kernelformer/smooth.hpp"

namespace kf {
namespace {

TEST(Inspect, TraceOfIdentityAverageAndKernelWeights) {
  const index T = 40;
  matrix<double> eye(T, T), avg(T, T);
  for (index i = 0; i < T; ++i) {
    eye(i, i) = 1;
    for (index j = 0; j < T; ++j) avg(i, j) = 1.0 / double(T);
  }
  EXPECT_DOUBLE_EQ(weights_trace(eye.cview()), double(T));  // copies every position
  EXPECT_NEAR(weights_trace(avg.cview()), 1.0, 1e-12);      // one mean
  // A gaussian smoother over positions: tr W = Σ_i 1 / Σ_j K(i, j) (K(i, i) = 1), brute force.
  matrix<double> pos(T, 1), w(T, T);
  for (index i = 0; i < T; ++i) pos(i, 0) = double(i);
  smooth_weights<double>(w.view(), {}, pos.cview(), pos.cview(), kernel_gaussian{3.0},
                         mask::none());
  double ref = 0;
  for (index i = 0; i < T; ++i) {
    double z = 0;
    for (index j = 0; j < T; ++j) z += std::exp(-0.5 * double((i - j) * (i - j)) / 9.0);
    ref += 1.0 / z;
  }
  const head_inspection h = head_inspect(w.cview(), 2, 1);
  EXPECT_NEAR(h.df, ref, 1e-9);
  EXPECT_EQ(h.layer, 2);
  EXPECT_EQ(h.queries, T);
  const auto& best = h.fit.shapes[static_cast<std::size_t>(h.fit.best)];
  EXPECT_EQ(best.kernel, "gaussian");
  EXPECT_NEAR(best.median_bandwidth, 3.0, 0.15);
  EXPECT_NEAR(best.median_offset, 0.0, 0.5);
  EXPECT_GT(best.r2, 0.999);
}

void expect_heads_sane(const model_inspection& r, index layers, index heads, index T) {
  ASSERT_EQ(static_cast<index>(r.heads.size()), layers * heads);
  for (const auto& h : r.heads) {
    EXPECT_EQ(h.queries, T);
    EXPECT_EQ(h.keys, T);
    EXPECT_GE(h.df, 0.0);  // rows sum to 1: 0 ≤ tr W ≤ T (0: no position sees itself)
    EXPECT_LE(h.df, double(T) + 1e-4);
    EXPECT_EQ(h.fit.shapes.size(), 6u);
  }
  EXPECT_EQ(r.heads.back().layer, layers - 1);
  EXPECT_EQ(r.heads.back().head, heads - 1);
}

TEST(Inspect, EveryHeadOfARegressorAndALanguageModel) {
  model::regressor_config rc = model::periodic_config("quick");
  rc.seq_len = 30;
  rc.layers = 2;
  model::sequence_regressor<float> m(rc, 1);
  std::vector<float> window(30);
  for (std::size_t i = 0; i < window.size(); ++i) window[i] = std::sin(0.1f * float(i));
  std::vector<std::pair<int, int>> calls;  // (done, total) per head: the CLI's progress bar
  const model_inspection r =
      inspect_regressor(m, window, [&](int done, int total) { calls.emplace_back(done, total); });
  const int heads = int(2 * rc.block.heads);
  ASSERT_EQ(calls.size(), std::size_t(heads));
  for (int i = 0; i < heads; ++i) EXPECT_EQ(calls[std::size_t(i)], std::make_pair(i + 1, heads));
  EXPECT_EQ(r.kind, "sequence_regressor");
  EXPECT_EQ(r.parameters, m.params().count());
  expect_heads_sane(r, 2, rc.block.heads, 30);
  EXPECT_THROW(inspect_regressor(m, std::vector<float>(29)), std::invalid_argument);

  model::token_model_config tc;
  tc.vocab = 11;
  tc.context = 16;
  tc.decoder_layers = 2;
  tc.block = {16, 2, 32, 0.0, nn::activation::gelu, true, kernel_exp_dot{}};
  model::token_model<float> lm(tc, 2);
  std::vector<index> ids(12);
  std::iota(ids.begin(), ids.end(), 0);
  for (auto& id : ids) id %= 11;
  int last = 0;
  const model_inspection s =
      inspect_token_model(lm, ids, [&](int done, int total) { last = done == total ? done : -1; });
  EXPECT_EQ(last, 4);
  EXPECT_EQ(s.kind, "token_model");
  expect_heads_sane(s, 2, 2, 12);
  // Causal: the first query sees only itself, so W_00 = 1 and tr W ≥ 1 + the rest.
  EXPECT_GT(s.heads[0].df, 1.0);
  EXPECT_THROW(inspect_token_model(lm, std::vector<index>(17, 1)), std::invalid_argument);
}

TEST(Inspect, EncoderDecoderSites) {
  model::token_model_config tc;
  tc.vocab = 11;
  tc.context = 16;
  tc.encoder_layers = 2;
  tc.decoder_layers = 1;
  tc.tie_weights = false;
  tc.block = {16, 2, 32, 0.0, nn::activation::gelu, true, kernel_exp_dot{}};
  model::token_model<float> m(tc, 4);
  const std::vector<index> tgt = {1, 2, 3, 4}, src = {5, 6, 7, 8, 9, 10, 1};
  int calls = 0;
  const model_inspection r = inspect_token_model(
      m, tgt,
      [&](int, int total) {
        ++calls;
        EXPECT_EQ(total, 8);  // (2 + 1 + 1) layers x 2 heads
      },
      src);
  EXPECT_EQ(calls, 8);
  ASSERT_EQ(r.heads.size(), 8u);
  const char* sites[] = {"encoder_self", "encoder_self", "encoder_self",  "encoder_self",
                         "decoder_self", "decoder_self", "decoder_cross", "decoder_cross"};
  for (std::size_t k = 0; k < 8; ++k) {
    const head_inspection& h = r.heads[k];
    EXPECT_EQ(h.site, sites[k]) << k;
    EXPECT_EQ(h.queries, k < 4 ? 7 : 4) << k;
    EXPECT_EQ(h.keys, k < 4 || k >= 6 ? 7 : 4) << k;
  }
  EXPECT_EQ(r.heads[1].layer, 0);
  EXPECT_EQ(r.heads[1].head, 1);
  EXPECT_EQ(r.heads[3].layer, 1);
  // The cross heads' df: tr W of the first min(T, S) diagonal entries, brute force from the
  // model's own weights after the same forward.
  for (index h = 0; h < 2; ++h) {
    const matrix<float> w = m.attention_weights(model::attention_site::decoder_cross, 0, h, 0);
    double tr = 0;
    for (index i = 0; i < 4; ++i) tr += w(i, i);
    EXPECT_NEAR(r.heads[std::size_t(6 + h)].df, tr, 1e-6);
  }
  EXPECT_THROW(inspect_token_model(m, tgt), std::invalid_argument);  // no source
  EXPECT_THROW(inspect_token_model(m, tgt, {}, std::vector<index>(17, 1)), std::invalid_argument);
}

}  // namespace
}  // namespace kf
