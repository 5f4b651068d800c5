// Local polynomial regression (degree p ≤ 3, derivative ν) against R (tests/fixtures/
// local_poly_cases.json, written by python/make_fixture_local_poly.py): exact weighted least
// squares on cars, mcycle, faithful and a noisy sine, KernSmooth::locpoly's binned grid; against
// the project's own local-linear and Nadaraya–Watson smoothers; the sorted-window route against
// all pairs; undefined points and bad arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernelformer/regression/binned.hpp"
#include "kernelformer/regression/local_poly.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "test_paths.hpp"

namespace kf {
namespace {

// Exact route against R's QR-based weighted least squares: both are backward stable in the
// scaled design, whose condition numbers here stay below ~1e3.
constexpr double kExactRtol = 1e-10;
// Binned route with locpoly's cut (tau = 4 bandwidths) against locpoly(truncate = FALSE): the same
// binning, kernel table and moments; only the solves differ (locpoly: LU of the raw-unit moment
// matrix). Measured: 3.6e-12 of the largest |value|.
constexpr double kLocpolyRtol = 1e-9;

nlohmann::json cases() {
  std::ifstream f(std::string(KF_FIXTURES_DIR) + "/local_poly_cases.json");
  return nlohmann::json::parse(f)["cases"];
}

// Norm-aware comparison: |a − r| ≤ rtol·(|r| + max|r|) at every entry where `mask` (if given)
// is set; prints the worst entry. Returns the largest |a − r| / max|r| seen through `worst`.
::testing::AssertionResult close_to(const std::vector<double>& a, const std::vector<double>& r,
                                    double rtol, const std::vector<unsigned char>* mask = nullptr,
                                    double* worst = nullptr) {
  if (a.size() != r.size())
    return ::testing::AssertionFailure() << "size " << a.size() << " vs " << r.size();
  double scale = 0;
  for (double v : r) scale = std::max(scale, std::abs(v));
  double big = 0;
  std::size_t at = 0, bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (mask && !(*mask)[i]) continue;
    const double d = std::abs(a[i] - r[i]);
    if (!(d <= rtol * (std::abs(r[i]) + scale))) ++bad;
    if (!(d <= big)) big = d, at = i;
  }
  if (worst) *worst = std::max(*worst, scale > 0 ? big / scale : big);
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << a.size() << " differ; worst at " << at << ": " << a[at] << " vs "
         << r[at] << " (|diff| " << big << ", max|ref| " << scale << ")";
}

std::vector<double> vec(const nlohmann::json& j) { return j.get<std::vector<double>>(); }
std::vector<unsigned char> flags(const nlohmann::json& j) {
  return j.get<std::vector<unsigned char>>();
}

regression_eval project_smoother(regression_method method, const any_kernel& k, double h,
                                 const std::vector<double>& x, const std::vector<double>& y,
                                 const std::vector<double>& xq, bool at_training) {
  regression_spec s;
  s.method = method;
  s.kernel = k;
  s.bandwidth = {h};
  s.exact = true;
  const const_matrix_view<double> xv(x.data(), index(x.size()), 1);
  const const_matrix_view<double> qv =
      at_training ? xv : const_matrix_view<double>(xq.data(), index(xq.size()), 1);
  return regression_evaluate(s, xv, y, qv, at_training);
}

TEST(LocalPoly, GaussianWeightIsTheProjectsKernel) {
  const double h = 0.5;
  for (double d : {0.0, 0.3, -1.7})
    EXPECT_DOUBLE_EQ(kernel_at_distance(kernel_gaussian{h}, d), std::exp(-d * d / (2 * h * h)));
  // Degree 0 at x0 = 0.25 from two points: the mean weighted by exp(−d²/(2h²)).
  const std::vector<double> x{0, 1}, y{0, 1}, xq{0.25};
  const auto r = local_poly_exact(kernel_gaussian{h}, 0, 0, x, y, xq, false);
  const double w0 = std::exp(-0.0625 / 0.5), w1 = std::exp(-0.5625 / 0.5);
  EXPECT_NEAR(r.fit[0], w1 / (w0 + w1), 1e-15);
  EXPECT_NEAR(r.sum_l2[0], (w0 * w0 + w1 * w1) / ((w0 + w1) * (w0 + w1)), 1e-15);
}

TEST(LocalPoly, ExactEqualsRWeightedLeastSquares) {
  int checked = 0;
  double worst = 0;
  for (const auto& c : cases()) {
    const auto x = vec(c["x"]), y = vec(c["y"]), xq = vec(c["xq"]);
    const double h = c["h"];
    for (const auto& f : c["fits"]) {
      const int p = f["degree"], nu = f["derivative"];
      SCOPED_TRACE(c["name"].get<std::string>() + " p=" + std::to_string(p) +
                   " nu=" + std::to_string(nu));
      const auto q = local_poly_exact(kernel_gaussian{h}, p, nu, x, y, xq, false);
      const auto t = local_poly_exact(kernel_gaussian{h}, p, nu, x, y, x, true);
      EXPECT_EQ(q.defined, flags(f["query"]["defined"]));
      EXPECT_EQ(t.defined, flags(f["train"]["defined"]));
      EXPECT_EQ(q.undefined + t.undefined, 0);
      EXPECT_TRUE(close_to(q.fit, vec(f["query"]["fit"]), kExactRtol, nullptr, &worst));
      EXPECT_TRUE(close_to(q.sum_l2, vec(f["query"]["sum_l2"]), kExactRtol, nullptr, &worst));
      EXPECT_TRUE(close_to(t.fit, vec(f["train"]["fit"]), kExactRtol, nullptr, &worst));
      EXPECT_TRUE(close_to(t.sum_l2, vec(f["train"]["sum_l2"]), kExactRtol, nullptr, &worst));
      EXPECT_TRUE(
          close_to(t.self_weight, vec(f["train"]["self_weight"]), kExactRtol, nullptr, &worst));
      EXPECT_TRUE(q.self_weight.empty());
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4 * 9);
  std::cout << "largest |ours - R| / max|R|: " << worst << "\n";
}

// Degree 1 is the project's local-linear smoother and degree 0 its Nadaraya–Watson, on both of
// their exact routes (all pairs for the gaussian, sorted windows for the epanechnikov, whose
// bandwidth is widened so that no window is singular: the project falls back to NW there).
TEST(LocalPoly, DegreesZeroAndOneEqualTheProjectsSmoothers) {
  for (const auto& c : cases()) {
    const auto x = vec(c["x"]), y = vec(c["y"]), xq = vec(c["xq"]);
    const double h = c["h"];
    for (const any_kernel k : {any_kernel(kernel_gaussian{h}), any_kernel(kernel_epanechnikov{})})
      for (int p : {0, 1})
        for (bool at_training : {false, true}) {
          any_kernel kk = k;
          if (kernel_compact(k)) kernel_set_param(kk, 4 * h);
          SCOPED_TRACE(c["name"].get<std::string>() + " " + std::string(kernel_name(k)) +
                       " p=" + std::to_string(p) + (at_training ? " training" : " queries"));
          const auto& q = at_training ? x : xq;
          const auto ours = local_poly_exact(kk, p, 0, x, y, q, at_training);
          const auto ref =
              project_smoother(p == 0 ? regression_method::nw : regression_method::local_linear, kk,
                               kernel_param(kk), x, y, q, at_training);
          ASSERT_EQ(ref.ll_fallback, 0);
          EXPECT_EQ(ours.defined, ref.defined);
          EXPECT_TRUE(close_to(ours.fit, ref.fit, 1e-10));
          EXPECT_TRUE(close_to(ours.sum_l2, ref.sum_l2, 1e-10));
          if (at_training) {
            EXPECT_TRUE(close_to(ours.self_weight, ref.self_weight, 1e-10));
          }
        }
  }
}

// A polynomial of degree p is reproduced exactly, with its derivatives, at every point.
TEST(LocalPoly, ReproducesPolynomials) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 2);
  std::vector<double> x(60), y(60), xq{-1.5, -1, 0.3, 1.7, 2, 3};
  for (auto& v : x) v = u(rng);
  const auto m = [](double t, int nu) {  // 1 + 2t − t² + t³/2 and its derivatives
    const double d[4][4] = {{1, 2, -1, 0.5}, {2, -2, 1.5, 0}, {-2, 3, 0, 0}, {3, 0, 0, 0}};
    return d[nu][0] + t * (d[nu][1] + t * (d[nu][2] + t * d[nu][3]));
  };
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = m(x[i], 0);
  for (int nu = 0; nu <= 3; ++nu) {
    const auto r = local_poly_exact(kernel_gaussian{0.4}, 3, nu, x, y, xq, false);
    for (std::size_t i = 0; i < xq.size(); ++i) {
      ASSERT_TRUE(r.defined[i]);
      EXPECT_NEAR(r.fit[i], m(xq[i], nu), 1e-9 * (1 + std::abs(m(xq[i], nu)))) << nu << " " << i;
    }
  }
}

