// End-to-end: kf smooth and kf kde on real CSV files — outputs and summaries, plots, and every
// kind of bad input: one clear line, a non-zero exit, nothing written.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

class KfSmooth : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("kf_smooth_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::string csv = "t,signal,z\n";
    for (int i = 0; i < 60; ++i)
      csv += std::to_string(i * 0.1) + "," +
             std::to_string(std::sin(i * 0.1) + 0.1 * ((i * 7) % 5 - 2)) + "," +
             std::to_string(i % 7) + "\n";
    io::write_file_atomic(p("data.csv"), csv);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& name) const { return (dir / name).string(); }
};

TEST_F(KfSmooth, WritesFitSummaryAndPlots) {
  const auto r = run_kf("smooth " + p("data.csv") +
                        " --x t --y signal --method local-linear --grid 50 --out " + p("fit.csv") +
                        " --summary " + p("s.json") + " --plot " + p("fit.svg") +
                        " --plot-criterion " + p("crit.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("bandwidth ="), std::string::npos);
  EXPECT_NE(r.output.find("df ="), std::string::npos);
  const auto fit = io::csv_read(p("fit.csv"));
  EXPECT_EQ(fit.names, (std::vector<std::string>{"t", "fit", "se"}));
  EXPECT_EQ(fit.rows(), 50);
  const std::string js = io::read_file(p("s.json"));
  for (const char* key : {"\"n\"", "\"method\"", "\"kernel\"", "\"bandwidth\"", "\"criterion\"",
                          "\"criterion_value\"", "\"df\""})
    EXPECT_NE(js.find(key), std::string::npos) << key;
  EXPECT_EQ(io::read_file(p("fit.svg")).substr(0, 5), "<?xml");
  EXPECT_EQ(io::read_file(p("crit.png")).substr(1, 3), "PNG");
}

TEST_F(KfSmooth, BuiltInDataAndKnnAndTwoColumns) {
  auto r = run_kf("smooth");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("built-in"), std::string::npos);
  r = run_kf("smooth " + p("data.csv") +
             " --x t --y signal --method knn --k 5 --knn-weights distance --out " + p("k.csv"));
  EXPECT_EQ(r.code, 0) << r.output;
  r = run_kf("smooth " + p("data.csv") + " --x t,z --y signal --bandwidth gcv --grid 10 --out " +
             p("two.csv"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(io::csv_read(p("two.csv")).rows(), 100);
  r = run_kf("kde " + p("data.csv") + " --x t --bandwidth cv-ls --out " + p("d.csv") + " --plot " +
             p("d.png") + " --summary " + p("k.json"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(io::csv_read(p("d.csv")).names, (std::vector<std::string>{"t", "density"}));
  EXPECT_EQ(run_kf("kde").code, 0);
}

TEST_F(KfSmooth, BadInputsFailCleanlyAndWriteNothing) {
  io::write_file_atomic(p("text.csv"), "x,y\n1,2\n2,abc\n3,4\n");
  io::write_file_atomic(p("empty.csv"), "");
  io::write_file_atomic(p("nan.csv"), "x,y\n1,2\n2,nan\n3,4\n");
  io::write_file_atomic(p("same.csv"), "x,y\n1,2\n1,3\n1,4\n1,5\n");
  io::write_file_atomic(p("two.csv"), "x,y\n1,2\n2,3\n");
  const std::string outs = " --out " + p("o.csv") + " --summary " + p("o.json");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"smooth " + p("text.csv") + outs, "line 3, column 'y'"},
      {"smooth " + p("empty.csv") + outs, "no data rows"},
      {"smooth " + p("nan.csv") + outs, "not finite"},
      {"smooth " + p("same.csv") + outs, "constant"},
      {"smooth " + p("two.csv") + outs, "at least 3 points"},
      {"smooth " + p("missing.csv") + outs, "missing.csv"},
      {"smooth " + p("data.csv") + " --x nope --y signal" + outs, "no column named 'nope'"},
      {"smooth " + p("data.csv") + " --x t --y signal --method cubic" + outs, "--method"},
      {"smooth " + p("data.csv") + " --x t --y signal --kernel gausian" + outs, "unknown kernel"},
      {"smooth " + p("data.csv") + " --x t --y signal --kernel exp_dot" + outs, "distance kernel"},
      {"smooth " + p("data.csv") + " --x t --y signal --bandwidth magic" + outs, "--bandwidth"},
      {"smooth " + p("data.csv") + " --x t --y signal --bandwidth -0.5" + outs, "positive"},
      {"smooth " + p("data.csv") + " --x t --y signal --bandwidth cv-ml" + outs,
       "density criterion"},
      {"smooth " + p("data.csv") + " --x t --y signal --method knn --k 500" + outs, "k = 500"},
      {"smooth " + p("data.csv") + " --x t --y signal --out " + p("fit.txt"), ".csv"},
      {"smooth " + p("data.csv") + " --x t --y signal --plot " + p("fig.gif") + outs,
       ".svg or .png"},
      {"smooth " + p("data.csv") + " --x t,z --y signal --plot " + p("f.svg") + outs, "1-D"},
      {"kde " + p("data.csv") + " --x t --kernel exp_dot" + outs, "not a probability density"},
      {"kde " + p("data.csv") + " --x t --bandwidth gcv" + outs, "regression criterion"},
      {"kde " + p("same.csv") + " --x x" + outs, "constant"},
  };
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(args);
    const auto r = run_kf(args);
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(p("o.csv")));
    EXPECT_FALSE(fs::exists(p("o.json")));
  }
}

TEST(KfSmoothHelp, DocumentsOptionsWithExamples) {
  for (const char* cmd : {"smooth --help", "kde --help"}) {
    const auto r = run_kf(cmd);
    EXPECT_EQ(r.code, 0);
    for (const char* opt : {"--x", "--kernel", "--bandwidth", "--grid", "--at", "--out",
                            "--summary", "--plot", "Examples"})
      EXPECT_NE(r.output.find(opt), std::string::npos) << cmd << " " << opt;
  }
}

// --loo: every training point's leave-one-out fit and hat diagonal, against brute-force sums.
TEST_F(KfSmooth, LooFitsAndHatDiagonalMatchBruteForce) {
  auto r =
      run_kf("smooth " + p("data.csv") + " --x t --y signal --bandwidth 0.3 --loo " + p("loo.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto data = io::csv_read(p("data.csv"));
  const auto loo = io::csv_read(p("loo.csv"));
  ASSERT_EQ(loo.names,
            (std::vector<std::string>{"t", "signal", "fit", "loo_fit", "hat", "loo_residual"}));
  const auto& t = data.columns[0];
  const auto& y = data.columns[1];
  ASSERT_EQ(loo.rows(), static_cast<index>(t.size()));
  for (std::size_t i = 0; i < t.size(); ++i) {
    double z = 0, zy = 0;
    for (std::size_t j = 0; j < t.size(); ++j) {
      if (j == i) continue;
      const double w = std::exp(-0.5 * (t[i] - t[j]) * (t[i] - t[j]) / 0.09);
      z += w, zy += w * y[j];
    }
    EXPECT_NEAR(loo.columns[3][i], zy / z, 1e-9) << i;
    EXPECT_NEAR(loo.columns[4][i], 1.0 / (1.0 + z), 1e-9) << i;
    EXPECT_NEAR(loo.columns[2][i], (zy + y[i]) / (z + 1.0), 1e-9) << i;
    EXPECT_NEAR(loo.columns[5][i], y[i] - zy / z, 1e-9) << i;
  }
  // knn: the k nearest other points; W_ii = 1/k.
  r = run_kf("smooth " + p("data.csv") + " --x t --y signal --method knn --k 4 --loo " +
             p("knn.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto knn = io::csv_read(p("knn.csv"));
  EXPECT_NEAR(knn.columns[4][10], 0.25, 1e-12);
  EXPECT_NEAR(knn.columns[3][10], (y[8] + y[9] + y[11] + y[12]) / 4, 1e-9);
  r = run_kf("smooth " + p("data.csv") + " --x t --y signal --loo " + p("loo.txt"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("--loo"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kf
