// kf demo — the seeds' first demonstration on built-in data: seed 001's 40 noisy points,
// Gaussian kernel regression, KNN (k = 10), and the same Gaussian smoother computed as softmax
// attention on lifted features, all through the one primitive (computed by demo::seed001 in
// explore/demos.hpp, the same numbers as kf report's seed-001 section).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "common.hpp"
#include "kernelformer/explore/demos.hpp"
#include "kernelformer/io/atomic_file.hpp"

namespace kf::cli {
namespace {

struct demo_options {
  std::string out_dir;
  int rows = 13;
};

// A column vector (n, 1) of v, for the .npy outputs.
matrix<double> column(const std::vector<double>& v) {
  matrix<double> m(static_cast<index>(v.size()), 1);
  std::copy(v.begin(), v.end(), m.data());
  return m;
}

// The data and the NW fit as .npy, so that kf attend can reproduce the fit from the files.
void write_npy(const std::string& dir, const demo::seed001_result& r) {
  io::atomic_writer w{io::staging{.make_folders = true}};  // DIR made here, removed on a failure
  w.stage(dir + "/queries.npy", io::npy_encode<double>(column(r.query).cview()));
  w.stage(dir + "/keys.npy", io::npy_encode<double>(column(r.data.x).cview()));
  w.stage(dir + "/values.npy", io::npy_encode<double>(column(r.data.y).cview()));
  w.stage(dir + "/nw.npy", io::npy_encode<double>(column(r.nw).cview()));
  w.commit();
  fmt::print(
      "\nreproduce {0}/nw.npy from the other three with\n"
      "  kf attend -q {0}/queries.npy -k {0}/keys.npy -v {0}/values.npy "
      "--kernel gaussian -b {1:.17g} -o {0}/attend.npy\n",
      dir, r.bandwidth);
}

void run(const demo_options& o) {
  if (o.rows < 2 || o.rows > 500) throw user_error("--rows must be in 2..500");
  if (!o.out_dir.empty()) check_output_dir(o.out_dir, "--out");
  // NW, KNN and attention on lifted features at 500 queries on [0, 6] (explore/demos.hpp).
  const auto r = demo::seed001(500);
  const index n = static_cast<index>(r.query.size());
  fmt::print("Seed 001: 40 points, x ~ U(0,6), y = 2 sin x + N(0,1); 500 query points on [0,6].\n");
  fmt::print("Gaussian kernel h = 1/sqrt(10) (scikit-learn rbf gamma = 5); KNN k = 10.\n\n");
  fmt::print("{:>6}  {:>9}  {:>12}  {:>9}  {:>16}\n", "x", "2 sin x", "NW gaussian", "KNN k=10",
             "attention(exp_dot)");
  for (int row = 0; row < o.rows; ++row) {
    const auto i = static_cast<std::size_t>(row * (n - 1) / (o.rows - 1));
    fmt::print("{:6.2f}  {:9.4f}  {:12.4f}  {:9.4f}  {:16.4f}\n", r.query[i], r.truth[i], r.nw[i],
               r.knn[i], r.attention[i]);
  }
  fmt::print("\nMSE against the true 2 sin x: NW {:.4f}, KNN {:.4f}\n", r.mse_nw, r.mse_knn);
  fmt::print(
      "max |NW - attention| = {:.2e}: softmax attention on lifted features IS the Gaussian "
      "smoother.\n",
      r.max_nw_attention);
  if (!o.out_dir.empty()) write_npy(o.out_dir, r);
}

}  // namespace

void add_demo(CLI::App& app) {
  auto o = std::make_shared<demo_options>();
  CLI::App* sub = app.add_subcommand(
      "demo",
      "Seed 001 on built-in data: Gaussian kernel regression, KNN and attention, side by side");
  sub->add_option("--out", o->out_dir, "also write the data and the NW fit as .npy into DIR");
  sub->add_option("--rows", o->rows, "rows of the printed table")->capture_default_str();
  sub->footer("Example:\n  kf demo --out demo && kf attend -q demo/queries.npy ...");
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
