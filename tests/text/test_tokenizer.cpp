// Tokenizers: exact round trips (char and word), GPT-2-style word pieces, unknown text mapped to
// <unk> and counted (never an error), vocabulary limits, and the checkpoint-metadata round trip
// with arbitrary bytes.
#include <gtest/gtest.h>

#include <string>

#include "kernelformer/text/tokenizer.hpp"

namespace kf::text {
namespace {

const std::string kText =
    "The cat sat on the mat.\nThe dog sat on the log!  Twice,\tthe cat's mat...\n\n"
    "  Indented line; 42 cats.\n";

TEST(Tokenizer, CharRoundTripAndUnknown) {
  const auto t = tokenizer::train(tokenizer_kind::character, kText);
  EXPECT_EQ(t.piece(0), "<unk>");
  index unknown = -1;
  const auto ids = t.encode(kText, &unknown);
  EXPECT_EQ(unknown, 0);
  EXPECT_EQ(t.decode(ids), kText);
  EXPECT_EQ(ids.size(), kText.size());
  // 'Z' and 'é' (two bytes) never occur: three <unk>, decoded as '?'.
  const auto z = t.encode("Zé a", &unknown);
  EXPECT_EQ(unknown, 3);
  EXPECT_EQ(t.decode(z), "??? a");
}

TEST(Tokenizer, WordPiecesAreGpt2Style) {
  const auto t = tokenizer::train(tokenizer_kind::word, kText, 1);
  const auto p = t.split("The cat sat on the mat.");
  const std::vector<std::string> want = {"The", " cat", " sat", " on", " the", " mat", "."};
  EXPECT_EQ(p, want);
  const auto q = t.split("a  b\n\n  c");
  const std::vector<std::string> want2 = {"a", " ", " b", "\n\n ", " c"};
  EXPECT_EQ(q, want2);
  // Every text round-trips through split; in-vocabulary text through encode/decode.
  std::string joined;
  for (auto& s : t.split(kText)) joined += s;
  EXPECT_EQ(joined, kText);
  index unknown = -1;
  EXPECT_EQ(t.decode(t.encode(kText, &unknown)), kText);
  EXPECT_EQ(unknown, 0);
  const auto ids = t.encode("The zebra sat.", &unknown);
  EXPECT_EQ(unknown, 1);
  EXPECT_EQ(t.decode(ids), "The<unk> sat.");
}

TEST(Tokenizer, WordVocabularyLimits) {
  // min_count 2 drops pieces seen once; max_vocab keeps the most frequent.
  const auto t = tokenizer::train(tokenizer_kind::word, "a a a b b c", 2, 100);
  // Pieces: "a" ×1, " a" ×2, " b" ×2, " c" ×1 → <unk>, " a", " b".
  EXPECT_EQ(t.size(), 3);
  const auto small = tokenizer::train(tokenizer_kind::word, "x x x y y z", 1, 2);
  EXPECT_EQ(small.size(), 2);
  EXPECT_EQ(small.piece(1), " x");
}

TEST(Tokenizer, MetadataRoundTripWithArbitraryBytes) {
  const std::string bytes = std::string("caf\xC3\xA9 \xFF\x01 \"q\"\\") + kText;
  for (auto kind : {tokenizer_kind::character, tokenizer_kind::word}) {
    const auto t = tokenizer::train(kind, bytes, 1);
    std::map<std::string, std::string> md;
    t.to_metadata(md);
    const auto back = tokenizer::from_metadata(md);
    ASSERT_EQ(back.size(), t.size());
    for (index i = 0; i < t.size(); ++i) EXPECT_EQ(back.piece(i), t.piece(i));
    EXPECT_EQ(back.decode(back.encode(bytes)), bytes);
  }
  std::map<std::string, std::string> bad = {{"tokenizer", "char"}, {"tokenizer_pieces", "[[300]]"}};
  EXPECT_THROW(tokenizer::from_metadata(bad), std::runtime_error);
  bad["tokenizer_pieces"] = "not json";
  EXPECT_THROW(tokenizer::from_metadata(bad), std::runtime_error);
  EXPECT_THROW(tokenizer::from_metadata({}), std::runtime_error);
  EXPECT_THROW(tokenizer_kind_parse("bpe"), std::invalid_argument);
}

}  // namespace
}  // namespace kf::text
