// Product kernels on mixed data, as statsmodels' gpke defines them (the formulas and conventions:
// include/kernelformer/regression/mixed_kernel.hpp). A row's weights are built column by column
// as log K(q, x_j) = Σ_k log L_k, then summed with the row's maximum factored out.
#include "kernelformer/regression/mixed_kernel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>

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
  double inv_2h2 = 0;       // continuous: 1 / (2 h²)
  double log_same = 0;      // categorical: log(1 − λ), the weight at equal codes
  double log_diff = 0;      // unordered: log(λ / (c − 1)); ordered: log((1 − λ) / 2)
  double log_diff_loo = 0;  // unordered, counted levels: log(λ / (c − 2)), see `singleton`
  double log_lambda = 0;    // ordered: the weight falls by λ per unit of |x − x_j|
  // Unordered with counted levels: x_ik is its level's only point, so a sum leaving out row i
  // sees c − 1 levels (statsmodels counts them among the points it sums over).
  std::vector<unsigned char> singleton;
};

struct prepared {
  std::vector<column_kernel> cols;
  double log_norm = 0;  // −Σ_continuous (log h + log √(2π)): the density's normalization
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
void prepare_unordered(column_kernel& col, const mixed_spec& spec, const_matrix_view<double> x,
                       index k, bool loo, const char* what) {
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
  col.singleton.assign(std::size_t(x.rows), 0);
  for (index i = 0; i < x.rows; ++i) {
    if (counts.at(x(i, k)) != 1) continue;
    if (c == 2)
      fail(what, fmt::format("unordered column {}: code {} occurs once of 2 levels, so leaving "
                             "it out leaves one level (statsmodels divides by c - 1 = 0 there); "
                             "give spec.levels[{}] = 2",
                             k + 1, x(i, k), k));
    col.singleton[std::size_t(i)] = 1;
  }
  col.log_diff_loo = std::log(lambda / (double(c) - 2));
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
      prepare_unordered(col, spec, x, k, loo, what);
    } else {
      if (!(b >= 0 && b <= 1))
        fail(what, fmt::format("ordered column {}: lambda = {} is outside [0, 1]", k + 1, b));
      col.log_same = std::log(1 - b);
      col.log_diff = std::log((1 - b) / 2);
      col.log_lambda = std::log(b);
    }
  }
  return p;
}

