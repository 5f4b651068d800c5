// The BLAS we link is the one we chose: OpenBLAS's OpenMP build (docs/dependencies.md). The
// pthread build collapses when called from OpenMP threads; this catches a wrong link.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kf
