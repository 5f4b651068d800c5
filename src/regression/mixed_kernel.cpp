// Product kernels on mixed data, as statsmodels' gpke defines them (the formulas and conventions:
// include/kernelformer/regression/mixed_kernel.hpp). A row's weights are built column by column
// as log K(q, x_j) = Σ_k log L_k over a column-major copy of x. Queries sum them with the row's
// maximum factored out; the leave-one-out criteria take each pair once and sum e^{log K}
// directly, redoing in the log domain only a row whose sum underflows.
#include "kernelformer/regression/mixed_kernel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>

#include <omp.h>

namespace kf {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLogSqrt2Pi = 0.91893853320467274178;  // log √(2π)

[[noreturn]] void fail(const char* what, const std::string& why) {
  throw std::invalid_argument(fmt::format("{}: {}", what, why));
}

const char* type_name(column_type t) {
  return t == column_type::continuous  ? "continuous"
         : t == column_type::unordered ? "unordered"
                                       : "ordered";
}

// Column k's kernel, its constants resolved from the bandwidth.
struct column_kernel {
  column_type type = column_type::continuous;
  double inv_2h2 = 0;     // continuous: 1 / (2 h²)
  double log_same = 0;    // categorical: log(1 − λ), the weight at equal codes
  double log_diff = 0;    // unordered: log(λ / (c − 1)); ordered: log((1 − λ) / 2)
  double log_lambda = 0;  // ordered: the weight falls by λ per unit of |x − x_j|
};

struct prepared {
  std::vector<column_kernel> cols;
  double log_norm = 0;  // −Σ_continuous (log h + log √(2π)): the density's normalization
  // Leave-one-out sums with counted levels: where x_ik is its level's only point, the sum that
  // leaves out row i sees c − 1 levels of column k (statsmodels counts them among the points it
  // sums over), and every term of it differs from x_ik: the row's sum is scaled by
  // (c − 1)/(c − 2). Per row, the log of the product of these factors; empty: none.
  std::vector<double> loo_log_shift;
  std::vector<double> xt;  // x column by column (d × n): the passes below read it contiguously
};

// The shape of x against the spec, and every value finite, categorical ones integer codes.
void check_rows(const mixed_spec& spec, const_matrix_view<double> x, const char* what,
                const char* name) {
  const auto d = static_cast<index>(spec.types.size());
  if (d == 0) fail(what, "spec.types is empty: one column type per column of x is needed");
  if (x.cols != d)
    fail(what, fmt::format("{} has {} columns but spec.types has {}", name, x.cols, d));
  if (!spec.levels.empty() && static_cast<index>(spec.levels.size()) != d)
    fail(what, fmt::format("spec.levels has {} entries for {} columns (empty: count them all)",
                           spec.levels.size(), d));
  for (index i = 0; i < x.rows; ++i)
    for (index k = 0; k < d; ++k) {
      const double v = x(i, k);
      if (!std::isfinite(v))
        fail(what, fmt::format("{} row {} column {} is not finite", name, i + 1, k + 1));
      if (spec.types[std::size_t(k)] != column_type::continuous &&
          (v != std::nearbyint(v) || std::abs(v) > 9007199254740992.0))
        fail(what, fmt::format("{} row {} column {} ({}) is {}, not an integer code", name, i + 1,
                               k + 1, type_name(spec.types[std::size_t(k)]), v));
    }
}

std::map<double, index> level_counts(const_matrix_view<double> x, index k) {
  std::map<double, index> counts;
  for (index i = 0; i < x.rows; ++i) ++counts[x(i, k)];
  return counts;
}

// The count c of an unordered column's levels: given, or the data's distinct codes.
index resolve_levels(const mixed_spec& spec, index k, index distinct, const char* what) {
  const index given = spec.levels.empty() ? 0 : spec.levels[std::size_t(k)];
  if (given < 0) fail(what, fmt::format("spec.levels[{}] = {} is negative", k, given));
  if (given > 0 && given < distinct)
    fail(what, fmt::format("spec.levels[{}] = {} but column {} has {} distinct codes", k, given,
                           k + 1, distinct));
  const index c = given > 0 ? given : distinct;
  if (c < 2)
    fail(what, fmt::format("unordered column {} has a single level: the Aitchison-Aitken kernel "
                           "needs c >= 2 (give spec.levels or drop the column)",
                           k + 1));
  return c;
}

// An unordered column's kernel: λ ∈ [0, (c−1)/c].
void prepare_unordered(column_kernel& col, prepared& p, const mixed_spec& spec,
                       const_matrix_view<double> x, index k, bool loo, const char* what) {
  const double lambda = spec.bandwidth[std::size_t(k)];
  const auto counts = level_counts(x, k);
  const index c = resolve_levels(spec, k, static_cast<index>(counts.size()), what);
  const double hi = (double(c) - 1.0) / double(c);
  if (!(lambda >= 0 && lambda <= hi))
    fail(what, fmt::format("unordered column {}: lambda = {} is outside [0, (c-1)/c = {}] (c = "
                           "{} levels)",
                           k + 1, lambda, hi, c));
  col.log_same = std::log(1 - lambda);
  col.log_diff = std::log(lambda / (double(c) - 1));
  const bool counted = spec.levels.empty() || spec.levels[std::size_t(k)] == 0;
  if (!loo || !counted) return;
  for (index i = 0; i < x.rows; ++i) {
    if (counts.at(x(i, k)) != 1) continue;
    if (c == 2)
      fail(what, fmt::format("unordered column {}: code {} occurs once of 2 levels, so leaving "
                             "it out leaves one level (statsmodels divides by c - 1 = 0 there); "
                             "give spec.levels[{}] = 2",
                             k + 1, x(i, k), k));
    if (p.loo_log_shift.empty()) p.loo_log_shift.assign(std::size_t(x.rows), 0.0);
    p.loo_log_shift[std::size_t(i)] += std::log((double(c) - 1) / (double(c) - 2));
  }
}

prepared prepare(const mixed_spec& spec, const_matrix_view<double> x, bool loo, const char* what) {
  check_rows(spec, x, what, "x");
  if (x.rows < 1) fail(what, "x has no rows");
  if (spec.bandwidth.size() != spec.types.size())
    fail(what, fmt::format("spec.bandwidth has {} entries for {} columns", spec.bandwidth.size(),
                           spec.types.size()));
  prepared p;
  p.cols.resize(spec.types.size());
  for (index k = 0; k < x.cols; ++k) {
    auto& col = p.cols[std::size_t(k)];
    col.type = spec.types[std::size_t(k)];
    const double b = spec.bandwidth[std::size_t(k)];
    if (col.type == column_type::continuous) {
      if (!(b > 0 && std::isfinite(b)))
        fail(what, fmt::format("continuous column {}: bandwidth {} is not > 0", k + 1, b));
      col.inv_2h2 = 1 / (2 * b * b);
      p.log_norm -= std::log(b) + kLogSqrt2Pi;
    } else if (col.type == column_type::unordered) {
      prepare_unordered(col, p, spec, x, k, loo, what);
    } else {
      if (!(b >= 0 && b <= 1))
        fail(what, fmt::format("ordered column {}: lambda = {} is outside [0, 1]", k + 1, b));
      col.log_same = std::log(1 - b);
      col.log_diff = std::log((1 - b) / 2);
      col.log_lambda = std::log(b);
    }
  }
  p.xt.resize(std::size_t(x.rows * x.cols));
  for (index i = 0; i < x.rows; ++i)
    for (index k = 0; k < x.cols; ++k) p.xt[std::size_t(k * x.rows + i)] = x(i, k);
  return p;
}

// lw[j] = log K(q, x_j) for the rows j0 ≤ j < n of x (lw holds n values).
void row_log_weights(const prepared& p, const double* q, index j0, std::span<double> lw) {
  const std::size_t n = lw.size(), j_0 = static_cast<std::size_t>(j0);
  double* w = lw.data();
  std::fill(w + j_0, w + n, 0.0);
  for (std::size_t k = 0; k < p.cols.size(); ++k) {
    const auto& c = p.cols[k];
    const double qk = q[k], a = c.inv_2h2, same = c.log_same, diff = c.log_diff;
    const double* xk = p.xt.data() + k * n;
    if (c.type == column_type::continuous) {
#pragma omp simd
      for (std::size_t j = j_0; j < n; ++j) w[j] -= (qk - xk[j]) * (qk - xk[j]) * a;
    } else if (c.type == column_type::unordered) {
#pragma omp simd
      for (std::size_t j = j_0; j < n; ++j) w[j] += xk[j] == qk ? same : diff;
    } else {
      const double step = c.log_lambda, fix = same - diff;
      if (std::isfinite(step) && std::isfinite(fix)) {  // 0 < λ < 1: no branch, vectorized
#pragma omp simd
        for (std::size_t j = j_0; j < n; ++j) {
          const double d = std::abs(qk - xk[j]);
          w[j] += diff + d * step + (d == 0 ? fix : 0.0);
        }
      } else {  // λ = 0 or 1: −inf terms, kept apart from the equal codes' finite one
        for (std::size_t j = j_0; j < n; ++j) {
          const double d = std::abs(qk - xk[j]);
          w[j] += d == 0 ? same : diff + d * step;
        }
      }
    }
  }
}

// Σ_j e^{lw_j − m} (and Σ_j e^{lw_j − m} y_j) with m = max lw; m = −inf: no weight.
struct row_sums {
  double m = -kInf, s = 0, t = 0;
};

row_sums sum_row(std::span<const double> lw, std::span<const double> y) {
  row_sums r;
  for (const double v : lw) r.m = std::max(r.m, v);
  if (r.m == -kInf) return r;
  for (std::size_t j = 0; j < lw.size(); ++j) {
    const double w = std::exp(lw[j] - r.m);
    r.s += w;
    if (!y.empty()) r.t += w * y[j];
  }
  return r;
}

// Threads pay off past ~10^6 kernel terms (a fork/join costs microseconds, far more on a
// machine busy with other work).
bool worth_threads(index rows, const_matrix_view<double> x) {
  return double(rows) * double(x.rows) * double(x.cols) >= 1e6;
}

// out[i] = f(sums of row i of xq against x), in the log domain, parallel over rows.
template <class F>
std::vector<double> per_row(const prepared& p, const_matrix_view<double> x,
                            const_matrix_view<double> xq, std::span<const double> y, F f) {
  std::vector<double> out(std::size_t(xq.rows));
#pragma omp parallel if (worth_threads(xq.rows, x))
  {
    std::vector<double> lw(std::size_t(x.rows));
#pragma omp for schedule(static)
    for (index i = 0; i < xq.rows; ++i) {
      row_log_weights(p, xq.row(i), 0, lw);
      out[std::size_t(i)] = f(sum_row(lw, y));
    }
  }
  return out;
}

// The leave-one-out sums of the training rows: log Σ_{j≠i} K(x_i, x_j) (with the row's
// loo_log_shift) and, given y, the weighted mean of the y_j, NaN where no weight.
struct loo_rows {
  std::vector<double> log_s, mean;
};

// Each pair once (K is symmetric), weights e^{log K} summed directly into per-thread rows (added
// in thread order: the same numbers for a given thread count); a row whose sum is below 1e-250
// (far from every other point) is summed again in the log domain.
loo_rows loo_sums(const prepared& p, const_matrix_view<double> x, std::span<const double> y) {
  const auto n = std::size_t(x.rows);
  const bool with_y = !y.empty();
  const int threads = omp_get_max_threads();
  std::vector<std::vector<double>> s_part(static_cast<std::size_t>(threads)),
      t_part(static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads) if (worth_threads(x.rows / 2, x))
  {
    auto& s = s_part[std::size_t(omp_get_thread_num())];
    auto& t = t_part[std::size_t(omp_get_thread_num())];
    s.assign(n, 0.0);
    t.assign(with_y ? n : 0, 0.0);
    std::vector<double> lw(n);
#pragma omp for schedule(static, 1)
    for (index i = 0; i < x.rows - 1; ++i) {
      const auto ui = std::size_t(i);
      row_log_weights(p, x.row(i), i + 1, lw);
      double si = 0, ti = 0;
      for (std::size_t j = ui + 1; j < n; ++j) {
        const double w = std::exp(lw[j]);
        si += w;
        s[j] += w;
        if (with_y) ti += w * y[j], t[j] += w * y[ui];
      }
      s[ui] += si;
      if (with_y) t[ui] += ti;
    }
  }
  loo_rows r{std::vector<double>(n), std::vector<double>(with_y ? n : 0)};
#pragma omp parallel if (worth_threads(x.rows / 2, x))
  {
    std::vector<double> lw(n);
#pragma omp for schedule(static)
    for (index i = 0; i < x.rows; ++i) {
      const auto ui = std::size_t(i);
      double s = 0, t = 0;
      for (int th = 0; th < threads; ++th) {
        if (s_part[std::size_t(th)].empty()) continue;  // a thread the region did not start
        s += s_part[std::size_t(th)][ui];
        if (with_y) t += t_part[std::size_t(th)][ui];
      }
      if (s >= 1e-250) {
        r.log_s[ui] = std::log(s);
        if (with_y) r.mean[ui] = t / s;
      } else {
        row_log_weights(p, x.row(i), 0, lw);
        lw[ui] = -kInf;
        const row_sums rs = sum_row(lw, y);
        r.log_s[ui] = rs.m + std::log(rs.s);  // −inf: no weight
        if (with_y)
          r.mean[ui] = rs.m == -kInf ? std::numeric_limits<double>::quiet_NaN() : rs.t / rs.s;
      }
      if (!p.loo_log_shift.empty()) r.log_s[ui] += p.loo_log_shift[ui];
    }
  }
  return r;
}

void check_y(std::span<const double> y, const_matrix_view<double> x, const char* what) {
  if (static_cast<index>(y.size()) != x.rows)
    fail(what, fmt::format("y has {} values for {} rows of x", y.size(), x.rows));
  for (std::size_t i = 0; i < y.size(); ++i)
    if (!std::isfinite(y[i])) fail(what, fmt::format("y[{}] is not finite", i + 1));
}

void check_cv_rows(const_matrix_view<double> x, const char* what) {
  if (x.rows < 3)
    fail(what, fmt::format("leave-one-out cross-validation needs n >= 3 points, not {}", x.rows));
}

}  // namespace

