// Sheather–Jones bandwidths (regression/bandwidth.hpp) against R's bw.SJ on real data
// (python/make_fixture_bandwidth_sj.py): both methods, every-pair and binned counting, R's
// default tolerance (the same Brent iterations) and the equation's root; and through kde_fit.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernelformer/io/npy.hpp"
#include "kernelformer/regression/bandwidth.hpp"
#include "kernelformer/regression/kde.hpp"
#include "test_paths.hpp"

namespace kf {
namespace {

matrix<double> fixture(const std::string& name) {
  return io::npy_read(std::string(KF_FIXTURES_DIR).append("/sj_").append(name).append(".npy"))
      .to_matrix<double>();
}

std::vector<double> values(const matrix<double>& m) {
  return {m.values().begin(), m.values().end()};
}

TEST(SheatherJones, MatchesRsBwSJ) {
  const matrix<double> ref = fixture("reference");
  const char* names[] = {"eruptions", "precip", "rivers", "quakes_mag", "mixture"};
  for (index i = 0; i < 5; ++i) {
    SCOPED_TRACE(names[i]);
    const auto x = values(fixture(names[i]));
    const double ste = bandwidth_sheather_jones(x);
    const double root = bandwidth_sheather_jones(x, sj_method::solve_the_equation, 1000, 1e-12);
    const double dpi = bandwidth_sheather_jones(x, sj_method::direct_plug_in);
    EXPECT_NEAR(ste, ref(i, 0), 1e-10 * ref(i, 0));
    EXPECT_NEAR(root, ref(i, 1), 1e-9 * ref(i, 1));
    EXPECT_NEAR(dpi, ref(i, 2), 1e-10 * ref(i, 2));
  }
}

TEST(SheatherJones, ThroughKdeFitPerColumnAndItsErrors) {
  const auto x = values(fixture("eruptions"));
  matrix<double> m(static_cast<index>(x.size()), 1);
  for (std::size_t i = 0; i < x.size(); ++i) m(static_cast<index>(i), 0) = x[i];
  const kde_fit f = kde_fit_data(kernel_gaussian{}, m.cview(), bandwidth_criterion::sj);
  ASSERT_EQ(f.bandwidth.size(), 1u);
  EXPECT_EQ(f.bandwidth[0], bandwidth_sheather_jones(x));
  EXPECT_EQ(bandwidth_criterion_parse("sj"), bandwidth_criterion::sj);
  EXPECT_EQ(bandwidth_criterion_parse("sj-dpi"), bandwidth_criterion::sj_dpi);
  EXPECT_THROW(bandwidth_sheather_jones(std::vector<double>{1.0}), std::invalid_argument);
  EXPECT_THROW(bandwidth_sheather_jones(std::vector<double>(10, 2.0)), std::invalid_argument);
  EXPECT_THROW(bandwidth_sheather_jones(std::vector<double>{1.0, NAN, 2.0}), std::invalid_argument);
}

}  // namespace
}  // namespace kf
