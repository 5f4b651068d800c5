// kf train periodic — seed 003's experiment: train the encoder on one periodic function and
// forecast 200 steps by rollout (../shared/docs/periodic-protocol.md).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/periodic_experiment.hpp"
#include "kernelformer/model/train_state.hpp"
#include "periodic_outputs.hpp"
#include "train_options.hpp"

namespace kf::cli {
namespace {

struct periodic_options {
  std::string function = "sin";
  regressor_flags train;  // the options every kf train of the regressor shares
  std::string resume;     // a checkpoint written by --save-every
  index save_every = 0;
};

// The protocol's settings (Adam 1e-3, batch 512, 100 epochs); quick: 20 epochs of 64 at 3e-3.
const regressor_defaults kPeriodicDefaults{
    20,
    100,
    64,
    512,
    3e-3,
    1e-3,
    "epochs (default: 20 quick, 100 otherwise)",
    "MODEL.safetensors (PyTorch state_dict names)",
    "SUMMARY.json: test_mse_rollout, epoch_seconds_median, …",
    "directory: loss.csv/png, prediction.csv/png (Fig. 3), attention.csv/png (Fig. 4), "
    "summary.json"};

// The options that define a run: a resume must repeat them (train_state_check_run).
std::map<std::string, std::string> run_options(const periodic_options& o,
                                               const model::regressor_config& cfg,
                                               const model::train_options& to) {
  auto run = regressor_flags_run(o.train, cfg, to);
  run["--function"] = o.function;
  return run;
}

model::periodic_function parse_function(const std::string& name) {
  try {
    return model::periodic_function_parse(name);
  } catch (const std::invalid_argument& e) {
    throw user_error(e.what());
  }
}

// Every save_every epochs: the weights and the training state, written atomically to --save
// (a kill -9 leaves the previous checkpoint whole). The last state rides along with the final
// --save instead (so it too can be resumed from): encoded into final_checkpoint. The callback
// refers to cfg, m, run and final_checkpoint, which must outlive the training.
void set_checkpointing(model::train_options& to, const periodic_options& p,
                       const model::regressor_config& cfg, model::sequence_regressor<float>& m,
                       const std::map<std::string, std::string>& run,
                       std::string& final_checkpoint) {
  to.save_every = p.save_every;
  const index epochs = to.epochs;
  const std::string& save = p.train.save;
  to.on_checkpoint = [&cfg, &m, &run, &final_checkpoint, &save,
                      epochs](const model::train_state& st) {
    model::train_state s = st;
    s.run = run;
    auto md = cfg.to_metadata();
    std::vector<model::checkpoint_tensor> extra;
    model::train_state_encode(s, md, extra);
    if (st.done == epochs) {
      final_checkpoint = model::checkpoint_encode(m.params(), md, extra);
      return;
    }
    make_output_parent(save, "--save");
    io::write_file_atomic(save, model::checkpoint_encode(m.params(), md, extra));
  };
}

// summary.json (--summary, and in --out): the run's options, the losses and the timing.
nlohmann::json periodic_summary(const periodic_options& p, const model::regressor_config& cfg,
                                const model::train_options& to, index parameters,
                                const model::train_result& tr, const model::forecast& fc,
                                double epoch_seconds_median) {
  const regressor_flags& o = p.train;
  nlohmann::json js;
  js["function"] = p.function;
  js["config"] = o.config;
  js["kernel"] = kernel_format(cfg.block.kernel);
  js["seed"] = o.seed;
  js["epochs"] = to.epochs;
  js["norm_first"] = o.norm_first;
  js["scale_inputs"] = o.scale_inputs;
  js["cosine_lr"] = o.cosine_lr;
  js["clip"] = o.clip;
  js["dropout"] = cfg.block.dropout;
  js["parameters"] = parameters;
  js["final_train_loss"] = tr.epoch_loss.back();
  js["test_mse_rollout"] = fc.mse_rollout;
  js["test_mse_teacher_forced"] = fc.mse_teacher_forced;
  js["epoch_seconds_median"] = epoch_seconds_median;
  js["train_seconds"] = tr.train_seconds;
  // What this rank handed to MPI (its gradient all-reduces) and the wall time inside MPI.
  add_mpi_summary(js);
  return js;
}

// After training, on rank 0: the forecast, every output staged and committed together, the
// result printed.
void finish(const periodic_options& p, const model::regressor_config& cfg,
            const model::train_options& to, const model::periodic_data& data,
            model::sequence_regressor<float>& m, const model::train_result& tr,
            const std::map<std::string, std::string>& run_opts,
            const std::string& final_checkpoint) {
  const regressor_flags& o = p.train;
  const auto fc = model::periodic_forecast_model(data, m);
  std::vector<double> secs = tr.epoch_seconds;
  std::sort(secs.begin(), secs.end());
  const double median = secs[secs.size() / 2];
  const nlohmann::json js = periodic_summary(p, cfg, to, m.params().count(), tr, fc, median);

  io::atomic_writer w{io::staging{.make_folders = true}};  // folders made, or removed on a failure
  if (!o.save.empty()) {
    // How the weights were made, for whoever evaluates them later (kf report states it).
    auto md = cfg.to_metadata();
    md["trained_by"] = run_command("kf train periodic", run_opts);
    md["train_seconds"] = fmt::format("{:.1f}", tr.train_seconds);
    md["test_mse_rollout"] = fmt::format("{:.6g}", fc.mse_rollout);
    w.stage(o.save, !final_checkpoint.empty() ? final_checkpoint
                                              : model::checkpoint_encode(m.params(), md));
  }
  if (!o.summary.empty()) w.stage(o.summary, js.dump(2) + "\n");
  if (!o.out.empty()) {
    w.stage(o.out + "/summary.json", js.dump(2) + "\n");
    stage_periodic_outputs(w, o.out, {p.function, o.config, cfg, data, fc, tr}, m);
  }
  w.commit();
  if (o.quiet) return;
  fmt::print(
      "final train loss {:.4g}; test MSE: rollout {:.4g}, teacher-forced {:.4g}; "
      "{:.2f} s/epoch (median), {:.1f} s total\n",
      tr.epoch_loss.back(), fc.mse_rollout, fc.mse_teacher_forced, median, tr.train_seconds);
}

void run(const periodic_options& p) {
  const regressor_flags& o = p.train;
  const model::periodic_function fn = parse_function(p.function);
  const model::regressor_config cfg = regressor_flags_config(o, model::periodic_data::kWindow);
  model::train_options to = regressor_flags_train(o, kPeriodicDefaults);
  check_checkpoint_options(p.save_every, p.resume, o.save, "epochs");
  regressor_flags_check_outputs(o);
  const model::periodic_data data = model::periodic_make(fn);
  model::sequence_regressor<float> m(cfg, o.seed);
  to.parallel = mpi_data_parallel();
  const auto run_opts = run_options(p, cfg, to);
  model::train_state resumed;
  if (!p.resume.empty()) {
    resumed = load_resume(p.resume, m.params(), m.config().describe(), run_opts);
    to.resume = &resumed;
    if (resumed.done >= to.epochs && !o.quiet && dist::is_root())
      fmt::print(
          "kf train periodic: --resume {}: that run already finished its {} epochs; "
          "nothing to train, its outputs are written again\n",
          p.resume, to.epochs);
  }
  std::string final_checkpoint;
  set_checkpointing(to, p, cfg, m, run_opts, final_checkpoint);
  if (!o.quiet && dist::is_root())
    fmt::print(
        "kf train periodic: {} ({} config: d {}, H {}, {} layers, {} parameters), kernel {}, "
        "seed {}, {} epochs{}\n",
        p.function, o.config, cfg.block.d_model, cfg.block.heads, cfg.layers, m.params().count(),
        kernel_describe(cfg.block.kernel), o.seed, to.epochs,
        dist::size() > 1 ? fmt::format(", data-parallel over {} MPI ranks", dist::size()) : "");
  model::train_result tr;
  {
    progress_bar bar("training");
    tr = model::train_regressor(
        m, data.train_x, data.train_y, to,
        [&](index e, index total, double) { bar.update(int(e), int(total)); });
  }
  if (!dist::is_root()) return;  // every rank holds the same model: rank 0 writes
  finish(p, cfg, to, data, m, tr, run_opts, final_checkpoint);
}

}  // namespace

void add_train(CLI::App& app) {
  CLI::App* train = app.add_subcommand(
      "train",
      "Train a model: periodic (seed 003's experiment), series (forecast your own series), lm "
      "(a small language model) or seq2seq (an encoder-decoder over characters)");
  train->require_subcommand(1);
  add_train_lm(train);
  add_train_seq2seq(train);
  auto o = std::make_shared<periodic_options>();
  CLI::App* sub = train->add_subcommand(
      "periodic", "Train the encoder on sin, sin-exp or square and forecast 200 steps by rollout");
  sub->add_option("--function", o->function, "sin | sin-exp | square")->capture_default_str();
  add_regressor_flags(sub, o->train, kPeriodicDefaults);
  sub->add_option("--save-every", o->save_every,
                  "every N epochs, write --save with the training state (optimizer, generators, "
                  "data order), atomically");
  sub->add_option("--resume", o->resume,
                  "CHECKPOINT.safetensors written by --save-every: continue that run (same "
                  "options) exactly where it stopped");
  sub->footer(
      "Examples:\n"
      "  kf train periodic --function sin --config quick --out runs/sin\n"
      "  kf train periodic --config code --save sin.safetensors --save-every 10\n"
      "  kf train periodic --config code --save sin.safetensors --save-every 10 --resume "
      "sin.safetensors\n"
      "  kf train periodic --function square --config code --seed 1 --save square.safetensors");
  sub->callback([o] { run(*o); });
  add_train_series(train);
}

}  // namespace kf::cli
