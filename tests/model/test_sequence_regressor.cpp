// Whole-model tests: a finite-difference gradient check of a 2-layer regressor in double,
// deterministic training that reduces the loss, AdamW against its formula, and safetensors
// checkpoints (round trip, metadata, corrupted and truncated files).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/sequence_regressor.hpp"
#include "kernelformer/optim/adamw.hpp"
#include "test_util.hpp"

namespace kf::model {
namespace {

regressor_config tiny(bool norm_first = false) {
  regressor_config c;
  c.seq_len = 4;
  c.layers = 2;
  c.block.d_model = 8;
  c.block.heads = 2;
  c.block.d_ff = 12;
  c.block.norm_first = norm_first;
  return c;
}

// Central differences of loss() against the analytic gradient g, every `stride`-th parameter.
template <class Loss>
void expect_fd_gradient(sequence_regressor<double>& m, const std::vector<double>& g, Loss&& loss,
                        std::size_t stride) {
  auto vals = m.params().values();
  for (std::size_t i = 0; i < vals.size(); i += stride) {
    const double v0 = vals[i];
    vals[i] = v0 + 1e-6;
    const double lp = loss();
    vals[i] = v0 - 1e-6;
    const double lm = loss();
    vals[i] = v0;
    const double fd = (lp - lm) / 2e-6;
    ASSERT_NEAR(g[i], fd, 1e-6 * std::max(1.0, std::abs(fd))) << "parameter " << i;
  }
}

// Backward's gradient of the MSE against y = (0.3, −0.2, 0.9) on the 3 windows of x, checked by
// central differences on every `stride`-th parameter. With a dropout seed every forward is in
// training mode with the generator re-seeded by it (the same masks each time); without,
// evaluation mode.
void expect_mse_gradient(sequence_regressor<double>& m, const matrix<double>& x, std::size_t stride,
                         std::optional<std::uint64_t> dropout_seed = {}) {
  const std::vector<double> y = {0.3, -0.2, 0.9};
  std::vector<double> pred(3), dpred(3);
  auto fwd = [&] {
    if (!dropout_seed) {
      m.forward(x.cview(), pred, nullptr);
      return;
    }
    std::mt19937_64 rng(*dropout_seed);
    m.forward(x.cview(), pred, &rng);
  };
  auto loss = [&] {
    fwd();
    return sequence_regressor<double>::mse(pred, y, {});
  };
  m.params().zero_grad();
  fwd();
  sequence_regressor<double>::mse(pred, y, dpred);
  m.backward(dpred);
  const std::vector<double> g(m.params().grads().begin(), m.params().grads().end());
  expect_fd_gradient(m, g, loss, stride);
}

TEST(Regressor, WholeModelFiniteDifferences) {
  for (bool pre : {false, true}) {
    SCOPED_TRACE(pre ? "pre-LN" : "post-LN");
    sequence_regressor<double> m(tiny(pre), 3);
    // Every 5th parameter (each layer checks all of its own in tests/nn/test_layers.cpp).
    expect_mse_gradient(m, test::random_matrix<double>(3, 4, 5), 5);
  }
}

// The improvement options, in training mode: RMS-scaled windows (ŷ = s·f(x/s), s depending on x)
// and dropout everywhere (embedding, attention weights, residual branches, FFN) with the masks
// fixed by re-seeding the generator before every forward.
TEST(Regressor, FiniteDifferencesScaledInputsAndDropout) {
  regressor_config c = tiny(false);
  c.scale_inputs = true;
  c.block.dropout = 0.25;
  sequence_regressor<double> m(c, 8);
  const auto x = test::random_matrix<double>(3, 4, 6, -2, 2);
  expect_mse_gradient(m, x, 3, 42);
  // Dropout on: training-mode output differs from evaluation.
  std::vector<double> ev(3), with_dropout(3);
  m.forward(x.cview(), ev, nullptr);
  std::mt19937_64 rng(42);
  m.forward(x.cview(), with_dropout, &rng);
  EXPECT_NE(ev, with_dropout);
}

// The other structural variants: the positional table concatenated to the embedding (pe_concat,
// embed width d_model − pe_dim) and causal self-attention, alone and together, and a product
// kernel (content exp_dot × positional gaussian on each head's halves) — every 3rd parameter.
TEST(Regressor, FiniteDifferencesPeConcatCausalAndProductKernel) {
  struct variant {
    const char* label;
    bool pe_concat, causal, product;
  };
  for (const variant& v :
       {variant{"pe_concat", true, false, false}, variant{"causal", false, true, false},
        variant{"pe_concat + causal + product kernel", true, true, true}}) {
    SCOPED_TRACE(v.label);
    regressor_config c = tiny(false);
    c.pe_concat = v.pe_concat;
    if (v.pe_concat) c.pe_dim = 3;
    c.causal = v.causal;
    if (v.product) c.block.kernel = kernel_spec::product(kernel_exp_dot{}, kernel_gaussian{1.5}, 2);
    sequence_regressor<double> m(c, 11);
    expect_mse_gradient(m, test::random_matrix<double>(3, 4, 12), 3);
  }
}

TEST(Regressor, ScaledInputsMakeThePredictionHomogeneous) {
  regressor_config c = tiny(true);
  c.scale_inputs = true;
  sequence_regressor<double> m(c, 9);
  const auto x = test::random_matrix<double>(2, 4, 7, -1, 1);
  matrix<double> x3 = x;
  for (double& v : x3.values()) v *= 3.5;
  std::vector<double> a(2), b(2);
  m.forward(x.cview(), a, nullptr);
  m.forward(x3.cview(), b, nullptr);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(b[i], 3.5 * a[i], 1e-9 * std::abs(b[i]) + 1e-12);
  // An all-zero window gives a finite prediction (the RMS has a floor).
  matrix<double> z(1, 4);
  std::vector<double> pz(1);
  m.forward(z.cview(), pz, nullptr);
  EXPECT_TRUE(std::isfinite(pz[0]));
}

// Input normalization (a series standardized by its training part): on raw windows the model
// answers μ + σ·f((x − μ)/σ), with the RMS scaling after the standardization; the gradients
// through it match finite differences; the checkpoint carries μ and σ (and a checkpoint without
// them is the identity).
TEST(Regressor, InputNormalizationStandardizesAndScalesBack) {
  regressor_config c = tiny(false);
  c.scale_inputs = true;
  sequence_regressor<double> plain(c, 5), norm(c, 5);
  const double mu = 120, sigma = 15;
  norm.set_input_normalization(mu, sigma);
  EXPECT_TRUE(norm.config().normalizes());
  const auto z = test::random_matrix<double>(3, 4, 7, -2, 2);
  matrix<double> x = z;
  for (double& v : x.values()) v = mu + sigma * v;
  std::vector<double> a(3), b(3);
  plain.forward(z.cview(), a, nullptr);
  norm.forward(x.cview(), b, nullptr);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(b[i], mu + sigma * a[i], 1e-9 * std::abs(b[i]));
  const std::vector<double> y = {110, 130, 125};
  std::vector<double> pred(3), dpred(3);
  auto loss = [&] {
    norm.forward(x.cview(), pred, nullptr);
    return sequence_regressor<double>::mse(pred, y, {}) / (sigma * sigma);
  };
  norm.params().zero_grad();
  norm.forward(x.cview(), pred, nullptr);
  sequence_regressor<double>::mse(pred, y, dpred);
  for (double& g : dpred) g /= sigma * sigma;
  norm.backward(dpred);
  const std::vector<double> g(norm.params().grads().begin(), norm.params().grads().end());
  expect_fd_gradient(norm, g, loss, 3);
  // Metadata: written only when set, read back exactly.
  EXPECT_EQ(plain.config().to_metadata().count("input_shift"), 0u);
  const auto md = norm.config().to_metadata();
  const regressor_config back = regressor_config::from_metadata(md);
  EXPECT_EQ(back.input_shift, mu);
  EXPECT_EQ(back.input_scale, sigma);
  auto bad = md;
  bad["input_scale"] = "0";
  EXPECT_THROW(regressor_config::from_metadata(bad), std::runtime_error);
  EXPECT_THROW(norm.set_input_normalization(0, -1), std::invalid_argument);
}

// A tiny forecasting task: the next value of a sine from the previous 4.
struct task {
  matrix<float> x;
  std::vector<float> y;
};
task sine_task(index n) {
  task t{matrix<float>(n, 4), std::vector<float>(static_cast<std::size_t>(n))};
  for (index i = 0; i < n; ++i) {
    for (index j = 0; j < 4; ++j) t.x(i, j) = std::sin(0.3f * float(i + j));
    t.y[static_cast<std::size_t>(i)] = std::sin(0.3f * float(i + 4));
  }
  return t;
}

std::vector<double> train(std::uint64_t seed, int steps) {
  regressor_config c = tiny();
  c.block.dropout = 0.1;
  sequence_regressor<float> m(c, seed);
  optim::adamw<float> opt({3e-3}, m.params().count());
  const task t = sine_task(32);
  std::mt19937_64 rng(seed);
  std::vector<float> pred(32), dpred(32);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    m.params().zero_grad();
    m.forward(t.x.cview(), pred, &rng);
    losses.push_back(sequence_regressor<float>::mse(pred, t.y, dpred));
    m.backward(dpred);
    optim::clip_grad_norm(m.params().grads(), 1.0);
    opt.step(m.params().values(), m.params().grads());
  }
  return losses;
}

TEST(Regressor, TrainingReducesLossAndIsDeterministic) {
  const auto a = train(11, 150), b = train(11, 150);
  EXPECT_EQ(a, b) << "same seed, same thread count: bit-identical losses";
  EXPECT_LT(a.back(), 0.1 * a.front());
}

TEST(Optim, AdamWMatchesTheFormula) {
  std::vector<double> p = {1.0, -2.0}, g = {0.5, 0.25};
  optim::adamw<double> opt({0.1, 0.9, 0.999, 1e-8, 0.01}, 2);
  opt.step(p, g);
  // t = 1: m̂ = g, v̂ = g², step = lr·g/(|g| + eps); decay first.
  EXPECT_NEAR(p[0], 1.0 * (1 - 0.1 * 0.01) - 0.1 * 0.5 / (0.5 + 1e-8), 1e-12);
  EXPECT_NEAR(p[1], -2.0 * (1 - 0.1 * 0.01) - 0.1 * 0.25 / (0.25 + 1e-8), 1e-12);
  std::vector<double> big = {3.0, 4.0};
  EXPECT_NEAR(optim::clip_grad_norm<double>(big, 1.0), 5.0, 1e-12);
  EXPECT_NEAR(std::hypot(big[0], big[1]), 1.0, 1e-6);
  const optim::lr_schedule s{1.0, 0.1, 10, 110};
  EXPECT_NEAR(s.at(0), 0.1, 1e-12);
  EXPECT_NEAR(s.at(9), 1.0, 1e-12);
  EXPECT_NEAR(s.at(60), 0.55, 1e-12);
  EXPECT_NEAR(s.at(110), 0.1, 1e-12);
}

TEST(Checkpoint, RoundTripMetadataAndErrors) {
  const auto dir = std::filesystem::temp_directory_path() / ("kf_ck_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "m.safetensors").string();
  regressor_config c = tiny(true);
  c.block.kernel = kernel_gaussian{2.5};
  c.scale_inputs = true;
  sequence_regressor<float> m(c, 4);
  checkpoint_save(path, m.params(), c.to_metadata());
  const checkpoint ck = checkpoint_load(path);
  const regressor_config c2 = regressor_config::from_metadata(ck.metadata);
  EXPECT_EQ(kernel_format(c2.block.kernel), "gaussian:h=2.5");
  EXPECT_TRUE(c2.block.norm_first);
  EXPECT_TRUE(c2.scale_inputs);
  auto old_meta = ck.metadata;  // checkpoints from before the option: raw windows
  old_meta.erase("scale_inputs");
  EXPECT_FALSE(regressor_config::from_metadata(old_meta).scale_inputs);
  sequence_regressor<float> m2(c2, 99);
  checkpoint_apply(ck, m2.params());
  const auto x = test::random_matrix<float>(2, 4, 1);
  std::vector<float> a(2), b(2);
  m.forward(x.cview(), a, nullptr);
  m2.forward(x.cview(), b, nullptr);
  EXPECT_EQ(a, b);
  ASSERT_NE(ck.find("layers.1.self_attn.in_proj_weight"), nullptr);
  EXPECT_EQ(ck.find("layers.1.self_attn.in_proj_weight")->shape, (std::vector<index>{24, 8}));
  // Corrupted and truncated files.
  const std::string bytes = io::read_file(path);
  EXPECT_THROW(checkpoint_parse(bytes.substr(0, bytes.size() - 10), "t"), std::runtime_error);
  EXPECT_THROW(checkpoint_parse(bytes.substr(0, 5), "t"), std::runtime_error);
  std::string bad = bytes;
  bad[12] = '#';
  EXPECT_THROW(checkpoint_parse(bad, "t"), std::runtime_error);
  try {
    checkpoint_parse(bytes.substr(0, bytes.size() - 10), "model.safetensors");
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  sequence_regressor<float> other(tiny(), 1);  // different structure names match, shapes too
  regressor_config wide = tiny();
  wide.block.d_model = 16;
  sequence_regressor<float> wrong(wide, 1);
  EXPECT_THROW(checkpoint_apply(ck, wrong.params()), std::runtime_error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kf::model
