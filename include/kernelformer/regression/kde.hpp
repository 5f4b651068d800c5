// kernelformer/regression/kde.hpp — kernel density estimation on the one primitive.
//
//   f̂(x) = 1/(n Π_c h_c) Σ_j K((x − x_j)/h) / Z_K
// The sum is the primitive's denominator: f̂(x) = exp(lse(x)) / (n Π h Z_K), so density costs the
// same streaming pass as smoothing. Z_K makes each kernel integrate to 1: in 1-D every finite
// distance kernel (gaussian √(2π), boxcar 2, epanechnikov 4/3, biweight 16/15, triweight 32/35,
// tricube 81/70, cosine 4/π, laplacian 2, cauchy π, rational_quadratic, …); in d dimensions the
// gaussian, whose radial form is the product kernel Π_c φ(u_c) (other kernels: 1-D only for now).
// Bandwidths: silverman, scott, cv_ml (likelihood CV), cv_ls (least-squares CV; ∫f̂² in closed
// form for the gaussian, by Simpson's rule on a fine grid otherwise), or fixed.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/regression/bandwidth.hpp"
#include "kernelformer/regression/route.hpp"
#include "kernelformer/regression/shard.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

// Routes: exact sums over all pairs (the primitive), or — 1-D, n ≥ binned_min_n — linear
// binning + FFT for every kernel (src/regression/kde_binned.hpp: density within 1e-4 of the
// exact one relative to its maximum at the default resolution, and exact where it is below
// 1e-3 of K(0)/(n h Z), so the tails keep their relative precision).
struct kde_options {
  bool exact = false;  // force the exact route
  index binned_min_n = 5000;
  double cells_per_h = 500;         // h/δ of the grid for the density and the final criterion
  double search_cells_per_h = 100;  // h/δ while searching a bandwidth
  // Several processes (regression/shard.hpp): the 1-D and 2-D binned grids, the exact criteria
  // and the exact density sums are reduced over them; every route is sharded.
  data_shard shard;
};

namespace detail {
class kde_binned;
}  // namespace detail

// The 1-D binned grid that a fit by a rule or a fixed bandwidth keeps for kde_evaluate: the data
// are binned once, over their range widened by the kernel's reach, for both the reported
// criterion and the densities. A copied fit drops it (its x is another buffer) and kde_evaluate
// bins again; a moved fit keeps it. Evaluations through it are serialized (a mutex).
class kde_grid_cache {
 public:
  kde_grid_cache() = default;
  kde_grid_cache(const kde_grid_cache&) noexcept {}
  kde_grid_cache& operator=(const kde_grid_cache&) noexcept {
    grid.reset();
    lock.reset();
    return *this;
  }
  kde_grid_cache(kde_grid_cache&&) noexcept = default;
  kde_grid_cache& operator=(kde_grid_cache&&) noexcept = default;
  ~kde_grid_cache() = default;
  std::shared_ptr<detail::kde_binned> grid;
  std::shared_ptr<std::mutex> lock;
};

struct kde_fit {
  kde_options options;
  kf::route route;  // the route that ran (and that kde_evaluate takes), and why
  any_kernel kernel = kernel_gaussian{};
  std::vector<double> bandwidth;  // per column
  matrix<double> x;
  bandwidth_criterion criterion = bandwidth_criterion::fixed;
  double criterion_value = 0;  // cv_ml: −mean log f̂₋ᵢ(x_i); cv_ls: the LSCV score; rules: cv_ml
  bool at_search_boundary = false;
  std::vector<criterion_point> curve;
  int search_evaluations = 0;  // criterion evaluations of the search (0: none)
  kde_grid_cache cache;        // 1-D binned, rule or fixed bandwidth: the grid kde_evaluate reuses
};

// n draws from the fitted density (seeded: the same seed, the same draws): a training point chosen
// uniformly plus the kernel's noise at the fit's bandwidth — gaussian in any dimension; in 1-D
// also the compact kernels (by rejection from the uniform on the support), laplacian and cauchy
// (scikit-learn's KernelDensity.sample offers gaussian and tophat). Throws
// std::invalid_argument for other kernels, naming the ones offered.
matrix<double> kde_sample(const kde_fit& fit, index n, std::uint64_t seed);

// ∫ K(|u|) du over the real line for a kernel with bandwidth 1 (its 1-D normalizing constant).
// Throws std::invalid_argument for kernels that are not integrable densities.
double kernel_integral_1d(const any_kernel& k);

kde_fit kde_fit_data(const any_kernel& kernel, const_matrix_view<double> x,
                     bandwidth_criterion criterion, std::vector<double> bandwidth = {},
                     const progress_fn& progress = {}, const kde_options& options = {});

// The criterion (cv_ml or cv_ls) at a bandwidth on the route kde_fit_data would take for these
// options (binned: at options.cells_per_h).
double kde_criterion(const any_kernel& kernel, const_matrix_view<double> x,
                     const std::vector<double>& bandwidth, bandwidth_criterion criterion,
                     const kde_options& options = {});

// The name of the fit's route: "binned (linear binning + FFT)", "exact (k-d tree over each
// support)", "exact (all pairs)", ….
std::string kde_route_name(const kde_fit& fit);

// f̂ at the rows of at.
std::vector<double> kde_evaluate(const kde_fit& fit, const_matrix_view<double> at);

// log f̂ at the rows of at, finite wherever some kernel reaches the point: where f̂ underflows (a
// point far from the data) the exact log-domain sum, not log 0 (scikit-learn's score_samples).
std::vector<double> kde_log_evaluate(const kde_fit& fit, const_matrix_view<double> at);

// The density criteria at a given bandwidth on the exact route (+inf where undefined); with an
// active shard each process sums its block of the points and the sums are reduced.
double kde_cv_ml(const any_kernel& kernel, const_matrix_view<double> x,
                 const std::vector<double>& bandwidth, const data_shard& shard = {});
double kde_cv_ls(const any_kernel& kernel, const_matrix_view<double> x,
                 const std::vector<double>& bandwidth, const data_shard& shard = {});

}  // namespace kf
