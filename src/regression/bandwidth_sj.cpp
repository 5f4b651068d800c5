// Sheather & Jones (1991) plug-in bandwidths (regression/bandwidth.hpp), computed the way R's
// bw.SJ computes them so the numbers agree: the pairwise distances counted in nb bins, the
// density-derivative functionals from those counts, and the solve-the-equation root by Brent's
// method with R's uniroot tolerance.
#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "kernelformer/regression/bandwidth.hpp"

namespace kf {
namespace {

// The counts of pairwise bin distances |i − j| (nb bins of width d = 1.01·range/nb), as R's
// bw_pair_cnts: above nb/2 points the points are binned first (O(n + nb²)), else every pair is
// counted (O(n²)). R's binned path bins trunc(|x|/d)·sign(x) shifted to start at 1 and drops
// bins beyond nb (tabulate), which this reproduces.
struct pair_counts {
  double d = 0;
  std::vector<double> cnt;
};
pair_counts count_pairs(std::span<const double> x, index nb) {
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  pair_counts p;
  p.cnt.assign(static_cast<std::size_t>(nb), 0.0);
  const auto n = static_cast<index>(x.size());
  p.d = (*hi - *lo) * 1.01 / double(nb);
  if (2 * n > nb) {
    std::vector<double> bin(x.size());
    double first = INFINITY;
    for (std::size_t i = 0; i < x.size(); ++i) {
      bin[i] = std::trunc(std::abs(x[i]) / p.d) * (x[i] > 0 ? 1.0 : (x[i] < 0 ? -1.0 : 0.0));
      first = std::min(first, bin[i]);
    }
    std::vector<double> w(static_cast<std::size_t>(nb), 0.0);
    for (double b : bin) {
      const double k = b - first;  // 0-based; R's tabulate drops values beyond nb
      if (k < double(nb)) w[static_cast<std::size_t>(k)] += 1;
    }
    for (std::size_t i = 0; i < w.size(); ++i) {
      p.cnt[0] += w[i] * (w[i] - 1.0);
      for (std::size_t j = 0; j < i; ++j) p.cnt[i - j] += w[i] * w[j];
    }
    p.cnt[0] *= 0.5;
  } else {
    std::vector<long long> bin(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) bin[i] = static_cast<long long>(x[i] / p.d);
    for (std::size_t i = 1; i < x.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        p.cnt[static_cast<std::size_t>(std::llabs(bin[i] - bin[j]))] += 1.0;
  }
  return p;
}

// φ4 and φ6: the estimates of ∫f''² and −∫f'''² with a gaussian kernel of bandwidth h, from the
// pair counts (R's bw_phi4, bw_phi6: the Hermite polynomial of the kernel's 4th or 6th
// derivative over the pairs, plus the diagonal's; terms beyond δ² = 1000 are zero in double).
double phi(const pair_counts& p, index n, double h, int order) {
  double sum = 0;
  for (std::size_t i = 0; i < p.cnt.size(); ++i) {
    double delta = double(i) * p.d / h;
    delta *= delta;
    if (delta >= 1000) break;
    const double hermite = order == 4
                               ? delta * delta - 6 * delta + 3
                               : delta * delta * delta - 15 * delta * delta + 45 * delta - 15;
    sum += std::exp(-delta / 2) * hermite * p.cnt[i];
  }
  sum = 2 * sum + double(n) * (order == 4 ? 3.0 : -15.0);
  return sum / (double(n) * double(n - 1) * std::pow(h, double(order + 1)) *
                std::sqrt(2 * std::numbers::pi));
}
double phi4(const pair_counts& p, index n, double h) { return phi(p, n, h, 4); }
double phi6(const pair_counts& p, index n, double h) { return phi(p, n, h, 6); }

// Brent's root finder (Brent 1973, the netlib zeroin that R's uniroot calls) on [a, b] with
// f(a), f(b) of opposite signs, to the absolute tolerance tol.
double brent_root(const std::function<double(double)>& f, double a, double b, double fa, double fb,
                  double tol) {
  double c = a, fc = fa;
  if (fa == 0) return a;
  if (fb == 0) return b;
  for (int it = 0; it <= 1000; ++it) {
    const double prev_step = b - a;
    if (std::abs(fc) < std::abs(fb)) {
      a = b, b = c, c = a;
      fa = fb, fb = fc, fc = fa;
    }
    const double tol_act = 2 * DBL_EPSILON * std::abs(b) + tol / 2;
    double new_step = (c - b) / 2;
    if (std::abs(new_step) <= tol_act || fb == 0) return b;
    if (std::abs(prev_step) >= tol_act && std::abs(fa) > std::abs(fb)) {
      double p, q;
      const double cb = c - b;
      if (a == c) {  // two points: the secant
        const double t1 = fb / fa;
        p = cb * t1;
        q = 1.0 - t1;
      } else {  // inverse quadratic interpolation
        const double qa = fa / fc, t1 = fb / fc, t2 = fb / fa;
        p = t2 * (cb * qa * (qa - t1) - (b - a) * (t1 - 1.0));
        q = (qa - 1.0) * (t1 - 1.0) * (t2 - 1.0);
      }
      if (p > 0)
        q = -q;
      else
        p = -p;
      if (p < (0.75 * cb * q - std::abs(tol_act * q) / 2) && p < std::abs(prev_step * q / 2))
        new_step = p / q;
    }
    if (std::abs(new_step) < tol_act) new_step = new_step > 0 ? tol_act : -tol_act;
    a = b, fa = fb;
    b += new_step, fb = f(b);
    if ((fb > 0 && fc > 0) || (fb < 0 && fc < 0)) c = a, fc = fa;
  }
  return b;
}

// min(sd, IQR/1.349), R's scale: the sample sd (n − 1) and the IQR of quantile type 7, its
// order statistics by selection (O(n), not a sort).
double robust_scale(std::span<const double> x) {
  std::vector<double> s(x.begin(), x.end());
  const auto n = s.size();
  auto order_stat = [&](std::size_t k) {
    std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
    return s[k];
  };
  auto quantile = [&](double prob) {
    const double h = double(n - 1) * prob;
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const double a = order_stat(lo);
    // after nth_element, the next order statistic is the least of the elements beyond lo
    const double b =
        lo + 1 < n ? *std::min_element(s.begin() + static_cast<std::ptrdiff_t>(lo + 1), s.end())
                   : a;
    return a + (h - double(lo)) * (b - a);
  };
  double mean = 0, ss = 0;
  for (double v : x) mean += v / double(n);
  for (double v : x) ss += (v - mean) * (v - mean);
  const double q1 = quantile(0.25), q3 = quantile(0.75);
  return std::min(std::sqrt(ss / double(n - 1)), (q3 - q1) / 1.349);
}

}  // namespace

double bandwidth_sheather_jones(std::span<const double> x, sj_method method, index nb,
                                double tolerance) {
  const auto n = static_cast<index>(x.size());
  if (n < 2) throw std::invalid_argument("sj bandwidth: needs at least 2 points");
  for (double v : x)
    if (!std::isfinite(v)) throw std::invalid_argument("sj bandwidth: a value is not finite");
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  if (!(*hi > *lo)) throw std::invalid_argument("sj bandwidth: the data are constant");
  const pair_counts p = count_pairs(x, nb);
  const double scale = robust_scale(x);
  const double a = 1.24 * scale * std::pow(double(n), -1.0 / 7);
  const double b = 1.23 * scale * std::pow(double(n), -1.0 / 9);
  const double c1 = 1 / (2 * std::sqrt(std::numbers::pi) * double(n));
  const double td = -phi6(p, n, b);
  if (!std::isfinite(td) || td <= 0)
    throw std::invalid_argument("sj bandwidth: the sample is too sparse to estimate ∫f'''²");
  if (method == sj_method::direct_plug_in)
    return std::pow(c1 / phi4(p, n, std::pow(2.394 / (double(n) * td), 1.0 / 7)), 1.0 / 5);
  const double hmax = 1.144 * scale * std::pow(double(n), -1.0 / 5);
  double lower = 0.1 * hmax, upper = hmax;
  const double alph2 = 1.357 * std::pow(phi4(p, n, a) / td, 1.0 / 7);
  if (!std::isfinite(alph2))
    throw std::invalid_argument("sj bandwidth: the sample is too sparse to estimate ∫f''²");
  const auto fsd = [&](double h) {
    return std::pow(c1 / phi4(p, n, alph2 * std::pow(h, 5.0 / 7)), 1.0 / 5) - h;
  };
  for (int itry = 1; fsd(lower) * fsd(upper) > 0; ++itry) {  // R widens the same way
    if (itry > 99) throw std::invalid_argument("sj bandwidth: no solution in the search range");
    if (itry % 2)
      upper *= 1.2;
    else
      lower /= 1.2;
  }
  // R's default tolerance, 0.1·lower, is a promise forced only here: after the widening loop.
  const double tol = tolerance > 0 ? tolerance : 0.1 * lower;
  return brent_root(fsd, lower, upper, fsd(lower), fsd(upper), tol);
}

}  // namespace kf