// The sorted-window route (compact kernels) equals all pairs, with ties (cars), points outside
// the data, keys exactly at the support's edge (integer speeds, h = 2, boxcar) and empty windows.
TEST(LocalPoly, SortedWindowEqualsAllPairs) {
  for (const auto& c : cases()) {
    auto x = vec(c["x"]), y = vec(c["y"]), xq = vec(c["xq"]);
    const double h = c["h"], lo = *std::min_element(x.begin(), x.end());
    const double hi = *std::max_element(x.begin(), x.end());
    xq.insert(xq.end(), {lo - 0.5 * h, hi + 0.9 * h, hi + 3 * h, lo + 0.37 * (hi - lo)});
    const bool cars = c["name"] == "cars";
    for (const any_kernel k : {any_kernel(kernel_epanechnikov{2 * h}),
                               any_kernel(kernel_tricube{1.5 * h}), any_kernel(kernel_boxcar{2.0})})
      for (int p = 0; p <= 3; ++p)
        for (int nu = 0; nu <= p; ++nu)
          for (bool at_training : {false, true}) {
            if (kernel_name(k) == "boxcar" && !cars) continue;
            SCOPED_TRACE(c["name"].get<std::string>() + " " + std::string(kernel_name(k)) +
                         " p=" + std::to_string(p) + " nu=" + std::to_string(nu));
            const auto& q = at_training ? x : xq;
            const auto win = local_poly_exact(k, p, nu, x, y, q, at_training);
            const auto all = detail::local_poly_all_pairs(k, p, nu, x, y, q, at_training);
            EXPECT_EQ(win.defined, all.defined);
            EXPECT_EQ(win.undefined, all.undefined);
            EXPECT_TRUE(close_to(win.fit, all.fit, 1e-12));
            EXPECT_TRUE(close_to(win.sum_l2, all.sum_l2, 1e-12));
            EXPECT_TRUE(close_to(win.self_weight, all.self_weight, 1e-12));
          }
  }
}

