// kernelformer/model/seq2seq.hpp — sequence to sequence with the encoder–decoder token model
// (seed 003 §4.1): character pairs in, greedy decoding out.
//
// Data: built-in tasks generated from a seed — `reverse` (a random string of digits and letters
// → the same string backwards) and `dates` ("2024-03-07" → "7 March 2024") — or a user's file of
// source/target pairs (TSV or CSV, one pair a line). Both need cross-attention: every output
// character is a function of source characters at positions the decoder has to find.
// Tokens: one character tokenizer (text/tokenizer.hpp) shared by source and target, with two
// control bytes as the target's markers: BOS = "\x02" (start of text) starts the decoder's input,
// EOS = "\x03" (end of text) ends its output; <unk> (id 0) as usual. A pair becomes
//   src = x_0 … x_{S−1}   dec_in = BOS y_0 … y_{n−1}   dec_out = y_0 … y_{n−1} EOS
// (decoder position i predicts y_i). Batches pad sources with key padding (src_lengths) and
// targets with ignored positions (−1); the causal mask keeps padded decoder positions out of the
// real ones. Training is teacher-forced cross-entropy with AdamW (model/lm_train.hpp's recipe:
// linear warmup, cosine decay, clipping); decoding is greedy (argmax at every step, each step a
// full forward over the prefix: token_model has no encoder–decoder cache). Same seed, same
// machine and thread count → bit-identical losses.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernelformer/model/token_model.hpp"
#include "kernelformer/text/tokenizer.hpp"

