// Finite-difference gradient checks in double for every layer: loss = Σ r ⊙ y with fixed random
// r, central differences (ε = 1e-6) against the analytic backward, for the input(s) and every
// parameter. Attention is checked with several kernels and masks, blocks post-LN and pre-LN,
// encoder and decoder.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "kernelformer/nn/activation.hpp"
#include "kernelformer/nn/attention.hpp"
#include "kernelformer/nn/dropout.hpp"
#include "kernelformer/nn/embedding.hpp"
#include "kernelformer/nn/layer_norm.hpp"
#include "kernelformer/nn/linear.hpp"
#include "kernelformer/nn/lm_head.hpp"
#include "kernelformer/nn/mlp.hpp"
#include "kernelformer/nn/transformer_layer.hpp"
#include "test_util.hpp"

namespace kf::nn {
namespace {

using test::random_matrix;
using P = parameters<double>;

// Runs forward (fills y from the inputs and p) and backward (accumulates input grads and p's
// grads from dy); checks every input entry and every parameter against central differences.
struct grad_check {
  std::function<void(P&, std::vector<matrix<double>>&, matrix<double>&)> forward;
  std::function<void(P&, std::vector<matrix<double>>&, std::vector<matrix<double>>&,
                     const matrix<double>&)>
      backward;

