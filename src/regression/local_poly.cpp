// Local polynomial regression of degree p ≤ 3 and its ν-th derivative: the exact route (all
// pairs, or a sorted window for compact kernels) and the binned route (linear binning and a direct
// convolution on an equidistant grid, KernSmooth's locpoly). See regression/local_poly.hpp.
//
// Exact, at one query x0 with the window's rows j (nonzero weight w_j) and u_j = (x_j − x0)/h:
//   A = √W X N⁻¹ = QR,   X = [u⁰ … u^p],  N = the column norms of √W X,
//   (XᵀWX)⁻¹XᵀW^½ = N⁻¹R⁻¹Qᵀ,   so   ℓ_j = ν!/h^ν · √w_j · (Q z)_j,   Rᵀz = e_ν / N_ν,
// which keeps the error of ℓ at cond(A)·ε (the normal equations would give cond(A)²·ε). Then
// fit = Σ ℓ_j y_j, sum_l2 = Σ ℓ_j², self_weight = ℓ_i at query i = training point i.
// Binned, at a grid node: the moments s_k = Σ c K u^k, t_k = Σ cy K u^k, q_k = Σ c K² u^k give
// M = [s_{a+b}], v = M⁻¹e_ν, fit = ν!/h^ν · vᵀt, sum_l2 = (ν!/h^ν)² vᵀ[q_{a+b}]v.
#include "kernelformer/regression/local_poly.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "detail/eigen.hpp"
#include "kernelformer/regression/binned.hpp"

namespace kf {
namespace {

// Largest 2-norm condition number of the column-scaled weighted design (exact route) and of the
// diagonally scaled moment matrix (binned route, the normal equations) where a fit is defined.
constexpr double kMaxDesignCondition = 1e8;
constexpr double kMaxMomentCondition = 1e12;
constexpr std::size_t kNoSelf = std::numeric_limits<std::size_t>::max();

using small_matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, 4, 4>;
using small_vector = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, 4, 1>;

[[noreturn]] void fail(const char* route, const std::string& what) {
  throw std::invalid_argument(fmt::format("{}: {}", route, what));
}

void check_finite(const char* route, std::span<const double> v, const char* name) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i])) fail(route, fmt::format("{}[{}] = {} is not finite", name, i, v[i]));
}

void check_arguments(const char* route, const any_kernel& kernel, int degree, int derivative,
                     std::span<const double> x, std::span<const double> y,
                     std::span<const double> xq) {
  const double h = kernel_param(kernel);
  if (kernel_arg_of(kernel) != kernel_arg::sqdist || !(h > 0) || !std::isfinite(h))
    fail(route, fmt::format("needs a distance kernel with a positive finite bandwidth "
                            "(gaussian, epanechnikov, ...), not {}",
                            kernel_name(kernel)));
  if (degree < 0 || degree > 3) fail(route, fmt::format("degree = {} must be 0..3", degree));
  if (derivative < 0 || derivative > degree)
    fail(route, fmt::format("derivative = {} must be 0..degree ({})", derivative, degree));
  if (x.empty()) fail(route, "no training points");
  if (x.size() != y.size())
    fail(route, fmt::format("x has {} values but y has {}", x.size(), y.size()));
  check_finite(route, x, "x");
  check_finite(route, y, "y");
  check_finite(route, xq, "xq");
}

// ν!/h^ν: the ν-th derivative in x of Σ β_k u^k, u = (x − x0)/h, at x0 is ν! β_ν / h^ν.
double derivative_scale(int derivative, double h) {
  double s = 1;
  for (int k = 1; k <= derivative; ++k) s *= double(k) / h;
  return s;
}

local_poly_eval eval_for(std::size_t m, bool at_training) {
  local_poly_eval r;
  r.fit.assign(m, 0.0);
  r.sum_l2.assign(m, 0.0);
  r.defined.assign(m, 0);
  if (at_training) r.self_weight.assign(m, 0.0);
  return r;
}

// ---- exact route ----

struct exact_problem {
  int degree = 0, derivative = 0;
  double h = 1;
  std::span<const double> x, y;  // training points (sorted on the window route)
};

struct query_fit {
  double fit = 0, sum_l2 = 0, self = 0;
  bool defined = false;
};

// One thread's buffers for the local least-squares problems of its queries.
struct exact_workspace {
  std::vector<std::size_t> rows;  // the training point of each design row
  std::vector<double> w;          // its weight (relative to the query's largest)
  Eigen::MatrixXd a;              // (rows, p + 1) the column-scaled weighted design
  Eigen::HouseholderQR<Eigen::MatrixXd> qr;
  Eigen::VectorXd g;
};

