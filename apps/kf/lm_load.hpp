// A token model checkpoint with its tokenizer, as kf sample, kf attention, kf inspect and kf
// predict load it (load_lm: cmd_sample.cpp), and its input for kf attention and kf inspect
// (lm_input_read: lm_inputs.cpp).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernelformer/model/token_model.hpp"
#include "kernelformer/text/tokenizer.hpp"

namespace kf::cli {

struct loaded_lm {
  std::unique_ptr<model::token_model<float>> model;
  text::tokenizer tok;
  std::map<std::string, std::string> metadata;
};

// PATH (.safetensors): its metadata, tokenizer and tensors checked, the weights loaded. Throws
// user_error naming --model. ENCODER_DECODER: whether the caller reads encoder-decoder models
// too (kf attention --html); else they are refused.
loaded_lm load_lm(const std::string& path, bool encoder_decoder = false);

// The tokens a command runs the model on, with one display label per token.
struct lm_input {
  std::vector<index> ids, source;  // decoder (or language model) input; encoder input
  std::vector<std::string> labels, source_labels;
  std::string text, source_text;  // what was tokenized
};
// A language model reads TEXT (default "The cat sat on the mat."); SOURCE is refused. An
// encoder-decoder reads SOURCE in its encoder (required; a seq2seq checkpoint from kf train
// seq2seq defaults to the validation example it keeps) and TEXT in its decoder — for a seq2seq
// checkpoint after the start marker <s>, by default the model's own greedy output for SOURCE.
// Every sequence keeps its FIRST `context` tokens (a warning on stderr says when it cuts), as do
// kf attention and kf inspect. Throws user_error naming the option (TEXT_OPTION for the text).
lm_input lm_input_read(loaded_lm& lm, const std::string& text, const std::string& source,
                       const std::string& text_option = "--text");

}  // namespace kf::cli
