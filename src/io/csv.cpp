#include "kernelformer/io/csv.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <stdexcept>

#include "kernelformer/io/atomic_file.hpp"

namespace kf::io {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> cells;
  std::size_t pos = 0;
  while (true) {
    const auto comma = line.find(',', pos);
    cells.push_back(trim(line.substr(pos, comma == std::string_view::npos ? comma : comma - pos)));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return cells;
}

bool parse_double(std::string_view s, double& v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && p == end && !s.empty();
}

}  // namespace

std::size_t csv_table::column(std::string_view name) const {
  for (std::size_t c = 0; c < names.size(); ++c)
    if (names[c] == name) return c;
  std::string avail;
  for (const auto& n : names) avail += (avail.empty() ? "" : ", ") + n;
  throw std::runtime_error(
      fmt::format("{}: no column named '{}'; columns are: {}", source, name, avail));
}

template <class T>
matrix<T> csv_table::select(const std::vector<std::string>& which) const {
  matrix<T> m(rows(), static_cast<index>(which.size()));
  for (std::size_t c = 0; c < which.size(); ++c) {
    const auto& col = columns[column(which[c])];
    for (index i = 0; i < rows(); ++i)
      m(i, static_cast<index>(c)) = static_cast<T>(col[static_cast<std::size_t>(i)]);
  }
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

csv_table csv_parse(const std::string& text, const std::string& name) {
  csv_table t;
  t.source = name;
  std::size_t pos = 0, line_no = 0;
  bool first = true;
  while (pos <= text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string_view line = std::string_view(text).substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (trim(line).empty() || trim(line).front() == '#') {
      if (nl == text.size()) break;
      continue;
    }
    const auto cells = split(line);
    if (first) {
      first = false;
      bool header = false;
      double v;
      for (auto c : cells) header = header || !parse_double(c, v);
      t.columns.resize(cells.size());
      if (header) {
        for (auto c : cells) {
          if (c.empty())
            throw std::runtime_error(fmt::format("{}: line {}: empty column name", name, line_no));
          t.names.emplace_back(c);
        }
        if (nl == text.size()) break;
        continue;
      }
      for (std::size_t c = 0; c < cells.size(); ++c) t.names.push_back(fmt::format("c{}", c));
    }
    if (cells.size() != t.columns.size())
      throw std::runtime_error(fmt::format("{}: line {}: {} cells, expected {} (one per column)",
                                           name, line_no, cells.size(), t.columns.size()));
    for (std::size_t c = 0; c < cells.size(); ++c) {
      double v = 0;
      if (!parse_double(cells[c], v))
        throw std::runtime_error(fmt::format("{}: line {}, column '{}': '{}' is not a number", name,
                                             line_no, t.names[c], cells[c]));
      if (!std::isfinite(v))
        throw std::runtime_error(fmt::format("{}: line {}, column '{}': {} is not finite", name,
                                             line_no, t.names[c], cells[c]));
      t.columns[c].push_back(v);
    }
    if (nl == text.size()) break;
  }
  if (t.rows() == 0) throw std::runtime_error(fmt::format("{}: no data rows", name));
  return t;
}

csv_table csv_read(const std::string& path) { return csv_parse(read_file(path), path); }

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
