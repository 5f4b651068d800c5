// Kernel density estimation: the primitive's log-denominator, normalized.
#include "kernelformer/regression/kde.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <stdexcept>

#include "kernelformer/masks.hpp"
#include "kernelformer/progress.hpp"
#include "kernelformer/regression/bandwidth_isj.hpp"
#include "kernelformer/smooth.hpp"
#include "regression/binned2d.hpp"
#include "regression/kde_binned.hpp"
#include "regression/smoother_routes.hpp"

namespace kf {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Throws std::invalid_argument unless x has a row, is finite, and k is a density in x's
// dimension (1-D or 2-D kernel integral known; only the gaussian beyond two columns).
void check(const any_kernel& k, const_matrix_view<double> x) {
  if (x.rows < 1) throw std::invalid_argument("kde: no data points");
  for (index i = 0; i < x.rows; ++i)
    for (index c = 0; c < x.cols; ++c)
      if (!std::isfinite(x(i, c)))
        throw std::invalid_argument(fmt::format("kde: x[{}, {}] is not finite", i, c));
  if (x.cols > 2 && kernel_name(k) != "gaussian")
    throw std::invalid_argument(fmt::format(
        "kde: in {} dimensions only the gaussian kernel is supported, not {} (any density "
        "kernel in 1 or 2)",
        x.cols, kernel_name(k)));
  if (x.cols == 2)
    (void)detail::kernel_integral_2d(k);  // throws for kernels that are not 2-D densities
  else
    (void)kernel_integral_1d(k);  // throws for non-densities
}

// The kernel and options that make the primitive compute Σ_j K((x − x_j)/h): one bandwidth is
// the kernel's own; one per column divides the columns (bandwidth_per_dim, the kernel at 1).
// Throws for a bandwidth that is not positive and finite.
void setup(const any_kernel& k, const std::vector<double>& h, any_kernel& out,
           smooth_options& opt) {
  out = k;
  for (double v : h)
    if (!(std::isfinite(v) && v > 0))
      throw std::invalid_argument(fmt::format("kde: bandwidth {} must be positive and finite", v));
  if (h.size() == 1) {
    kernel_set_param(out, h[0]);
  } else {
    kernel_set_param(out, 1.0);
    opt.bandwidth_per_dim = h;
  }
}

// log Σ_j K((q_i − x_j)/h) for every query (−inf where no key contributes). self >= 0: the rows
// of q are the points self, self + 1, … of x, each left out of its own sum (leave-one-out).
// Compact kernels in two or more columns sum over each query's support through a k-d tree when
// the route says it pays (choose_kde_route: the support a small part of the data's box);
// everything else is the primitive over all pairs.
std::vector<double> log_sums_local(const any_kernel& k, const std::vector<double>& h,
                                   const_matrix_view<double> q, const_matrix_view<double> x,
                                   index self) {
  any_kernel kk;
  smooth_options opt;
  setup(k, h, kk, opt);
  std::vector<double> lse(static_cast<std::size_t>(q.rows));
  if (q.rows == 0) return lse;
  kde_options exact;
  exact.exact = true;
  if (choose_kde_route(k, h, x, exact).kind == route_kind::kd_tree) {
    std::vector<double> hc(static_cast<std::size_t>(x.cols), h[0]);
    if (h.size() > 1) hc = h;
    std::vector<index> own;
    for (index i = 0; self >= 0 && i < q.rows; ++i) own.push_back(self + i);
    const auto s = detail::radius_kernel_sums(k, x, hc, q, std::span<const index>(own));
    for (std::size_t i = 0; i < s.size(); ++i) lse[i] = s[i] > 0 ? std::log(s[i]) : -kInf;
    return lse;
  }
  matrix<double> v(x.rows, 0), out(q.rows, 0);  // no values: only lse (the denominator) is used
  // Rows are independent: a long call (over ~2·10^8 pairs) runs in blocks of rows, reporting
  // progress between them.
  const index rows_per_block =
      double(q.rows) * double(x.rows) > 2e8 ? std::max<index>(1024, (q.rows + 63) / 64) : q.rows;
  // (blocks of ⌈rows/64⌉, at least 1024)
  progress_step step(fmt::format("exact sums over all pairs ({} x {})", q.rows, x.rows), q.rows);
  for (index r0 = 0; r0 < q.rows; r0 += rows_per_block) {
    const index m = std::min(rows_per_block, q.rows - r0);
    // Row i is point s + i (s = self + r0): keys j ≤ s + i − 1 and j ≥ s + i + 1.
    const index s = self + r0;
    const mask msk =
        self >= 0 ? mask::causal(s - 1) | mask::window(-(s + 1), x.rows) : mask::none();
    smooth_forward<double>(out.view().block(r0, 0, m, 0),
                           std::span<double>(lse.data() + r0, static_cast<std::size_t>(m)),
                           q.block(r0, 0, m, q.cols), x, v.cview(), kk, msk, opt);
    step.set(r0 + m);
  }
  return lse;
}

// log Σ_j K((q_i − x_j)/h) for every query over all points of x; with an active shard each
// process sums its block of the keys and the partial sums merge over the processes
// (data_shard::merge_log_sums): every process gets every row.
std::vector<double> log_sums(const any_kernel& k, const std::vector<double>& h,
                             const_matrix_view<double> q, const_matrix_view<double> x,
                             const data_shard& shard = {}) {
  if (!shard.active()) return log_sums_local(k, h, q, x, -1);
  const auto b = shard.block_of(x.rows);
  std::vector<double> lse = log_sums_local(k, h, q, x.block(b.lo, 0, b.size(), x.cols), -1);
  shard.merge_log_sums(lse);
  return lse;
}

// Leave-one-out log sums at this process's block of the points (the rows of the block of x).
std::vector<double> log_sums_loo(const any_kernel& k, const std::vector<double>& h,
                                 const_matrix_view<double> x, const data_shard& shard) {
  const auto b = shard.block_of(x.rows);
  return log_sums_local(k, h, x.block(b.lo, 0, b.size(), x.cols), x, b.lo);
}

// log(n Π_c h_c Z_K), f̂ = exp(lse − log_norm). n is the count the sum is divided by: n − 1 for a
// leave-one-out density, n² for ∫f̂²'s double sum. d ≥ 3 is the gaussian: Z = (2π)^{d/2}.
double log_norm(const any_kernel& k, const std::vector<double>& h, double n) {
  double l = std::log(n);
  for (double v : h) l += std::log(v);
  if (h.size() == 1) return l + std::log(kernel_integral_1d(k));
  if (h.size() == 2) return l + std::log(detail::kernel_integral_2d(k));  // radial kernel
  return l + 0.5 * double(h.size()) * std::log(2 * std::numbers::pi);
}

any_kernel with_bandwidth(any_kernel k, double h) {
  kernel_set_param(k, h);
  return k;
}

}  // namespace

