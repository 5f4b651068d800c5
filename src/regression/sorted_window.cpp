// Exact 1-D Nadaraya–Watson and local-linear sums for compact kernels, O(n log n).
//
// On its support a compact kernel is a polynomial in |u|, u = (x_j − x)/h: K = Σ_m c_m |u|^m
// (compact_polynomial). So every local moment Σ K uᵖ w_j (w = 1 or y) over the window of a
// query x is a combination of the power sums Σ u_jʳ w_j, and with u_j = β_j − α in a
// coordinate β_j = (x_j − c)/h centered on a block of queries (α = (x − c)/h),
//   Σ u_jʳ w_j = Σ_i C(r, i) (−α)^(r−i) Σ β_jⁱ w_j.
// The sums Σ β_jⁱ w_j over the window are kept as running sums while the sorted queries of the
// block sweep the sorted keys: a key is added when it enters the window and subtracted when it
// leaves (for a kernel with odd powers, tricube, the window is split at x so |u| has one sign
// on each part). Blocks are h/2 wide, so |α| ≤ 1/4 and |β| ≤ 5/4 and the expansion loses at
// most a factor Σ_m |c_m| (3/2)^m of precision (≤ 2·10⁴ for tricube², ~1e-12 relative; tested
// against the all-pairs route at 1e-9). Sums reset to zero whenever the window empties.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <utility>

#include "kernelformer/progress.hpp"
#include "kernelformer/regression/binned.hpp"
#include "regression/smoother_routes.hpp"

