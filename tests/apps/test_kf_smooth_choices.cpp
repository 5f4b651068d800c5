// End-to-end: the choices kf smooth and kf kde offer beyond leave-one-out and the two classic
// methods — k-fold and grouped CV (--cv), local polynomials and derivatives (--degree,
// --derivative), the improved Sheather–Jones density bandwidth (--bandwidth isj) — each equal to
// the library's numbers, and every misuse refused before any output is written.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/regression/bandwidth_isj.hpp"
#include "kernelformer/regression/cross_validation.hpp"
#include "kernelformer/regression/local_poly.hpp"
#include "kernelformer/regression/mixed_kernel.hpp"
#include "kernelformer/regression/smoother.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

class KfSmoothChoices : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("kf_choices_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::string csv = "t,signal,site\n";
    for (int i = 0; i < 120; ++i)
      csv += std::to_string(i * 0.05) + "," +
             std::to_string(std::sin(i * 0.05) + 0.1 * ((i * 7) % 5 - 2)) + "," +
             std::to_string(i / 20) + "\n";
    io::write_file_atomic(p("data.csv"), csv);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& name) const { return (dir / name).string(); }
  nlohmann::json summary(const std::string& name) const {
    return nlohmann::json::parse(io::read_file(p(name)));
  }
};

TEST_F(KfSmoothChoices, KfoldAndGroupedCvChooseByTheLibrarysCriterion) {
  const auto data = io::csv_read(p("data.csv"));
  const matrix<double> x(120, 1, data.columns[0]);
  auto r = run_kf("smooth " + p("data.csv") + " --x t --y signal --cv kfold:5 --cv-seed 3 " +
                  "--summary " + p("k.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("5-fold (seed 3)"), std::string::npos) << r.output;
  auto js = summary("k.json");
  EXPECT_EQ(js["cv"], "5-fold (seed 3)");
  regression_spec spec;
  spec.bandwidth = {js["bandwidth"].get<double>()};
  const cv_splits five(x.cview(), data.columns[1], cv_folds_kfold(120, 5, 3));
  EXPECT_NEAR(js["criterion_value"].get<double>(), five.criterion(spec), 1e-12);
  r = run_kf("smooth " + p("data.csv") + " --x t --y signal --cv groups:site --summary " +
             p("g.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  js = summary("g.json");
  EXPECT_EQ(js["cv"], "leave-one-group-out (6 groups)");
  spec.bandwidth = {js["bandwidth"].get<double>()};
  const cv_splits groups(x.cview(), data.columns[1], cv_folds_groups(data.columns[2]));
  EXPECT_NEAR(js["criterion_value"].get<double>(), groups.criterion(spec), 1e-12);
  r = run_kf("smooth " + p("data.csv") + " --x t --y signal --method knn --k cv --cv kfold:4");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("4-fold (seed 0) CV"), std::string::npos) << r.output;
}

TEST_F(KfSmoothChoices, DerivativeAndDegreeAreTheLibrarysFit) {
  auto r = run_kf("smooth " + p("data.csv") + " --x t --y signal --derivative 1 --bandwidth 0.6 " +
                  "--grid 9 --out " + p("d.csv") + " --summary " + p("d.json") + " --plot " +
                  p("d.svg"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("first derivative"), std::string::npos) << r.output;
  const auto data = io::csv_read(p("data.csv"));
  local_poly_spec spec;
  spec.degree = 2;  // the derivative + 1
  spec.derivative = 1;
  spec.bandwidth = 0.6;
  const local_poly_fit fit =
      local_poly_fit_data(spec, data.columns[0], data.columns[1], bandwidth_criterion::fixed);
  const auto out = io::csv_read(p("d.csv"));
  ASSERT_EQ(out.rows(), 9);
  const auto want = local_poly_predict(fit, out.columns[0]);
  for (std::size_t i = 0; i < 9; ++i) {
    EXPECT_NEAR(out.columns[1][i], want.fit[i], 1e-13) << i;
    EXPECT_NEAR(out.columns[2][i], want.se[i], 1e-13) << i;
  }
  EXPECT_EQ(summary("d.json")["degree"], 2);
  EXPECT_EQ(io::read_file(p("d.svg")).substr(0, 5), "<?xml");
  r = run_kf("smooth " + p("data.csv") + " --x t --y signal --degree 3 --plot-criterion " +
             p("c.svg") + " --summary " + p("c.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(summary("c.json")["criterion"], "loo_cv");
  r = run_kf("smooth " + p("data.csv") + " --x t --y signal --degree 1 --summary " + p("l.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(summary("l.json")["method"], "local-linear");
}

TEST_F(KfSmoothChoices, KdeIsjIsTheLibrarysBandwidth) {
  const auto r =
      run_kf("kde " + p("data.csv") + " --x signal --bandwidth isj --summary " + p("i.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto data = io::csv_read(p("data.csv"));
  EXPECT_DOUBLE_EQ(summary("i.json")["bandwidth"].get<double>(), bandwidth_isj(data.columns[1]));
}

// Two columns: --plot draws a filled contour map (viz/contour.hpp) of the density or the fitted
// surface on the grid, the data on top; with --at points there is no grid, so it is refused.
TEST_F(KfSmoothChoices, TwoColumnPlotsAreContourMaps) {
  for (const std::string& cmd : {"kde " + p("data.csv") + " --x t,signal",
                                 "smooth " + p("data.csv") + " --x t,signal --y site"}) {
    SCOPED_TRACE(cmd);
    const auto r = run_kf(cmd + " --grid 60 --plot " + p("map.svg") + " --quiet");
    ASSERT_EQ(r.code, 0) << r.output;
    const std::string svg = io::read_file(p("map.svg"));
    EXPECT_EQ(svg.substr(0, 5), "<?xml");
    EXPECT_NE(svg.find("<path"), std::string::npos);
    EXPECT_LT(svg.size(), 1500000u);
    fs::remove(p("map.svg"));
    const auto at = run_kf(cmd + " --at " + p("data.csv") + " --plot " + p("map.svg"));
    EXPECT_EQ(at.code, 2) << at.output;
    EXPECT_NE(at.output.find("contour map on the grid"), std::string::npos) << at.output;
    EXPECT_FALSE(fs::exists(p("map.svg")));
  }
}

// --categorical / --ordered: text levels coded in sorted order, the bandwidths by least-squares
// (smooth) or likelihood (kde) CV on the product kernels, the fit at the data or --at points equal
// to the library's; a level the data lack is a data error naming the file.
TEST_F(KfSmoothChoices, CategoricalColumnsTakeTheMixedKernels) {
  std::string csv = "w,kind,grade,y\n";
  for (int i = 0; i < 90; ++i)
    csv += fmt::format(
        "{},{},{},{}\n", 0.1 * i, i % 3 == 0 ? "red" : "blue", 1 + i % 4,
        std::sin(0.1 * i) + (i % 3 == 0 ? 1.0 : 0.0) + 0.2 * (i % 4) + 0.05 * ((i * 7) % 5));
  io::write_file_atomic(p("mixed.csv"), csv);
  io::write_file_atomic(p("at.csv"), "w,kind,grade\n2.5,red,3\n2.5,blue,3\n");
  const std::string base =
      "smooth " + p("mixed.csv") + " --x w,kind,grade --y y --categorical kind --ordered grade";
  auto r =
      run_kf(base + " --at " + p("at.csv") + " --out " + p("m.csv") + " --summary " + p("m.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("Aitchison-Aitken"), std::string::npos) << r.output;
  const auto js = summary("m.json");
  io::csv_options opt;
  opt.columns = {"w", "grade", "y"};
  opt.text_columns = {"kind"};
  const io::csv_table t = io::csv_read(p("mixed.csv"), opt);
  matrix<double> x(90, 3);
  for (index i = 0; i < 90; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    x(i, 0) = t.columns[t.column("w")][iu];
    x(i, 1) = t.text[0][iu] == "blue" ? 0 : 1;  // text levels sorted: blue, red
    x(i, 2) = t.columns[t.column("grade")][iu];
  }
  mixed_spec spec;
  spec.types = {column_type::continuous, column_type::unordered, column_type::ordered};
  spec.bandwidth = js["bandwidth"].get<std::vector<double>>();
  const auto& y = t.columns[t.column("y")];
  EXPECT_NEAR(js["criterion_value"].get<double>(), mixed_nw_cv_ls(spec, x.cview(), y), 1e-12);
  const std::vector<double> at{2.5, 1, 3, 2.5, 0, 3};
  const auto want = mixed_nw(spec, x.cview(), y, const_matrix_view<double>{at.data(), 2, 3});
  io::csv_options fit_only;
  fit_only.columns = {"fit"};
  const auto out = io::csv_read(p("m.csv"), fit_only);
  const auto& fit = out.columns[0];
  for (std::size_t i = 0; i < 2; ++i) EXPECT_NEAR(fit[i], want[i], 1e-12) << i;
  r = run_kf("kde " + p("mixed.csv") +
             " --x w,kind,grade --categorical kind --ordered grade --bandwidth cv-ml --summary " +
             p("d.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  spec.bandwidth = summary("d.json")["bandwidth"].get<std::vector<double>>();
  EXPECT_NEAR(summary("d.json")["criterion_value"].get<double>(),
              mixed_density_cv_ml(spec, x.cview()), 1e-9);
  io::write_file_atomic(p("bad_at.csv"), "w,kind,grade\n2.5,green,3\n");
  r = run_kf(base + " --at " + p("bad_at.csv") + " --out " + p("no.csv"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("level 'green'"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(p("no.csv")));
}

TEST_F(KfSmoothChoices, MisuseIsRefusedBeforeAnythingIsWritten) {
  for (const char* bad : {" --cv kfold:1",
                          " --cv kfold:x",
                          " --cv nope",
                          " --cv kfold:5 --bandwidth gcv",
                          " --cv kfold:5 --bandwidth 0.3",
                          " --method knn --k 5 --cv kfold:3",
                          " --cv groups:missing",
                          " --cv kfold:500",
                          " --degree 4",
                          " --derivative 4",
                          " --degree 1 --derivative 2",
                          " --degree 2 --method knn",
                          " --degree 2 --k 5",
                          " --derivative 1 --bandwidth dpi",
                          " --degree 2 --x t,site",
                          " --degree 2 --save m.st",
                          " --method lowess --degree 2",
                          " --degree 3 --kernel rff",
                          " --categorical site",
                          " --x t,site --categorical site --method knn",
                          " --x t,site --categorical site --plot p.svg",
                          " --x t,site --categorical t,site --ordered site",
                          " --x t,site --ordered site --exact"}) {
    const auto r =
        run_kf("smooth " + p("data.csv") + " --x t --y signal --out " + p("no.csv") + bad);
    EXPECT_NE(r.code, 0) << bad << "\n" << r.output;
    EXPECT_NE(r.output.find("error"), std::string::npos) << bad << "\n" << r.output;
    EXPECT_FALSE(fs::exists(p("no.csv"))) << bad;
  }
}

}  // namespace
}  // namespace kf
