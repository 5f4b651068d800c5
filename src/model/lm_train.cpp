// Language-model training (model/lm_train.hpp): presets, the shared AdamW, evaluation over fixed
// windows, the resumable training loop and the default corpus. Shapes: B windows of T tokens,
// x and y (B·T) row-major with y the next token of x.
#include "kernelformer/model/lm_train.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/optim/adamw.hpp"

namespace kf::model {
namespace {

double now_seconds() {  // monotonic, for durations only
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

lm_preset lm_preset_get(const std::string& name) {
  lm_preset p;
  p.name = name;
  auto& m = p.model;
  m.encoder_layers = 0;  // decoder-only, GPT-2's choices: pre-LN, GELU, learned positions, tied
  m.block.norm_first = true;
  m.block.act = nn::activation::gelu;
  m.learned_positions = true;
  m.tie_weights = true;
  if (name == "tiny") {  // seconds to a minute on 2 cores (tests and demos)
    m.context = 32;
    m.decoder_layers = 2;
    m.block.d_model = 64;
    m.block.heads = 2;
    m.block.d_ff = 256;
    p.batch = 16;
    p.iters = 400;
    p.warmup = 40;
    p.eval_every = 100;
    p.eval_windows = 64;
    p.lr = 2e-3;
    p.min_lr = 2e-4;
  } else if (name == "small") {  // nanoGPT's CPU Shakespeare configuration
    m.context = 64;
    m.decoder_layers = 4;
    m.block.d_model = 128;
    m.block.heads = 4;
    m.block.d_ff = 512;
    p.batch = 12;
    p.iters = 2000;
    p.warmup = 100;
    p.eval_every = 250;
    p.eval_windows = 240;
    p.lr = 1e-3;
    p.min_lr = 1e-4;
  } else if (name == "baby") {  // nanoGPT's default shakespeare_char ("baby GPT"): ~10.7M
    m.context = 256;            // parameters, minutes per 100 steps on 2 cores
    m.decoder_layers = 6;
    m.block.d_model = 384;
    m.block.heads = 6;
    m.block.d_ff = 1536;
    m.block.dropout = 0.2;
    p.batch = 64;
    p.iters = 5000;
    p.warmup = 100;
    p.eval_every = 250;
    p.eval_windows = 200;
    p.lr = 1e-3;
    p.min_lr = 1e-4;
  } else {
    throw std::invalid_argument(
        fmt::format("unknown configuration '{}': expected tiny, small or baby", name));
  }
  return p;
}

optim::adamw<float> lm_optimizer(const nn::parameters<float>& params, double lr,
                                 double weight_decay) {
  optim::adamw<float> opt({lr, 0.9, 0.99, 1e-8, weight_decay}, params.count());
  std::vector<std::uint8_t> decay(static_cast<std::size_t>(params.count()), 0);
  for (const auto& pi : params.info())  // matrices and embedding tables: ≥ 2-D
    if (pi.shape.size() >= 2) std::fill_n(decay.begin() + pi.offset, pi.size, std::uint8_t{1});
  opt.set_decay_mask(std::move(decay));
  return opt;
}

double lm_evaluate(token_model<float>& m, std::span<const index> data, index windows) {
  const index T = m.config().context;
  const index n = static_cast<index>(data.size());
  if (n < 2) return 0.0;
  const index t = std::min(T, n - 1);  // a short text: windows shorter than the context
  const index room = n - t - 1;        // last valid start
  windows = std::max<index>(1, std::min(windows, room + 1));
  const index per_batch = 16;  // windows per forward: bounds the logits at (16·t, V)
  double sum = 0;
  index counted = 0;
  for (index w0 = 0; w0 < windows; w0 += per_batch) {
    const index b = std::min(per_batch, windows - w0);
    std::vector<index> x(static_cast<std::size_t>(b * t)), y(x.size());  // (b·t) each
    for (index i = 0; i < b; ++i) {  // window w0 + i, evenly spaced over [0, room]
      const index start = windows > 1 ? (w0 + i) * room / (windows - 1) : 0;
      for (index j = 0; j < t; ++j) {
        x[static_cast<std::size_t>(i * t + j)] = data[static_cast<std::size_t>(start + j)];
        y[static_cast<std::size_t>(i * t + j)] = data[static_cast<std::size_t>(start + j + 1)];
      }
    }
    token_input in;
    in.batch = b;
    in.t = t;
    in.tokens = x;
    sum += m.forward(in, y, nullptr) * double(b);  // the batch's mean, weighted by its windows
    counted += b;
  }
  return sum / double(counted);
}

namespace {

// What a checkpoint saves and a resume puts back.
struct lm_run {
  optim::adamw<float> opt;
  std::mt19937_64 rng, drop_rng;
  index it = 0;
  lm_train_result r;
};

// Puts a saved state back into run after checking it belongs to this many iterations (the losses
// and Adam steps count one per iteration). Throws std::invalid_argument naming the mismatch.
void resume_lm(lm_run& run, const train_state& s, const lm_preset& p) {
  if (s.done > p.iters)
    throw std::invalid_argument(fmt::format(
        "resume: the checkpoint is after iteration {}, beyond the {} asked for", s.done, p.iters));
  if (static_cast<index>(s.losses.size()) != s.done || s.adam_steps != s.done)
    throw std::invalid_argument("resume: the checkpoint's history does not match its iterations");
  train_state_restore(s, run.opt, run.rng, run.drop_rng);
  run.it = s.done;
  run.r.losses = s.losses;
  for (std::size_t i = 0; i + 4 <= s.evals.size(); i += 4)  // rows (iter, train, val, seconds)
    run.r.evals.push_back(
        {static_cast<index>(s.evals[i]), s.evals[i + 1], s.evals[i + 2], s.evals[i + 3]});
}

// The state after run.it iterations, the inverse of resume_lm.
train_state save_lm(const lm_run& run) {
  train_state s;
  s.done = run.it;
  train_state_store(s, run.opt, run.rng, run.drop_rng);
  s.losses = run.r.losses;
  for (const auto& e : run.r.evals)
    s.evals.insert(s.evals.end(), {double(e.iter), e.train_loss, e.val_loss, e.seconds});
  return s;
}

// One iteration: draw the batch, forward, backward, clip, step. Returns the batch's loss.
double lm_step(token_model<float>& m, std::span<const index> train, const lm_preset& p,
               const data_parallel& parallel, lm_run& run, std::vector<index>& x,
               std::vector<index>& y) {
  const index T = m.config().context, B = p.batch, n = static_cast<index>(train.size());
  auto& params = m.params();
  std::mt19937_64* fwd_rng = parallel.active() ? &run.drop_rng : &run.rng;
  const auto [lo, hi] = parallel.rows(B);
  const index bl = hi - lo;
  std::uniform_int_distribution<index> pick(0, n - T - 1);
  for (index b = 0; b < B; ++b) {  // x[b] = train[start, start + T), y[b] = the same shifted by 1
    const index start = pick(run.rng);
    for (index j = 0; j < T; ++j) {
      x[static_cast<std::size_t>(b * T + j)] = train[static_cast<std::size_t>(start + j)];
      y[static_cast<std::size_t>(b * T + j)] = train[static_cast<std::size_t>(start + j + 1)];
    }
  }
  token_input in;  // this process's rows [lo, hi) of the batch: (bl·T)
  in.batch = bl;
  in.t = T;
  in.tokens = std::span<const index>(x).subspan(static_cast<std::size_t>(lo * T),
                                                static_cast<std::size_t>(bl * T));
  params.zero_grad();
  double loss = 0;
  if (bl > 0) {
    loss = m.forward(in,
                     std::span<const index>(y).subspan(static_cast<std::size_t>(lo * T),
                                                       static_cast<std::size_t>(bl * T)),
                     fwd_rng);
    m.backward();
  }
  loss = parallel.reduce(params.grads(), loss, bl, B);  // gradients and loss of the whole batch
  if (!std::isfinite(loss))
    throw std::runtime_error(
        fmt::format("training diverged at iteration {}: the loss is {} (try a lower learning rate)",
                    run.it + 1, loss));
  if (p.clip > 0) optim::clip_grad_norm<float>(params.grads(), p.clip);
  const optim::lr_schedule sched{p.lr, p.min_lr, p.warmup, p.iters};
  run.opt.step(params.values(), params.grads(), sched.at(run.it));
  return loss;
}

}  // namespace

// Trains m for p.iters iterations (from a resumed state's iteration when given), evaluating every
// p.eval_every and at the end; bit-identical losses for the same seed, machine and threads.
lm_train_result lm_train(token_model<float>& m, std::span<const index> train,
                         std::span<const index> val, const lm_preset& p, std::uint64_t seed,
                         const lm_progress& progress, const data_parallel& parallel,
                         const lm_checkpointing& checkpointing) {
  const index T = m.config().context, B = p.batch;
  const index n = static_cast<index>(train.size());
  if (n < T + 2)
    throw std::invalid_argument(fmt::format(
        "the training text has {} tokens; the context of {} needs at least {}", n, T, T + 2));
  auto& params = m.params();
  // Every process draws the whole batch from the common generator, computes its windows and
  // draws dropout from a generator of its own (data_parallel.hpp).
  lm_run run{lm_optimizer(params, p.lr, p.weight_decay),
             std::mt19937_64(seed),
             std::mt19937_64(parallel.dropout_seed(seed)),
             0,
             {}};
  if (checkpointing.resume) resume_lm(run, *checkpointing.resume, p);
  // A finished run resumed: nothing to train, and its state still reaches the final checkpoint.
  if (checkpointing.resume && run.it >= p.iters && checkpointing.on_checkpoint)
    checkpointing.on_checkpoint(save_lm(run));
  std::vector<index> x(static_cast<std::size_t>(B * T)), y(x.size());  // (B·T), reused per step
  const double t0 = now_seconds();
  double train_seconds = 0;  // steps only, not evaluations: the tokens-per-second figure
  const index first = run.it;
  for (; run.it < p.iters;) {
    const double s0 = now_seconds();
    const double loss = lm_step(m, train, p, parallel, run, x, y);
    train_seconds += now_seconds() - s0;
    run.r.losses.push_back(loss);
    ++run.it;
    const lm_eval_point* evp = nullptr;
    if ((p.eval_every > 0 && run.it % p.eval_every == 0) || run.it == p.iters) {
      lm_eval_point ev;
      ev.iter = run.it;
      ev.val_loss = val.size() > 1 ? lm_evaluate(m, val, p.eval_windows) : NAN;
      ev.train_loss = lm_evaluate(m, train, p.eval_windows);
      ev.seconds = now_seconds() - t0;
      run.r.evals.push_back(ev);
      evp = &run.r.evals.back();
    }
    if (progress) progress(run.it, p.iters, loss, evp);
    if (checkpointing.save_every > 0 && checkpointing.on_checkpoint &&
        (run.it % checkpointing.save_every == 0 || run.it == p.iters))
      checkpointing.on_checkpoint(save_lm(run));
  }
  run.r.seconds = now_seconds() - t0;
  run.r.tokens_per_second =
      train_seconds > 0 ? double((p.iters - first) * B * T) / train_seconds : 0.0;
  return run.r;
}

// The files of kFiles present in dir, in that order (missing ones skipped); none found throws.
std::string lm_default_corpus(const std::string& dir) {
  // English prose and quotations; no ASCII art, no offensive/political/ethnic files.
  static const char* kFiles[] = {
      "fortunes",  "literature", "wisdom",  "people",   "science", "humorists",    "platitudes",
      "education", "work",       "love",    "food",     "tao",     "goedel",       "paradoxum",
      "magic",     "pets",       "riddles", "medicine", "sports",  "miscellaneous"};
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir))
    throw std::runtime_error(fmt::format(
        "{}: no such directory; the default corpus is Debian's 'fortunes' package "
        "(apt-get install fortunes, or bash scripts/install_deps.sh) — or pass --corpus FILE",
        dir));
  std::string out;
  for (const char* f : kFiles) {
    const fs::path path = fs::path(dir) / f;
    if (!fs::exists(path)) continue;
    const std::string s = io::read_file(path.string());
    std::size_t i = 0;
    while (i < s.size()) {
      std::size_t e = s.find('\n', i);
      if (e == std::string::npos) e = s.size();
      const std::string_view line(s.data() + i, e - i);
      if (line == "%")
        out += '\n';  // separator between fortunes: a blank line
      else
        out.append(line).push_back('\n');
      i = e + 1;
    }
  }
  if (out.empty()) throw std::runtime_error(fmt::format("{}: no fortune files found", dir));
  return out;
}

}  // namespace kf::model
