// Binned density sums and criteria (see kde_binned.hpp).
#include "regression/kde_binned.hpp"
#include "regression/smoother_routes.hpp"

#include "regression/binned2d.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "kernelformer/progress.hpp"

namespace kf::detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// (min x, max x); x non-empty.
std::pair<double, double> range_of(std::span<const double> x) {
  const auto [a, b] = std::minmax_element(x.begin(), x.end());
  return {*a, *b};
}

// log K at distance d (−inf where K = 0).
double log_kernel(const any_kernel& k, double d) {
  return std::visit(
      [&](const auto& kk) {
        const double w = kk.template weight<double>(d * d);
        return std::decay_t<decltype(kk)>::log_domain ? w : (w > 0 ? std::log(w) : -kInf);
      },
      k);
}

// Composite Simpson on [a, b] with 2m intervals: error O(step⁴) where f is smooth, hence the
// split at the integrand's kinks (kernel_self_convolution).
template <class F>
double simpson(F&& f, double a, double b, int m) {
  const double step = (b - a) / (2 * m);
  double acc = f(a) + f(b);
  for (int i = 1; i < 2 * m; ++i) acc += (i % 2 ? 4 : 2) * f(a + step * i);
  return acc * step / 3;
}

bool is_boxcar(const any_kernel& k) { return kernel_name(k) == "boxcar"; }

}  // namespace

// The boxcar jumps at its edge, so binning it costs a first-order error: its sums are counts,
// taken exactly from the sorted data instead (two pointers per pass, O(n) after the sort).
double kde_binned::boxcar_cv(double h, bool least_squares) {
  const auto s = sorted();
  const std::size_t n = s.size();
  std::vector<double> prefix;  // Σ s[0..i)
  if (least_squares) {
    prefix.resize(n + 1, 0.0);
    for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + s[i];
  }
  // [lo1, hi1): the points within h of a (K = 1); [lo2, hi2): within 2h (K∗K > 0). Both windows
  // only move right as a grows; the lower ends stop at i at the latest (s[i] = a).
  std::size_t lo1 = 0, hi1 = 0, lo2 = 0, hi2 = 0;
  double log_sum = 0, cross = 0, square = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = s[i];
    while (s[lo1] < a - h) ++lo1;
    while (hi1 < n && s[hi1] <= a + h) ++hi1;
    const double others = double(hi1 - lo1) - 1;  // the window holds a itself
    if (!least_squares) {
      if (others <= 0) return std::numeric_limits<double>::infinity();
      log_sum += std::log(others);
      continue;
    }
    cross += others;
    while (s[lo2] < a - 2 * h) ++lo2;
    while (hi2 < n && s[hi2] <= a + 2 * h) ++hi2;
    // Σ_j (2 − |x_j − a|/h) over the window of half-width 2h: K∗K for the boxcar. left, right:
    // Σ |x_j − a| on each side, from the prefix sums (j = i adds 2, its distance 0).
    const double left = a * double(i - lo2) - (prefix[i] - prefix[lo2]);
    const double right = (prefix[hi2] - prefix[i + 1]) - a * double(hi2 - i - 1);
    square += 2 * double(hi2 - lo2) - (left + right) / h;
  }
  const double nn = double(n);
  // Z = 2: f̂₋ᵢ(x_i) = others/((n − 1)·2h); ∫f̂² = Σ_ij h(2 − |d_ij|/h) / (n²·h²·Z²).
  if (!least_squares) return -(log_sum / nn - std::log((nn - 1) * h * 2));
  return square / (nn * nn * h * 4) - 2 * cross / (nn * (nn - 1) * h * 2);
}

