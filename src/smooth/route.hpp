// Internal: the routes of the smoothing primitive and the one decision among them.
//
// Every route computes the same out, lse (and gradients); they differ in how a tile's products
// are formed. smooth.cpp decides once per call, from the kernel, the mask, the sizes and the
// request, and reports the route in smooth_stats:
//
//   route           serves                                               files
//   features        feature-map kernels (elu1, rff, favor): φ(K)ᵀV as     features.cpp,
//                   prefix sums, O((n + m)·r·dv)                         features_backward.cpp
//   topk            top-k and knn masks: a bounded heap per row, then    topk.cpp
//                   the selected pairs exactly
//   register_tiles  float; one kernel factor on dot products, or on      forward_registers.cpp,
//                   squared distances by the expansion (> kDirectMaxD    backward_registers.cpp
//                   columns); dv > kNarrowDv; AVX2 on the CPU;
//                   KF_TILE_KERNEL not 0; inputs too small to overflow a
//                   partial sum. The backward serves attention's kernel
//                   (exp_dot, no parameter gradient) only
//   gemm_tiles      everything else: OpenBLAS tiles, direct differences  forward_gemm.cpp,
//                   for narrow distance factors, dot products for        backward_gemm.cpp
//                   narrow values (regression)
//
// The tiled routes share the plan (tiles/plan.hpp), the weight tiles (tiles/weight_tile.hpp),
// the online row update (forward_rows.hpp) and the backward's row and tile steps
// (backward_rows.hpp). kf::reference (reference.cpp) is the plain loops every route is tested
// against.
#pragma once

#include <span>

#include "kernelformer/smooth.hpp"
#include "smooth/tiles/plan.hpp"

namespace kf::detail::tiles {

// How one forward call runs (choose_forward_route).
struct forward_route {
  smooth_route kind = smooth_route::gemm_tiles;
  bool want_sq = false;  // also out_sq = Σ p² v (gemm tiles only)
  // Attention's exp(q·k/T) alone: the score product writes the log-weights q·k/T straight into
  // the weight tile (fused_exp_dot).
  bool fused = false;
  // gemm tiles with the fused kernel: the score tile stays zeroed between tiles (the exp pass
  // moves P to a tile of its own and leaves zeros), so each tile's GEMM adds to it (β = 1) and
  // OpenBLAS skips its β = 0 pass.
  bool keep_zeroed = false;
  // K = 1/u, u = 1 + c·|q − k|² (cauchy; rational quadratic with α = 1): the tile holds u and
  // P = umin / u — a division instead of a log and an exp per weight (they took 28% of the
  // forward at n = 1024).
  bool ratio = false;
  // register tiles: keys are packed times key_scale (1/T for attention's kernel, the expansion's
  // −2 for a distance), and K and V are packed once per call when both fit in kPackOnceBytes
  // (else each tile packs its own keys and values into the thread's scratch).
  float key_scale = 1;
  bool pack_once = false;
};

// How one backward call runs (choose_backward_route).
struct backward_route {
  smooth_route kind = smooth_route::gemm_tiles;
  // A single log-domain factor with a constant dweight (attention's exp_dot, the gaussian) and no
  // kernel-parameter gradient: dS = P ⊙ (G − dot)·dweight in the same pass as C.
  bool fuse_dw = false;
  double const_dw = 0;
  float key_scale = 1;  // register tiles: K packed times 1/T
  bool pack_once = false;
};

template <class T>
forward_route choose_forward_route(const plan<T>& pl, bool want_sq);
template <class T>
backward_route choose_backward_route(const plan<T>& pl, bool want_dparam);

// The routes (explicitly instantiated in their files; the register routes exist in float only).
template <class T>
smooth_stats forward_gemm(const plan<T>& pl, const forward_route& r, matrix_view<T> out,
                          matrix_view<T> out_sq, std::span<T> lse);
smooth_stats forward_registers(const plan<float>& pl, const forward_route& r,
                               matrix_view<float> out, std::span<float> lse);
template <class T>
smooth_stats forward_topk(const plan<T>& pl, matrix_view<T> out, matrix_view<T> out_sq,
                          std::span<T> lse);
template <class T>
void backward_gemm(const plan<T>& pl, const backward_route& r, smooth_grads<T>& g,
                   const_matrix_view<T> dout, const_matrix_view<T> out, std::span<const T> lse);
void backward_registers(const plan<float>& pl, const backward_route& r, smooth_grads<float>& g,
                        const_matrix_view<float> dout, const_matrix_view<float> out,
                        std::span<const float> lse);
template <class T>
void backward_topk(const plan<T>& pl, smooth_grads<T>& g, const_matrix_view<T> dout);

}  // namespace kf::detail::tiles
