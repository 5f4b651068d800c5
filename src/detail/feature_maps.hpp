// Internal: the explicit feature maps φ of the feature-map kernels (feature_kernels.hpp) — the
// random projection W drawn from (seed, r, d), φ of a row in double (the reference), φ of a block
// of rows in T (the feature route, src/smooth/features.cpp), and their vector–Jacobian products.
//
//   elu1   φ_c = x_c + 1 (x_c > 0), e^{x_c} (else)                      r = d
//   rff    P = W x·(1/h);  φ = a [cos P, sin P], a = √(2/r)              W: r/2 × d, i.i.d. N(0, 1)
//   favor  u_l = w_l·x' − |x'|²/2, x' = x/√T;  φ_l = e^{u_l}/√r          W: r × d, orthogonal
//   blocks
// favor's blocks in T are stabilized: φ = exp(u − c) with c a row's own largest exponent (queries)
// or one shift common to all rows (keys), and the log of the factor taken out, c − ½ log r, is
// returned per row (the primitive folds it into lse; it cancels in out).
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::detail {

enum class feature_kind { elu1, rff, favor };

// A const view in a non-deduced position: a matrix_view<T> argument converts to it.
template <class T>
using cview = std::type_identity_t<const_matrix_view<T>>;

// The random part, shared and immutable: cached by (kind, d, r, seed).
struct feature_map {
  feature_kind kind = feature_kind::elu1;
  index d = 0, r = 0;     // input columns; features (elu1: r = d)
  index rows = 0;         // projection rows: rff r/2, favor r, elu1 0
  std::vector<double> w;  // rows × d, row-major, as drawn (unscaled)
};

// A resolved feature-map kernel at input width d.
struct feature_kernel {
  std::shared_ptr<const feature_map> map;
  feature_kind kind = feature_kind::elu1;
  index d = 0, r = 0;
  double scale = 1;  // inputs are multiplied by this first: 1/h (rff), T^(−1/2) (favor), 1 (elu1)
  // The parameter's gradient from the inputs' gradients, since φ depends on x·scale only:
  // d loss / d param = dparam_factor · (Σ_i dq_i·q_i + Σ_j dk_j·k_j)   (−1/h, −1/(2T), 0).
  double dparam_factor = 0;
};

// k must be a resolved (kernel_resolve) feature-map kernel.
feature_kernel feature_kernel_of(const any_kernel& k, index d);

// The projection of (kind, d, r, seed), drawn once per process and cached: a pure function of
// its arguments (splitmix64 counters and Box–Muller; favor: Gram–Schmidt blocks with χ_d norms).
std::shared_ptr<const feature_map> feature_map_draw(feature_kind kind, index d, index r,
                                                    std::uint64_t seed);

// ---- one row in double (the reference) ----
// phi (r entries) = φ(x), unstabilized.
void feature_row(const feature_kernel& fk, const double* x, double* phi);
// dx (d entries) += J_φ(x)ᵀ g.
void feature_row_vjp(const feature_kernel& fk, const double* x, const double* g, double* dx);

// ---- blocks of rows in T (the feature route) ----
template <class T>
struct feature_weights {
  std::vector<T> w;  // scale · W, rows × d
};
template <class T>
feature_weights<T> feature_weights_of(const feature_kernel& fk);

// phi (b × r) = φ of the b rows of x (b × d). ls (b entries, may be null) receives the log of the
// factor taken out of each row: φ_true = e^{ls_i} · phi_i. favor: shift == nullptr stabilizes
// each row by its own largest exponent; else φ = exp(u − *shift). elu1, rff: ls = 0.
template <class T>
void feature_block(const feature_kernel& fk, const feature_weights<T>& fw, const_matrix_view<T> x,
                   matrix_view<T> phi, double* ls, const double* shift);

// dx (b × d) += J_φ(x)ᵀ g for the rows of x, with phi as feature_block returned it (the same
// stabilizer, held constant). g (b × r) is overwritten.
template <class T>
void feature_block_vjp(const feature_kernel& fk, const feature_weights<T>& fw,
                       const_matrix_view<T> x, cview<T> phi, matrix_view<T> g, matrix_view<T> dx);

// favor: max over the rows of x and the features of the exponent u (the keys' common shift);
// scratch holds b × r entries for blocks of b rows. −inf for no rows; 0 for elu1 and rff.
template <class T>
double feature_max_exponent(const feature_kernel& fk, const feature_weights<T>& fw,
                            const_matrix_view<T> x, matrix<T>& scratch);

}  // namespace kf::detail
