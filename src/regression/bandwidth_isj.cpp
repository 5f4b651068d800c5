// The improved Sheather–Jones bandwidth (regression/bandwidth_isj.hpp), step for step as KDEpy's
// bw_selection.improved_sheather_jones (docs/notes/isj_algorithm.md): the same grid, the binning's
// sums in the same order, the same association in every product, and scipy's brentq transcribed,
// so the root agrees with KDEpy's to rounding rather than to the root finder's tolerance.
#include "kernelformer/regression/bandwidth_isj.hpp"

#include <fftw3.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <numbers>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "detail/fft_size.hpp"

namespace kf {
namespace {

constexpr index kGrid = 1024;  // KDEpy: n = 2**10
constexpr int kEll = 7;        // ‖f^(7)‖² first, then the plug-in stages s = 6, 5, 4, 3, 2
constexpr double kPi = std::numbers::pi;

// The equidistant grid: the data's range extended by max(range/2, 6) on each side (KDEpy's
// autogrid(boundary_abs=6, boundary_rel=0.5)), kGrid points, spacing dx.
struct isj_grid {
  double lo = 0, hi = 0, dx = 0;
};
isj_grid make_grid(double min, double max) {
  const double beyond = std::max(0.5 * (max - min), 6.0);
  isj_grid g{min - beyond, max + beyond, 0};
  g.dx = (g.hi - g.lo) / double(kGrid - 1);
  return g;
}

// Linear binning: each point's unit mass split between the grid points left and right of it in
// proportion to its nearness, summed point by point in input order, then divided by n (KDEpy's
// Cython loop). `cell` gets each point's left grid point, for the distinct count.
std::vector<double> bin_linear(std::span<const double> x, const isj_grid& g,
                               std::vector<std::uint16_t>& cell) {
  std::vector<double> counts(static_cast<std::size_t>(kGrid + 1), 0.0);  // (kGrid + 1)
  cell.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double s = (x[i] - g.lo) / g.dx;  // in (0, kGrid − 1): the extension is ≥ range/2
    const double whole = std::floor(s);
    const double frac = s - whole;
    const auto j = static_cast<std::size_t>(whole);
    counts[j] += 1 - frac;
    counts[j + 1] += frac;
    cell[i] = static_cast<std::uint16_t>(j);
  }
  counts.pop_back();  // always 0: no point reaches the last grid point
  for (double& c : counts) c /= double(x.size());
  return counts;
}

// The number of distinct values among one cell's points: open addressing on the values' bits
// (−0 taken as +0, since numpy's unique compares values), the table twice the cell's size.
index count_distinct_in_cell(std::span<const double> v, std::vector<std::uint64_t>& table) {
  constexpr std::uint64_t empty = 0x7ff8000000000001;  // a NaN's bits: no finite value has them
  int bits = 1;
  while ((std::size_t(1) << bits) < 2 * v.size()) ++bits;
  const std::size_t mask = (std::size_t(1) << bits) - 1;
  table.assign(mask + 1, empty);
  index distinct = 0;
  for (double d : v) {
    const auto key = std::bit_cast<std::uint64_t>(d == 0 ? 0.0 : d);
    std::size_t i = static_cast<std::size_t>((key * 0x9e3779b97f4a7c15) >> (64 - bits));
    while (table[i] != empty && table[i] != key) i = (i + 1) & mask;
    if (table[i] == empty) {
      table[i] = key;
      ++distinct;
    }
  }
  return distinct;
}

// The number of distinct values (numpy's len(unique(x))). Equal values share a cell, so a
// counting sort by cell and a small hash table per cell (cache-resident) do it in O(n); one
// table over all n points would miss the cache on almost every probe at 10^6 points.
index count_distinct(std::span<const double> x, const std::vector<std::uint16_t>& cell) {
  std::vector<std::size_t> start(static_cast<std::size_t>(kGrid + 1), 0);
  for (std::uint16_t c : cell) ++start[std::size_t(c) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<std::size_t> next(start.begin(), start.end() - 1);
  std::vector<double> by_cell(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) by_cell[next[cell[i]]++] = x[i];
  std::vector<std::uint64_t> table;
  index distinct = 0;
  for (std::size_t j = 0; j + 1 < start.size(); ++j)
    distinct += count_distinct_in_cell(
        std::span<const double>(by_cell).subspan(start[j], start[j + 1] - start[j]), table);
  return distinct;
}

// a_k = 2 Σ_j v_j cos(π k (2j + 1) / (2 kGrid)): FFTW's REDFT10, which is scipy.fftpack.dct's
// unnormalized type II. Plans are made and destroyed under the library's planner lock.
std::vector<double> dct2(std::vector<double> v) {
  fftw_plan plan;
  {
    const std::lock_guard<std::mutex> lock(detail::fftw_planner_lock());
    plan =
        fftw_plan_r2r_1d(static_cast<int>(kGrid), v.data(), v.data(), FFTW_REDFT10, FFTW_ESTIMATE);
  }
  if (plan == nullptr) throw std::runtime_error("isj bandwidth: FFTW could not plan the DCT");
  fftw_execute(plan);
  const std::lock_guard<std::mutex> lock(detail::fftw_planner_lock());
  fftw_destroy_plan(plan);
  return v;
}

// The DCT coefficients k = 1..kGrid−1 as the functionals use them: ‖f^(s)‖² at diffusion time t
// is ½ π^(2s) Σ_k (k²)^s a_k² exp(−k² π² t) (Parseval on the cosine series).
struct isj_spectrum {
  std::vector<double> neg_k2_pi2;                    // (kGrid − 1) −k² π²
  std::array<std::vector<double>, kEll + 1> weight;  // [s] (kGrid − 1) (k²)^s a_k², s = 2..kEll
};
isj_spectrum make_spectrum(const std::vector<double>& a) {
  isj_spectrum sp;
  const double pi2 = kPi * kPi;  // numpy: -I_sq * np.pi**2 * t, left to right
  for (std::size_t k = 1; k < a.size(); ++k) sp.neg_k2_pi2.push_back(-double(k * k) * pi2);
  for (int s = 2; s <= kEll; ++s)
    for (std::size_t k = 1; k < a.size(); ++k)
      sp.weight[std::size_t(s)].push_back(std::pow(double(k * k), double(s)) * (a[k] * a[k]));
  return sp;
}
double norm_derivative2(const isj_spectrum& sp, int s, double t) {
  const auto& w = sp.weight[std::size_t(s)];
  double sum = 0;
  for (std::size_t k = 0; k < w.size(); ++k) sum += w[k] * std::exp(sp.neg_k2_pi2[k] * t);
  return 0.5 * std::pow(kPi, double(2 * s)) * sum;
}

// t − ξγ^[ℓ](t): ‖f^(ℓ)‖² at t, then for s = ℓ−1..2 the time t_s at which the estimate of
// ‖f^(s)‖² is AMISE-optimal given ‖f^(s+1)‖², and that estimate; last the AMISE-optimal time of
// the density itself from ‖f''‖². Gaussian constants: K0 = (2s−1)!! / √(2π).
double fixed_point(const isj_spectrum& sp, double n_distinct, double t) {
  double f = norm_derivative2(sp, kEll, t);
  if (f <= 0) return -1;  // as KDEpy: a norm is never ≤ 0 unless every a_k underflowed
  for (int s = kEll - 1; s >= 2; --s) {
    double odd = 1;
    for (int j = 1; j <= 2 * s - 1; j += 2) odd *= double(j);
    const double k0 = odd / std::sqrt(2 * kPi);
    const double c = (1 + std::pow(0.5, s + 0.5)) / 3;
    const double time = std::pow(2 * c * k0 / (n_distinct * f), 2.0 / (3.0 + 2.0 * s));
    f = norm_derivative2(sp, s, time);
  }
  return t - std::pow(2 * n_distinct * std::sqrt(kPi) * f, -2.0 / 5);
}

// scipy.optimize.brentq (Charles Harris's brentq.c) at its defaults, xtol = 2e-12,
// rtol = 4 ε, 100 iterations: KDEpy's root finder, transcribed so both take the same steps.
struct brent_result {
  double x = 0;
  bool sign_change = true, converged = false;
};
brent_result brentq(const std::function<double(double)>& f, double xpre, double xcur) {
  constexpr double xtol = 2e-12, rtol = 4 * std::numeric_limits<double>::epsilon();
  double xblk = 0, fblk = 0, spre = 0, scur = 0;
  double fpre = f(xpre), fcur = f(xcur);
  if (fpre * fcur > 0) return {0, false, false};
  if (fpre == 0) return {xpre, true, true};
  if (fcur == 0) return {xcur, true, true};
  for (int i = 0; i < 100; ++i) {
    if (fpre * fcur < 0) {
      xblk = xpre, fblk = fpre;
      spre = scur = xcur - xpre;
    }
    if (std::abs(fblk) < std::abs(fcur)) {
      xpre = xcur, xcur = xblk, xblk = xpre;
      fpre = fcur, fcur = fblk, fblk = fpre;
    }
    const double delta = (xtol + rtol * std::abs(xcur)) / 2;
    const double sbis = (xblk - xcur) / 2;
    if (fcur == 0 || std::abs(sbis) < delta) return {xcur, true, true};
    bool bisect = true;
    if (std::abs(spre) > delta && std::abs(fcur) < std::abs(fpre)) {
      double stry;
      if (xpre == xblk) {  // secant
        stry = -fcur * (xcur - xpre) / (fcur - fpre);
      } else {  // inverse quadratic
        const double dpre = (fpre - fcur) / (xpre - xcur);
        const double dblk = (fblk - fcur) / (xblk - xcur);
        stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre));
      }
      if (2 * std::abs(stry) < std::min(std::abs(spre), 3 * std::abs(sbis) - delta)) {
        spre = scur;
        scur = stry;
        bisect = false;
      }
    }
    if (bisect) spre = scur = sbis;
    xpre = xcur, fpre = fcur;
    xcur += std::abs(scur) > delta ? scur : (sbis > 0 ? delta : -delta);
    fcur = f(xcur);
  }
  return {xcur, true, false};
}

