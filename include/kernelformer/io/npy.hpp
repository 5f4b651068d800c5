// kernelformer/io/npy.hpp — NumPy .npy files (format versions 1.0–3.0), the arrays numpy and
// PyTorch users already have. float32 and float64 in either byte order, C or Fortran order;
// 0-, 1- or 2-D on read (a 1-D array of length n reads as n×1). Writes version 1.0 atomically,
// streaming the rows to the file (no copy of the array in memory).
//
// npy_file maps the file read-only (io/mapped_file.hpp): a C-order array in the machine's byte
// order (little-endian '<f4'/'<f8') at an aligned offset is a matrix view of the mapped pages,
// used in place; anything else (big-endian, Fortran order, the other dtype) is converted once,
// straight from the mapped bytes into the destination matrix. Every size in the header is
// checked with overflow-safe arithmetic against the bytes actually present before anything is
// allocated. Every error names the file and what was expected.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "kernelformer/io/mapped_file.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::io {

enum class npy_dtype { f32, f64 };

// What a .npy header says, checked against the file's size.
struct npy_header {
  npy_dtype dtype = npy_dtype::f64;
  bool big_endian = false;
  bool fortran_order = false;
  std::vector<index> shape;     // as stored (0, 1 or 2 dimensions)
  std::size_t data_offset = 0;  // bytes before the first value
  std::size_t count = 0;        // values (the product of shape, 1 for 0-D)
  index rows() const;           // shape[0], or 1 for a 0-D array
  index cols() const;           // shape[1], or 1 for 0-/1-D arrays
};
// Parses and checks the header at the start of BYTES (the whole file); `name` is used in errors.
npy_header npy_parse_header(std::string_view bytes, const std::string& name);

// A .npy file mapped read-only.
class npy_file {
 public:
  explicit npy_file(const std::string& path);
  const npy_header& header() const { return header_; }
  const std::string& path() const { return file_.path(); }
  // True when the data can be used in place as a const_matrix_view<T>.
  template <class T>
  bool in_place() const;
  // The mapped data as a view (requires in_place<T>()).
  template <class T>
  const_matrix_view<T> view() const;
  // The values converted into a new rows×cols matrix, in one pass over the mapped bytes.
  template <class T>
  matrix<T> to_matrix() const;

 private:
  mapped_file file_;
  npy_header header_;
};

// An array read into memory (small files, fixtures): the header and the values as doubles.
struct npy_array {
  npy_dtype dtype = npy_dtype::f64;
  std::vector<index> shape;    // as stored
  std::vector<double> values;  // row-major, converted to double exactly
  index rows() const;          // shape[0], or 1 for a 0-D array
  index cols() const;          // shape[1], or 1 for 0-/1-D arrays
  template <class T>
  matrix<T> to_matrix() const;
};

npy_array npy_read(const std::string& path);
// Parses bytes already in memory; `name` is used in error messages.
npy_array npy_parse(std::string_view bytes, const std::string& name);

// The bytes of a .npy file holding a rows×cols array (shape (rows,) if as_vector).
template <class T>
std::string npy_encode(const_matrix_view<T> a, bool as_vector = false);
// The same bytes written to an open file row by row; false when a write failed.
template <class T>
bool npy_write_stream(std::FILE* f, const_matrix_view<T> a, bool as_vector = false);
// The same bytes written to a file atomically, row by row.
template <class T>
void npy_write(const std::string& path, const_matrix_view<T> a, bool as_vector = false);

}  // namespace kf::io
