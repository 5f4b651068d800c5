// KernSmooth's dpill (docs/notes/dpill_algorithm.md gives every step and the file of R's
// package it comes from). The dense solves are Eigen's; the order of the binned sums is R's.
#include "kernelformer/regression/bandwidth_dpi.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <stdexcept>

#include "detail/eigen.hpp"

namespace kf {
namespace {

constexpr index kGrid = 401;
constexpr double kTau = 4;  // the kernel's support in bandwidths

struct binned {
  double a = 0, delta = 0;
  std::vector<double> c, d;  // counts and y sums per grid point (linear binning)
};

// rlbin: each point splits between its two grid neighbours; a point at b goes to the last.
binned bin(std::span<const double> x, std::span<const double> y, double a, double b) {
  binned g{a, (b - a) / double(kGrid - 1), std::vector<double>(kGrid, 0.0),
           std::vector<double>(kGrid, 0.0)};
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double s = (x[i] - a) / g.delta + 1;
    index l = static_cast<index>(s);
    double r = s - double(l);
    if (x[i] == b) {
      l = kGrid - 1;
      r = 1;
    }
    if (l < 1 || l >= kGrid) continue;
    const auto j = static_cast<std::size_t>(l - 1);
    g.c[j] += 1 - r;
    g.c[j + 1] += r;
    g.d[j] += (1 - r) * y[i];
    g.d[j + 1] += r * y[i];
  }
  return g;
}

// Least-squares quartics in raw powers of x over `blocks` blocks of equal count (the last takes
// the remainder); their residual sum of squares, and (with `pilot`) σ², θ₂₄ and θ₂₂.
struct quartic_fit {
  double rss = 0, theta24 = 0, theta22 = 0;
};
quartic_fit block_quartics(std::span<const double> x, std::span<const double> y, index blocks) {
  const index n = static_cast<index>(x.size()), per = n / blocks;
  quartic_fit f;
  // One buffer for every block's design, decomposed in place: fresh n × 5 matrices per block
  // cost more in page faults than the decompositions (10^6 points).
  static thread_local std::vector<double> design;
  design.resize(static_cast<std::size_t>(5 * (n - per * (blocks - 1))));
  for (index j = 0; j < blocks; ++j) {
    const index lo = j * per, hi = j == blocks - 1 ? n : (j + 1) * per;
    Eigen::Map<Eigen::MatrixXd> X(design.data(), hi - lo, 5);
    for (index i = lo; i < hi; ++i) {
      double p = 1;
      for (int k = 0; k < 5; ++k, p *= x[std::size_t(i)]) X(i - lo, k) = p;
    }
    const Eigen::Map<const Eigen::VectorXd> Y(y.data() + lo, hi - lo);
    Eigen::Ref<Eigen::MatrixXd> ref(X);
    const Eigen::HouseholderQR<Eigen::Ref<Eigen::MatrixXd>> qr(ref);
    const Eigen::VectorXd c = qr.solve(Y);
    if (!c.allFinite() || qr.matrixQR().diagonal().cwiseAbs().minCoeff() == 0)
      throw std::invalid_argument(fmt::format(
          "dpi: the quartic fit of block {} of {} is singular (fewer than 5 distinct x)", j + 1,
          blocks));
    for (index i = lo; i < hi; ++i) {
      const double xi = x[std::size_t(i)];
      const double fit =
          c(0) + c(1) * xi + c(2) * xi * xi + c(3) * xi * xi * xi + c(4) * xi * xi * xi * xi;
      const double r = y[std::size_t(i)] - fit;
      f.rss += r * r;
      const double m2 = 2 * c(2) + 6 * c(3) * xi + 12 * c(4) * xi * xi, m4 = 24 * c(4);
      f.theta24 += m2 * m4 / double(n);
      f.theta22 += m2 * m2 / double(n);
    }
  }
  return f;
}

// The binned local polynomial of `degree` at every grid point (locpoly with binned = TRUE): the
// coefficients β(j) of the weighted fit in u = g_k − g_j, gaussian weights to 4 bandwidths.
// With `diag`, also the diagonal of the smoother matrix S and of S Sᵀ (degree 1: sdiag, sstdiag).
struct local_fits {
  std::vector<Eigen::VectorXd> beta;
  std::vector<double> s_diag, sst_diag;
};
local_fits binned_local_poly(const binned& g, double h, int degree, bool diag) {
  const index L = static_cast<index>(std::floor(kTau * h / g.delta));
  if (L < 1)
    throw std::invalid_argument(
        fmt::format("dpi: a pilot bandwidth ({:.4g}) is below the grid's resolution ({:.4g}): "
                    "the data are too irregular for the plug-in",
                    h, g.delta));
  std::vector<double> w(static_cast<std::size_t>(L + 1)), w2(w.size());
  for (index l = 0; l <= L; ++l) {
    const double u = g.delta * double(l) / h;
    w[std::size_t(l)] = std::exp(-0.5 * u * u);
    w2[std::size_t(l)] = w[std::size_t(l)] * w[std::size_t(l)];
  }
  const int p = degree + 1, ms = 2 * degree + 1;
  local_fits out;
  out.beta.resize(std::size_t(kGrid));
  if (diag) out.s_diag.assign(std::size_t(kGrid), 0), out.sst_diag.assign(std::size_t(kGrid), 0);
  for (index j = 0; j < kGrid; ++j) {
    std::vector<double> S(std::size_t(ms), 0), T(std::size_t(p), 0), U(std::size_t(ms), 0);
    for (index k = std::max<index>(0, j - L); k <= std::min<index>(kGrid - 1, j + L); ++k) {
      const double ck = g.c[std::size_t(k)];
      if (ck == 0) continue;
      const auto lag = static_cast<std::size_t>(std::abs(k - j));
      double fac = 1;
      for (int r = 0; r < ms; ++r) {
        S[std::size_t(r)] += ck * w[lag] * fac;
        if (diag) U[std::size_t(r)] += ck * w2[lag] * fac;
        if (r < p) T[std::size_t(r)] += g.d[std::size_t(k)] * w[lag] * fac;
        fac *= g.delta * double(k - j);
      }
    }
    Eigen::MatrixXd A(p, p), Uf(p, p);
    Eigen::VectorXd t(p);
    for (int r = 0; r < p; ++r) {
      t(r) = T[std::size_t(r)];
      for (int s = 0; s < p; ++s) {
        A(r, s) = S[std::size_t(r + s)];
        Uf(r, s) = U[std::size_t(r + s)];
      }
    }
    const Eigen::PartialPivLU<Eigen::MatrixXd> lu(A);
    out.beta[std::size_t(j)] = lu.solve(t);
    if (!out.beta[std::size_t(j)].allFinite() || std::abs(lu.determinant()) == 0)
      throw std::invalid_argument(fmt::format(
          "dpi: the local fit at grid point {} of {} is singular (too few data within 4 pilot "
          "bandwidths): the data are too irregular for the plug-in",
          j + 1, kGrid));
    if (diag) {
      const Eigen::MatrixXd inv = lu.inverse();
      out.s_diag[std::size_t(j)] = inv(0, 0);
      out.sst_diag[std::size_t(j)] = (inv.row(0) * Uf * inv.col(0))(0, 0);
    }
  }
  return out;
}

// Sorts (x, y) by x (stably), trims 1% of the points at each end, checks them.
void sort_and_trim(std::span<const double> x, std::span<const double> y, std::vector<double>& xs,
                   std::vector<double>& ys) {
  if (x.size() != y.size())
    throw std::invalid_argument(fmt::format("dpi: x has {} values and y {}", x.size(), y.size()));
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]))
      throw std::invalid_argument(fmt::format("dpi: point {} is not finite", i + 1));
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](auto i, auto j) { return x[i] < x[j]; });
  const std::size_t k = static_cast<std::size_t>(std::floor(0.01 * double(x.size())));
  for (std::size_t i = k; i < x.size() - k; ++i) {
    xs.push_back(x[order[i]]);
    ys.push_back(y[order[i]]);
  }
}

}  // namespace

