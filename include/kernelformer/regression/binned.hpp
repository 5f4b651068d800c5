// kernelformer/regression/binned.hpp — the 1-D fast path for large n: linear binning + FFT.
//
// For 1-D data the local moments a kernel smoother needs,
//   S_m(x) = Σ_j K((x_j − x)/h) (x_j − x)^m,  T_m(x) = Σ_j K(·) (x_j − x)^m y_j,
//   Q_m(x) = Σ_j K(·)² (x_j − x)^m           (m = 0, 1, 2),
// are smooth functions of x. They are computed on a grid of spacing δ by linearly binning the
// data (counts c, c·y, c·y²) and convolving with the kernel sampled on the grid (FFTW), then
// read at any point by linear interpolation. Everything NW and local-linear need — the fit, the
// hat diagonal K(0)·S2/(S0 S2 − S1²), Σℓ² for the standard error — follows from the moments, and
// the leave-one-out criteria are summed over bins (Σ_i f(x_i) y_i^k ≈ Σ_g f(g) binned y^k), so an
// evaluation costs O(G log G), not O(n): n enters only through one binning pass per grid size.
// Error: O((δ/h)²) for a kernel smooth on its support; kernels with a kink (laplacian at 0, the
// compact kernels at their edge) or a jump (boxcar) have a first-order term on the few points
// near it. With the default resolution (h/δ ≥ 1000 for predictions) the fit differs from the
// exact smoother by < 1e-6 of the range of y for the gaussian and < 1e-4 for every kernel
// (tested, kernel by kernel: tests/regression/test_binned.cpp).
// Every distance kernel but the boxcar is supported (its jump would make binning first-order; it
// takes the exact route, and density counts it exactly on sorted data). Compact kernels are sampled
// exactly on their support; the others are truncated where K/K(0) < tail_tolerance (1e-14: the
// gaussian at 8h, the laplacian at 32h), or not at all when that is beyond the data's span (cauchy,
// rational quadratic) or the kernel is not monotone (periodic). Points whose binned weight is below
// 1e-3 K(0) (far from every data point) or that lie outside the data range (local-linear
// extrapolation amplifies any error) are evaluated exactly by the caller.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/regression/shard.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

struct binned_settings {
  double cells_per_h = 1000;        // h/δ for predictions
  double search_cells_per_h = 100;  // h/δ while searching a bandwidth
  index max_cells = index(1) << 23;
  double tail_tolerance = 1e-14;  // truncation: K(u)/K(0) below this is left out
};

// True when the binned path can evaluate this kernel (every distance kernel but the boxcar).
bool binned_supports(const any_kernel& k);

// K(d) for a distance kernel with its bandwidth set (the weight, exponentiated if log-domain).
double kernel_at_distance(const any_kernel& k, double d);

// The distance beyond which the binned path leaves the kernel out (its bandwidth set): the
// support for a compact kernel, where K/K(0) < tail_tolerance for a monotone one, and +inf for
// a kernel that does not decay monotonically (periodic) or stays above the tolerance to 1e6 h.
double binned_reach(const any_kernel& k, double tail_tolerance);

// The data, binned once per grid size and reused across bandwidths. Keeps views of x and y:
// they must outlive it. [lo, hi] must contain every data point and every point to be read.
class binned_data {
 public:
  // y may be empty (density: counts only). With an active shard (regression/shard.hpp) this
  // process bins its block of the points and the grids are summed over the processes: every
  // process then holds the whole data's grid ([lo, hi] must be the same everywhere).
  binned_data(std::span<const double> x, std::span<const double> y, double lo, double hi,
              const data_shard& shard = {});
  ~binned_data();
  binned_data(const binned_data&) = delete;
  binned_data& operator=(const binned_data&) = delete;

  struct moments {
    double lo = 0, delta = 0;
    std::vector<double> s[3], t[2], q[3];  // on the grid; q only if requested
    // The binned data on the same grid: views of the binned_data's own level (no copy of three
    // grid vectors per bandwidth tried); valid while the binned_data lives.
    std::span<const double> c, cy, cyy;
  };
  // Moments for kernel k (its bandwidth set) on a grid with h/δ ≥ cells_per_h (capped).
  // degree 0 needs s0, t0; degree 1 also s1, s2, t1. with_q adds q0..q(2·degree).
  moments compute(const any_kernel& k, int degree, bool with_q, double cells_per_h,
                  const binned_settings& st) const;

  // Σ_j w(|x_j − g|) at every grid node g of a grid with h/δ ≥ cells_per_h, for a weight w of
  // the distance that is 0 beyond `reach` (+inf: never): the density path's sums (w = K) and
  // least-squares CV's ∫f̂² (w = K∗K). Also the binned self-weight Σ_i ŵ_i(x_i) of the data,
  // what the sum at the data points holds of each point's own weight w(0).
  struct sums {
    double lo = 0, delta = 0;
    std::vector<double> s;
    std::span<const double> c;
    double self = 0;
  };
  sums sum_weights(const std::function<double(double)>& w, double reach, double h,
                   double cells_per_h, const binned_settings& st) const;

  // Linear interpolation of a grid quantity at x (grid from lo, spacing delta).
  static double read(double lo, double delta, const std::vector<double>& v, double x);
  static double read(const moments& m, const std::vector<double>& v, double x) {
    return read(m.lo, m.delta, v, x);
  }

  double lo() const { return lo_; }
  double hi() const { return hi_; }
  index n() const { return static_cast<index>(x_.size()); }

 private:
  struct level;
  const level& binned_at(index cells) const;
  std::span<const double> x_, y_;
  double lo_, hi_;
  data_shard shard_;
  mutable std::vector<std::unique_ptr<level>> levels_;
};

}  // namespace kf