double kernel_integral_1d(const any_kernel& k) {
  const std::string_view n = kernel_name(k);
  if (n == "gaussian") return std::sqrt(2 * std::numbers::pi);
  if (n == "laplacian") return 2.0;
  if (n == "cauchy") return std::numbers::pi;
  if (n == "boxcar") return 2.0;
  if (n == "epanechnikov") return 4.0 / 3.0;
  if (n == "biweight") return 16.0 / 15.0;
  if (n == "triweight") return 32.0 / 35.0;
  if (n == "tricube") return 81.0 / 70.0;
  if (n == "cosine") return 4.0 / std::numbers::pi;
  // ∫ (1 + u²/(2α))^{−α} du = √(2απ) Γ(α − 1/2)/Γ(α), finite for α > 1/2.
  if (const auto* rq = std::get_if<kernel_rational_quadratic>(&k); rq && rq->alpha > 0.5)
    return std::sqrt(2 * rq->alpha * std::numbers::pi) * std::tgamma(rq->alpha - 0.5) /
           std::tgamma(rq->alpha);
  throw std::invalid_argument(fmt::format(
      "kernel {} is not a probability density kernel (use gaussian, epanechnikov, biweight, "
      "triweight, tricube, cosine, boxcar, laplacian, cauchy, rational_quadratic with alpha > "
      "1/2)",
      n));
}

