#include "kernelformer/regression/bandwidth.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernelformer/progress.hpp"

namespace kf {
namespace {

// numpy.percentile's default (linear interpolation between order statistics), reordering v in
// place: the two order statistics by selection (O(n), no copy; the same values as a full sort).
// The value at fractional order position pos of v (linear interpolation), reordering v.
double percentile_at(std::vector<double>& v, double pos) {
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(lo);
  std::nth_element(v.begin(), at, v.end());
  const double a = *at;
  const double b = lo + 1 < v.size() ? *std::min_element(at + 1, v.end()) : a;
  return a + (pos - double(lo)) * (b - a);
}

double percentile(std::vector<double>& v, double q) {
  return percentile_at(v, q / 100.0 * double(v.size() - 1));
}

constexpr int kGrid = 41;
constexpr double kScaleLo = 0.01, kScaleHi = 10.0;
constexpr int kGoldenIters = 40;
constexpr int kSweeps = 2;
constexpr int kNelderMeadIters = 200;

}  // namespace

std::string bandwidth_criterion_name(bandwidth_criterion c) {
  switch (c) {
    case bandwidth_criterion::fixed:
      return "fixed";
    case bandwidth_criterion::silverman:
      return "silverman";
    case bandwidth_criterion::scott:
      return "scott";
    case bandwidth_criterion::loo_cv:
      return "loo_cv";
    case bandwidth_criterion::gcv:
      return "gcv";
    case bandwidth_criterion::aicc:
      return "aicc";
    case bandwidth_criterion::cv_ml:
      return "cv_ml";
    case bandwidth_criterion::cv_ls:
      return "cv_ls";
  }
  return "?";
}

bandwidth_criterion bandwidth_criterion_parse(const std::string& t) {
  if (t == "silverman") return bandwidth_criterion::silverman;
  if (t == "scott") return bandwidth_criterion::scott;
  if (t == "cv" || t == "loo-cv" || t == "cv_ls_reg") return bandwidth_criterion::loo_cv;
  if (t == "gcv") return bandwidth_criterion::gcv;
  if (t == "aic" || t == "aicc") return bandwidth_criterion::aicc;
  if (t == "cv-ml" || t == "cv_ml") return bandwidth_criterion::cv_ml;
  if (t == "cv-ls" || t == "cv_ls") return bandwidth_criterion::cv_ls;
  throw std::invalid_argument(fmt::format(
      "unknown bandwidth selector '{}' (silverman, scott, cv, gcv, aic, cv-ml, cv-ls, or a "
      "positive number)",
      t));
}

std::vector<double> bandwidth_rule(const_matrix_view<double> x, bandwidth_criterion rule) {
  const index n = x.rows, d = x.cols;
  if (n < 2) throw std::invalid_argument("a bandwidth rule needs at least 2 points");
  const double dd = double(d);
  const double factor = rule == bandwidth_criterion::scott
                            ? (d == 1 ? 1.059 : 1.0)
                            : (d == 1 ? 0.9 : std::pow(4.0 / (dd + 2.0), 1.0 / (dd + 4.0)));
  const double npow = std::pow(double(n), d == 1 ? -0.2 : -1.0 / (dd + 4.0));
  std::vector<double> h(static_cast<std::size_t>(d));
  for (index c = 0; c < d; ++c) {
    std::vector<double> col(static_cast<std::size_t>(n));
    double mean = 0;
    for (index i = 0; i < n; ++i) mean += (col[static_cast<std::size_t>(i)] = x(i, c));
    mean /= double(n);
    double ss = 0;
    for (double v : col) ss += (v - mean) * (v - mean);
    const double sd = std::sqrt(ss / double(n - 1));
    // The 75th percentile's selection leaves the lower quartile in the part before it.
    const double q75 = percentile(col, 75);
    // (the order statistics at ⌊pos25⌋ and ⌊pos25⌋ + 1 are among the ⌊pos75⌋ + 1 smallest).
    const auto lo75 = static_cast<std::size_t>(std::floor(0.75 * double(n - 1)));
    if (static_cast<std::size_t>(std::floor(0.25 * double(n - 1))) + 1 <= lo75)
      col.resize(lo75 + 1);
    const double q25 = percentile_at(col, 25.0 / 100.0 * double(n - 1));
    const double iqr = (q75 - q25) / 1.349;
    const double a = iqr > 0 ? std::min(sd, iqr) : sd;
    if (!(a > 0))
      throw std::invalid_argument(
          fmt::format("column {} of x is constant: no bandwidth can be chosen (all x equal)", c));
    h[static_cast<std::size_t>(c)] = factor * a * npow;
  }
  return h;
}

bandwidth_search_result bandwidth_search(const bandwidth_objective& objective,
                                         const std::vector<double>& reference,
                                         const std::string& criterion_name,
                                         const progress_fn& progress) {
  const int total =
      kGrid + kGoldenIters +
      (reference.size() > 1 ? kSweeps * int(reference.size()) * 24 + kNelderMeadIters : 0);
  int done = 0;
  // With a progress_fn the caller draws the search's progress; the step keeps the criterion
  // evaluations' own steps (binning, transforms) quiet either way.
  progress_step step(fmt::format("choosing the bandwidth ({})", criterion_name), total,
                     static_cast<bool>(progress));
  auto tick = [&] {
    ++done;
    if (progress) progress(std::min(done, total), total);
    step.set(std::min(done, total));
  };
  auto scaled = [&](double s) {
    std::vector<double> h = reference;
    for (double& v : h) v *= s;
    return h;
  };
  auto eval = [&](const std::vector<double>& h) {
    const double v = objective(h);
    tick();
    return std::isnan(v) ? std::numeric_limits<double>::infinity() : v;
  };

  bandwidth_search_result r;
  const double l0 = std::log(kScaleLo), l1 = std::log(kScaleHi);
  int best = -1;
  for (int g = 0; g < kGrid; ++g) {
    const double s = std::exp(l0 + (l1 - l0) * g / (kGrid - 1));
    const auto h = scaled(s);
    r.curve.push_back({s, h, eval(h)});
    if (std::isfinite(r.curve.back().value) &&
        (best < 0 || r.curve.back().value < r.curve[static_cast<std::size_t>(best)].value))
      best = g;
  }
  if (best < 0)
    throw std::invalid_argument(fmt::format(
        "bandwidth selection by {}: the criterion is infinite or undefined for every bandwidth "
        "from {:g} to {:g} times the rule of thumb (too few points, or a compact kernel that "
        "leaves points alone)",
        criterion_name, kScaleLo, kScaleHi));
  r.at_boundary = best == 0 || best == kGrid - 1;
  // Golden-section search in log s between the best grid point's neighbours.
  double a = l0 + (l1 - l0) * std::max(best - 1, 0) / (kGrid - 1);
  double b = l0 + (l1 - l0) * std::min(best + 1, kGrid - 1) / (kGrid - 1);
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double c = b - phi * (b - a), d = a + phi * (b - a);
  double fc = eval(scaled(std::exp(c))), fd = eval(scaled(std::exp(d)));
  for (int it = 0; it < kGoldenIters - 2 && b - a > 1e-4; ++it) {
    if (fc < fd) {
      b = d, d = c, fd = fc;
      c = b - phi * (b - a);
      fc = eval(scaled(std::exp(c)));
    } else {
      a = c, c = d, fc = fd;
      d = a + phi * (b - a);
      fd = eval(scaled(std::exp(d)));
    }
  }
  double best_s = r.curve[static_cast<std::size_t>(best)].scale;
  double best_v = r.curve[static_cast<std::size_t>(best)].value;
  for (auto [l, v] : {std::pair{c, fc}, std::pair{d, fd}})
    if (v < best_v) best_v = v, best_s = std::exp(l);
  r.bandwidth = scaled(best_s);
  r.value = best_v;
  // d > 1: coordinate sweeps, each column's bandwidth by golden section in log over [×¼, ×4].
  for (int sweep = 0; sweep < kSweeps && reference.size() > 1; ++sweep)
    for (std::size_t col = 0; col < reference.size(); ++col) {
      auto at = [&](double lf) {
        auto h = r.bandwidth;
        h[col] *= std::exp(lf);
        return h;
      };
      double lo = std::log(0.25), hi = std::log(4.0);
      double x1 = hi - phi * (hi - lo), x2 = lo + phi * (hi - lo);
      double f1 = eval(at(x1)), f2 = eval(at(x2));
      for (int it = 0; it < 22; ++it) {
        if (f1 < f2) {
          hi = x2, x2 = x1, f2 = f1;
          x1 = hi - phi * (hi - lo);
          f1 = eval(at(x1));
        } else {
          lo = x1, x1 = x2, f1 = f2;
          x2 = lo + phi * (hi - lo);
          f2 = eval(at(x2));
        }
      }
      const double lf = f1 < f2 ? x1 : x2, fv = std::min(f1, f2);
      if (fv < r.value) {
        r.bandwidth = at(lf);
        r.value = fv;
      }
    }
  // d > 1: polish with Nelder–Mead in log h (the sweeps can stall in a curved valley).
  if (reference.size() > 1) {
    const std::size_t dim = reference.size();
    // Log bandwidths are kept within [1e-3, 1e3] × the reference: a criterion that keeps
    // improving as one bandwidth shrinks (tied data: a leave-one-out density grows without bound)
    // would otherwise walk the simplex to h = 0.
    auto from_log = [&](std::vector<double>& l) {
      std::vector<double> h(l.size());
      for (std::size_t i = 0; i < l.size(); ++i) {
        const double ref = std::log(reference[i]);
        l[i] = std::clamp(l[i], ref - std::log(1e3), ref + std::log(1e3));
        h[i] = std::exp(l[i]);
      }
      return h;
    };
    std::vector<std::vector<double>> pts(dim + 1, std::vector<double>(dim));
    std::vector<double> fv(dim + 1);
    for (std::size_t i = 0; i <= dim; ++i) {
      for (std::size_t j = 0; j < dim; ++j)
        pts[i][j] = std::log(r.bandwidth[j]) + (i == j + 1 ? 0.05 : 0.0);
      fv[i] = i == 0 ? r.value : eval(from_log(pts[i]));
    }
    for (int it = 0; it < kNelderMeadIters; ++it) {
      std::vector<std::size_t> ord(dim + 1);
      for (std::size_t i = 0; i <= dim; ++i) ord[i] = i;
      std::sort(ord.begin(), ord.end(),
                [&](std::size_t a2, std::size_t b2) { return fv[a2] < fv[b2]; });
      const std::size_t lo = ord[0], hi = ord[dim], nh = ord[dim - 1];
      if (std::abs(fv[hi] - fv[lo]) <= 1e-12 * std::abs(fv[lo])) break;
      std::vector<double> cen(dim, 0.0);
      for (std::size_t i = 0; i <= dim; ++i)
        if (i != hi)
          for (std::size_t j = 0; j < dim; ++j) cen[j] += pts[i][j] / double(dim);
      auto along = [&](double t) {
        std::vector<double> p2(dim);
        for (std::size_t j = 0; j < dim; ++j) p2[j] = cen[j] + t * (pts[hi][j] - cen[j]);
        return p2;
      };
      auto xr = along(-1.0);
      const double fr = eval(from_log(xr));
      if (fr < fv[lo]) {
        auto xe = along(-2.0);
        const double fe = eval(from_log(xe));
        if (fe < fr)
          pts[hi] = xe, fv[hi] = fe;
        else
          pts[hi] = xr, fv[hi] = fr;
      } else if (fr < fv[nh]) {
        pts[hi] = xr, fv[hi] = fr;
      } else {
        auto xc = along(0.5);
        const double fc2 = eval(from_log(xc));
        if (fc2 < fv[hi]) {
          pts[hi] = xc, fv[hi] = fc2;
        } else {  // shrink toward the best point
          for (std::size_t i = 0; i <= dim; ++i) {
            if (i == lo) continue;
            for (std::size_t j = 0; j < dim; ++j)
              pts[i][j] = pts[lo][j] + 0.5 * (pts[i][j] - pts[lo][j]);
            fv[i] = eval(from_log(pts[i]));
          }
        }
      }
    }
    const std::size_t best_i =
        static_cast<std::size_t>(std::min_element(fv.begin(), fv.end()) - fv.begin());
    if (fv[best_i] < r.value) {
      r.value = fv[best_i];
      r.bandwidth = from_log(pts[best_i]);
    }
    for (std::size_t i = 0; i < dim; ++i)  // stopped by the clamp: an edge of the search
      if (std::abs(std::log(r.bandwidth[i] / reference[i])) > std::log(1e3) - 1e-9)
        r.at_boundary = true;
  }
  if (progress) progress(total, total);
  for (double h : r.bandwidth)
    if (!(std::isfinite(h) && h > 0))
      throw std::logic_error("bandwidth search produced a non-positive bandwidth");
  return r;
}

}  // namespace kf
