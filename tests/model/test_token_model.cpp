// Token models: finite-difference gradient checks in double of a whole 2+2-layer encoder–decoder
// (post- and pre-LN, source padding) and of decoder-only language models (learned or sinusoidal
// positions, tied or untied head); causality; deterministic sampling; metadata round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernelformer/model/token_model.hpp"

namespace kf::model {
namespace {

token_model_config tiny(index enc, index dec, bool pre, bool learned, bool tied) {
  token_model_config c;
  c.vocab = 7;
  c.src_vocab = 5;
  c.context = 6;
  c.encoder_layers = enc;
  c.decoder_layers = dec;
  c.block.d_model = 8;
  c.block.heads = 2;
  c.block.d_ff = 12;
  c.block.norm_first = pre;
  c.learned_positions = learned;
  c.tie_weights = tied;
  return c;
}

// Checks every parameter of m against central differences of the loss of `in`.
void check_all_gradients(token_model<double>& m, const token_input& in,
                         const std::vector<index>& targets) {
  auto& p = m.params();
  p.zero_grad();
  m.forward(in, targets, nullptr);
  m.backward();
  const std::vector<double> g(p.grads().begin(), p.grads().end());
  const double eps = 1e-6;
  index checked = 0;
  for (const auto& pi : p.info())
    for (index i = 0; i < pi.size; ++i) {
      auto& slot = p.values()[static_cast<std::size_t>(pi.offset + i)];
      const double v0 = slot;
      slot = v0 + eps;
      const double lp = m.forward(in, targets, nullptr);
      slot = v0 - eps;
      const double lm = m.forward(in, targets, nullptr);
      slot = v0;
      const double fd = (lp - lm) / (2 * eps);
      const double an = g[static_cast<std::size_t>(pi.offset + i)];
      EXPECT_NEAR(an, fd, 1e-6 * std::max(1.0, std::abs(fd))) << pi.name << "[" << i << "]";
      ++checked;
    }
  EXPECT_EQ(checked, p.count());
}

TEST(TokenModel, EncoderDecoderTwoLayersFiniteDifferences) {
  const std::vector<index> src = {1, 4, 0, 2, 3, 3, 1, 4};  // B = 2, S = 4
  const std::vector<index> tgt = {0, 5, 6, 2, 1, 3};        // B = 2, T = 3
  const std::vector<index> targets = {5, 6, 2, 1, -1, 4};
  for (bool pre : {false, true}) {
    SCOPED_TRACE(pre ? "pre-LN" : "post-LN");
    token_model<double> m(tiny(2, 2, pre, true, true), 11);
    token_input in;
    in.batch = 2;
    in.t = 3;
    in.tokens = tgt;
    in.s = 4;
    in.src = src;
    in.src_lengths = {4, 3};  // the second source has one padding position
    check_all_gradients(m, in, targets);
    // Padding really is ignored: changing the padded source token changes nothing.
    const double l0 = m.forward(in, targets, nullptr);
    std::vector<index> src2 = src;
    src2[7] = 0;
    in.src = src2;
    EXPECT_EQ(m.forward(in, targets, nullptr), l0);
    // The cross-attention weights over the padded key are zero.
    const auto w = m.attention_weights(attention_site::decoder_cross, 1, 1, 1);
    ASSERT_EQ(w.cols(), 4);
    for (index r = 0; r < w.rows(); ++r) EXPECT_EQ(w(r, 3), 0.0);
  }
}

TEST(TokenModel, DecoderOnlyFiniteDifferences) {
  const std::vector<index> tok = {3, 1, 4, 1, 5, 2, 6, 0};  // B = 2, T = 4
  const std::vector<index> targets = {1, 4, 1, 5, 2, 6, -1, 3};
  struct variant {
    bool pre, learned, tied;
  };
  for (const variant v : {variant{true, true, true}, variant{false, false, false}}) {
    SCOPED_TRACE(v.pre ? "pre-LN learned tied" : "post-LN sinusoidal untied");
    token_model<double> m(tiny(0, 2, v.pre, v.learned, v.tied), 4);
    token_input in;
    in.batch = 2;
    in.t = 4;
    in.tokens = tok;
    check_all_gradients(m, in, targets);
  }
}

TEST(TokenModel, DecoderIsCausal) {
  token_model<double> m(tiny(0, 2, true, true, true), 2);
  std::vector<index> a = {1, 2, 3, 4, 5}, b = a;
  b[4] = 0;
  token_input in;
  in.t = 5;
  in.tokens = a;
  m.forward(in, {}, nullptr);
  const matrix<double> la = m.logits();
  in.tokens = b;
  m.forward(in, {}, nullptr);
  for (index t = 0; t < 4; ++t)
    for (index v = 0; v < 7; ++v) EXPECT_EQ(la(t, v), m.logits()(t, v)) << t;
  // The weights of a causal head are zero above the diagonal and rows sum to 1.
  const auto w = m.attention_weights(attention_site::decoder_self, 0, 0, 0);
  for (index r = 0; r < 5; ++r) {
    double s = 0;
    for (index c = 0; c < 5; ++c) {
      if (c > r) {
        EXPECT_EQ(w(r, c), 0.0);
      }
      s += w(r, c);
    }
    EXPECT_NEAR(s, 1.0, 1e-12);
  }
}

TEST(TokenModel, SamplingIsDeterministicAndRespectsTopK) {
  token_model<float> m(tiny(0, 1, true, true, true), 9);
  const std::vector<index> prompt = {1, 2};
  const auto a = token_model_generate(m, prompt, 12, 1.0, 0, 42);
  const auto b = token_model_generate(m, prompt, 12, 1.0, 0, 42);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 12u);  // longer than the context: the window slides
  // top_k = 1 and temperature 0 are both greedy.
  EXPECT_EQ(token_model_generate(m, prompt, 8, 0.7, 1, 1),
            token_model_generate(m, prompt, 8, 0.0, 0, 2));
  EXPECT_THROW(token_model_generate(m, std::vector<index>{}, 3, 1.0, 0, 1), std::invalid_argument);
  EXPECT_THROW(token_model_generate(m, prompt, 3, -1.0, 0, 1), std::invalid_argument);
}

TEST(TokenModel, BadInputsAreErrors) {
  token_model<float> m(tiny(0, 1, true, true, true), 9);
  std::vector<index> t = {1, 2, 9};
  token_input in;
  in.t = 3;
  in.tokens = t;
  EXPECT_THROW(m.forward(in, {}, nullptr), std::out_of_range);  // token 9 >= vocab 7
  std::vector<index> longer(7, 1);
  in.t = 7;
  in.tokens = longer;
  EXPECT_THROW(m.forward(in, {}, nullptr), std::invalid_argument);  // beyond the context
  EXPECT_THROW(m.backward(), std::logic_error);
}

TEST(TokenModel, MetadataRoundTrip) {
  auto c = tiny(2, 3, false, false, false);
  c.block.kernel = kernel_parse("gaussian:h=2");
  const auto back = token_model_config::from_metadata(c.to_metadata());
  EXPECT_EQ(back.to_metadata(), c.to_metadata());
  auto md = c.to_metadata();
  md["kind"] = "sequence_regressor";
  EXPECT_THROW(token_model_config::from_metadata(md), std::runtime_error);
  md = c.to_metadata();
  md["vocab"] = "12x";
  EXPECT_THROW(token_model_config::from_metadata(md), std::runtime_error);
}

}  // namespace
}  // namespace kf::model
