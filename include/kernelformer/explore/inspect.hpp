// kernelformer/explore/inspect.hpp — a trained model's attention heads read as smoothers.
//
// For every layer and head of a model run on one input, the head's normalized weights W (T×T
// over positions 0..T−1) get the diagnostics we give a kernel smoother: the head-as-kernel fit
// (explore/head_kernel.hpp: best shape, median bandwidth, median offset, R², and the gaussian's
// R² beside it) and the effective degrees of freedom tr(W) — the trace of the hat matrix, the
// number of "free parameters" the head spends: T for a head that copies each position, 1 for one
// that averages all of them, about T · K(0)/Σ_j K for a local kernel of bandwidth h (it falls as h
// grows), and below 1, down to 0, for a head that looks away from each position itself.
// Works on the periodic regressor (model/sequence_regressor.hpp), decoder-only language models and
// encoder–decoders (model/token_model.hpp: encoder self-attention, decoder self-attention and
// cross-attention, whose W is T×S: queries are target positions, keys source positions, and
// tr W sums its first min(T, S) diagonal entries); all run in evaluation mode (no dropout).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kernelformer/explore/head_kernel.hpp"
#include "kernelformer/model/sequence_regressor.hpp"
#include "kernelformer/model/token_model.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

// tr(W) over the square part: Σ_{i < min(T, S)} W_ii.
double weights_trace(const_matrix_view<double> w);

struct head_inspection {
  std::string site = "self";  // regressor: "self"; token models: "encoder_self", "decoder_self",
                              // "decoder_cross" (explore/attention_html.hpp's site ids)
  index layer = 0, head = 0;  // 0-based
  index queries = 0, keys = 0;
  head_kernel_report fit;
  double df = 0;  // tr(W)
};

struct model_inspection {
  std::string kind;          // "sequence_regressor" or "token_model"
  std::string architecture;  // the configuration in words
  index parameters = 0;
  std::vector<head_inspection> heads;  // site by site (encoder, decoder, cross), layer-major
};

// The weights of one head as a double matrix, and their diagnostics.
head_inspection head_inspect(const_matrix_view<double> w, index layer, index head);

// Called after each head with (heads done, heads in all): the fits take a second or more on
// long inputs, so the CLI shows a progress bar.
using inspect_progress = std::function<void(int done, int total)>;

// Runs the regressor on one window (seq_len values) and inspects every head.
model_inspection inspect_regressor(model::sequence_regressor<float>& m,
                                   std::span<const float> window,
                                   const inspect_progress& progress = {});
// Runs a token model on token ids (1..context of them; an encoder–decoder's decoder input) and,
// for an encoder–decoder, SOURCE (its encoder input, 1..context tokens), and inspects every
// head: a language model's decoder self-attention; an encoder–decoder's encoder self-attention,
// decoder self-attention and cross-attention, in that order. Throws std::invalid_argument when a
// sequence is empty or too long, or SOURCE is missing (encoder–decoder) or given (language model).
model_inspection inspect_token_model(model::token_model<float>& m, std::span<const index> ids,
                                     const inspect_progress& progress = {},
                                     std::span<const index> source = {});

}  // namespace kf