TEST(LocalPoly, BinnedEqualsLocpolyGrid) {
  int checked = 0;
  double worst = 0;
  for (const auto& c : cases()) {
    if (!c.contains("locpoly")) continue;
    const auto x = vec(c["x"]), y = vec(c["y"]);
    const auto& lp = c["locpoly"];
    const auto grid = vec(lp["grid"]);
    const double h = c["h"];
    for (const auto& e : lp["estimates"]) {
      const int p = e["degree"], nu = e["derivative"];
      SCOPED_TRACE(c["name"].get<std::string>() + " p=" + std::to_string(p) +
                   " nu=" + std::to_string(nu));
      std::vector<double> ref;
      std::vector<unsigned char> finite;
      for (const auto& v : e["y"]) {
        finite.push_back(v.is_null() ? 0 : 1);
        ref.push_back(v.is_null() ? 0.0 : v.get<double>());
      }
      const auto r =
          local_poly_binned(kernel_gaussian{h}, p, nu, x, y, grid, lp["gridsize"], lp["tau"]);
      EXPECT_EQ(r.undefined, 0);
      EXPECT_EQ(r.self_weight.empty(), nu != 0);  // the binned hat diagonal is for ν = 0
      EXPECT_TRUE(close_to(r.fit, ref, kLocpolyRtol, &finite, &worst));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * 9);
  std::cout << "largest |binned - locpoly| / max|locpoly|: " << worst << "\n";
}

// The binned route approximates the exact one to O((δ/h)²): fit and Σℓ² at h/δ ≈ 100 (grid
// 4001), every degree and derivative, the data's ends included (measured: ≤ 6e-4 of the largest
// |value|, cubics at the ends); ten times coarser, the error grows ~100 times.
TEST(LocalPoly, BinnedApproximatesExact) {
  for (const auto& c : cases()) {
    const auto x = vec(c["x"]), y = vec(c["y"]), xq = vec(c["xq"]);
    const double h = c["h"];
    for (int p = 0; p <= 3; ++p)
      for (int nu = 0; nu <= std::min(p, 2); ++nu) {
        SCOPED_TRACE(c["name"].get<std::string>() + " p=" + std::to_string(p) +
                     " nu=" + std::to_string(nu));
        const auto ex = local_poly_exact(kernel_gaussian{h}, p, nu, x, y, xq, false);
        const auto bn = local_poly_binned(kernel_gaussian{h}, p, nu, x, y, xq, 4001);
        EXPECT_EQ(bn.defined, ex.defined);
        EXPECT_TRUE(close_to(bn.fit, ex.fit, 1e-3));
        EXPECT_TRUE(close_to(bn.sum_l2, ex.sum_l2, 1e-3));
        if (nu == 0) {  // the binned hat diagonal at the training points, for the criteria
          const auto ext = local_poly_exact(kernel_gaussian{h}, p, 0, x, y, x, true);
          const auto bnt = local_poly_binned(kernel_gaussian{h}, p, 0, x, y, x, 4001);
          EXPECT_TRUE(close_to(bnt.self_weight, ext.self_weight, 1e-3));
        }
      }
  }
  nlohmann::json c;
  for (const auto& item : cases())
    if (item["name"] == "sin200") c = item;
  ASSERT_FALSE(c.is_null());
  const auto x = vec(c["x"]), y = vec(c["y"]), xq = vec(c["xq"]);
  const kernel_biweight k{3 * c["h"].get<double>()};
  const auto ex = local_poly_exact(k, 2, 1, x, y, xq, false);
  double coarse = 0, fine = 0;
  EXPECT_TRUE(close_to(local_poly_binned(k, 2, 1, x, y, xq, 401).fit, ex.fit, 1, nullptr, &coarse));
  EXPECT_TRUE(close_to(local_poly_binned(k, 2, 1, x, y, xq, 4001).fit, ex.fit, 1, nullptr, &fine));
  EXPECT_GT(coarse / fine, 50) << coarse << " " << fine;
}

TEST(LocalPoly, UndefinedWhereTheDesignIsSingular) {
  const std::vector<double> x{0, 0.1, 0.2, 0.3, 0.4, 1.0}, y{1, 2, 3, 4, 5, 6};
  const std::vector<double> xq{5.0, 0.2, 1.0, -3.0};
  // Far from the data: no weight. At x = 1 with h = 0.15 only the point itself: enough for p = 0.
  for (int p = 0; p <= 3; ++p) {
    const auto r = local_poly_exact(kernel_epanechnikov{0.15}, p, 0, x, y, xq, false);
    EXPECT_EQ(r.defined, (std::vector<unsigned char>{0, p <= 2, p == 0, 0}));
    EXPECT_EQ(r.undefined, 2 + (p > 0) + (p == 3));
    for (std::size_t i = 0; i < xq.size(); ++i)
      if (!r.defined[i]) {
        EXPECT_TRUE(r.fit[i] == 0 && r.sum_l2[i] == 0);
      }
  }
  // Three points in the window at x = 0.2: a quadratic fits (and its second derivative).
  EXPECT_TRUE(local_poly_exact(kernel_epanechnikov{0.15}, 2, 2, x, y, xq, false).defined[1]);
  // Ties: four points at two distinct x cannot fit a quadratic.
  const std::vector<double> xt{1, 1, 2, 2}, yt{1, 2, 3, 4};
  EXPECT_EQ(local_poly_exact(kernel_gaussian{1}, 2, 0, xt, yt, xt, true).undefined, 4);
  EXPECT_EQ(local_poly_exact(kernel_gaussian{1}, 1, 1, xt, yt, xt, true).undefined, 0);
  // A gaussian cubic extrapolated far beyond the data: weights relative to the nearest point
  // underflow, the design is numerically singular — 0, never NaN. Inside the data it is defined.
  const auto g =
      local_poly_exact(kernel_gaussian{0.1}, 3, 1, x, y, std::vector<double>{1e3, 0.25}, false);
  EXPECT_EQ(g.defined, (std::vector<unsigned char>{0, 1}));
  EXPECT_TRUE(std::isfinite(g.fit[1]));
  EXPECT_EQ(g.fit[0], 0.0);
  // Binned: outside the data's range and where a node's window is empty.
  const auto b = local_poly_binned(kernel_epanechnikov{0.15}, 1, 0, x, y, xq, 101);
  EXPECT_EQ(b.defined, (std::vector<unsigned char>{0, 1, 0, 0}));
  EXPECT_EQ(b.fit[0], 0.0);
}

TEST(LocalPoly, BadArgumentsThrow) {
  const std::vector<double> x{0, 1, 2, 3}, y{1, 2, 3, 4}, xq{0.5};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const kernel_gaussian g{1.0};
  const auto throws = [](auto&& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what()).find('\n') == std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(throws([&] { local_poly_exact(g, 4, 0, x, y, xq, false); }));
  EXPECT_TRUE(throws([&] { local_poly_exact(g, -1, 0, x, y, xq, false); }));
  EXPECT_TRUE(throws([&] { local_poly_exact(g, 2, 3, x, y, xq, false); }));
  EXPECT_TRUE(throws([&] { local_poly_exact(g, 2, -1, x, y, xq, false); }));
  EXPECT_TRUE(throws([&] { local_poly_exact(g, 1, 0, x, std::vector<double>{1, 2}, xq, false); }));
  EXPECT_TRUE(throws([&] { local_poly_exact(g, 1, 0, {}, {}, xq, false); }));
  EXPECT_TRUE(throws([&] {
    local_poly_exact(g, 1, 0, std::vector<double>{0, nan}, std::vector<double>{1, 2}, xq, false);
  }));
  EXPECT_TRUE(throws([&] {
    local_poly_exact(g, 1, 0, x, std::vector<double>{1, 2, nan, 4}, xq, false);
  }));
  EXPECT_TRUE(throws([&] { local_poly_exact(g, 1, 0, x, y, std::vector<double>{nan}, false); }));
  EXPECT_TRUE(throws([&] { local_poly_exact(g, 1, 0, x, y, xq, true); }));  // xq is not x
  EXPECT_TRUE(throws([&] { local_poly_exact(kernel_exp_dot{}, 1, 0, x, y, xq, false); }));
  EXPECT_TRUE(throws([&] { local_poly_exact(kernel_uniform{}, 1, 0, x, y, xq, false); }));
  EXPECT_TRUE(throws([&] { local_poly_exact(kernel_gaussian{0.0}, 1, 0, x, y, xq, false); }));
  EXPECT_TRUE(throws([&] { local_poly_binned(g, 1, 0, x, y, xq, 1); }));
  EXPECT_TRUE(throws([&] {
    local_poly_binned(g, 1, 0, std::vector<double>{2, 2}, std::vector<double>{1, 2}, xq);
  }));
  EXPECT_TRUE(throws([&] { local_poly_binned(kernel_gaussian{1e-4}, 1, 0, x, y, xq); }));
  EXPECT_TRUE(throws([&] { local_poly_binned(g, 3, 4, x, y, xq); }));
  EXPECT_TRUE(throws([&] { local_poly_binned(g, 1, 0, x, y, xq, 401, -1.0); }));
}

}  // namespace
}  // namespace kf
