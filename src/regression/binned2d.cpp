// Bilinear binning and 2-D FFT convolution (see binned2d.hpp).
#include "regression/binned2d.hpp"

#include <fftw3.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <numbers>
#include <stdexcept>

#include "detail/fft_size.hpp"
#include "kernelformer/progress.hpp"
#include "kernelformer/regression/binned.hpp"

namespace kf::detail {
namespace {

// The smallest power of two ≥ v (1 for v ≤ 1).
index next_pow2(index v) {
  index p = 1;
  while (p < v) p <<= 1;
  return p;
}

// The 2-D transforms run on OpenMP's threads (FFTW's OpenMP build): at the grids of 10^6
// points (up to ~2000 × 2000 for a kernel that reaches across the data, like the laplacian) they
// are most of the route's time. Plans are made under fftw_planner_lock (fft_size.hpp), with the
// thread count set for that plan only (the 1-D route's small transforms stay on one thread).
void init_fftw_threads() {
  static const bool once = [] {
    fftw_init_threads();
    return true;
  }();
  (void)once;
}

// One 2-D real transform size P₁ × P₂ with its buffers and plans. Row-major; the real-to-complex
// transform keeps P₂/2 + 1 columns of the spectrum (the rest is its conjugate).
class fft2 {
 public:
  fft2(index p0, index p1) : p0_(p0), p1_(p1), nc_(p0 * (p1 / 2 + 1)) {
    real_ = fftw_alloc_real(static_cast<std::size_t>(p0 * p1));
    spec_ = fftw_alloc_complex(static_cast<std::size_t>(nc_));
    const std::lock_guard<std::mutex> lock(fftw_planner_lock());
    init_fftw_threads();
    // All threads from 2^18 cells (512²) up; smaller transforms stay on one thread.
    fftw_plan_with_nthreads(p0 * p1 >= (index(1) << 18) ? omp_get_max_threads() : 1);
    fwd_ = fftw_plan_dft_r2c_2d(static_cast<int>(p0), static_cast<int>(p1), real_, spec_,
                                FFTW_ESTIMATE);
    inv_ = fftw_plan_dft_c2r_2d(static_cast<int>(p0), static_cast<int>(p1), spec_, real_,
                                FFTW_ESTIMATE);
    fftw_plan_with_nthreads(1);
  }
  ~fft2() {
    const std::lock_guard<std::mutex> lock(fftw_planner_lock());
    fftw_destroy_plan(fwd_);
    fftw_destroy_plan(inv_);
    fftw_free(real_);
    fftw_free(spec_);
  }
  fft2(const fft2&) = delete;
  fft2& operator=(const fft2&) = delete;

  double* real() { return real_; }
  index p1() const { return p1_; }
  void zero() { std::fill(real_, real_ + p0_ * p1_, 0.0); }

  // Spectrum of a G₁ × G₂ grid (zero-padded): grid row i is buffer row i (stride P₂).
  std::vector<std::complex<double>> forward_grid(const std::vector<double>& v, index g0, index g1) {
    zero();
    for (index i = 0; i < g0; ++i) std::copy_n(v.begin() + i * g1, g1, real_ + i * p1_);
    return forward();
  }
  // Spectrum of what real() holds.
  std::vector<std::complex<double>> forward() {
    fftw_execute(fwd_);
    std::vector<std::complex<double>> out(static_cast<std::size_t>(nc_));  // (P₁, P₂/2 + 1)
    for (index i = 0; i < nc_; ++i) out[static_cast<std::size_t>(i)] = {spec_[i][0], spec_[i][1]};
    return out;
  }
  // The G₁ × G₂ corner of the inverse transform of a·b, divided by P₁P₂ (FFTW's inverse is
  // unnormalized): the circular convolution, equal to the linear one there when P ≥ G + lags + 1.
  std::vector<double> convolve(const std::vector<std::complex<double>>& a,
                               const std::vector<std::complex<double>>& b, index g0, index g1) {
    for (index i = 0; i < nc_; ++i) {
      const auto z = a[static_cast<std::size_t>(i)] * b[static_cast<std::size_t>(i)];
      spec_[i][0] = z.real();
      spec_[i][1] = z.imag();
    }
    fftw_execute(inv_);
    const double scale = 1.0 / double(p0_ * p1_);
    std::vector<double> out(static_cast<std::size_t>(g0 * g1));
    for (index i = 0; i < g0; ++i)
      for (index j = 0; j < g1; ++j)
        out[static_cast<std::size_t>(i * g1 + j)] = real_[i * p1_ + j] * scale;
    return out;
  }

