// Mixed-data product kernels against statsmodels (tests/fixtures/mixed_cases.json, written by
// python/make_fixture_mixed.py): KernelReg(reg_type='lc') fits and its cv_ls objective,
// KDEMultivariate pdfs and its cv_ml objective at given bandwidths, the normal reference, and our
// bandwidth search against statsmodels' own optimum (scipy's fmin) and a box-bounded scipy
// Nelder–Mead on statsmodels' objective; then identities, the all-continuous case against
// regression_evaluate, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "kernelformer/regression/mixed_kernel.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "test_paths.hpp"

namespace kf {
namespace {

constexpr double kRtol = 1e-10;  // statsmodels' numbers at given bandwidths
constexpr double kOptRtol = 1e-9;

nlohmann::json cases() {
  std::ifstream f(std::string(KF_FIXTURES_DIR) + "/mixed_cases.json");
  return nlohmann::json::parse(f)["cases"];
}

matrix<double> rows_of(const nlohmann::json& j) {
  const auto r = j.get<std::vector<std::vector<double>>>();
  matrix<double> m(index(r.size()), r.empty() ? 0 : index(r[0].size()));
  for (std::size_t i = 0; i < r.size(); ++i)
    for (std::size_t k = 0; k < r[i].size(); ++k) m(index(i), index(k)) = r[i][k];
  return m;
}

mixed_spec spec_of(const std::string& var_type, std::vector<double> bw = {}) {
  mixed_spec s;
  for (const char c : var_type)
    s.types.push_back(c == 'c'   ? column_type::continuous
                      : c == 'u' ? column_type::unordered
                                 : column_type::ordered);
  s.bandwidth = std::move(bw);
  return s;
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

// null in the fixture: statsmodels answered nan or inf (no weight in a sum).
void expect_values(const std::vector<double>& got, const nlohmann::json& want, bool nan_if_null,
                   const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (want[i].is_null()) {
      EXPECT_TRUE(nan_if_null ? std::isnan(got[i]) : got[i] == 0) << what << "[" << i << "]";
      continue;
    }
    EXPECT_LT(rel(got[i], want[i].get<double>()), kRtol)
        << what << "[" << i << "] " << got[i] << " against statsmodels' " << want[i];
  }
}

TEST(MixedKernel, FitsDensitiesAndObjectivesEqualStatsmodels) {
  int checked = 0;
  for (const auto& c : cases()) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto x = rows_of(c["x"]), xq = rows_of(c["xq"]);
    const auto y = c["y"].get<std::vector<double>>();
    for (const auto& g : c["given"]) {
      const auto spec = spec_of(c["var_type"], g["bw"].get<std::vector<double>>());
      SCOPED_TRACE(g["bw"].dump());
      expect_values(mixed_nw(spec, x.cview(), y, xq.cview()), g["nw"], true, "nw");
      expect_values(mixed_density(spec, x.cview(), xq.cview()), g["pdf"], false, "pdf");
      const double cv_ls = mixed_nw_cv_ls(spec, x.cview(), y);
      const double cv_ml = mixed_density_cv_ml(spec, x.cview());
      if (g["cv_ls"].is_null())
        EXPECT_EQ(cv_ls, std::numeric_limits<double>::infinity());
      else
        EXPECT_LT(rel(cv_ls, g["cv_ls"]), kRtol) << cv_ls << " against " << g["cv_ls"];
      if (g["cv_ml"].is_null())
        EXPECT_EQ(cv_ml, std::numeric_limits<double>::infinity());
      else
        EXPECT_LT(rel(cv_ml, g["cv_ml"]), kRtol) << cv_ml << " against " << g["cv_ml"];
      ++checked;
    }
    const auto nr = mixed_normal_reference(spec_of(c["var_type"]), x.cview());
    const auto want = c["normal_reference"].get<std::vector<double>>();
    for (std::size_t k = 0; k < nr.size(); ++k) EXPECT_LT(rel(nr[k], want[k]), 1e-12);
    EXPECT_EQ(mixed_levels(spec_of(c["var_type"]), x.cview()),
              c["levels"].get<std::vector<index>>());
  }
  EXPECT_GE(checked, 12);
}

// Our minimum at most statsmodels' (+1e-9 relative) wherever its optimum lies inside the box we
// search, and at most the box-bounded scipy minimum of statsmodels' own objective always.
void expect_at_most(double ours, const nlohmann::json& ref, const char* what) {
  if (ref.is_null()) return;
  const double r = ref.get<double>();
  EXPECT_LE(ours, r + kOptRtol * std::abs(r)) << what << ": ours " << ours << " against " << r;
}

TEST(MixedKernel, SearchReachesStatsmodelsOptimum) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto x = rows_of(c["x"]);
    const auto y = c["y"].get<std::vector<double>>();
    auto spec = spec_of(c["var_type"]);
    const auto ls = mixed_nw_bandwidth_cv_ls(spec, x.cview(), y);
    spec.bandwidth = ls.bandwidth;
    EXPECT_EQ(ls.objective, mixed_nw_cv_ls(spec, x.cview(), y));
    if (c["sm_cv_ls"]["admissible"]) expect_at_most(ls.objective, c["sm_cv_ls"]["objective"], "ls");
    expect_at_most(ls.objective, c["box_cv_ls"]["objective"], "ls box");
    const auto ml = mixed_density_bandwidth_cv_ml(spec_of(c["var_type"]), x.cview());
    spec.bandwidth = ml.bandwidth;
    EXPECT_EQ(ml.objective, mixed_density_cv_ml(spec, x.cview()));
    const auto& sm = c["sm_cv_ml"];
    if (sm["admissible"]) expect_at_most(ml.objective, sm["objective"], "ml");
    if (sm["admissible_raw"]) expect_at_most(ml.objective, sm["objective_raw"], "ml raw");
    expect_at_most(ml.objective, c["box_cv_ml"]["objective"], "ml box");
    std::cout << c["name"].get<std::string>() << ": cv_ls " << ls.objective << " ("
              << ls.evaluations << " evaluations), statsmodels " << c["sm_cv_ls"]["objective"]
              << ", box " << c["box_cv_ls"]["objective"] << "; cv_ml " << ml.objective << " ("
              << ml.evaluations << "), statsmodels " << sm["objective"] << ", box "
              << c["box_cv_ml"]["objective"] << "\n";
  }
}