double kernel_self_convolution(const any_kernel& k, double t) {
  t = std::abs(t);
  const std::string_view name = kernel_name(k);
  // Closed forms for the unit kernels e^{−u²/2}, 1/(1 + u²), e^{−|u|}.
  if (name == "gaussian") return std::sqrt(std::numbers::pi) * std::exp(-t * t / 4);
  if (name == "cauchy") return 2 * std::numbers::pi / (4 + t * t);
  if (name == "laplacian") return (1 + t) * std::exp(-t);
  if (!kernel_compact(k))
    throw std::invalid_argument(fmt::format(
        "kde cv-ls supports gaussian, cauchy, laplacian and the compact kernels, not {}", name));
  if (t >= 2) return 0;  // the supports [−1, 1] and [t − 1, t + 1] no longer overlap
  any_kernel unit = k;
  kernel_set_param(unit, 1.0);
  auto f = [&](double u) {
    return kernel_at_distance(unit, std::abs(u)) * kernel_at_distance(unit, std::abs(t - u));
  };
  // The integrand is smooth between the breakpoints −1, t − 1, 0, t, 1 (supports and kinks).
  const double lo = t - 1, hi = 1;
  double pts[] = {lo, 0.0, t, hi};
  std::sort(std::begin(pts), std::end(pts));
  double acc = 0;
  for (int i = 0; i + 1 < 4; ++i) {
    const double a = std::max(pts[i], lo), b = std::min(pts[i + 1], hi);
    if (b > a) acc += simpson(f, a, b, 32);
  }
  return acc;
}

// An empty [lo, hi] (+inf, −inf): the grid spans the data's range only.
kde_binned::kde_binned(std::span<const double> x, const data_shard& shard)
    : kde_binned(x, std::numeric_limits<double>::infinity(),
                 -std::numeric_limits<double>::infinity(), shard) {}

kde_binned::kde_binned(std::span<const double> x, double lo, double hi, const data_shard& shard)
    : kde_binned(x, range_of(x), lo, hi, shard) {}

kde_binned::kde_binned(std::span<const double> x, std::pair<double, double> range, double lo,
                       double hi, const data_shard& shard)
    : x_(x),
      bd_(x, {}, std::min(lo, range.first), std::max(hi, range.second), shard),
      shard_(shard) {}

// The sorted copy of x, made on first need (only the exact fallbacks and the boxcar read it).
std::span<const double> kde_binned::sorted() {
  if (sorted_.empty()) {
    sorted_.assign(x_.begin(), x_.end());
    std::sort(sorted_.begin(), sorted_.end());
  }
  return sorted_;
}

// Visits the points nearest first (l walks left, r right of a's position), adding log K in the
// log domain with a running max (mx, acc), so a sum far below K(0) keeps its relative precision.
double kde_binned::exact_log_sum(const any_kernel& k, double a, bool leave_one_out) {
  const auto s = sorted();
  const auto n = static_cast<std::ptrdiff_t>(s.size());
  std::ptrdiff_t r = std::lower_bound(s.begin(), s.end(), a) - s.begin();
  std::ptrdiff_t l = r - 1;
  if (leave_one_out && r < n && s[static_cast<std::size_t>(r)] == a) ++r;  // skip a itself
  double mx = -kInf, acc = 0;                                              // log Σ = mx + log acc
  while (l >= 0 || r < n) {
    const double dl = l >= 0 ? a - s[static_cast<std::size_t>(l)] : kInf;
    const double dr = r < n ? s[static_cast<std::size_t>(r)] - a : kInf;
    const double d = std::min(dl, dr);
    const double lw = log_kernel(k, d);
    // Kernels are monotone in the distance: nothing left can add more than (left)·K(d). Stop
    // when that is below e^{−40} ≈ 4e-18 of the sum, under double's relative precision.
    const double left = double(std::max<std::ptrdiff_t>(l + 1, 0) + (n - r));
    if (lw == -kInf || (mx > -kInf && lw + std::log(left) < mx + std::log(acc) - 40)) break;
    if (lw > mx) {
      acc = acc * std::exp(mx - lw) + 1;
      mx = lw;
    } else {
      acc += std::exp(lw - mx);
    }
    if (dl <= dr)
      --l;
    else
      ++r;
  }
  return mx == -kInf ? -kInf : mx + std::log(acc);
}

