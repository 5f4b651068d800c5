// End-to-end: kf classify on small CSV files — probabilities, summary, decision-region plot, the
// confusion matrix, and bad inputs: one clear line, a non-zero exit, nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

class KfClassify : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("kf_classify_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    // Two text classes on either side of a + b = 1, a few of each on the wrong side.
    std::string csv = "a,b,species,note\n";
    for (int i = 0; i < 60; ++i) {
      const double a = std::fmod(i * 0.37, 1.0), b = std::fmod(i * 0.61 + 0.1, 1.0);
      const bool upper = (a + b > 1.0) != (i % 11 == 0);
      csv += std::to_string(a) + "," + std::to_string(b) + "," +
             (upper ? "\"iris, virginica\"" : "setosa") + ",text " + std::to_string(i) + "\n";
    }
    io::write_file_atomic(p("data.csv"), csv);
    io::write_file_atomic(p("one.csv"), "a,b,species\n1,2,x\n2,3,x\n3,1,x\n");
    io::write_file_atomic(p("blank.csv"), "a,b,species\n1,2,x\n2,3,\n3,1,y\n4,1,y\n0,0,x\n");
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& name) const { return (dir / name).string(); }
};

TEST_F(KfClassify, WritesProbabilitiesSummaryAndPlots) {
  const auto r = run_kf("classify " + p("data.csv") + " --x a,b --y species --out " +
                        p("proba.csv") + " --summary " + p("s.json") + " --plot " +
                        p("regions.svg") + " --grid 40 --plot-criterion " + p("crit.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("confusion matrix"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("LOO accuracy"), std::string::npos);
  EXPECT_NE(r.output.find("iris, virginica"), std::string::npos);
  // The label columns are text: read the numbers back by name (the CSV reader skips the rest).
  io::csv_options opt;
  opt.columns = {"a", "b", "p_iris, virginica", "p_setosa"};
  opt.text_columns = {"species", "predicted"};
  const auto t = io::csv_read(p("proba.csv"), opt);
  ASSERT_EQ(t.rows(), 60);
  for (index i = 0; i < 60; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    EXPECT_NEAR(t.columns[2][iu] + t.columns[3][iu], 1.0, 1e-12);
    EXPECT_EQ(t.text[1][iu], t.columns[2][iu] >= t.columns[3][iu] ? "iris, virginica" : "setosa");
  }
  const std::string js = io::read_file(p("s.json"));
  for (const char* key : {"\"classes\"", "\"bandwidth\"", "\"loo_log_loss\"", "\"loo_accuracy\"",
                          "\"confusion\"", "\"criterion\": \"loo-log-loss\""})
    EXPECT_NE(js.find(key), std::string::npos) << key;
  EXPECT_EQ(io::read_file(p("regions.svg")).substr(0, 5), "<?xml");
  EXPECT_EQ(io::read_file(p("crit.png")).substr(1, 3), "PNG");
}

TEST_F(KfClassify, KnnByAccuracyAndFixedBandwidth) {
  auto r = run_kf("classify " + p("data.csv") +
                  " --x a,b --y species --method knn --k cv --k-max 9 --criterion accuracy "
                  "--summary " +
                  p("k.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("k = "), std::string::npos);
  EXPECT_NE(io::read_file(p("k.json")).find("\"criterion\": \"loo-accuracy\""), std::string::npos);
  r = run_kf("classify " + p("data.csv") +
             " --x a --y species --kernel epanechnikov "
             "--bandwidth 0.2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("bandwidth = 0.2 (given)"), std::string::npos) << r.output;
  r = run_kf("classify " + p("blank.csv") + " --x a,b --y species --na drop --method knn --k 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped 1 rows"), std::string::npos) << r.output;
  r = run_kf("classify --help");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("Examples:"), std::string::npos);
}

// --at: the fitted classifier at new points, against the sums written out (no point left out).
TEST_F(KfClassify, AtPointsEqualBruteForceSums) {
  io::write_file_atomic(p("at.csv"), "b,a\n0.2,0.1\n0.9,0.8\n0.5,0.55\n3,3\n");
  const double h = 0.3;
  const auto r = run_kf("classify " + p("data.csv") + " --x a,b --y species --bandwidth 0.3 --at " +
                        p("at.csv") + " --out " + p("at_proba.csv") + " --summary " + p("at.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("probabilities at the 4 points"), std::string::npos) << r.output;
  io::csv_options opt;
  opt.columns = {"a", "b"};
  opt.text_columns = {"species"};
  const auto train = io::csv_read(p("data.csv"), opt);
  opt.columns = {"a", "b", "p_iris, virginica", "p_setosa"};
  opt.text_columns = {"predicted"};
  const auto t = io::csv_read(p("at_proba.csv"), opt);
  ASSERT_EQ(t.rows(), 4);
  const double at[4][2] = {{0.1, 0.2}, {0.8, 0.9}, {0.55, 0.5}, {3, 3}};
  for (std::size_t q = 0; q < 4; ++q) {
    double num = 0, den = 0;
    for (std::size_t j = 0; j < std::size_t(train.rows()); ++j) {
      const double da = at[q][0] - train.columns[0][j], db = at[q][1] - train.columns[1][j];
      const double w = std::exp(-(da * da + db * db) / (2 * h * h));
      den += w;
      num += train.text[0][j] == "setosa" ? w : 0.0;
    }
    EXPECT_NEAR(t.columns[0][q], at[q][0], 1e-12);
    EXPECT_NEAR(t.columns[3][q], num / den, 1e-9) << "point " << q;
    EXPECT_NEAR(t.columns[2][q] + t.columns[3][q], 1.0, 1e-12);
    EXPECT_EQ(t.text[0][q], t.columns[2][q] >= t.columns[3][q] ? "iris, virginica" : "setosa");
  }
  EXPECT_NE(io::read_file(p("at.json")).find("\"rows\": 4"), std::string::npos);
}

// --bins K: a continuous --y becomes K quantile classes named lo..hi (20 rows each here).
TEST_F(KfClassify, BinsAContinuousYIntoQuantileClasses) {
  const auto r = run_kf("classify " + p("data.csv") + " --x a --y b --bins 3 --summary " +
                        p("s.json") + " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto js = nlohmann::json::parse(io::read_file(p("s.json")));
  ASSERT_EQ(js["classes"].size(), 3u) << js.dump();
  for (const auto& c : js["classes"])
    EXPECT_NE(c.get<std::string>().find(".."), std::string::npos) << c;
}

TEST_F(KfClassify, BadInputsFailWithOneLineAndWriteNothing) {
  const std::string out = " --out " + p("o.csv") + " --summary " + p("o.json");
  struct bad {
    std::string args, expect;
  };
  const bad cases[] = {
      {p("data.csv") + " --x a,b --y label", "no column named 'label'"},
      {p("one.csv") + " --x a,b --y species", "single class"},
      {p("data.csv") + " --x a,b --y note", "distinct values"},
      {p("data.csv") + " --x a,species --y species", "also an --x column"},
      {p("data.csv") + " --x a,note --y species", "column 'note'"},
      {p("blank.csv") + " --x a,b --y species", "line 3, column 'species'"},
      {p("data.csv") + " --x a --y species --plot " + p("r.svg"), "2 --x columns"},
      {p("data.csv") + " --x a,b --y species --method knn --k 60", "1..59"},
      {p("data.csv") + " --x a,b --y species --bandwidth 1,2,3", "3 values for 2"},
      {p("data.csv") + " --x a,b --y species --kernel exp_dot", "distance kernel"},
      {p("data.csv") + " --x a,b --y species --criterion brier", "--criterion"},
      {p("data.csv") + " --x a,b --y species --plot-criterion " + p("nodir/c.png"),
       "--plot-criterion"},
      {p("missing.csv") + " --x a,b --y species", "missing.csv"},
      {p("data.csv") + " --x a,b --y species --at " + p("uvw.csv"), "needs the x column"},
      {p("data.csv") + " --x a,b --y species --at " + p("nope.csv"), "nope.csv"},
      {p("data.csv") + " --x a --y b", "add --bins K"},  // a quantity, not classes
      {p("data.csv") + " --x a --y species --bins 3", "not all numbers"},
  };
  io::write_file_atomic(p("uvw.csv"), "u,v,w\n1,2,3\n");
  {  // --at without --out: nowhere to write the probabilities
    const auto r =
        run_kf("classify " + p("data.csv") + " --x a,b --y species --at " + p("one.csv"));
    EXPECT_EQ(r.code, test::error_exit(r.output)) << r.output;
    EXPECT_NE(r.output.find("--at needs --out"), std::string::npos) << r.output;
  }
  for (const auto& c : cases) {
    const auto r = run_kf("classify " + c.args + out);
    EXPECT_EQ(r.code, test::error_exit(r.output)) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_FALSE(fs::exists(p("o.csv")) || fs::exists(p("o.json"))) << c.args;
  }
}

}  // namespace
}  // namespace kf
