// The recurrent form of the feature-map route (smooth_recurrent) against the primitive under a
// causal mask: row i of smooth_forward(q, k, v, causal) equals a query after appending keys 0..i,
// for every feature kernel, float and double, d = 1 and odd sizes; in double also against the plain
// reference. favor's running rescale (keys growing in scale); the empty row; clear(); exact
// kernels refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kernelformer/smooth.hpp"
#include "kernelformer/smooth_recurrent.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

using test::all_close;
using test::random_matrix;

std::vector<kernel_spec> feature_kernels() {
  return {kernel_parse("elu1"), kernel_parse("rff:h=1.3,features=48,seed=5"),
          kernel_parse("favor:features=40,seed=2"), kernel_parse("favor:t=1.7,features=33")};
}

// out (n × dv) and lse (n) of the recurrence: append key i, then query row i.
template <class T>
void run_state(const kernel_spec& kern, const matrix<T>& q, const matrix<T>& k, const matrix<T>& v,
               matrix<T>& out, std::vector<T>& lse) {
  const index n = q.rows(), d = q.cols(), dv = v.cols();
  smooth_recurrent<T> s(kern, d, dv);
  out = matrix<T>(n, dv);
  lse.assign(static_cast<std::size_t>(n), T(0));
  const auto du = static_cast<std::size_t>(d), dvu = static_cast<std::size_t>(dv);
  for (index i = 0; i < n; ++i) {
    s.append({k.data() + i * d, du}, {v.data() + i * dv, dvu});
    lse[static_cast<std::size_t>(i)] = s.query({out.data() + i * dv, dvu}, {q.data() + i * d, du});
  }
  EXPECT_EQ(s.size(), n);
}

template <class T>
void check_against_route(const kernel_spec& kern, index n, index d, index dv, double scale,
                         double rtol) {
  SCOPED_TRACE(kernel_format(kern) + " n=" + std::to_string(n) + " d=" + std::to_string(d));
  const auto q = random_matrix<T>(n, d, 11, -scale, scale);
  auto k = random_matrix<T>(n, d, 12, -scale, scale);
  const auto v = random_matrix<T>(n, dv, 13);
  for (index i = 0; i < n; ++i)  // keys growing in norm: favor's scale moves up as they come
    for (index c = 0; c < d; ++c) k(i, c) *= static_cast<T>(0.5 + 1.5 * double(i) / double(n));
  matrix<T> out, ref(n, dv);
  std::vector<T> lse, ref_lse(static_cast<std::size_t>(n));
  run_state(kern, q, k, v, out, lse);
  smooth_forward<T>(ref.view(), ref_lse, q.cview(), k.cview(), v.cview(), kern, mask::causal());
  EXPECT_TRUE(all_close(out.cview(), ref.cview(), rtol, rtol));
  const matrix<T> l1(n, 1, lse), l2(n, 1, ref_lse);
  EXPECT_TRUE(all_close(l1.cview(), l2.cview(), rtol, rtol));
  if constexpr (std::is_same_v<T, double>) {
    matrix<T> r2(n, dv);
    std::vector<T> r2_lse(static_cast<std::size_t>(n));
    reference::smooth_forward<T>(r2.view(), r2_lse, q.cview(), k.cview(), v.cview(), kern,
                                 mask::causal());
    EXPECT_TRUE(all_close(out.cview(), r2.cview(), rtol, rtol));
  }
}

TEST(SmoothRecurrent, EqualsTheCausalFeatureRouteDouble) {
  for (const auto& kern : feature_kernels())
    for (auto [n, d, dv] : {std::tuple<index, index, index>{1, 1, 1}, {37, 3, 2}, {130, 5, 7}})
      check_against_route<double>(kern, n, d, dv, 1.0, 1e-10);
}

TEST(SmoothRecurrent, EqualsTheCausalFeatureRouteFloat) {
  for (const auto& kern : feature_kernels())
    for (auto [n, d, dv] : {std::tuple<index, index, index>{1, 1, 1}, {37, 3, 2}, {130, 5, 7}})
      check_against_route<float>(kern, n, d, dv, 1.0, 2e-5);
}

TEST(SmoothRecurrent, FavorRescalesAcrossLargeExponents) {
  // Inputs of scale 6 in 4 columns: exponents spread over tens of units, far past float's e^88
  // without the running shift.
  check_against_route<float>(kernel_parse("favor:t=1,features=24,seed=3"), 50, 4, 3, 6.0, 1e-4);
  check_against_route<double>(kernel_parse("favor:t=1,features=24,seed=3"), 50, 4, 3, 6.0, 1e-9);
}

TEST(SmoothRecurrent, EmptyRowsClearAndRefusals) {
  smooth_recurrent<double> s(kernel_parse("elu1"), 2, 1);
  std::vector<double> out = {7.0};
  const std::vector<double> q = {0.1, 0.2}, k = {0.3, -0.4}, v = {2.5};
  EXPECT_EQ(s.query(out, q), -std::numeric_limits<double>::infinity());  // no key yet
  EXPECT_EQ(out[0], 0.0);
  s.append(k, v);
  s.query(out, q);
  EXPECT_NEAR(out[0], 2.5, 1e-15);  // one key: its value
  s.clear();
  EXPECT_EQ(s.size(), 0);
  EXPECT_EQ(s.query(out, q), -std::numeric_limits<double>::infinity());
  EXPECT_THROW(s.append(std::vector<double>{1.0}, v), std::invalid_argument);
  EXPECT_THROW(smooth_recurrent<float>(kernel_exp_dot{}, 4, 4), std::invalid_argument);
  EXPECT_THROW(smooth_recurrent<float>(kernel_parse("rff:features=3"), 4, 4),
               std::invalid_argument);
}

}  // namespace
}  // namespace kf