std::vector<index> mixed_levels(const mixed_spec& spec, const_matrix_view<double> x) {
  constexpr const char* what = "mixed_levels";
  check_rows(spec, x, what, "x");
  std::vector<index> levels(spec.types.size(), 0);
  for (index k = 0; k < x.cols; ++k)
    if (spec.types[std::size_t(k)] == column_type::unordered)
      levels[std::size_t(k)] =
          resolve_levels(spec, k, static_cast<index>(level_counts(x, k).size()), what);
  return levels;
}

std::vector<double> mixed_nw(const mixed_spec& spec, const_matrix_view<double> x,
                             std::span<const double> y, const_matrix_view<double> xq) {
  constexpr const char* what = "mixed_nw";
  const prepared p = prepare(spec, x, false, what);
  check_y(y, x, what);
  check_rows(spec, xq, what, "xq");
  return per_row(p, x, xq, y, [](const row_sums& r) {
    return r.m == -kInf ? std::numeric_limits<double>::quiet_NaN() : r.t / r.s;
  });
}

double mixed_nw_cv_ls(const mixed_spec& spec, const_matrix_view<double> x,
                      std::span<const double> y) {
  constexpr const char* what = "mixed_nw_cv_ls";
  check_cv_rows(x, what);
  const prepared p = prepare(spec, x, true, what);
  check_y(y, x, what);
  const loo_rows r = loo_sums(p, x, y);
  double sum = 0;
  for (std::size_t i = 0; i < r.mean.size(); ++i) {
    if (std::isnan(r.mean[i])) return kInf;
    sum += (y[i] - r.mean[i]) * (y[i] - r.mean[i]);
  }
  return sum / double(x.rows);
}