// The rows of [lo, hi) with nonzero weight at x0, weights relative to the largest (log-domain
// kernels: exp(log K − max log K), which the fit does not see; direct ones: K itself).
template <class K>
void collect_weights(const K& k, const exact_problem& pr, double x0, std::size_t lo, std::size_t hi,
                     exact_workspace& ws) {
  ws.rows.clear();
  ws.w.clear();
  double top = -std::numeric_limits<double>::infinity();
  for (std::size_t j = lo; j < hi; ++j) {
    const double d = pr.x[j] - x0;
    const double w = k.template weight<double>(d * d);
    if (K::log_domain ? !(w > -std::numeric_limits<double>::infinity()) : !(w > 0)) continue;
    ws.rows.push_back(j);
    ws.w.push_back(w);
    top = std::max(top, w);
  }
  if (!K::log_domain) return;
  std::size_t kept = 0;  // drop the weights that underflow against the largest
  for (std::size_t r = 0; r < ws.w.size(); ++r) {
    const double w = std::exp(ws.w[r] - top);
    if (w > 0) ws.rows[kept] = ws.rows[r], ws.w[kept++] = w;
  }
  ws.rows.resize(kept);
  ws.w.resize(kept);
}

// The local fit at x0 from the training rows [lo, hi); self: the row of the query's own training
// point (kNoSelf: none).
template <class K>
query_fit fit_at(const K& k, const exact_problem& pr, double x0, std::size_t lo, std::size_t hi,
                 std::size_t self, exact_workspace& ws) {
  query_fit out;
  collect_weights(k, pr, x0, lo, hi, ws);
  const auto cols = static_cast<Eigen::Index>(pr.degree + 1);
  const auto m = static_cast<Eigen::Index>(ws.rows.size());
  if (m < cols) return out;
  ws.a.resize(m, cols);
  for (Eigen::Index r = 0; r < m; ++r) {
    const double u = (pr.x[ws.rows[std::size_t(r)]] - x0) / pr.h;
    ws.a(r, 0) = std::sqrt(ws.w[std::size_t(r)]);
    for (Eigen::Index c = 1; c < cols; ++c) ws.a(r, c) = ws.a(r, c - 1) * u;
  }
  small_vector norms(cols);
  for (Eigen::Index c = 0; c < cols; ++c) {
    norms(c) = ws.a.col(c).norm();
    if (!(norms(c) > 0) || !std::isfinite(norms(c))) return out;  // all rows at x0: rank 1
    ws.a.col(c) /= norms(c);
  }
  ws.qr.compute(ws.a);
  const small_matrix r = ws.qr.matrixQR().topLeftCorner(cols, cols).triangularView<Eigen::Upper>();
  const Eigen::JacobiSVD<small_matrix> svd(r);
  const auto& sv = svd.singularValues();  // decreasing
  if (!(sv(cols - 1) * kMaxDesignCondition > sv(0))) return out;
  small_vector e = small_vector::Zero(cols);
  e(pr.derivative) = 1.0 / norms(pr.derivative);
  const small_vector z = r.triangularView<Eigen::Upper>().transpose().solve(e);
  ws.g.setZero(m);
  ws.g.head(cols) = z;
  ws.g.applyOnTheLeft(ws.qr.householderQ());  // Q z, (m)
  const double scale = derivative_scale(pr.derivative, pr.h);
  for (Eigen::Index row = 0; row < m; ++row) {
    const std::size_t j = ws.rows[std::size_t(row)];
    const double l = scale * std::sqrt(ws.w[std::size_t(row)]) * ws.g(row);
    out.fit += l * pr.y[j];
    out.sum_l2 += l * l;
    if (j == self) out.self = l;
  }
  out.defined = true;
  return out;
}

// Calls fit_at for every query in parallel; window(i) gives query i's rows {lo, hi, self}.
template <class K, class Window>
local_poly_eval exact_queries(const K& k, const exact_problem& pr, std::span<const double> xq,
                              bool at_training, Window&& window) {
  local_poly_eval r = eval_for(xq.size(), at_training);
  const auto nq = static_cast<std::ptrdiff_t>(xq.size());
#pragma omp parallel
  {
    exact_workspace ws;
#pragma omp for schedule(dynamic, 16)
    for (std::ptrdiff_t i = 0; i < nq; ++i) {
      const auto iu = static_cast<std::size_t>(i);
      const auto [lo, hi, self] = window(iu);
      const query_fit q = fit_at(k, pr, xq[iu], lo, hi, self, ws);
      if (!q.defined) continue;
      r.defined[iu] = 1;
      r.fit[iu] = q.fit;
      r.sum_l2[iu] = q.sum_l2;
      if (at_training) r.self_weight[iu] = q.self;
    }
  }
  r.undefined = index(std::count(r.defined.begin(), r.defined.end(), 0));
  return r;
}

