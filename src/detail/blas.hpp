// Internal: the one door to BLAS. Row-major GEMM for float and double through OpenBLAS (the
// OpenMP build: called from inside our OpenMP parallel regions it runs single-threaded, so the
// two thread pools never fight).
#pragma once

#include <functional>

#include "kernelformer/tensor.hpp"

namespace kf::detail {

// C (m×n, ldc) = alpha · op(A) · op(B) + beta · C, row-major; op(X) = Xᵀ when trans_x.
void gemm(bool trans_a, bool trans_b, index m, index n, index k, float alpha, const float* a,
          index lda, const float* b, index ldb, float beta, float* c, index ldc);
void gemm(bool trans_a, bool trans_b, index m, index n, index k, double alpha, const double* a,
          index lda, const double* b, index ldb, double beta, double* c, index ldc);

// True when a product of this many multiply-adds runs on one BLAS thread (gemm() does that below
// a threshold): independent small products are then worth running side by side, see
// run_pair.
bool gemm_is_small(index m, index n, index k);

// Runs two independent pieces of work (e.g. a layer's dX and dW products) on two threads when
// both are small GEMM-sized jobs (each then single-threaded inside), else one after the other
// (each GEMM then uses OpenBLAS's threads).
void run_pair(bool side_by_side, const std::function<void()>& f, const std::function<void()>& g);

// 2 for OpenBLAS's OpenMP build (what we link), 1 for the pthread build, 0 for sequential.
int blas_parallel_mode();

}  // namespace kf::detail
