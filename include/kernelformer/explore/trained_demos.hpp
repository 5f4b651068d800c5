// kernelformer/explore/trained_demos.hpp — the report's demonstrations on trained models, as
// data (kf report's periodic and language-model sections draw them; nothing here prints or
// writes a file).
//
// Seed 003 §5: a periodic-experiment Transformer (model/periodic_experiment.hpp) evaluated
// beside the two Nadaraya–Watson forecasters, and its Fig. 4 — layer 2, head 1 on the test
// context, a (99, 99) map whose checkerboard has the data's period (2π / 0.1 ≈ 63 positions),
// measured by the map's autocorrelation at one period and at half a period.
// Seed 000: a word-level language model's attention on one sentence, every layer × head.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/periodic_experiment.hpp"
#include "kernelformer/model/periodic_reference.hpp"
#include "kernelformer/model/token_model.hpp"
#include "kernelformer/tensor.hpp"
#include "kernelformer/text/tokenizer.hpp"

namespace kf::demo {

// --- seed 003 §5 ------------------------------------------------------------------------------

// Trains the code configuration in setting S on the function's 901 windows (seed: weights and
// batches). on_epoch: progress, called after every epoch.
std::unique_ptr<model::sequence_regressor<float>> periodic_train(
    const model::periodic_data& data, const model::periodic_setting& s, std::uint64_t seed,
    const model::epoch_callback& on_epoch = {});

// The Nadaraya–Watson forecasters of one function (attention with a fixed Gaussian kernel over
// the 901 training windows): bandwidth by LOO-CV; the same on RMS-scaled windows; and, when
// asked (another bandwidth search), by a rollout over the training series' own end. The last two
// are improvement options, reported apart from the first.
struct nw_baselines {
  model::forecast loo, scaled, validated;  // validated: empty unless asked for
  double validated_bandwidth = 0;
};
nw_baselines periodic_nw_baselines(const model::periodic_data& data, bool rollout_validated);

struct periodic_evaluation {
  model::forecast transformer;  // the model's rollout (200 steps) and teacher-forced forecasts
  nw_baselines nw;              // LOO-CV and RMS-scaled NW forecasters beside it
  matrix<double> attention;     // (99, 99): the last layer's head 1 on the test context
};
// Runs M (evaluation mode) and fits both NW forecasters; the NW bandwidth searches dominate.
periodic_evaluation periodic_evaluate(const model::periodic_data& data,
                                      model::sequence_regressor<float>& m);

// Pearson correlation of a map with itself shifted by `lag` along the keys (columns) or the
// queries (rows); NaN when either part is constant. A checkerboard of period P gives ≈ +1 at
// lag P and a negative value at P/2.
double map_autocorrelation(const matrix<double>& a, index lag, bool along_keys);

// Each row minus its mean, divided by its standard deviation (0 for a constant row), row-major:
// rows whose weights stay near uniform (1/99) still show where they peak.
std::vector<double> row_standardized(const matrix<double>& a);

// --- seed 000's sentence ----------------------------------------------------------------------

// The word-level model: tiny configuration, 1500 iterations, seed 0, a word tokenizer trained on
// the first 90% of Debian's fortunes (models/lm_word.safetensors was made by this).
inline constexpr const char* kLmConfig = "tiny";
inline constexpr index kLmIters = 1500;

struct lm_demo {
  std::unique_ptr<model::token_model<float>> model;
  text::tokenizer tok;
  double val_loss = 0, seconds = 0;  // NaN when a checkpoint did not record them
};
// Trains it now (about three minutes on 2 cores); throws std::runtime_error when the corpus is
// missing. progress(iteration, iterations).
lm_demo lm_demo_train(const std::function<void(index, index)>& progress = {});
// From a checkpoint with its tokenizer in the metadata; throws on a malformed checkpoint.
lm_demo lm_demo_load(const model::checkpoint& ck);
// "kf train lm --tokenizer word --config tiny --iters 1500 --seed 0".
std::string lm_demo_train_command();

struct sentence_attention {
  std::vector<std::string> labels;         // one per token (word_label; unknown words "(unk)")
  std::vector<std::string> unknown_words;  // the sentence's words outside the vocabulary
  index unknown = 0;                       // tokens that became <unk>
  index layers = 0, heads = 0;
  // Layer-major (layers · heads), each (T, T) causal: the model's float weights widened to
  // double exactly (float(w) gives them back).
  std::vector<matrix<double>> weights;
};
// Runs the model on the sentence's tokens (evaluation mode) and gathers every decoder
// self-attention head. A word the tokenizer maps to <unk> keeps its own text in the labels.
sentence_attention lm_sentence_attention(model::token_model<float>& m, const text::tokenizer& tok,
                                         const std::string& sentence);

// A token as a tick label: the word without its leading space; other spaces as ␣, newlines \n.
std::string word_label(const std::string& piece);

// PROMPT followed by N sampled tokens (temperature T, seed), decoded.
std::string lm_sample(model::token_model<float>& m, const text::tokenizer& tok,
                      const std::string& prompt, index n, double temperature, std::uint64_t seed);

}  // namespace kf::demo