namespace {

// The criterion at h on the binned route: 1-D through kb (binned once, reused), 2-D on its grid;
// at the search or the final resolution.
double binned_criterion(const any_kernel& kernel, const_matrix_view<double> x,
                        const std::vector<double>& h, bandwidth_criterion c, bool search,
                        const kde_options& options, detail::kde_binned* kb) {
  const bool cv_ls = c == bandwidth_criterion::cv_ls;
  if (x.cols == 1) {
    const any_kernel k = with_bandwidth(kernel, h.at(0));
    const double z = kernel_integral_1d(kernel);
    const double cells = search ? options.search_cells_per_h : options.cells_per_h;
    return cv_ls ? kb->cv_ls(k, z, cells) : kb->cv_ml(k, z, cells);
  }
  const detail::binned2d_settings st;
  const double cells = search ? st.search_cells_per_h : st.cells_per_h;
  const std::array<double, 2> hh = {h.at(0), h.at(1)};
  if (!cv_ls)
    return detail::kde2d_cv_ml(kernel, x, hh, detail::kernel_integral_2d(kernel), cells,
                               options.shard);
  if (kernel_name(kernel) != "gaussian")
    throw std::invalid_argument("kde cv-ls: multivariate needs the gaussian kernel");
  return detail::kde2d_cv_ls_gaussian(x, hh, cells, options.shard);
}

}  // namespace

double kde_criterion(const any_kernel& kernel, const_matrix_view<double> x,
                     const std::vector<double>& bandwidth, bandwidth_criterion criterion,
                     const kde_options& options) {
  check(kernel, x);
  const bool cv_ls = criterion == bandwidth_criterion::cv_ls;
  if (!choose_kde_route(kernel, {}, x, options).binned())
    return cv_ls ? kde_cv_ls(kernel, x, bandwidth, options.shard)
                 : kde_cv_ml(kernel, x, bandwidth, options.shard);
  std::vector<double> col;
  std::unique_ptr<detail::kde_binned> kb;
  if (x.cols == 1) {
    col.resize(static_cast<std::size_t>(x.rows));
    for (index i = 0; i < x.rows; ++i) col[static_cast<std::size_t>(i)] = x(i, 0);
    kb = std::make_unique<detail::kde_binned>(col, options.shard);
  }
  return binned_criterion(kernel, x, bandwidth, criterion, false, options, kb.get());
}

std::string kde_route_name(const kde_fit& fit) { return std::string(fit.route.name()); }

