// The 1-D density route for large n: linear binning + FFT (regression/binned.hpp) for every
// density kernel, with exact sums where binning is not precise enough.
//
// Sums Σ_j K((a − x_j)/h) are read from the binned grid by linear interpolation. Where that sum
// is below 1e-3·K(0) (far from the data, where a log density needs relative precision) or a is
// outside the data's range, the sum is computed exactly from a sorted copy of x, made on first
// need: a walk outward from a's position in order of distance, in the log domain, stopped when
// the rest cannot change the sum in double precision — O(number of neighbors), not O(n).
// Criteria:
//   cv_ml  −(1/n) Σ_i log f̂₋ᵢ(x_i): per-bin logs of (s_g − K(0)); points whose bins hold a
//          leave-one-out sum below 0.1·K(0) (isolated points) are summed exactly instead.
//   cv_ls  ∫f̂² − (2/n) Σ_i f̂₋ᵢ(x_i): both are sums over bins (K∗K in closed form for the
//          gaussian, cauchy and laplacian, by Simpson's rule between its breakpoints for the
//          compact kernels), with the binned self-weights replaced by the exact ones.
// The boxcar, whose jump would make binning first-order, is counted exactly on the sorted data.
#pragma once

#include <array>
#include <span>
#include <utility>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/regression/binned.hpp"

namespace kf::detail {

class kde_binned {
 public:
  // x (1-D data) must outlive this object. The grid spans the data, widened to [lo, hi] when
  // given (densities are then read from the grid out there too).
  // With an active shard the grids are binned over the processes (binned_data) and cv_ml's
  // exactly summed points are split among them.
  explicit kde_binned(std::span<const double> x, const data_shard& shard = {});
  kde_binned(std::span<const double> x, double lo, double hi, const data_shard& shard = {});

  // f̂ at each point of `at`, for kernel k with its bandwidth set; z = ∫K over the line at h = 1.
  std::vector<double> density(const any_kernel& k, double z, std::span<const double> at,
                              double cells_per_h);
  double cv_ml(const any_kernel& k, double z, double cells_per_h);
  double cv_ls(const any_kernel& k, double z, double cells_per_h);

  // Points the last call summed exactly (the rest were read from the grid).
  index exact_points() const { return exact_points_; }

 private:
  kde_binned(std::span<const double> x, std::pair<double, double> range, double lo, double hi,
             const data_shard& shard);
  std::span<const double> sorted();
  // log Σ_j K(|a − x_j|) over all j (leave_one_out: one j with x_j = a left out); −inf if 0.
  double exact_log_sum(const any_kernel& k, double a, bool leave_one_out);
  double boxcar_cv(double h, bool least_squares);

  std::span<const double> x_;
  binned_data bd_;
  data_shard shard_;
  std::vector<double> sorted_;
  index exact_points_ = 0;
};

// K∗K(t) = ∫ K(u) K(t − u) du for the unit-bandwidth kernel of k (k's bandwidth is ignored).
// Throws std::invalid_argument for kernels without it here (see kde_binned).
double kernel_self_convolution(const any_kernel& k, double t);

}  // namespace kf::detail

namespace kf::detail {

// Two columns on the bilinear-binned grid (binned2d.hpp), for a radial kernel with per-column
// bandwidths h. `kernel` carries its own name only (its parameter is ignored).
// Σ_j K at each row of `at`; rows whose binned sum is below 1e-3 K(0) or that lie outside the grid
// are listed in `exact_rows` (their value is left 0) for the caller to sum exactly.
struct kde2d_sums {
  std::vector<double> s;
  std::vector<index> exact_rows;
};
kde2d_sums kde2d_kernel_sums(const any_kernel& kernel, const_matrix_view<double> x,
                             std::array<double, 2> h, const_matrix_view<double> at,
                             double cells_per_h, const data_shard& shard = {});
// −(1/n) Σ log f̂₋ᵢ(x_i) (z = ∫∫K at unit bandwidth); points in bins whose leave-one-out sum is
// below 0.1 K(0) are summed exactly over all other points — if more than max(1000, n/1000) are,
// the bandwidth counts as too small (+inf).
// With an active shard (here and below) the grid is binned over the processes (binned_2d) and
// each process sums its block of the points; the sums are added over the processes.
double kde2d_cv_ml(const any_kernel& kernel, const_matrix_view<double> x, std::array<double, 2> h,
                   double z, double cells_per_h, const data_shard& shard = {});
// Least-squares CV for the gaussian (K∗K = π e^{−r²/4} in 2-D).
double kde2d_cv_ls_gaussian(const_matrix_view<double> x, std::array<double, 2> h,
                            double cells_per_h, const data_shard& shard = {});

}  // namespace kf::detail
