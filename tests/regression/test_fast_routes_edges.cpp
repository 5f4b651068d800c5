// Every fast regression route (binned 1-D and 2-D, the k-d tree over each support) against
// Nadaraya–Watson and local linear summed directly in this file, on the inputs that break fast
// routes: x on a few distinct values (each duplicated many times), odd n, a single training
// point, m ≠ n queries inside, between and outside the data, d = 1, 2, 3. (The other suites tie
// each route to the all-pairs route on smooth random data; KNN's edges are in test_knn.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernelformer/regression/smoother.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

using kernel_fn = double (*)(double);  // K(r), r = |u| in bandwidth units

// ŷ at q by weighted least squares on [1, x − q] (local linear) or the weighted mean (NW),
// weights K(|(x_j − q)/h|). defined = false where every weight is 0.
struct direct_fit {
  double fit = 0;
  bool defined = false;
};

direct_fit direct(const matrix<double>& x, const std::vector<double>& y, const double* q,
                  const std::vector<double>& h, kernel_fn k, bool local_linear) {
  const index n = x.rows(), d = x.cols(), p = d + 1;
  std::vector<double> a(static_cast<std::size_t>(p * p), 0.0), b(static_cast<std::size_t>(p), 0.0);
  double s0 = 0, t0 = 0;
  for (index j = 0; j < n; ++j) {
    double r2 = 0;
    std::vector<double> z(static_cast<std::size_t>(p), 1.0);
    for (index c = 0; c < d; ++c) {
      const double u = (x(j, c) - q[c]) / h[static_cast<std::size_t>(c)];
      r2 += u * u;
      z[static_cast<std::size_t>(c + 1)] = u;  // in bandwidth units: a well-scaled system
    }
    const double w = k(std::sqrt(r2)), yj = y[static_cast<std::size_t>(j)];
    s0 += w;
    t0 += w * yj;
    for (index r = 0; r < p; ++r) {
      b[static_cast<std::size_t>(r)] += w * z[static_cast<std::size_t>(r)] * yj;
      for (index c = 0; c < p; ++c)
        a[static_cast<std::size_t>(r * p + c)] +=
            w * z[static_cast<std::size_t>(r)] * z[static_cast<std::size_t>(c)];
    }
  }
  direct_fit f;
  if (!(s0 > 0)) return f;
  f.defined = true;
  f.fit = t0 / s0;
  if (!local_linear) return f;
  // Gaussian elimination with partial pivoting; the intercept is the fit at q. A pivot below
  // 1e-9 of the total weight means the window's points do not span the columns (a single
  // distinct point, or collinear ones): the routes fall back to NW there, and so does this.
  for (index c = 0; c < p; ++c) {
    index piv = c;
    for (index r = c + 1; r < p; ++r)
      if (std::abs(a[static_cast<std::size_t>(r * p + c)]) >
          std::abs(a[static_cast<std::size_t>(piv * p + c)]))
        piv = r;
    for (index cc = 0; cc < p; ++cc)
      std::swap(a[static_cast<std::size_t>(c * p + cc)], a[static_cast<std::size_t>(piv * p + cc)]);
    std::swap(b[static_cast<std::size_t>(c)], b[static_cast<std::size_t>(piv)]);
    if (!(std::abs(a[static_cast<std::size_t>(c * p + c)]) > 1e-9 * s0)) return f;
    for (index r = c + 1; r < p; ++r) {
      const double m =
          a[static_cast<std::size_t>(r * p + c)] / a[static_cast<std::size_t>(c * p + c)];
      for (index cc = c; cc < p; ++cc)
        a[static_cast<std::size_t>(r * p + cc)] -= m * a[static_cast<std::size_t>(c * p + cc)];
      b[static_cast<std::size_t>(r)] -= m * b[static_cast<std::size_t>(c)];
    }
  }
  std::vector<double> beta(static_cast<std::size_t>(p));
  for (index r = p - 1; r >= 0; --r) {
    double v = b[static_cast<std::size_t>(r)];
    for (index c = r + 1; c < p; ++c)
      v -= a[static_cast<std::size_t>(r * p + c)] * beta[static_cast<std::size_t>(c)];
    beta[static_cast<std::size_t>(r)] = v / a[static_cast<std::size_t>(r * p + r)];
  }
  f.fit = beta[0];
  return f;
}