// Three routes: 1-D binned (the fit's cached grid, or a grid binned here), 2-D binned (rows the
// grid cannot trust summed exactly), else exact: f̂ = exp(lse − log(n Π h Z)) per row of at.
std::vector<double> kde_evaluate(const kde_fit& fit, const_matrix_view<double> at) {
  if (at.cols != fit.x.cols())
    throw std::invalid_argument(
        fmt::format("kde: evaluation points have {} columns, data {}", at.cols, fit.x.cols()));
  if (fit.route.kind == route_kind::binned) {
    std::vector<double> a(static_cast<std::size_t>(at.rows));
    for (index i = 0; i < at.rows; ++i) a[static_cast<std::size_t>(i)] = at(i, 0);
    if (fit.cache.grid) {  // binned by the fit over [min x − reach, max x + reach]
      const std::lock_guard<std::mutex> hold(*fit.cache.lock);
      return fit.cache.grid->density(with_bandwidth(fit.kernel, fit.bandwidth[0]),
                                     kernel_integral_1d(fit.kernel), a, fit.options.cells_per_h);
    }
    // The grid covers the evaluation points within the kernel's reach of the data (at most the
    // data's span beyond it); points farther out are summed exactly.
    const std::span<const double> xs(fit.x.data(), static_cast<std::size_t>(fit.x.rows()));
    const auto [xlo, xhi] = std::minmax_element(xs.begin(), xs.end());
    const any_kernel k = with_bandwidth(fit.kernel, fit.bandwidth[0]);
    const double reach = std::min(binned_reach(k, binned_settings{}.tail_tolerance),
                                  std::max(*xhi - *xlo, fit.bandwidth[0]));
    double lo = *xlo, hi = *xhi;
    for (double v : a) {
      if (v < lo && v >= *xlo - reach) lo = v;
      if (v > hi && v <= *xhi + reach) hi = v;
    }
    detail::kde_binned kb(xs, lo, hi, fit.options.shard);
    return kb.density(k, kernel_integral_1d(fit.kernel), a, fit.options.cells_per_h);
  }
  const double ln = log_norm(fit.kernel, fit.bandwidth, double(fit.x.rows()));
  if (fit.route.kind == route_kind::binned2d) {
    auto sums =
        detail::kde2d_kernel_sums(fit.kernel, fit.x.cview(), {fit.bandwidth[0], fit.bandwidth[1]},
                                  at, detail::binned2d_settings{}.cells_per_h, fit.options.shard);
    std::vector<double> f(sums.s.size());
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = std::exp(std::log(sums.s[i]) - ln);
    // Rows the grid cannot trust (outside it, or a sum below 1e-3 K(0)): exact sums.
    if (sums.exact_rows.empty()) return f;
    matrix<double> sub(static_cast<index>(sums.exact_rows.size()), 2);
    for (std::size_t r = 0; r < sums.exact_rows.size(); ++r)
      for (index c = 0; c < 2; ++c) sub(static_cast<index>(r), c) = at(sums.exact_rows[r], c);
    const auto lse =
        log_sums(fit.kernel, fit.bandwidth, sub.cview(), fit.x.cview(), fit.options.shard);
    for (std::size_t r = 0; r < lse.size(); ++r)
      f[static_cast<std::size_t>(sums.exact_rows[r])] = std::exp(lse[r] - ln);
    return f;
  }
  const auto lse = log_sums(fit.kernel, fit.bandwidth, at, fit.x.cview(), fit.options.shard);
  std::vector<double> f(lse.size());
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = std::exp(lse[i] - ln);  // exp(−inf) = 0
  return f;
}

namespace {

// log Σ_j K((q − x_j)/h) for one query, summed directly in double with the largest term
// factored out (log-sum-exp): the plain reference sum, for the few points far from the data.
double log_sum_direct(const any_kernel& unit, const std::vector<double>& h, const double* q,
                      const_matrix_view<double> x) {
  std::vector<double> lw(static_cast<std::size_t>(x.rows));
  double top = -kInf;
  for (index j = 0; j < x.rows; ++j) {
    double s = 0;
    for (index c = 0; c < x.cols; ++c) {
      const double u = (q[c] - x(j, c)) / h[h.size() == 1 ? 0 : static_cast<std::size_t>(c)];
      s += u * u;
    }
    lw[static_cast<std::size_t>(j)] = kernel_log_weight(unit, s);
    top = std::max(top, lw[static_cast<std::size_t>(j)]);
  }
  if (top == -kInf) return -kInf;
  double sum = 0;
  for (double l : lw) sum += std::exp(l - top);
  return top + std::log(sum);
}

}  // namespace