TEST(MixedKernel, CountedLevelsAreStatsmodelsLeaveOneOutCounts) {
  // Given levels equal to the data's count change nothing, except in a leave-one-out sum that
  // leaves out a level's only point: statsmodels (and levels = 0) count c − 1 levels there, which
  // scales that row's weights by (c − 1)/(c − 2) — cancelling in the regression, not the density.
  for (const auto& c : cases()) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto x = rows_of(c["x"]);
    const auto y = c["y"].get<std::vector<double>>();
    auto spec = spec_of(c["var_type"], c["given"][0]["bw"].get<std::vector<double>>());
    const double ls_counted = mixed_nw_cv_ls(spec, x.cview(), y);
    const double ml_counted = mixed_density_cv_ml(spec, x.cview());
    spec.levels = c["levels"].get<std::vector<index>>();
    EXPECT_EQ(mixed_nw_cv_ls(spec, x.cview(), y), ls_counted);
    const double shift = c["name"] == "singleton_level" ? std::log(3.0 / 2.0) : 0.0;
    EXPECT_NEAR(mixed_density_cv_ml(spec, x.cview()) - shift, ml_counted,
                1e-12 * std::abs(ml_counted));
  }
}

// The naive reference, statsmodels' gpke term by term: products of the kernels' values (no
// logarithms), levels counted among the rows summed over, the left-out row removed.
struct naive_sums {
  double s = 0, t = 0;
};

naive_sums naive_row(const mixed_spec& spec, const matrix<double>& x, std::span<const double> y,
                     const double* q, index skip) {
  const index d = x.cols();
  std::vector<double> levels(std::size_t(d), 0);
  for (index k = 0; k < d; ++k) {
    std::vector<double> codes;
    for (index j = 0; j < x.rows(); ++j)
      if (j != skip) codes.push_back(x(j, k));
    std::sort(codes.begin(), codes.end());
    levels[std::size_t(k)] = double(std::unique(codes.begin(), codes.end()) - codes.begin());
  }
  naive_sums r;
  for (index j = 0; j < x.rows(); ++j) {
    if (j == skip) continue;
    double w = 1;
    for (index k = 0; k < d; ++k) {
      const double h = spec.bandwidth[std::size_t(k)], dx = q[k] - x(j, k);
      switch (spec.types[std::size_t(k)]) {
        case column_type::continuous:
          w *= std::exp(-dx * dx / (2 * h * h)) / std::sqrt(2 * std::numbers::pi) / h;
          break;
        case column_type::unordered:
          w *= dx == 0 ? 1 - h : h / (levels[std::size_t(k)] - 1);
          break;
        case column_type::ordered:
          w *= dx == 0 ? 1 - h : 0.5 * (1 - h) * std::pow(h, std::abs(dx));
          break;
      }
    }
    r.s += w;
    r.t += w * y[std::size_t(j)];
  }
  return r;
}

