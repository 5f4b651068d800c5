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

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/regression/bandwidth.hpp"
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
// node are undefined. For ν = 0, self_weight holds K(0)·[M⁻¹]₀₀ interpolated the same way: the
// weight a training point at xq gives itself (the binned hat diagonal), for the fit's criteria. O(n
// + grid·L) for a reach of L grid steps. Accuracy against the exact route: O((δ/h)²), δ the grid
// step. Measured on the fixtures (gaussian, p ≤ 3, ν ≤ 2, relative to the largest |value|): at h/δ
// ≈ 100 ≤ 5e-5, and ≤ 6e-4 for cubics at the data's ends; at h/δ ≈ 10 a hundred times that. Throws
// as local_poly_exact, and on grid < 2, all x equal, a negative cut, or a reach below one grid
// step.
local_poly_eval local_poly_binned(const any_kernel& kernel, int degree, int derivative,
                                  std::span<const double> x, std::span<const double> y,
                                  std::span<const double> xq, index grid = 401, double cut = 0);

namespace detail {
// The all-pairs route of local_poly_exact for any kernel (local_poly_exact takes the sorted window
// for compact kernels): the reference the window route is tested against.
local_poly_eval local_poly_all_pairs(const any_kernel& kernel, int degree, int derivative,
                                     std::span<const double> x, std::span<const double> y,
                                     std::span<const double> xq, bool at_training);
// local_poly_binned in two steps: the nodes' fit, Σℓ² (and for ν = 0 the self weight) on the
// grid, then their interpolation at any points — a fit keeps the first for its predictions.
struct local_poly_grid {
  double a = 0, delta = 0;  // the grid: a + g·δ
  local_poly_eval nodes;
};
local_poly_grid local_poly_binned_grid(const any_kernel& kernel, int degree, int derivative,
                                       std::span<const double> x, std::span<const double> y,
                                       index grid, double cut = 0);
// The same grid for several derivatives at once: one binning and one set of moments.
std::vector<local_poly_grid> local_poly_binned_grids(const any_kernel& kernel, int degree,
                                                     std::span<const int> derivatives,
                                                     std::span<const double> x,
                                                     std::span<const double> y, index grid,
                                                     double cut = 0);
local_poly_eval local_poly_interpolate(const local_poly_grid& g, std::span<const double> xq);
}  // namespace detail

// ---- the fit: a bandwidth chosen for the regression function, then m̂^(ν) anywhere ----
// What `kf smooth --degree P --derivative V` and Python's LocalPolynomialRegressor run. The
// bandwidth is given, a rule of thumb (silverman, scott), or minimizes a criterion (cv, gcv, aic)
// of the degree-p fit of the function itself (ν = 0: the criteria need its residuals and hat
// diagonal) — the derivative is then read at that bandwidth (a bandwidth tuned to a derivative is
// larger: say so when reporting). The route: exact (local_poly_exact) below binned_min_n points or
// with exact = true, else binned (local_poly_binned) on a grid with h/δ = cells_per_h (the search
// at half of it), at least 401 and at most 2^21 nodes. The direct sums cost O(G·L) ∝ cells_per_h²
// per grid: 50 keeps the binned error near 1e-4 of the fit's range (R's locpoly, 401 nodes
// whatever h, is ~1e-2 off at 10^6 points: docs/results/local_poly.md).
struct local_poly_spec {
  any_kernel kernel = kernel_gaussian{};
  int degree = 2, derivative = 0;
  double bandwidth = 0;  // given (criterion fixed), or set by the fit
  bool exact = false;
  index binned_min_n = 5000;
  double cells_per_h = 50;
};

struct local_poly_fit {
  local_poly_spec spec;  // bandwidth set
  std::string route, why;
  bandwidth_criterion criterion = bandwidth_criterion::fixed;
  double criterion_value = 0;
  bool at_search_boundary = false;
  int search_evaluations = 0;
  std::vector<criterion_point> curve;  // the criterion over the searched grid
  double df = 0, rss = 0, r2 = 0, sigma2 = 0, loo_cv = 0, gcv = 0, aicc = 0;
  index undefined = 0;  // training points where the function's fit is undefined
  std::vector<double> x, y;
  // The binned route: the grid of m̂^(ν) at the chosen bandwidth, which predictions interpolate
  // (no binning or convolution per call).
  std::shared_ptr<const detail::local_poly_grid> grid;
};

// criterion: fixed (spec.bandwidth), silverman, scott, loo_cv, gcv or aicc.
// Throws std::invalid_argument naming the problem (fewer than degree + 2 points, a criterion that
// does not apply, a bandwidth where the fit is undefined at every point).
local_poly_fit local_poly_fit_data(local_poly_spec spec, std::vector<double> x,
                                   std::vector<double> y, bandwidth_criterion criterion,
                                   const progress_fn& progress = {});

// m̂^(ν) and its standard error σ̂·√Σℓ² at xq on the fit's route (fit = se = 0 where undefined).
struct local_poly_prediction {
  std::vector<double> fit, se;
  std::vector<unsigned char> defined;
  index undefined = 0;
};
local_poly_prediction local_poly_predict(const local_poly_fit& fit, std::span<const double> xq);

}  // namespace kf
