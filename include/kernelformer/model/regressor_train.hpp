// kernelformer/model/regressor_train.hpp — mini-batch training of a sequence regressor (window →
// next value): Adam(W), shuffled batches, MSE, deterministic for a seed; resumable; optional
// early stopping on validation data.
//
// Early stopping: with validation windows, their MSE (evaluation mode: no dropout) is measured
// after every epoch; training ends after `patience` epochs without a new best (0: never early),
// and the best epoch's weights are put back, so a model that overfits a short noisy series, or
// whose loss jumps up late, is returned as it was at its best validation error.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernelformer/model/data_parallel.hpp"
#include "kernelformer/model/sequence_regressor.hpp"
#include "kernelformer/model/train_state.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::model {

struct train_options {
  index epochs = 100, batch = 512;
  double lr = 1e-3, weight_decay = 0.0, clip = 0.0;  // clip = 0: no gradient clipping
  // An improvement option (the protocol keeps lr constant): linear warmup over the first 5% of
  // the steps, then cosine decay to 0 — the last steps stop shaking the weights.
  bool cosine_lr = false;
  std::uint64_t seed = 0;
  data_parallel parallel;  // several processes: each computes its rows of every batch
  // Resumable training (model/train_state.hpp): continue from `resume` (the caller has loaded the
  // model's weights from the same checkpoint) — the epochs after it give bit-identical losses and
  // weights to a run never stopped; every `save_every` epochs and after the last one,
  // `on_checkpoint` receives the state after that epoch.
  const train_state* resume = nullptr;
  index save_every = 0;
  std::function<void(const train_state&)> on_checkpoint;
  // Early stopping (see the top of this file): validation windows (rows like the training x) and
  // their next values. Not together with resume or save_every (their state has no best weights).
  const matrix<float>* validation_x = nullptr;
  const std::vector<float>* validation_y = nullptr;
  index patience = 0;
  // After each epoch's validation: that epoch, its validation MSE and the best epoch so far.
  std::function<void(index epoch, double validation_loss, index best_epoch)> on_validation;
};
struct train_result {
  std::vector<double> epoch_loss, epoch_seconds;
  std::vector<double> validation_loss;  // per epoch, with validation data
  index best_epoch = 0;                 // 1-based epoch whose weights were kept (validation)
  bool stopped_early = false;           // patience ran out before the last epoch
  double train_seconds = 0;
};
using epoch_callback = std::function<void(index epoch, index epochs, double loss)>;
// Throws std::runtime_error when a batch's loss or a validation loss is not finite (diverged:
// the message names the epoch), std::invalid_argument for inconsistent sizes or options.
train_result train_regressor(sequence_regressor<float>& m, const matrix<float>& x,
                             const std::vector<float>& y, const train_options& o,
                             const epoch_callback& on_epoch = {});

// Mean squared error of m's predictions (evaluation mode) on windows x against y, in batches.
double regressor_mse(sequence_regressor<float>& m, const matrix<float>& x,
                     const std::vector<float>& y);

}  // namespace kf::model
