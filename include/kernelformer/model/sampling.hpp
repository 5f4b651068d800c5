// kernelformer/model/sampling.hpp — how the next token is drawn from a language model's logits:
// greedy, or a draw at a temperature among the top-k and the nucleus (top-p), with a repetition
// penalty on the tokens already in the context (what `kf sample` and the Python/HF samplers
// offer; src/model/sampling.cpp).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf::model {

struct sampling {
  double temperature = 0.8;  // 0: greedy (the most likely token; top-k and top-p ignored)
  index top_k = 0;           // draw among the k most likely (0: all)
  // Nucleus sampling (Holtzman et al. 2020): among the top-k, the fewest most likely tokens whose
  // probabilities (at the temperature) sum to at least top_p; 1: all of them.
  double top_p = 1.0;
  // CTRL's penalty (Keskar et al. 2019): the logit of every token already in the context is
  // divided by it when positive, multiplied when negative, before the rest; 1: none.
  double repetition_penalty = 1.0;
  // Throws std::invalid_argument naming the field: temperature ≥ 0, top_k ≥ 0, top_p in (0, 1],
  // repetition_penalty ≥ 1, each finite.
  void validate() const;
};

// Draws tokens by one sampling rule with its own seeded generator. With top_p = 1 and no penalty
// the draws are those of a plain temperature / top-k sampler: one uniform per token.
class token_sampler {
 public:
  token_sampler(index vocab, const sampling& rule, std::uint64_t seed);
  // The next token from logits z (vocab values); `context`: the tokens the penalty applies to.
  template <class T>
  index pick(std::span<const T> z, std::span<const index> context);

 private:
  sampling rule_;
  std::mt19937_64 rng_;
  std::vector<double> logits_, prob_;
  std::vector<index> order_;
};

}  // namespace kf::model