struct rows_window {
  std::size_t lo, hi, self;
};

// The window route: x sorted once (stably), each query reads the keys within h of it. The window
// is widened by 1e-9 h (and the rounding of x0 ± h) so that every key the kernel weighs is in it;
// the kernel itself gives the keys at the edge their (zero) weight, as on the all-pairs route.
template <class K>
local_poly_eval exact_sorted_window(const K& k, exact_problem pr, std::span<const double> xq,
                                    bool at_training) {
  const std::size_t n = pr.x.size();
  std::vector<std::size_t> order(n), rank(n);
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return pr.x[a] < pr.x[b]; });
  std::vector<double> xs(n), ys(n);
  for (std::size_t s = 0; s < n; ++s) {
    xs[s] = pr.x[order[s]];
    ys[s] = pr.y[order[s]];
    rank[order[s]] = s;
  }
  pr.x = xs;
  pr.y = ys;
  const double h = pr.h;
  return exact_queries(k, pr, xq, at_training, [&](std::size_t i) {
    const double x0 = xq[i], reach = h * (1 + 1e-9) + 1e-15 * std::abs(x0);
    const auto lo = std::lower_bound(xs.begin(), xs.end(), x0 - reach) - xs.begin();
    const auto hi = std::upper_bound(xs.begin(), xs.end(), x0 + reach) - xs.begin();
    return rows_window{std::size_t(lo), std::size_t(hi), at_training ? rank[i] : kNoSelf};
  });
}

local_poly_eval exact_route(const any_kernel& kernel, int degree, int derivative,
                            std::span<const double> x, std::span<const double> y,
                            std::span<const double> xq, bool at_training, bool allow_window) {
  const char* route = "local_poly_exact";
  check_arguments(route, kernel, degree, derivative, x, y, xq);
  if (at_training && !std::equal(x.begin(), x.end(), xq.begin(), xq.end()))
    fail(route, "at_training needs the queries to be the training points x, in their order");
  const exact_problem pr{degree, derivative, kernel_param(kernel), x, y};
  return std::visit(
      [&](const auto& k) -> local_poly_eval {
        using K = std::decay_t<decltype(k)>;
        if constexpr (K::arg != kernel_arg::sqdist) {
          fail(route, "needs a distance kernel");  // checked above
        } else {
          if (K::compact && allow_window) return exact_sorted_window(k, pr, xq, at_training);
          const std::size_t n = x.size();
          return exact_queries(k, pr, xq, at_training, [&](std::size_t i) {
            return rows_window{0, n, at_training ? i : kNoSelf};
          });
        }
      },
      kernel);
}

// ---- binned route ----

struct binned_moments {
  int degree = 0;
  std::vector<double> s, t, q;  // (grid, 2p+1), (grid, p+1), (grid, 2p+1), node-major
  std::vector<index> support;   // bins with weight in each node's window
};

// Linear binning over [a, a + (grid − 1)δ]: x at t = (x − a)/δ = g + f gives 1 − f to node g and
// f to g + 1; the largest x (t = grid − 1, up to rounding) goes to the last node.
void bin_linear(std::span<const double> x, std::span<const double> y, double a, double delta,
                index grid, std::vector<double>& c, std::vector<double>& cy) {
  c.assign(std::size_t(grid), 0.0);
  cy.assign(std::size_t(grid), 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double t = (x[i] - a) / delta;
    auto g = static_cast<index>(std::floor(t));
    double f = t - double(g);
    if (g >= grid - 1) g = grid - 2, f = 1.0;
    if (g < 0) g = 0, f = 0.0;
    c[std::size_t(g)] += 1 - f;
    c[std::size_t(g + 1)] += f;
    cy[std::size_t(g)] += (1 - f) * y[i];
    cy[std::size_t(g + 1)] += f * y[i];
  }
}

// The kernel's reach in grid steps: its own (the support of a compact kernel, where K/K(0) <
// 1e-14 for the others: binned_reach), or cut·h when shorter (locpoly: cut = tau = 4), capped
// at the grid.
index reach_steps(const any_kernel& kernel, double cut, double delta, index grid) {
  double reach = binned_reach(kernel, binned_settings{}.tail_tolerance);
  if (cut > 0) reach = std::min(reach, cut * kernel_param(kernel));
  if (!(reach / delta < double(grid))) return grid - 1;
  return std::min<index>(grid - 1, static_cast<index>(std::floor(reach / delta)));
}

