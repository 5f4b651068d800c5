// The options every `kf train` of the sequence regressor takes (kf train periodic, kf train
// series): the configuration, the attention kernel, the improvement options (--batch,
// --cosine-lr, --dropout, --pre-ln, --scale-inputs), the optimizer and the outputs. Declared and
// checked once, so both commands spell, default and refuse them alike.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <string>

#include "kernelformer/model/regressor_train.hpp"
#include "kernelformer/model/sequence_regressor.hpp"

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

// Checks --save, --summary and --out before any work (nothing is created yet).
void regressor_flags_check_outputs(const regressor_flags& f);

// The options that define a run, as "--flag" → value (a resume compares them; a checkpoint's
// "trained_by" spells them back).
std::map<std::string, std::string> regressor_flags_run(const regressor_flags& f,
                                                       const model::regressor_config& cfg,
                                                       const model::train_options& to);

}  // namespace kf::cli