// KDEpy's _root: brentq on [0, b], b starting at 1e-11 + 0.01 (N − 50)/1000 with N the distinct
// count clamped to [50, 1050], doubled while the bracket holds no sign change; KDEpy raises once
// b reaches 1, and so do we.
double isj_root(const isj_spectrum& sp, index n_distinct) {
  const auto n = double(n_distinct);
  const auto f = [&](double t) { return fixed_point(sp, n, t); };
  const double clamped = double(std::clamp<index>(n_distinct, 50, 1050));
  double b = 10e-12 + 0.01 * (clamped - 50) / 1000;
  for (;;) {
    const brent_result r = brentq(f, 0, b);
    if (r.sign_change) {
      if (!r.converged || !(r.x > 0))  // KDEpy would retry the same bracket forever
        throw std::invalid_argument(fmt::format(
            "isj bandwidth: Brent's method did not converge to a positive root in [0, {}]", b));
      return r.x;
    }
    b *= 2.0;
    if (b >= 1)
      throw std::invalid_argument(
          "isj bandwidth: t = xi gamma(t) has no root below 1: too few or too tied points "
          "(KDEpy: \"Root finding did not converge. Need more data.\")");
  }
}

}  // namespace

double bandwidth_isj(std::span<const double> x, isj_steps* steps) {
  if (x.size() < 2) throw std::invalid_argument("isj bandwidth: needs at least 2 points");
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i]))
      throw std::invalid_argument(fmt::format("isj bandwidth: point {} is not finite", i + 1));
  const auto [min_it, max_it] = std::minmax_element(x.begin(), x.end());
  const double min = *min_it, max = *max_it;
  if (!(max > min)) throw std::invalid_argument("isj bandwidth: the data are constant");
  const isj_grid g = make_grid(min, max);
  if (!std::isfinite(g.hi - g.lo))
    throw std::invalid_argument("isj bandwidth: the data's range overflows a double");
  std::vector<std::uint16_t> cell;
  const std::vector<double> binned = bin_linear(x, g, cell);
  const index distinct = count_distinct(x, cell);
  const double t_star = isj_root(make_spectrum(dct2(binned)), distinct);
  const double h = std::sqrt(t_star) * (max - min);
  if (steps != nullptr) *steps = {kGrid, g.lo, g.hi, t_star, h};
  return h;
}

}  // namespace kf
