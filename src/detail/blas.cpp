#include "detail/blas.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <vector>

namespace kf::detail {
namespace {
CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }
blasint bi(index v) { return static_cast<blasint>(v); }

// Below this many multiply-adds a GEMM runs on one thread: forking OpenBLAS's team cost more
// than it saved on the language model's 512 × 64 × 64 products (kf train lm --config tiny:
// +10–18% tokens/s with one BLAS thread; docs/performance.md, "Lessons that still hold").
// OpenBLAS's OpenMP build sizes its team from omp_get_max_threads(), so the calling thread's
// setting is lowered for the call.
constexpr double kSmallGemm = double(1 << 24);

struct small_gemm_guard {
  int saved = 0;
  small_gemm_guard(index m, index n, index k) {
    if (double(m) * double(n) * double(k) < kSmallGemm && !omp_in_parallel()) {
      saved = omp_get_max_threads();
      if (saved > 1)
        omp_set_num_threads(1);
      else
        saved = 0;
    }
  }
  ~small_gemm_guard() {
    if (saved > 0) omp_set_num_threads(saved);
  }
  small_gemm_guard(const small_gemm_guard&) = delete;
  small_gemm_guard& operator=(const small_gemm_guard&) = delete;
};
// Outside any parallel region, with two or more threads, a product is cut in two halves run side
// by side, each single-threaded inside OpenBLAS: one libgomp fork instead of OpenBLAS's own
// team, whose threads wait on each other for shared packed panels (perf: sched_yield and
// libgomp spinning). On the periodic model's training step (kf train periodic --config code)
// epoch medians went from ~2.0 to ~1.8 s, within the host's ±10% noise; small products were
// already cut this way (their team start-up cost more than the product). Two cuts
// (docs/performance.md):
//   - rows of C when it has >= 128 rows, at a multiple of 64 rows (whole micro-kernel blocks);
//   - the inner dimension when C is small and the inner dimension long (a weight gradient
//     dW = dYᵀX: 128 × 128 over 50k rows; cutting its rows would pack X twice): the second half
//     goes to a scratch C, added after both halves.
// Whether a product is cut depends on its shape only: with one thread, or inside a parallel
// region, the two halves run one after the other — the same arithmetic, so a result never
// depends on the thread count (a model trained on 1 or on 2 threads has the same weights, bit
// for bit: KfLauncher.TrainingGivesTheSameNumbersOnOneAndTwoThreads; the kf launcher may pick
// fewer threads on a busy machine). A cut result may differ from one whole call in the last bits
// (OpenBLAS picks its kernels by size) — tests/test_blas.cpp.
constexpr index kSplitMinRows = 128;
constexpr index kSplitMinInner = 4096;

bool can_split() { return !omp_in_parallel() && omp_get_max_threads() >= 2; }

template <class F>
bool split_rows(index m, F&& call) {
  if (m < kSplitMinRows) return false;
  const index half = std::max<index>(64, (m / 2) / 64 * 64);
  if (!can_split()) {
    call(0, half);
    call(half, m);
    return true;
  }
#pragma omp parallel num_threads(2)
  {
    const int t = omp_get_thread_num();
    call(t == 0 ? 0 : half, t == 0 ? half : m);
  }
  return true;
}

// One body for both precisions: blas_call is cblas_sgemm or cblas_dgemm.
template <class T, class Blas>
bool split_inner(Blas blas_call, bool trans_a, bool trans_b, index m, index n, index k, T alpha,
                 const T* a, index lda, const T* b, index ldb, T beta, T* c, index ldc) {
  if (k < kSplitMinInner || k < 8 * std::max(m, n)) return false;
  const index half = k / 2;
  static thread_local std::vector<T> part;
  part.resize(static_cast<std::size_t>(m * n));
  // Where the second half of the inner dimension starts in A and in B.
  const T* a1 = trans_a ? a + half * lda : a + half;
  const T* b1 = trans_b ? b + half : b + half * ldb;
  std::vector<T>& second = part;
  auto first = [&] {
    blas_call(CblasRowMajor, tr(trans_a), tr(trans_b), bi(m), bi(n), bi(half), alpha, a, bi(lda), b,
              bi(ldb), beta, c, bi(ldc));
  };
  auto rest = [&] {
    blas_call(CblasRowMajor, tr(trans_a), tr(trans_b), bi(m), bi(n), bi(k - half), alpha, a1,
              bi(lda), b1, bi(ldb), T(0), second.data(), bi(n));
  };
  if (can_split()) {
#pragma omp parallel num_threads(2)
    {
      if (omp_get_thread_num() == 0)
        first();
      else
        rest();
    }
  } else {
    first();
    rest();
  }
  for (index i = 0; i < m; ++i)
    for (index j = 0; j < n; ++j) c[i * ldc + j] += second[static_cast<std::size_t>(i * n + j)];
  return true;
}
}  // namespace