std::vector<double> mixed_density(const mixed_spec& spec, const_matrix_view<double> x,
                                  const_matrix_view<double> xq) {
  constexpr const char* what = "mixed_density";
  const prepared p = prepare(spec, x, false, what);
  check_rows(spec, xq, what, "xq");
  const double log_scale = p.log_norm - std::log(double(x.rows));
  return per_row(p, x, xq, {}, [&](const row_sums& r) {
    return r.m == -kInf ? 0.0 : std::exp(r.m + std::log(r.s) + log_scale);
  });
}

double mixed_density_cv_ml(const mixed_spec& spec, const_matrix_view<double> x) {
  constexpr const char* what = "mixed_density_cv_ml";
  check_cv_rows(x, what);
  const prepared p = prepare(spec, x, true, what);
  const loo_rows r = loo_sums(p, x, {});
  double sum = 0;
  for (const double v : r.log_s) sum += v + p.log_norm;
  return -sum;  // +inf where a row has no weight
}

std::vector<double> mixed_normal_reference(const mixed_spec& spec, const_matrix_view<double> x) {
  constexpr const char* what = "mixed_normal_reference";
  check_rows(spec, x, what, "x");
  if (x.rows < 1) fail(what, "x has no rows");
  const double n = double(x.rows);
  const double shrink = std::pow(n, -1.0 / (4.0 + double(x.cols)));
  std::vector<double> h(std::size_t(x.cols));
  for (index k = 0; k < x.cols; ++k) {
    double mean = 0, ss = 0;
    for (index i = 0; i < x.rows; ++i) mean += x(i, k);
    mean /= n;
    for (index i = 0; i < x.rows; ++i) ss += (x(i, k) - mean) * (x(i, k) - mean);
    h[std::size_t(k)] = 1.06 * std::sqrt(ss / n) * shrink;  // numpy's std: ddof 0
  }
  return h;
}

