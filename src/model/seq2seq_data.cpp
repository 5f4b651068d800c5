// Sequence-to-sequence data (model/seq2seq.hpp): the built-in tasks, a user's pairs and the
// shared character vocabulary with its BOS/EOS markers.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <random>
#include <stdexcept>
#include <unordered_set>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/seq2seq.hpp"

namespace kf::model {
namespace {

constexpr std::string_view kAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz";
constexpr std::array<const char*, 12> kMonths = {"January",   "February", "March",    "April",
                                                 "May",       "June",     "July",     "August",
                                                 "September", "October",  "November", "December"};
constexpr char kBos = '\x02', kEos = '\x03';  // ASCII start of text, end of text

// Days since 1970-01-01 of a proleptic Gregorian date and back (H. Hinnant's civil algorithms).
long days_from_civil(long y, long m, long d) {
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const long yoe = y - era * 400;
  const long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}
std::array<long, 3> civil_from_days(long z) {
  z += 719468;
  const long era = (z >= 0 ? z : z - 146096) / 146097;
  const long doe = z - era * 146097;
  const long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const long mp = (5 * doy + 2) / 153;
  const long d = doy - (153 * mp + 2) / 5 + 1;
  const long m = mp < 10 ? mp + 3 : mp - 9;
  return {yoe + era * 400 + (m <= 2), m, d};
}

// A random string of digits and lowercase letters, length uniform in [min, max], and its reverse.
seq2seq_pair reverse_pair(const seq2seq_task& task, std::mt19937_64& rng) {
  std::uniform_int_distribution<index> len(task.min_length, task.max_length);
  std::uniform_int_distribution<std::size_t> ch(0, kAlphabet.size() - 1);  // 36 symbols
  seq2seq_pair p;
  const index n = len(rng);
  for (index i = 0; i < n; ++i) p.source += kAlphabet[ch(rng)];
  p.target.assign(p.source.rbegin(), p.source.rend());
  return p;
}

// A day uniform over 1950-01-01 … 2049-12-31: "YYYY-MM-DD" → "D Month YYYY".
seq2seq_pair date_pair(std::mt19937_64& rng) {
  static const long first = days_from_civil(1950, 1, 1), last = days_from_civil(2049, 12, 31);
  std::uniform_int_distribution<long> day(first, last);
  const auto [y, m, d] = civil_from_days(day(rng));
  return {fmt::format("{:04}-{:02}-{:02}", y, m, d),
          fmt::format("{} {} {}", d, kMonths[static_cast<std::size_t>(m - 1)], y)};
}

// How many distinct sources the task has (saturating at 2^62).
double task_capacity(const seq2seq_task& task) {
  if (task.name == "dates")
    return double(days_from_civil(2049, 12, 31) - days_from_civil(1950, 1, 1) + 1);
  double c = 0, pow = 1;
  for (index l = 1; l <= task.max_length && c < 4.6e18; ++l) {  // 4.6e18 ≈ 2^62: stop there
    pow *= double(kAlphabet.size());
    if (l >= task.min_length) c += pow;
  }
  return c;
}

// Splits one line into its fields (SEP; CSV: RFC 4180 quotes). Throws a message without the
// line's location.
std::vector<std::string> split_fields(std::string_view line, char sep) {
  std::vector<std::string> fields(1);
  if (sep == '\t') {  // TSV has no quoting: every byte but the tab is content
    for (char c : line) {
      if (c == sep)
        fields.emplace_back();
      else
        fields.back().push_back(c);
    }
    return fields;
  }
  std::size_t i = 0;
  while (i <= line.size()) {
    std::string& f = fields.back();
    if (i < line.size() && line[i] == '"') {  // a quoted field: up to the closing quote
      ++i;
      for (;;) {
        if (i >= line.size()) throw std::invalid_argument("a quoted field is not closed");
        if (line[i] == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          f += '"', i += 2;
        } else if (line[i] == '"') {
          ++i;
          break;
        } else {
          f += line[i++];
        }
      }
      if (i < line.size() && line[i] != sep)
        throw std::invalid_argument("text after a closing quote (expected a comma)");
    } else {
      while (i < line.size() && line[i] != sep) {
        if (line[i] == '"') throw std::invalid_argument("a quote inside an unquoted field");
        f += line[i++];
      }
    }
    if (i >= line.size()) break;
    ++i;  // the separator
    fields.emplace_back();
  }
  return fields;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Throws the message of a field that cannot be a source or target.
void check_field(const std::string& f, const char* what) {
  if (f.empty()) throw std::invalid_argument(fmt::format("the {} is empty", what));
  if (static_cast<index>(f.size()) > kSeq2seqMaxLength)
    throw std::invalid_argument(fmt::format("the {} has {} characters; at most {} are allowed",
                                            what, f.size(), kSeq2seqMaxLength));
  for (unsigned char c : f)
    if (c < 0x20 || c == 0x7f)
      throw std::invalid_argument(
          fmt::format("the {} holds a control character (byte 0x{:02x})", what, c));
}

}  // namespace

seq2seq_task seq2seq_task_get(std::string_view name) {
  if (name != "reverse" && name != "dates")
    throw std::invalid_argument(
        fmt::format("unknown task '{}': expected reverse or dates", name.substr(0, 40)));
  seq2seq_task t;
  t.name = name;
  return t;
}

// n pairs with distinct sources, the same for the same seed (one generator, drawn in order).
std::vector<seq2seq_pair> seq2seq_task_pairs(const seq2seq_task& task, index n,
                                             std::uint64_t seed) {
  if (task.name != "reverse" && task.name != "dates")
    throw std::invalid_argument(fmt::format("unknown task '{}'", task.name));
  if (task.min_length < 1 || task.max_length < task.min_length ||
      task.max_length > kSeq2seqMaxLength)
    throw std::invalid_argument(fmt::format("task lengths {}..{}: expected 1 <= min <= max <= {}",
                                            task.min_length, task.max_length, kSeq2seqMaxLength));
  if (n < 0 || double(n) > 0.5 * task_capacity(task))
    throw std::invalid_argument(fmt::format(
        "{} pairs: the {} task has {:.0f} distinct sources (at most half of them are drawn)", n,
        task.name, task_capacity(task)));
  std::mt19937_64 rng(seed);
  std::unordered_set<std::string> seen;
  std::vector<seq2seq_pair> out;
  out.reserve(static_cast<std::size_t>(n));
  // Duplicates are redrawn; at most half the sources are taken, so each draw is new with
  // probability ≥ 1/2 for dates (uniform), and the cap only guards short reverse lengths.
  for (index tries = 0; static_cast<index>(out.size()) < n; ++tries) {
    if (tries > 100 * n + 1000)
      throw std::invalid_argument(fmt::format(
          "{} distinct {} pairs: too few distinct sources of these lengths", n, task.name));
    seq2seq_pair p = task.name == "dates" ? date_pair(rng) : reverse_pair(task, rng);
    if (seen.insert(p.source).second) out.push_back(std::move(p));
  }
  return out;
}

std::pair<index, index> seq2seq_task_source_span(const seq2seq_task& task, const seq2seq_pair& pair,
                                                 index i) {
  const index S = static_cast<index>(pair.source.size());
  const index n = static_cast<index>(pair.target.size());
  if (i < 0 || i >= n) return {-1, -1};
  if (task.name == "reverse") {  // target i is source S − 1 − i
    if (i < S) return {S - 1 - i, S - i};
    return {-1, -1};
  }
  // dates: "D Month YYYY" from "YYYY-MM-DD"
  const auto s1 = pair.target.find(' ');
  const auto s2 = s1 == std::string::npos ? s1 : pair.target.find(' ', s1 + 1);
  if (s2 == std::string::npos || S != 10) return {-1, -1};
  const auto iu = static_cast<std::size_t>(i);
  if (iu < s1) return {8, 10};            // the day from DD
  if (iu > s1 && iu < s2) return {5, 7};  // the month's name from MM
  if (iu > s2) return {0, 4};             // the year from YYYY
  return {-1, -1};                        // a space: from no source character
}

// One pair a line (blank lines skipped, CRLF accepted, an optional "source,target" header);
// errors as "<name>:<line>: <what>".
std::vector<seq2seq_pair> seq2seq_pairs_parse(std::string_view text, const std::string& name,
                                              char sep) {
  std::vector<seq2seq_pair> out;
  const char* sep_name = sep == '\t' ? "a tab" : "a comma";
  std::size_t pos = 0;
  index line_no = 0;
  bool first = true;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    try {
      auto f = split_fields(line, sep);
      if (f.size() != 2)
        throw std::invalid_argument(
            fmt::format("{} field{}; expected two (source and target) separated by {}", f.size(),
                        f.size() == 1 ? "" : "s", sep_name));
      if (first && lower(f[0]) == "source" && lower(f[1]) == "target") {
        first = false;
        continue;  // a header
      }
      first = false;
      check_field(f[0], "source");
      check_field(f[1], "target");
      out.push_back({std::move(f[0]), std::move(f[1])});
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("{}:{}: {}", name, line_no, e.what()));
    }
  }
  if (out.empty()) throw std::invalid_argument(fmt::format("{}: no pairs", name));
  return out;
}