TEST(MixedKernel, EqualsTheNaiveReference) {
  // A singleton level in the unordered column, an ordered column with gaps, two continuous.
  std::mt19937_64 rng(9);
  std::normal_distribution<double> z;
  const index n = 47;
  matrix<double> x(n, 4), xq(9, 4);
  std::vector<double> y(static_cast<std::size_t>(n));
  for (index i = 0; i < n; ++i) {
    x(i, 0) = z(rng), x(i, 1) = double(i % 3), x(i, 2) = double((i * 7) % 5) * 2, x(i, 3) = z(rng);
    y[std::size_t(i)] = x(i, 0) + x(i, 1) - 0.2 * x(i, 2) + 0.3 * z(rng);
  }
  x(20, 1) = 3;  // level 3 once
  for (index i = 0; i < xq.rows(); ++i)
    for (index k = 0; k < 4; ++k) xq(i, k) = k == 0 || k == 3 ? z(rng) : x(i * 5, k);
  for (const auto& bw :
       {std::vector<double>{0.4, 0.3, 0.5, 0.7}, {1.2, 0.05, 0.95, 0.2}, {0.9, 0.6, 0.0, 0.3}}) {
    const auto spec = spec_of("cuoc", bw);
    const auto fit = mixed_nw(spec, x.cview(), y, xq.cview());
    const auto pdf = mixed_density(spec, x.cview(), xq.cview());
    for (index i = 0; i < xq.rows(); ++i) {
      const auto r = naive_row(spec, x, y, xq.cview().row(i), -1);
      EXPECT_NEAR(fit[std::size_t(i)], r.t / r.s, 1e-12 * std::abs(r.t / r.s));
      EXPECT_NEAR(pdf[std::size_t(i)], r.s / double(n), 1e-12 * r.s / double(n));
    }
    double ls = 0, ml = 0;
    for (index i = 0; i < n; ++i) {
      const auto r = naive_row(spec, x, y, x.cview().row(i), i);
      ls += (y[std::size_t(i)] - r.t / r.s) * (y[std::size_t(i)] - r.t / r.s) / double(n);
      ml -= std::log(r.s);
    }
    EXPECT_NEAR(mixed_nw_cv_ls(spec, x.cview(), y), ls, 1e-12 * ls);
    EXPECT_NEAR(mixed_density_cv_ml(spec, x.cview()), ml, 1e-12 * std::abs(ml));
  }
}

TEST(MixedKernel, APointFarFromAllOthersKeepsItsFit) {
  // Every gaussian weight of the last point underflows (e^{-19880}); statsmodels answers nan.
  matrix<double> x(5, 2, {0, 0, 0.1, 1, 0.2, 0, 0.3, 1, 100, 0});
  const std::vector<double> y{1, 2, 3, 4, 5};
  const auto spec = spec_of("cu", {0.5, 0.25});
  matrix<double> q(1, 2, {1000, 1});
  EXPECT_DOUBLE_EQ(mixed_nw(spec, x.cview(), y, q.cview())[0], 5.0);
  // Left out, the last point's fit is the nearest one's y (the next is e^{-40} behind).
  double ls = (5.0 - 4.0) * (5.0 - 4.0);
  for (index i = 0; i < 4; ++i) {
    const auto r = naive_row(spec, x, y, x.cview().row(i), i);
    ls += (y[std::size_t(i)] - r.t / r.s) * (y[std::size_t(i)] - r.t / r.s);
  }
  EXPECT_NEAR(mixed_nw_cv_ls(spec, x.cview(), y), ls / 5, 1e-12 * ls);
  EXPECT_TRUE(std::isfinite(mixed_density_cv_ml(spec, x.cview())));
}

TEST(MixedKernel, UniformCategoricalKernelDropsTheColumn) {
  // Aitchison–Aitken at λ = (c−1)/c weighs every level 1/c: the fit is that without the column,
  // the density 1/c times it.
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z;
  const index n = 41;
  matrix<double> x(n, 2), x1(n, 1);
  std::vector<double> y(static_cast<std::size_t>(n));
  for (index i = 0; i < n; ++i) {
    x(i, 0) = x1(i, 0) = z(rng);
    x(i, 1) = double(i % 3);
    y[std::size_t(i)] = std::sin(x(i, 0)) + 0.1 * z(rng);
  }
  const auto both = spec_of("cu", {0.4, 2.0 / 3.0}), one = spec_of("c", {0.4});
  const auto fit2 = mixed_nw(both, x.cview(), y, x.cview());
  const auto fit1 = mixed_nw(one, x1.cview(), y, x1.cview());
  const auto f2 = mixed_density(both, x.cview(), x.cview());
  const auto f1 = mixed_density(one, x1.cview(), x1.cview());
  for (std::size_t i = 0; i < fit1.size(); ++i) {
    EXPECT_NEAR(fit2[i], fit1[i], 1e-13 * (1 + std::abs(fit1[i])));
    EXPECT_NEAR(f2[i], f1[i] / 3, 1e-13 * f1[i]);
  }
}