namespace {

// The search's coordinates: h = h₀ e^t (continuous, t clamped to [−40, 40]: h within 1e±17 of
// the start), λ = upper · sin²(t/2) (categorical: both ends of the range at finite t, 0 and π,
// where the objective is stationary in t, so the simplex converges onto an end like onto an
// interior minimum — a logistic map would make it creep along its flat tail instead).
struct box_map {
  std::vector<column_type> types;
  std::vector<double> scale;  // h₀ or the upper end of λ's range
  static constexpr double kMaxT = 40;

  double bandwidth(std::size_t k, double t) const {
    if (types[k] == column_type::continuous)
      return scale[k] * std::exp(std::clamp(t, -kMaxT, kMaxT));
    const double s = std::sin(t / 2);
    return std::min(scale[k] * (s * s), scale[k]);
  }
  double coordinate(std::size_t k, double b) const {
    if (types[k] == column_type::continuous) return std::log(b / scale[k]);
    return 2 * std::asin(std::sqrt(std::clamp(b / scale[k], 0.0, 1.0)));
  }
  // How far apart two coordinates are: in t for h (relative change), in λ / upper for λ.
  double spread(std::size_t k, double t1, double t2) const {
    if (types[k] == column_type::continuous) return std::abs(t1 - t2);
    return std::abs(bandwidth(k, t1) - bandwidth(k, t2)) / scale[k];
  }
  std::vector<double> bandwidths(const std::vector<double>& t) const {
    std::vector<double> b(t.size());
    for (std::size_t k = 0; k < t.size(); ++k) b[k] = bandwidth(k, t[k]);
    return b;
  }
};

// Every evaluation goes through here: counted, NaN read as +inf, the best point kept.
struct tracked_objective {
  const mixed_objective& f;
  mixed_search_result best{{}, kInf, 0};

