// kernelformer/regression/mixed_kernel.hpp — product kernels on mixed data (continuous,
// unordered and ordered categorical columns) for local-constant regression and density
// estimation, with statsmodels' definitions to the last digit (its KernelReg(reg_type='lc') and
// KDEMultivariate at the default kernels: tests/regression/test_mixed_kernel.cpp against
// tests/fixtures/mixed_cases.json, written by python/make_fixture_mixed.py).
//
//   K(x, x_j) = Π_k L_k(x_k, x_jk)
//   continuous (gaussian):          L = φ((x − x_j)/h) = exp(−(x − x_j)²/(2h²)) / √(2π)
//   unordered (Aitchison–Aitken):   L = 1 − λ at x = x_j, λ/(c − 1) otherwise; λ ∈ [0, (c−1)/c]
//   ordered (Wang–van Ryzin):       L = 1 − λ at x = x_j, (1 − λ)/2 · λ^|x − x_j|; λ ∈ [0, 1]
//   regression:  ĝ(x) = Σ_j K(x, x_j) y_j / Σ_j K(x, x_j)
//   density:     f̂(x) = Σ_j K(x, x_j) / (n Π_{k continuous} h_k)
// Categorical columns hold integer codes as doubles; Wang–van Ryzin uses the codes' distance
// |x − x_j| as they are (cyl coded 4, 6, 8 is 2 apart per step, as in statsmodels).
// statsmodels' conventions followed:
//   - c, the number of levels of an unordered column, is the count of distinct codes among the
//     points the kernel sums over (spec.levels = 0): in a leave-one-out sum, one less when the
//     left-out point is its level's only one. A given spec.levels[k] > 0 is used everywhere.
//   - cv_ls = (1/n) Σ_i (y_i − ĝ_{−i}(x_i))²            (KernelReg.cv_loo)
//   - cv_ml = −Σ_i log Σ_{j≠i} K(x_i, x_j) / Π h_k      (KDEMultivariate.loo_likelihood with
//     log: no 1/(n − 1), so it is −Σ log f̂_{−i} − n log(n − 1); the same minimizer)
//   - normal reference: 1.06 σ_k n^(−1/(4+q)) for EVERY column (σ with ddof 0, q all columns),
//     categorical codes included — it can exceed a λ's range; the search clips its start.
// Departures: where a sum has no weight (λ = 0 on a level absent from the data, λ = 1 on an
// ordered column) statsmodels answers nan; here the fit is NaN, the density 0 and a CV objective
// +inf, so a minimizer steps away. Sums factor out their largest term where they would
// underflow: a point far from all others (every gaussian < 1e-308) still has its fit.
// statsmodels minimizes with scipy's unbounded fmin from the normal reference and can leave the
// λ ranges (on the fixtures an ordered λ of 2.08 or −0.13: no bandwidth of these kernels) or
// fail from a start outside them (mtcars' cv_ml: nan at λ_cyl = 1.14); mixed_bandwidth_search
// stays inside them. Cost: O(n·m·d) over all pairs for m queries, O(n²d/2) per CV objective
// (each pair once); parallel over rows (OpenMP).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf {

enum class column_type { continuous, unordered, ordered };

struct mixed_spec {
  std::vector<column_type> types;  // one per column of x
  std::vector<double> bandwidth;   // h (continuous) or λ (categorical), one per column
  // Per column: the number of levels c of an unordered column (the Aitchison–Aitken kernel needs
  // it); 0, or an empty vector: counted from the data as statsmodels does. Ignored otherwise.
  std::vector<index> levels;
};

// ĝ at the rows of xq from (x, y). NaN where no training point has weight.
std::vector<double> mixed_nw(const mixed_spec& spec, const_matrix_view<double> x,
                             std::span<const double> y, const_matrix_view<double> xq);
// statsmodels' regression cv_ls at spec.bandwidth: the mean squared leave-one-out residual;
// +inf where a leave-one-out fit has no weight. Needs n ≥ 3.
double mixed_nw_cv_ls(const mixed_spec& spec, const_matrix_view<double> x,
                      std::span<const double> y);
// f̂ at the rows of xq.
std::vector<double> mixed_density(const mixed_spec& spec, const_matrix_view<double> x,
                                  const_matrix_view<double> xq);
// statsmodels' cv_ml objective (to minimize) at spec.bandwidth; +inf where a leave-one-out
// density is 0. Needs n ≥ 3.
double mixed_density_cv_ml(const mixed_spec& spec, const_matrix_view<double> x);
// statsmodels' normal-reference bandwidths, every column (spec.bandwidth is not read).
std::vector<double> mixed_normal_reference(const mixed_spec& spec, const_matrix_view<double> x);
// The levels the kernels use: spec.levels[k] if > 0, else the distinct codes of column k of x
// (unordered columns; 0 for the others). Throws as the functions above do.
std::vector<index> mixed_levels(const mixed_spec& spec, const_matrix_view<double> x);

using mixed_objective = std::function<double(std::span<const double> bandwidth)>;

struct mixed_search_result {
  std::vector<double> bandwidth;
  double objective = 0;
  int evaluations = 0;
};

// Minimizes `objective` over one bandwidth per column inside the box h > 0 (continuous),
// λ ∈ [0, (c−1)/c] (unordered, c = levels[k]), λ ∈ [0, 1] (ordered): Nelder–Mead in
// coordinates that map onto the box (h = h₀ e^t; λ = upper · sin²(t/2)) until the simplex spans
// < 1e-6 (in t for h, in λ/upper for λ) and 1e-12 relative in value; then a pass over the
// coordinates, each trying the ends of a λ's range and a golden-section search over t ± 0.3 —
// where that gains more than 1e-10 relative, Nelder–Mead again from there (at most 3 rounds).
// The result is the best point evaluated. `start` is clipped into the box (2% inside a λ range's
// ends). Budget: 300 (d + 1) evaluations per Nelder–Mead run.
mixed_search_result mixed_bandwidth_search(const mixed_objective& objective,
                                           std::span<const double> start,
                                           std::span<const column_type> types,
                                           std::span<const index> levels);

// The searches statsmodels' bw='cv_ls' (KernelReg, reg_type='lc') and bw='cv_ml'
// (KDEMultivariate) run, from the normal reference; spec.bandwidth is not read.
mixed_search_result mixed_nw_bandwidth_cv_ls(const mixed_spec& spec, const_matrix_view<double> x,
                                             std::span<const double> y);
mixed_search_result mixed_density_bandwidth_cv_ml(const mixed_spec& spec,
                                                  const_matrix_view<double> x);

}  // namespace kf