// lw[j] = log K(q, x_j) for every row j of x. loo_row ≥ 0: the sum leaves that row out (its
// weight −inf), and unordered columns with counted levels take the left-out row's c.
void row_log_weights(const prepared& p, const double* q, const_matrix_view<double> x, index loo_row,
                     std::span<double> lw) {
  std::fill(lw.begin(), lw.end(), 0.0);
  const auto n = static_cast<std::size_t>(x.rows);
  for (std::size_t k = 0; k < p.cols.size(); ++k) {
    const auto& c = p.cols[k];
    const double qk = q[k];
    const double* xk = x.data + k;
    const auto ld = static_cast<std::size_t>(x.ld);
    if (c.type == column_type::continuous) {
      for (std::size_t j = 0; j < n; ++j) {
        const double d = qk - xk[j * ld];
        lw[j] -= d * d * c.inv_2h2;
      }
    } else if (c.type == column_type::unordered) {
      const bool alone = loo_row >= 0 && !c.singleton.empty() && c.singleton[std::size_t(loo_row)];
      const double off = alone ? c.log_diff_loo : c.log_diff;
      for (std::size_t j = 0; j < n; ++j) lw[j] += xk[j * ld] == qk ? c.log_same : off;
    } else {
      for (std::size_t j = 0; j < n; ++j) {
        const double d = std::abs(qk - xk[j * ld]);
        lw[j] += d == 0 ? c.log_same : c.log_diff + d * c.log_lambda;
      }
    }
  }
  if (loo_row >= 0) lw[std::size_t(loo_row)] = -kInf;
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

// out[i] = f(i, sums of row i), rows of `queries` against x, parallel over rows.
template <class F>
std::vector<double> per_row(const prepared& p, const_matrix_view<double> x,
                            const_matrix_view<double> queries, bool loo, std::span<const double> y,
                            F f) {
  std::vector<double> out(std::size_t(queries.rows));
#pragma omp parallel
  {
    std::vector<double> lw(std::size_t(x.rows));
#pragma omp for schedule(static)
    for (index i = 0; i < queries.rows; ++i) {
      row_log_weights(p, queries.row(i), x, loo ? i : -1, lw);
      out[std::size_t(i)] = f(i, sum_row(lw, y));
    }
  }
  return out;
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
  return per_row(p, x, xq, false, y, [](index, const row_sums& r) {
    return r.m == -kInf ? std::numeric_limits<double>::quiet_NaN() : r.t / r.s;
  });
}

double mixed_nw_cv_ls(const mixed_spec& spec, const_matrix_view<double> x,
                      std::span<const double> y) {
  constexpr const char* what = "mixed_nw_cv_ls";
  check_cv_rows(x, what);
  const prepared p = prepare(spec, x, true, what);
  check_y(y, x, what);
  const auto r2 = per_row(p, x, x, true, y, [&](index i, const row_sums& r) {
    if (r.m == -kInf) return kInf;
    const double e = y[std::size_t(i)] - r.t / r.s;
    return e * e;
  });
  // Summed in row order: the same number whatever the thread count.
  return std::accumulate(r2.begin(), r2.end(), 0.0) / double(x.rows);
}

std::vector<double> mixed_density(const mixed_spec& spec, const_matrix_view<double> x,
                                  const_matrix_view<double> xq) {
  constexpr const char* what = "mixed_density";
  const prepared p = prepare(spec, x, false, what);
  check_rows(spec, xq, what, "xq");
  const double log_scale = p.log_norm - std::log(double(x.rows));
  return per_row(p, x, xq, false, {}, [&](index, const row_sums& r) {
    return r.m == -kInf ? 0.0 : std::exp(r.m + std::log(r.s) + log_scale);
  });
}

double mixed_density_cv_ml(const mixed_spec& spec, const_matrix_view<double> x) {
  constexpr const char* what = "mixed_density_cv_ml";
  check_cv_rows(x, what);
  const prepared p = prepare(spec, x, true, what);
  const auto log_f = per_row(p, x, x, true, {}, [&](index, const row_sums& r) {
    return r.m == -kInf ? -kInf : r.m + std::log(r.s) + p.log_norm;
  });
  double sum = 0;
  for (const double v : log_f) sum += v;
  return -sum;
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

// The search's coordinates: h = h₀ e^t (continuous), λ = upper · logistic(t) (categorical),
// t clamped to [−40, 40] (h within 1e±17 of the start; λ within 1e-17 of its range's ends).
struct box_map {
  std::vector<column_type> types;
  std::vector<double> scale;  // h₀ or the upper end of λ's range
  static constexpr double kMaxT = 40;

  double bandwidth(std::size_t k, double t) const {
    t = std::clamp(t, -kMaxT, kMaxT);
    return types[k] == column_type::continuous ? scale[k] * std::exp(t)
                                               : scale[k] / (1 + std::exp(-t));
  }
  double coordinate(std::size_t k, double b) const {
    if (types[k] == column_type::continuous) return std::log(b / scale[k]);
    const double u = b / scale[k];
    return u <= 0 ? -kMaxT : u >= 1 ? kMaxT : std::clamp(std::log(u / (1 - u)), -kMaxT, kMaxT);
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
// t0 with one initial step per coordinate; stops when the simplex spans < 1e-9 in t and its
// values agree to 1e-14 relative, or after max_evals.
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
      for (std::size_t k = 0; k < d; ++k) span = std::max(span, std::abs(pts[i][k] - pts[lo][k]));
    if (span < 1e-9 && std::abs(fv[hi] - fv[lo]) <= 1e-14 * std::abs(fv[lo]) + 1e-300) break;
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
// t ± 1.5 (skipped at an end of the range, where t is clamped). Keeps only improvements (f does).
void refine_coordinate(tracked_objective& f, const box_map& map, std::size_t k) {
  if (map.types[k] != column_type::continuous)
    for (const double end : {0.0, map.scale[k]}) {
      auto bw = f.best.bandwidth;
      bw[k] = end;
      f(bw);
    }
  const double t = map.coordinate(k, f.best.bandwidth[k]);
  if (std::abs(t) >= box_map::kMaxT) return;
  const auto at = [&](double s) {
    auto bw = f.best.bandwidth;
    bw[k] = map.bandwidth(k, s);
    return f(bw);
  };
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = t - 1.5, b = t + 1.5, c = b - g * (b - a), e = a + g * (b - a);
  double fc = at(c), fe = at(e);
  for (int it = 0; it < 36; ++it) {
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
    t0[k] = std::log(u / (1 - u));
    step[k] = 1.0;
  }
  tracked_objective f{objective};
  const int budget = 300 * int(d + 1);
  nelder_mead(f, map, t0, step, budget);
  std::vector<double> t(d);
  for (std::size_t k = 0; k < d; ++k) t[k] = map.coordinate(k, f.best.bandwidth[k]);
  nelder_mead(f, map, t, step, budget);  // a restart: a fresh simplex from the best point
  for (int pass = 0; pass < 3; ++pass) {
    const double before = f.best.objective;
    for (std::size_t k = 0; k < d; ++k) refine_coordinate(f, map, k);
    if (!(f.best.objective < before - 1e-13 * std::abs(before))) break;
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
