// The BLAS we link is the one we chose: OpenBLAS's OpenMP build (docs/dependencies.md). The
// pthread build collapses when called from OpenMP threads; this catches a wrong link.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "detail/blas.hpp"

namespace kf {
namespace {

TEST(Blas, LinkedOpenBlasIsTheOpenMPBuild) { EXPECT_EQ(detail::blas_parallel_mode(), 2); }

TEST(Blas, RowMajorGemmWithStridesAndTransposes) {
  // A (2×3, ld 4) · Bᵀ where B is 2×3: C = A·Bᵀ (2×2).
  const std::vector<double> a = {1, 2, 3, -1, 4, 5, 6, -1}, b = {1, 0, 1, 0, 1, 0};
  std::vector<double> c(4, 0.0);
  detail::gemm(false, true, 2, 2, 3, 1.0, a.data(), 4, b.data(), 3, 0.0, c.data(), 2);
  EXPECT_EQ(c, (std::vector<double>{4, 2, 10, 5}));
  std::vector<float> af = {1, 2, 3, 4}, bf = {1, 1, 1, 1}, cf(4, 1.0f);
  detail::gemm(true, false, 2, 2, 2, 1.0f, af.data(), 2, bf.data(), 2, 1.0f, cf.data(), 2);
  EXPECT_EQ(cf, (std::vector<float>{5, 5, 7, 7}));
}

// Outside a parallel region detail::gemm cuts a product in two halves over one fork: by rows of
// C, or by the inner dimension when C is small and that dimension long (weight gradients); inside
// a parallel region it runs whole on the calling thread. For every transpose combination, with
// beta accumulation: the cut is deterministic (same bits on a repeat), agrees with the whole call
// to rounding (OpenBLAS picks its kernels by size, so the last bits may differ, as with its own
// threading) and with a plain triple loop in double.
void expect_split_matches_whole_and_loops(index m, index n, index k) {
  std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(n * k));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = float((i * 37) % 23) / 7.0f - 1.5f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = float((i * 11) % 19) / 5.0f - 1.7f;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string(ta ? "Aᵀ" : "A") + (tb ? "·Bᵀ" : "·B") + " m=" + std::to_string(m) +
                   " n=" + std::to_string(n) + " k=" + std::to_string(k));
      const index lda = ta ? m : k, ldb = tb ? k : n;
      std::vector<float> c1(static_cast<std::size_t>(m * n), 0.5f), c2 = c1, c3 = c1;
      detail::gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 1.0f, c1.data(), n);
      detail::gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 1.0f, c3.data(), n);
      EXPECT_EQ(c1, c3);
#pragma omp parallel num_threads(2)
      {
#pragma omp single
        detail::gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 1.0f, c2.data(), n);
      }
      const double tol = 4e-6 * double(k);  // float accumulation over k terms of size ~1
      for (std::size_t i = 0; i < c1.size(); ++i) ASSERT_NEAR(c1[i], c2[i], tol);
      double worst = 0;
      for (index i = 0; i < m; ++i)
        for (index j = 0; j < n; ++j) {
          double s = 0.5;
          for (index l = 0; l < k; ++l)
            s += double(ta ? a[static_cast<std::size_t>(l * m + i)]
                           : a[static_cast<std::size_t>(i * k + l)]) *
                 double(tb ? b[static_cast<std::size_t>(j * k + l)]
                           : b[static_cast<std::size_t>(l * n + j)]);
          worst = std::max(worst, std::abs(s - double(c1[static_cast<std::size_t>(i * n + j)])));
        }
      EXPECT_LT(worst, tol);
    }
}

TEST(Blas, RowSplitIsExactAndMatchesPlainLoops) {
  expect_split_matches_whole_and_loops(203, 37, 29);  // odd: the cut is not at m / 2
  expect_split_matches_whole_and_loops(640, 96, 200);
}

TEST(Blas, InnerSplitIsExactAndMatchesPlainLoops) {
  expect_split_matches_whole_and_loops(24, 20, 5001);  // C small, inner dimension long and odd
}

// One row of C goes to GEMV (no packing of B): every transpose against the loops, a strided
// column of A, beta = 0 over garbage (never read), and k = 0 (C = beta·C, by the GEMM path).
TEST(Blas, OneRowIsAGemvThatMatchesPlainLoops) {
  expect_split_matches_whole_and_loops(1, 37, 29);
  expect_split_matches_whole_and_loops(1, 384, 128);
  const std::vector<double> a = {1, 9, 9, 2, 9, 9, 3, 9, 9};  // A (3 × 3): op(A) = column 0ᵀ
  const std::vector<double> b = {1, 0, 1, 0, 1, 0};           // B (2 × 3): C = A₀ᵀ·Bᵀ
  std::vector<double> c = {std::nan(""), std::nan("")};
  detail::gemm(true, true, 1, 2, 3, 2.0, a.data(), 3, b.data(), 3, 0.0, c.data(), 2);
  EXPECT_EQ(c, (std::vector<double>{8, 4}));
  detail::gemm(true, true, 1, 2, 0, 2.0, a.data(), 3, b.data(), 3, 0.5, c.data(), 2);
  EXPECT_EQ(c, (std::vector<double>{4, 2}));
}

TEST(Blas, RunPairRunsBothPieces) {
  int x = 0, y = 0;
  detail::run_pair(
      true, [&] { x = 1; }, [&] { y = 2; });
  EXPECT_EQ(x + y, 3);
  detail::run_pair(
      false, [&] { x = 5; }, [&] { y = x + 1; });  // in order when not side by side
  EXPECT_EQ(y, 6);
}

}  // namespace
}  // namespace kf
