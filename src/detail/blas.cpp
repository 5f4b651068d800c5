#include "detail/blas.hpp"

#include <cblas.h>

namespace kf::detail {
namespace {
CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }
blasint bi(index v) { return static_cast<blasint>(v); }
}  // namespace

void gemm(bool trans_a, bool trans_b, index m, index n, index k, float alpha, const float* a,
          index lda, const float* b, index ldb, float beta, float* c, index ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, tr(trans_a), tr(trans_b), bi(m), bi(n), bi(k), alpha, a,
              bi(lda < 1 ? 1 : lda), b, bi(ldb < 1 ? 1 : ldb), beta, c, bi(ldc < 1 ? 1 : ldc));
}

void gemm(bool trans_a, bool trans_b, index m, index n, index k, double alpha, const double* a,
          index lda, const double* b, index ldb, double beta, double* c, index ldc) {
  if (m == 0 || n == 0) return;
  cblas_dgemm(CblasRowMajor, tr(trans_a), tr(trans_b), bi(m), bi(n), bi(k), alpha, a,
              bi(lda < 1 ? 1 : lda), b, bi(ldb < 1 ? 1 : ldb), beta, c, bi(ldc < 1 ? 1 : ldc));
}

int blas_parallel_mode() { return openblas_get_parallel(); }

}  // namespace kf::detail