// log f̂: the density's log where kde_evaluate's value is a normal double far above underflow;
// elsewhere (a point far from the data, where exp(lse − log norm) underflows to 0 or loses its
// digits) the direct log-sum-exp − log(n Π h Z), so the log density stays finite and exact out
// there (−inf only where no kernel reaches: a compact kernel's support).
std::vector<double> kde_log_evaluate(const kde_fit& fit, const_matrix_view<double> at) {
  std::vector<double> f = kde_evaluate(fit, at);
  constexpr double kTiny = 1e-280;  // ~1e28 above the smallest normal double
  any_kernel unit = fit.kernel;
  kernel_set_param(unit, 1.0);
  const double ln = log_norm(fit.kernel, fit.bandwidth, double(fit.x.rows()));
  std::vector<double> q(static_cast<std::size_t>(at.cols));
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (f[i] >= kTiny) {
      f[i] = std::log(f[i]);
      continue;
    }
    for (index c = 0; c < at.cols; ++c) q[static_cast<std::size_t>(c)] = at(index(i), c);
    const double lse = log_sum_direct(unit, fit.bandwidth, q.data(), fit.x.cview());
    f[i] = lse == -kInf ? -kInf : lse - ln;
  }
  return f;
}

// −(1/n) Σ_i log f̂₋ᵢ(x_i), f̂₋ᵢ(x_i) = Σ_{j≠i} K((x_i − x_j)/h) / ((n − 1) Π h Z); +inf if
// any point's leave-one-out density is 0 (a compact kernel that reaches no other point).
double kde_cv_ml(const any_kernel& kernel, const_matrix_view<double> x,
                 const std::vector<double>& h, const data_shard& shard) {
  const index n = x.rows;
  if (n < 2) return kInf;
  // This process's points' terms, then one sum of (Σ terms, points with zero density).
  const auto lse = log_sums_loo(kernel, h, x, shard);
  const double ln = log_norm(kernel, h, double(n - 1));
  double sums[2] = {0, 0};
  for (double l : lse) {
    if (!std::isfinite(l)) sums[1] = 1;  // a point with zero leave-one-out density
    if (sums[1] == 0) sums[0] += l - ln;
  }
  shard.sum_all(sums);
  if (sums[1] > 0) return kInf;
  return -sums[0] / double(n);
}

// ∫f̂² − (2/n) Σ_i f̂₋ᵢ(x_i): estimates ∫(f̂ − f)² − ∫f², whose last term does not depend on h.
double kde_cv_ls(const any_kernel& kernel, const_matrix_view<double> x,
                 const std::vector<double>& h, const data_shard& shard) {
  const index n = x.rows;
  if (n < 2) return kInf;
  const double nn = double(n);
  // (2/n) Σ f̂₋ᵢ(x_i), over this process's points (summed over the processes below)
  const auto loo = log_sums_loo(kernel, h, x, shard);
  const double ln_loo = log_norm(kernel, h, nn - 1);
  double cross = 0;
  for (double l : loo) cross += std::exp(l - ln_loo);
  cross *= 2.0 / nn;
  // ∫ f̂²
  double integral = 0;
  const std::string_view name = kernel_name(kernel);
  if (name == "gaussian" || name == "cauchy") {
    // K_h * K_h is the same family with √2·h (gaussian) or 2h (cauchy), so
    // ∫f̂² = Σ_i Σ_j K((x_i − x_j)/h′) / (n² Π h′ Z) with h′ that bandwidth, self-pairs included.
    std::vector<double> h2 = h;
    for (double& v : h2) v *= name == "gaussian" ? std::sqrt(2.0) : 2.0;
    const auto b = shard.block_of(n);
    const auto lse = log_sums_local(kernel, h2, x.block(b.lo, 0, b.size(), x.cols), x, -1);
    const double ln = log_norm(kernel, h2, nn * nn);
    for (double l : lse) integral += std::exp(l - ln);
    double sums[2] = {integral, cross};
    shard.sum_all(sums);
    return sums[0] - sums[1];
  }
  cross = shard.sum_all(cross);
  {
    if (x.cols != 1)
      throw std::invalid_argument("kde cv-ls: multivariate needs the gaussian kernel");
    if (!kernel_compact(kernel) && name != "laplacian")
      throw std::invalid_argument(fmt::format(
          "kde cv-ls supports gaussian, cauchy, laplacian and the compact kernels, not {}", name));
    double lo = x(0, 0), hi = x(0, 0);
    for (index i = 0; i < n; ++i) lo = std::min(lo, x(i, 0)), hi = std::max(hi, x(i, 0));
    // Otherwise (1-D) Simpson's rule on f̂² over the data widened by the kernel's reach (the
    // laplacian's e^{−40} is negligible at 40h), intervals ≤ h/40, at most 2·10^5 of them.
    const double reach = kernel_compact(kernel) ? h[0] : 40 * h[0];
    lo -= reach;
    hi += reach;
    const auto steps = static_cast<index>(std::min(2e5, std::ceil((hi - lo) / (h[0] / 40))));
    const index g = steps + (steps % 2);  // even number of intervals for Simpson
    matrix<double> grid(g + 1, 1);
    for (index i = 0; i <= g; ++i) grid(i, 0) = lo + (hi - lo) * double(i) / double(g);
    kde_fit f;
    f.kernel = kernel;
    f.bandwidth = h;
    f.x = matrix<double>(n, 1);
    for (index i = 0; i < n; ++i) f.x(i, 0) = x(i, 0);
    const auto dens = kde_evaluate(f, grid.cview());
    const double step = (hi - lo) / double(g);
    for (index i = 0; i <= g; ++i) {
      const double w = (i == 0 || i == g) ? 1.0 : (i % 2 ? 4.0 : 2.0);
      integral += w * dens[static_cast<std::size_t>(i)] * dens[static_cast<std::size_t>(i)];
    }
    integral *= step / 3.0;
  }
  return integral - cross;
}

