// Internal: the element-wise steps between the GEMMs of a layer (bias add, bias gradient, residual
// add, copies), split across threads when the matrix is large enough to pay for the fork.
// Serial, they left the second core idle for ~a quarter of a training step. Every result is
// independent of the thread count: rows are cut into fixed blocks and the column sums of the
// blocks are added in block order.
#pragma once

#include <algorithm>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf::detail {

constexpr index kElementwiseParallelMin = index{1} << 15;  // entries
constexpr index kColsumBlock = 256;                        // rows per partial column sum

// y(n, :) = b for every row: a layer's output starts as its bias and the GEMM adds to it (beta
// = 1), which saves OpenBLAS's separate pass that zeroes C for beta = 0 and the bias pass.
template <class T>
void fill_rows(matrix_view<T> y, const T* b) {
#pragma omp parallel for schedule(static) if (y.rows * y.cols >= kElementwiseParallelMin)
  for (index n = 0; n < y.rows; ++n) std::copy_n(b, y.cols, y.data + n * y.ld);
}

// db += Σ_n d(n, :).
template <class T>
void add_column_sums(T* db, const_matrix_view<T> d) {
  const index blocks = (d.rows + kColsumBlock - 1) / kColsumBlock, c = d.cols;
  std::vector<T> part(static_cast<std::size_t>(blocks * c), T(0));
#pragma omp parallel for schedule(static) if (d.rows * c >= kElementwiseParallelMin)
  for (index bk = 0; bk < blocks; ++bk) {
    T* pr = part.data() + bk * c;
    const index r1 = std::min(d.rows, (bk + 1) * kColsumBlock);
    for (index n = bk * kColsumBlock; n < r1; ++n) {
      const T* dr = d.data + n * d.ld;
      for (index i = 0; i < c; ++i) pr[i] += dr[i];
    }
  }
  for (index bk = 0; bk < blocks; ++bk)
    for (index i = 0; i < c; ++i) db[i] += part[static_cast<std::size_t>(bk * c + i)];
}

// dst = a + b.
template <class T>
void add_into(matrix_view<T> dst, const_matrix_view<T> a, const_matrix_view<T> b) {
#pragma omp parallel for schedule(static) if (dst.rows * dst.cols >= kElementwiseParallelMin)
  for (index n = 0; n < dst.rows; ++n) {
    T* d = dst.data + n * dst.ld;
    const T* ar = a.data + n * a.ld;
    const T* br = b.data + n * b.ld;
    for (index i = 0; i < dst.cols; ++i) d[i] = ar[i] + br[i];
  }
}

// dst += a.
template <class T>
void accumulate(matrix_view<T> dst, const_matrix_view<T> a) {
#pragma omp parallel for schedule(static) if (dst.rows * dst.cols >= kElementwiseParallelMin)
  for (index n = 0; n < dst.rows; ++n) {
    T* d = dst.data + n * dst.ld;
    const T* ar = a.data + n * a.ld;
    for (index i = 0; i < dst.cols; ++i) d[i] += ar[i];
  }
}

// dst = 0.
template <class T>
void fill_zero(matrix_view<T> dst) {
#pragma omp parallel for schedule(static) if (dst.rows * dst.cols >= kElementwiseParallelMin)
  for (index n = 0; n < dst.rows; ++n) std::fill_n(dst.data + n * dst.ld, dst.cols, T(0));
}

// A layer's scratch matrix of r × c, reusing m's allocation across calls (see matrix::resize);
// zeroed when it will be accumulated into.
template <class T>
matrix_view<T> workspace(matrix<T>& m, index r, index c, bool zero) {
  m.resize(r, c);
  if (zero) fill_zero(m.view());
  return m.view();
}

// dst = a.
template <class T>
void copy_into(matrix_view<T> dst, const_matrix_view<T> a) {
#pragma omp parallel for schedule(static) if (dst.rows * dst.cols >= kElementwiseParallelMin)
  for (index n = 0; n < dst.rows; ++n)
    std::copy_n(a.data + n * a.ld, dst.cols, dst.data + n * dst.ld);
}

}  // namespace kf::detail
