// bandwidth_dpi against R's KernSmooth::dpill (tests/fixtures/dpill_cases.json, written by
// python/make_fixture_dpill.py): the bandwidth and every pilot quantity, on real data (cars,
// faithful, airquality, mcycle) and synthetic curves of both curvature signs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernelformer/regression/bandwidth_dpi.hpp"
#include "test_paths.hpp"

namespace kf {
namespace {

nlohmann::json cases() {
  std::ifstream f(std::string(KF_FIXTURES_DIR) + "/dpill_cases.json");
  return nlohmann::json::parse(f)["cases"];
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

TEST(BandwidthDpi, EqualsKernSmoothDpillStepByStep) {
  int checked = 0;
  const nlohmann::json all = cases();
  for (const auto& c : all) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto x = c["x"].get<std::vector<double>>(), y = c["y"].get<std::vector<double>>();
    dpi_steps st;
    const double h = bandwidth_dpi(x, y, &st);
    const auto& r = c["steps"];
    // R's raw-power quartics lose digits when |x| is large against its spread (x in years):
    // R's own value is uncertain there beyond a few digits.
    const double tol = c["ill_conditioned"].get<bool>() ? 1e-5 : 1e-9;
    EXPECT_EQ(st.n, r["n"].get<index>());
    EXPECT_EQ(st.blocks_max, r["Nmax"].get<index>());
    EXPECT_EQ(st.blocks, r["Nval"].get<index>());
    EXPECT_LT(rel(st.sigma2_quartic, r["sigsqQ"]), tol);
    EXPECT_LT(rel(st.theta24, r["th24Q"]), tol);
    EXPECT_LT(rel(st.pilot_theta22, r["gamseh"]), tol);
    EXPECT_LT(rel(st.theta22, r["th22kn"]), tol);
    EXPECT_LT(rel(st.pilot_sigma2, r["lamseh"]), tol);
    EXPECT_LT(rel(st.sigma2, r["sigsqkn"]), tol);
    EXPECT_LT(rel(h, c["h"]), tol) << h << " against R's " << c["h"];
    const auto cp = r["Cpvals"].get<std::vector<double>>();
    ASSERT_EQ(st.cp.size(), cp.size());
    for (std::size_t i = 0; i < cp.size(); ++i)
      EXPECT_NEAR(
          st.cp[i], cp[i],
          (c["ill_conditioned"].get<bool>() ? 1e-2 : 1e-8) * std::max(1.0, std::abs(cp[i])));
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(BandwidthDpi, InputOrderDoesNotMatter) {
  nlohmann::json c;
  for (const auto& item : cases())
    if (item["name"] == "sin200") c = item;
  ASSERT_FALSE(c.is_null());
  auto x = c["x"].get<std::vector<double>>(), y = c["y"].get<std::vector<double>>();
  const double h = bandwidth_dpi(x, y);
  std::reverse(x.begin(), x.end());
  std::reverse(y.begin(), y.end());
  EXPECT_DOUBLE_EQ(bandwidth_dpi(x, y), h);
}

TEST(BandwidthDpi, BadInputsSayWhy) {
  auto msg = [](std::vector<double> x, std::vector<double> y) {
    try {
      bandwidth_dpi(x, y);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg({1, 2, 3}, {1, 2, 3}).find("at least 10 points"), std::string::npos);
  EXPECT_NE(msg(std::vector<double>(20, 1.0), std::vector<double>(20, 0.5)).find("all x are equal"),
            std::string::npos);
  std::vector<double> x(20), y(20);
  for (int i = 0; i < 20; ++i) x[std::size_t(i)] = i, y[std::size_t(i)] = std::sin(i);
  y[3] = NAN;
  EXPECT_NE(msg(x, y).find("point 4 is not finite"), std::string::npos);
  // Two clusters far apart: no data within the pilot's reach of the middle of the grid.
  std::vector<double> xc, yc;
  for (int i = 0; i < 200; ++i) {
    xc.push_back(i < 100 ? 0.001 * i : 1000 + 0.001 * i);
    yc.push_back(std::sin(37.0 * i));
  }
  EXPECT_NE(msg(xc, yc).find("dpi:"), std::string::npos);
}

}  // namespace
}  // namespace kf