// n points on the lattice {0, 0.25, …, 2}^d, each coordinate drawn at random: in 1-D every value
// repeated ~n/9 times, in 2-D and 3-D ~n/81 and ~n/729; several distinct points inside each
// window; y a smooth function plus a deterministic wiggle.
struct lattice {
  matrix<double> x;
  std::vector<double> y;
  double yrange = 0;
};
lattice make_lattice(index n, index d) {
  lattice l{matrix<double>(n, d), std::vector<double>(static_cast<std::size_t>(n)), 0};
  double lo = 1e300, hi = -1e300;
  std::mt19937_64 rng(static_cast<std::uint64_t>(n * 10 + d));
  std::uniform_int_distribution<int> cell(0, 8);
  for (index i = 0; i < n; ++i) {
    double v = 0.3 * std::cos(7.0 * double(i));
    for (index c = 0; c < d; ++c) {
      l.x(i, c) = double(cell(rng)) * 0.25;
      v += std::sin(1.5 * l.x(i, c));
    }
    l.y[static_cast<std::size_t>(i)] = v;
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  l.yrange = hi - lo;
  return l;
}

struct route_case {
  std::string label;
  any_kernel kernel;
  kernel_fn k;
  regression_method method;
  double tol;  // × the range of y
};

void check_route(const route_case& rc, const lattice& l, const matrix<double>& q,
                 const std::vector<double>& h, const std::string& route, bool exact = false) {
  SCOPED_TRACE(rc.label + " d=" + std::to_string(l.x.cols()) + " n=" + std::to_string(l.x.rows()));
  regression_spec s;
  s.method = rc.method;
  s.kernel = rc.kernel;
  s.bandwidth = h;
  s.binned_min_n = 1;  // the fast route at any n, a single point too
  s.exact = exact;
  EXPECT_EQ(choose_regression_route(s, l.x.cview()).name(), route);
  const auto e = regression_evaluate(s, l.x.cview(), l.y, q.cview(), false);
  const bool ll = rc.method == regression_method::local_linear;
  for (index i = 0; i < q.rows(); ++i) {
    const auto f = direct(l.x, l.y, &q(i, 0), h, rc.k, ll);
    const auto iu = static_cast<std::size_t>(i);
    ASSERT_EQ(bool(e.defined[iu]), f.defined) << "query " << i;
    if (f.defined) {
      EXPECT_NEAR(e.fit[iu], f.fit, rc.tol * std::max(l.yrange, 1.0)) << i;
    }
  }
}

double gauss(double r) { return std::exp(-r * r / 2); }
double laplace(double r) { return std::exp(-r); }
double epan(double r) { return r <= 1 ? 1 - r * r : 0.0; }
double tricube(double r) { return r <= 1 ? std::pow(1 - r * r * r, 3) : 0.0; }

TEST(FastRouteEdges, BinnedOneColumnDuplicatesOddSizesAndASinglePoint) {
  const auto q = test::random_matrix<double>(61, 1, 3, -0.7, 2.7);  // data on [0, 2]
  const std::string route = "binned (linear binning + FFT)";
  for (index n : {5001, 1}) {
    const lattice l = make_lattice(n, 1);
    for (auto m : {regression_method::nw, regression_method::local_linear}) {
      const std::string mm = m == regression_method::nw ? " nw" : " ll";
      check_route({"gaussian" + mm, kernel_gaussian{}, gauss, m, 1e-6}, l, q, {0.3}, route);
      // the laplacian's kink at 0 sits on every duplicated value: first order there
      check_route({"laplacian" + mm, kernel_laplacian{}, laplace, m, 3e-4}, l, q, {0.3}, route);
      check_route({"epanechnikov" + mm, kernel_epanechnikov{}, epan, m, 1e-4}, l, q, {0.6}, route);
    }
  }
}

TEST(FastRouteEdges, BinnedTwoColumnsDuplicatesOddSizesAndASinglePoint) {
  const auto q = test::random_matrix<double>(41, 2, 4, -0.7, 2.7);
  const std::string route = "binned 2-D (bilinear binning + FFT)";
  for (index n : {5001, 1}) {
    const lattice l = make_lattice(n, 2);
    check_route({"gaussian", kernel_gaussian{}, gauss, regression_method::nw, 2e-3}, l, q,
                {0.3, 0.35}, route);
    check_route({"laplacian", kernel_laplacian{}, laplace, regression_method::nw, 2e-3}, l, q,
                {0.3, 0.35}, route);
    check_route({"tricube", kernel_tricube{}, tricube, regression_method::nw, 2e-3}, l, q,
                {0.6, 0.7}, route);
  }
}

// The k-d tree runs while a support spans at most 5% of the data's box: the lattice spans 2 per
// column, so h = 0.2 covers 2·0.2/2 = 20% of each column (4% of the box in 2 columns, 0.8% in
// 3); a single point has an empty box (all pairs), and h = 0.6 spans 36% (all pairs).
TEST(FastRouteEdges, KdTreeTwoAndThreeColumnsDuplicatesOddSizesAndASinglePoint) {
  const std::string tree = "exact (k-d tree over each support)", pairs = "exact (all pairs)";
  for (index d : {2, 3}) {
    const auto q = test::random_matrix<double>(43, d, 5, -0.7, 2.7);
    for (index n : {2001, 1}) {
      const lattice l = make_lattice(n, d);
      const auto h = [d](double v) { return std::vector<double>(static_cast<std::size_t>(d), v); };
      // 2-column NW is binned unless --exact, which takes the k-d tree (3 columns: always)
      check_route({"epanechnikov nw", kernel_epanechnikov{}, epan, regression_method::nw, 1e-9}, l,
                  q, h(0.2), n > 1 ? tree : pairs, d == 2);
      if (n > 1) {  // a single point has no local line (the route falls back to NW, tested above)
        const route_case ll{"epanechnikov ll", kernel_epanechnikov{}, epan,
                            regression_method::local_linear, 1e-8};
        check_route(ll, l, q, h(0.2), tree);
        check_route(ll, l, q, h(0.6), pairs);
      }
    }
  }
}

}  // namespace
}  // namespace kf