  double operator()(const std::vector<double>& bw) {
    ++best.evaluations;
    double v = f(bw);
    if (std::isnan(v)) v = kInf;
    if (v < best.objective || best.bandwidth.empty()) {
      best.objective = v;
      best.bandwidth = bw;
    }
    return v;
  }
};

// Nelder–Mead (reflection 1, expansion 2, contraction ½, shrink ½) in the box coordinates from
// t0 with one initial step per coordinate; stops when the simplex spans < 1e-6 (box_map::spread)
// and its values agree to 1e-12 relative, or after max_evals.
void nelder_mead(tracked_objective& f, const box_map& map, std::vector<double> t0,
                 const std::vector<double>& step, int max_evals) {
  const std::size_t d = t0.size();
  std::vector<std::vector<double>> pts(d + 1, t0);
  std::vector<double> fv(d + 1);
  for (std::size_t k = 0; k < d; ++k) pts[k + 1][k] += step[k];
  for (std::size_t i = 0; i <= d; ++i) fv[i] = f(map.bandwidths(pts[i]));
  const int stop = f.best.evaluations + max_evals;
  std::vector<std::size_t> order(d + 1);
  while (f.best.evaluations < stop) {
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return fv[a] < fv[b]; });
    const std::size_t lo = order[0], hi = order[d], second = order[d - 1];
    double span = 0;
    for (std::size_t i = 0; i <= d; ++i)
      for (std::size_t k = 0; k < d; ++k)
        span = std::max(span, map.spread(k, pts[i][k], pts[lo][k]));
    if (span < 1e-6 && std::abs(fv[hi] - fv[lo]) <= 1e-12 * std::abs(fv[lo]) + 1e-300) break;
    std::vector<double> mid(d, 0.0);
    for (std::size_t i = 0; i <= d; ++i)
      if (i != hi)
        for (std::size_t k = 0; k < d; ++k) mid[k] += pts[i][k] / double(d);
    const auto along = [&](double a) {
      std::vector<double> p(d);
      for (std::size_t k = 0; k < d; ++k) p[k] = mid[k] + a * (pts[hi][k] - mid[k]);
      return p;
    };
    auto r = along(-1);
    const double fr = f(map.bandwidths(r));
    if (fr < fv[lo]) {
      auto e = along(-2);
      const double fe = f(map.bandwidths(e));
      if (fe < fr)
        pts[hi] = e, fv[hi] = fe;
      else
        pts[hi] = r, fv[hi] = fr;
    } else if (fr < fv[second]) {
      pts[hi] = r, fv[hi] = fr;
    } else {
      auto c = along(fr < fv[hi] ? -0.5 : 0.5);
      const double fc = f(map.bandwidths(c));
      if (fc < std::min(fr, fv[hi])) {
        pts[hi] = c, fv[hi] = fc;
      } else {
        for (std::size_t i = 0; i <= d; ++i) {
          if (i == lo) continue;
          for (std::size_t k = 0; k < d; ++k)
            pts[i][k] = pts[lo][k] + 0.5 * (pts[i][k] - pts[lo][k]);
          fv[i] = f(map.bandwidths(pts[i]));
        }
      }
    }
  }
}

