// kernelformer/io/csv.hpp — numeric CSV tables in and out.
//
// Reading: comma-separated, optional header row (taken as a header when any of its cells is not
// a number), blank lines and lines starting with '#' skipped, surrounding spaces and quotes
// trimmed. Every cell must be a finite number: errors name the file, the 1-based line and the
// column. Writing uses the shortest round-trip form of each value, atomically.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf::io {

struct csv_table {
  std::string source;              // file name, for messages
  std::vector<std::string> names;  // header, or "c0", "c1", … when there is none
  std::vector<std::vector<double>> columns;
  index rows() const { return columns.empty() ? 0 : static_cast<index>(columns[0].size()); }
  // Index of a named column; throws naming the file and the available columns.
  std::size_t column(std::string_view name) const;
  // The listed columns as an n×k matrix.
  template <class T>
  matrix<T> select(const std::vector<std::string>& names) const;
  // All columns as an n×k matrix.
  template <class T>
  matrix<T> to_matrix() const;
};

csv_table csv_read(const std::string& path);
csv_table csv_parse(const std::string& text, const std::string& name);

std::string csv_encode(const std::vector<std::string>& names,
                       const std::vector<std::vector<double>>& columns);
void csv_write(const std::string& path, const std::vector<std::string>& names,
               const std::vector<std::vector<double>>& columns);

}  // namespace kf::io