double bandwidth_dpi(std::span<const double> x, std::span<const double> y, dpi_steps* steps) {
  if (x.size() < 10)
    throw std::invalid_argument(
        fmt::format("dpi: the plug-in needs at least 10 points ({} given)", x.size()));
  std::vector<double> xs, ys;
  sort_and_trim(x, y, xs, ys);
  dpi_steps st;
  st.n = static_cast<index>(xs.size());
  st.a = xs.front();
  st.b = xs.back();
  if (!(st.b > st.a)) throw std::invalid_argument("dpi: all x are equal");
  const double n = double(st.n), range = st.b - st.a;
  // Blocks by Mallows' Cp, then the pilot quantities from the chosen blocks.
  st.blocks_max = std::max<index>(std::min<index>(st.n / 20, 5), 1);
  std::vector<double> rss;
  for (index N = 1; N <= st.blocks_max; ++N) rss.push_back(block_quartics(xs, ys, N).rss);
  const double rss_max = rss.back();
  if (!(rss_max > 0)) throw std::invalid_argument("dpi: the quartic fits leave no residual");
  for (index N = 1; N <= st.blocks_max; ++N)
    st.cp.push_back(double(st.n - 5 * st.blocks_max) * rss[std::size_t(N - 1)] / rss_max +
                    double(10 * N) - n);
  st.blocks = 1 + static_cast<index>(std::min_element(st.cp.begin(), st.cp.end()) - st.cp.begin());
  const quartic_fit q = block_quartics(xs, ys, st.blocks);
  st.sigma2_quartic = q.rss / (n - 5 * double(st.blocks));
  st.theta24 = q.theta24;
  if (st.theta24 == 0) throw std::invalid_argument("dpi: the quartic fits have no curvature");
  const double G = st.sigma2_quartic * range / (std::abs(st.theta24) * n);
  const double sqrt_pi = std::sqrt(std::numbers::pi);
  st.pilot_theta22 =
      std::pow(st.theta24 < 0 ? 3 * G / (8 * sqrt_pi) : 15 * G / (16 * sqrt_pi), 1.0 / 7.0);
  // θ₂₂ from the binned local cubic's second derivative, 5% of the grid left out at each end.
  const binned g = bin(xs, ys, st.a, st.b);
  const local_fits cubic = binned_local_poly(g, st.pilot_theta22, 3, false);
  for (index j = 20; j < kGrid - 20; ++j) {
    const double m2 = 2 * cubic.beta[std::size_t(j)](2);
    st.theta22 += m2 * m2 * g.c[std::size_t(j)];
  }
  st.theta22 /= n;
  if (!(st.theta22 > 0)) throw std::invalid_argument("dpi: the estimated curvature is zero");
  // σ² from the binned local-linear fit at the second pilot: binned RSS over tr((I−S)ᵀ(I−S)).
  const double c3 = std::pow(4 * (0.5 + 2 * std::sqrt(2.0) - (4.0 / 3.0) * std::sqrt(3.0)) /
                                 std::sqrt(2 * std::numbers::pi),
                             1.0 / 9.0);
  st.pilot_sigma2 = c3 * std::pow(st.sigma2_quartic * st.sigma2_quartic * range /
                                      (st.theta22 * st.theta22 * n * n),
                                  1.0 / 9.0);
  const local_fits lin = binned_local_poly(g, st.pilot_sigma2, 1, true);
  double sum_y2 = 0, num_cross = 0, num_sq = 0, den_s = 0, den_sst = 0;
  for (double v : ys) sum_y2 += v * v;
  for (index j = 0; j < kGrid; ++j) {
    const auto u = std::size_t(j);
    const double m = lin.beta[u](0);
    num_cross += m * g.d[u];
    num_sq += m * m * g.c[u];
    den_s += lin.s_diag[u] * g.c[u];
    den_sst += lin.sst_diag[u] * g.c[u];
  }
  const double den = n - 2 * den_s + den_sst;
  st.sigma2 = (sum_y2 - 2 * num_cross + num_sq) / den;
  if (!(st.sigma2 > 0) || !(den > 0))
    throw std::invalid_argument("dpi: the residual variance estimate is not positive");
  st.h = std::pow(st.sigma2 * range / (2 * sqrt_pi * st.theta22 * n), 0.2);
  if (!std::isfinite(st.h) || !(st.h > 0))
    throw std::invalid_argument("dpi: the plug-in bandwidth is not finite");
  if (steps != nullptr) *steps = st;
  return st.h;
}

}  // namespace kf
