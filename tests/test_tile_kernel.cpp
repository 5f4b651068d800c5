// Attention's register-tiled tile products (src/detail/tile_kernel.hpp): packing layouts, and
// every variant this CPU runs (scores, accumulation, transposed accumulation) tied to plain loops
// in double, on shapes that leave partial row
// groups and partial panels.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "detail/tile_kernel.hpp"

namespace kf::detail {
namespace {

std::vector<float> random_floats(index n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (float& v : x) v = u(rng);
  return x;
}

TEST(TileKernel, PackedPanelsHoldTheScaledElementsAndZeroPadding) {
  const index rows = 19, d = 3, ld = 5;  // 19 rows: one full panel and one of 3
  const auto b = random_floats(rows * ld, 1);
  std::vector<float> kp(static_cast<std::size_t>(panel_count(rows) * kPanel * d), -7.f);
  pack_row_panels(b.data(), ld, rows, d, 0.5f, kp.data());
  for (index p = 0; p < panel_count(rows); ++p)
    for (index c = 0; c < d; ++c)
      for (index r = 0; r < kPanel; ++r) {
        const index row = p * kPanel + r;
        const float want = row < rows ? 0.5f * b[static_cast<std::size_t>(row * ld + c)] : 0.f;
        EXPECT_EQ(kp[static_cast<std::size_t>((p * d + c) * kPanel + r)], want) << p << c << r;
      }
  const index cols = 20, stride = rows * kPanel + 3;  // two panels, the second of 4 columns
  const auto v = random_floats(rows * 23, 2);
  std::vector<float> vp(static_cast<std::size_t>(2 * stride), -7.f);
  pack_column_panels(v.data(), 23, rows, cols, vp.data(), stride);
  for (index q = 0; q < 2; ++q)
    for (index j = 0; j < rows; ++j)
      for (index r = 0; r < kPanel; ++r) {
        const index col = q * kPanel + r;
        const float want = col < cols ? v[static_cast<std::size_t>(j * 23 + col)] : 0.f;
        EXPECT_EQ(vp[static_cast<std::size_t>(q * stride + j * kPanel + r)], want);
      }
}

TEST(TileKernel, EveryAvailableVariantMatchesPlainLoops) {
  int ran = 0;
  for (const auto& var : tile_variants()) {
    if (!var.available) continue;
    ++ran;
    // rows 1…13 cover each remainder group of the 6-row kernel; d = 1 and 64; keys and value
    // columns that end in partial panels.
    for (const index rows : {1, 5, 6, 7, 13})
      for (const index d : {1, 7, 64})
        for (const index keys : {1, 16, 37}) {
          SCOPED_TRACE(std::string(var.isa) + " rows=" + std::to_string(rows) +
                       " d=" + std::to_string(d) + " keys=" + std::to_string(keys));
          const index lda = d + 3, lds = panel_count(keys) * kPanel + 5;
          const auto a = random_floats(rows * lda, 3), k = random_floats(keys * d, 4);
          std::vector<float> kp(static_cast<std::size_t>(panel_count(keys) * kPanel * d));
          pack_row_panels(k.data(), d, keys, d, 1.f, kp.data());
          std::vector<float> s(static_cast<std::size_t>(rows * lds), 123.f);
          var.scores(a.data(), lda, rows, d, kp.data(), panel_count(keys), s.data(), lds);
          for (index i = 0; i < rows; ++i) {
            for (index j = 0; j < keys; ++j) {
              double want = 0;
              for (index c = 0; c < d; ++c)
                want += double(a[static_cast<std::size_t>(i * lda + c)]) *
                        double(k[static_cast<std::size_t>(j * d + c)]);
              EXPECT_NEAR(s[static_cast<std::size_t>(i * lds + j)], want, 1e-5 * double(d))
                  << i << "," << j;
            }
            for (index j = keys; j < panel_count(keys) * kPanel; ++j)  // padded keys score 0
              EXPECT_EQ(s[static_cast<std::size_t>(i * lds + j)], 0.f);
            for (index j = panel_count(keys) * kPanel; j < lds; ++j)  // nothing past the panels
              EXPECT_EQ(s[static_cast<std::size_t>(i * lds + j)], 123.f);
          }
          // C += P·V with V of 20 columns (a full panel and one of 4), P = the scores' first keys.
          const index cols = 20, ldc = 2 * kPanel + 1, stride = keys * kPanel;
          const auto v = random_floats(keys * cols, 5), c0 = random_floats(rows * ldc, 6);
          std::vector<float> vp(static_cast<std::size_t>(2 * stride));
          pack_column_panels(v.data(), cols, keys, cols, vp.data(), stride);
          std::vector<float> c = c0;
          var.accumulate(a.data(), lda, rows, std::min(keys, d), vp.data(), stride, 2, c.data(),
                         ldc);
          for (index i = 0; i < rows; ++i)
            for (index col = 0; col < ldc; ++col) {
              double want = c0[static_cast<std::size_t>(i * ldc + col)];
              if (col < cols)
                for (index j = 0; j < std::min(keys, d); ++j)
                  want += double(a[static_cast<std::size_t>(i * lda + j)]) *
                          double(v[static_cast<std::size_t>(j * cols + col)]);
              EXPECT_NEAR(c[static_cast<std::size_t>(i * ldc + col)], want, 1e-5 * double(d + 1))
                  << i << "," << col;
            }
          // The same with P read transposed: pt is inner × rows (row stride rows + 2).
          const index inner = std::min(keys, d), ldt = rows + 2;
          const auto pt = random_floats(inner * ldt, 7);
          c = c0;
          var.accumulate_t(pt.data(), ldt, rows, inner, vp.data(), stride, 2, c.data(), ldc);
          for (index i = 0; i < rows; ++i)
            for (index col = 0; col < ldc; ++col) {
              double want = c0[static_cast<std::size_t>(i * ldc + col)];
              if (col < cols)
                for (index j = 0; j < inner; ++j)
                  want += double(pt[static_cast<std::size_t>(j * ldt + i)]) *
                          double(v[static_cast<std::size_t>(j * cols + col)]);
              EXPECT_NEAR(c[static_cast<std::size_t>(i * ldc + col)], want, 1e-5 * double(d + 1))
                  << "transposed " << i << "," << col;
            }
        }
  }
  EXPECT_GE(ran, 1);
}

TEST(TileKernel, RouteIsOnOnlyWhereTheSimdVariantRuns) {
  const bool simd = std::string(tile_isa()) != "baseline";
  const bool before = set_tile_kernel_enabled(true);
  EXPECT_EQ(tile_kernel_enabled(), simd);
  set_tile_kernel_enabled(false);
  EXPECT_FALSE(tile_kernel_enabled());
  set_tile_kernel_enabled(before);
}

}  // namespace
}  // namespace kf::detail