std::vector<double> kde_binned::density(const any_kernel& k, double z, std::span<const double> at,
                                        double cells_per_h) {
  const double h = kernel_param(k), k0 = kernel_at_distance(k, 0.0);
  const double log_norm = std::log(double(x_.size()) * h * z);  // f̂ = Σ K / (n h Z)
  std::vector<double> f(at.size());
  exact_points_ = 0;
  if (is_boxcar(k)) {  // counts, exactly
    const auto s = sorted();
    for (std::size_t i = 0; i < at.size(); ++i) {
      const auto c = std::upper_bound(s.begin(), s.end(), at[i] + h) -
                     std::lower_bound(s.begin(), s.end(), at[i] - h);
      f[i] = double(c) / std::exp(log_norm);
    }
    exact_points_ = static_cast<index>(at.size());
    return f;
  }
  const binned_settings st;
  const auto sm = bd_.sum_weights([&](double d) { return kernel_at_distance(k, d); },
                                  binned_reach(k, st.tail_tolerance), h, cells_per_h, st);
  for (std::size_t i = 0; i < at.size(); ++i) {
    const double a = at[i];
    const double v =
        a >= bd_.lo() && a <= bd_.hi() ? binned_data::read(sm.lo, sm.delta, sm.s, a) : 0.0;
    // Binning errs on the scale of K(0), not of the sum: below 1e-3 K(0), the exact sum keeps
    // the tails' relative precision.
    if (v >= 1e-3 * k0) {
      f[i] = v / std::exp(log_norm);
    } else {
      ++exact_points_;
      f[i] = std::exp(exact_log_sum(k, a, false) - log_norm);
    }
  }
  return f;
}

double kde_binned::cv_ml(const any_kernel& k, double z, double cells_per_h) {
  const auto n = static_cast<index>(x_.size());
  if (n < 2) return kInf;
  const double h = kernel_param(k), k0 = kernel_at_distance(k, 0.0);
  if (is_boxcar(k)) return boxcar_cv(h, false);
  const binned_settings st;
  const auto sm = bd_.sum_weights([&](double d) { return kernel_at_distance(k, d); },
                                  binned_reach(k, st.tail_tolerance), h, cells_per_h, st);
  // Σ_i log f̂₋ᵢ(x_i) ≈ Σ_g c_g log(s_g − K(0)): a point at node g sees the sum there less its
  // own weight K(0). Bins where that is below 0.1 K(0) are too close to cancellation to trust.
  const std::size_t g_n = sm.s.size();
  std::vector<double> lg(g_n);  // (G) per-bin log of the leave-one-out sum
  bool isolated = false;
  double total = 0;
  for (std::size_t g = 0; g < g_n; ++g) {
    const double loo = sm.s[g] - k0;
    lg[g] = loo >= 0.1 * k0 ? std::log(loo) : kInf;  // +inf marks a bin summed exactly
    if (sm.c[g] > 0) {
      if (lg[g] == kInf) isolated = true;
      total += sm.c[g] * lg[g];
    }
  }
  exact_points_ = 0;
  if (isolated) {
    // Point by point: this process's block (every process takes this branch: the grid is the
    // same everywhere), then one sum of (total, points with zero density).
    total = 0;
    double zero = 0;
    const auto mine = shard_.block_of(n);
    // Each point: lg interpolated linearly between its two nodes, or its exact sum when either
    // node is flagged.
    for (index i = mine.lo; i < mine.hi && zero == 0; ++i) {
      const double xi = x_[static_cast<std::size_t>(i)];
      const double t = (xi - sm.lo) / sm.delta;
      const auto g = static_cast<std::size_t>(
          std::clamp<index>(static_cast<index>(std::floor(t)), 0, index(g_n) - 2));
      const double f = std::clamp(t - double(g), 0.0, 1.0);
      if (lg[g] != kInf && lg[g + 1] != kInf) {
        total += (1 - f) * lg[g] + f * lg[g + 1];
        continue;
      }
      ++exact_points_;
      const double l = exact_log_sum(k, xi, true);
      if (l == -kInf)
        zero = 1;  // a point with zero leave-one-out density
      else
        total += l;
    }
    double sums[2] = {total, zero};
    shard_.sum_all(sums);
    if (sums[1] > 0) return kInf;
    total = sums[0];
  }
  return -(total / double(n) - std::log(double(n - 1) * h * z));  // −mean log f̂₋ᵢ(x_i)
}

