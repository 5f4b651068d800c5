// What kf train lm writes: the JSON summary (corpus, tokens, config, losses, speed, MPI) and the
// files of its --out folder — loss.csv (per iteration), eval.csv (per evaluation), loss.png/svg,
// summary.json and sample.txt.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/lm_train.hpp"
#include "kernelformer/text/tokenizer.hpp"

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

// Stages the files under dir in w (committed by the caller); sample: text the model wrote.
void stage_lm_outputs(io::atomic_writer& w, const std::string& dir, const lm_run& r,
                      const nlohmann::json& summary, const std::string& sample);

}  // namespace kf::cli
