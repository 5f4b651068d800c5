#include "kernelformer/text/tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace kf::text {
namespace {

// Letters (ASCII or any byte of a UTF-8 multi-byte sequence), digits and apostrophes.
bool word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '\'' ||
         c >= 0x80;
}
// ASCII whitespace (the C locale's isspace, without depending on the locale).
bool space_byte(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace

// Accepts "char" (or "character") and "word"; throws std::invalid_argument otherwise.
tokenizer_kind tokenizer_kind_parse(std::string_view name) {
  if (name == "char" || name == "character") return tokenizer_kind::character;
  if (name == "word") return tokenizer_kind::word;
  throw std::invalid_argument(fmt::format("unknown tokenizer '{}': expected char or word", name));
}

// Pieces are substrings of s, in order and without gaps, so joining them gives s back.
// Word pieces, for "Hi  there, it's\n": "Hi", " ", " there", ",", " it's", "\n".
std::vector<std::string> tokenizer::split(std::string_view s) const {
  std::vector<std::string> out;
  if (kind_ == tokenizer_kind::character) {
    out.reserve(s.size());
    for (char c : s) out.emplace_back(1, c);
    return out;
  }
  std::size_t i = 0;
  const std::size_t n = s.size();
  auto u = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < n) {  // i: start of the next piece; j: its first byte after a glued space
    std::size_t j = i;
    // An optional single space glued to the following word or symbol.
    if (u(j) == ' ' && j + 1 < n && !space_byte(u(j + 1))) ++j;
    if (space_byte(u(j))) {  // a whitespace run (not followed by a glued piece)
      std::size_t k = j;
      while (k < n && space_byte(u(k))) ++k;
      // Leave one space to glue to the next word, as GPT-2 does.
      if (k < n && k - i > 1 && u(k - 1) == ' ') --k;
      out.emplace_back(s.substr(i, k - i));
      i = k;
      continue;
    }
    if (word_byte(u(j))) {
      std::size_t k = j;
      while (k < n && word_byte(u(k))) ++k;
      out.emplace_back(s.substr(i, k - i));
      i = k;
    } else {
      out.emplace_back(s.substr(i, j + 1 - i));  // one symbol byte (with its glued space)
      i = j + 1;
    }
  }
  return out;
}

// piece → id. emplace keeps the first id of a repeated piece; from_metadata detects repeats by
// the map ending up smaller than the piece list.
void tokenizer::index_pieces() {
  ids_.clear();
  for (std::size_t k = 0; k < pieces_.size(); ++k) ids_.emplace(pieces_[k], static_cast<index>(k));
}

// char: every byte in the text, whatever min_count and max_vocab say (at most 256 + <unk>).
// word: pieces seen ≥ min_count times, most frequent first, ties in byte order (so the same text
// gives the same ids), cut to max_vocab entries including <unk>; max_vocab ≤ 1 means no cap.
tokenizer tokenizer::train(tokenizer_kind kind, std::string_view text, index min_count,
                           index max_vocab) {
  tokenizer t;
  t.kind_ = kind;
  t.pieces_ = {"<unk>"};
  std::unordered_map<std::string, index> counts;
  for (auto& p : t.split(text)) ++counts[p];
  std::vector<std::pair<std::string, index>> items(counts.begin(), counts.end());
  if (kind == tokenizer_kind::character) {
    std::sort(items.begin(), items.end());  // by byte: a stable, readable order
  } else {
    std::erase_if(items, [&](const auto& it) { return it.second < min_count; });
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    if (max_vocab > 1 && static_cast<index>(items.size()) > max_vocab - 1)
      items.resize(static_cast<std::size_t>(max_vocab - 1));
  }
  for (auto& it : items) t.pieces_.push_back(it.first);
  t.index_pieces();
  return t;
}

// One id per split() piece; a piece not in the vocabulary becomes unk (0) and is counted.
std::vector<index> tokenizer::encode(std::string_view text, index* unknown) const {
  std::vector<index> ids;
  index unk_count = 0;
  for (const auto& p : split(text)) {
    const auto it = ids_.find(p);
    if (it == ids_.end()) {
      ids.push_back(unk);
      ++unk_count;
    } else {
      ids.push_back(it->second);
    }
  }
  if (unknown) *unknown = unk_count;
  return ids;
}

std::string tokenizer::decode(const std::vector<index>& ids) const {
  std::string s;
  for (index id : ids) {
    if (id <= 0 || id >= size())  // <unk>, and any id outside the vocabulary, never a throw
      s += kind_ == tokenizer_kind::character ? "?" : "<unk>";
    else
      s += pieces_[static_cast<std::size_t>(id)];
  }
  return s;
}

// Writes two entries: "tokenizer" (char | word) and "tokenizer_pieces", a JSON array of the
// pieces after <unk>, in id order (piece k + 1 has id k + 1), so ids survive the round trip.
void tokenizer::to_metadata(std::map<std::string, std::string>& m) const {
  m["tokenizer"] = kind_ == tokenizer_kind::character ? "char" : "word";
  // Pieces are arbitrary bytes; store them as arrays of byte values so the JSON stays valid.
  nlohmann::json arr = nlohmann::json::array();
  for (std::size_t k = 1; k < pieces_.size(); ++k) {
    nlohmann::json bytes = nlohmann::json::array();
    for (unsigned char c : pieces_[k]) bytes.push_back(int(c));
    arr.push_back(std::move(bytes));
  }
  m["tokenizer_pieces"] = arr.dump();
}

// The inverse of to_metadata. Metadata comes from a file, so everything is checked: throws
// std::runtime_error naming the entry and the problem (a bad kind is quoted only if short).
tokenizer tokenizer::from_metadata(const std::map<std::string, std::string>& m) {
  const auto k = m.find("tokenizer");
  const auto v = m.find("tokenizer_pieces");
  if (k == m.end() || v == m.end())
    throw std::runtime_error(
        "checkpoint metadata holds no tokenizer (tokenizer, tokenizer_pieces)");
  tokenizer t;
  if (k->second != "char" && k->second != "word")
    throw std::runtime_error(
        fmt::format("checkpoint metadata 'tokenizer' = '{}' is not char or word",
                    k->second.size() <= 20 && k->second.find_first_of("\r\n") == std::string::npos
                        ? k->second
                        : std::string("(not a tokenizer name)")));
  t.kind_ = tokenizer_kind_parse(k->second);
  t.pieces_ = {"<unk>"};
  auto bad = [](const std::string& what) {
    return std::runtime_error("checkpoint metadata 'tokenizer_pieces' is malformed: " + what);
  };
  nlohmann::json arr;
  try {
    arr = nlohmann::json::parse(v->second);
  } catch (const nlohmann::json::exception&) {
    throw bad("not valid JSON");
  }
  // An array of pieces, each a non-empty array of byte values.
  if (!arr.is_array()) throw bad("not an array of pieces");
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const auto& bytes = arr[i];
    if (!bytes.is_array() || bytes.empty())
      throw bad(fmt::format("piece {} is not a non-empty array of byte values", i + 1));
    std::string p;
    for (const auto& b : bytes) {
      if (!b.is_number_unsigned() || b.get<std::uint64_t>() > 255)
        throw bad(fmt::format("piece {} holds a value that is not a byte (0..255)", i + 1));
      p.push_back(static_cast<char>(b.get<std::uint64_t>()));
    }
    t.pieces_.push_back(std::move(p));
  }
  t.index_pieces();
  if (static_cast<std::size_t>(t.size()) != t.ids_.size()) throw bad("duplicate pieces");
  return t;
}

}  // namespace kf::text
