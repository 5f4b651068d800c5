// kernelformer/io/csv.hpp — numeric CSV tables in and out.
//
// Reading: comma-, tab- or semicolon-separated (detected from the first line), optional header row
// (taken as a header when any of its cells is not a number), blank lines and lines starting with
// '#' skipped, surrounding spaces and quotes trimmed, a UTF-8 byte-order mark and CRLF line ends
// accepted (as spreadsheets write them), duplicate column names refused. Every cell of a column
// that is read must be a finite number: errors name the file, the 1-based line and the column, and
// quote at most ~80 characters. Numbers are parsed locale-independently (std::from_chars).
//
// csv_read maps the file (io/mapped_file.hpp) and parses it in one pass straight into columns
// sized exactly once (a line count first bounds the rows), releasing the mapped pages behind the
// cursor: peak memory is the parsed values plus a few MiB, whatever the file's size. With
// csv_options::columns only those columns are parsed; the others may hold anything. With
// csv_options::parts, one part of the file is parsed (its pages alone are read).
// Writing uses the shortest round-trip form of each value, atomically.
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
  index dropped_rows = 0;  // rows skipped for a blank cell (csv_options::drop_blank)
  // csv_options::text_columns, in that order: the cells as text (trimmed, quotes removed).
  std::vector<std::string> text_names;
  std::vector<std::vector<std::string>> text;
  std::vector<index> lines;  // csv_options::record_lines: each row's 1-based line in the file
  index rows() const { return columns.empty() ? 0 : static_cast<index>(columns[0].size()); }
  index rows_min() const;  // the shortest column's length (equal to rows() once parsed)
  // Index of a named column; throws naming the file and the available columns.
  std::size_t column(std::string_view name) const;
  // The listed columns as an n×k matrix.
  template <class T>
  matrix<T> select(const std::vector<std::string>& names) const;
  // All columns as an n×k matrix.
  template <class T>
  matrix<T> to_matrix() const;
};

struct csv_options {
  std::vector<std::string> columns;  // parse only these (by header name); empty: every column
  // Skip rows with a missing value in a parsed column (--na drop): a blank cell, or NA, N/A, NaN
  // (any case) in a numeric one.
  bool drop_blank = false;
  char separator = 0;  // 0: detected from the first line (',' if it has one, else tab, else ';')
  // Columns kept as text (class labels); a column may not be both numeric and text. A blank
  // text cell is an error naming the line, or drops the row with drop_blank.
  std::vector<std::string> text_columns;
  // Missing values (a series' gaps): a blank cell, NA, N/A or NaN in a parsed column reads as NaN
  // instead of an error (infinities are still errors; with drop_blank, a blank cell drops its row).
  bool missing_as_nan = false;
  bool record_lines = false;  // fill csv_table::lines (for messages naming a row's line)
  // Part `part` of `parts` of the file (several processes reading one file, each its own part):
  // the header as always, then only the data lines that start in the part's byte range
  // [size·part/parts, size·(part+1)/parts). The parts' rows, concatenated in part order, are
  // the whole file's; errors still name the file's line. A part may hold no rows.
  int part = 0, parts = 1;
};

csv_table csv_read(const std::string& path, const csv_options& options = {});
csv_table csv_parse(std::string_view text, const std::string& name,
                    const csv_options& options = {});

std::string csv_encode(const std::vector<std::string>& names,
                       const std::vector<std::vector<double>>& columns);
void csv_write(const std::string& path, const std::vector<std::string>& names,
               const std::vector<std::vector<double>>& columns);

}  // namespace kf::io
