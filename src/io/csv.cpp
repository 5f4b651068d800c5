#include "kernelformer/io/csv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/mapped_file.hpp"
#include "kernelformer/progress.hpp"

namespace kf::io {
namespace {

// Strips spaces, tabs and a stray '\r' at both ends, then one pair of enclosing double quotes.
// A "" inside a quoted cell is left doubled (cells that need it are text, not numbers).
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

// At most ~80 characters of a cell or name, for messages; control bytes shown as '?' so the
// message stays one line.
std::string clip(std::string_view s) {
  std::string q = s.size() > 80 ? std::string(s.substr(0, 77)) + "..." : std::string(s);
  for (char& c : q)
    if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f') c = '?';
  return q;
}

// "a, b, c": names while the list is under ~200 characters (at most 12), then how many more
// (a fuzzing finding: 12 names of 80 characters made a 1,000-character message).
std::string name_list(const std::vector<std::string>& names) {
  std::string out;
  std::size_t c = 0;
  for (; c < names.size() && c < 12 && out.size() < 200; ++c)
    out += (c ? ", " : "") + clip(names[c]);
  if (c < names.size()) out += fmt::format(", ... ({} more)", names.size() - c);
  return out;
}

// The whole cell must be one number (no trailing text). from_chars refuses a leading '+', which
// spreadsheets write, so it is skipped here; "inf"/"nan" parse and are refused by the caller.
bool parse_double(std::string_view s, double& v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && p == end && !s.empty();
}

// A missing value's spellings (csv_options::missing_as_nan): blank, NA, N/A, NaN (any case).
bool is_missing(std::string_view s) {
  std::string low(s);
  for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return low.empty() || low == "na" || low == "n/a" || low == "nan";
}

// The separator of a file whose csv_options::separator is 0: a comma when the first line has
// one, else a tab, else a semicolon (a spreadsheet's export in a decimal-comma locale), else a
// comma (one column).
char detect_separator(std::string_view first) {
  for (char c : {',', '\t', ';'})
    if (first.find(c) != std::string_view::npos) return c;
  return ',';
}

// Calls f(cell_index, trimmed_cell) for each cell between separators `sep`; returns the cell
// count. A cell in double quotes may hold separators (RFC 4180; "" inside is a literal quote).
template <class F>
std::size_t for_each_cell(std::string_view line, char sep, F&& f) {
  std::size_t c = 0, pos = 0;
  while (true) {
    std::size_t scan = pos;
    while (scan < line.size() && (line[scan] == ' ' || line[scan] == '\t')) ++scan;
    if (scan < line.size() && line[scan] == '"') {  // skip to the closing quote
      for (++scan; scan < line.size(); ++scan) {
        if (line[scan] != '"') continue;
        if (scan + 1 < line.size() && line[scan + 1] == '"')
          ++scan;
        else
          break;
      }
    } else {  // unquoted: the cell ends at the next separator
      scan = pos;
    }
    const auto comma = line.find(sep, std::min(scan, line.size()));
    f(c++, trim(line.substr(pos, comma == std::string_view::npos ? comma : comma - pos)));
    // No comma after the last cell ends the line; "a," therefore has two cells, the last blank.
    if (comma == std::string_view::npos) return c;
    pos = comma + 1;
  }
}

// The one-pass parser: lines from `text`, cells straight into the table's columns. `file` is the
// mapping behind `text` (nullptr for csv_parse), told which pages it may drop as the cursor moves.
// Every error is a std::runtime_error naming the file, and the line and column where there is one.
class parser {
 public:
  parser(std::string_view text, const std::string& name, const csv_options& opt,
         const mapped_file* file)
      : text_(text), name_(name), opt_(opt), file_(file) {
    if (text_.starts_with("\xEF\xBB\xBF")) {  // UTF-8 byte-order mark
      text_.remove_prefix(3);
      offset_ = 3;
    }
  }

