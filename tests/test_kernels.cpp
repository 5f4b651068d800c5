// Each kernel's formula against its own derivatives (finite differences in double), the shape
// facts every kernel must satisfy, and the run-time parsing of kernel names.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "kernelformer/kernels.hpp"

namespace kf {
namespace {

any_kernel with_param(any_kernel k) {
  if (kernel_name(k) != "uniform" && kernel_name(k) != "inverse_distance")
    kernel_set_param(k, kernel_arg_of(k) == kernel_arg::dot ? 1.3 : 0.9);
  return k;
}

TEST(Kernels, DerivativesMatchFiniteDifferences) {
  const double eps = 1e-6;
  for (const auto& info : kernel_catalog()) {
    any_kernel k = with_param(kernel_parse(info.name).first);
    SCOPED_TRACE(std::string(info.name));
    const double p0 = kernel_param(k);
    for (double s : {0.05, 0.3, 0.5, 1.7, 3.0}) {
      if (kernel_compact(k) && std::abs(s - p0 * p0) < 1e-3) continue;  // support edge
      std::visit(
          [&](const auto& kk) {
            const double fd_s =
                (kk.template weight<double>(s + eps) - kk.template weight<double>(s - eps)) /
                (2 * eps);
            EXPECT_NEAR(kk.template dweight<double>(s), fd_s, 1e-6 * std::max(1.0, std::abs(fd_s)))
                << "s=" << s;
            if (p0 == 0) return;
            auto kp = kk, km = kk;
            kp.set_param(p0 + eps);
            km.set_param(p0 - eps);
            const double fd_p =
                (kp.template weight<double>(s) - km.template weight<double>(s)) / (2 * eps);
            EXPECT_NEAR(kk.dweight_dparam(s), fd_p, 1e-6 * std::max(1.0, std::abs(fd_p)))
                << "s=" << s;
          },
          k);
    }
  }
}

TEST(Kernels, DistanceKernelsPeakAtZeroAndDecay) {
  for (const auto& info : kernel_catalog()) {
    if (info.arg != kernel_arg::sqdist || info.name == "uniform" ||
        info.name == "inverse_distance" || info.name.find("periodic") != std::string_view::npos)
      continue;
    SCOPED_TRACE(std::string(info.name));
    const any_kernel k = with_param(kernel_parse(info.name).first);
    std::visit(
        [&](const auto& kk) {
          double prev = kk.template weight<double>(0.0);
          EXPECT_EQ(prev, kk.log_domain ? 0.0 : 1.0) << "K(q, q) = 1";
          for (double s = 0.01; s < 4; s += 0.01) {
            const double w = kk.template weight<double>(s);
            EXPECT_LE(w, prev + 1e-15);
            prev = w;
          }
          if (kk.compact) {
            EXPECT_EQ(kk.template weight<double>(0.9 * 0.9 * 1.0001), 0.0);
          }
        },
        k);
  }
}

TEST(Kernels, PeriodicKernelRepeats) {
  const kernel_periodic k{0.8, 2.0};
  EXPECT_NEAR(k.weight<double>(0.0), k.weight<double>(4.0), 1e-12);    // r = 2 = one period
  EXPECT_NEAR(k.weight<double>(0.25), k.weight<double>(6.25), 1e-12);  // r = 0.5 vs 2.5
}

TEST(Kernels, PolynomialNegativeBaseHandling) {
  const kernel_linear lin{1.0, 0.0};
  EXPECT_EQ(lin.weight<double>(-0.5), -std::numeric_limits<double>::infinity());  // weight 0
  EXPECT_NEAR(lin.weight<double>(2.0), std::log(2.0), 1e-15);
  const kernel_polynomial even{1.0, 0.0, 2};
  EXPECT_NEAR(even.weight<double>(-3.0), 2 * std::log(3.0), 1e-15);  // (−3)² = 9
  const kernel_polynomial odd{1.0, 0.0, 3};
  EXPECT_EQ(odd.weight<double>(-3.0), -std::numeric_limits<double>::infinity());
}

TEST(Kernels, ParseNamesParametersAndProducts) {
  EXPECT_EQ(kernel_name(kernel_parse("rbf").first), "gaussian");
  EXPECT_EQ(kernel_name(kernel_parse("softmax").first), "exp_dot");
  const auto g = kernel_parse("gaussian:h=0.25");
  EXPECT_DOUBLE_EQ(kernel_param(g.first), 0.25);
  const auto p = kernel_parse("periodic:h=2,period=3.5");
  EXPECT_DOUBLE_EQ(std::get<kernel_periodic>(p.first).period, 3.5);
  const auto poly = kernel_parse("polynomial:degree=3,c=0.5,t=2");
  EXPECT_EQ(std::get<kernel_polynomial>(poly.first).degree, 3);
  EXPECT_DOUBLE_EQ(std::get<kernel_polynomial>(poly.first).offset, 0.5);
  const auto prod = kernel_parse("exp_dot*gaussian:h=2");
  ASSERT_TRUE(prod.is_product());
  EXPECT_EQ(kernel_name(*prod.second), "gaussian");
  EXPECT_THROW(kernel_parse("gausian"), std::invalid_argument);
  EXPECT_THROW(kernel_parse("gaussian:t=2"), std::invalid_argument);
  EXPECT_THROW(kernel_parse("gaussian:h=abc"), std::invalid_argument);
  EXPECT_THROW(kernel_parse("gaussian:h"), std::invalid_argument);
  EXPECT_THROW(kernel_parse("polynomial:degree=2.5"), std::invalid_argument);
  EXPECT_THROW(kernel_parse("a*b*c"), std::invalid_argument);
  try {
    kernel_parse("gausian");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("epanechnikov"), std::string::npos) << "lists known names";
  }
}

TEST(Kernels, ResolveAutoTemperatureAndChecks) {
  const auto r = kernel_resolve(kernel_exp_dot{}, 64, true);
  EXPECT_DOUBLE_EQ(kernel_param(r.first), 8.0);
  EXPECT_THROW(kernel_resolve(kernel_gaussian{0.0}, 2, false), std::invalid_argument);
  EXPECT_THROW(kernel_resolve(kernel_gaussian{std::nan("")}, 2, false), std::invalid_argument);
  EXPECT_THROW(kernel_resolve(kernel_periodic{1.0, -1.0}, 2, false), std::invalid_argument);
  EXPECT_NO_THROW(kernel_resolve(kernel_gaussian{1e-25}, 2, false));
  EXPECT_THROW(kernel_resolve(kernel_gaussian{1e-25}, 2, true), std::invalid_argument);
  EXPECT_EQ(kernel_describe(kernel_gaussian{0.5}), "gaussian(h=0.5)");
}

TEST(Kernels, CatalogHasEveryKernelOnce) {
  const auto cat = kernel_catalog();
  EXPECT_EQ(cat.size(), std::variant_size_v<any_kernel>);
  for (const auto& info : cat) EXPECT_FALSE(info.doc.empty()) << info.name;
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

TEST(KernelLogWeight, BothDomainsAndThePositivePart) {
  EXPECT_DOUBLE_EQ(kernel_log_weight(kernel_gaussian{2.0}, 4.0), -0.5);  // −s / (2h²)
  EXPECT_NEAR(kernel_log_weight(kernel_epanechnikov{}, 0.25), std::log(0.75), 1e-12);  // 1 − u²
  EXPECT_EQ(kernel_log_weight(kernel_epanechnikov{}, 4.0),
            -std::numeric_limits<double>::infinity());  // outside the support
}

}  // namespace
}  // namespace kf
