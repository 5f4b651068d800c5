// End-to-end: kf train series on a monthly-like noisy series written by the test (20 years of
// values with a trend, a yearly season and noise), its outputs, kf predict on the checkpoint it
// saves (equal to the run's own teacher-forced forecast), and bad inputs: one line, non-zero
// exit, nothing written.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>
#include <random>
#include <string>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

// month,sales for months 1 … n; `skip` leaves that month's row out, `blank` leaves its value
// empty.
std::string monthly_csv(int n, int skip = 0, int blank = 0) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g(0.0, 3.0);
  std::string csv = "month,sales\n";
  for (int t = 1; t <= n; ++t) {
    const double a = 2 * std::numbers::pi * t / 12;
    const double v = 100 + 0.05 * t + 10 * std::sin(a) + 4 * std::cos(2 * a) + g(rng);
    if (t == skip) continue;
    csv +=
        t == blank ? std::to_string(t) + ",\n" : std::to_string(t) + "," + std::to_string(v) + "\n";
  }
  return csv;
}

struct tmp_dir {
  fs::path path;
  explicit tmp_dir(const std::string& name)
      : path(fs::temp_directory_path() / (name + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~tmp_dir() { fs::remove_all(path); }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};

TEST(KfSeries, MonthlySeriesThenPredictOnTheCheckpoint) {
  const tmp_dir d("kf_series_");
  io::write_file_atomic(d / "sales.csv", monthly_csv(240));
  const auto r = run_kf("train series " + (d / "sales.csv") +
                        " --y sales --x month --window 24 --horizon 24 --epochs 60 --patience 10 "
                        "--dropout 0 --future 12 --out " +
                        (d / "run") + " --save " + (d / "run/series.safetensors") + " --summary " +
                        (d / "s.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  std::vector<std::string> files{d / "s.json"};
  for (const char* f : {"forecast.csv", "forecast.png", "future.csv", "test_windows.csv",
                        "loss.csv", "loss.png", "acf.png", "summary.json", "series.safetensors"}) {
    EXPECT_TRUE(fs::exists(d / ("run/" + std::string(f)))) << f;
    files.push_back(d / ("run/" + std::string(f)));
  }
  // The command ends with one line per file it wrote, and there is no other file.
  std::sort(files.begin(), files.end());
  EXPECT_EQ(test::written_lines(r.output), files) << r.output;
  EXPECT_EQ(std::distance(fs::directory_iterator(d / "run"), fs::directory_iterator{}), 9);
  const auto js = nlohmann::json::parse(io::read_file(d / "s.json"));
  EXPECT_EQ(js["period"], 12);
  EXPECT_EQ(js["period_detected"], true);
  EXPECT_EQ(js["window"], 24);
  EXPECT_EQ(js["values"], 240);
  const double mean_mse = js["errors"]["mean"]["mse"];
  for (const char* f : {"transformer", "nw", "seasonal_naive"})
    for (const char* how : {"rollout", "teacher_forced"}) {
      SCOPED_TRACE(std::string(f) + " " + how);
      const double mse = js["errors"][f][how]["mse"];
      EXPECT_LT(mse, 0.5 * mean_mse);
      EXPECT_NEAR(double(js["errors"][f][how]["rmse"]), std::sqrt(mse), 1e-9 * std::sqrt(mse));
    }
  const auto fc = io::csv_read(d / "run/forecast.csv");
  ASSERT_EQ(fc.rows(), 24);
  EXPECT_EQ(fc.columns[fc.column("month")].front(), 217);
  EXPECT_EQ(io::csv_read(d / "run/future.csv").columns[0].front(), 241);
  // kf predict on the saved checkpoint and the run's test windows (raw values: the checkpoint
  // carries the standardization) gives the run's teacher-forced transformer forecast.
  const auto p = run_kf("predict --model " + (d / "run/series.safetensors") + " --input " +
                        (d / "run/test_windows.csv") + " --out " + (d / "next.csv"));
  ASSERT_EQ(p.code, 0) << p.output;
  const auto next = io::csv_read(d / "next.csv");
  const auto& tf = fc.columns[fc.column("transformer_teacher_forced")];
  ASSERT_EQ(next.rows(), 24);
  for (std::size_t i = 0; i < tf.size(); ++i)
    EXPECT_NEAR(next.columns[0][i], tf[i], 1e-5 * std::abs(tf[i])) << "row " << i;
  // kf inspect reads its heads on the series' own last window (kept in the checkpoint), not on
  // the periodic experiment's sine; the same window as the last row of the series gives the
  // same numbers as --data on a file holding it.
  const auto in = run_kf("inspect " + (d / "run/series.safetensors") + " --csv " + (d / "h.csv"));
  ASSERT_EQ(in.code, 0) << in.output;
  EXPECT_NE(in.output.find("the series' last 24 values"), std::string::npos) << in.output;
  EXPECT_EQ(in.output.find("sin(0.1 t)"), std::string::npos) << in.output;
  const auto vals = io::csv_read(d / "sales.csv").columns[1];
  std::string row;
  for (std::size_t i = vals.size() - 24; i < vals.size(); ++i)
    row += fmt::format("{}{:.17g}", i > vals.size() - 24 ? "," : "", vals[i]);
  io::write_file_atomic(d / "last.csv", row + "\n");
  const auto by_file = run_kf("inspect " + (d / "run/series.safetensors") + " --data " +
                              (d / "last.csv") + " --csv " + (d / "h2.csv"));
  ASSERT_EQ(by_file.code, 0) << by_file.output;
  EXPECT_EQ(io::read_file(d / "h.csv"), io::read_file(d / "h2.csv"));
}

TEST(KfSeries, FillAndDefaults) {
  const tmp_dir d("kf_series_fill_");
  io::write_file_atomic(d / "gap.csv", monthly_csv(120, 0, 30));
  // No --x: the rows are the steps; the blank value filled; default window and horizon.
  const auto r = run_kf("train series " + (d / "gap.csv") +
                        " --y sales --fill linear --epochs 3 --quiet --summary " + (d / "s.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output, "");
  const auto js = nlohmann::json::parse(io::read_file(d / "s.json"));
  EXPECT_EQ(js["filled"], 1);
  EXPECT_EQ(js["horizon"], 24);  // 20% of 120
  EXPECT_EQ(js["window"], 24);   // (120 − 24) / 4
}

TEST(KfSeries, BadInputsOneLineNothingWritten) {
  const tmp_dir d("kf_series_bad_");
  io::write_file_atomic(d / "ok.csv", monthly_csv(120));
  io::write_file_atomic(d / "gap.csv", monthly_csv(120, 50));
  io::write_file_atomic(d / "blank.csv", monthly_csv(120, 0, 30));
  io::write_file_atomic(d / "short.csv", monthly_csv(15));
  io::write_file_atomic(d / "dates.csv", "month,sales\n1949-01,112\nFeb 1949,118\n");
  const std::string out = " --epochs 2 --out " + (d / "bad") + " --save " + (d / "bad.safetensors");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {(d / "gap.csv") + " --y sales --x month",
       "gap.csv: line 51: time 51 comes 2 after the row before"},
      {(d / "blank.csv") + " --y sales --x month", "blank.csv: line 31: the value is missing"},
      {(d / "short.csv") + " --y sales", "the series has 15 values"},
      {(d / "ok.csv") + " --y nope", "no column named 'nope'"},
      {(d / "ok.csv") + " --y sales --x when", "no column named 'when'"},
      {(d / "dates.csv") + " --y sales --x month", "expected a number or a date (YYYY-MM"},
      {(d / "none.csv") + " --y sales", "none.csv"},
      {(d / "ok.csv") + " --y sales --horizon 10 --test-fraction 0.1", "give one"},
      {(d / "ok.csv") + " --y sales --window 10 --period 12", "longer than the window"},
      {(d / "ok.csv") + " --y sales --fill zero", "unknown fill 'zero'"},
      {(d / "ok.csv") + " --y sales --horizon 0", "--horizon 0: the test part needs"},
      {(d / "ok.csv") + " --y sales --transform sqrt", "expected auto, log or none"},
      {(d / "ok.csv") + " --y sales --resample 2", "needs a time column"},
      {(d / "ok.csv") + " --y sales --config huge", "unknown configuration"},
      // (--quiet: the run's first line is not an error's)
      {(d / "ok.csv") + " --y sales --lr 1e30 --dropout 0 --quiet", "diverged"},
  };
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(args);
    const auto r = run_kf("train series " + args + out);
    EXPECT_EQ(r.code, test::error_exit(r.output));
    EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_FALSE(fs::exists(d / "bad")) << "no output folder";
    EXPECT_FALSE(fs::exists(d / "bad.safetensors"));
  }
  const auto h = run_kf("train series --help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.output.find("Examples:"), std::string::npos);
  EXPECT_NE(h.output.find("--validation-fraction"), std::string::npos);
}

// ISO month dates as the time column; a trending series with a multiplicative season: the log and
// per-window choices are printed and recorded, Holt–Winters is a forecaster, the recommended
// forecast and its bands are in forecast.csv and future.csv, and future times continue the dates.
TEST(KfSeries, IsoDatesTrendBandsAndTheRecommendation) {
  const tmp_dir d("kf_series_dates_");
  std::mt19937_64 rng(11);
  std::normal_distribution<double> g(0.0, 0.01);
  std::string csv = "month,passengers\n";
  for (int t = 0; t < 144; ++t) {
    const double v =
        (100 + 2.0 * t) * (1 + 0.25 * std::sin(2 * std::numbers::pi * t / 12)) * (1 + g(rng));
    csv += fmt::format("{:04d}-{:02d},{}\n", 1949 + t / 12, t % 12 + 1, v);
  }
  io::write_file_atomic(d / "air.csv", csv);
  const auto r =
      run_kf("train series " + (d / "air.csv") +
             " --y passengers --x month --horizon 24 --epochs 3 --future 6 --out " + (d / "run"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("transform: log (seasonal swing"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("level: per window"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("recommended: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("holt_winters"), std::string::npos) << r.output;
  const auto js = nlohmann::json::parse(io::read_file(d / "run/summary.json"));
  EXPECT_EQ(js["transform"], "log");
  EXPECT_EQ(js["level"], "window");
  EXPECT_EQ(js["holt_winters_season"], "multiplicative");
  EXPECT_EQ(js["backtest"]["holt_winters"]["origins"], 10);
  const auto fc = io::csv_read(d / "run/forecast.csv");
  ASSERT_EQ(fc.rows(), 24);
  EXPECT_NEAR(fc.columns[fc.column("month")].front(), 1949 + 120 / 12.0, 1e-9);  // 1959-01
  const auto& f = fc.columns[fc.column("forecast")];
  const auto& lo = fc.columns[fc.column("lo95")];
  const auto& hi = fc.columns[fc.column("hi95")];
  for (std::size_t k = 0; k < f.size(); ++k) EXPECT_TRUE(lo[k] <= f[k] && f[k] <= hi[k]) << k;
  const auto fu = io::csv_read(d / "run/future.csv");
  ASSERT_EQ(fu.rows(), 6);
  EXPECT_NEAR(fu.columns[0].front(), 1961.0, 1e-6);  // after 1960-12
  EXPECT_EQ(fu.column("hi80"), 3u);
}

}  // namespace
}  // namespace kf
