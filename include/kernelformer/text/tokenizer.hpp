// kernelformer/text/tokenizer.hpp — character- and word-level tokenizers for the language model.
//
// char: one token per byte that occurs in the training text (sorted), plus <unk> (id 0).
// word: GPT-2-style pieces — an optional single space followed by a run of letters, digits and
//       apostrophes, or by one other visible character; other whitespace runs are tokens of their
//       own. Concatenating the pieces gives the text back exactly. The vocabulary keeps pieces
//       seen at least min_count times (most frequent first, at most max_vocab), plus <unk> (id 0).
// Text outside the vocabulary encodes to <unk> and is counted (never an error); decoding <unk>
// gives "<unk>" for words and "?" for characters. A tokenizer is saved in a checkpoint's metadata
// (to_metadata / from_metadata) so sampling uses exactly the training vocabulary.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf::text {

enum class tokenizer_kind { character, word };
tokenizer_kind tokenizer_kind_parse(std::string_view name);  // "char" | "word"

class tokenizer {
 public:
  static constexpr index unk = 0;
  tokenizer() = default;
  // Builds the vocabulary from a training text.
  static tokenizer train(tokenizer_kind kind, std::string_view text, index min_count = 2,
                         index max_vocab = 8000);
  static tokenizer from_metadata(const std::map<std::string, std::string>& m);
  void to_metadata(std::map<std::string, std::string>& m) const;

  tokenizer_kind kind() const { return kind_; }
  index size() const { return static_cast<index>(pieces_.size()); }
  const std::string& piece(index id) const { return pieces_.at(static_cast<std::size_t>(id)); }
  // Splits text into pieces (no vocabulary lookup).
  std::vector<std::string> split(std::string_view text) const;
  // unknown: if not null, receives the number of pieces that became <unk>.
  std::vector<index> encode(std::string_view text, index* unknown = nullptr) const;
  std::string decode(const std::vector<index>& ids) const;

 private:
  void index_pieces();
  tokenizer_kind kind_ = tokenizer_kind::character;
  std::vector<std::string> pieces_;  // pieces_[0] = "<unk>"
  std::unordered_map<std::string, index> ids_;
};

}  // namespace kf::text