  void run(P& p, std::vector<matrix<double>> inputs, index out_rows, index out_cols,
           const std::string& label, double tol = 1e-6) {
    SCOPED_TRACE(label);
    const auto r = random_matrix<double>(out_rows, out_cols, 99);
    auto loss = [&]() {
      matrix<double> y(out_rows, out_cols);
      forward(p, inputs, y);
      double l = 0;
      for (index i = 0; i < y.size(); ++i) l += y.data()[i] * r.data()[i];
      return l;
    };
    p.zero_grad();
    matrix<double> y(out_rows, out_cols);
    forward(p, inputs, y);
    std::vector<matrix<double>> dins;
    for (const auto& in : inputs) dins.emplace_back(in.rows(), in.cols());
    backward(p, inputs, dins, r);
    const double eps = 1e-6;
    auto check = [&](double& slot, double analytic, const std::string& what) {
      const double x0 = slot;
      slot = x0 + eps;
      const double lp = loss();
      slot = x0 - eps;
      const double lm = loss();
      slot = x0;
      const double fd = (lp - lm) / (2 * eps);
      EXPECT_NEAR(analytic, fd, tol * std::max(1.0, std::abs(fd))) << what;
    };
    for (std::size_t k = 0; k < inputs.size(); ++k)
      for (index i = 0; i < inputs[k].size(); ++i)
        check(inputs[k].data()[i], dins[k].data()[i],
              "input " + std::to_string(k) + "[" + std::to_string(i) + "]");
    const std::vector<double> grads(p.grads().begin(), p.grads().end());
    for (const auto& pi : p.info())
      for (index i = 0; i < pi.size; ++i)
        check(p.values()[static_cast<std::size_t>(pi.offset + i)],
              grads[static_cast<std::size_t>(pi.offset + i)],
              pi.name + "[" + std::to_string(i) + "]");
  }
};

TEST(LayerGrad, Linear) {
  P p;
  const linear<double> lin(p, "fc", 5, 3);
  p.finalize(1);
  grad_check g{[&](P& pp, auto& in, auto& y) { lin.forward(pp, y.view(), in[0].cview()); },
               [&](P& pp, auto& in, auto& din, const auto& dy) {
                 lin.backward(pp, din[0].view(), dy.cview(), in[0].cview());
               }};
  g.run(p, {random_matrix<double>(4, 5, 1)}, 4, 3, "linear");
}

TEST(LayerGrad, LayerNorm) {
  P p;
  const layer_norm<double> ln(p, "ln", 6);
  p.finalize(2);
  for (double& v : p.values()) v += 0.3 * std::sin(v + 1.0);  // non-trivial weight and bias
  typename layer_norm<double>::cache c;
  grad_check g{[&](P& pp, auto& in, auto& y) { ln.forward(pp, y.view(), in[0].cview(), c); },
               [&](P& pp, auto& in, auto& din, const auto& dy) {
                 ln.backward(pp, din[0].view(), dy.cview(), in[0].cview(), c);
               }};
  g.run(p, {random_matrix<double>(3, 6, 3, -2, 2)}, 3, 6, "layer_norm");
}

// The float GELU (its own vectorized erf at the run-time instruction set) against the double
// one (Eigen's erf, the reference) over [−6, 6] and beyond, forward and backward, in place too.
TEST(LayerFloat, GeluMatchesDouble) {
  const index n = 3, c = 1001;  // odd: the vector loops' remainders run too
  matrix<double> xd(n, c), dyd(n, c), yd(n, c), dxd(n, c);
  matrix<float> xf(n, c), dyf(n, c), yf(n, c), dxf(n, c);
  for (index i = 0; i < n; ++i)
    for (index j = 0; j < c; ++j) {
      const double v = -7.0 + 14.0 * double(j) / double(c - 1) + 0.013 * double(i);
      xd(i, j) = static_cast<float>(v), xf(i, j) = static_cast<float>(v);
      dyd(i, j) = dyf(i, j) = static_cast<float>(0.5 + 0.25 * std::sin(double(j)));
    }
  activation_forward(activation::gelu, yd.view(), xd.cview());
  activation_forward(activation::gelu, yf.view(), xf.cview());
  activation_backward(activation::gelu, dxd.view(), dyd.cview(), xd.cview());
  activation_backward(activation::gelu, dxf.view(), dyf.cview(), xf.cview());
  for (index i = 0; i < n; ++i)
    for (index j = 0; j < c; ++j) {
      ASSERT_NEAR(yf(i, j), yd(i, j), 2e-6 * (1 + std::abs(yd(i, j)))) << xd(i, j);
      ASSERT_NEAR(dxf(i, j), dxd(i, j), 2e-6 * (1 + std::abs(dxd(i, j)))) << xd(i, j);
    }
  activation_forward(activation::gelu, xf.view(), xf.cview());  // in place: the same values
  for (index j = 0; j < c; ++j) ASSERT_EQ(xf(0, j), yf(0, j));
}

TEST(LayerGrad, ActivationsAndDropout) {
  P p;
  p.finalize(0);
  for (auto a : {activation::relu, activation::gelu}) {
    auto x = random_matrix<double>(4, 5, 4, -2, 2);
    for (double& v : x.values())
      if (std::abs(v) < 1e-3) v = 0.5;  // away from relu's kink
    grad_check g{[&](P&, auto& in, auto& y) { activation_forward(a, y.view(), in[0].cview()); },
                 [&](P&, auto& in, auto& din, const auto& dy) {
                   activation_backward(a, din[0].view(), dy.cview(), in[0].cview());
                 }};
    g.run(p, {x}, 4, 5, a == activation::relu ? "relu" : "gelu");
  }
  const dropout d{0.3};
  dropout::cache c;
  std::mt19937_64 rng(5);
  matrix<double> x = random_matrix<double>(6, 7, 6), y(6, 7);
  d.forward(y.view(), x.cview(), c, &rng);  // fixes the mask
  const auto keep = c.keep;
  // The library's forward itself, its generator re-seeded on every call so each finite
  // difference sees the mask the backward pass uses.
  grad_check g{
      [&](P&, auto& in, auto& yy) {
        std::mt19937_64 same(5);
        dropout::cache cc;
        d.forward(yy.view(), in[0].cview(), cc, &same);
        ASSERT_EQ(cc.keep, keep);
      },
      [&](P&, auto&, auto& din, const auto& dy) { d.backward(din[0].view(), dy.cview(), c); }};
  for (index i = 0; i < x.size(); ++i)  // kept elements scaled by 1/(1 − rate), the rest zero
    EXPECT_DOUBLE_EQ(y.data()[i], keep[static_cast<std::size_t>(i)] ? x.data()[i] / 0.7 : 0.0);
  g.run(p, {x}, 6, 7, "dropout");
  index kept = 0;
  for (auto k : keep) kept += k;
  EXPECT_GT(kept, 20);
  EXPECT_LT(kept, 42);
}

TEST(LayerGrad, TokenEmbedding) {
  P p;
  const token_embedding<double> emb(p, "wte", 7, 4);
  p.finalize(3);
  const std::vector<index> ids = {3, 0, 6, 3};
  grad_check g{[&](P& pp, auto&, auto& y) { emb.forward(pp, y.view(), ids); },
               [&](P& pp, auto&, auto&, const auto& dy) { emb.backward(pp, dy.cview(), ids); }};
  g.run(p, {}, 4, 4, "embedding");
  matrix<double> y(1, 4);
  const std::vector<index> bad = {7};
  EXPECT_THROW(emb.forward(p, y.view(), bad), std::out_of_range);
}

TEST(LayerGrad, SinusoidalTable) {
  const auto pe = positional_sinusoidal<double>(50, 6);
  EXPECT_DOUBLE_EQ(pe(0, 0), 0.0);
  EXPECT_DOUBLE_EQ(pe(0, 1), 1.0);
  EXPECT_NEAR(pe(7, 2), std::sin(7.0 / std::pow(10000.0, 2.0 / 6.0)), 1e-15);
  EXPECT_NEAR(pe(7, 5), std::cos(7.0 / std::pow(10000.0, 4.0 / 6.0)), 1e-15);
}

void check_attention(const kernel_spec& kern, bool causal, bool cross, bool padding,
                     const std::string& label, double dropout = 0.0) {
  P p;
  multi_head_attention<double> att(p, "attn", 8, 2, kern, causal);
  att.dropout = dropout;
  p.finalize(7);
  typename multi_head_attention<double>::shape sh;
  sh.batch = 2;
  sh.t = 3;
  sh.s = cross ? 4 : 3;
  if (padding) sh.key_lengths = {sh.s, sh.s - 1};
  typename multi_head_attention<double>::cache c;
  std::vector<matrix<double>> inputs = {random_matrix<double>(6, 8, 11)};
  if (cross) inputs.push_back(random_matrix<double>(2 * sh.s, 8, 12));
  grad_check g{[&](P& pp, auto& in, auto& y) {
                 std::mt19937_64 rng(3);  // the same attention-dropout mask every time
                 att.forward(pp, y.view(), in[0].cview(), (cross ? in[1] : in[0]).cview(), sh, c,
                             dropout > 0 || kernel_redraws(kern) ? &rng : nullptr);
               },
               [&](P& pp, auto& in, auto& din, const auto& dy) {
                 att.backward(pp, din[0].view(), (cross ? din[1] : din[0]).view(), dy.cview(),
                              in[0].cview(), (cross ? in[1] : in[0]).cview(), sh, c);
               }};
  g.run(p, inputs, 6, 8, label);
}

TEST(LayerGrad, AttentionEveryKernelSelfCrossMasks) {
  check_attention(kernel_exp_dot{}, false, false, false, "exp_dot self");
  check_attention(kernel_exp_dot{}, true, false, false, "exp_dot causal");
  check_attention(kernel_exp_dot{}, false, true, true, "exp_dot cross + padding");
  check_attention(kernel_gaussian{1.5}, true, false, false, "gaussian causal");
  check_attention(kernel_periodic{2.0, 3.0}, false, false, false, "periodic");
  check_attention(kernel_cauchy{1.0}, false, true, false, "cauchy cross");
  check_attention(kernel_polynomial{2.0, 1.0, 2}, false, false, false, "polynomial");
  check_attention(kernel_epanechnikov{6.0}, false, false, false, "epanechnikov (wide support)");
  check_attention(kernel_exp_dot{}, true, false, false, "exp_dot causal, weight dropout", 0.3);
  check_attention(kernel_gaussian{1.5}, false, true, true, "gaussian cross, weight dropout", 0.3);
  // A product kernel inside the layer: content exp_dot on each head's first 2 columns × a
  // gaussian on the other 2 (the split applies per head, head dim 4).
  const kernel_spec product = kernel_spec::product(kernel_exp_dot{}, kernel_gaussian{1.5}, 2);
  check_attention(product, true, false, false, "exp_dot x gaussian, causal");
  check_attention(product, false, true, true, "exp_dot x gaussian, cross + padding");
  // redraw=1 in training: the backward uses the features its forward drew.
  check_attention(kernel_parse("favor:features=16,seed=5,redraw=1"), true, false, false,
                  "favor redraw, causal");
  check_attention(kernel_parse("elu1"), false, true, true, "elu1 cross + padding");
}

TEST(LayerGrad, MlpFeedForward) {
  for (activation act : {activation::relu, activation::gelu}) {
    P p;
    const mlp<double> f(p, "layers.0.", 6, 10, act, 0.0);
    p.finalize(4);
    EXPECT_NE(p.find("layers.0.linear1.weight"), -1);
    EXPECT_NE(p.find("layers.0.linear2.bias"), -1);
    typename mlp<double>::cache c;
    grad_check g{
        [&](P& pp, auto& in, auto& y) { f.forward(pp, y.view(), in[0].cview(), c, nullptr); },
        [&](P& pp, auto& in, auto& din, const auto& dy) {
          f.backward(pp, din[0].view(), dy.cview(), in[0].cview(), c);
        }};
    g.run(p, {random_matrix<double>(5, 6, 31)}, 5, 6, act == activation::relu ? "relu" : "gelu");
  }
}

void check_block(bool decoder, bool norm_first, activation act, const std::string& label,
                 double dropout = 0.0) {
  P p;
  block_config cfg;
  cfg.dropout = dropout;
  cfg.d_model = 8;
  cfg.heads = 2;
  cfg.d_ff = 12;
  cfg.norm_first = norm_first;
  cfg.act = act;
  const transformer_layer<double> layer(p, "layers.0", cfg, decoder, decoder);
  p.finalize(13);
  typename multi_head_attention<double>::shape self_sh, cross_sh;
  self_sh.batch = cross_sh.batch = 2;
  self_sh.t = self_sh.s = cross_sh.t = 3;
  cross_sh.s = 4;
  typename transformer_layer<double>::cache c;
  std::vector<matrix<double>> inputs = {random_matrix<double>(6, 8, 21)};
  if (decoder) inputs.push_back(random_matrix<double>(8, 8, 22));
  grad_check g{[&](P& pp, auto& in, auto& y) {
                 std::mt19937_64 rng(4);  // every dropout mask fixed by the seed
                 layer.forward(pp, y.view(), in[0].cview(),
                               decoder ? in[1].cview() : const_matrix_view<double>{}, self_sh,
                               cross_sh, c, dropout > 0 ? &rng : nullptr);
               },
               [&](P& pp, auto& in, auto& din, const auto& dy) {
                 layer.backward(pp, din[0].view(), decoder ? din[1].view() : matrix_view<double>{},
                                dy.cview(), decoder ? in[1].cview() : const_matrix_view<double>{},
                                self_sh, cross_sh, c);
               }};
  g.run(p, inputs, 6, 8, label);
}

TEST(LayerGrad, EncoderAndDecoderLayers) {
  check_block(false, false, activation::relu, "encoder post-LN relu");
  check_block(false, true, activation::gelu, "encoder pre-LN gelu");
  check_block(true, false, activation::relu, "decoder post-LN");
  check_block(true, true, activation::gelu, "decoder pre-LN");
  check_block(false, false, activation::relu, "encoder post-LN, dropout 0.2 everywhere", 0.2);
  check_block(true, true, activation::gelu, "decoder pre-LN, dropout 0.2 everywhere", 0.2);
}

TEST(LayerGrad, TiedLmHeadAndCrossEntropy) {
  P p;
  const token_embedding<double> emb(p, "wte", 6, 4);
  const lm_head<double> head = lm_head<double>::tied(emb.w, 6, 4);
  p.finalize(5);
  const std::vector<index> ids = {1, 4, 2}, targets = {4, -1, 0};
  // loss(embedding) = CE(head(emb(ids)), targets): gradients of both uses of wte add up.
  auto loss_of = [&](P& pp, bool with_grad) {
    matrix<double> h(3, 4), logits(3, 6), dlogits(3, 6), dh(3, 4);
    emb.forward(pp, h.view(), ids);
    head.forward(pp, logits.view(), h.cview());
    const double l = cross_entropy<double>(logits.cview(), targets, dlogits.view());
    if (with_grad) {
      head.backward(pp, dh.view(), dlogits.cview(), h.cview());
      emb.backward(pp, dh.cview(), ids);
    }
    return l;
  };
  p.zero_grad();
  loss_of(p, true);
  const std::vector<double> g(p.grads().begin(), p.grads().end());
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double v0 = p.values()[i];
    p.values()[i] = v0 + 1e-6;
    const double lp = loss_of(p, false);
    p.values()[i] = v0 - 1e-6;
    const double lm = loss_of(p, false);
    p.values()[i] = v0;
    EXPECT_NEAR(g[i], (lp - lm) / 2e-6, 1e-7) << i;
  }
  // Uniform logits: loss = log V; huge logits stay finite.
  matrix<double> z(2, 6), big(1, 3, {1e4, -1e4, 0});
  const std::vector<index> t2 = {3, 5}, t1 = {1};
  EXPECT_NEAR(cross_entropy<double>(z.cview(), t2, {}), std::log(6.0), 1e-12);
  EXPECT_NEAR(cross_entropy<double>(big.cview(), t1, {}), 2e4, 1e-6);
  const std::vector<index> bad = {7, 0};
  EXPECT_THROW(cross_entropy<double>(z.cview(), bad, {}), std::out_of_range);
}

TEST(Attention, RedrawDrawsFreshFeaturesInTrainingOnly) {
  // Two layers with the same parameters: one asks for redraw=1, one keeps seed=5.
  parameters<double> p;
  const multi_head_attention<double> att(p, "attn", 8, 2,
                                         kernel_parse("favor:features=32,seed=5,redraw=1"), true);
  parameters<double> p2;
  const multi_head_attention<double> fixed(p2, "attn", 8, 2,
                                           kernel_parse("favor:features=32,seed=5"), true);
  p.finalize(3);
  p2.finalize(3);
  typename multi_head_attention<double>::shape sh;
  sh.batch = 1;
  sh.t = sh.s = 5;
  typename multi_head_attention<double>::cache c;
  const auto x = random_matrix<double>(5, 8, 4);
  const auto out = [&](const multi_head_attention<double>& a, parameters<double>& pp,
                       std::mt19937_64* rng) {
    matrix<double> y(5, 8);
    a.forward(pp, y.view(), x.cview(), x.cview(), sh, c, rng);
    return y;
  };
  const auto eval = out(att, p, nullptr), eval_fixed = out(fixed, p2, nullptr);
  std::mt19937_64 g1(1), g1b(1), g2(2);
  const auto t1 = out(att, p, &g1), t1b = out(att, p, &g1b), t2 = out(att, p, &g2);
  double d1 = 0, d12 = 0;
  for (index i = 0; i < eval.size(); ++i) {
    EXPECT_EQ(eval.data()[i], eval_fixed.data()[i]);  // evaluation: the features of seed=5
    EXPECT_EQ(t1.data()[i], t1b.data()[i]);           // a draw is a function of the generator
    d1 = std::max(d1, std::abs(t1.data()[i] - eval.data()[i]));
    d12 = std::max(d12, std::abs(t1.data()[i] - t2.data()[i]));
  }
  EXPECT_GT(d1, 1e-6);
  EXPECT_GT(d12, 1e-6);
  // The captured weights are those of the forward's draw: rows sum to 1 and they differ from
  // the weights of seed=5.
  const auto w1 = att.capture_weights(c, sh, 0, 0);  // c holds the g2 forward
  out(att, p, nullptr);
  const auto w0 = att.capture_weights(c, sh, 0, 0);
  double dw = 0;
  for (index i = 0; i < 5; ++i) {
    double s = 0;
    for (index j = 0; j < 5; ++j) {
      s += w1(i, j);
      dw = std::max(dw, std::abs(w1(i, j) - w0(i, j)));
    }
    EXPECT_NEAR(s, 1.0, 1e-12);
  }
  EXPECT_GT(dw, 1e-9);
}

TEST(Attention, CapturedWeightsAreRowsOfTheSoftmax) {
  parameters<double> p;
  const multi_head_attention<double> att(p, "attn", 8, 2, kernel_exp_dot{}, true);
  p.finalize(3);
  typename multi_head_attention<double>::shape sh;
  sh.batch = 1;
  sh.t = sh.s = 5;
  typename multi_head_attention<double>::cache c;
  const auto x = random_matrix<double>(5, 8, 4);
  matrix<double> y(5, 8);
  att.forward(p, y.view(), x.cview(), x.cview(), sh, c);
  const auto w = att.capture_weights(c, sh, 0, 1);
  for (index i = 0; i < 5; ++i) {
    double s = 0;
    for (index j = 0; j < 5; ++j) {
      if (j > i) {
        EXPECT_EQ(w(i, j), 0.0);
      }
      s += w(i, j);
    }
    EXPECT_NEAR(s, 1.0, 1e-12);
  }
}

}  // namespace
}  // namespace kf::nn