double kde_binned::cv_ls(const any_kernel& k, double z, double cells_per_h) {
  const auto n = static_cast<index>(x_.size());
  if (n < 2) return kInf;
  const double h = kernel_param(k), nn = double(n);
  if (is_boxcar(k)) return boxcar_cv(h, true);
  const binned_settings st;
  const double reach = binned_reach(k, st.tail_tolerance);
  const auto sk = bd_.sum_weights([&](double d) { return kernel_at_distance(k, d); }, reach, h,
                                  cells_per_h, st);
  // K∗K in data units is h·(K∗K)(d/h) for the unit kernel; it reaches twice as far as K.
  const auto skk = bd_.sum_weights([&](double d) { return kernel_self_convolution(k, d / h); },
                                   2 * reach, h, cells_per_h, st);
  double cross = 0, square = 0;
  for (std::size_t g = 0; g < sk.s.size(); ++g) {
    cross += sk.c[g] * sk.s[g];
    square += skk.c[g] * skk.s[g];
  }
  cross -= sk.self;                                           // Σ_i Σ_{j≠i} K
  square += nn * kernel_self_convolution(k, 0.0) - skk.self;  // exact i = j terms, not binned
  // ∫f̂² = Σ_ij h (K∗K)(d_ij/h) / (n² h² Z²); the cross term (2/n) Σ_i f̂₋ᵢ(x_i).
  exact_points_ = 0;
  const double integral = square / (nn * nn * h * z * z);
  return integral - 2 * cross / (nn * (nn - 1) * h * z);
}

}  // namespace kf::detail

