// Training the sequence regressor (model/regressor_train.hpp): shuffled mini-batch epochs of MSE
// with Adam(W), optional cosine schedule, data parallelism, early stopping on a validation set,
// and resumable runs. Shapes: x (n, T) windows, y (n) targets; a batch is b rows of x.
#include "kernelformer/model/regressor_train.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

#include "kernelformer/optim/adamw.hpp"

namespace kf::model {

namespace {

// The mutable state of a training run: what a checkpoint saves and a resume puts back.
struct regressor_run {
  optim::adamw<float> opt;
  std::mt19937_64 rng, drop_rng;
  std::vector<index> order;
  index epoch = 0, step = 0;
  train_result r;
};

// Puts a saved state back into run after checking it fits this run: at most `epochs` done, the
// order a permutation of the n samples, one loss and time per epoch and steps_per_epoch Adam
// steps each. Throws std::invalid_argument naming the mismatch.
void resume_run(regressor_run& run, const train_state& s, index n, index steps_per_epoch,
                index epochs) {
  if (s.done > epochs)
    throw std::invalid_argument(
        fmt::format("resume: the checkpoint is after epoch {}, beyond the {} epochs asked for",
                    s.done, epochs));
  std::vector<index> sorted = s.order;
  std::sort(sorted.begin(), sorted.end());
  for (index i = 0; i < n; ++i)
    if (static_cast<index>(sorted.size()) != n || sorted[static_cast<std::size_t>(i)] != i)
      throw std::invalid_argument(
          fmt::format("resume: the checkpoint's data order is not a permutation of {} samples", n));
  if (static_cast<index>(s.losses.size()) != s.done ||
      static_cast<index>(s.seconds.size()) != s.done || s.adam_steps != s.done * steps_per_epoch)
    throw std::invalid_argument("resume: the checkpoint's history does not match its epochs");
  train_state_restore(s, run.opt, run.rng, run.drop_rng);
  run.order = s.order;
  run.epoch = s.done;
  run.step = s.adam_steps;
  run.r.epoch_loss = s.losses;
  run.r.epoch_seconds = s.seconds;
}

// The state after run.epoch epochs, the inverse of resume_run.
train_state save_run(const regressor_run& run) {
  train_state s;
  s.done = run.epoch;
  train_state_store(s, run.opt, run.rng, run.drop_rng);
  s.order = run.order;
  s.losses = run.r.epoch_loss;
  s.seconds = run.r.epoch_seconds;
  return s;
}

// One epoch: shuffle, then every batch's forward, backward and optimizer step. Returns the mean
// training loss over the epoch's samples.
double train_epoch(sequence_regressor<float>& m, const matrix<float>& x,
                   const std::vector<float>& y, const train_options& o, regressor_run& run,
                   const optim::lr_schedule& sched) {
  const index n = x.rows(), t = x.cols();
  // Data-parallel: dropout from this process's own generator, the shuffle from the common one.
  std::mt19937_64* fwd_rng = o.parallel.active() ? &run.drop_rng : &run.rng;
  std::shuffle(run.order.begin(), run.order.end(), run.rng);
  double sum = 0;
  for (index b0 = 0; b0 < n; b0 += o.batch) {
    const index b = std::min(o.batch, n - b0);
    const auto [lo, hi] = o.parallel.rows(b);  // all of it unless data-parallel
    const index bl = hi - lo;
    matrix<float> xb(bl, t);  // (bl, T): this process's rows of the batch, in the epoch's order
    std::vector<float> yb(static_cast<std::size_t>(bl)), pred(static_cast<std::size_t>(bl)),
        dpred(static_cast<std::size_t>(bl));
    for (index i = 0; i < bl; ++i) {
      const index src = run.order[static_cast<std::size_t>(b0 + lo + i)];
      for (index j = 0; j < t; ++j) xb(i, j) = x(src, j);
      yb[static_cast<std::size_t>(i)] = y[static_cast<std::size_t>(src)];
    }
    m.params().zero_grad();
    double loss = 0;
    if (bl > 0) {
      m.forward(xb.cview(), pred, fwd_rng);
      loss = sequence_regressor<float>::mse(pred, yb, dpred);
      m.backward(dpred);
    }
    loss = o.parallel.reduce(m.params().grads(), loss, bl, b);  // the whole batch's mean
    if (!std::isfinite(loss))
      throw std::runtime_error(
          fmt::format("training diverged in epoch {}: the loss is {} (try a lower learning rate)",
                      run.epoch + 1, loss));
    sum += loss * double(b);  // weighted by the batch's size: the last one may be short
    if (o.clip > 0) optim::clip_grad_norm(m.params().grads(), o.clip);
    run.opt.step(m.params().values(), m.params().grads(), o.cosine_lr ? sched.at(run.step) : o.lr);
    ++run.step;
  }
  return sum / double(n);
}

// Validation for early stopping: the MSE after each epoch, the best weights kept aside.
struct validation_tracker {
  std::vector<float> best_weights;
  double best = std::numeric_limits<double>::infinity();
  index since_best = 0;
};

// After an epoch: measures the validation MSE, keeps the weights when they are the best so far;
// returns true when patience has run out.
bool validate_epoch(sequence_regressor<float>& m, const train_options& o, regressor_run& run,
                    validation_tracker& v) {
  const double loss = regressor_mse(m, *o.validation_x, *o.validation_y);
  if (!std::isfinite(loss))
    throw std::runtime_error(fmt::format(
        "training diverged in epoch {}: the validation loss is {} (try a lower learning rate)",
        run.epoch, loss));
  run.r.validation_loss.push_back(loss);
  if (loss < v.best) {
    v.best = loss;
    v.since_best = 0;
    run.r.best_epoch = run.epoch;
    v.best_weights.assign(m.params().values().begin(), m.params().values().end());
  } else {
    ++v.since_best;
  }
  if (o.on_validation) o.on_validation(run.epoch, loss, run.r.best_epoch);
  return o.patience > 0 && v.since_best >= o.patience;
}

}  // namespace

// In batches of 256 windows (bounded activations), evaluation mode (no dropout).
double regressor_mse(sequence_regressor<float>& m, const matrix<float>& x,
                     const std::vector<float>& y) {
  const index n = x.rows(), t = x.cols(), batch = 256;
  if (static_cast<index>(y.size()) != n || n == 0)
    throw std::invalid_argument("regressor_mse: x and y sizes differ or are empty");
  std::vector<float> pred(static_cast<std::size_t>(n));
  for (index b0 = 0; b0 < n; b0 += batch) {
    const index b = std::min(batch, n - b0);
    m.forward(x.cview().block(b0, 0, b, t),
              std::span<float>(pred.data() + b0, static_cast<std::size_t>(b)), nullptr);
  }
  return sequence_regressor<float>::mse(pred, y, {});
}

// Checks the options, then runs epochs until o.epochs or early stopping; the best validation
// epoch's weights are put back at the end when validating.
train_result train_regressor(sequence_regressor<float>& m, const matrix<float>& x,
                             const std::vector<float>& y, const train_options& o,
                             const epoch_callback& on_epoch) {
  const index n = x.rows();
  if (static_cast<index>(y.size()) != n) throw std::invalid_argument("train: x and y sizes differ");
  if (o.epochs < 1 || o.batch < 1)
    throw std::invalid_argument("train: epochs and batch must be >= 1");
  const bool validate = o.validation_x != nullptr;
  if (validate && (o.validation_y == nullptr || o.validation_x->cols() != x.cols() ||
                   o.validation_x->rows() < 1 ||
                   static_cast<index>(o.validation_y->size()) != o.validation_x->rows()))
    throw std::invalid_argument("train: the validation x and y do not fit the training data");
  if (validate && (o.resume || o.save_every > 0))
    throw std::invalid_argument("train: early stopping does not combine with resume or save_every");
  if (o.patience < 0) throw std::invalid_argument("train: patience must be >= 0");
  // Data-parallel: dropout draws from a generator of this process's own (data_parallel.hpp).
  regressor_run run{
      optim::adamw<float>({o.lr, 0.9, 0.999, 1e-8, o.weight_decay}, m.params().count()),
      std::mt19937_64(o.seed),
      std::mt19937_64(o.parallel.dropout_seed(o.seed)),
      std::vector<index>(static_cast<std::size_t>(n)),
      0,
      0,
      {}};
  std::iota(run.order.begin(), run.order.end(), 0);
  const index steps_per_epoch = (n + o.batch - 1) / o.batch, total = o.epochs * steps_per_epoch;
  if (o.resume) resume_run(run, *o.resume, n, steps_per_epoch, o.epochs);
  // A resumed run that had already finished trains nothing; its state still reaches the final
  // checkpoint, so the --save written after it can be resumed again, like the first one.
  if (o.resume && run.epoch >= o.epochs && o.on_checkpoint) o.on_checkpoint(save_run(run));
  // cosine_lr: 5% warmup, cosine to 0 over all steps; otherwise the constant o.lr.
  const optim::lr_schedule sched{o.lr, 0.0, o.cosine_lr ? std::max<index>(1, total / 20) : 0,
                                 o.cosine_lr ? total : 0};
  validation_tracker val;
  const auto t_start = std::chrono::steady_clock::now();
  while (run.epoch < o.epochs) {
    const auto t0 = std::chrono::steady_clock::now();
    const double loss = train_epoch(m, x, y, o, run, sched);
    ++run.epoch;
    run.r.epoch_loss.push_back(loss);
    const bool stop = validate && validate_epoch(m, o, run, val);
    run.r.epoch_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (on_epoch) on_epoch(run.epoch, o.epochs, loss);
    if (o.save_every > 0 && o.on_checkpoint &&
        (run.epoch % o.save_every == 0 || run.epoch == o.epochs))
      o.on_checkpoint(save_run(run));
    if (stop) {
      run.r.stopped_early = run.epoch < o.epochs;
      break;
    }
  }
  if (validate)  // the best epoch's weights back
    std::copy(val.best_weights.begin(), val.best_weights.end(), m.params().values().begin());
  run.r.train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return run.r;
}

}  // namespace kf::model
