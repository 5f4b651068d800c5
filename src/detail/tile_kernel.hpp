// Internal: attention's two tile products in registers, with K and V packed once per call.
//
// The forward's tiles through OpenBLAS reach about two thirds of square sgemm at head dim 64
// (docs/performance.md, "Lessons that still hold"): every call packs Q and K again (S = Q·Kᵀ has an
// inner dimension of only 64) and packs each fresh P before P·V. Here K is packed once per smoother
// call into panels of 16 keys (d × 16, transposed) and V into panels of 16 value columns
// (m × 16); the score kernel reads Q rows in place and the accumulation kernel reads P rows in
// place, so no tile is packed at all. Each product keeps a 6 × 16 block of its result in twelve
// AVX2 registers over the whole inner dimension.
//
// The loops are compiled twice: with the build's own flags ("baseline", plain loops: the
// reference the SIMD variant is tested against) and for AVX2+FMA; the first call picks AVX2 where
// the CPU has it. The smoother uses these products only when the AVX2 variant runs (elsewhere
// OpenBLAS's tiles are faster than plain loops) and tile_kernel_enabled() (KF_TILE_KERNEL=0 turns
// them off, e.g. to compare); tests/test_tile_kernel.cpp ties both variants to plain loops in
// double, and tests/test_smooth.cpp ties the smoother with them to the one without.
#pragma once

#include <span>

#include "kernelformer/tensor.hpp"

namespace kf::detail {

constexpr index kPanel = 16;  // keys (or value columns) per packed panel

inline index panel_count(index count) { return (count + kPanel - 1) / kPanel; }

// Packs rows [0, rows) of b (row stride ld, d columns), times scale, as transposed panels of 16
// rows: panel p is d × 16 floats at out + p·d·16, element (c, r) = scale·b(16p + r, c), zero where
// 16p + r ≥ rows. out holds panel_count(rows)·d·16 floats. (Attention folds its 1/T into the
// keys here: a scale in the score kernel would take a thirteenth register from its twelve
// accumulators, and the compiler then spills a K vector in the inner loop.)
void pack_row_panels(const float* b, index ld, index rows, index d, float scale, float* out);
// Packs b (rows × cols, row stride ld) as panels of 16 columns: panel q is rows × 16 floats at
// out + q·panel_stride (panel_stride ≥ rows·16), element (j, r) = b(j, 16q + r), zero where
// 16q + r ≥ cols.
void pack_column_panels(const float* b, index ld, index rows, index cols, float* out,
                        index panel_stride);

// s(i, 16p + r) = Σ_c a(i, c) · kp[p](c, r) for i < rows, p < panels: the score tile S = A·Kᵀ
// over `panels` consecutive row panels of K (d columns each). Rows of s have room for 16·panels
// floats.
void tile_scores(const float* a, index lda, index rows, index d, const float* kp, index panels,
                 float* s, index lds);
// c(i, 16q + r) += Σ_{j < k} p(i, j) · vp[q](j, r) for i < rows, q < panels: the accumulation
// C += P·V over `panels` column panels of V (vp points at row j = 0 of panel 0; panels are
// panel_stride floats apart). Rows of c have room for 16·panels floats.
void tile_accumulate(const float* p, index ldp, index rows, index k, const float* vp,
                     index panel_stride, index panels, float* c, index ldc);
// The same with P read transposed: c(i, 16q + r) += Σ_{j < k} pt(j, i) · vp[q](j, r), pt being
// k × rows with row stride ldp (the backward's dV += Pᵀ·dOut and dK += dSᵀ·Q).
void tile_accumulate_t(const float* pt, index ldp, index rows, index k, const float* vp,
                       index panel_stride, index panels, float* c, index ldc);

// Whether the smoother routes attention's tiles through these products: the AVX2 variant runs on
// this CPU, KF_TILE_KERNEL is not "0", and no set_tile_kernel_enabled(false) is in effect.
bool tile_kernel_enabled();
// For tests and benchmarks: turns the route on (only where AVX2 runs) or off; returns the
// previous setting.
bool set_tile_kernel_enabled(bool on);

// The variants compiled in; `available` says whether this CPU runs them.
struct tile_variant {
  const char* isa;  // "baseline", "avx2"
  bool available;
  void (*scores)(const float*, index, index, index, const float*, index, float*, index);
  void (*accumulate)(const float*, index, index, index, const float*, index, index, float*, index);
  void (*accumulate_t)(const float*, index, index, index, const float*, index, index, float*,
                       index);
};
std::span<const tile_variant> tile_variants();
// The variant tile_scores, tile_accumulate and tile_accumulate_t use, e.g. "avx2".
const char* tile_isa();

}  // namespace kf::detail