namespace kf::detail {
namespace {

struct grid2 {
  std::array<double, 2> lo, hi;  // the box per axis
};

grid2 data_range(const_matrix_view<double> x) {
  grid2 g;
  for (int a = 0; a < 2; ++a) {
    g.lo[a] = g.hi[a] = x(0, a);
    for (index i = 0; i < x.rows; ++i)
      g.lo[a] = std::min(g.lo[a], x(i, a)), g.hi[a] = std::max(g.hi[a], x(i, a));
  }
  return g;
}

// The kernel at bandwidth `param` (1: binned_2d scales each axis by its own h).
any_kernel unit_of(const any_kernel& k, double param = 1.0) {
  any_kernel u = k;
  kernel_set_param(u, param);
  return u;
}

// log Σ_{j ≠ i} K(|(x_i − x_j)/h|) by a plain loop (isolated points only).
double exact_loo_log_sum_2d(const any_kernel& unit, const_matrix_view<double> x,
                            std::array<double, 2> h, index i) {
  double mx = -std::numeric_limits<double>::infinity(), acc = 0;
  for (index j = 0; j < x.rows; ++j) {
    if (j == i) continue;
    const double u0 = (x(i, 0) - x(j, 0)) / h[0], u1 = (x(i, 1) - x(j, 1)) / h[1];
    const double lw = log_kernel(unit, std::sqrt(u0 * u0 + u1 * u1));
    if (lw == -std::numeric_limits<double>::infinity()) continue;
    if (lw > mx) {
      acc = acc * std::exp(mx - lw) + 1;
      mx = lw;
    } else {
      acc += std::exp(lw - mx);
    }
  }
  return acc > 0 ? mx + std::log(acc) : -std::numeric_limits<double>::infinity();
}

// kde2d_cv_ml's per-point pass over rows [b.lo, b.hi): bilinear weights of the four bins'
// log leave-one-out sums lg, or an exact sum where one is flagged (+inf; collected first, then
// summed over each support through a k-d tree for a compact kernel). Returns {Σ log f̂₋ᵢ, 1 if a
// point has zero leave-one-out density or the cap is passed, points summed exactly}.
std::array<double, 3> isolated_sums_2d(const any_kernel& unit, const_matrix_view<double> x,
                                       std::array<double, 2> h, const grid2& g,
                                       std::array<index, 2> cells, const std::vector<double>& lg,
                                       data_shard::block b) {
  const index n = x.rows, cap = std::max<index>(1000, n / 1000);
  const auto [g0, g1] = cells;
  std::vector<index> exact_points;
  double total = 0;
  const double d0 = (g.hi[0] - g.lo[0]) / double(g0 - 1), d1 = (g.hi[1] - g.lo[1]) / double(g1 - 1);
  for (index i = b.lo; i < b.hi; ++i) {
    const double t0 = d0 > 0 ? (x(i, 0) - g.lo[0]) / d0 : 0,
                 t1 = d1 > 0 ? (x(i, 1) - g.lo[1]) / d1 : 0;
    const index a = std::clamp<index>(static_cast<index>(std::floor(t0)), 0, g0 - 2);
    const index c = std::clamp<index>(static_cast<index>(std::floor(t1)), 0, g1 - 2);
    const double f0 = std::clamp(t0 - double(a), 0.0, 1.0),
                 f1 = std::clamp(t1 - double(c), 0.0, 1.0);
    auto at = [&, w = g1](index r, index col) { return lg[static_cast<std::size_t>(r * w + col)]; };
    const double l00 = at(a, c), l01 = at(a, c + 1), l10 = at(a + 1, c), l11 = at(a + 1, c + 1);
    if (l00 != kInf && l01 != kInf && l10 != kInf && l11 != kInf) {
      total += (1 - f0) * ((1 - f1) * l00 + f1 * l01) + f0 * ((1 - f1) * l10 + f1 * l11);
      continue;
    }
    if (static_cast<index>(exact_points.size()) >= cap)
      return {total, 1.0, double(exact_points.size() + 1)};
    exact_points.push_back(i);
  }
  const double exact = double(exact_points.size());
  if (kernel_compact(unit) && !exact_points.empty()) {
    matrix<double> q(static_cast<index>(exact_points.size()), 2);
    for (std::size_t r = 0; r < exact_points.size(); ++r)
      for (index col = 0; col < 2; ++col) q(static_cast<index>(r), col) = x(exact_points[r], col);
    for (const double v : radius_kernel_sums(unit, x, h, q.cview(), exact_points)) {
      if (!(v > 0)) return {total, 1.0, exact};
      total += std::log(v);
    }
    return {total, 0.0, exact};
  }
  for (const index i : exact_points) {
    const double l = exact_loo_log_sum_2d(unit, x, h, i);
    if (l == -kInf) return {total, 1.0, exact};
    total += l;
  }
  return {total, 0.0, exact};
}

}  // namespace

kde2d_sums kde2d_kernel_sums(const any_kernel& kernel, const_matrix_view<double> x,
                             std::array<double, 2> h, const_matrix_view<double> at,
                             double cells_per_h, const data_shard& shard) {
  const any_kernel unit = unit_of(kernel);
  const double k0 = kernel_at_distance(unit, 0.0);
  const double reach = binned_reach(unit, binned_settings{}.tail_tolerance);
  // The data's box, widened per axis to the queries within the kernel's reach of it (at most
  // the data's span + h): farther queries get no grid, only exact sums.
  grid2 g = data_range(x);
  const grid2 data = g;
  for (int a = 0; a < 2; ++a) {
    const double out = std::min(reach * h[a], data.hi[a] - data.lo[a] + h[a]);
    for (index i = 0; i < at.rows; ++i) {
      const double v = at(i, a);
      if (v < g.lo[a] && v >= data.lo[a] - out) g.lo[a] = v;
      if (v > g.hi[a] && v <= data.hi[a] + out) g.hi[a] = v;
    }
  }
  const binned_2d bd(x, {}, g.lo, g.hi, h, cells_per_h, binned2d_settings{}, shard);
  const auto sm = bd.convolve(unit, false);
  kde2d_sums r;
  r.s.assign(static_cast<std::size_t>(at.rows), 0.0);
  progress_step step(fmt::format("evaluating at {} points", at.rows), at.rows);
  for (index i = 0; i < at.rows; ++i) {
    step.tick(i);
    const double v = bd.inside(at(i, 0), at(i, 1)) ? bd.read(sm.s0, at(i, 0), at(i, 1)) : 0.0;
    if (v >= 1e-3 * k0)
      r.s[static_cast<std::size_t>(i)] = v;
    else
      r.exact_rows.push_back(i);
  }
  return r;
}

double kde2d_cv_ml(const any_kernel& kernel, const_matrix_view<double> x, std::array<double, 2> h,
                   double z, double cells_per_h, const data_shard& shard) {
  const index n = x.rows;
  if (n < 2) return kInf;
  const any_kernel unit = unit_of(kernel);
  const double k0 = kernel_at_distance(unit, 0.0);
  const grid2 g = data_range(x);
  const binned_2d bd(x, {}, g.lo, g.hi, h, cells_per_h, binned2d_settings{}, shard);
  const auto sm = bd.convolve(unit, false);
  // As in 1-D: per-bin log(s − K(0)), +inf where below 0.1 K(0) (those bins' points go exact).
  std::vector<double> lg(sm.s0.size());  // (G₁·G₂)
  bool isolated = false;
  double total = 0;
  for (std::size_t q = 0; q < lg.size(); ++q) {
    const double loo = sm.s0[q] - k0;
    lg[q] = loo >= 0.1 * k0 ? std::log(loo) : kInf;
    if (bd.c()[q] > 0) {
      if (lg[q] == kInf) isolated = true;
      total += bd.c()[q] * lg[q];
    }
  }
  if (isolated) {
    // This process's block of the points (every process takes this branch: the grid is the
    // same everywhere), then one sum of (total, +inf flag, exact points).
    const auto s = isolated_sums_2d(unit, x, h, g, bd.cells(), lg, shard.block_of(n));
    double sums[3] = {s[0], s[1], s[2]};
    shard.sum_all(sums);
    const index cap = std::max<index>(1000, n / 1000);  // more exact points: h too small, +inf
    if (sums[1] > 0 || sums[2] > double(cap)) return kInf;
    total = sums[0];
  }
  const double nn = double(n);
  return -(total / nn - std::log((nn - 1) * h[0] * h[1] * z));  // −mean log f̂₋ᵢ(x_i)
}

double kde2d_cv_ls_gaussian(const_matrix_view<double> x, std::array<double, 2> h,
                            double cells_per_h, const data_shard& shard) {
  const index n = x.rows;
  if (n < 2) return kInf;
  // Unit gaussian e^{−|u|²/2}: Z = 2π and K∗K(t) = π e^{−|t|²/4}, a gaussian of bandwidth √2.
  const double nn = double(n), z = 2 * std::numbers::pi;
  const grid2 g = data_range(x);
  const binned_2d bd(x, {}, g.lo, g.hi, h, cells_per_h, binned2d_settings{}, shard);
  const auto sk = bd.convolve(kernel_gaussian{1.0}, false);
  const auto skk = bd.convolve(kernel_gaussian{std::sqrt(2.0)}, false);  // K∗K / π
  double cross = 0, square = 0;
  for (std::size_t q = 0; q < bd.c().size(); ++q) {
    cross += bd.c()[q] * sk.s0[q];
    square += bd.c()[q] * skk.s0[q];
  }
  cross -= nn;  // the i = j terms, K(0) = 1
  square *= std::numbers::pi;
  return square / (nn * nn * h[0] * h[1] * z * z) - 2 * cross / (nn * (nn - 1) * h[0] * h[1] * z);
}

}  // namespace kf::detail