namespace {

// A 1-D binned fit whose bandwidth was known before any binning (a rule or a fixed value): the
// data binned once, over the range kde_evaluate reads (the data widened by the kernel's reach),
// for the reported criterion and every density.
void keep_grid(kde_fit& f, std::span<const double> xs) {
  const auto [xlo, xhi] = std::minmax_element(xs.begin(), xs.end());
  const double h = f.bandwidth.at(0);
  const double reach =
      std::min(binned_reach(with_bandwidth(f.kernel, h), binned_settings{}.tail_tolerance),
               std::max(*xhi - *xlo, h));
  f.cache.grid =
      std::make_shared<detail::kde_binned>(xs, *xlo - reach, *xhi + reach, f.options.shard);
  f.cache.lock = std::make_shared<std::mutex>();
}

// bandwidth_sheather_jones on each column of x.
std::vector<double> sheather_jones_per_column(const_matrix_view<double> x, sj_method method) {
  std::vector<double> h, col(static_cast<std::size_t>(x.rows));
  for (index j = 0; j < x.cols; ++j) {
    for (index i = 0; i < x.rows; ++i) col[static_cast<std::size_t>(i)] = x(i, j);
    h.push_back(bandwidth_sheather_jones(col, method));
  }
  return h;
}

std::vector<double> isj_per_column(const_matrix_view<double> x) {
  std::vector<double> h, col(static_cast<std::size_t>(x.rows));
  for (index j = 0; j < x.cols; ++j) {
    for (index i = 0; i < x.rows; ++i) col[static_cast<std::size_t>(i)] = x(i, j);
    h.push_back(bandwidth_isj(col));
  }
  return h;
}

}  // namespace

