// Multivariate compact kernels through a k-d tree: each query's sums run over the training
// points inside its kernel's support only (nanoflann radius search in bandwidth units), so the
// cost is O(n log n + Σ window sizes) instead of all pairs. Exact: the same sums as the
// all-pairs route in another order (tied to it by tests).
//
// Nadaraya–Watson needs Σ K, Σ K y, Σ K². Local linear solves the weighted least squares in
// coordinates about the query, z_j = (1, (x_j − x)/h): S = Σ K z zᵀ, T = Σ K y z,
// Q = Σ K² z zᵀ, a = S⁻¹ e₀; ŷ = aᵀT, Σℓ² = aᵀQa, ℓ_self = K(0) a₀ — falling back to NW where
// the window's covariance in bandwidth units has an eigenvalue ≤ 1e-9, as the all-pairs route.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "detail/eigen.hpp"
#include "kernelformer/progress.hpp"
#include "regression/kd_tree.hpp"
#include "regression/smoother_routes.hpp"

namespace kf::detail {
namespace {

// A nanoflann result set that accumulates the window's moments instead of storing it. Kern is
// the unit-bandwidth compact kernel's own type, so its weight is the reference's formula,
// inlined.
template <class Kern>
struct window_accumulator {
  using DistanceType = double;
  using IndexType = std::size_t;

  window_accumulator(const matrix<double>& xs_, std::span<const double> y_, const Kern& unit_,
                     bool ll_)
      : xs(xs_), y(y_), unit(unit_), ll(ll_) {
    const index d = xs.cols();
    if (ll) s.resize(d + 1, d + 1), qq.resize(d + 1, d + 1), t.resize(d + 1), z.resize(d + 1);
  }

  const matrix<double>& xs;   // (n, d) training points in bandwidth units
  std::span<const double> y;  // (n)
  const Kern& unit;
  bool ll;                        // local linear: also the (d+1) moments below
  const double* q = nullptr;      // the query in bandwidth units
  double s0 = 0, t0 = 0, q0 = 0;  // Σ K, Σ K y, Σ K²
  Eigen::MatrixXd s, qq;  // local linear: (d+1, d+1) Σ K z zᵀ, Σ K² z zᵀ (upper halves)
  Eigen::VectorXd t, z;   // (d+1) Σ K y z; z_j = (1, x_j − q) for the current point

