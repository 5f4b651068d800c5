// The vectorized exp (src/detail/vec_exp.hpp): every variant this CPU runs against std::exp, and
// its documented edges.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "detail/vec_exp.hpp"

namespace kf::detail {
namespace {

template <class T>
void expect_close_to_std_exp(void (*fn)(T*, index), const char* isa, T lo, T hi, double max_ulp) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u{double(lo), double(hi)};
  std::vector<T> x(10007);  // odd length: the vector loop's remainder runs too
  for (auto& v : x) v = T(u(rng));
  x[0] = T(0);
  x[1] = lo;
  x[2] = hi;
  std::vector<T> y = x;
  fn(y.data(), index(y.size()));
  const double eps = std::numeric_limits<T>::epsilon();
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(double(x[i]));
    worst = std::max(worst, std::abs(double(y[i]) - want) / want / eps);
  }
  EXPECT_LE(worst, max_ulp) << isa << " on [" << lo << ", " << hi << "]";
  EXPECT_EQ(y[0], T(1)) << isa << ": exp(0) is exactly 1";
}

TEST(VecExp, EveryAvailableVariantMatchesStdExp) {
  int ran = 0;
  for (const auto& v : exp_variants()) {
    if (!v.available) continue;
    ++ran;
    expect_close_to_std_exp<double>(v.exp_d, v.isa, -708.0, 0.0, 4);
    expect_close_to_std_exp<double>(v.exp_d, v.isa, -1.0, 1.0, 4);
    expect_close_to_std_exp<double>(v.exp_d, v.isa, 0.0, 709.0, 4);
    expect_close_to_std_exp<float>(v.exp_f, v.isa, -86.0f, 0.0f, 4);
    expect_close_to_std_exp<float>(v.exp_f, v.isa, -1.0f, 1.0f, 4);
    expect_close_to_std_exp<float>(v.exp_f, v.isa, 0.0f, 88.0f, 4);
  }
  EXPECT_GE(ran, 1);
  EXPECT_STREQ(exp_variants()[0].isa, "baseline");
}

TEST(VecExp, EdgesAreDocumented) {
  for (const auto& v : exp_variants()) {
    if (!v.available) continue;
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> d = {-inf, -1e300, -745.0, -708.5, 710.0, 1e300};
    v.exp_d(d.data(), index(d.size()));
    EXPECT_EQ(d[0], 0.0) << v.isa;  // masked entries (−inf) weigh exactly 0
    EXPECT_EQ(d[1], 0.0) << v.isa;
    EXPECT_EQ(d[2], 0.0) << v.isa;
    EXPECT_EQ(d[3], 0.0) << v.isa;  // would be subnormal-adjacent: flushed
    EXPECT_TRUE(std::isfinite(d[4]) && d[4] > 1e307) << v.isa;  // clamped at exp(709)
    EXPECT_TRUE(std::isfinite(d[5])) << v.isa;
    const float finf = std::numeric_limits<float>::infinity();
    std::vector<float> f = {-finf, -1e30f, -86.5f, 89.0f};
    v.exp_f(f.data(), index(f.size()));
    EXPECT_EQ(f[0], 0.0f) << v.isa;
    EXPECT_EQ(f[1], 0.0f) << v.isa;
    EXPECT_EQ(f[2], 0.0f) << v.isa;
    EXPECT_TRUE(std::isfinite(f[3]) && f[3] > 1e38f) << v.isa;
  }
}

TEST(VecExp, DispatchUsesAnAvailableVariant) {
  const std::string isa = exp_isa();
  bool found = false;
  for (const auto& v : exp_variants()) found = found || (v.available && isa == v.isa);
  EXPECT_TRUE(found) << isa;
  // The chosen variant agrees with the baseline to rounding.
  std::vector<double> a(1000), b;
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = -0.05 * double(i);
  b = a;
  exp_inplace(a.data(), index(a.size()));
  exp_variants()[0].exp_d(b.data(), index(b.size()));
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-15 * b[i]) << i;  // both within 4 ulp of exp
}

// KF_SIMD picks the variant the re-runs ask for (the *_baseline_isa and *_avx2_isa ctest entries):
// when the requested variant is available, it is the one dispatched, so a re-run never silently
// tests the default variant again.
TEST(VecExp, RequestedVariantIsTheOneDispatched) {
  const char* want = std::getenv("KF_SIMD");
  if (want == nullptr) GTEST_SKIP() << "KF_SIMD not set";
  bool available = false;
  for (const auto& v : exp_variants())
    available = available || (v.available && v.isa == std::string(want));
  if (!available) GTEST_SKIP() << want << " is not available on this CPU";
  EXPECT_EQ(exp_isa(), std::string(want));
  EXPECT_EQ(std::string(exp_variants()[std::size_t(simd_level())].isa), std::string(want));
}

