// bandwidth_isj against the numpy/scipy oracle of KDEpy's improved_sheather_jones
// (tests/fixtures/isj_cases.json, written by python/make_fixture_isj.py, which reproduces
// KDEpy's published doctest values exactly): the bandwidth, the root t* and the grid, on real
// data (faithful, MASS geyser) and mixtures, plus the inputs KDEpy refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "kernelformer/regression/bandwidth_isj.hpp"
#include "test_paths.hpp"

namespace kf {
namespace {

nlohmann::json fixture() {
  std::ifstream f(std::string(KF_FIXTURES_DIR) + "/isj_cases.json");
  return nlohmann::json::parse(f);
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

std::string refusal(const std::vector<double>& x) {
  try {
    bandwidth_isj(x);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

// Same grid, same binning order, scipy's brentq transcribed: the only differences left are the
// DCT's (FFTW against FFTPACK) and the sums' rounding, ~1e-16 in the fixed-point function, which
// move the root by about as much (≤ 2e-15 relative on every case here). 1e-10 leaves room for
// FMA-contracted builds; it is not brentq's xtol (2e-12 absolute, up to 2e-6 relative to the
// geyser's t* ≈ 1e-6), which only a flipped step choice would show.
TEST(BandwidthIsj, EqualsTheOracleOnEveryCase) {
  const nlohmann::json doc = fixture();
  ASSERT_EQ(doc["conventions"]["grid"].get<index>(), 1024);
  int checked = 0;
  for (const auto& c : doc["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto x = c["x"].get<std::vector<double>>();
    isj_steps st;
    const double h = bandwidth_isj(x, &st);
    EXPECT_EQ(st.grid, c["grid"].get<index>());
    EXPECT_EQ(st.lo, c["lo"].get<double>());  // the same two floating-point operations
    EXPECT_EQ(st.hi, c["hi"].get<double>());
    EXPECT_LT(rel(st.t_star, c["t_star"]), 1e-10) << st.t_star << " against " << c["t_star"];
    EXPECT_LT(rel(h, c["h"]), 1e-10) << h << " against the oracle's " << c["h"];
    EXPECT_EQ(st.h, h);
    ++checked;
  }
  EXPECT_GE(checked, 9);
}

TEST(BandwidthIsj, RefusesWhereKdepyRaises) {
  const nlohmann::json doc = fixture();
  int checked = 0;
  for (const auto& c : doc["errors"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    EXPECT_NE(refusal(c["x"].get<std::vector<double>>()).find("has no root below 1"),
              std::string::npos);
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

TEST(BandwidthIsj, RefusesBadInput) {
  EXPECT_NE(refusal({}).find("at least 2 points"), std::string::npos);
  EXPECT_NE(refusal({1.5}).find("at least 2 points"), std::string::npos);
  EXPECT_NE(refusal({2, 2, 2, 2}).find("constant"), std::string::npos);
  EXPECT_NE(refusal({1, 2, NAN, 4}).find("point 3 is not finite"), std::string::npos);
  EXPECT_NE(refusal({1, 2, 3, -INFINITY}).find("point 4 is not finite"), std::string::npos);
  const double big = std::numeric_limits<double>::max();
  EXPECT_NE(refusal({-big, 0, big}).find("overflows"), std::string::npos);
}

TEST(BandwidthIsj, InputOrderDoesNotChangeTheRoot) {
  // The binning's sums change order with the input's, so equality is to rounding only.
  const nlohmann::json doc = fixture();
  nlohmann::json c;
  for (const auto& item : doc["cases"])
    if (item["name"] == "bimodal1000") c = item;
  ASSERT_FALSE(c.is_null());
  auto x = c["x"].get<std::vector<double>>();
  const double h = bandwidth_isj(x);
  std::reverse(x.begin(), x.end());
  EXPECT_LT(rel(bandwidth_isj(x), h), 1e-12);
}

TEST(BandwidthIsj, CountsDistinctValuesAsNumpyUniqueDoes) {
  // N, the number of distinct values, enters the fixed point: −0 and +0 are one value, as in
  // numpy's unique, and a repeated value counts once.
  std::mt19937_64 gen(5);
  std::normal_distribution<double> normal;
  std::vector<double> x(300);
  for (double& v : x) v = normal(gen);
  x[10] = x[20] = 0.0;
  const double h = bandwidth_isj(x);
  x[20] = -0.0;
  EXPECT_EQ(bandwidth_isj(x), h);
  x[20] = 1e-300;  // one more distinct value, the same binning to rounding
  EXPECT_GT(rel(bandwidth_isj(x), h), 1e-6);
}

TEST(BandwidthIsj, ScalesWithTheDataOnceTheRangeExceeds12) {
  // e = max(range/2, 6): above a range of 12 the grid is relative and h equivariant; below, the
  // absolute 6 makes h depend on the units (KDEpy does the same: its issue #201).
  std::mt19937_64 gen(3);
  std::normal_distribution<double> normal;
  std::vector<double> x(800), scaled(800);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 10 * normal(gen);
  for (std::size_t i = 0; i < x.size(); ++i) scaled[i] = 8 * x[i];  // powers of 2: exact
  EXPECT_EQ(bandwidth_isj(scaled), 8 * bandwidth_isj(x));
  for (std::size_t i = 0; i < x.size(); ++i) scaled[i] = x[i] / 128;  // range below 12
  EXPECT_GT(rel(bandwidth_isj(scaled), bandwidth_isj(x) / 128), 0.1);
}

}  // namespace
}  // namespace kf
