// Extreme scales in the primitive (detail::rescale_extreme): bandwidths below √(float64's
// smallest normal) or above √(its largest), and inputs near 1e300, are computed on q/h and k/h
// — the same answer as the problem at an ordinary scale — instead of underflowing to empty rows
// or overflowing to NaN; a ratio of inputs to bandwidth beyond float64 is refused, not zeroed.
#include <gtest/gtest.h>

#include <cmath>

#include "kernelformer/smooth.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

// n points on [0, 1) times `scale`, values sin(10 x).
struct problem {
  matrix<double> x, v;
  problem(index n, double scale) : x(n, 1), v(n, 1) {
    for (index i = 0; i < n; ++i) {
      const double t = double(i) / double(n);
      x(i, 0) = t * scale;
      v(i, 0) = std::sin(10 * t);
    }
  }
};

matrix<double> forward(const problem& p, const matrix<double>& q, const kernel_spec& k,
                       smooth_stats* st = nullptr) {
  matrix<double> out(q.rows(), 1);
  const auto s =
      smooth_forward<double>(out.view(), {}, q.cview(), p.x.cview(), p.v.cview(), k, mask::none());
  if (st) *st = s;
  return out;
}

void expect_near_rel(const matrix<double>& a, const matrix<double>& b, double tol) {
  ASSERT_EQ(a.rows(), b.rows());
  for (index i = 0; i < a.rows(); ++i)
    EXPECT_NEAR(a(i, 0), b(i, 0), tol * (1 + std::abs(b(i, 0)))) << "row " << i;
}

TEST(SmoothExtreme, TinyBandwidthGivesEachPointItsOwnValue) {
  const problem p(20, 1.0);
  for (const kernel_spec& k :
       {kernel_spec(kernel_gaussian{1e-160}), kernel_spec(kernel_laplacian{1e-300}),
        kernel_spec(kernel_cauchy{1e-200})}) {
    smooth_stats st;
    const auto out = forward(p, p.x, k, &st);
    EXPECT_EQ(st.empty_rows, 0) << kernel_describe(k);
    expect_near_rel(out, p.v, 1e-15);  // the self weight, 1, against weights of exp(-1e300)
  }
}

TEST(SmoothExtreme, HugeInputsWithAProportionateBandwidthMatchTheOrdinaryScale) {
  const problem small(30, 1.0), big(30, 1e300), huge(30, 1.7e308);
  const problem q_small(7, 0.93), q_big(7, 0.93e300), q_huge(7, 0.93 * 1.7e308);
  const auto ref = forward(small, q_small.x, kernel_gaussian{0.05});
  expect_near_rel(forward(big, q_big.x, kernel_gaussian{0.05e300}), ref, 1e-12);
  expect_near_rel(forward(huge, q_huge.x, kernel_gaussian{0.05 * 1.7e308}), ref, 1e-12);
  const auto ref_c = forward(small, q_small.x, kernel_epanechnikov{0.2});
  expect_near_rel(forward(big, q_big.x, kernel_epanechnikov{0.2e300}), ref_c, 1e-12);
  // smooth_weights takes the same route.
  matrix<double> w(1, 30);
  const index row = 3;
  smooth_weights<double>(w.view(), std::span<const index>(&row, 1), q_big.x.cview(), big.x.cview(),
                         kernel_gaussian{0.05e300}, mask::none());
  double sum = 0;
  for (index j = 0; j < 30; ++j) sum += w(0, j);
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(SmoothExtreme, ARatioBeyondFloat64IsRefusedNotZeroed) {
  const problem big(10, 1e305);
  try {
    forward(big, big.x, kernel_gaussian{1e-10});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("floating-point range"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kf
