// kernelformer/model/lm_train.hpp — training a decoder-only language model on a token stream.
//
// Batches as nanoGPT's get_batch: B random windows of T+1 tokens (inputs = the first T, targets =
// the next T), drawn from a seeded generator, so the same seed gives bit-identical losses on the
// same machine and thread count. AdamW (weight decay on matrices only, β2 = 0.99), linear warmup +
// cosine decay, gradient-norm clipping. Validation loss = mean cross-entropy over fixed, evenly
// spaced windows of the validation stream (the same windows at every evaluation); perplexity =
// exp(loss). The corpus helpers read the Debian `fortunes` package's text (docs/lm.md).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kernelformer/model/data_parallel.hpp"
#include "kernelformer/model/token_model.hpp"
#include "kernelformer/model/train_state.hpp"
#include "kernelformer/optim/adamw.hpp"

namespace kf::model {

struct lm_preset {
  std::string name;  // tiny | small | baby
  token_model_config model;
  index batch = 16, iters = 300, warmup = 30, eval_every = 100, eval_windows = 64;
  double lr = 1e-3, min_lr = 1e-4, weight_decay = 0.1, clip = 1.0;
};
// tiny: 2 layers, 2 heads, width 64, context 32 (seconds to a minute on 2 cores);
// small: nanoGPT's CPU Shakespeare configuration — 4 layers, 4 heads, width 128, context 64,
// batch 12, 2000 iterations, lr 1e-3 → 1e-4, warmup 100;
// baby: nanoGPT's default shakespeare_char model — 6 layers, 6 heads, width 384, context 256,
// batch 64, dropout 0.2, 5000 iterations, lr 1e-3 → 1e-4, warmup 100.
lm_preset lm_preset_get(const std::string& name);

struct lm_eval_point {
  index iter = 0;
  double train_loss = 0, val_loss = 0, seconds = 0;  // val_loss NaN: no validation text
};

struct lm_train_result {
  std::vector<double> losses;  // training loss per iteration
  std::vector<lm_eval_point> evals;
  double seconds = 0, tokens_per_second = 0;
};

// progress(iter_done, iters, last_loss, eval or nullptr) after every iteration.
using lm_progress = std::function<void(index, index, double, const lm_eval_point*)>;

// Resumable training (model/train_state.hpp): continue from `resume` (the caller has loaded the
// weights from the same checkpoint) — the iterations after it give bit-identical losses and
// weights to a run never stopped; every `save_every` iterations and after the last one,
// `on_checkpoint` receives the state after that iteration.
struct lm_checkpointing {
  const train_state* resume = nullptr;
  index save_every = 0;
  std::function<void(const train_state&)> on_checkpoint;
};

// parallel: several processes, each computing its windows of every batch (data_parallel.hpp).
lm_train_result lm_train(token_model<float>& m, std::span<const index> train,
                         std::span<const index> val, const lm_preset& p, std::uint64_t seed,
                         const lm_progress& progress = {}, const data_parallel& parallel = {},
                         const lm_checkpointing& checkpointing = {});

// The AdamW a token model trains with (here and in seq2seq_train): β = (0.9, 0.99), ε = 1e-8,
// weight decay on the matrices only (not biases, norms, or 1-D tables).
optim::adamw<float> lm_optimizer(const nn::parameters<float>& params, double lr,
                                 double weight_decay);

// Mean next-token cross-entropy over `windows` evenly spaced windows of length context.
double lm_evaluate(token_model<float>& m, std::span<const index> data, index windows);

// The default corpus: the English text files of Debian's `fortunes` package (quotations and
// literature), separators removed, concatenated in a fixed order. Throws naming the directory if
// the package is not installed.
std::string lm_default_corpus(const std::string& dir = "/usr/share/games/fortunes");

}  // namespace kf::model
