// The language-model head and its loss.
//   lm_head:       logits = h Wᵀ (+ b)         h: (N, C), W: (V, C) — W may be the token
//                  embedding's weight (weight tying: both uses accumulate into one gradient)
//   cross_entropy: loss = −(1/N') Σ_n log softmax(logits_n)[target_n] over targets ≠ ignore (−1);
//                  d logits = (softmax − onehot) / N'. Computed with the row max subtracted, so
//                  any finite logits give a finite loss. PyTorch F.cross_entropy(reduction='mean',
//                  ignore_index=-1).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "kernelformer/nn/parameters.hpp"

namespace kf::nn {

template <class T>
struct lm_head {
  index vocab = 0, c = 0, w = -1, b = -1;
  lm_head() = default;
  // Tied: uses an existing (vocab, C) parameter, e.g. token_embedding::w.
  static lm_head tied(index weight_id, index vocab_size, index channels);
  // Untied: registers "<name>.weight" (and bias) like nn.Linear(C, V).
  lm_head(parameters<T>& p, const std::string& name, index channels, index vocab_size, bool bias);
  void forward(parameters<T>& p, matrix_view<T> logits, const_matrix_view<T> h) const;
  void backward(parameters<T>& p, matrix_view<T> dh, const_matrix_view<T> dlogits,
                const_matrix_view<T> h) const;
};

// Returns the mean loss over non-ignored rows (0 if none); fills dlogits if not empty.
// Throws std::out_of_range naming the row of a target outside [0, V) other than −1.
template <class T>
double cross_entropy(const_matrix_view<T> logits, std::span<const index> targets,
                     matrix_view<T> dlogits);

}  // namespace kf::nn
