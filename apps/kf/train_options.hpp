// The options every `kf train` of the sequence regressor takes (kf train periodic, kf train
// series): the configuration, the attention kernel, the improvement options (--batch,
// --cosine-lr, --dropout, --pre-ln, --scale-inputs), the optimizer and the outputs. Declared and
// checked once, so both commands spell, default and refuse them alike. Also what the other kf
// train commands share: the output files (every one), --save-every and --resume (periodic, lm).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "kernelformer/model/regressor_train.hpp"
#include "kernelformer/model/sequence_regressor.hpp"
#include "kernelformer/model/train_state.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace kf::cli {

struct regressor_flags {
  std::string config = "quick", kernel = "exp_dot", save, summary, out;
  std::uint64_t seed = 0;
  index epochs = 0, batch = 0;  // 0: the command's default for the configuration
  double lr = 0;
  bool norm_first = false, scale_inputs = false, cosine_lr = false, quiet = false;
  double clip = 0;
  double dropout = -1;  // < 0: the configuration's (0.1, as in seed 003's code)
};

// What differs between the commands: the defaults (per configuration: quick, or the others) and
// the help of the options whose meaning does.
struct regressor_defaults {
  index epochs_quick, epochs, batch_quick, batch;
  double lr_quick, lr;
  std::string epochs_help, save_help, summary_help, out_help;
};

// Adds --config, --kernel, --seed, --epochs, --batch, --lr, --pre-ln, --scale-inputs,
// --cosine-lr, --dropout, --clip, --save, --summary, --out, --quiet.
void add_regressor_flags(CLI::App* sub, regressor_flags& f, const regressor_defaults& d);

// The model configuration (periodic_config's quick | code | paper with the flags applied) for
// windows of seq_len values; throws user_error naming the option.
model::regressor_config regressor_flags_config(const regressor_flags& f, index seq_len);

// The optimizer's settings, defaults filled in; throws user_error for a value out of range.
model::train_options regressor_flags_train(const regressor_flags& f, const regressor_defaults& d);

// The files every kf train writes (empty: not asked for): --save MODEL.safetensors and --summary
// SUMMARY.json, which may lie inside the --out folder.
struct train_files {
  std::string save, summary, out;
};
// Checks them before any work; nothing is created yet, so a failed or interrupted run leaves no
// empty folder behind.
void check_train_files(const train_files& f);

// Checks --save, --summary and --out before any work (check_train_files).
void regressor_flags_check_outputs(const regressor_flags& f);

// The options that define a run, as "--flag" → value (a resume compares them; a checkpoint's
// "trained_by" spells them back).
std::map<std::string, std::string> regressor_flags_run(const regressor_flags& f,
                                                       const model::regressor_config& cfg,
                                                       const model::train_options& to);

// --save-every N (UNIT: "epochs" or "iterations") and --resume: N >= 0, N > 0 needs --save (the
// checkpoints are written there), and neither runs under mpirun. Throws user_error.
void check_checkpoint_options(index save_every, const std::string& resume, const std::string& save,
                              const char* unit);

// --resume PATH: its training state, after its run options were compared with RUN and its
// tensors with PARAMS (the model CONFIG describes); then its weights are copied into PARAMS.
// Every failure is a user_error naming the file and what does not fit.
model::train_state load_resume(const std::string& path, nn::parameters<float>& params,
                               const std::string& config,
                               const std::map<std::string, std::string>& run);

}  // namespace kf::cli
