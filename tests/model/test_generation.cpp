// Cached generation (model/generation.hpp) against its reference, the full recompute: on tiny
// randomly initialized language models — an exact kernel (exp_dot, post-LN, learned positions;
// gaussian, pre-LN, sinusoidal) through the KV cache and feature-map kernels (elu1, favor, rff)
// through the recurrent state — the logits of every position agree (float32: 1e-5 relative;
// float64: 1e-10), greedy and sampled tokens are the same, past the context too (the window
// slides: recomputed steps), and after a checkpoint round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/generation.hpp"
#include "test_util.hpp"

namespace kf::model {
namespace {

token_model_config config(const std::string& kernel, bool pre, bool learned) {
  token_model_config c;
  c.vocab = 11;
  c.context = 10;
  c.decoder_layers = 2;
  c.block.d_model = 8;
  c.block.heads = 2;
  c.block.d_ff = 16;
  c.block.norm_first = pre;
  c.block.kernel = kernel_parse(kernel);
  c.learned_positions = learned;
  return c;
}

struct named_config {
  std::string name;
  token_model_config cfg;
  generation_route route;
};

std::vector<named_config> configs() {
  using R = generation_route;
  return {{"exp_dot", config("exp_dot", false, true), R::kv_cache},
          {"gaussian_pre_sin", config("gaussian:h=2", true, false), R::kv_cache},
          {"elu1", config("elu1", true, true), R::recurrent},
          {"favor", config("favor:features=16,seed=4", false, true), R::recurrent},
          // trained with redraw=1: generation uses seed=S's features, as evaluation does
          {"favor_redraw", config("favor:features=16,seed=4,redraw=1", true, true), R::recurrent},
          {"rff", config("rff:h=4,features=32,seed=1", true, true), R::recurrent}};
}

// A model whose weights are U(−a, a): attention far from uniform and logits well apart, so the
// test sees real differences between positions (the N(0, 0.02²) initialization barely does).
template <class T>
token_model<T> random_model(const token_model_config& cfg, std::uint64_t seed, double a = 0.6) {
  token_model<T> m(cfg, seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-a, a);
  for (T& w : m.params().values()) w = static_cast<T>(u(rng));
  return m;
}

std::vector<index> tokens(index n, index vocab, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<index> t(static_cast<std::size_t>(n));
  for (auto& x : t) x = static_cast<index>(rng() % static_cast<std::uint64_t>(vocab));
  return t;
}

// Feeds seq one token at a time; after each, the cache's logits against a forward over the last
// `context` tokens (the recompute reference).
template <class T>
void check_logits(token_model<T>& m, const std::vector<index>& seq, double rtol) {
  generation_cache<T> gen(m);
  const index ctx = m.config().context, V = m.config().vocab;
  for (std::size_t i = 0; i < seq.size(); ++i) {
    SCOPED_TRACE("position " + std::to_string(i));
    const auto z = gen.append(seq[i]);
    const matrix<T> got(1, V, std::vector<T>(z.begin(), z.end()));
    const index t = std::min<index>(ctx, static_cast<index>(i + 1));
    token_input in;
    in.t = t;
    in.tokens = std::span<const index>(seq).subspan(i + 1 - static_cast<std::size_t>(t),
                                                    static_cast<std::size_t>(t));
    m.forward(in, {}, nullptr);
    const matrix<T> ref(1, V,
                        std::vector<T>(m.logits().data() + (t - 1) * V, m.logits().data() + t * V));
    double scale = 0;
    for (T x : ref.values()) scale = std::max(scale, std::abs(double(x)));
    ASSERT_TRUE(test::all_close(got.cview(), ref.cview(), rtol, rtol * scale));
  }
  EXPECT_EQ(gen.size(), static_cast<index>(seq.size()));
  EXPECT_EQ(gen.recomputed(), std::max<index>(0, static_cast<index>(seq.size()) - ctx));
}

TEST(Generation, RouteFollowsTheKernel) {
  for (const auto& c : configs()) {
    EXPECT_EQ(generation_route_of(c.cfg), c.route) << c.name;
    EXPECT_EQ(generation_route_of(c.cfg, true), generation_route::recompute) << c.name;
    auto m = random_model<float>(c.cfg, 1);
    EXPECT_EQ(generation_cache<float>(m).route(), c.route) << c.name;
  }
  auto encdec = config("exp_dot", false, true);
  encdec.encoder_layers = 1;
  EXPECT_EQ(generation_route_of(encdec), generation_route::recompute);
  EXPECT_EQ(generation_route_name(generation_route::kv_cache), "kv-cache");
  EXPECT_EQ(generation_route_name(generation_route::recurrent), "recurrent");
}

TEST(Generation, CachedLogitsEqualRecomputeFloat) {
  for (const auto& c : configs()) {
    SCOPED_TRACE(c.name);
    auto m = random_model<float>(c.cfg, 3);
    check_logits(m, tokens(14, c.cfg.vocab, 5), 1e-5);  // 4 tokens past the context of 10
  }
}

TEST(Generation, CachedLogitsEqualRecomputeDouble) {
  for (const auto& c : configs()) {
    SCOPED_TRACE(c.name);
    auto m = random_model<double>(c.cfg, 3);
    check_logits(m, tokens(12, c.cfg.vocab, 6), 1e-10);
  }
}

TEST(Generation, GreedyAndSampledTokensEqualRecompute) {
  for (const auto& c : configs()) {
    SCOPED_TRACE(c.name);
    auto m = random_model<float>(c.cfg, 7);
    const std::vector<index> prompt = {3, 1, 4};
    const auto fast = token_model_generate(m, prompt, 9, 0.0, 0, 1, true);
    const auto ref = token_model_generate(m, prompt, 9, 0.0, 0, 1, false);
    EXPECT_EQ(fast, ref);  // stays within the context: every step cached
    EXPECT_EQ(token_model_generate(m, prompt, 20, 0.0, 0, 1, true),
              token_model_generate(m, prompt, 20, 0.0, 0, 1, false));  // past it
    EXPECT_EQ(token_model_generate(m, prompt, 15, 0.8, 4, 9, true),
              token_model_generate(m, prompt, 15, 0.8, 4, 9, false));
  }
}

TEST(Generation, PromptAtOnceResetAndCheckpointRoundTrip) {
  for (const auto& c : configs()) {
    SCOPED_TRACE(c.name);
    auto m = random_model<float>(c.cfg, 8);
    const auto seq = tokens(7, c.cfg.vocab, 2);
    generation_cache<float> one(m), all(m);
    std::vector<float> a;
    for (index id : seq) {
      const auto z = one.append(id);
      a.assign(z.begin(), z.end());
    }
    const auto z = all.append(seq);
    EXPECT_EQ(a, std::vector<float>(z.begin(), z.end()));  // the same steps, bit for bit
    all.reset();
    EXPECT_EQ(all.size(), 0);
    const auto z2 = all.append(seq);
    EXPECT_EQ(a, std::vector<float>(z2.begin(), z2.end()));
    EXPECT_THROW(all.append(c.cfg.vocab), std::out_of_range);
    // Saved and loaded: the loaded model generates the same tokens with and without the cache.
    const auto ck = checkpoint_parse(checkpoint_encode(m.params(), c.cfg.to_metadata()), "mem");
    const auto back = token_model_load(ck);
    const std::vector<index> prompt = {2, 7};
    const auto ref = token_model_generate(m, prompt, 12, 0.0, 0, 1, false);
    EXPECT_EQ(token_model_generate(*back, prompt, 12, 0.0, 0, 1, true), ref);
    EXPECT_EQ(token_model_generate(*back, prompt, 12, 0.0, 0, 1, false), ref);
  }
}

}  // namespace
}  // namespace kf::model