// One coordinate of the best point: the ends of a λ's range, then a golden-section search over
// t ± 0.3. Keeps only improvements (f does).
void refine_coordinate(tracked_objective& f, const box_map& map, std::size_t k) {
  if (map.types[k] != column_type::continuous)
    for (const double end : {0.0, map.scale[k]}) {
      auto bw = f.best.bandwidth;
      bw[k] = end;
      f(bw);
    }
  const double t = map.coordinate(k, f.best.bandwidth[k]);
  const auto at = [&](double s) {
    auto bw = f.best.bandwidth;
    bw[k] = map.bandwidth(k, s);
    return f(bw);
  };
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = t - 0.3, b = t + 0.3, c = b - g * (b - a), e = a + g * (b - a);
  double fc = at(c), fe = at(e);
  for (int it = 0; it < 14; ++it) {
    if (fc < fe) {
      b = e, e = c, fe = fc, c = b - g * (b - a), fc = at(c);
    } else {
      a = c, c = e, fc = fe, e = a + g * (b - a), fe = at(e);
    }
  }
}

mixed_search_result search_from_spec(const mixed_spec& spec, const_matrix_view<double> x,
                                     const std::function<double(const mixed_spec&)>& cv) {
  const auto levels = mixed_levels(spec, x);
  const auto start = mixed_normal_reference(spec, x);
  const mixed_objective objective = [&](std::span<const double> bw) {
    mixed_spec s = spec;
    s.bandwidth.assign(bw.begin(), bw.end());
    return cv(s);
  };
  return mixed_bandwidth_search(objective, start, spec.types, levels);
}

}  // namespace

