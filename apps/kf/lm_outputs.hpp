// What kf train lm writes and prints: the JSON summary (corpus, tokens, config, losses, speed,
// MPI), the files of its --out folder — loss.csv (per iteration), eval.csv (per evaluation),
// loss.png/svg, summary.json and sample.txt — the checkpoint, and the lines before and after
// training.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/lm_train.hpp"
#include "kernelformer/text/tokenizer.hpp"
#include "train_options.hpp"

namespace kf::cli {

struct lm_run {
  const std::string& corpus;  // its name: the file, or "fortunes (Debian package)"
  std::size_t corpus_bytes;
  const std::string& tokenizer;  // char | word
  const std::string& config;     // tiny | small
  const text::tokenizer& tok;
  std::size_t train_tokens, val_tokens;
  index val_unknown;  // validation pieces outside the vocabulary
  const model::lm_preset& preset;
  std::uint64_t seed;
  index parameters;
  const model::lm_train_result& tr;
};

nlohmann::json lm_summary(const lm_run& r);

// The lines before training: the corpus and its tokens, the configuration and the run (not r.tr).
void print_lm_start(const lm_run& r);
// The lines after: the losses, what was saved (SAVE) and written (OUT), and the SAMPLE.
void print_lm_result(const lm_run& r, const std::string& save, const std::string& out,
                     const std::string& sample);

// Stages the files under dir in w (committed by the caller); sample: text the model wrote.
void stage_lm_outputs(io::atomic_writer& w, const std::string& dir, const lm_run& r,
                      const nlohmann::json& summary, const std::string& sample);

// The training state the last checkpoint callback hands over: it rides along with the final
// --save (so the finished run can be resumed from too).
struct lm_final_state {
  std::vector<model::checkpoint_tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// On rank 0 after training: F.save (the weights of M with the config, the tokenizer, the RUN
// options as "trained_by" and LAST), F.summary and the F.out folder (with a sample the model
// writes), staged and committed together. Returns the sample ("" without F.out).
std::string write_lm_outputs(const lm_run& r, model::token_model<float>& m, const train_files& f,
                             const std::map<std::string, std::string>& run,
                             const lm_final_state& last);

}  // namespace kf::cli
