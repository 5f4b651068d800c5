// kernelformer/regression/local_poly.hpp — 1-D local polynomial regression of degree p ≤ 3 and
// its ν-th derivative (KernSmooth's locpoly(drv = ν, degree = p); np's gradients), with pointwise
// standard errors. Tested against R's weighted least squares to ~1e-10 and against locpoly's grid
// (tests/regression/test_local_poly.cpp, tests/fixtures/local_poly_cases.json written by
// python/make_fixture_local_poly.py).
//
//   β̂(x0) = argmin Σ_j K(x_j − x0) (y_j − Σ_{k≤p} β_k (x_j − x0)^k)²,   m̂^(ν)(x0) = ν! β̂_ν
//
// K is the project's distance kernel with its bandwidth h (kernel_at_distance: the gaussian's
// weight is exp(−d²/(2h²))). A linear smoother m̂^(ν)(x0) = Σ_j ℓ_j(x0) y_j with
// ℓ = ν! e_νᵀ (XᵀWX)⁻¹XᵀW: sum_l2 = Σ_j ℓ_j² gives se = σ̂·√sum_l2 (σ̂ from the caller), and at
// the training points self_weight = ℓ_i(x_i) (the hat diagonal for ν = 0).
// Undefined (defined = 0, fit = sum_l2 = self_weight = 0, counted in `undefined`) where fewer than
// p + 1 points have nonzero weight or the local design is numerically singular (see each route).
#pragma once

#include <span>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

struct local_poly_eval {
  std::vector<double> fit;             // m̂^(ν)(xq)
  std::vector<double> sum_l2;          // Σ_j ℓ_j(xq)²: Var m̂^(ν) = σ² · sum_l2
  std::vector<double> self_weight;     // ℓ_i(x_i), at_training only (else empty)
  std::vector<unsigned char> defined;  // 0 where the local fit cannot be made
  index undefined = 0;
};

// Exact: each query's weighted least squares in centred, h-scaled coordinates u = (x_j − x0)/h,
// by Householder QR of the weighted design √w·[u⁰ … u^p] with its columns scaled to unit norm
// (never the normal equations: they square the condition number). Undefined where its 2-norm
// condition number exceeds 1e8 (the scaled design is within √(p+1) of its best diagonal scaling,
// van der Sluis, so the test does not depend on h or the units of x; ≥ ~8 digits left where it
// passes) — e.g. a gaussian fit extrapolated far beyond the data, where the weights of all but the
// nearest point or two underflow relative to it. Log-domain kernels are weighted relative to the
// query's largest weight, so the gaussian never underflows to "no weight at all".
// All pairs, O(n·m), for unbounded kernels; compact kernels (support |x_j − x0| ≤ h) read only
// the window of a sorted copy of x, O(n log n + Σ window sizes). Queries in parallel (OpenMP).
// at_training: xq must be x itself (same values, same order); self_weight is filled.
// Throws std::invalid_argument on a kernel that is not a distance kernel with a bandwidth, a degree
// outside 0..3, a derivative outside 0..degree, x and y of different or zero size, non-finite
// data.
local_poly_eval local_poly_exact(const any_kernel& kernel, int degree, int derivative,
                                 std::span<const double> x, std::span<const double> y,
                                 std::span<const double> xq, bool at_training);

// Binned, for large n (KernSmooth's locpoly): x and y linearly binned onto `grid` equidistant
// nodes over [min x, max x] (the largest x goes to the last node, as locpoly with truncate =
// FALSE; its default drops it); at each node the moments Σ_g c_g K(Δ)Δ^k (k ≤ 2p),
// Σ_g (cy)_g K(Δ)Δ^k (k ≤ p) and Σ_g c_g K(Δ)²Δ^k (k ≤ 2p, for sum_l2) by a direct discrete
// convolution over the kernel's reach: the support of a compact kernel, where K/K(0) < 1e-14 for
// the others (binned_reach: the gaussian's 8.1h; none for the periodic), or `cut`·h when that is
// shorter. locpoly cuts the gaussian at tau = 4 bandwidths: cut = 4 gives its numbers (to ~1e-11,
// tested), but K(4h) = e⁻⁸ times u⁶ = 4096 is not small in the moments of a local cubic — the cut
// alone moves fits by up to 1e-3 (p ≤ 1) and 1e-1 (p = 3, ν = 2) of their range on the fixtures,
// so the default (cut = 0) keeps the kernel's own reach.
// The (p+1)×(p+1) system is solved at every node by LDLT after a diagonal scaling; a node is
// undefined where fewer than p + 1 bins in its window carry weight or the scaled moment matrix's
// condition number exceeds 1e12 (the normal equations keep ≥ ~4 digits). Binning spreads a point
// over two nodes, so a window holding fewer than p + 1 distinct x (singular on the exact route)
// can look regular here: near such sparse ends the binned fit is unreliable. Fit and sum_l2 are
// interpolated linearly between nodes; queries outside [min x, max x] or next to an undefined
// node are undefined. self_weight is left empty. O(n + grid·L) for a reach of L grid steps.
// Accuracy against the exact route: O((δ/h)²), δ the grid step. Measured on the fixtures (gaussian,
// p ≤ 3, ν ≤ 2, relative to the largest |value|): at h/δ ≈ 100 ≤ 5e-5, and ≤ 6e-4 for cubics at
// the data's ends; at h/δ ≈ 10 a hundred times that.
// Throws as local_poly_exact, and on grid < 2, all x equal, a negative cut, or a reach below one
// grid step.
local_poly_eval local_poly_binned(const any_kernel& kernel, int degree, int derivative,
                                  std::span<const double> x, std::span<const double> y,
                                  std::span<const double> xq, index grid = 401, double cut = 0);

namespace detail {
// The all-pairs route of local_poly_exact for any kernel (local_poly_exact takes the sorted window
// for compact kernels): the reference the window route is tested against.
local_poly_eval local_poly_all_pairs(const any_kernel& kernel, int degree, int derivative,
                                     std::span<const double> x, std::span<const double> y,
                                     std::span<const double> xq, bool at_training);
}  // namespace detail

}  // namespace kf