  csv_table run() {
    t_.source = name_;
    // This part's byte range: data lines starting in [lo, hi) (the whole text for one part; the
    // last part's hi is past the end, so a line starting there, the empty one after a final
    // '\n', is its).
    const std::size_t size = text_.size();
    const auto parts = static_cast<std::size_t>(std::max(opt_.parts, 1));
    const auto part = static_cast<std::size_t>(std::clamp(opt_.part, 0, opt_.parts - 1));
    const std::size_t lo = size * part / parts,
                      hi = part + 1 == parts ? size + 1 : size * (part + 1) / parts;
    // An upper bound on the rows, so each column is allocated once, at its final size.
    // Counted in 8 MiB chunks, each released once counted: the count never holds the file.
    std::size_t lines = parts == 1 ? 1 : 2;  // a last line without '\n' (and a part's header)
    constexpr std::size_t kChunk = std::size_t{8} << 20;
    for (std::size_t at = lo; at < std::min(hi, size); at += kChunk) {
      const auto chunk = text_.substr(at, std::min(kChunk, std::min(hi, size) - at));
      lines += static_cast<std::size_t>(std::count(chunk.begin(), chunk.end(), '\n'));
      if (file_ != nullptr) file_->release_before(offset_ + at + chunk.size());
    }
    std::size_t pos = 0, line_no = 0, released = 0;
    progress_step step(fmt::format("reading {}", name_),
                       static_cast<index>(std::min(hi, size) - lo));  // bytes of the part
    while (pos <= text_.size()) {  // `<=`: a last line without '\n' is still read
      if (!t_.names.empty() && pos < lo) {
        // Past the header, before this part: on to the first line that starts at or after lo.
        jump_from_ = pos;
        pos = text_[lo - 1] == '\n' ? lo : std::min(text_.find('\n', lo), size) + 1;
        jump_to_ = pos;
        if (pos > size) break;
      }
      if (!t_.names.empty() && pos >= hi) break;  // the next part's lines
      if (t_.names.empty()) check_first_line_length(pos, line_no + 1);
      auto nl = text_.find('\n', pos);
      if (nl == std::string_view::npos) nl = text_.size();
      const std::string_view line = text_.substr(pos, nl - pos);
      const bool mine = pos >= lo && pos < hi;  // another part's: only ever the header
      pos = nl + 1;
      ++line_no;
      const std::string_view trimmed = trim(line);
      if (!trimmed.empty() && trimmed.front() != '#') {  // blank and '#' lines: skipped, counted
        if (t_.names.empty())
          first_line(line, line_no, lines, mine);
        else
          data_line(line, line_no);
      }
      if (pos - released > (std::size_t{8} << 20)) {
        if (file_ != nullptr)
          file_->release_before(offset_ + pos);  // pages behind the cursor are not read again
        released = pos;
        step.set(static_cast<index>(pos > lo ? pos - lo : 0));
      }
      if (nl == text_.size()) break;
    }
    if (t_.names.empty() || (complete_ == 0 && parts == 1))
      throw std::runtime_error(fmt::format("{}: no data rows", name_));
    return std::move(t_);
  }

 private:
  // The header (or first) line is kept as names and cells: a crafted file whose first line runs
  // for a gigabyte would cost that much memory several times over. Only the first
  // kMaxFirstLine + 1 bytes from POS are looked at (a million columns of long names fit).
  static constexpr std::size_t kMaxFirstLine = std::size_t{16} << 20;
  void check_first_line_length(std::size_t pos, std::size_t line_no) const {
    const auto window = text_.substr(pos, kMaxFirstLine + 1);
    if (window.size() > kMaxFirstLine && window.find('\n') == std::string_view::npos)
      throw std::runtime_error(fmt::format(
          "{}: line {}: the first line is longer than {} MiB (a header that long is not a table "
          "this reader takes)",
          name_, line_no, kMaxFirstLine >> 20));
  }

