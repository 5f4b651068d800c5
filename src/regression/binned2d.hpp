// The 2-D fast path for large n: bilinear binning + 2-D FFT (FFTW), for a radial kernel with
// per-column bandwidths, K(|((x − x_j)₁/h₁, (x − x_j)₂/h₂)|), as the primitive computes it.
//
// The data (counts c, c·y, c·y²) are binned on a G₁ × G₂ grid with h_c/δ_c ≥ cells_per_h (G_c
// capped at max_cells); sums Σ_j K(·), Σ_j K(·) y_j, Σ_j K(·)² are convolutions with the kernel
// sampled on the lags within its reach (binned_reach, per axis), read anywhere by bilinear
// interpolation. Error: O((δ/h)²) for kernels smooth on their support, first order on the few
// points near a kink; density within 2e-3 of its peak and NW within 2e-3 of the range of y at
// the default 32 cells per bandwidth (tested). The grid is capped at 1024 cells per axis, so data
// spanning more than 32 bandwidths (an outlier far out) are binned more coarsely. Used by kde
// (density, likelihood CV) and Nadaraya–Watson in two columns.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/regression/shard.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::detail {

struct binned2d_settings {
  double cells_per_h = 32;        // h/δ per axis (predictions, final criteria)
  double search_cells_per_h = 8;  // while searching a bandwidth
  index max_cells = 1024;         // per axis
};

class binned_2d {
 public:
  // x: n × 2; y: n values or empty (density). The grid spans [lo, hi] per axis, which must hold
  // every data point; cells from the bandwidths h. With an active shard each process bins its
  // block of the points and the grids are summed over the processes (rank order), so every
  // process holds the same grid, as in 1-D (binned.hpp).
  binned_2d(const_matrix_view<double> x, std::span<const double> y, std::array<double, 2> lo,
            std::array<double, 2> hi, std::array<double, 2> h, double cells_per_h,
            const binned2d_settings& st, const data_shard& shard = {});

  struct sums {
    std::vector<double> s0, t0, q0;  // Σ K, Σ K y (with y), Σ K² (with_q); row-major G₁ × G₂
  };
  // unit: the kernel in units of the bandwidths h (parameter 1 for K itself; another value
  // for a rescaled kernel such as the gaussian K∗K).
  sums convolve(const any_kernel& unit, bool with_q) const;

  // Bilinear interpolation of a grid quantity at (a0, a1); the point must be inside().
  double read(const std::vector<double>& v, double a0, double a1) const;
  bool inside(double a0, double a1) const;

  std::array<index, 2> cells() const { return g_; }
  // Frees the binned counts (c, cy, cyy) once the sums that need them are computed.
  void release_bins() {
    c_ = {};
    cy_ = {};
    cyy_ = {};
  }
  const std::vector<double>& c() const { return c_; }
  const std::vector<double>& cy() const { return cy_; }
  const std::vector<double>& cyy() const { return cyy_; }

 private:
  std::array<double, 2> lo_, delta_, h_;
  std::array<index, 2> g_;
  std::vector<double> c_, cy_, cyy_;
};

// ∫∫ K(|u|) du over the plane for the unit-bandwidth kernel of k (2π ∫ K(r) r dr); throws
// std::invalid_argument for kernels not integrable in 2-D (cauchy; rational quadratic, α ≤ 1).
double kernel_integral_2d(const any_kernel& k);

// The grid of a 2-D Nadaraya–Watson smoother with its convolved sums Σ K, Σ K y and Σ K²: what
// the fit keeps (regression_fit::binned2d_grid) so predictions inside the data's box read it
// instead of binning and transforming again (7 transforms and a pass over the data saved).
struct nw_binned2d_grid {
  std::array<double, 2> lo, hi, h;
  double cells_per_h;
  std::string kernel;  // kernel_name of the spec's kernel (a fit whose kernel changed rebins)
  binned_2d bd;        // its counts released once the criteria are summed
  binned_2d::sums sm;
};

// Nadaraya–Watson in two columns on the binned grid (regression_spec's kernel and its two
// bandwidths). Points outside the grid or with Σ K < K(0) (less than one point's weight) are left
// undefined for the caller to evaluate exactly. The criteria are sums over bins, as in 1-D.
// prepared: a grid from nw_binned2d_criteria, used when it is the grid these queries need (the
// same bandwidths and cells, no query widening it); otherwise the data are binned anew.
regression_eval nw_binned2d_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                                     std::span<const double> y, const_matrix_view<double> xq,
                                     bool at_training, double cells_per_h,
                                     const nw_binned2d_grid* prepared = nullptr);
// undefined_rows (optional): the training points where nw_binned2d_evaluate would leave the
// fit undefined (Σ K < K(0)), from the same grid — the fit's summary needs no second pass.
// keep (optional): receives the grid with Σ K² too, for later predictions.
criterion_values nw_binned2d_criteria(const regression_spec& spec, const_matrix_view<double> x,
                                      std::span<const double> y, double cells_per_h,
                                      std::vector<index>* undefined_rows = nullptr,
                                      std::shared_ptr<const nw_binned2d_grid>* keep = nullptr);

}  // namespace kf::detail