binned_moments convolve(const std::vector<double>& c, const std::vector<double>& cy,
                        const std::vector<double>& kv, int degree, double delta, double h) {
  binned_moments bm;
  bm.degree = degree;
  const auto grid = static_cast<index>(c.size()), lags = static_cast<index>(kv.size()) - 1;
  const auto ns = std::size_t(2 * degree + 1), nt = std::size_t(degree + 1);
  bm.s.assign(std::size_t(grid) * ns, 0.0);
  bm.q.assign(bm.s.size(), 0.0);
  bm.t.assign(std::size_t(grid) * nt, 0.0);
  bm.support.assign(std::size_t(grid), 0);
#pragma omp parallel for schedule(static)
  for (index g = 0; g < grid; ++g) {
    double* s = bm.s.data() + std::size_t(g) * ns;
    double* q = bm.q.data() + std::size_t(g) * ns;
    double* t = bm.t.data() + std::size_t(g) * nt;
    const index j0 = std::max<index>(0, g - lags), j1 = std::min<index>(grid - 1, g + lags);
    for (index j = j0; j <= j1; ++j) {
      const auto ju = std::size_t(j);
      const double w = kv[std::size_t(std::abs(j - g))];
      if (c[ju] == 0 || w == 0) continue;
      ++bm.support[std::size_t(g)];
      const double u = double(j - g) * delta / h;
      double p = 1;
      for (std::size_t k = 0; k < ns; ++k, p *= u) {
        s[k] += c[ju] * w * p;
        q[k] += c[ju] * w * w * p;
        if (k < nt) t[k] += cy[ju] * w * p;
      }
    }
  }
  return bm;
}

// The fit and Σℓ² at every node (r.defined marks the nodes where the system was solved).
local_poly_eval solve_nodes(const binned_moments& bm, int derivative, double h, double k0) {
  const auto grid = bm.support.size();
  local_poly_eval r = eval_for(grid, derivative == 0);
  const int cols = bm.degree + 1;
  const auto ns = std::size_t(2 * bm.degree + 1), nt = std::size_t(cols);
  const double scale = derivative_scale(derivative, h);
#pragma omp parallel for schedule(static)
  for (std::size_t g = 0; g < grid; ++g) {
    if (bm.support[g] < cols) continue;
    const double* s = bm.s.data() + g * ns;
    const double* q = bm.q.data() + g * ns;
    const double* t = bm.t.data() + g * nt;
    small_matrix m(cols, cols), mq(cols, cols);
    small_vector d(cols), tv(cols);
    for (int a = 0; a < cols; ++a) {
      d(a) = std::sqrt(s[2 * a]);
      tv(a) = t[a];
      for (int b = 0; b < cols; ++b) m(a, b) = s[a + b], mq(a, b) = q[a + b];
    }
    if (!(d.minCoeff() > 0)) continue;
    const small_matrix me = d.cwiseInverse().asDiagonal() * m * d.cwiseInverse().asDiagonal();
    const Eigen::SelfAdjointEigenSolver<small_matrix> es(me, Eigen::EigenvaluesOnly);
    const auto& ev = es.eigenvalues();  // increasing
    if (!(ev(0) * kMaxMomentCondition > ev(cols - 1))) continue;
    small_vector e = small_vector::Zero(cols);
    e(derivative) = 1.0 / d(derivative);
    const small_vector v = d.cwiseInverse().asDiagonal() * me.ldlt().solve(e);  // M⁻¹ e_ν
    r.defined[g] = 1;
    // vᵀt and vᵀQv written out (≤ 4 terms): Eigen's dot on these small fixed-capacity vectors
    // meets GCC 12's false -Warray-bounds under AVX-512 (an 8-wide packet read of a 4-wide
    // buffer it never executes).
    double fit = 0, l2 = 0;
    for (int a = 0; a < cols; ++a) {
      double qv = 0;
      for (int b = 0; b < cols; ++b) qv += mq(a, b) * v(b);
      fit += v(a) * tv(a);
      l2 += v(a) * qv;
    }
    r.fit[g] = scale * fit;
    r.sum_l2[g] = std::max(scale * scale * l2, 0.0);
    if (derivative == 0) r.self_weight[g] = k0 * v(0);  // a point's own weight K(0)·[M⁻¹]₀₀
  }
  return r;
}

