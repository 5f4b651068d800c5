// kf train seq2seq's outputs (seq2seq_outputs.cpp): the summary; in --out, loss and accuracy
// curves, the cross-attention map of one validation pair, the validation predictions; the
// checkpoint; the lines it prints after training.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/seq2seq.hpp"
#include "train_options.hpp"

namespace kf::cli {

// The validation pairs the alignment is measured on (the first ones).
inline constexpr std::size_t kSeq2seqAlignmentPairs = 200;

struct seq2seq_run {
  std::string config, positions, data;  // "tiny", "sinusoidal", "reverse (lengths 3..10)" / file
  std::uint64_t seed = 0;
  std::optional<model::seq2seq_task> task;  // built-in tasks
  index train_pairs = 0, val_unknown = 0;   // val_unknown: characters outside the vocabulary
  const std::vector<model::seq2seq_pair>* val = nullptr;
  std::vector<std::string> predictions;  // greedy output per validation pair
  model::seq2seq_train_result tr;
  std::optional<model::seq2seq_alignment> alignment;  // built-in tasks only
};

// summary.json: the run, the final validation FIN, the evaluations, the first validation pair's
// output, the cross-attention alignment (null for a user's pairs).
nlohmann::json seq2seq_summary(const seq2seq_run& r, const model::seq2seq_preset& p,
                               const model::seq2seq_eval& fin, index parameters);

// Stages DIR/loss.csv, eval.csv, loss.png/svg, accuracy.png, cross_attention.png/csv (every
// decoder layer × head on the first validation pair, token labels) and predictions.tsv.
void stage_seq2seq_outputs(io::atomic_writer& w, const std::string& dir, const seq2seq_run& r,
                           model::token_model<float>& m, const model::seq2seq_vocab& v);

// F.save (the weights of M with the metadata MD), F.summary (JS) and the F.out folder (JS and
// stage_seq2seq_outputs' files), staged and committed together.
void write_seq2seq_outputs(const seq2seq_run& r, model::token_model<float>& m,
                           const model::seq2seq_vocab& v, const train_files& f,
                           const std::map<std::string, std::string>& md, const nlohmann::json& js);

// The lines after training: the final validation FIN, the first validation pair's output, the
// alignment (built-in tasks). The files written are listed by kf itself at the end.
void print_seq2seq_result(const seq2seq_run& r, const model::seq2seq_eval& fin);

}  // namespace kf::cli