  // The first non-blank line fixes the column count and names (a header when any cell is not a
  // number, else "c0", "c1", …) and decides where each cell goes; if it is data, it is also
  // parsed as the first row (by the part it starts in: `mine`). `lines` bounds the row count,
  // for the reserve.
  void first_line(std::string_view line, std::size_t line_no, std::size_t lines, bool mine) {
    bool header = false;
    std::vector<std::string_view> cells;
    sep_ = opt_.separator != 0 ? opt_.separator : detect_separator(line);
    for_each_cell(line, sep_, [&](std::size_t, std::string_view c) {
      double v;
      header = header || !parse_double(c, v);
      cells.push_back(c);
    });
    ncells_ = cells.size();
    std::unordered_map<std::string, std::size_t> seen;  // name -> its column (names are unique)
    for (std::size_t c = 0; c < ncells_; ++c) {
      if (header && cells[c].empty())
        throw std::runtime_error(
            fmt::format("{}: line {}: column {} has an empty name", name_, line_no, c + 1));
      t_.names.push_back(header ? std::string(cells[c]) : fmt::format("c{}", c));
      const auto [it, fresh] = seen.emplace(t_.names[c], c);
      if (!fresh)
        throw std::runtime_error(
            fmt::format("{}: line {}: the column name '{}' appears twice (columns {} and {})",
                        name_, line_no, clip(t_.names[c]), it->second + 1, c + 1));
    }
    // Which columns are parsed, and where each goes: slot_[cell] is the output column — file order,
    // or the order csv_options::columns lists them (a name listed twice is parsed once).
    slot_.assign(ncells_, -1);
    std::vector<std::string> kept;
    if (opt_.columns.empty()) {
      for (std::size_t c = 0; c < ncells_; ++c) slot_[c] = static_cast<int>(c);
      kept = t_.names;
    } else {
      for (const auto& want : opt_.columns) {
        const auto it = seen.find(want);  // a hash look-up: linear in the columns asked for
        if (it == seen.end())
          throw std::runtime_error(fmt::format("{}: no column named '{}'; columns are: {}", name_,
                                               clip(want), name_list(t_.names)));
        auto& s = slot_[it->second];
        if (s < 0) {
          s = static_cast<int>(kept.size());
          kept.push_back(want);
        }
      }
    }
    tslot_.assign(ncells_, -1);
    for (const auto& want : opt_.text_columns) {
      const auto it = seen.find(want);
      if (it == seen.end())
        throw std::runtime_error(fmt::format("{}: no column named '{}'; columns are: {}", name_,
                                             clip(want), name_list(t_.names)));
      const auto c = it->second;
      if (!opt_.columns.empty() && slot_[c] >= 0)
        throw std::runtime_error(fmt::format(
            "{}: column '{}' is asked for both as numbers and as text", name_, clip(want)));
      if (opt_.columns.empty() && slot_[c] >= 0) {  // every other column is numeric: not this
        kept.erase(std::find(kept.begin(), kept.end(), want));
        for (auto& sl : slot_)
          if (sl > slot_[c]) --sl;
        slot_[c] = -1;
      }
      if (tslot_[c] < 0) {
        tslot_[c] = static_cast<int>(t_.text_names.size());
        t_.text_names.push_back(want);
      }
    }
    t_.text.resize(t_.text_names.size());
    for (auto& col : t_.text) col.reserve(lines);
    t_.names = std::move(kept);
    t_.columns.resize(t_.names.size());
    for (auto& col : t_.columns) col.reserve(lines);
    if (!header && mine) data_line(line, line_no);
  }

  // The file's line number of the line counted as `counted`: the lines a part skipped between
  // the header and its first line are counted only when a message or csv_table::lines needs
  // them, so a part never reads the pages before its own.
  std::size_t file_line(std::size_t counted) const {
    if (jump_to_ > jump_from_ && !skipped_lines_) {
      const auto gap = text_.substr(jump_from_, jump_to_ - jump_from_);
      skipped_lines_ = static_cast<std::size_t>(std::count(gap.begin(), gap.end(), '\n'));
    }
    return counted + skipped_lines_.value_or(0);
  }

  // One row: each cell to its numeric or text column, or ignored. A row with a dropped blank
  // stops storing at that cell and is rolled back below, so all columns stay the same length.
  // `counted` is the line's number among the lines this parser read (file_line: the file's).
  void data_line(std::string_view line, std::size_t counted) {
    const auto line_no = [&] { return file_line(counted); };
    bool blank = false;
    const std::size_t n = for_each_cell(line, sep_, [&](std::size_t c, std::string_view cell) {
      if (c >= ncells_ || blank) return;  // extra cells are only counted (the check below)
      if (tslot_[c] >= 0) {
        if (cell.empty() && opt_.drop_blank) {
          blank = true;
          return;
        }
        if (cell.empty())
          throw std::runtime_error(fmt::format(
              "{}: line {}, column '{}': the cell is blank (--na drop skips such rows)", name_,
              line_no(), clip(t_.text_names[static_cast<std::size_t>(tslot_[c])])));
        t_.text[static_cast<std::size_t>(tslot_[c])].emplace_back(cell);
        return;
      }
      if (slot_[c] < 0) return;
      auto& col = t_.columns[static_cast<std::size_t>(slot_[c])];
      double v = 0;
      if (opt_.drop_blank && is_missing(cell)) {  // blank, NA, N/A, NaN
        blank = true;
        return;
      }
      if (opt_.missing_as_nan && is_missing(cell)) {
        col.push_back(std::numeric_limits<double>::quiet_NaN());
        return;
      }
      if (!parse_double(cell, v))
        throw std::runtime_error(
            fmt::format("{}: line {}, column '{}': '{}' is not a number{}", name_, line_no(),
                        clip(t_.names[col_name(c)]), clip(cell),
                        cell.empty()       ? " (blank; --na drop skips such rows)"
                        : is_missing(cell) ? " (a missing value; --na drop skips such rows)"
                                           : ""));
      if (!std::isfinite(v))
        throw std::runtime_error(fmt::format("{}: line {}, column '{}': {} is not finite", name_,
                                             line_no(), clip(t_.names[col_name(c)]), clip(cell)));
      col.push_back(v);
    });
    if (n != ncells_)
      throw std::runtime_error(fmt::format("{}: line {}: {} cells, expected {} (one per column)",
                                           name_, line_no(), n, ncells_));
    if (blank) {  // undo this row's cells already stored
      for (auto& col : t_.columns) col.resize(complete_);
      for (auto& col : t_.text) col.resize(complete_);
      ++t_.dropped_rows;
    } else {
      ++complete_;
      if (opt_.record_lines) t_.lines.push_back(static_cast<index>(line_no()));
    }
  }