 private:
  index p0_, p1_, nc_;  // P₁, P₂, P₁(P₂/2 + 1)
  double* real_;        // (P₁, P₂)
  fftw_complex* spec_;  // (P₁, P₂/2 + 1)
  fftw_plan fwd_, inv_;
};

}  // namespace

binned_2d::binned_2d(const_matrix_view<double> x, std::span<const double> y,
                     std::array<double, 2> lo, std::array<double, 2> hi, std::array<double, 2> h,
                     double cells_per_h, const binned2d_settings& st, const data_shard& shard)
    : lo_(lo), h_(h) {
  // Per axis: G a power of two with h/δ ≥ cells_per_h, within [16, max_cells]; a column of one
  // distinct value gets δ = 1 (every point on node 0).
  for (int a = 0; a < 2; ++a) {
    const double span = std::max(hi[a] - lo[a], 1e-300);
    const double want = std::min(span / h[a] * cells_per_h, double(st.max_cells));
    g_[a] = std::clamp<index>(next_pow2(static_cast<index>(std::ceil(want)) + 1), 16, st.max_cells);
    delta_[a] = hi[a] > lo[a] ? span / double(g_[a] - 1) : 1.0;
  }
  const auto cells = static_cast<std::size_t>(g_[0] * g_[1]);
  const bool with_y = !y.empty();
  // With y, the three sums of a cell sit side by side while binning (one cache line per corner
  // instead of three: the points come in data order, scattered over a grid of up to 24 MiB),
  // then are split into the three grids the transforms read.
  std::vector<std::array<double, 3>> cell3(with_y ? cells : 0, {0.0, 0.0, 0.0});
  if (!with_y) c_.assign(cells, 0.0);
  const auto mine = shard.block_of(x.rows);  // every row unless the points are sharded
  progress_step step(fmt::format("binning {} points on a {} x {} grid", mine.size(), g_[0], g_[1]),
                     mine.size());
  for (index i = mine.lo; i < mine.hi; ++i) {
    step.tick(i - mine.lo);
    index g[2];
    double f[2];
    for (int a = 0; a < 2; ++a) {
      const double t = (x(i, a) - lo_[a]) / delta_[a];
      g[a] = std::clamp<index>(static_cast<index>(std::floor(t)), 0, g_[a] - 2);
      f[a] = std::clamp(t - double(g[a]), 0.0, 1.0);
    }
    // Bilinear binning: the point's unit mass over its cell's four corners, (g₀, g₁), (g₀, g₁ + 1),
    // (g₀ + 1, g₁), (g₀ + 1, g₁ + 1); at[] are their row-major indices.
    const double w[4] = {(1 - f[0]) * (1 - f[1]), (1 - f[0]) * f[1], f[0] * (1 - f[1]),
                         f[0] * f[1]};
    const std::size_t at[4] = {static_cast<std::size_t>(g[0] * g_[1] + g[1]),
                               static_cast<std::size_t>(g[0] * g_[1] + g[1] + 1),
                               static_cast<std::size_t>((g[0] + 1) * g_[1] + g[1]),
                               static_cast<std::size_t>((g[0] + 1) * g_[1] + g[1] + 1)};
    if (!with_y) {
      for (int q = 0; q < 4; ++q) c_[at[q]] += w[q];
      continue;
    }
    const double yi = y[static_cast<std::size_t>(i)];
    for (int q = 0; q < 4; ++q) {
      auto& cell = cell3[at[q]];
      cell[0] += w[q];
      cell[1] += w[q] * yi;
      cell[2] += w[q] * yi * yi;
    }
  }
  if (!with_y) {
    shard.sum_all(c_);  // the other processes' blocks
    return;
  }
  c_.resize(cells);
  cy_.resize(cells);
  cyy_.resize(cells);
  for (std::size_t q = 0; q < cells; ++q) {
    c_[q] = cell3[q][0];
    cy_[q] = cell3[q][1];
    cyy_[q] = cell3[q][2];
  }
  if (!shard.active()) return;
  // The other processes' blocks: one rank-ordered sum of the three grids, packed.
  std::vector<double> all(3 * cells);  // [c | cy | cyy]
  std::copy(c_.begin(), c_.end(), all.begin());
  std::copy(cy_.begin(), cy_.end(), all.begin() + static_cast<std::ptrdiff_t>(cells));
  std::copy(cyy_.begin(), cyy_.end(), all.begin() + static_cast<std::ptrdiff_t>(2 * cells));
  shard.sum_all(all);
  const auto at = [&](std::size_t k) {
    return all.begin() + static_cast<std::ptrdiff_t>(k * cells);
  };
  std::copy(at(0), at(1), c_.begin());
  std::copy(at(1), at(2), cy_.begin());
  std::copy(at(2), at(3), cyy_.begin());
}

// s0 = c ∗ K, t0 = cy ∗ K, q0 = c ∗ K² on the grid, the kernel sampled at the lags (l₀, l₁) as
// K(|(l₀δ₀/h₀, l₁δ₁/h₁)|). Lags per axis: the kernel's reach in grid steps, the whole grid when it
// has none (+inf); P per axis then keeps the circular convolution from wrapping onto the grid.
binned_2d::sums binned_2d::convolve(const any_kernel& unit, bool with_q) const {
  const double reach = binned_reach(unit, binned_settings{}.tail_tolerance);  // in bandwidths
  index lags[2], p[2];
  for (int a = 0; a < 2; ++a) {
    const double r = reach * h_[a] / delta_[a];
    lags[a] =
        std::isfinite(r) ? std::min<index>(g_[a] - 1, static_cast<index>(std::ceil(r))) : g_[a] - 1;
    p[a] = fast_fft_size(g_[a] + lags[a] + 1);
  }
  fft2 plan(p[0], p[1]);
  // Forward K and c, inverse s0; forward cy and inverse t0; forward K² and inverse q0.
  const int transforms = 2 + (cy_.empty() ? 0 : 2) + (with_q ? 2 : 0) + 1;
  progress_step step(fmt::format("2-D transforms ({} x {})", p[0], p[1]), transforms);
  // The kernel on the lags' quadrant [0, lags₀] × [0, lags₁], evaluated once: a radial kernel is
  // even in each axis, so the four quadrants and K² reuse these values. (Sampling all
  // (2·lags + 1)² lags for K and again for K² cost as much as the transforms for a kernel that
  // reaches across the grid, like the laplacian.)
  const auto q1 = static_cast<std::size_t>(lags[1] + 1);
  std::vector<double> quad(static_cast<std::size_t>(lags[0] + 1) * q1);
  for (index l0 = 0; l0 <= lags[0]; ++l0)
    for (index l1 = 0; l1 <= lags[1]; ++l1) {
      const double u0 = double(l0) * delta_[0] / h_[0], u1 = double(l1) * delta_[1] / h_[1];
      quad[static_cast<std::size_t>(l0) * q1 + static_cast<std::size_t>(l1)] =
          kernel_at_distance(unit, std::sqrt(u0 * u0 + u1 * u1));
    }
  // K (or K²) at every lag in [−lags₀, lags₀] × [−lags₁, lags₁], lag l at index l mod P per axis,
  // read from the quadrant at (|l₀|, |l₁|); returns its spectrum.
  auto kernel_signal = [&](bool squared) {
    plan.zero();
    double* sig = plan.real();
    for (index l0 = -lags[0]; l0 <= lags[0]; ++l0) {
      const double* row = quad.data() + static_cast<std::size_t>(l0 < 0 ? -l0 : l0) * q1;
      double* out = sig + (l0 >= 0 ? l0 : p[0] + l0) * plan.p1();
      for (index l1 = -lags[1]; l1 <= lags[1]; ++l1) {
        const double v = row[l1 < 0 ? -l1 : l1];
        out[l1 >= 0 ? l1 : p[1] + l1] = squared ? v * v : v;
      }
    }
    auto f = plan.forward();
    step.add(1);
    return f;
  };
  auto forward_grid = [&](const std::vector<double>& v) {
    auto f = plan.forward_grid(v, g_[0], g_[1]);
    step.add(1);
    return f;
  };
  auto convolve = [&](const std::vector<std::complex<double>>& a,
                      const std::vector<std::complex<double>>& b) {
    auto r = plan.convolve(a, b, g_[0], g_[1]);
    step.add(1);
    return r;
  };
  sums out;
  const auto fk = kernel_signal(false);  // (P₁, P₂/2 + 1), shared by s0 and t0
  const auto fc = forward_grid(c_);      // shared by s0 and q0
  out.s0 = convolve(fc, fk);
  if (!cy_.empty()) out.t0 = convolve(forward_grid(cy_), fk);
  if (with_q) out.q0 = convolve(fc, kernel_signal(true));
  return out;
}

// Inside the grid's box [lo, lo + (G − 1)δ] on both axes.
bool binned_2d::inside(double a0, double a1) const {
  return a0 >= lo_[0] && a0 <= lo_[0] + delta_[0] * double(g_[0] - 1) && a1 >= lo_[1] &&
         a1 <= lo_[1] + delta_[1] * double(g_[1] - 1);
}

double binned_2d::read(const std::vector<double>& v, double a0, double a1) const {
  index g[2];
  double f[2];
  const double a[2] = {a0, a1};
  for (int d = 0; d < 2; ++d) {
    const double t = (a[d] - lo_[d]) / delta_[d];
    g[d] = std::clamp<index>(static_cast<index>(std::floor(t)), 0, g_[d] - 2);
    f[d] = std::clamp(t - double(g[d]), 0.0, 1.0);
  }
  // The four nodes around the point, weighted as in binning.
  auto at = [&](index i, index j) { return v[static_cast<std::size_t>(i * g_[1] + j)]; };
  return (1 - f[0]) * ((1 - f[1]) * at(g[0], g[1]) + f[1] * at(g[0], g[1] + 1)) +
         f[0] * ((1 - f[1]) * at(g[0] + 1, g[1]) + f[1] * at(g[0] + 1, g[1] + 1));
}

// 2π ∫₀^∞ K(r) r dr for the unit kernel: gaussian e^{−r²/2} 2π; boxcar π; (1 − r²)^p gives
// π/(p + 1) for epanechnikov, biweight, triweight (p = 1, 2, 3); the rational quadratic
// (1 + r²/(2α))^{−α} 2πα/(α − 1), finite only for α > 1.
double kernel_integral_2d(const any_kernel& k) {
  const std::string_view n = kernel_name(k);
  if (n == "gaussian") return 2 * std::numbers::pi;
  if (n == "laplacian") return 2 * std::numbers::pi;  // 2π ∫ e^{−r} r dr
  if (n == "boxcar") return std::numbers::pi;
  if (n == "epanechnikov") return std::numbers::pi / 2;
  if (n == "biweight") return std::numbers::pi / 3;
  if (n == "triweight") return std::numbers::pi / 4;
  if (const auto* rq = std::get_if<kernel_rational_quadratic>(&k); rq && rq->alpha > 1)
    return 2 * std::numbers::pi * rq->alpha / (rq->alpha - 1);
  if (n == "tricube" || n == "cosine") {  // 2π ∫₀¹ K(r) r dr by Simpson's rule
    any_kernel unit = k;
    kernel_set_param(unit, 1.0);
    const int m = 2000;  // even number of intervals (Simpson); weights 1, 4, 2, …, 4, 1
    double acc = 0;
    for (int i = 0; i <= m; ++i) {
      const double r = double(i) / m;
      acc += (i == 0 || i == m ? 1 : (i % 2 ? 4 : 2)) * kernel_at_distance(unit, r) * r;
    }
    return 2 * std::numbers::pi * acc / (3.0 * m);
  }
  throw std::invalid_argument(fmt::format(
      "kernel {} is not a density in 2-D (use gaussian, epanechnikov, biweight, triweight, "
      "tricube, cosine, boxcar, laplacian, rational_quadratic with alpha > 1)",
      n));
}

}  // namespace kf::detail
