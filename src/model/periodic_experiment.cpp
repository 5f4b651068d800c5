#include "kernelformer/model/periodic_experiment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <random>
#include <stdexcept>

#include "kernelformer/optim/adamw.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/smooth.hpp"

namespace kf::model {

periodic_function periodic_function_parse(const std::string& name) {
  if (name == "sin") return periodic_function::sin;
  if (name == "sin-exp" || name == "sin_exp") return periodic_function::sin_exp;
  if (name == "square") return periodic_function::square;
  throw std::invalid_argument("unknown function '" + name + "' (sin, sin-exp, square)");
}

std::string periodic_function_name(periodic_function f) {
  return f == periodic_function::sin       ? "sin"
         : f == periodic_function::sin_exp ? "sin-exp"
                                           : "square";
}

double periodic_value(periodic_function f, double x) {
  switch (f) {
    case periodic_function::sin:
      return std::sin(x);
    case periodic_function::sin_exp:
      return std::sin(x) * std::exp(0.01 * x);
    case periodic_function::square: {
      const double two_pi = 2 * std::numbers::pi;
      const double r = x - two_pi * std::floor(x / two_pi);  // scipy.signal.square: duty 0.5
      return r < std::numbers::pi ? 1.0 : -1.0;
    }
  }
  return 0;
}

periodic_data periodic_make(periodic_function f) {
  periodic_data d;
  const index n = periodic_data::kSeries, w = periodic_data::kWindow;
  d.series.resize(static_cast<std::size_t>(n));
  for (index t = 0; t < n; ++t)
    d.series[static_cast<std::size_t>(t)] = periodic_value(f, 0.1 * double(t));
  const index samples = n - w;  // 901
  d.train_x = matrix<float>(samples, w);
  d.train_y.resize(static_cast<std::size_t>(samples));
  for (index i = 0; i < samples; ++i) {
    for (index j = 0; j < w; ++j)
      d.train_x(i, j) = static_cast<float>(d.series[static_cast<std::size_t>(i + j)]);
    d.train_y[static_cast<std::size_t>(i)] =
        static_cast<float>(d.series[static_cast<std::size_t>(i + w)]);
  }
  d.context.assign(d.series.end() - w, d.series.end());
  for (index j = 0; j < periodic_data::kSteps; ++j) {
    const double x = 100.0 + 0.1 * double(j);
    d.test_x.push_back(x);
    d.test_y.push_back(periodic_value(f, x));
  }
  return d;
}

forecast periodic_forecast(const periodic_data& d, const window_predictor& predict) {
  forecast fc;
  std::vector<double> window = d.context;
  std::vector<double> truth = d.context;  // the true series, for teacher forcing
  for (std::size_t s = 0; s < d.test_y.size(); ++s) {
    const double p = predict(window);
    const double tf =
        predict(std::vector<double>(truth.end() - periodic_data::kWindow, truth.end()));
    fc.rollout.push_back(p);
    fc.teacher_forced.push_back(tf);
    window.erase(window.begin());
    window.push_back(p);  // feed the prediction back
    truth.push_back(d.test_y[s]);
    fc.mse_rollout += (p - d.test_y[s]) * (p - d.test_y[s]) / double(d.test_y.size());
    fc.mse_teacher_forced += (tf - d.test_y[s]) * (tf - d.test_y[s]) / double(d.test_y.size());
  }
  return fc;
}

namespace {
double window_rms(const double* w, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += w[i] * w[i];
  const double r = std::sqrt(s / double(n));
  return r > 1e-12 ? r : 1.0;
}
}  // namespace

double nw_forecaster::predict(const std::vector<double>& window) const {
  const double s = scaled ? window_rms(window.data(), window.size()) : 1.0;
  std::vector<double> w = window;
  for (double& x : w) x /= s;
  const matrix<double> q(1, static_cast<index>(w.size()), w);
  matrix<double> out(1, 1);
  const matrix<double> v(static_cast<index>(values.size()), 1, values);
  smooth_forward<double>(out.view(), {}, q.cview(), keys.cview(), v.cview(),
                         kernel_gaussian{bandwidth}, mask::none());
  return out(0, 0) * s;
}

namespace {

// Rollout MSE of a forecaster over the last kSteps training values, its keys restricted to the
// windows whose next value comes before them.
double holdout_rollout_mse(const periodic_data& d, const nw_forecaster& full, double h) {
  const index steps = periodic_data::kSteps, win = periodic_data::kWindow;
  const index first = d.train_x.rows() - steps;  // window whose next value is the first held out
  nw_forecaster f;
  f.scaled = full.scaled;
  f.bandwidth = h;
  f.keys = matrix<double>(first, win);
  std::copy_n(full.keys.data(), first * win, f.keys.data());
  f.values.assign(full.values.begin(), full.values.begin() + first);
  std::vector<double> ctx(d.series.begin() + first, d.series.begin() + first + win);
  double sse = 0;
  for (index s = 0; s < steps; ++s) {
    const std::vector<double> w(ctx.end() - win, ctx.end());
    const double p = f.predict(w);
    const double e = p - d.series[static_cast<std::size_t>(first + win + s)];
    sse += e * e;
    ctx.push_back(p);
  }
  return sse / double(steps);
}

}  // namespace

nw_forecaster nw_forecaster_fit(const periodic_data& d, bool scaled, nw_bandwidth_rule rule) {
  nw_forecaster f;
  f.scaled = scaled;
  f.rule = rule;
  f.keys = matrix<double>(d.train_x.rows(), d.train_x.cols());
  for (index i = 0; i < f.keys.size(); ++i) f.keys.data()[i] = d.train_x.data()[i];
  f.values.assign(d.train_y.begin(), d.train_y.end());
  if (scaled)
    for (index r = 0; r < f.keys.rows(); ++r) {
      double* row = f.keys.data() + r * f.keys.cols();
      const double s = window_rms(row, static_cast<std::size_t>(f.keys.cols()));
      for (index c = 0; c < f.keys.cols(); ++c) row[c] /= s;
      f.values[static_cast<std::size_t>(r)] /= s;
    }
  if (rule == nw_bandwidth_rule::rollout) {
    // A geometric grid over [0.02, 5] (32 points); the smallest h wins a tie.
    f.validation_mse = std::numeric_limits<double>::infinity();
    for (int g = 0; g < 32; ++g) {
      const double h = 0.02 * std::pow(250.0, double(g) / 31.0);
      const double mse = holdout_rollout_mse(d, f, h);
      if (mse < f.validation_mse) {
        f.validation_mse = mse;
        f.bandwidth = h;
      }
    }
    return f;
  }
  // One isotropic bandwidth over the 99-dimensional windows, chosen by leave-one-out CV over
  // h ∈ [0.01, 10] (the windows of adjacent samples are ~0.7 apart).
  const auto r = bandwidth_search(
      [&](const std::vector<double>& h) {
        regression_spec s;
        s.bandwidth = {h[0]};
        return regression_criteria(s, f.keys.cview(), f.values).loo_cv;
      },
      {1.0}, "loo_cv");
  f.bandwidth = r.bandwidth[0];
  f.loo_cv = r.value;
  return f;
}

namespace {

// The mutable state of a training run: what a checkpoint saves and a resume puts back.
struct regressor_run {
  optim::adamw<float> opt;
  std::mt19937_64 rng, drop_rng;
  std::vector<index> order;
  index epoch = 0, step = 0;
  train_result r;
};

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
  run.opt.restore(s.exp_avg, s.exp_avg_sq, s.adam_steps);
  rng_load(run.rng, s.rng, "kf_train.rng");
  rng_load(run.drop_rng, s.dropout_rng, "kf_train.dropout_rng");
  run.order = s.order;
  run.epoch = s.done;
  run.step = s.adam_steps;
  run.r.epoch_loss = s.losses;
  run.r.epoch_seconds = s.seconds;
}

train_state save_run(const regressor_run& run) {
  train_state s;
  s.done = run.epoch;
  s.adam_steps = run.opt.steps();
  s.exp_avg = run.opt.exp_avg();
  s.exp_avg_sq = run.opt.exp_avg_sq();
  s.rng = rng_save(run.rng);
  s.dropout_rng = rng_save(run.drop_rng);
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
  std::mt19937_64* fwd_rng = o.parallel.active() ? &run.drop_rng : &run.rng;
  std::shuffle(run.order.begin(), run.order.end(), run.rng);
  double sum = 0;
  for (index b0 = 0; b0 < n; b0 += o.batch) {
    const index b = std::min(o.batch, n - b0);
    const auto [lo, hi] = o.parallel.rows(b);  // all of it unless data-parallel
    const index bl = hi - lo;
    matrix<float> xb(bl, t);
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
    loss = o.parallel.reduce(m.params().grads(), loss, bl, b);
    if (!std::isfinite(loss))
      throw std::runtime_error(
          fmt::format("training diverged in epoch {}: the loss is {} (try a lower learning rate)",
                      run.epoch + 1, loss));
    sum += loss * double(b);
    if (o.clip > 0) optim::clip_grad_norm(m.params().grads(), o.clip);
    run.opt.step(m.params().values(), m.params().grads(), o.cosine_lr ? sched.at(run.step) : o.lr);
    ++run.step;
  }
  return sum / double(n);
}

}  // namespace