// One row of C (m = 1: a token's step in cached generation, model/generation.hpp): a GEMV.
// OpenBLAS's GEMM packs all of op(B) on every call, which for one row cost more than the product
// (perf of a cached generation step: sgemm_incopy 39%, the kernel 25%). k > 0 only: BLAS's GEMV
// returns early on an empty inner dimension without applying beta.
template <class T, class Gemv>
void gemv_row(Gemv gemv_call, bool trans_a, bool trans_b, index n, index k, T alpha, const T* a,
              index lda, const T* b, index ldb, T beta, T* c) {
  const index inc_a = trans_a ? std::max<index>(lda, 1) : 1;  // op(A) = Aᵀ: a column of A
  const blasint ld = bi(std::max<index>(ldb, 1));
  if (trans_b)  // op(B) = Bᵀ with B (n × k): c = B a
    gemv_call(CblasRowMajor, CblasNoTrans, bi(n), bi(k), alpha, b, ld, a, bi(inc_a), beta, c, 1);
  else  // B (k × n): c = Bᵀ a
    gemv_call(CblasRowMajor, CblasTrans, bi(k), bi(n), alpha, b, ld, a, bi(inc_a), beta, c, 1);
}

// One body for both precisions: blas_call is cblas_sgemm or cblas_dgemm, gemv_call its GEMV.
template <class T, class Blas, class Gemv>
void gemm_rows(Blas blas_call, Gemv gemv_call, bool trans_a, bool trans_b, index m, index n,
               index k, T alpha, const T* a, index lda, const T* b, index ldb, T beta, T* c,
               index ldc) {
  if (m == 0 || n == 0) return;
  if (m == 1 && k > 0) {
    const small_gemm_guard one_thread(m, n, k);
    gemv_row(gemv_call, trans_a, trans_b, n, k, alpha, a, lda, b, ldb, beta, c);
    return;
  }
  auto call = [&](index i0, index i1) {
    blas_call(CblasRowMajor, tr(trans_a), tr(trans_b), bi(i1 - i0), bi(n), bi(k), alpha,
              a + (trans_a ? i0 : i0 * lda), bi(lda < 1 ? 1 : lda), b, bi(ldb < 1 ? 1 : ldb), beta,
              c + i0 * ldc, bi(ldc < 1 ? 1 : ldc));
  };
  if (split_inner(blas_call, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    return;
  if (split_rows(m, call)) return;
  const small_gemm_guard one_thread(m, n, k);
  call(0, m);
}

void gemm(bool trans_a, bool trans_b, index m, index n, index k, float alpha, const float* a,
          index lda, const float* b, index ldb, float beta, float* c, index ldc) {
  gemm_rows(cblas_sgemm, cblas_sgemv, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
            ldc);
}

void gemm(bool trans_a, bool trans_b, index m, index n, index k, double alpha, const double* a,
          index lda, const double* b, index ldb, double beta, double* c, index ldc) {
  gemm_rows(cblas_dgemm, cblas_dgemv, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
            ldc);
}

bool gemm_is_small(index m, index n, index k) {
  return double(m) * double(n) * double(k) < kSmallGemm;
}

void run_pair(bool side_by_side, const std::function<void()>& f, const std::function<void()>& g) {
  if (!side_by_side || omp_in_parallel() || omp_get_max_threads() < 2) {
    f();
    g();
    return;
  }
#pragma omp parallel sections num_threads(2)
  {
#pragma omp section
    f();
#pragma omp section
    g();
  }
}

int blas_parallel_mode() { return openblas_get_parallel(); }

}  // namespace kf::detail