std::vector<seq2seq_pair> seq2seq_pairs_read(const std::string& path) {
  const auto ends = [&](std::string_view ext) {
    return path.size() >= ext.size() && lower(path.substr(path.size() - ext.size())) == ext;
  };
  if (!ends(".tsv") && !ends(".csv"))
    throw std::invalid_argument(
        fmt::format("{}: expected a .tsv (source<TAB>target) or .csv (source,target) file", path));
  std::string text;
  try {
    text = io::read_file(path);
  } catch (const std::exception& e) {
    throw std::invalid_argument(e.what());
  }
  return seq2seq_pairs_parse(text, path, ends(".tsv") ? '\t' : ',');
}

seq2seq_vocab seq2seq_vocab::build(std::span<const seq2seq_pair> pairs) {
  std::string all{kBos, kEos};  // the markers too, so every vocabulary has them
  for (const auto& p : pairs) all += p.source + p.target;
  return from_tokenizer(text::tokenizer::train(text::tokenizer_kind::character, all));
}

seq2seq_vocab seq2seq_vocab::from_tokenizer(text::tokenizer tok) {
  seq2seq_vocab v;
  if (tok.kind() != text::tokenizer_kind::character)
    throw std::runtime_error("a seq2seq model needs a character tokenizer; this one is by words");
  v.bos = tok.encode(std::string(1, kBos)).at(0);
  v.eos = tok.encode(std::string(1, kEos)).at(0);
  if (v.bos == text::tokenizer::unk || v.eos == text::tokenizer::unk)
    throw std::runtime_error(
        "the tokenizer has no start and end markers (bytes 0x02, 0x03): not a seq2seq model");
  v.tok = std::move(tok);
  return v;
}

// The text up to the first EOS, BOS dropped.
std::string seq2seq_vocab::decode(std::span<const index> ids) const {
  std::vector<index> keep;
  for (index id : ids) {
    if (id == eos) break;
    if (id != bos) keep.push_back(id);
  }
  return tok.decode(keep);
}

std::string seq2seq_vocab::label(index id) const {
  if (id == bos) return "<s>";
  if (id == eos) return "</s>";
  if (id <= 0 || id >= size()) return "<unk>";
  const std::string& p = tok.piece(id);
  return p == " " ? "\xE2\x90\xA3" : p;  // ␣: a visible space
}

bool seq2seq_metadata(const std::map<std::string, std::string>& m) {
  const auto it = m.find("seq2seq");
  return it != m.end() && it->second == "true";
}

}  // namespace kf::model
