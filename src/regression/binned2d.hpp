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
#include <span>
#include <vector>

#include "kernelformer/kernels.hpp"
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
  // every data point; cells from the bandwidths h.
  binned_2d(const_matrix_view<double> x, std::span<const double> y, std::array<double, 2> lo,
            std::array<double, 2> hi, std::array<double, 2> h, double cells_per_h,
            const binned2d_settings& st);

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

// Nadaraya–Watson in two columns on the binned grid (regression_spec's kernel and its two
// bandwidths). Points outside the grid or with Σ K < K(0) (less than one point's weight) are left
// undefined for the caller to evaluate exactly. The criteria are sums over bins, as in 1-D.
regression_eval nw_binned2d_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                                     std::span<const double> y, const_matrix_view<double> xq,
                                     bool at_training, double cells_per_h);
// undefined_rows (optional): the training points where nw_binned2d_evaluate would leave the
// fit undefined (Σ K < K(0)), from the same grid — the fit's summary needs no second pass.
criterion_values nw_binned2d_criteria(const regression_spec& spec, const_matrix_view<double> x,
                                      std::span<const double> y, double cells_per_h,
                                      std::vector<index>* undefined_rows = nullptr);

}  // namespace kf::detail
