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
constexpr int kSweepIters = 22;  // golden-section iterations per column and sweep
constexpr int kNelderMeadIters = 200;
// The search stops refining a bandwidth once it moves by less than 0.1% (log h within 1e-3): the
// criterion is flat there (quadratic in the error), so further digits change nothing a user sees
// and cost evaluations — on noise-free data, dozens of evaluations at the smallest bandwidths.
constexpr double kLogTolerance = 1e-3;
// The simplex polishes several bandwidths together to 1e-4 in log h: it ends where a sweep's
// golden sections cannot (a valley along a diagonal), at least as low as statsmodels' optimizer.
constexpr double kSimplexLogTolerance = 1e-4;

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
    case bandwidth_criterion::sj:
      return "sj";
    case bandwidth_criterion::sj_dpi:
      return "sj_dpi";
    case bandwidth_criterion::isj:
      return "isj";
    case bandwidth_criterion::dpi:
      return "dpi";
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
  if (t == "sj" || t == "sj-ste") return bandwidth_criterion::sj;
  if (t == "sj-dpi" || t == "sj_dpi") return bandwidth_criterion::sj_dpi;
  if (t == "isj") return bandwidth_criterion::isj;
  if (t == "dpi" || t == "dpill") return bandwidth_criterion::dpi;
  throw std::invalid_argument(fmt::format(
      "unknown bandwidth selector '{}' (silverman, scott, cv, gcv, aic, dpi, cv-ml, cv-ls, sj, "
      "sj-dpi, isj, or a positive number)",
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

namespace {

// The search's criterion evaluations: each one ticks the progress bar (kGrid + kGoldenIters,
// then for d > 1 the sweeps' and the simplex's budget) and maps NaN to +inf, so a bandwidth the
// criterion cannot score is simply worse.
class criterion_evaluator {
 public:
  criterion_evaluator(const bandwidth_objective& objective, const std::vector<double>& reference,
                      const std::string& criterion_name, const progress_fn& progress)
      : objective_(objective),
        reference_(reference),
        progress_(progress),
        total_(kGrid + kGoldenIters +
               (reference.size() > 1
                    ? kSweeps * int(reference.size()) * (kSweepIters + 2) + kNelderMeadIters
                    : 0)),
        // With a progress_fn the caller draws the search's progress; the step keeps the
        // criterion evaluations' own steps (binning, transforms) quiet either way.
        step_(fmt::format("choosing the bandwidth ({})", criterion_name), total_,
              static_cast<bool>(progress)) {}

  // The criterion at bandwidth h (+inf where it is NaN).
  double operator()(const std::vector<double>& h) {
    const double v = objective_(h);
    ++done_;
    if (progress_) progress_(std::min(done_, total_), total_);
    step_.set(std::min(done_, total_));
    return std::isnan(v) ? std::numeric_limits<double>::infinity() : v;
  }
  // h = s · h_ref.
  std::vector<double> scaled(double s) const {
    std::vector<double> h = reference_;
    for (double& v : h) v *= s;
    return h;
  }
  const std::vector<double>& reference() const { return reference_; }
  void finish() const {
    if (progress_) progress_(total_, total_);
  }
  int evaluations() const { return done_; }

 private:
  const bandwidth_objective& objective_;
  const std::vector<double>& reference_;
  const progress_fn& progress_;
  int total_;
  int done_ = 0;
  progress_step step_;
};

// The last two interior points of a golden-section search (x1 < x2) and their values.
struct golden_bracket {
  double x1, f1, x2, f2;
};

// Golden-section minimization of f over [lo, hi]: two evaluations, then one per iteration (at most
// iters) while the bracket is wider than tol.
template <class F>
golden_bracket golden_section(F&& f, double lo, double hi, int iters, double tol) {
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double x1 = hi - phi * (hi - lo), x2 = lo + phi * (hi - lo);
  double f1 = f(x1), f2 = f(x2);
  for (int it = 0; it < iters && hi - lo > tol; ++it) {
    if (f1 < f2) {
      hi = x2, x2 = x1, f2 = f1;
      x1 = hi - phi * (hi - lo);
      f1 = f(x1);
    } else {
      lo = x1, x1 = x2, f1 = f2;
      x2 = lo + phi * (hi - lo);
      f2 = f(x2);
    }
  }
  return {x1, f1, x2, f2};
}

// Step 1: the criterion on kGrid log-spaced scales s ∈ [kScaleLo, kScaleHi] into r.curve; returns
// the best grid index and sets r.at_boundary when it is an end. Throws if no value is finite.
int grid_scan(criterion_evaluator& eval, const std::string& criterion_name,
              bandwidth_search_result& r) {
  const double l0 = std::log(kScaleLo), l1 = std::log(kScaleHi);
  int best = -1;
  for (int g = 0; g < kGrid; ++g) {
    const double s = std::exp(l0 + (l1 - l0) * g / (kGrid - 1));
    const auto h = eval.scaled(s);
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
  return best;
}

// Step 2: golden section in log s between the best grid point's neighbours (kGoldenIters
// evaluations at most); sets r.bandwidth and r.value to the best of the grid point and the
// bracket's last two points.
void refine_scale(criterion_evaluator& eval, int best, bandwidth_search_result& r) {
  const double l0 = std::log(kScaleLo), l1 = std::log(kScaleHi);
  const double a = l0 + (l1 - l0) * std::max(best - 1, 0) / (kGrid - 1);
  const double b = l0 + (l1 - l0) * std::min(best + 1, kGrid - 1) / (kGrid - 1);
  const golden_bracket g = golden_section([&](double l) { return eval(eval.scaled(std::exp(l))); },
                                          a, b, kGoldenIters - 2, kLogTolerance);
  double best_s = r.curve[static_cast<std::size_t>(best)].scale;
  double best_v = r.curve[static_cast<std::size_t>(best)].value;
  for (auto [l, v] : {std::pair{g.x1, g.f1}, std::pair{g.x2, g.f2}})
    if (v < best_v) best_v = v, best_s = std::exp(l);
  r.bandwidth = eval.scaled(best_s);
  r.value = best_v;
}

// Step 3 (d > 1): kSweeps coordinate sweeps, each column's bandwidth by golden section in log
// over [×¼, ×4] around the current r.bandwidth, kept where it improves r.value.
void coordinate_sweeps(criterion_evaluator& eval, bandwidth_search_result& r) {
  const std::size_t dim = eval.reference().size();
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    const auto before = r.bandwidth;
    for (std::size_t col = 0; col < dim; ++col) {
      auto at = [&](double lf) {
        auto h = r.bandwidth;
        h[col] *= std::exp(lf);
        return h;
      };
      const golden_bracket g =
          golden_section([&](double lf) { return eval(at(lf)); }, std::log(0.25), std::log(4.0),
                         kSweepIters, kLogTolerance);
      const double lf = g.f1 < g.f2 ? g.x1 : g.x2, fv = std::min(g.f1, g.f2);
      if (fv < r.value) {
        r.bandwidth = at(lf);
        r.value = fv;
      }
    }
    double moved = 0;  // the sweep's largest change of a bandwidth, in log
    for (std::size_t col = 0; col < dim; ++col)
      moved = std::max(moved, std::abs(std::log(r.bandwidth[col] / before[col])));
    if (moved < kLogTolerance) break;  // a second sweep would find the same point
  }
}

// A Nelder–Mead simplex in log h: dim + 1 points and their criterion values.
struct log_simplex {
  std::vector<std::vector<double>> pts;
  std::vector<double> fv;
};

// Log bandwidths are kept within [1e-3, 1e3] × the reference: a criterion that keeps improving as
// one bandwidth shrinks (tied data: a leave-one-out density grows without bound) would otherwise
// walk the simplex to h = 0. Clamps l in place and returns h = exp(l).
std::vector<double> clamped_exp(const std::vector<double>& reference, std::vector<double>& l) {
  std::vector<double> h(l.size());
  for (std::size_t i = 0; i < l.size(); ++i) {
    const double ref = std::log(reference[i]);
    l[i] = std::clamp(l[i], ref - std::log(1e3), ref + std::log(1e3));
    h[i] = std::exp(l[i]);
  }
  return h;
}

// One Nelder–Mead iteration (reflect, expand, contract, or shrink toward the best point); returns
// false without evaluating when the simplex's values agree to 1e-12 (converged).
bool nelder_mead_step(criterion_evaluator& eval, log_simplex& s) {
  auto& pts = s.pts;
  auto& fv = s.fv;
  const std::size_t dim = pts.size() - 1;
  auto from_log = [&](std::vector<double>& l) { return clamped_exp(eval.reference(), l); };
  std::vector<std::size_t> ord(dim + 1);
  for (std::size_t i = 0; i <= dim; ++i) ord[i] = i;
  std::sort(ord.begin(), ord.end(),
            [&](std::size_t a2, std::size_t b2) { return fv[a2] < fv[b2]; });
  const std::size_t lo = ord[0], hi = ord[dim], nh = ord[dim - 1];
  if (std::abs(fv[hi] - fv[lo]) <= 1e-12 * std::abs(fv[lo])) return false;
  double diameter = 0;  // the simplex's extent in log h: below the tolerance, it has converged
  for (std::size_t i = 0; i <= dim; ++i)
    for (std::size_t j = 0; j < dim; ++j)
      diameter = std::max(diameter, std::abs(pts[i][j] - pts[lo][j]));
  if (diameter < kSimplexLogTolerance) return false;
  std::vector<double> cen(dim, 0.0);  // centroid of all points but the worst
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
    const double fc = eval(from_log(xc));
    if (fc < fv[hi]) {
      pts[hi] = xc, fv[hi] = fc;
    } else {  // shrink toward the best point
      for (std::size_t i = 0; i <= dim; ++i) {
        if (i == lo) continue;
        for (std::size_t j = 0; j < dim; ++j)
          pts[i][j] = pts[lo][j] + 0.5 * (pts[i][j] - pts[lo][j]);
        fv[i] = eval(from_log(pts[i]));
      }
    }
  }
  return true;
}

// Step 4 (d > 1): polish r with Nelder–Mead in log h (the sweeps can stall in a curved valley),
// from a simplex of r.bandwidth and its points 5% larger in one column each. Sets r.at_boundary
// when the best point was stopped by the clamp (an edge of the search).
void nelder_mead_polish(criterion_evaluator& eval, bandwidth_search_result& r) {
  const std::vector<double>& reference = eval.reference();
  const std::size_t dim = reference.size();
  log_simplex s{std::vector<std::vector<double>>(dim + 1, std::vector<double>(dim)),
                std::vector<double>(dim + 1)};
  for (std::size_t i = 0; i <= dim; ++i) {
    for (std::size_t j = 0; j < dim; ++j)
      s.pts[i][j] = std::log(r.bandwidth[j]) + (i == j + 1 ? 0.05 : 0.0);
    s.fv[i] = i == 0 ? r.value : eval(clamped_exp(reference, s.pts[i]));
  }
  r.polish_converged = false;
  for (int it = 0; it < kNelderMeadIters && !r.polish_converged; ++it)
    r.polish_converged = !nelder_mead_step(eval, s);
  const std::size_t best_i =
      static_cast<std::size_t>(std::min_element(s.fv.begin(), s.fv.end()) - s.fv.begin());
  if (s.fv[best_i] < r.value) {
    r.value = s.fv[best_i];
    r.bandwidth = clamped_exp(reference, s.pts[best_i]);
  }
  for (std::size_t i = 0; i < dim; ++i)  // stopped by the clamp: an edge of the search
    if (std::abs(std::log(r.bandwidth[i] / reference[i])) > std::log(1e3) - 1e-9)
      r.at_boundary = true;
}

}  // namespace

bandwidth_search_result bandwidth_search(const bandwidth_objective& objective,
                                         const std::vector<double>& reference,
                                         const std::string& criterion_name,
                                         const progress_fn& progress) {
  criterion_evaluator eval(objective, reference, criterion_name, progress);
  bandwidth_search_result r;
  const int best = grid_scan(eval, criterion_name, r);
  refine_scale(eval, best, r);
  if (reference.size() > 1) {
    coordinate_sweeps(eval, r);
    nelder_mead_polish(eval, r);
  }
  eval.finish();
  r.evaluations = eval.evaluations();
  for (double h : r.bandwidth)
    if (!(std::isfinite(h) && h > 0))
      throw std::logic_error("bandwidth search produced a non-positive bandwidth");
  return r;
}

}  // namespace kf