// The smoother's row step: x ← exp(x − shift) with the sum, in every variant, against the plain
// exp of the shifted values (bit for bit: the same loop) and a double-precision sum.
template <class T>
void expect_shift_sum(T (*fn)(T*, index, T), void (*plain)(T*, index), const char* isa) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u{-30.0, 0.0};
  std::vector<T> x(1003);  // not a multiple of any vector width
  for (auto& v : x) v = T(u(rng));
  x[5] = -std::numeric_limits<T>::infinity();  // a masked entry: weight 0
  const T shift = T(-2.5);
  std::vector<T> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] - shift;
  plain(want.data(), index(want.size()));
  std::vector<T> y = x;
  const T sum = fn(y.data(), index(y.size()), shift);
  double ref = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], want[i]) << isa << " at " << i;
    ref += double(want[i]);
  }
  EXPECT_EQ(y[5], T(0)) << isa;
  EXPECT_NEAR(double(sum), ref, 1e-6 * ref) << isa;
  // The same input gives the same sum (its order depends on the length only).
  std::vector<T> z = x;
  EXPECT_EQ(fn(z.data(), index(z.size()), shift), sum) << isa;
}

// The forward's moving row step: the same values and sum as exp_shift_sum, written to y, the
// source left all zeros (the next tile's GEMM adds to it).
template <class T>
void expect_shift_sum_move(T (*move)(T*, T*, index, T), T (*in_place)(T*, index, T),
                           const char* isa) {
  std::mt19937_64 rng(6);
  std::uniform_real_distribution<double> u{-30.0, 0.0};
  std::vector<T> x(1003);
  for (auto& v : x) v = T(u(rng));
  x[7] = -std::numeric_limits<T>::infinity();
  const T shift = T(-1.25);
  std::vector<T> want = x, y(x.size(), T(-1));
  const T want_sum = in_place(want.data(), index(want.size()), shift);
  const T sum = move(x.data(), y.data(), index(x.size()), shift);
  EXPECT_EQ(sum, want_sum) << isa;
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], want[i]) << isa << " at " << i;
    EXPECT_EQ(x[i], T(0)) << isa << " at " << i;
  }
}

TEST(VecExp, ShiftSumMoveMatchesInPlaceAndZeroesTheSource) {
  for (const auto& v : exp_variants()) {
    if (!v.available) continue;
    expect_shift_sum_move<float>(v.exp_shift_sum_move_f, v.exp_shift_sum_f, v.isa);
    expect_shift_sum_move<double>(v.exp_shift_sum_move_d, v.exp_shift_sum_d, v.isa);
  }
  std::vector<float> a{0.0f, -1.0f}, b(2);
  EXPECT_NEAR(exp_shift_sum_move(a.data(), b.data(), 2, 0.0f), 1.0f + std::exp(-1.0f), 1e-6f);
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(a[1], 0.0f);
}

TEST(VecExp, ShiftSumMatchesExpOfShiftedValues) {
  for (const auto& v : exp_variants()) {
    if (!v.available) continue;
    expect_shift_sum<float>(v.exp_shift_sum_f, v.exp_f, v.isa);
    expect_shift_sum<double>(v.exp_shift_sum_d, v.exp_d, v.isa);
  }
  std::vector<float> a{0.0f, -1.0f};
  EXPECT_NEAR(exp_shift_sum(a.data(), 2, 0.0f), 1.0f + std::exp(-1.0f), 1e-6f);
  EXPECT_EQ(a[0], 1.0f);
}

// The periodic kernel's sin² pass, every variant: against sin² in double at the same rounded
// t = √s/p (the pass's own error: its reduction and polynomial), and against the formula in
// double from s (which adds the rounding of t: ~ulp(t) in the angle), up to a million periods.
TEST(VecExp, PeriodicLogWeightEveryVariant) {
  const double pi = 3.14159265358979323846;
  std::mt19937_64 rng(5);
  for (const double period : {1.0, 2 * pi, 0.37}) {
    std::vector<float> s;
    for (const double r : {0.0, 1e-20, 1e-6, 0.25, 0.5, 1.0, 1.5, 2.0, 1e3, 1e6})
      s.push_back(float(r * period * r * period));
    std::uniform_real_distribution<double> u{0.0, 20.0};
    for (int i = 0; i < 4001; ++i) {
      const double r = u(rng) * period;
      s.push_back(float(r * r));
    }
    const float inv_p = float(1.0 / period), g = -2.0f / (0.7f * 0.7f);
    for (const auto& v : exp_variants()) {
      if (!v.available) continue;
      std::vector<float> w(s.size()), w2(s.size(), 1.0f);
      v.periodic_log_weight(s.data(), w.data(), index(s.size()), inv_p, g, false);
      v.periodic_log_weight(s.data(), w2.data(), index(s.size()), inv_p, g, true);
      double worst_own = 0, worst_formula = 0;
      for (std::size_t i = 0; i < s.size(); ++i) {
        const float t = std::sqrt(s[i]) * inv_p;
        const double a = std::sin(pi * double(t)), own = double(g) * a * a;
        worst_own = std::max(worst_own, std::abs(double(w[i]) - own) / std::abs(g));
        if (double(t) <= 20.0) {
          const double b = std::sin(pi * std::sqrt(double(s[i])) / period);
          worst_formula =
              std::max(worst_formula, std::abs(double(w[i]) - double(g) * b * b) / std::abs(g));
        }
        EXPECT_NEAR(w2[i], 1.0f + w[i], 2.5e-7) << v.isa << ": add mode, entry " << i;
      }
      EXPECT_LE(worst_own, 4 * std::numeric_limits<float>::epsilon()) << v.isa << " p=" << period;
      EXPECT_LE(worst_formula, 2e-5) << v.isa << " p=" << period;
      EXPECT_EQ(w[0], 0.0f) << v.isa;  // K(q, q) = 1
    }
  }
}

}  // namespace
}  // namespace kf::detail
