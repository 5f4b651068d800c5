// kernelformer/regression/bandwidth.hpp — choosing a bandwidth, for regression and density.
//
// Rules of thumb (statsmodels' forms, so numbers agree): A = min(sd, IQR/1.349) per column
// (sd when IQR = 0), Silverman 0.9·A·n^(−1/5) and Scott 1.059·A·n^(−1/5) in 1-D; in d dimensions
// the exponent is −1/(d+4) and the factors (4/(d+2))^(1/(d+4)) (Silverman) and 1 (Scott).
// Data-driven criteria are minimized by bandwidth_search over h = s · h_ref with h_ref the
// Silverman bandwidth: a log-spaced grid s ∈ [0.01, 10] (41 points), then golden-section search
// in log s around the best grid point (to 1e-4 relative), then — for d > 1 — coordinate sweeps
// adjusting each column's bandwidth in [×0.25, ×4]. Infinite criterion values (a bandwidth with
// an undefined leave-one-out fit) are simply worse. The result is always positive and finite;
// if every value is infinite the search throws, naming the criterion.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf {

enum class bandwidth_criterion {
  fixed,      // as given
  silverman,  // rule of thumb
  scott,      // rule of thumb
  loo_cv,     // regression: mean squared leave-one-out residual (statsmodels cv_ls)
  gcv,        // regression: generalized CV, (RSS/n) / (1 − df/n)²
  aicc,       // regression: Hurvich, Simonoff & Tsai (1998)
  cv_ml,      // density: minus the mean leave-one-out log density (likelihood CV)
  cv_ls,      // density: least-squares CV, ∫f̂² − (2/n) Σ f̂₋ᵢ(x_i)
  sj,         // density: Sheather–Jones solve-the-equation plug-in, per column (R's bw.SJ)
  sj_dpi,     // density: Sheather–Jones direct plug-in, per column (bw.SJ(method = "dpi"))
  isj,        // density: improved Sheather–Jones (Botev et al. 2010), per column, as KDEpy
              // (regression/bandwidth_isj.hpp)
  dpi,        // regression: local-linear direct plug-in, gaussian, 1-D (KernSmooth's dpill:
              // regression/bandwidth_dpi.hpp)
};
std::string bandwidth_criterion_name(bandwidth_criterion c);
// "silverman", "scott", "cv" (loo_cv), "gcv", "aic"/"aicc", "cv-ml", "cv-ls", "sj", "sj-dpi",
// "isj", "dpi";
// throws otherwise.
bandwidth_criterion bandwidth_criterion_parse(const std::string& text);

// Rule-of-thumb bandwidth per column of x. Throws std::invalid_argument if a column is constant
// or there are fewer than 2 rows.
std::vector<double> bandwidth_rule(const_matrix_view<double> x, bandwidth_criterion rule);

// Sheather & Jones (1991) plug-in bandwidth of a gaussian-kernel density estimate of the values
// x, as R's bw.SJ computes it (its numbers to rounding: pairwise distances counted in nb bins,
// binned first above nb/2 points, so the cost is O(n + nb²) at any n). solve_the_equation: the
// root of h = [R(K) / (n μ₂² ∫f''²(g(h)))]^(1/5) by Brent's method to `tolerance` (≤ 0: R's
// default, a tenth of the lower end of the search range — R's answer is that coarse too);
// direct_plug_in: one step from a normal reference. Throws std::invalid_argument for fewer than
// 2 points, non-finite or constant data, or a sample too sparse for the functionals.
enum class sj_method { solve_the_equation, direct_plug_in };
double bandwidth_sheather_jones(std::span<const double> x,
                                sj_method method = sj_method::solve_the_equation, index nb = 1000,
                                double tolerance = 0);

struct criterion_point {
  double scale;                   // common factor on the reference bandwidths
  std::vector<double> bandwidth;  // per column
  double value;
};

struct bandwidth_search_result {
  std::vector<double> bandwidth;
  double value = 0;
  bool at_boundary = false;            // best grid point at an end of [0.01, 10] × h_ref
  std::vector<criterion_point> curve;  // the grid, in increasing scale
  // The criterion evaluations the search made: the grid (41), the golden section in the scale
  // (until the bandwidth moves by < 0.1%), and for several columns the coordinate sweeps and the
  // simplex, each stopped by the same tolerance (polish_converged: the simplex shrank below it
  // within its 200 iterations).
  int evaluations = 0;
  bool polish_converged = true;
};

using progress_fn = std::function<void(int done, int total)>;
using bandwidth_objective = std::function<double(const std::vector<double>& bandwidth)>;

bandwidth_search_result bandwidth_search(const bandwidth_objective& objective,
                                         const std::vector<double>& reference,
                                         const std::string& criterion_name,
                                         const progress_fn& progress = {});

}  // namespace kf