  std::size_t col_name(std::size_t c) const { return static_cast<std::size_t>(slot_[c]); }

  std::string_view text_;
  const std::string& name_;
  char sep_ = ',';  // the file's separator (first_line)
  const csv_options& opt_;
  const mapped_file* file_;
  std::size_t offset_ = 0;  // bytes skipped at the start (a byte-order mark)
  std::size_t ncells_ = 0;
  std::vector<int> slot_;     // per cell: the parsed column it goes to, or -1
  std::vector<int> tslot_;    // per cell: the text column it goes to, or -1
  std::size_t complete_ = 0;  // rows stored in full
  // A part's jump from the header to its own lines (csv_options::parts): the text skipped, and
  // the line count of that text once file_line needed it.
  std::size_t jump_from_ = 0, jump_to_ = 0;
  mutable std::optional<std::size_t> skipped_lines_;
  csv_table t_;
};

}  // namespace

// Exact, case-sensitive match on the parsed columns' names.
std::size_t csv_table::column(std::string_view name) const {
  for (std::size_t c = 0; c < names.size(); ++c)
    if (names[c] == name) return c;
  throw std::runtime_error(fmt::format("{}: no column named '{}'; columns are: {}", source,
                                       clip(name), name_list(names)));
}

index csv_table::rows_min() const {
  if (columns.empty()) return 0;
  std::size_t r = columns[0].size();
  for (const auto& c : columns) r = std::min(r, c.size());
  return static_cast<index>(r);
}

// (rows, which.size()), column c of the matrix = column which[c]; throws like column() on an
// unknown name. Values are cast from double to T.
template <class T>
matrix<T> csv_table::select(const std::vector<std::string>& which) const {
  // One hash look-up per name asked for (a linear search each made a wide table quadratic).
  std::unordered_map<std::string_view, std::size_t> index_of;
  index_of.reserve(names.size());
  for (std::size_t c = 0; c < names.size(); ++c) index_of.emplace(names[c], c);
  std::vector<std::size_t> from(which.size());
  for (std::size_t c = 0; c < which.size(); ++c) {
    const auto it = index_of.find(which[c]);
    from[c] = it != index_of.end() ? it->second : column(which[c]);  // column() throws
  }
  matrix<T> m(rows(), static_cast<index>(which.size()));
  for (index i = 0; i < rows(); ++i)
    for (std::size_t c = 0; c < which.size(); ++c)
      m(i, static_cast<index>(c)) = static_cast<T>(columns[from[c]][static_cast<std::size_t>(i)]);
  return m;
}

template <class T>
matrix<T> csv_table::to_matrix() const {
  return select<T>(names);
}

template matrix<float> csv_table::select<float>(const std::vector<std::string>&) const;
template matrix<double> csv_table::select<double>(const std::vector<std::string>&) const;
template matrix<float> csv_table::to_matrix<float>() const;
template matrix<double> csv_table::to_matrix<double>() const;

csv_table csv_parse(std::string_view text, const std::string& name, const csv_options& options) {
  return parser(text, name, options, nullptr).run();
}

// The mapping f outlives the parse; the table holds copies (parsed values and text), never views.
csv_table csv_read(const std::string& path, const csv_options& options) {
  const mapped_file f(path);
  return parser(f.bytes(), path, options, &f).run();
}

// The names as given, unquoted (a name with a comma would split), then one line per row.
// Every column must be as long as the first. "{}" is fmt's shortest form that reads back exactly.
std::string csv_encode(const std::vector<std::string>& names,
                       const std::vector<std::vector<double>>& columns) {
  std::string out;
  for (std::size_t c = 0; c < names.size(); ++c) out += (c ? "," : "") + names[c];
  out += '\n';
  const std::size_t n = columns.empty() ? 0 : columns[0].size();
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c) out += ',';
      out += fmt::format("{}", columns[c][i]);
    }
    out += '\n';
  }
  return out;
}

void csv_write(const std::string& path, const std::vector<std::string>& names,
               const std::vector<std::vector<double>>& columns) {
  write_file_atomic(path, csv_encode(names, columns));
}

}  // namespace kf::io