namespace kf::model {

struct seq2seq_pair {
  std::string source, target;
};

// The longest source or target a pair may have (characters): attention is quadratic in it.
inline constexpr index kSeq2seqMaxLength = 256;

// ---- built-in tasks -------------------------------------------------------------------------

// "reverse" | "dates"; anything else throws std::invalid_argument naming the choices.
struct seq2seq_task {
  std::string name;
  index min_length = 3, max_length = 10;  // reverse: string lengths (uniform), 1..kSeq2seqMaxLength
};
seq2seq_task seq2seq_task_get(std::string_view name);

// N distinct pairs (distinct sources) drawn from the seeded generator: reverse — strings over
// 0-9a-z; dates — days uniform in 1950-01-01 … 2049-12-31, "YYYY-MM-DD" → "D Month YYYY".
// Throws std::invalid_argument when the task cannot hold N distinct sources.
std::vector<seq2seq_pair> seq2seq_task_pairs(const seq2seq_task& task, index n, std::uint64_t seed);

// The source positions [first, last) that target character i of PAIR is read from, for the
// alignment measure: reverse — {S−1−i} (the mirrored position); dates — the field of the source
// the character's field comes from (day, month, year; separators: none, {−1, −1}).
std::pair<index, index> seq2seq_task_source_span(const seq2seq_task& task, const seq2seq_pair& pair,
                                                 index i);

// ---- a user's pairs -------------------------------------------------------------------------

// Pairs from TEXT: one pair a line, source and target separated by a tab (SEP '\t') or a comma
// (SEP ','; fields may be double-quoted, "" inside quotes is a quote). CR LF line ends are fine,
// blank lines are skipped, and a first line "source<SEP>target" is a header. Throws
// std::invalid_argument "NAME:LINE: …" on a line without exactly two fields, an empty field, a
// control character, or a field longer than kSeq2seqMaxLength; "NAME: no pairs" when empty.
std::vector<seq2seq_pair> seq2seq_pairs_parse(std::string_view text, const std::string& name,
                                              char sep);
// PATH: .tsv (tab) or .csv (comma); throws std::invalid_argument naming the file.
std::vector<seq2seq_pair> seq2seq_pairs_read(const std::string& path);

// ---- tokens ---------------------------------------------------------------------------------

struct seq2seq_vocab {
  text::tokenizer tok;  // characters of the training pairs + BOS + EOS
  index bos = 0, eos = 0;
  index size() const { return tok.size(); }
  // From training pairs / from a checkpoint's metadata (the tokenizer must hold BOS and EOS:
  // throws std::runtime_error naming what is missing otherwise).
  static seq2seq_vocab build(std::span<const seq2seq_pair> pairs);
  static seq2seq_vocab from_tokenizer(text::tokenizer tok);
  std::vector<index> encode(std::string_view s, index* unknown = nullptr) const {
    return tok.encode(s, unknown);
  }
  // Tokens to text; stops at the first EOS; BOS is dropped.
  std::string decode(std::span<const index> ids) const;
  // A display label per token: BOS "<s>", EOS "</s>", others as tokenizer pieces.
  std::string label(index id) const;
};

// Whether a checkpoint's metadata marks a seq2seq model (kf train seq2seq writes "seq2seq").
bool seq2seq_metadata(const std::map<std::string, std::string>& m);

// ---- configurations and training ------------------------------------------------------------

struct seq2seq_preset {
  std::string name;          // tiny | small
  token_model_config model;  // vocab and context are set from the data (seq2seq_configure)
  index batch = 64, steps = 1000, warmup = 100, eval_every = 200, eval_pairs = 500;
  double lr = 2e-3, min_lr = 2e-4, weight_decay = 0.01, clip = 1.0;
};
// tiny: 2 encoder + 2 decoder layers, 2 heads, width 64, FFN 256 (seconds); small: 3 + 3 layers,
// 4 heads, width 128, FFN 512. Both pre-LN with sinusoidal positions (seed 003 §3.5): with them
// the decoder finds a source position by its offset, and reverse's cross-attention is the clean
// anti-diagonal (learned positions reach the same accuracy, but their heads align by content:
// 16.5% of the weight on the mirrored position, chance 15.7%, against 98.4%; docs/lm.md). Token
// embeddings start at N(0, 0.2²), commensurate with the table (with 0.02 the characters are
// drowned by their positions and training took several times longer to start).
seq2seq_preset seq2seq_preset_get(const std::string& name);

// The vocabulary and the context (longest source, longest target + 1) into p.model.
void seq2seq_configure(seq2seq_preset& p, const seq2seq_vocab& v,
                       std::span<const seq2seq_pair> pairs);

// A padded batch. Rows of src: B × S (padding: EOS, masked by src_lengths); dec_in / dec_out:
// B × T (padding: EOS in, −1 out).
struct seq2seq_batch {
  index batch = 0, s = 0, t = 0;
  std::vector<index> src, dec_in, dec_out, src_lengths;
  token_input input() const;  // views into this batch
};
// PAIRS[ids] encoded; throws std::invalid_argument if one is longer than the model's context.
seq2seq_batch seq2seq_make_batch(const seq2seq_vocab& v, std::span<const seq2seq_pair> pairs,
                                 std::span<const index> ids, index context);

struct seq2seq_eval {
  index step = 0;
  double train_loss = 0, val_loss = 0;  // teacher-forced cross-entropy per target token
  double token_accuracy = 0;            // teacher-forced argmax = target (EOS included)
  double exact_match = 0;               // greedy decoding = the whole target
  double seconds = 0;
};
struct seq2seq_train_result {
  std::vector<double> losses;  // per step
  std::vector<seq2seq_eval> evals;
  double seconds = 0, pairs_per_second = 0;
};
// progress(step_done, steps, last_loss, eval or nullptr) after every step.
using seq2seq_progress = std::function<void(index, index, double, const seq2seq_eval*)>;

// Teacher-forced training: every epoch visits TRAIN in a fresh seeded order, B pairs a step;
// p.steps steps. Evaluates on the first p.eval_pairs of VAL (and of TRAIN for train_loss) every
// p.eval_every steps and after the last. Throws std::invalid_argument on empty TRAIN.
seq2seq_train_result seq2seq_train(token_model<float>& m, const seq2seq_vocab& v,
                                   std::span<const seq2seq_pair> train,
                                   std::span<const seq2seq_pair> val, const seq2seq_preset& p,
                                   std::uint64_t seed, const seq2seq_progress& progress = {});

// Loss, token accuracy and exact match of m on PAIRS (batches of 64); PREDICTIONS, if not null,
// receives the greedy output for each pair. Empty PAIRS: NaN measures.
seq2seq_eval seq2seq_evaluate(token_model<float>& m, const seq2seq_vocab& v,
                              std::span<const seq2seq_pair> pairs,
                              std::vector<std::string>* predictions = nullptr);

// ---- decoding and alignment -----------------------------------------------------------------

// Greedy decoding of token sources, B at a time: from BOS, append the argmax token until EOS or
// until the decoder's input fills the context. Returns the output tokens (EOS not included).
// progress(done, total) after each batch. Throws std::invalid_argument for an empty source or
// one longer than the context.
std::vector<std::vector<index>> seq2seq_greedy(
    token_model<float>& m, const seq2seq_vocab& v, const std::vector<std::vector<index>>& sources,
    index batch = 64, const std::function<void(index, index)>& progress = {});
// The same for text (characters outside the vocabulary become <unk>).
std::vector<std::string> seq2seq_translate(token_model<float>& m, const seq2seq_vocab& v,
                                           std::span<const std::string> sources, index batch = 64,
                                           const std::function<void(index, index)>& progress = {});

// One head's cross-attention on a teacher-forced pair: rows = the target's n + 1 decoder
// positions (row i predicts target character i; row n predicts EOS), columns = source characters.
matrix<float> seq2seq_cross_attention(token_model<float>& m, const seq2seq_vocab& v,
                                      const seq2seq_pair& pair, index layer, index head);

// How much of each cross-attention head's weight lands where the task says a character comes
// from: per decoder layer × head, the mean over PAIRS (teacher-forced) and target characters with
// a source span (seq2seq_task_source_span) of the weight on that span. chance: the same mean for
// uniform attention over the source (span length / S).
struct seq2seq_alignment {
  std::vector<double> per_head;  // layer-major, decoder_layers × heads
  index best_layer = 0, best_head = 0;
  double best = 0, chance = 0;
  index characters = 0;  // target characters counted
};
seq2seq_alignment seq2seq_cross_alignment(token_model<float>& m, const seq2seq_vocab& v,
                                          const seq2seq_task& task,
                                          std::span<const seq2seq_pair> pairs);

}  // namespace kf::model
