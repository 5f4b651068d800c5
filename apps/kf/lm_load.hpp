// A token model checkpoint with its tokenizer, as kf sample and kf attention load it
// (defined in cmd_lm.cpp).
#pragma once

#include <map>
#include <memory>
#include <string>

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

}  // namespace kf::cli