// Linear interpolation of the nodes' fit and Σℓ² at xq (undefined outside the grid or next to an
// undefined node).
local_poly_eval interpolate(const local_poly_eval& nodes, double a, double delta,
                            std::span<const double> xq) {
  local_poly_eval r = eval_for(xq.size(), !nodes.self_weight.empty());
  const auto grid = static_cast<index>(nodes.fit.size());
  for (std::size_t i = 0; i < xq.size(); ++i) {
    const double t = (xq[i] - a) / delta;
    if (!(t >= -1e-9 && t <= double(grid - 1) * (1 + 1e-12) + 1e-9)) continue;
    const index g = std::clamp<index>(static_cast<index>(std::floor(t)), 0, grid - 2);
    const double f = std::clamp(t - double(g), 0.0, 1.0);
    const auto g0 = std::size_t(g), g1 = g0 + 1;
    if ((f < 1 && !nodes.defined[g0]) || (f > 0 && !nodes.defined[g1])) continue;
    const auto lerp = [&](const std::vector<double>& v) {
      return (f < 1 ? (1 - f) * v[g0] : 0.0) + (f > 0 ? f * v[g1] : 0.0);
    };
    r.defined[i] = 1;
    r.fit[i] = lerp(nodes.fit);
    r.sum_l2[i] = lerp(nodes.sum_l2);
    if (!nodes.self_weight.empty()) r.self_weight[i] = lerp(nodes.self_weight);
  }
  r.undefined = index(std::count(r.defined.begin(), r.defined.end(), 0));
  return r;
}

}  // namespace

local_poly_eval local_poly_exact(const any_kernel& kernel, int degree, int derivative,
                                 std::span<const double> x, std::span<const double> y,
                                 std::span<const double> xq, bool at_training) {
  return exact_route(kernel, degree, derivative, x, y, xq, at_training, true);
}

namespace detail {
local_poly_eval local_poly_all_pairs(const any_kernel& kernel, int degree, int derivative,
                                     std::span<const double> x, std::span<const double> y,
                                     std::span<const double> xq, bool at_training) {
  return exact_route(kernel, degree, derivative, x, y, xq, at_training, false);
}
}  // namespace detail

namespace detail {
std::vector<local_poly_grid> local_poly_binned_grids(const any_kernel& kernel, int degree,
                                                     std::span<const int> derivatives,
                                                     std::span<const double> x,
                                                     std::span<const double> y, index grid,
                                                     double cut) {
  const char* route = "local_poly_binned";
  for (int v : derivatives) check_arguments(route, kernel, degree, v, x, y, {});
  if (grid < 2) fail(route, fmt::format("grid = {} must be at least 2", grid));
  if (!(cut >= 0) || !std::isfinite(cut))
    fail(route, fmt::format("cut = {} must be 0 (the kernel's own reach) or positive", cut));
  const auto [lo_it, hi_it] = std::minmax_element(x.begin(), x.end());
  const double a = *lo_it, b = *hi_it;
  if (!(b > a)) fail(route, "all x are equal: the grid needs a range (use local_poly_exact)");
  const double delta = (b - a) / double(grid - 1), h = kernel_param(kernel);
  const index lags = reach_steps(kernel, cut, delta, grid);
  if (lags < 1)
    fail(route, fmt::format("the kernel's reach is below the grid step {} (raise grid)", delta));
  std::vector<double> kv(std::size_t(lags + 1));
  for (std::size_t l = 0; l < kv.size(); ++l) kv[l] = kernel_at_distance(kernel, double(l) * delta);
  std::vector<double> c, cy;
  bin_linear(x, y, a, delta, grid, c, cy);
  const binned_moments bm = convolve(c, cy, kv, degree, delta, h);  // shared by every ν
  std::vector<local_poly_grid> out;
  for (int v : derivatives)
    out.push_back({a, delta, solve_nodes(bm, v, h, kernel_at_distance(kernel, 0.0))});
  return out;
}

local_poly_grid local_poly_binned_grid(const any_kernel& kernel, int degree, int derivative,
                                       std::span<const double> x, std::span<const double> y,
                                       index grid, double cut) {
  const int v[1] = {derivative};
  return std::move(local_poly_binned_grids(kernel, degree, v, x, y, grid, cut)[0]);
}

local_poly_eval local_poly_interpolate(const local_poly_grid& g, std::span<const double> xq) {
  return interpolate(g.nodes, g.a, g.delta, xq);
}
}  // namespace detail

local_poly_eval local_poly_binned(const any_kernel& kernel, int degree, int derivative,
                                  std::span<const double> x, std::span<const double> y,
                                  std::span<const double> xq, index grid, double cut) {
  check_arguments("local_poly_binned", kernel, degree, derivative, x, y, xq);
  return detail::local_poly_interpolate(
      detail::local_poly_binned_grid(kernel, degree, derivative, x, y, grid, cut), xq);
}

}  // namespace kf
