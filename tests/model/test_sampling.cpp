// The next-token rule (model/sampling.hpp): the plain rule (top_p = 1, no penalty) draws as the
// temperature / top-k sampler always did; the nucleus keeps the fewest tokens holding top_p of
// the mass, with their renormalized frequencies; the repetition penalty divides a positive logit
// and multiplies a negative one, once per token; bad parameters are refused naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernelformer/model/sampling.hpp"

namespace kf::model {
namespace {

std::vector<double> frequencies(const std::vector<double>& z, const sampling& rule,
                                const std::vector<index>& context, int draws) {
  token_sampler s(static_cast<index>(z.size()), rule, 7);
  std::vector<double> f(z.size(), 0.0);
  for (int i = 0; i < draws; ++i)
    f[static_cast<std::size_t>(s.pick(std::span<const double>(z), context))] += 1.0 / draws;
  return f;
}

std::vector<double> softmax(const std::vector<double>& z) {
  std::vector<double> p(z.size());
  double sum = 0;
  for (std::size_t i = 0; i < z.size(); ++i) sum += p[i] = std::exp(z[i]);
  for (double& v : p) v /= sum;
  return p;
}

TEST(Sampling, PlainRuleDrawsTheSoftmax) {
  const std::vector<double> z = {3, 2, 1, 0};
  const auto p = softmax(z);
  sampling rule;
  rule.temperature = 1;
  const auto f = frequencies(z, rule, {}, 40000);
  for (std::size_t i = 0; i < z.size(); ++i) EXPECT_NEAR(f[i], p[i], 0.01) << i;
  rule.temperature = 0;  // greedy: the largest logit, the lower id on a tie
  token_sampler g(4, rule, 1);
  EXPECT_EQ(g.pick(std::span<const double>(z), {}), 0);
  const std::vector<float> tie = {1, 5, 5, 0};
  EXPECT_EQ(g.pick(std::span<const float>(tie), {}), 1);
}

TEST(Sampling, NucleusKeepsTheFewestTokensHoldingTopP) {
  const std::vector<double> z = {3, 2, 1, 0};  // p ≈ 0.644, 0.237, 0.087, 0.032
  const auto p = softmax(z);
  sampling rule;
  rule.temperature = 1;
  rule.top_p = 0.5;  // the first token alone holds 0.644 ≥ 0.5
  auto f = frequencies(z, rule, {}, 5000);
  EXPECT_NEAR(f[0], 1.0, 1e-9);
  rule.top_p = 0.85;  // 0.644 + 0.237 = 0.881 ≥ 0.85: two tokens, renormalized
  f = frequencies(z, rule, {}, 40000);
  EXPECT_NEAR(f[1], p[1] / (p[0] + p[1]), 0.01);
  EXPECT_EQ(f[2] + f[3], 0.0);
  rule.top_p = 1.0;
  rule.top_k = 3;  // top-k first, then the nucleus within it
  f = frequencies(z, rule, {}, 20000);
  EXPECT_EQ(f[3], 0.0);
}

TEST(Sampling, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  sampling rule;
  rule.temperature = 1;
  rule.repetition_penalty = 2;
  // logits 2, 2 with token 0 in the context (twice): 1 vs 2, p0 = e/(e + e²) = 0.269.
  auto f = frequencies({2, 2}, rule, {0, 0}, 40000);
  EXPECT_NEAR(f[0], 1 / (1 + std::exp(1.0)), 0.01);
  rule.temperature = 0;
  token_sampler g(2, rule, 1);
  const std::vector<double> neg = {-1, -1.5};  // −1 × 2 = −2 < −1.5
  EXPECT_EQ(g.pick(std::span<const double>(neg), std::vector<index>{0}), 1);
  EXPECT_EQ(g.pick(std::span<const double>(neg), std::vector<index>{}), 0);
}

TEST(Sampling, BadParametersAreRefusedNamingTheField) {
  auto refused = [](sampling s, const char* field) {
    try {
      s.validate();
      ADD_FAILURE() << field << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  sampling s;
  s.temperature = -1;
  refused(s, "temperature");
  s = {};
  s.top_p = 0;
  refused(s, "top_p");
  s.top_p = 1.5;
  refused(s, "top_p");
  s = {};
  s.repetition_penalty = 0.5;
  refused(s, "repetition_penalty");
  s = {};
  s.top_k = -2;
  refused(s, "top_k");
}

}  // namespace
}  // namespace kf::model
