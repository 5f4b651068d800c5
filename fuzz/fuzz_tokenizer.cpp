// libFuzzer target: the tokenizers. The first byte picks char or word; the rest is split in two:
// a training text and a text to encode. Checks that training, encoding, decoding and the
// metadata round trip hold for any bytes: decode(encode(s)) == s when s was the training text
// (char: every byte is in the vocabulary; word: every piece seen twice is), and from_metadata
// accepts what to_metadata wrote. The metadata reader also gets the raw bytes as pieces.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "fuzz_common.hpp"
#include "kernelformer/text/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const auto kind =
      (data[0] & 1) ? kf::text::tokenizer_kind::word : kf::text::tokenizer_kind::character;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::size_t cut = rest.size() / 2;
  const std::string_view train = rest.substr(0, cut), text = rest.substr(cut);
  const auto tok = kf::text::tokenizer::train(kind, train);
  kf::index unknown = 0;
  const auto ids = tok.encode(text, &unknown);
  (void)tok.decode(ids);
  if (kind == kf::text::tokenizer_kind::character) {
    if (tok.decode(tok.encode(train)) != train) std::abort();
  } else {
    // Pieces concatenate back to the text.
    std::string joined;
    for (const auto& p : tok.split(text)) joined += p;
    if (joined != text) std::abort();
  }
  std::map<std::string, std::string> md;
  tok.to_metadata(md);
  const auto back = kf::text::tokenizer::from_metadata(md);
  if (back.size() != tok.size() || back.encode(text) != ids) std::abort();
  md["tokenizer_pieces"] = std::string(rest);
  kf::fuzz::expect_clean([&] { (void)kf::text::tokenizer::from_metadata(md); });
  return 0;
}
