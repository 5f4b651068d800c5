// kernelformer/tensor.hpp — the array types every other header speaks.
//
// matrix_view<T>: a non-owning row-major 2-D view with a row stride `ld` (elements between the
// starts of consecutive rows), so one head of a (B*T, H*D) activation or a block of columns is a
// view, never a copy. const_matrix_view<T> is the read-only form. matrix<T> owns its storage and
// hands out views. Shapes in comments follow one legend: n queries, m keys, d features,
// dv value channels; for networks B batch, T positions, C channels, H heads, D head dim.
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

namespace kf {

using index = std::ptrdiff_t;

template <class T>
struct matrix_view {
  T* data = nullptr;
  index rows = 0;
  index cols = 0;
  index ld = 0;  // row stride in elements, >= cols

  matrix_view() = default;
  matrix_view(T* d, index r, index c) : data(d), rows(r), cols(c), ld(c) {}
  matrix_view(T* d, index r, index c, index stride) : data(d), rows(r), cols(c), ld(stride) {}
  // A view of T converts to a view of const T.
  template <class U>
  requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
      matrix_view(matrix_view<U> o)  // NOLINT(google-explicit-constructor)
      : data(o.data), rows(o.rows), cols(o.cols), ld(o.ld) {}

  T& operator()(index i, index j) const { return data[i * ld + j]; }
  T* row(index i) const { return data + i * ld; }
  bool empty() const { return rows == 0 || cols == 0; }
  // Rows [r0, r0 + nr) and columns [c0, c0 + nc) as a view of the same storage.
  matrix_view block(index r0, index c0, index nr, index nc) const {
    return {data + r0 * ld + c0, nr, nc, ld};
  }
};

template <class T>
using const_matrix_view = matrix_view<const T>;

// Owning row-major matrix, zero-initialised.
template <class T>
class matrix {
 public:
  matrix() = default;
  matrix(index r, index c) : buf_(static_cast<std::size_t>(r * c)), rows_(r), cols_(c) {}
  matrix(index r, index c, std::vector<T> values) : buf_(std::move(values)), rows_(r), cols_(c) {}

  index rows() const { return rows_; }
  index cols() const { return cols_; }
  index size() const { return rows_ * cols_; }
  T* data() { return buf_.data(); }
  const T* data() const { return buf_.data(); }
  T& operator()(index i, index j) { return buf_[static_cast<std::size_t>(i * cols_ + j)]; }
  const T& operator()(index i, index j) const {
    return buf_[static_cast<std::size_t>(i * cols_ + j)];
  }
  matrix_view<T> view() { return {buf_.data(), rows_, cols_}; }
  const_matrix_view<T> view() const { return {buf_.data(), rows_, cols_}; }
  const_matrix_view<T> cview() const { return {buf_.data(), rows_, cols_}; }
  std::vector<T>& values() { return buf_; }
  const std::vector<T>& values() const { return buf_; }
  // Gives the matrix the shape r × c, keeping its allocation when it is large enough (layers
  // reuse their buffers across batches of different sizes: a fresh allocation of this size costs
  // a page fault per 4 KiB). The contents afterwards are unspecified: callers overwrite them.
  void resize(index r, index c) {
    buf_.resize(static_cast<std::size_t>(r * c));
    rows_ = r;
    cols_ = c;
  }

 private:
  std::vector<T> buf_;
  index rows_ = 0;
  index cols_ = 0;
};

}  // namespace kf
