// kernelformer/io/npy.hpp — NumPy .npy files (format versions 1.0–3.0), the arrays numpy and
// PyTorch users already have. Little-endian float32 ('<f4') and float64 ('<f8'), C order;
// 0-, 1- or 2-D on read (a 1-D array of length n reads as n×1). Writes version 1.0 atomically.
// Every error names the file and what was expected.
#pragma once

#include <string>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf::io {

enum class npy_dtype { f32, f64 };

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
npy_array npy_parse(const std::string& bytes, const std::string& name);

// The bytes of a .npy file holding a rows×cols array (shape (rows,) if as_vector).
template <class T>
std::string npy_encode(const_matrix_view<T> a, bool as_vector = false);
template <class T>
void npy_write(const std::string& path, const_matrix_view<T> a, bool as_vector = false);

}  // namespace kf::io
