// kernelformer/smooth.hpp — THE primitive. Everything else (regression, density, KNN, every
// attention head) calls it; nothing else computes kernel weights.
//
//   out_i = Σ_{j ∈ M(i)} K(q_i, k_j) v_j / Σ_{j ∈ M(i)} K(q_i, k_j)
//   Q (n×d), K (m×d), V (m×dv) → out (n×dv);  lse_i = log Σ_{j ∈ M(i)} K(q_i, k_j)
//
// smooth_forward streams over key tiles with an online (max, sum) update, so the n×m weight
// matrix is never materialized: extra memory is O((n + m)(d + dv)) plus fixed tiles per thread.
// smooth_backward recomputes the weights tile by tile from lse (as FlashAttention does) and, for
// every kernel, uses the one rule (p_j = w_j / Σw, g_j = dout·(v_j − out)):
//   d log w_j = p_j g_j,  dv_j += p_j dout,  then the kernel's dweight/ds chains to q, k and its
//   parameter. Gradients ACCUMULATE (+=) into dq, dk, dv and dparam.
// smooth_weights returns rows of the normalized weight matrix on demand.
// kf::reference:: holds the plain double-precision implementation kept forever beside the fast
// path; tests tie the two for every kernel × mask × shape.
//
// Feature-map kernels (elu1, rff, favor: feature_kernels.hpp) take their own route: φ(K)ᵀV and
// Σφ(K) as (prefix) sums, O((n + m)·r·dv), for the masks none, causal[:offset] and padding;
// lse_i = log φ(q_i)ᵀΣφ(k_j), and a row whose sum is ≤ 0 (rff) is an empty row.
// Empty rows (no key in M(i) with nonzero weight: a compact kernel far from every key, an empty
// mask, a linear kernel with no positive similarity) have ONE policy: out_i = 0, lse_i = −inf,
// no gradient flows through the row, and smooth_stats::empty_rows counts them. Never NaN.
// Inputs must be finite (checked, std::invalid_argument otherwise). A log-weight that overflows
// to +inf (|q·k|/T beyond the float range) throws std::overflow_error naming the row.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/masks.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

struct smooth_options {
  // Optional per-dimension bandwidths (size d, each > 0): q and k are divided by them column by
  // column before a distance kernel sees them, so |q − k|² becomes Σ_c ((q_c − k_c)/h_c)² and
  // the kernel's own bandwidth multiplies every h_c. Distance kernels only (not products).
  std::vector<double> bandwidth_per_dim;
  int threads = 0;  // 0: OpenMP's default (OMP_NUM_THREADS or the core count)
  // Scan q, k, v for NaN/inf first (std::invalid_argument naming the entry). Layers inside a
  // model turn it off: their inputs come from finite parameters, and the training loops check
  // every loss (a non-finite loss stops training with an error), so nothing turns NaN silently.
  bool check_finite = true;
  // Dropout on the normalized weights (training only; PyTorch's attention dropout): each p_ij is
  // kept with probability 1 − dropout and then scaled by 1/(1 − dropout); the normalizer (lse)
  // stays that of the whole row, so out_i = Σ_j p_ij m_ij v_j. The mask m is a pure function of
  // (dropout_seed, i, j) — detail::dropout_keep — so the backward pass, both implementations and
  // any thread count draw the same one. Pass the same options to smooth_backward. Not combined
  // with top-k masks or with smooth_forward_sq. 0 ≤ dropout < 1.
  double dropout = 0.0;
  std::uint64_t dropout_seed = 0;
};

// The route that computed a call: one decision per call from the kernel, the mask, the sizes and
// the request (src/smooth/route.hpp; docs/architecture.md): the plain reference loops, GEMM tiles
// (OpenBLAS), register tiles (our own products, float), top-k selection, or a feature map's
// prefix sums (feature-map kernels).
enum class smooth_route { reference, gemm_tiles, register_tiles, topk, features };
std::string_view smooth_route_name(smooth_route r);  // "gemm-tiles", "register-tiles", "topk", …