mixed_search_result mixed_bandwidth_search(const mixed_objective& objective,
                                           std::span<const double> start,
                                           std::span<const column_type> types,
                                           std::span<const index> levels) {
  constexpr const char* what = "mixed_bandwidth_search";
  const std::size_t d = types.size();
  if (d == 0) fail(what, "no columns");
  if (start.size() != d || levels.size() != d)
    fail(what, fmt::format("start has {} and levels {} entries for {} column types", start.size(),
                           levels.size(), d));
  box_map map{{types.begin(), types.end()}, std::vector<double>(d)};
  std::vector<double> t0(d, 0.0), step(d);
  for (std::size_t k = 0; k < d; ++k) {
    if (types[k] == column_type::continuous) {
      if (!(start[k] > 0 && std::isfinite(start[k])))
        fail(what, fmt::format("continuous column {}: start {} is not > 0 (a constant column?)",
                               k + 1, start[k]));
      map.scale[k] = start[k];
      step[k] = 0.5;
      continue;
    }
    if (types[k] == column_type::unordered && levels[k] < 2)
      fail(what,
           fmt::format("unordered column {}: {} levels (2 or more needed)", k + 1, levels[k]));
    map.scale[k] =
        types[k] == column_type::ordered ? 1.0 : (double(levels[k]) - 1) / double(levels[k]);
    const double u =
        std::clamp(std::isfinite(start[k]) ? start[k] / map.scale[k] : 0.5, 0.02, 0.98);
    t0[k] = map.coordinate(k, u * map.scale[k]);
    step[k] = 0.5;
  }
  tracked_objective f{objective};
  const int budget = 300 * int(d + 1);
  nelder_mead(f, map, t0, step, budget);
  for (int round = 0; round < 3; ++round) {
    const double before = f.best.objective;
    for (std::size_t k = 0; k < d; ++k) refine_coordinate(f, map, k);
    if (!(f.best.objective < before - 1e-10 * std::abs(before))) break;
    // The coordinates found better ground than Nelder–Mead's end: a fresh, smaller simplex there.
    std::vector<double> t(d);
    for (std::size_t k = 0; k < d; ++k) t[k] = map.coordinate(k, f.best.bandwidth[k]);
    for (auto& st : step) st *= 0.3;
    nelder_mead(f, map, t, step, budget);
  }
  return f.best;
}

mixed_search_result mixed_nw_bandwidth_cv_ls(const mixed_spec& spec, const_matrix_view<double> x,
                                             std::span<const double> y) {
  return search_from_spec(spec, x, [&](const mixed_spec& s) { return mixed_nw_cv_ls(s, x, y); });
}

mixed_search_result mixed_density_bandwidth_cv_ml(const mixed_spec& spec,
                                                  const_matrix_view<double> x) {
  return search_from_spec(spec, x, [&](const mixed_spec& s) { return mixed_density_cv_ml(s, x); });
}

}  // namespace kf