namespace kf::detail {
namespace {

std::vector<double> polynomial_square(const std::vector<double>& c) {
  std::vector<double> r(2 * c.size() - 1, 0.0);
  for (std::size_t a = 0; a < c.size(); ++a)
    for (std::size_t b = 0; b < c.size(); ++b) r[a + b] += c[a] * c[b];
  return r;
}

// Drops trailing terms below 1e-17 on the support |u| ≤ 1 (the cosine's Taylor tail).
void trim(std::vector<double>& c) {
  while (c.size() > 1 && std::abs(c.back()) < 1e-17) c.pop_back();
}

struct window_plan {
  int degree = 0;             // 0: Nadaraya–Watson, 1: local linear
  bool split = false;         // odd powers of |u|: keep the window's two sides apart
  std::vector<double> k, k2;  // K and K² as polynomials in |u|
  int r1 = 0, ry = 0;         // highest powers of u needed with weights 1 and y
  std::vector<double> binom;  // C(r, i) at r·(r1 + 1) + i
};

window_plan make_plan(const any_kernel& kernel, int degree, bool with_q) {
  window_plan p;
  p.degree = degree;
  p.k = compact_polynomial(kernel);
  if (with_q) {
    p.k2 = polynomial_square(p.k);
    trim(p.k2);
  }
  for (std::size_t m = 1; m < p.k.size(); m += 2) p.split = p.split || p.k[m] != 0;
  const int dk = int(p.k.size()) - 1, dk2 = int(p.k2.size()) - 1;  // −1: no K²
  p.r1 = std::max(dk, dk2) + 2 * degree;
  p.ry = dk + degree;
  const int w = p.r1 + 1;
  p.binom.assign(std::size_t(w * w), 0.0);
  for (int r = 0; r < w; ++r) {
    p.binom[std::size_t(r * w)] = 1;
    for (int i = 1; i <= r; ++i)
      p.binom[std::size_t(r * w + i)] = p.binom[std::size_t((r - 1) * w + i - 1)] +
                                        (i < r ? p.binom[std::size_t((r - 1) * w + i)] : 0);
  }
  return p;
}

struct window_sums {
  double s[3] = {0, 0, 0}, t[2] = {0, 0}, q[3] = {0, 0, 0};
};

// Running Σ βⁱ (i ≤ r1) and Σ βⁱ y (i ≤ ry) over one part of a window.
struct power_sums {
  std::vector<double> b1, by;
  void reset() {
    std::fill(b1.begin(), b1.end(), 0.0);
    std::fill(by.begin(), by.end(), 0.0);
  }
  void add(double beta, double y, double sign) {
    double p = sign;
    std::size_t i = 0;
    for (; i < by.size(); ++i, p *= beta) b1[i] += p, by[i] += p * y;
    for (; i < b1.size(); ++i, p *= beta) b1[i] += p;
  }
};

// d[r] = Σ uʳ w = Σ_i C(r, i) (−α)^(r−i) b[i] for r < d.size().
void shift(const window_plan& p, const double* na, const std::vector<double>& b,
           std::vector<double>& d) {
  const std::size_t w = std::size_t(p.r1 + 1);
  for (std::size_t r = 0; r < d.size(); ++r) {
    double acc = 0;
    for (std::size_t i = 0; i <= r; ++i) acc += p.binom[r * w + i] * na[r - i] * b[i];
    d[r] = acc;
  }
}

// Σ_m c_m |u|^m uᵖ w over the window from the shifted power sums of its parts: on the left part
// (u ≤ 0) |u|^m = (−1)^m u^m.
double moment(const std::vector<double>& c, int p, const std::vector<double>* left,
              const std::vector<double>& right) {
  double acc = 0;
  for (std::size_t m = 0; m < c.size(); ++m) {
    if (c[m] == 0) continue;
    const std::size_t r = m + std::size_t(p);
    double v = right[r];
    if (left) v += (m % 2 ? -1.0 : 1.0) * (*left)[r];
    acc += c[m] * v;
  }
  return acc;
}

// Calls fn(i, sums, lo, hi) for every sorted query i with its window's moments (in bandwidth
// units) and its window, the keys [lo, hi). Queries in parallel blocks of width h/2.
template <class Fn>
void sweep(std::span<const double> xs, std::span<const double> ys, std::span<const double> qs,
           double h, const window_plan& p, Fn&& fn) {
  const double w = h / 2;
  std::vector<std::pair<std::size_t, std::size_t>> blocks;
  for (std::size_t a = 0; a < qs.size();) {
    std::size_t e = a + 1;
    while (e < qs.size() && (qs[e] <= qs[a] || qs[e] < qs[a] + w)) ++e;
    blocks.emplace_back(a, e);
    a = e;
  }
  const std::size_t n = xs.size();
  const auto nb = static_cast<std::ptrdiff_t>(blocks.size());
  progress_step step(fmt::format("exact sums over sorted windows ({} points)", qs.size()),
                     static_cast<index>(qs.size()));
#pragma omp parallel
  {
    power_sums left{std::vector<double>(std::size_t(p.r1 + 1)),
                    std::vector<double>(std::size_t(p.ry + 1))},
        right = left;
    std::vector<double> na(std::size_t(p.r1 + 1)), d1l(na.size()), d1r(na.size()),
        dyl(std::size_t(p.ry + 1)), dyr(dyl.size());
#pragma omp for schedule(dynamic, 4)
    for (std::ptrdiff_t bi = 0; bi < nb; ++bi) {
      const auto [a, e] = blocks[std::size_t(bi)];
      step.add(static_cast<index>(e - a));
      const double c = qs[a] + w / 2;
      const double x0 = qs[a];
      std::size_t lo = std::size_t(std::lower_bound(xs.begin(), xs.end(), x0 - h) - xs.begin());
      std::size_t mid = std::size_t(std::upper_bound(xs.begin(), xs.end(), x0) - xs.begin());
      std::size_t hi = std::size_t(std::upper_bound(xs.begin(), xs.end(), x0 + h) - xs.begin());
      if (!p.split) mid = lo;  // one part: everything on the "right"
      left.reset();
      right.reset();
      for (std::size_t j = lo; j < mid; ++j) left.add((xs[j] - c) / h, ys[j], 1.0);
      for (std::size_t j = mid; j < hi; ++j) right.add((xs[j] - c) / h, ys[j], 1.0);
      for (std::size_t i = a; i < e; ++i) {
        const double x = qs[i];
        for (; hi < n && xs[hi] <= x + h; ++hi) right.add((xs[hi] - c) / h, ys[hi], 1.0);
        if (p.split) {
          for (; mid < hi && xs[mid] <= x; ++mid) {
            const double beta = (xs[mid] - c) / h;
            right.add(beta, ys[mid], -1.0);
            left.add(beta, ys[mid], 1.0);
          }
          if (mid == hi) right.reset();
        }
        for (; lo < hi && xs[lo] < x - h; ++lo)
          (p.split ? left : right).add((xs[lo] - c) / h, ys[lo], -1.0);
        if (lo == (p.split ? mid : hi)) (p.split ? left : right).reset();
        if (lo == hi) left.reset(), right.reset();

        const double alpha = (x - c) / h;
        na[0] = 1;
        for (std::size_t r = 1; r < na.size(); ++r) na[r] = na[r - 1] * -alpha;
        shift(p, na.data(), right.b1, d1r);
        shift(p, na.data(), right.by, dyr);
        if (p.split) {
          shift(p, na.data(), left.b1, d1l);
          shift(p, na.data(), left.by, dyl);
        }
        const std::vector<double>* l1 = p.split ? &d1l : nullptr;
        const std::vector<double>* ly = p.split ? &dyl : nullptr;
        window_sums s;
        for (int q = 0; q <= 2 * p.degree; ++q) {
          s.s[q] = moment(p.k, q, l1, d1r);
          if (!p.k2.empty()) s.q[q] = moment(p.k2, q, l1, d1r);
        }
        for (int q = 0; q <= p.degree; ++q) s.t[q] = moment(p.k, q, ly, dyr);
        fn(i, s, lo, hi);
      }
    }
  }
}

// The window's moments summed key by key (the reference form of the running sums).
window_sums direct_sums(std::span<const double> xs, std::span<const double> ys, std::size_t lo,
                        std::size_t hi, double x, double h, const any_kernel& unit, int degree) {
  window_sums s;
  for (std::size_t j = lo; j < hi; ++j) {
    const double d = (xs[j] - x) / h;
    const double k = kernel_at_distance(unit, std::abs(d));
    double p = 1;
    for (int a = 0; a <= 2 * degree; ++a, p *= d) {
      s.s[a] += k * p;
      s.q[a] += k * k * p;
      if (a <= degree) s.t[a] += k * p * ys[j];
    }
  }
  return s;
}

// The permutation that sorts v ascending, and the sorted values.
std::vector<index> sort_order(const_matrix_view<double> x, std::vector<double>& sorted) {
  const auto n = static_cast<std::size_t>(x.rows);
  std::vector<std::pair<double, index>> kv(n);
  for (std::size_t i = 0; i < n; ++i) kv[i] = {x(index(i), 0), index(i)};
  if (!std::is_sorted(kv.begin(), kv.end(),
                      [](const auto& a, const auto& b) { return a.first < b.first; }))
    std::sort(kv.begin(), kv.end());
  std::vector<index> order(n);
  sorted.resize(n);
  for (std::size_t i = 0; i < n; ++i) sorted[i] = kv[i].first, order[i] = kv[i].second;
  return order;
}

}  // namespace

bool sorted_window_supports(const any_kernel& k) {
  const auto name = kernel_name(k);
  return name == "boxcar" || name == "epanechnikov" || name == "biweight" || name == "triweight" ||
         name == "tricube" || name == "cosine";
}

std::vector<double> compact_polynomial(const any_kernel& k) {
  const auto name = kernel_name(k);
  if (name == "boxcar") return {1};
  if (name == "epanechnikov") return {1, 0, -1};
  if (name == "biweight") return {1, 0, -2, 0, 1};
  if (name == "triweight") return {1, 0, -3, 0, 3, 0, -1};
  if (name == "tricube") return {1, 0, 0, -3, 0, 0, 3, 0, 0, -1};
  if (name == "cosine") {  // cos(πu/2) = Σ_j (−1)^j (πu/2)^(2j) / (2j)!
    std::vector<double> c{1};
    double term = 1;
    const double z = std::numbers::pi / 2;
    for (int j = 1; j < 20; ++j) {
      term *= -z * z / double((2 * j - 1) * (2 * j));
      c.push_back(0);
      c.push_back(term);
    }
    trim(c);
    return c;
  }
  throw std::invalid_argument(fmt::format("{} is not a compact polynomial kernel", name));
}

regression_eval sorted_window_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                                       std::span<const double> y, const_matrix_view<double> xq,
                                       bool at_training, bool want_sum_l2) {
  const double h = regression_bandwidths(spec, 1)[0];
  const int degree = spec.method == regression_method::local_linear ? 1 : 0;
  const window_plan plan = make_plan(spec.kernel, degree, want_sum_l2);
  std::vector<double> xs, qs_hold;
  const std::vector<index> kp = sort_order(x, xs);
  std::vector<double> ys(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) ys[i] = y[std::size_t(kp[i])];
  // At every training point the queries are the sorted keys; a block of them (a shard's
  // criteria) or other points are sorted on their own. Self weights are kept at_training.
  const bool keys_are_queries = at_training && xq.data == x.data && xq.rows == x.rows;
  const std::vector<index> qp = keys_are_queries ? kp : sort_order(xq, qs_hold);
  const std::span<const double> qs = keys_are_queries ? std::span<const double>(xs) : qs_hold;

  const auto nq = static_cast<std::size_t>(xq.rows);
  regression_eval r = regression_eval_for(nq, at_training);
  any_kernel unit = spec.kernel;
  kernel_set_param(unit, 1.0);
  std::atomic<index> fallback{0};
  sweep(xs, ys, qs, h, plan,
        [&](std::size_t i, const window_sums& s, std::size_t lo, std::size_t hi) {
          // The running sums' absolute error is ~1e-13 per key in the window: where the whole
          // window weighs little (its keys near the support's edge) or the local line extrapolates
          // (Σℓ² > 1: an ill-conditioned design amplifies it), the sums are recomputed key by key.
          auto moments = [&](const window_sums& w) {
            return from_moments(degree, 1.0, w.s[0], w.s[1], w.s[2], w.t[0], w.t[1], w.q[0], w.q[1],
                                w.q[2], true, 0.0);
          };
          auto q = moments(s);
          if (hi > lo && (s.s[0] < 1e-2 * double(hi - lo) || (degree == 1 && q.sum_l2 > 1)))
            q = moments(direct_sums(xs, ys, lo, hi, qs[i], h, unit, degree));
          if (!q.defined) return;
          const auto o = static_cast<std::size_t>(qp[i]);
          r.defined[o] = 1;
          r.fit[o] = q.fit;
          r.sum_l2[o] = std::max(q.sum_l2, 0.0);
          if (at_training) r.self_weight[o] = q.self;
          if (q.fallback) fallback.fetch_add(1, std::memory_order_relaxed);
        });
  r.ll_fallback = fallback.load();
  r.undefined = index(std::count(r.defined.begin(), r.defined.end(), 0));
  return r;
}

}  // namespace kf::detail