kde_fit kde_fit_data(const any_kernel& kernel, const_matrix_view<double> x,
                     bandwidth_criterion criterion, std::vector<double> bandwidth,
                     const progress_fn& progress, const kde_options& options) {
  // Copies x into the fit (f.x), chooses the bandwidth, then reports the criterion at it.
  check(kernel, x);
  kde_fit f;
  f.kernel = kernel;
  f.criterion = criterion;
  f.options = options;
  // The binned family does not depend on the bandwidth; the k-d tree's choice does (f.route,
  // chosen below at the fit's bandwidth).
  const bool binned = choose_kde_route(kernel, {}, x, options).binned();
  f.x = matrix<double>(x.rows, x.cols);
  for (index i = 0; i < x.rows; ++i)
    for (index c = 0; c < x.cols; ++c) f.x(i, c) = x(i, c);
  std::unique_ptr<detail::kde_binned> kb;
  const std::span<const double> xs(f.x.data(), static_cast<std::size_t>(x.rows));
  const bool searched =
      criterion == bandwidth_criterion::cv_ml || criterion == bandwidth_criterion::cv_ls;
  if (binned && x.cols == 1 && searched)
    kb = std::make_unique<detail::kde_binned>(xs, options.shard);
  // The criterion on the fit's route, at the search or the final resolution.
  auto criterion_at = [&](bandwidth_criterion c, const std::vector<double>& h, bool search) {
    if (!binned)
      return c == bandwidth_criterion::cv_ls ? kde_cv_ls(kernel, x, h, options.shard)
                                             : kde_cv_ml(kernel, x, h, options.shard);
    return binned_criterion(kernel, f.x.cview(), h, c, search, options, kb.get());
  };
  switch (criterion) {
    case bandwidth_criterion::fixed:
      if (bandwidth.size() == 1 && x.cols > 1)
        bandwidth.assign(static_cast<std::size_t>(x.cols), bandwidth[0]);
      if (static_cast<index>(bandwidth.size()) != x.cols)
        throw std::invalid_argument(
            fmt::format("kde: {} bandwidths for {} columns", bandwidth.size(), x.cols));
      f.bandwidth = bandwidth;
      break;
    case bandwidth_criterion::silverman:
    case bandwidth_criterion::scott:
      f.bandwidth = bandwidth_rule(x, criterion);
      break;
    case bandwidth_criterion::sj:
    case bandwidth_criterion::sj_dpi:  // per column, as R's bw.SJ on each
      f.bandwidth = sheather_jones_per_column(x, criterion == bandwidth_criterion::sj
                                                     ? sj_method::solve_the_equation
                                                     : sj_method::direct_plug_in);
      break;
    case bandwidth_criterion::isj:  // per column, as KDEpy's improved_sheather_jones on each
      f.bandwidth = isj_per_column(x);
      break;
    case bandwidth_criterion::cv_ml:
    case bandwidth_criterion::cv_ls: {
      if (x.rows < 3)
        throw std::invalid_argument(fmt::format("kde bandwidth by {} needs at least 3 points",
                                                bandwidth_criterion_name(criterion)));
      auto objective = [&](const std::vector<double>& h) {
        return criterion_at(criterion, h, true);
      };
      const auto r = bandwidth_search(objective, bandwidth_rule(x, bandwidth_criterion::silverman),
                                      bandwidth_criterion_name(criterion), progress);
      f.bandwidth = r.bandwidth;
      f.curve = r.curve;
      f.at_search_boundary = r.at_boundary;
      f.search_evaluations = r.evaluations;
      break;
    }
    default:
      throw std::invalid_argument(
          fmt::format("{} is a regression criterion; for density use "
                      "silverman, scott, sj, sj-dpi, isj, cv-ml or cv-ls",
                      bandwidth_criterion_name(criterion)));
  }
  f.route = choose_kde_route(kernel, f.bandwidth, f.x.cview(), options);
  if (binned && x.cols == 1 && !searched) keep_grid(f, xs);
  detail::kde_binned* grid = f.cache.grid ? f.cache.grid.get() : kb.get();
  // Rules and fixed bandwidths report likelihood CV (cv_ml); a searched criterion itself.
  const bandwidth_criterion reported =
      criterion == bandwidth_criterion::cv_ls ? criterion : bandwidth_criterion::cv_ml;
  f.criterion_value =
      binned ? binned_criterion(kernel, f.x.cview(), f.bandwidth, reported, false, options, grid)
             : criterion_at(reported, f.bandwidth, false);
  return f;
}

}  // namespace kf