TEST(MixedKernel, AllContinuousEqualsRegressionEvaluate) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-2, 2);
  for (const index d : {index(1), index(2), index(3)}) {
    const index n = 53, m = 17;
    matrix<double> x(n, d), xq(m, d);
    std::vector<double> y(static_cast<std::size_t>(n)), h;
    for (index i = 0; i < n; ++i) {
      for (index k = 0; k < d; ++k) x(i, k) = u(rng) * double(k + 1);
      y[std::size_t(i)] = std::cos(x(i, 0)) + 0.2 * u(rng);
    }
    for (index i = 0; i < m; ++i)
      for (index k = 0; k < d; ++k) xq(i, k) = u(rng) * double(k + 1);
    for (index k = 0; k < d; ++k) h.push_back(0.3 + 0.25 * double(k));
    regression_spec rs;
    rs.kernel = kernel_gaussian{};
    rs.bandwidth = h;
    rs.exact = true;
    const auto ref = regression_evaluate(rs, x.cview(), y, xq.cview(), false);
    const auto got =
        mixed_nw(spec_of(std::string(std::size_t(d), 'c'), h), x.cview(), y, xq.cview());
    ASSERT_EQ(got.size(), ref.fit.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], ref.fit[i], 1e-12 * std::max(1.0, std::abs(ref.fit[i]))) << d << " " << i;
  }
}

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(MixedKernel, BadInputsSayWhy) {
  matrix<double> x(5, 2, {0.1, 0, 0.7, 1, -0.3, 2, 1.2, 1, 0.4, 0});
  const std::vector<double> y{1, 2, 3, 4, 5};
  const auto has = [](const std::string& m, const char* part) {
    return m.find(part) != std::string::npos;
  };
  EXPECT_TRUE(has(message([&] {
                    mixed_nw(spec_of("cuo", {1, 0.2, 0.1}), x.cview(), y, x.cview());
                  }),
                  "x has 2 columns but spec.types has 3"));
  EXPECT_TRUE(has(message([&] { mixed_nw_cv_ls(spec_of("cu", {1}), x.cview(), y); }),
                  "spec.bandwidth has 1 entries for 2 columns"));
  EXPECT_TRUE(has(message([&] {
                    mixed_density_cv_ml(spec_of("cu", {1, 0.7}), x.cview());
                  }),
                  "lambda = 0.7 is outside [0, (c-1)/c"));
  EXPECT_TRUE(has(message([&] {
                    mixed_nw(spec_of("co", {1, 1.5}), x.cview(), y, x.cview());
                  }),
                  "lambda = 1.5 is outside [0, 1]"));
  EXPECT_TRUE(has(message([&] {
                    mixed_nw(spec_of("cu", {-1, 0.2}), x.cview(), y, x.cview());
                  }),
                  "bandwidth -1 is not > 0"));
  matrix<double> bad = x;
  bad(3, 1) = 0.5;
  EXPECT_TRUE(has(message([&] {
                    mixed_density(spec_of("cu", {1, 0.2}), x.cview(), bad.cview());
                  }),
                  "xq row 4 column 2 (unordered) is 0.5, not an integer code"));
  EXPECT_TRUE(has(
      message([&] {
        mixed_nw_cv_ls(spec_of("cu", {1, 0.2}), x.cview().block(0, 0, 2, 2), std::span(y).first(2));
      }),
      "needs n >= 3"));
  EXPECT_TRUE(has(message([&] {
                    mixed_nw(spec_of("cu", {1, 0.2}), x.cview(), std::span(y).first(4), x.cview());
                  }),
                  "y has 4 values for 5 rows"));
  matrix<double> one_level(4, 1, {3, 3, 3, 3});
  EXPECT_TRUE(has(message([&] { mixed_levels(spec_of("u"), one_level.cview()); }), "single level"));
  matrix<double> singleton(4, 1, {0, 0, 0, 1});
  EXPECT_TRUE(has(message([&] { mixed_density_cv_ml(spec_of("u", {0.2}), singleton.cview()); }),
                  "occurs once of 2 levels"));
  const mixed_objective f = [](std::span<const double>) { return 0.0; };
  const std::vector<column_type> t{column_type::continuous};
  const std::vector<index> lv{0};
  const std::vector<double> zero{0.0};
  EXPECT_TRUE(has(message([&] { mixed_bandwidth_search(f, zero, t, lv); }), "is not > 0"));
}

}  // namespace
}  // namespace kf