train_result train_regressor(sequence_regressor<float>& m, const matrix<float>& x,
                             const std::vector<float>& y, const train_options& o,
                             const epoch_callback& on_epoch) {
  const index n = x.rows();
  if (static_cast<index>(y.size()) != n) throw std::invalid_argument("train: x and y sizes differ");
  if (o.epochs < 1 || o.batch < 1)
    throw std::invalid_argument("train: epochs and batch must be >= 1");
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
  const optim::lr_schedule sched{o.lr, 0.0, o.cosine_lr ? std::max<index>(1, total / 20) : 0,
                                 o.cosine_lr ? total : 0};
  const auto t_start = std::chrono::steady_clock::now();
  while (run.epoch < o.epochs) {
    const auto t0 = std::chrono::steady_clock::now();
    const double loss = train_epoch(m, x, y, o, run, sched);
    ++run.epoch;
    run.r.epoch_loss.push_back(loss);
    run.r.epoch_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (on_epoch) on_epoch(run.epoch, o.epochs, loss);
    if (o.save_every > 0 && o.on_checkpoint &&
        (run.epoch % o.save_every == 0 || run.epoch == o.epochs))
      o.on_checkpoint(save_run(run));
  }
  run.r.train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return run.r;
}

forecast periodic_forecast_model(const periodic_data& d, sequence_regressor<float>& m) {
  return periodic_forecast(d, [&](const std::vector<double>& w) {
    matrix<float> x(1, static_cast<index>(w.size()));
    for (std::size_t i = 0; i < w.size(); ++i)
      x(0, static_cast<index>(i)) = static_cast<float>(w[i]);
    float p = 0;
    m.forward(x.cview(), std::span<float>(&p, 1), nullptr);
    return double(p);
  });
}

regressor_config periodic_config(const std::string& name) {
  regressor_config c;
  c.seq_len = periodic_data::kWindow;
  c.layers = 2;
  c.block.heads = 2;
  c.block.dropout = 0.1;
  c.block.act = nn::activation::relu;
  if (name == "code") {
    c.block.d_model = 128;
    c.block.d_ff = 128;
  } else if (name == "paper") {
    c.block.d_model = 512;
    c.block.d_ff = 512;
    c.pe_dim = 128;
    c.pe_concat = true;
  } else if (name == "quick") {
    c.layers = 1;
    c.block.d_model = 16;
    c.block.d_ff = 32;
  } else {
    throw std::invalid_argument("unknown configuration '" + name + "' (paper, code, quick)");
  }
  return c;
}

}  // namespace kf::model
