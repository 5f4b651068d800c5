// The next-token rule (sampling.hpp): penalty, temperature, top-k, top-p, one uniform draw.
#include "kernelformer/model/sampling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace kf::model {

void sampling::validate() const {
  if (!(temperature >= 0) || !std::isfinite(temperature))
    throw std::invalid_argument(
        fmt::format("sampling: temperature {} must be >= 0 (0: greedy)", temperature));
  if (top_k < 0) throw std::invalid_argument("sampling: top_k must be >= 0 (0: all tokens)");
  if (!(top_p > 0 && top_p <= 1))
    throw std::invalid_argument(fmt::format("sampling: top_p {} must be in (0, 1]", top_p));
  if (!(repetition_penalty >= 1) || !std::isfinite(repetition_penalty))
    throw std::invalid_argument(
        fmt::format("sampling: repetition_penalty {} must be >= 1 (1: none)", repetition_penalty));
}

token_sampler::token_sampler(index vocab, const sampling& rule, std::uint64_t seed)
    : rule_(rule),
      rng_(seed),
      logits_(static_cast<std::size_t>(vocab)),
      prob_(static_cast<std::size_t>(vocab)),
      order_(static_cast<std::size_t>(vocab)) {
  rule_.validate();
}

// The logits as doubles, penalized; then greedy, or the top-k sorted, their probabilities at the
// temperature (the largest logit subtracted: the top is 1, exp never overflows), cut to the
// nucleus, and one uniform draw over what is left (ties broken by the lower id).
template <class T>
index token_sampler::pick(std::span<const T> z, std::span<const index> context) {
  const auto V = static_cast<index>(logits_.size());
  double* l = logits_.data();
  for (index i = 0; i < V; ++i) l[i] = double(z[static_cast<std::size_t>(i)]);
  if (rule_.repetition_penalty != 1.0)
    for (const index t : context) {  // a token seen twice is penalized once
      if (t < 0 || t >= V) continue;
      double& v = l[t];
      const double once = z[static_cast<std::size_t>(t)];
      if (v == once) v = v > 0 ? v / rule_.repetition_penalty : v * rule_.repetition_penalty;
    }
  if (rule_.temperature == 0) return static_cast<index>(std::max_element(l, l + V) - l);
  std::iota(order_.begin(), order_.end(), index(0));
  const index k = rule_.top_k > 0 ? std::min(rule_.top_k, V) : V;
  std::partial_sort(order_.begin(), order_.begin() + k, order_.end(),
                    [&](index a, index b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
  const double top = l[order_[0]];
  double sum = 0;
  for (index i = 0; i < k; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    prob_[iu] = std::exp((l[order_[iu]] - top) / rule_.temperature);
    sum += prob_[iu];
  }
  index kept = k;  // the nucleus: the fewest leading candidates holding top_p of the mass
  if (rule_.top_p < 1.0) {
    double mass = 0;
    for (index i = 0; i < k; ++i) {
      mass += prob_[static_cast<std::size_t>(i)];
      if (mass >= rule_.top_p * sum) {
        kept = i + 1;
        sum = mass;
        break;
      }
    }
  }
  double u = std::uniform_real_distribution<double>(0.0, sum)(rng_);
  for (index i = 0; i < kept; ++i) {
    u -= prob_[static_cast<std::size_t>(i)];
    if (u < 0) return order_[static_cast<std::size_t>(i)];
  }
  return order_[static_cast<std::size_t>(kept - 1)];  // u ≈ sum by rounding: the last one
}

template index token_sampler::pick<float>(std::span<const float>, std::span<const index>);
template index token_sampler::pick<double>(std::span<const double>, std::span<const index>);

}  // namespace kf::model
