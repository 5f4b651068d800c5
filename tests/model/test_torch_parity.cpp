// Golden parity with PyTorch 1.13 (python/make_fixture_transformer.py): the same 2-layer encoder
// regressor from PyTorch's own initialization — forward output, the loss, every gradient, and 10
// Adam steps — in float32. Tests never need Python: the fixture is checked in.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernelformer/io/npy.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/transformer.hpp"
#include "kernelformer/optim/adamw.hpp"

namespace kf::model {
namespace {

std::string fx(const std::string& name) { return std::string(KF_FIXTURES_DIR) + "/" + name; }

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
  for (const auto& pi : m.params().info()) {
    SCOPED_TRACE(pi.name);
    const auto* g = grads.find(pi.name);
    ASSERT_NE(g, nullptr);
    double scale = 0;
    for (float v : g->values) scale = std::max(scale, double(std::abs(v)));
    for (index i = 0; i < pi.size; ++i)
      ASSERT_NEAR(m.params().grads()[static_cast<std::size_t>(pi.offset + i)],
                  g->values[static_cast<std::size_t>(i)], 1e-4 * std::max(scale, 1e-3))
          << "entry " << i;
  }

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

}  // namespace
}  // namespace kf::model
