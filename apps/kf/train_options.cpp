#include "train_options.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cmath>

#include "common.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/periodic_experiment.hpp"

namespace kf::cli {

void add_regressor_flags(CLI::App* sub, regressor_flags& f, const regressor_defaults& d) {
  sub->add_option(
         "--config", f.config,
         "quick (seconds) | code (d 128, as the authors' code runs) | paper (d 512, PE 128)")
      ->capture_default_str();
  sub->add_option("--kernel", f.kernel,
                  "attention kernel: exp_dot, gaussian:h=…, periodic, …; linear time: elu1, "
                  "favor:features=R (redraw=1: fresh features every step)")
      ->capture_default_str();
  sub->add_option("--seed", f.seed, "seed for initialization, shuffling and dropout")
      ->capture_default_str();
  sub->add_option("--epochs", f.epochs, d.epochs_help);
  sub->add_option(
      "--batch", f.batch,
      fmt::format("batch size (default: {} quick, {} otherwise)", d.batch_quick, d.batch));
  sub->add_option(
      "--lr", f.lr,
      fmt::format("Adam learning rate (default: {:g} quick, {:g} otherwise)", d.lr_quick, d.lr));
  sub->add_flag("--pre-ln", f.norm_first, "pre-LN blocks (an improvement option; default post-LN)");
  sub->add_flag("--scale-inputs", f.scale_inputs,
                "divide each window by its RMS and scale the prediction back (an improvement "
                "option: the network sees shapes, not amplitudes)");
  sub->add_flag("--cosine-lr", f.cosine_lr,
                "warmup over 5% of the steps, then cosine decay to 0 (an improvement option)");
  sub->add_option("--dropout", f.dropout,
                  "dropout probability (default: 0.1, as seed 003's code; another value is an "
                  "improvement option)")
      ->check(CLI::Range(0.0, 0.999));
  sub->add_option("--clip", f.clip, "clip the gradient norm at this value (0: off)");
  sub->add_option("--save", f.save, d.save_help);
  sub->add_option("--summary", f.summary, d.summary_help);
  sub->add_option("--out", f.out, d.out_help);
  sub->add_flag("--quiet", f.quiet, "print nothing on success");
}

model::regressor_config regressor_flags_config(const regressor_flags& f, index seq_len) {
  model::regressor_config cfg;
  try {
    cfg = model::periodic_config(f.config);
    cfg.block.kernel = kernel_parse(f.kernel);
  } catch (const std::invalid_argument& e) {
    throw user_error(e.what());
  }
  cfg.seq_len = seq_len;
  cfg.block.norm_first = f.norm_first;
  cfg.scale_inputs = f.scale_inputs;
  if (f.dropout >= 1 || !std::isfinite(f.dropout))
    throw user_error(fmt::format("--dropout {}: expected a probability in [0, 1)", f.dropout));
  if (f.dropout >= 0) cfg.block.dropout = f.dropout;
  return cfg;
}

model::train_options regressor_flags_train(const regressor_flags& f, const regressor_defaults& d) {
  if (f.epochs < 0) throw user_error("--epochs must be positive");
  if (f.batch < 0) throw user_error("--batch must be at least 1");
  if (f.lr < 0 || !std::isfinite(f.lr)) throw user_error("--lr must be positive");
  if (f.clip < 0 || !std::isfinite(f.clip))
    throw user_error("--clip must be positive (0: no clipping)");
  const bool quick = f.config == "quick";
  model::train_options to;
  to.epochs = f.epochs > 0 ? f.epochs : quick ? d.epochs_quick : d.epochs;
  to.batch = f.batch > 0 ? f.batch : quick ? d.batch_quick : d.batch;
  to.lr = f.lr > 0 ? f.lr : quick ? d.lr_quick : d.lr;
  to.seed = f.seed;
  to.cosine_lr = f.cosine_lr;
  to.clip = f.clip;
  return to;
}

void check_train_files(const train_files& f) {
  if (!f.save.empty()) require_output_under(f.save, "--save", {".safetensors"}, f.out);
  if (!f.summary.empty()) require_output_under(f.summary, "--summary", {".json"}, f.out);
  // The folder is checked now and created only when the run's outputs are staged, so a failed
  // or interrupted run leaves no empty folder behind.
  if (!f.out.empty()) check_output_dir(f.out, "--out");
}

void regressor_flags_check_outputs(const regressor_flags& f) {
  check_train_files({f.save, f.summary, f.out});
}

std::map<std::string, std::string> regressor_flags_run(const regressor_flags& f,
                                                       const model::regressor_config& cfg,
                                                       const model::train_options& to) {
  return {{"--config", f.config},
          {"--kernel", kernel_format(cfg.block.kernel)},
          {"--seed", std::to_string(f.seed)},
          {"--epochs", std::to_string(to.epochs)},
          {"--batch", std::to_string(to.batch)},
          {"--lr", fmt::format("{:.17g}", to.lr)},
          {"--clip", fmt::format("{:.17g}", to.clip)},
          {"--dropout", fmt::format("{:.17g}", cfg.block.dropout)},
          {"--cosine-lr", to.cosine_lr ? "true" : "false"},
          {"--pre-ln", cfg.block.norm_first ? "true" : "false"},
          {"--scale-inputs", cfg.scale_inputs ? "true" : "false"}};
}

void check_checkpoint_options(index save_every, const std::string& resume, const std::string& save,
                              const char* unit) {
  if (save_every < 0) throw user_error(fmt::format("--save-every must be >= 1 ({})", unit));
  if (save_every > 0 && save.empty())
    throw user_error("--save-every needs --save (the checkpoints are written there)");
  if ((save_every > 0 || !resume.empty()) && dist::size() > 1)
    throw user_error("--resume and --save-every run in one process, not under mpirun");
}

model::train_state load_resume(const std::string& path, nn::parameters<float>& params,
                               const std::string& config,
                               const std::map<std::string, std::string>& run) {
  require_extension(path, "--resume", {".safetensors"});
  try {
    const model::checkpoint ck = model::checkpoint_load(path);
    auto st = model::train_state_decode(ck, params.count());
    if (!st)
      throw std::runtime_error(
          "holds no training state (a final model: the checkpoints --save-every writes carry it)");
    model::train_state_check_run(*st, run);
    model::checkpoint_check_shapes(ck, params, config);
    model::checkpoint_apply(ck, params);
    return *st;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw user_error(what.rfind(path + ":", 0) == 0 ? "--resume " + what
                                                    : fmt::format("--resume {}: {}", path, what));
  }
}

}  // namespace kf::cli
