// A token model's input as kf attention and kf inspect read it (lm_load.hpp): the text (and an
// encoder-decoder's source) tokenized, labelled and cut to the first `context` tokens.
#include <fmt/format.h>

#include "common.hpp"
#include "kernelformer/model/seq2seq.hpp"
#include "lm_load.hpp"

namespace kf::cli {
namespace {

constexpr const char* kDefaultText = "The cat sat on the mat.";

std::string tick(const std::string& piece) {
  std::string s;
  for (char c : piece) {
    if (c == ' ')
      s += "\xE2\x90\xA3";  // ␣ (open box): a visible space
    else if (c == '\n')
      s += "\\n";
    else if (c == '\t')
      s += "\\t";
    else
      s += c;
  }
  return s;
}

// OPTION's TEXT as token ids after PREFIX (a seq2seq decoder's BOS), at most the first CONTEXT of
// them (a warning says so); unknown pieces are counted in a warning too.
std::vector<index> read_tokens(const text::tokenizer& tok, const std::string& text, index context,
                               const std::string& option, std::vector<index> prefix = {}) {
  index unknown = 0;
  std::vector<index> ids = std::move(prefix);
  const auto more = tok.encode(text, &unknown);
  ids.insert(ids.end(), more.begin(), more.end());
  if (unknown > 0)
    fmt::print(stderr, "kf: warning: {} piece(s) of {} are not in the vocabulary (<unk>)\n",
               unknown, option);
  if (static_cast<index>(ids.size()) > context) {
    fmt::print(stderr, "kf: warning: {} has {} tokens; keeping the first {} (the context)\n",
               option, ids.size(), context);
    ids.resize(static_cast<std::size_t>(context));
  }
  if (ids.empty()) throw user_error(option + " holds no tokens");
  return ids;
}

}  // namespace

lm_input lm_input_read(loaded_lm& lm, const std::string& text, const std::string& source,
                       const std::string& text_option) {
  const auto& cfg = lm.model->config();
  lm_input in;
  if (!lm.model->is_encoder_decoder()) {
    if (!source.empty())
      throw user_error("--source is for encoder-decoder models; this is a language model");
    in.text = text.empty() ? kDefaultText : text;
    in.ids = read_tokens(lm.tok, in.text, cfg.context, text_option);
    for (index id : in.ids) in.labels.push_back(tick(lm.tok.decode({id})));
    return in;
  }
  if (cfg.src_vocab != lm.tok.size())
    throw user_error(
        fmt::format("the encoder's vocabulary ({}) is not the tokenizer's ({}), so --source "
                    "cannot be tokenized",
                    cfg.src_vocab, lm.tok.size()));
  const bool s2s = model::seq2seq_metadata(lm.metadata);
  in.source_text = source;
  if (source.empty()) {
    const auto ex = lm.metadata.find("seq2seq_example");
    if (!s2s || ex == lm.metadata.end())
      throw user_error(
          "--source is required: an encoder-decoder model reads it in its encoder (and --text in "
          "its decoder)");
    in.source_text = ex->second;
  }
  in.source = read_tokens(lm.tok, in.source_text, cfg.context, "--source");
  if (!s2s) {  // an encoder-decoder without seq2seq markers: the decoder reads --text as it is
    in.text = text.empty() ? kDefaultText : text;
    in.ids = read_tokens(lm.tok, in.text, cfg.context, text_option);
    for (index id : in.source) in.source_labels.push_back(tick(lm.tok.decode({id})));
    for (index id : in.ids) in.labels.push_back(tick(lm.tok.decode({id})));
    return in;
  }
  // seq2seq: the decoder reads BOS and the target — --text, or the model's greedy output.
  const model::seq2seq_vocab v = model::seq2seq_vocab::from_tokenizer(lm.tok);
  in.text = text;
  if (text.empty()) {
    const auto out = model::seq2seq_greedy(*lm.model, v, {in.source});
    in.text = v.decode(out[0]);
  }
  in.ids =
      read_tokens(lm.tok, in.text, cfg.context, text.empty() ? "the output" : text_option, {v.bos});
  for (index id : in.source) in.source_labels.push_back(v.label(id));
  for (index id : in.ids) in.labels.push_back(v.label(id));
  return in;
}

}  // namespace kf::cli