struct smooth_stats {
  index empty_rows = 0;  // rows that hit the empty-row policy (out = 0)
  smooth_route route = smooth_route::reference;
};

template <class T>
struct smooth_grads {
  smooth_grads() = default;
  smooth_grads(matrix_view<T> dq_, matrix_view<T> dk_, matrix_view<T> dv_)
      : dq(dq_), dk(dk_), dv(dv_) {}
  matrix_view<T> dq, dk, dv;  // accumulated into (+=); an empty view skips that gradient
  // d loss / d kernel parameter (bandwidth or temperature); [1] is the product's second factor.
  double dparam[2] = {0.0, 0.0};
  std::vector<double> dbandwidth_per_dim;  // filled (+=) when bandwidth_per_dim is used
  bool want_dparam = true;  // false: skip the kernel-parameter gradient (a fixed kernel)
};

// out: n×dv. lse: n entries or empty (not stored). Returns the empty-row count.
template <class T>
smooth_stats smooth_forward(matrix_view<T> out, std::span<T> lse, const_matrix_view<T> q,
                            const_matrix_view<T> k, const_matrix_view<T> v, const kernel_spec& kern,
                            const mask& msk, const smooth_options& opt = {});

// Also out_sq = Σ_j p_ij² v_j (n×dv): with v_j = 1 it is Σ_j p_ij², the variance factor of a
// linear smoother (Var out_i = σ² Σ_j p_ij² for independent noise of variance σ² on the values).
template <class T>
smooth_stats smooth_forward_sq(matrix_view<T> out, matrix_view<T> out_sq, std::span<T> lse,
                               const_matrix_view<T> q, const_matrix_view<T> k,
                               const_matrix_view<T> v, const kernel_spec& kern, const mask& msk,
                               const smooth_options& opt = {});

// dout: n×dv, out and lse from smooth_forward with the same inputs. Returns the route that ran
// (empty_rows is not counted here).
template <class T>
smooth_stats smooth_backward(smooth_grads<T>& grads, const_matrix_view<T> dout,
                             const_matrix_view<T> out, std::span<const T> lse,
                             const_matrix_view<T> q, const_matrix_view<T> k, const_matrix_view<T> v,
                             const kernel_spec& kern, const mask& msk,
                             const smooth_options& opt = {});

// Normalized weights p_ij for the query rows listed in `rows` (all n rows if empty):
// w is rows.size()×m (or n×m). Empty rows come back as zeros.
template <class T>
void smooth_weights(matrix_view<T> w, std::span<const index> rows, const_matrix_view<T> q,
                    const_matrix_view<T> k, const kernel_spec& kern, const mask& msk,
                    const smooth_options& opt = {});

namespace reference {
// Plain loops in double, one query row at a time; same contracts as the fast path.
template <class T>
smooth_stats smooth_forward(matrix_view<T> out, std::span<T> lse, const_matrix_view<T> q,
                            const_matrix_view<T> k, const_matrix_view<T> v, const kernel_spec& kern,
                            const mask& msk, const smooth_options& opt = {});
template <class T>
smooth_stats smooth_forward_sq(matrix_view<T> out, matrix_view<T> out_sq, std::span<T> lse,
                               const_matrix_view<T> q, const_matrix_view<T> k,
                               const_matrix_view<T> v, const kernel_spec& kern, const mask& msk,
                               const smooth_options& opt = {});
template <class T>
void smooth_backward(smooth_grads<T>& grads, const_matrix_view<T> dout, const_matrix_view<T> out,
                     std::span<const T> lse, const_matrix_view<T> q, const_matrix_view<T> k,
                     const_matrix_view<T> v, const kernel_spec& kern, const mask& msk,
                     const smooth_options& opt = {});
}  // namespace reference

}  // namespace kf
