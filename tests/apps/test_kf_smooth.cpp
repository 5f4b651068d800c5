// End-to-end: kf smooth and kf kde on real CSV files — outputs and summaries, plots, and every
// kind of bad input: one clear line, a non-zero exit, nothing written.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/regression/kde.hpp"
#include "kernelformer/regression/lowess.hpp"
#include "kernelformer/regression/smoother.hpp"

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

// Every command ends with one line per file it wrote ("wrote PATH"); --quiet prints none.
TEST_F(KfSmooth, EndsWithOneLinePerFileWritten) {
  auto r = run_kf("smooth " + p("data.csv") + " --x t --y signal --out " + p("fit.csv") +
                  " --summary " + p("s.json") + " --plot " + p("fit.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(test::written_lines(r.output),
            (std::vector<std::string>{p("fit.csv"), p("fit.png"), p("s.json")}))
      << r.output;
  r = run_kf("kde " + p("data.csv") + " --x t --out " + p("d.csv") + " --sample 5 --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("wrote"), std::string::npos) << r.output;
  r = run_kf("kde " + p("data.csv") + " --x t --out " + p("d.csv") + " --sample 5");
  EXPECT_EQ(test::written_lines(r.output), std::vector<std::string>{p("d.csv")}) << r.output;
  EXPECT_NE(r.output.find("5 draws"), std::string::npos) << r.output;
  // Nothing written, nothing listed: the table on the terminal says how to keep the fit.
  r = run_kf("smooth " + p("data.csv") + " --x t --y signal");
  EXPECT_TRUE(test::written_lines(r.output).empty()) << r.output;
  EXPECT_NE(r.output.find("--out FIT.csv"), std::string::npos) << r.output;
}

// --method lowess: R's lowess through the command line (the library's numbers, checked against R
// in test_lowess), on a grid or at --at points, with its summary and plot; the options that do
// not apply refused before the data is read.
TEST_F(KfSmooth, LowessWritesTheLibrarysFit) {
  auto r = run_kf("smooth " + p("data.csv") + " --x t --y signal --method lowess --span 0.5 " +
                  "--iterations 2 --delta 0 --grid 7 --out " + p("lo.csv") + " --summary " +
                  p("lo.json") + " --plot " + p("lo.svg"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 robustness passes"), std::string::npos) << r.output;
  const auto data = io::csv_read(p("data.csv"));
  const lowess_fit f = lowess(data.columns[0], data.columns[1], {0.5, 2, 0});
  const auto out = io::csv_read(p("lo.csv"));
  EXPECT_EQ(out.names, (std::vector<std::string>{"t", "fit"}));
  ASSERT_EQ(out.rows(), 7);
  const auto want = lowess_predict(f, out.columns[0]);
  for (std::size_t i = 0; i < 7; ++i) EXPECT_DOUBLE_EQ(out.columns[1][i], want[i]) << i;
  const auto js = nlohmann::json::parse(io::read_file(p("lo.json")));
  EXPECT_EQ(js["method"], "lowess");
  EXPECT_EQ(js["neighbours"], 30);
  EXPECT_EQ(js["passes"], 3);
  EXPECT_EQ(io::read_file(p("lo.svg")).substr(0, 5), "<?xml");
  for (const char* bad : {" --bandwidth 0.3", " --kernel epanechnikov", " --span 0", " --span 1.5",
                          " --iterations -1", " --delta x", " --x t,z", " --loo l.csv"}) {
    r = run_kf("smooth " + p("data.csv") + " --x t --y signal --method lowess --out " +
               p("no.csv") + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.output;
    EXPECT_FALSE(fs::exists(p("no.csv"))) << bad;
  }
}

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
      {"smooth " + p("data.csv") + " --x t,z --y signal --at " + p("data.csv") + " --plot " +
           p("f.svg") + outs,
       "contour map on the grid"},
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

// ---- The numbers kf writes, against brute force written here (independent of the library) ----

// |a − b| ≤ tol·max(1, |b|).
#define EXPECT_CLOSE(a, b, tol) EXPECT_NEAR(a, b, (tol)*std::max(1.0, std::abs(b)))

// A 1-D linear smoother by brute force: ŷ(x0) = Σ_j ℓ_j(x0) y_j with ℓ of Nadaraya–Watson (local
// constant) or local linear, gaussian exp(−u²/2) or epanechnikov (1 − u²)₊ weights, u = (x_j −
// x0)/h.
struct brute_smoother {
  std::vector<double> x, y;
  double h = 1;
  bool linear = false, gaussian = true;

  std::vector<double> weights(double x0) const {
    std::vector<double> w(x.size());
    double s0 = 0, s1 = 0, s2 = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
      const double d = x[j] - x0, u = d / h;
      w[j] = gaussian ? std::exp(-0.5 * u * u) : std::max(1 - u * u, 0.0);
      s0 += w[j], s1 += w[j] * d, s2 += w[j] * d * d;
    }
    for (std::size_t j = 0; j < x.size(); ++j)  // local linear: the weighted least-squares line
      w[j] = linear ? w[j] * (s2 - (x[j] - x0) * s1) / (s0 * s2 - s1 * s1) : w[j] / s0;
    return w;
  }
  double fit(double x0) const {
    const auto l = weights(x0);
    double f = 0;
    for (std::size_t j = 0; j < x.size(); ++j) f += l[j] * y[j];
    return f;
  }
  double sum_l2(double x0) const {
    double s = 0;
    for (double l : weights(x0)) s += l * l;
    return s;
  }
};

// The fit's diagnostics from the hat matrix L_ij = ℓ_j(x_i), formulas of docs/regression.md.
struct brute_diagnostics {
  double df = 0, rss = 0, loo_cv = 0, gcv = 0, aicc = 0, r2 = 0, sigma = 0;
};
brute_diagnostics diagnose(const brute_smoother& s) {
  brute_diagnostics d;
  const double n = double(s.x.size());
  double mean = 0, tss = 0;
  for (double v : s.y) mean += v / n;
  for (std::size_t i = 0; i < s.x.size(); ++i) {
    const auto l = s.weights(s.x[i]);
    double f = 0;
    for (std::size_t j = 0; j < s.x.size(); ++j) f += l[j] * s.y[j];
    const double r = s.y[i] - f;
    d.df += l[i];
    d.rss += r * r;
    d.loo_cv += r * r / ((1 - l[i]) * (1 - l[i])) / n;
    tss += (s.y[i] - mean) * (s.y[i] - mean);
  }
  d.gcv = d.rss / n / ((1 - d.df / n) * (1 - d.df / n));
  d.aicc = std::log(d.rss / n) + 1 + 2 * (d.df + 1) / (n - d.df - 2);
  d.r2 = 1 - d.rss / tss;
  d.sigma = std::sqrt(d.rss / (n - d.df));
  return d;
}

class KfSmoothNumbers : public KfSmooth {
 protected:
  brute_smoother data;  // the CSV as kf parses it (6 decimals)
  void SetUp() override {
    KfSmooth::SetUp();
    const auto t = io::csv_read(p("data.csv"));
    data.x = t.columns[t.column("t")];
    data.y = t.columns[t.column("signal")];
    // Off the data points (the 5th and 6th nearest are never tied), one beyond each end.
    io::write_file_atomic(p("at.csv"), "t\n-0.37\n0.04\n1.234\n2.61\n3.333\n5.87\n6.4\n");
  }
  static nlohmann::json summary(const std::string& path) {
    return nlohmann::json::parse(io::read_file(path));
  }
  // kf smooth --at at.csv: the fit and se it wrote, checked against brute force.
  void expect_fit_at(const brute_smoother& s, const std::string& out, double sigma) {
    const auto fit = io::csv_read(out);
    ASSERT_EQ(fit.names, (std::vector<std::string>{"t", "fit", "se"}));
    ASSERT_EQ(fit.rows(), 7);
    for (index i = 0; i < fit.rows(); ++i) {
      const double x0 = fit.columns[0][static_cast<std::size_t>(i)];
      SCOPED_TRACE(x0);
      EXPECT_CLOSE(fit.columns[1][static_cast<std::size_t>(i)], s.fit(x0), 1e-12);
      EXPECT_CLOSE(fit.columns[2][static_cast<std::size_t>(i)], sigma * std::sqrt(s.sum_l2(x0)),
                   1e-12);
    }
  }
  void expect_summary(const nlohmann::json& js, const brute_diagnostics& d) {
    EXPECT_CLOSE(js["df"].get<double>(), d.df, 1e-12);
    EXPECT_CLOSE(js["r2"].get<double>(), d.r2, 1e-12);
    EXPECT_CLOSE(js["sigma"].get<double>(), d.sigma, 1e-12);
    EXPECT_CLOSE(js["loo_cv"].get<double>(), d.loo_cv, 1e-12);
    EXPECT_CLOSE(js["gcv"].get<double>(), d.gcv, 1e-12);
    EXPECT_CLOSE(js["aicc"].get<double>(), d.aicc, 1e-12);
  }
};

TEST_F(KfSmoothNumbers, NadarayaWatsonFixedBandwidthAtPoints) {
  const auto r = run_kf("smooth " + p("data.csv") + " --x t --y signal --bandwidth 0.45 --at " +
                        p("at.csv") + " --out " + p("fit.csv") + " --summary " + p("s.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  brute_smoother s = data;
  s.h = 0.45;
  const auto d = diagnose(s);
  expect_summary(summary(p("s.json")), d);
  expect_fit_at(s, p("fit.csv"), d.sigma);
}

TEST_F(KfSmoothNumbers, LocalLinearEpanechnikovOnTheGrid) {
  const auto r = run_kf("smooth " + p("data.csv") +
                        " --x t --y signal --method local-linear --kernel epanechnikov "
                        "--bandwidth 0.35 --grid 13 --out " +
                        p("fit.csv") + " --summary " + p("s.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  brute_smoother s = data;
  s.h = 0.35, s.linear = true, s.gaussian = false;
  const auto d = diagnose(s);
  expect_summary(summary(p("s.json")), d);
  const auto fit = io::csv_read(p("fit.csv"));
  ASSERT_EQ(fit.rows(), 13);
  const double lo = data.x.front(), hi = data.x.back();
  for (std::size_t i = 0; i < 13; ++i) {
    const double x0 = lo + (hi - lo) * double(i) / 12;  // the grid spans the data range
    SCOPED_TRACE(x0);
    EXPECT_CLOSE(fit.columns[0][i], x0, 1e-15);
    EXPECT_CLOSE(fit.columns[1][i], s.fit(x0), 1e-12);
    EXPECT_CLOSE(fit.columns[2][i], d.sigma * std::sqrt(s.sum_l2(x0)), 1e-12);
  }
}

// The searched bandwidth: each row of --criterion-csv is the brute-force LOO-CV at its
// bandwidth, the chosen one is no worse than any row, and the fit at it is brute force's.
TEST_F(KfSmoothNumbers, CrossValidatedBandwidthAndCriterionCurve) {
  const auto r = run_kf("smooth " + p("data.csv") + " --x t --y signal --bandwidth cv --at " +
                        p("at.csv") + " --out " + p("fit.csv") + " --summary " + p("s.json") +
                        " --criterion-csv " + p("curve.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto js = summary(p("s.json"));
  brute_smoother s = data;
  s.h = js["bandwidth"].get<double>();
  const auto d = diagnose(s);
  expect_summary(js, d);
  EXPECT_CLOSE(js["criterion_value"].get<double>(), d.loo_cv, 1e-12);
  expect_fit_at(s, p("fit.csv"), d.sigma);
  // The curve has "inf" where a leave-one-out fit is undefined (tiny h): read it by hand.
  std::istringstream curve(io::read_file(p("curve.csv")));
  std::string line;
  std::getline(curve, line);
  ASSERT_EQ(line, "scale,bandwidth,criterion");
  int rows = 0, finite = 0;
  while (std::getline(curve, line)) {
    ++rows;
    brute_smoother si = data;
    const auto c1 = line.find(','), c2 = line.rfind(',');
    si.h = std::stod(line.substr(c1 + 1, c2 - c1 - 1));
    const double v = std::stod(line.substr(c2 + 1));
    finite += std::isfinite(v);
    SCOPED_TRACE(line);
    if (std::isfinite(v)) {
      // 1e-8: at the smallest h, 1 − L_ii is small and the closed form amplifies rounding.
      EXPECT_CLOSE(v, diagnose(si).loo_cv, 1e-8);
    }
    EXPECT_LE(d.loo_cv, v * (1 + 1e-12));
  }
  EXPECT_EQ(rows, 41);
  EXPECT_GT(finite, 30);
}

// KNN by brute force: the k nearest (no ties at these points), uniform mean or 1/distance
// weights; a uniform fit's df is n/k (each point is its own nearest neighbour).
TEST_F(KfSmoothNumbers, KnnUniformAndDistanceWeights) {
  for (const std::string weights : {"uniform", "distance"}) {
    SCOPED_TRACE(weights);
    const auto r = run_kf("smooth " + p("data.csv") + " --x t --y signal --method knn --k 5 " +
                          "--knn-weights " + weights + " --at " + p("at.csv") + " --out " +
                          p("fit.csv") + " --summary " + p("s.json"));
    ASSERT_EQ(r.code, 0) << r.output;
    const auto fit = io::csv_read(p("fit.csv"));
    ASSERT_EQ(fit.rows(), 7);
    for (std::size_t i = 0; i < 7; ++i) {
      const double x0 = fit.columns[0][i];
      std::vector<std::size_t> order(data.x.size());
      for (std::size_t j = 0; j < order.size(); ++j) order[j] = j;
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::abs(data.x[a] - x0) < std::abs(data.x[b] - x0);
      });
      double num = 0, den = 0, l2 = 0;
      for (std::size_t j = 0; j < 5; ++j) {
        const double w = weights == "uniform" ? 1.0 : 1.0 / std::abs(data.x[order[j]] - x0);
        num += w * data.y[order[j]], den += w, l2 += w * w;
      }
      SCOPED_TRACE(x0);
      EXPECT_CLOSE(fit.columns[1][i], num / den, 1e-12);
      if (weights == "uniform") {
        const auto js = summary(p("s.json"));
        EXPECT_CLOSE(js["df"].get<double>(), 60.0 / 5, 1e-12);
        EXPECT_CLOSE(fit.columns[2][i], js["sigma"].get<double>() * std::sqrt(l2) / den, 1e-12);
      }
    }
  }
}

// Two columns, a gcv bandwidth per column: kf writes what the library computes on the same data,
// to the last bit (the 2-D brute force is the library's own test's business).
// --k cv: the summary and the printout give the k chosen, the minimizer of the leave-one-out
// error of the uniform k-nearest-neighbor mean summed here over every k in 1..k-max.
TEST_F(KfSmooth, KnnCrossValidatedKIsTheOneReported) {
  std::vector<double> t, y;
  std::string csv = "t,y\n";
  for (int i = 0; i < 80; ++i) {  // irregular spacing: no two distances tie
    t.push_back(0.1 * i + 0.03 * std::sin(1.7 * i * i));
    y.push_back(std::sin(t.back()) + 0.3 * std::sin(13.1 * i));
    csv += fmt::format("{:.17g},{:.17g}\n", t.back(), y.back());
  }
  io::write_file_atomic(p("knn.csv"), csv);
  const auto r = run_kf("smooth " + p("knn.csv") +
                        " --x t --method knn --k cv --k-max 20 --summary " + p("s.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  index best = 0;
  double best_err = INFINITY;
  for (index k = 1; k <= 20; ++k) {
    double err = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      std::vector<std::pair<double, double>> by_distance;
      for (std::size_t j = 0; j < t.size(); ++j)
        if (j != i) by_distance.emplace_back(std::abs(t[i] - t[j]), y[j]);
      std::sort(by_distance.begin(), by_distance.end());
      double mean = 0;
      for (index m = 0; m < k; ++m) mean += by_distance[static_cast<std::size_t>(m)].second;
      err += (y[i] - mean / double(k)) * (y[i] - mean / double(k));
    }
    if (err < best_err) best_err = err, best = k;
  }
  const auto js = nlohmann::json::parse(io::read_file(p("s.json")));
  EXPECT_EQ(js["k"].get<index>(), best);
  EXPECT_NEAR(js["criterion_value"].get<double>(), best_err / double(t.size()), 1e-9);
  // At that k, the fit at a training point averages it with its k − 1 nearest others (W_ii =
  // 1/k, df = n/k): the summary's GCV and AICc from those sums, written out here.
  double rss = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::vector<std::pair<double, double>> by_distance;
    for (std::size_t j = 0; j < t.size(); ++j)
      if (j != i) by_distance.emplace_back(std::abs(t[i] - t[j]), y[j]);
    std::sort(by_distance.begin(), by_distance.end());
    double sum = y[i];
    for (index m = 0; m + 1 < best; ++m) sum += by_distance[static_cast<std::size_t>(m)].second;
    rss += (y[i] - sum / double(best)) * (y[i] - sum / double(best));
  }
  const double n = double(t.size()), df = n / double(best);
  EXPECT_NEAR(js["df"].get<double>(), df, 1e-9);
  EXPECT_NEAR(js["gcv"].get<double>(), (rss / n) / ((1 - df / n) * (1 - df / n)), 1e-9);
  EXPECT_NEAR(js["aicc"].get<double>(), std::log(rss / n) + 1 + 2 * (df + 1) / (n - df - 2), 1e-9);
  EXPECT_NE(r.output.find(fmt::format("k = {} (leave-one-out CV)", best)), std::string::npos)
      << r.output;
}

TEST_F(KfSmoothNumbers, TwoColumnsEqualTheLibraryCall) {
  const auto r =
      run_kf("smooth " + p("data.csv") + " --x t,z --y signal --bandwidth gcv --grid 6 " +
             "--out " + p("fit.csv") + " --summary " + p("s.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto t = io::csv_read(p("data.csv"));
  regression_spec spec;
  spec.per_point = false;
  const auto fit =
      regression_fit_data(spec, t.select<double>({"t", "z"}), data.y, bandwidth_criterion::gcv);
  const auto js = summary(p("s.json"));
  ASSERT_EQ(js["bandwidth"].size(), 2u);
  EXPECT_EQ(js["bandwidth"][0].get<double>(), fit.spec.bandwidth[0]);
  EXPECT_EQ(js["bandwidth"][1].get<double>(), fit.spec.bandwidth[1]);
  EXPECT_EQ(js["criterion_value"].get<double>(), fit.criterion_value);
  const auto out = io::csv_read(p("fit.csv"));
  ASSERT_EQ(out.rows(), 36);
  const auto pred = regression_predict(fit, out.select<double>({"t", "z"}).cview());
  for (std::size_t i = 0; i < 36; ++i) {
    EXPECT_EQ(out.columns[2][i], pred.fit[i]) << i;
    EXPECT_EQ(out.columns[3][i], pred.se[i]) << i;
  }
}

// f̂(x) = Σ_j φ((x − x_j)/h) / (n h) by brute force, gaussian φ.
double brute_kde(const std::vector<double>& x, double h, double x0) {
  double s = 0;
  for (double xj : x) s += std::exp(-0.5 * (x0 - xj) * (x0 - xj) / (h * h));
  return s / (double(x.size()) * h * std::sqrt(2 * std::numbers::pi));
}

// LSCV(h) = ∫f̂² − (2/n) Σ_i f̂₋ᵢ(x_i); for the gaussian ∫f̂² = Σ_ij φ_{h√2}(x_i − x_j) / n².
double brute_lscv(const std::vector<double>& x, double h) {
  const double n = double(x.size());
  double int_f2 = 0, loo = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = 0; j < x.size(); ++j) {
      const double d = x[i] - x[j];
      int_f2 += std::exp(-d * d / (4 * h * h)) / (2 * h * std::sqrt(std::numbers::pi)) / (n * n);
      if (i != j)
        loo += std::exp(-0.5 * d * d / (h * h)) / (h * std::sqrt(2 * std::numbers::pi)) / (n - 1);
    }
  return int_f2 - 2 * loo / n;
}

TEST_F(KfSmoothNumbers, KdeDensitiesAndCvLsCurve) {
  auto r = run_kf("kde " + p("data.csv") + " --x t --bandwidth 0.4 --at " + p("at.csv") +
                  " --out " + p("d.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  auto dens = io::csv_read(p("d.csv"));
  ASSERT_EQ(dens.rows(), 7);
  for (std::size_t i = 0; i < 7; ++i)
    EXPECT_CLOSE(dens.columns[1][i], brute_kde(data.x, 0.4, dens.columns[0][i]), 1e-12);
  r = run_kf("kde " + p("data.csv") + " --x t --bandwidth cv-ls --grid 9 --out " + p("d.csv") +
             " --summary " + p("k.json") + " --criterion-csv " + p("curve.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto js = summary(p("k.json"));
  const double h = js["bandwidth"].get<double>();
  EXPECT_CLOSE(js["criterion_value"].get<double>(), brute_lscv(data.x, h), 1e-10);
  dens = io::csv_read(p("d.csv"));
  ASSERT_EQ(dens.rows(), 9);
  // The grid spans the data widened by 3 bandwidths.
  EXPECT_CLOSE(dens.columns[0][0], data.x.front() - 3 * h, 1e-14);
  EXPECT_CLOSE(dens.columns[0][8], data.x.back() + 3 * h, 1e-14);
  for (std::size_t i = 0; i < 9; ++i)
    EXPECT_CLOSE(dens.columns[1][i], brute_kde(data.x, h, dens.columns[0][i]), 1e-12);
  const auto curve = io::csv_read(p("curve.csv"));
  ASSERT_EQ(curve.rows(), 41);
  for (std::size_t i = 0; i < 41; ++i) {
    SCOPED_TRACE(curve.columns[1][i]);
    EXPECT_CLOSE(curve.columns[2][i], brute_lscv(data.x, curve.columns[1][i]), 1e-10);
    EXPECT_LE(js["criterion_value"].get<double>(), curve.columns[2][i] + 1e-15);
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
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("--loo"), std::string::npos) << r.output;
}

// kf kde prints (and its summary records) the route that ran: the k-d tree for a compact kernel
// in two columns whose support is a small part of the data's box, all pairs for a wide one.
TEST_F(KfSmooth, KdePrintsTheRouteThatRan) {
  std::string csv = "a,b\n";
  for (int i = 0; i < 400; ++i)
    csv +=
        std::to_string((i * 37 % 400) * 0.01) + "," + std::to_string((i * 91 % 400) * 0.01) + "\n";
  io::write_file_atomic(p("two.csv"), csv);
  const std::string common = "kde " + p("two.csv") + " --x a,b --kernel epanechnikov --out " +
                             p("d.csv") + " --summary " + p("k.json") + " --bandwidth ";
  auto r = run_kf(common + "0.2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("route exact (k-d tree over each support)"), std::string::npos)
      << r.output;
  EXPECT_NE(io::read_file(p("k.json")).find("k-d tree"), std::string::npos);
  r = run_kf(common + "2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("route exact (all pairs)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("does not pay"), std::string::npos) << r.output;
}

// kf kde --sample N --seed S --out draws.csv: N rows of the x columns, the same for the same
// seed; the checks before any work (no --out, a kernel without a sampler, 2-D epanechnikov).
TEST_F(KfSmooth, KdeSampleWritesSeededDraws) {
  const std::string common = "kde --sample 300 --seed 4 --out ";
  auto r = run_kf(common + p("a.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("300 draws from the estimate"), std::string::npos) << r.output;
  const std::string a = io::read_file(p("a.csv"));
  EXPECT_EQ(std::count(a.begin(), a.end(), '\n'), 301);
  EXPECT_EQ(a.substr(0, 2), "x\n");
  ASSERT_EQ(run_kf(common + p("b.csv")).code, 0);
  EXPECT_EQ(io::read_file(p("b.csv")), a);
  for (const std::string& bad : {std::string("kde --sample 5"),
                                 "kde --sample 5 --kernel rational_quadratic --out " + p("c.csv"),
                                 "kde --sample -2 --out " + p("c.csv")}) {
    r = run_kf(bad);
    EXPECT_EQ(r.code, test::error_exit(r.output)) << bad << "\n" << r.output;
    EXPECT_NE(r.output.find("--sample"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(p("c.csv")));
  }
}

// A spreadsheet's export: semicolons (detected), NA / NaN cells skipped with --na drop and
// counted on stderr; without --na drop, the error names the line, the column and the option.
TEST_F(KfSmooth, SemicolonFilesAndMissingValuesSpelledNA) {
  std::string csv = "x;y\n";
  for (int i = 0; i < 30; ++i)
    csv += std::to_string(i) + ";" +
           (i == 7   ? "NA"
            : i == 9 ? "NaN"
                     : std::to_string(i % 5)) +
           "\n";
  io::write_file_atomic(p("semi.csv"), csv);
  auto r = run_kf("smooth " + p("semi.csv") + " --x x --y y --na drop --out " + p("f.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped 2 rows with a missing value"), std::string::npos) << r.output;
  r = run_kf("smooth " + p("semi.csv") + " --x x --y y --out " + p("g.csv"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("line 9, column 'y': 'NA' is not a number (a missing value; --na drop"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(p("g.csv")));
}

}  // namespace
}  // namespace kf