  void start(const double* query) {
    q = query;
    s0 = t0 = q0 = 0;
    if (ll) s.setZero(), qq.setZero(), t.setZero();
  }
  // nanoflann's result-set interface: always "full" with a fixed worst distance, so the search
  // is a radius search of |x_j − q|² ≤ 1 (the unit support); addPoint returns true to go on.
  void init() {}
  void clear() {}
  std::size_t size() const { return 0; }
  bool full() const { return true; }
  double worstDist() const { return 1.0 + 1e-12; }  // points at the edge: the kernel decides
  bool addPoint(double dist2, std::size_t j) {
    const double k = unit.template weight<double>(dist2);
    if (!(k > 0)) return true;
    const double yj = y[j];
    s0 += k, t0 += k * yj, q0 += k * k;
    if (!ll) return true;
    z(0) = 1;
    for (index c = 0; c < xs.cols(); ++c) z(c + 1) = xs(static_cast<index>(j), c) - q[c];
    s.selfadjointView<Eigen::Upper>().rankUpdate(z, k);
    qq.selfadjointView<Eigen::Upper>().rankUpdate(z, k * k);
    t += (k * yj) * z;
    return true;
  }
};

// The fit, Σℓ² and self weight from a window's moments (k0 = K(0)).
template <class Kern>
local_quantities window_fit(const window_accumulator<Kern>& w, double k0) {
  local_quantities r = from_moments(0, k0, w.s0, 0, 0, w.t0, 0, w.q0, 0, 0, true, 0.0);
  if (!r.defined || !w.ll) return r;
  const auto d = w.s.rows() - 1;
  const Eigen::MatrixXd s = w.s.template selfadjointView<Eigen::Upper>();
  const Eigen::MatrixXd qq = w.qq.template selfadjointView<Eigen::Upper>();
  const Eigen::VectorXd m = s.block(1, 0, d, 1) / w.s0;
  // The window's K-weighted mean m and covariance of x_j − q in bandwidth units.
  const Eigen::MatrixXd cov = s.block(1, 1, d, d) / w.s0 - m * m.transpose();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(cov, Eigen::EigenvaluesOnly);
  if (!(es.eigenvalues().minCoeff() > 1e-9)) {
    r.fallback = true;
    return r;
  }
  // a = S⁻¹e₀ (S symmetric positive definite here: LDLT); ℓ_j = K_j aᵀz_j, so ŷ = aᵀT,
  // Σℓ² = Σ K_j² (aᵀz_j)² = aᵀQa, and the point itself (z = e₀) has ℓ = K(0)·a₀.
  const Eigen::VectorXd a = s.ldlt().solve(Eigen::VectorXd::Unit(d + 1, 0));
  r.fit = a.dot(w.t);
  r.sum_l2 = a.dot(qq * a);
  r.self = k0 * a(0);
  return r;
}

// Every query's window through the tree, queries in parallel.
template <class Kern, class Tree>
regression_eval radius_pass(const Kern& unit, const Tree& tree, const matrix<double>& xs,
                            std::span<const double> y, const matrix<double>& qs, bool ll,
                            bool at_training) {
  const index nq = qs.rows();
  const double k0 = unit.template weight<double>(0.0);
  const auto nqu = static_cast<std::size_t>(nq);
  regression_eval r = regression_eval_for(nqu, at_training);
  index undefined = 0, fallback = 0;
  progress_step step(fmt::format("exact sums over each support (k-d tree, {} points)", nq), nq);
#pragma omp parallel reduction(+ : undefined, fallback)
  {
    window_accumulator<Kern> w(xs, y, unit, ll);           // one per thread, reset per query
    const nanoflann::SearchParams params(32, 0.0, false);  // eps 0: exact; unsorted
    // Dynamic: window sizes (the work per query) vary with the data's density.
#pragma omp for schedule(dynamic, 256)
    for (index i = 0; i < nq; ++i) {
      step.tick(i);
      w.start(&qs(i, 0));
      tree.findNeighbors(w, &qs(i, 0), params);
      const local_quantities l = window_fit(w, k0);
      const auto iu = static_cast<std::size_t>(i);
      if (!l.defined) {
        ++undefined;
        continue;
      }
      fallback += l.fallback ? 1 : 0;
      r.defined[iu] = 1;
      r.fit[iu] = l.fit;
      r.sum_l2[iu] = std::max(l.sum_l2, 0.0);  // ≥ 0 but for rounding
      if (at_training) r.self_weight[iu] = l.self;
    }
  }
  r.undefined = undefined;
  r.ll_fallback = fallback;
  return r;
}

// Σ_j K over a window, without a model: density sums (kde.cpp), one query at a time, leaving
// out the key `skip` (a query's own row in leave-one-out sums; −1: none).
template <class Kern>
struct sum_accumulator {
  using DistanceType = double;
  using IndexType = std::size_t;
  const Kern& unit;
  double s = 0;
  std::size_t skip = static_cast<std::size_t>(-1);
  void init() {}
  void clear() {}
  std::size_t size() const { return 0; }
  bool full() const { return true; }
  double worstDist() const { return 1.0 + 1e-12; }
  bool addPoint(double dist2, std::size_t j) {
    if (j != skip) s += unit.template weight<double>(dist2);
    return true;
  }
};

// Rows of a view divided column by column by h.
matrix<double> scaled(const_matrix_view<double> x, std::span<const double> h) {
  matrix<double> xs(x.rows, x.cols);
  for (index i = 0; i < x.rows; ++i)
    for (index c = 0; c < x.cols; ++c) xs(i, c) = x(i, c) / h[static_cast<std::size_t>(c)];
  return xs;
}

}  // namespace

std::vector<double> radius_kernel_sums(const any_kernel& kernel, const_matrix_view<double> x,
                                       std::span<const double> h, const_matrix_view<double> q,
                                       bool leave_one_out) {
  std::vector<index> self;
  if (leave_one_out) {
    self.resize(static_cast<std::size_t>(q.rows));
    for (index i = 0; i < q.rows; ++i) self[static_cast<std::size_t>(i)] = i;
  }
  return radius_kernel_sums(kernel, x, h, q, self);
}

std::vector<double> radius_kernel_sums(const any_kernel& kernel, const_matrix_view<double> x,
                                       std::span<const double> h, const_matrix_view<double> q,
                                       std::span<const index> self) {
  // In coordinates divided by h the support is the unit ball: one tree, the unit kernel.
  const matrix<double> xs = scaled(x, h), qs = scaled(q, h);
  const cloud pts{xs.cview()};
  kd_tree_any trees;
  kd_tree_build(trees, pts, x.cols);
  any_kernel unit = kernel;
  kernel_set_param(unit, 1.0);
  std::vector<double> out(static_cast<std::size_t>(q.rows), 0.0);
  std::visit(
      [&](const auto& kern, const auto& tree) {
        using K = std::decay_t<decltype(kern)>;
        using Tree = std::decay_t<decltype(tree)>;
        if constexpr (std::is_same_v<Tree, std::monostate>) {
          throw std::logic_error("radius_kernel_sums: no tree");
        } else if constexpr (K::compact) {
          progress_step step(
              fmt::format("exact sums over each support (k-d tree, {} points)", q.rows), q.rows);
#pragma omp parallel for schedule(dynamic, 256)
          for (index i = 0; i < q.rows; ++i) {
            step.tick(i);
            sum_accumulator<K> acc{kern};
            if (!self.empty())
              acc.skip = static_cast<std::size_t>(self[static_cast<std::size_t>(i)]);
            tree.findNeighbors(acc, &qs(i, 0), nanoflann::SearchParams(32, 0.0, false));
            out[static_cast<std::size_t>(i)] = acc.s;
          }
        } else {
          throw std::invalid_argument("radius_kernel_sums: the kernel must be compact");
        }
      },
      unit, trees);
  return out;
}

regression_eval radius_evaluate(const regression_spec& spec, const_matrix_view<double> x,
                                std::span<const double> y, const_matrix_view<double> xq,
                                bool at_training) {
  const index n = x.rows, d = x.cols, nq = xq.rows;
  const auto h = regression_bandwidths(spec, d);
  matrix<double> xs(n, d), qs(nq, d);
  for (index i = 0; i < n; ++i)
    for (index c = 0; c < d; ++c) xs(i, c) = x(i, c) / h[static_cast<std::size_t>(c)];
  for (index i = 0; i < nq; ++i)
    for (index c = 0; c < d; ++c) qs(i, c) = xq(i, c) / h[static_cast<std::size_t>(c)];
  const cloud pts{xs.cview()};
  kd_tree_any trees;
  kd_tree_build(trees, pts, d);
  any_kernel unit = spec.kernel;
  kernel_set_param(unit, 1.0);
  const bool ll = spec.method == regression_method::local_linear;

  // Dispatch on the kernel's and the tree's concrete types, so the inner loops are inlined. A
  // kernel that is not compact leaves r empty: the route (route.cpp) takes it for compact kernels
  // only.
  regression_eval r;
  std::visit(
      [&](const auto& kern, const auto& tree) {
        using K = std::decay_t<decltype(kern)>;
        using Tree = std::decay_t<decltype(tree)>;
        if constexpr (K::compact && !std::is_same_v<Tree, std::monostate>)
          r = radius_pass(kern, tree, xs, y, qs, ll, at_training);
      },
      unit, trees);
  return r;
}

}  // namespace kf::detail
