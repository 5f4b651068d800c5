// Golden parity with PyTorch 1.13 (python/make_fixture_transformer.py): the same 2-layer encoder
// regressor from PyTorch's own initialization — forward output, the loss, every gradient, and 10
// Adam steps — in float32. Tests never need Python: the fixture is checked in.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernelformer/io/npy.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/sequence_regressor.hpp"
#include "kernelformer/model/token_model.hpp"
#include "kernelformer/optim/adamw.hpp"
#include "test_paths.hpp"

namespace kf::model {
namespace {

std::string fx(const std::string& name) {
  return std::string(KF_FIXTURES_DIR).append("/").append(name);
}

// Every parameter's gradient against PyTorch's, within 1e-4 of that tensor's largest entry.
void expect_grads_match(const nn::parameters<float>& p, const checkpoint& grads) {
  for (const auto& pi : p.info()) {
    SCOPED_TRACE(pi.name);
    const auto* g = grads.find(pi.name);
    ASSERT_NE(g, nullptr);
    double scale = 0;
    for (float v : g->values) scale = std::max(scale, double(std::abs(v)));
    for (index i = 0; i < pi.size; ++i)
      ASSERT_NEAR(p.grads()[static_cast<std::size_t>(pi.offset + i)],
                  g->values[static_cast<std::size_t>(i)], 1e-4 * std::max(scale, 1e-3))
          << "entry " << i;
  }
}

TEST(TorchParity, ForwardLossGradientsAndAdamTrajectory) {
  const checkpoint ck = checkpoint_load(fx("torch_regressor.safetensors"));
  const regressor_config cfg = regressor_config::from_metadata(ck.metadata);
  sequence_regressor<float> m(cfg, 123);
  checkpoint_apply(ck, m.params());  // every PyTorch state_dict name maps onto ours

  const auto io_arr = io::npy_read(fx("torch_regressor_io.npy")).to_matrix<double>();
  const index b = io_arr.rows(), t = cfg.seq_len;
  matrix<float> x(b, t);
  std::vector<float> y(static_cast<std::size_t>(b)), pred(static_cast<std::size_t>(b)),
      dpred(static_cast<std::size_t>(b));
  for (index i = 0; i < b; ++i) {
    for (index j = 0; j < t; ++j) x(i, j) = static_cast<float>(io_arr(i, j));
    y[static_cast<std::size_t>(i)] = static_cast<float>(io_arr(i, t));
  }
  m.params().zero_grad();
  m.forward(x.cview(), pred, nullptr);
  for (index i = 0; i < b; ++i)
    EXPECT_NEAR(pred[static_cast<std::size_t>(i)], io_arr(i, t + 1), 1e-4) << "prediction " << i;
  const double loss = sequence_regressor<float>::mse(pred, y, dpred);
  const auto adam = io::npy_read(fx("torch_regressor_adam.npy")).to_matrix<double>();
  EXPECT_NEAR(loss, adam(0, 0), 1e-4 * adam(0, 0));
  m.backward(dpred);

  const checkpoint grads = checkpoint_load(fx("torch_regressor_grads.safetensors"));
  expect_grads_match(m.params(), grads);

  // 10 Adam steps (lr 1e-3) reproduce PyTorch's loss trajectory.
  optim::adamw<float> opt({1e-3}, m.params().count());
  for (index s = 0; s < adam.rows(); ++s) {
    m.params().zero_grad();
    m.forward(x.cview(), pred, nullptr);
    const double l = sequence_regressor<float>::mse(pred, y, dpred);
    EXPECT_NEAR(l, adam(s, 0), 1e-4 * adam(s, 0)) << "step " << s;
    m.backward(dpred);
    opt.step(m.params().values(), m.params().grads());
  }
}

// The encoder–decoder (python/make_fixture_token_model.py): PyTorch's nn.TransformerEncoder
// (with its final norm) and nn.TransformerDecoderLayer ×2, pre-LN and post-LN, GELU, causal target
// mask, source key padding, tied head — logits, loss and every gradient.
void check_encdec(const std::string& tag) {
  SCOPED_TRACE(tag.empty() ? "pre-LN" : tag);
  const checkpoint ck = checkpoint_load(fx("torch_encdec" + tag + ".safetensors"));
  const token_model_config cfg = token_model_config::from_metadata(ck.metadata);
  token_model<float> m(cfg, 5);
  checkpoint_apply(ck, m.params());  // every PyTorch state_dict name maps onto ours
  EXPECT_EQ(cfg.block.norm_first, tag.empty());
  const auto io_arr = io::npy_read(fx("torch_encdec" + tag + "_io.npy")).to_matrix<double>();
  const auto want = io::npy_read(fx("torch_encdec" + tag + "_logits.npy")).to_matrix<double>();
  const index B = io_arr.rows(), T = 5, S = io_arr.cols() - 2 * T - 1, V = cfg.vocab;
  std::vector<index> src, tgt, targets;
  token_input in;
  for (index b = 0; b < B; ++b) {
    for (index j = 0; j < S; ++j) src.push_back(static_cast<index>(io_arr(b, j)));
    for (index j = 0; j < T; ++j) tgt.push_back(static_cast<index>(io_arr(b, S + j)));
    for (index j = 0; j < T; ++j) targets.push_back(static_cast<index>(io_arr(b, S + T + j)));
    in.src_lengths.push_back(static_cast<index>(io_arr(b, S + 2 * T)));
  }
  in.batch = B;
  in.t = T;
  in.tokens = tgt;
  in.s = S;
  in.src = src;
  m.params().zero_grad();
  const double loss = m.forward(in, targets, nullptr);
  for (index r = 0; r < B * T; ++r)
    for (index v = 0; v < V; ++v)
      ASSERT_NEAR(m.logits()(r, v), want(r, v), 1e-4 * std::max(1.0, std::abs(want(r, v))))
          << "logit " << r << "," << v;
  EXPECT_NEAR(loss, want(B * T, 0), 1e-4 * want(B * T, 0));
  m.backward();
  const checkpoint grads = checkpoint_load(fx("torch_encdec" + tag + "_grads.safetensors"));
  expect_grads_match(m.params(), grads);
}

TEST(TorchParity, EncoderDecoderLogitsLossGradients) {
  check_encdec("");         // pre-LN
  check_encdec("_postln");  // post-LN
}

}  // namespace
}  // namespace kf::model
