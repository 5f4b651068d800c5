// kf kde — kernel density estimation from a CSV column (or built-in data).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "common.hpp"
#include "fit_options.hpp"
#include "kde_outputs.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/model/saved_density.hpp"
#include "kernelformer/regression/kde.hpp"
#include "kernelformer/viz/plot.hpp"
#include "mixed_data.hpp"

namespace kf::cli {
namespace {

struct kde_options {
  std::string data, x = "x", kernel = "gaussian", bandwidth = "silverman", at, out, summary, plot,
                    plot_criterion, criterion_csv;
  std::string save;  // MODEL.safetensors: the fitted estimate (model/saved_density.hpp)
  std::string categorical, ordered;  // mixed data (mixed_data.cpp)
  index grid = 200, sample = 0;
  std::uint64_t seed = 0;
  std::string na = "error";
  bool quiet = false;
  bool exact = false;
};

// --sample N: N draws from the estimate as CSV (the x columns).
std::string draws_csv(const matrix<double>& s, const std::vector<std::string>& xcols) {
  std::string out = fmt::format("{}\n", fmt::join(xcols, ","));
  for (index i = 0; i < s.rows(); ++i) {
    for (index j = 0; j < s.cols(); ++j) out += fmt::format("{}{:.17g}", j ? "," : "", s(i, j));
    out += '\n';
  }
  return out;
}

// A bimodal sample: 150 points from N(0, 1) and 50 from N(4, 0.5²).
io::csv_table builtin_bimodal() {
  std::mt19937_64 rng(2);
  std::normal_distribution<double> a(0.0, 1.0), b(4.0, 0.5);
  io::csv_table t;
  t.source = "built-in bimodal sample";
  t.names = {"x"};
  t.columns.resize(1);
  for (int i = 0; i < 150; ++i) t.columns[0].push_back(a(rng));
  for (int i = 0; i < 50; ++i) t.columns[0].push_back(b(rng));
  return t;
}

any_kernel density_kernel(const std::string& text) {
  try {
    const kernel_spec ks = kernel_parse(text);
    if (ks.is_product()) throw user_error("--kernel: density takes a single kernel");
    (void)kernel_integral_1d(ks.first);  // refuses a kernel that is not a probability density
    return ks.first;
  } catch (const std::invalid_argument& e) {
    throw user_error(std::string("--kernel: ") + e.what());
  }
}

// The density at --at's points, or on the grid over the data's range widened by 3 bandwidths.
matrix<double> density_points(const kde_options& o, const matrix<double>& x, const kde_fit& fit,
                              const std::vector<std::string>& xcols) {
  if (o.at.empty()) return kde_grid(x, fit.bandwidth, o.grid);
  try {
    return read_points(o.at, xcols);  // by the x columns' names (or exactly as many columns)
  } catch (const std::runtime_error& e) {
    throw user_error(e.what());
  }
}

kde_fit fit_density(const kde_options& o, const any_kernel& kernel, const matrix<double>& x,
                    bandwidth_criterion crit, const std::vector<double>& fixed,
                    const std::string& source) {
  progress_bar bar("choosing the bandwidth");
  try {
    kf::kde_options ko;
    ko.exact = o.exact;
    // Under mpirun (docs/scale-out.md): every rank reads the data and takes its block of the
    // points; rank 0 writes.
    if (dist::size() > 1) ko.shard = dist::world_shard();
    return kde_fit_data(
        kernel, x.cview(), crit, fixed, [&](int done, int total) { bar.update(done, total); }, ko);
  } catch (const std::invalid_argument& e) {
    throw user_error(fmt::format("{}: {}", source, e.what()));
  }
}

// --categorical / --ordered: the density on product kernels (mixed_data.cpp).
void run_mixed(const kde_options& o) {
  if (o.kernel != "gaussian" || o.exact || o.sample > 0 || !o.save.empty())
    throw user_error(
        "--categorical/--ordered take the gaussian for continuous columns, no "
        "--kernel, --exact, --sample or --save");
  if (dist::size() > 1) throw mpi_refusal("under mpirun, mixed data are not sharded");
  mixed_request q;
  q.data = o.data;
  q.at = o.at;
  q.xcols = split_list(o.x, "--x");
  q.categorical = o.categorical;
  q.ordered = o.ordered;
  q.bandwidth = o.bandwidth;
  q.na = o.na;
  q.out = {o.out, o.summary, o.plot, o.plot_criterion, o.criterion_csv};
  q.quiet = o.quiet;
  run_mixed_kde(q);
}

// The one-line report (and the warnings) after the outputs are written.
void print_report(const kde_options& o, const kde_fit& fit, index n, const std::string& source) {
  fmt::print(
      "kf kde: {} points from {}, kernel {}, bandwidth = {:.6g} ({}), {} = {:.6g}, route {} "
      "({})\n",
      n, source, kernel_name(fit.kernel), fmt::join(fit.bandwidth, ", "),
      bandwidth_criterion_name(fit.criterion),
      fit.criterion == bandwidth_criterion::cv_ls ? "cv_ls" : "cv_ml (−mean LOO log density)",
      fit.criterion_value, kde_route_name(fit), fit.route.why);
  if (fit.at_search_boundary)
    fmt::print(stderr,
               "kf kde: warning: the best bandwidth is at the edge of the searched range\n");
  if (!o.out.empty() && o.sample > 0)
    fmt::print("kf kde: {} holds {} draws from the estimate\n", o.out, o.sample);
}

void run(const kde_options& o) {
  if (mixed_requested(o.categorical, o.ordered)) return run_mixed(o);
  const any_kernel kernel = density_kernel(o.kernel);
  std::vector<double> fixed;
  const bandwidth_criterion crit = parse_bandwidth(o.bandwidth, bandwidth_for::density, fixed);
  require_fit_outputs({o.out, o.summary, o.plot, o.plot_criterion, o.criterion_csv});
  if (o.grid < 2) throw user_error("--grid must be at least 2");
  if (!o.save.empty()) require_output(o.save, "--save", {".safetensors"});
  const auto xcols = split_list(o.x, "--x");
  if (o.sample < 0) throw user_error("--sample must be a positive number of draws");
  if (o.sample > 0 && o.out.empty()) throw user_error("--sample needs --out DRAWS.csv");
  const std::string kname(kernel_name(kernel));
  if (o.sample > 0 && kname != "gaussian" &&
      (xcols.size() != 1 || !(kernel_compact(kernel) || kname == "laplacian" || kname == "cauchy")))
    throw user_error(fmt::format(
        "--sample: the {} kernel is not sampled {}(gaussian in any dimension; in 1-D also the "
        "compact kernels, laplacian, cauchy)",
        kname, xcols.size() != 1 ? "in several dimensions " : ""));

  step_progress steps;  // a bar per long library step (reading, binning, sums), on a terminal
  stopwatch clock;
  nlohmann::json seconds;
  const io::csv_table table =
      o.data.empty() ? builtin_bimodal() : read_data_columns(o.data, xcols, o.na, o.quiet);
  matrix<double> x;
  try {
    x = table.select<double>(xcols);
  } catch (const std::runtime_error& e) {
    throw user_error(e.what());
  }
  if (!o.plot.empty() && (x.cols() > 2 || (x.cols() == 2 && !o.at.empty())))
    throw user_error(
        "--plot draws a 1-D density or a 2-D contour map on the grid (one or two --x columns, "
        "no --at)");
  seconds["read"] = clock.lap();
  const kde_fit fit = fit_density(o, kernel, x, crit, fixed, table.source);
  if ((!o.plot_criterion.empty() || !o.criterion_csv.empty()) && fit.curve.empty())
    throw user_error(
        "--plot-criterion/--criterion-csv need a searched bandwidth (--bandwidth cv-ml or cv-ls)");
  // Drawing samples writes the draws, not the density: evaluate it only for a figure.
  const bool evaluate = o.sample == 0 || !o.plot.empty();
  const matrix<double> at =
      evaluate ? density_points(o, x, fit, xcols) : matrix<double>(0, x.cols());
  seconds["fit"] = clock.lap();
  const auto dens = kde_evaluate(fit, at.cview());
  seconds["evaluate"] = clock.lap();

  const kde_run r{kernel, fit, x, at, dens, xcols};
  io::atomic_writer writer;
  if (o.sample > 0) {
    matrix<double> draws;
    try {
      draws = kde_sample(fit, o.sample, o.seed);
    } catch (const std::invalid_argument& e) {
      throw user_error(std::string("--sample: ") + e.what());
    }
    writer.stage(o.out, draws_csv(draws, xcols));
  } else if (!o.out.empty()) {
    writer.stage(o.out, kde_density_csv(r));
  }
  if (!o.summary.empty()) writer.stage(o.summary, kde_summary(r, seconds).dump(2) + "\n");
  if (!o.save.empty())
    writer.stage(o.save, model::saved_density_encode(fit, xcols, command_line_text()));
  if (!o.plot.empty()) writer.stage(o.plot, kde_plot(r, o.plot));
  if (!o.plot_criterion.empty())
    writer.stage(o.plot_criterion,
                 criterion_plot(fit.curve, fit.bandwidth[0], fit.criterion_value,
                                bandwidth_criterion_name(fit.criterion), false, o.plot_criterion));
  if (!o.criterion_csv.empty()) writer.stage(o.criterion_csv, criterion_csv(fit.curve));
  if (!dist::is_root()) return;  // under mpirun rank 0 writes
  writer.commit();
  if (!o.quiet) print_report(o, fit, x.rows(), table.source);
}

}  // namespace

void add_kde(CLI::App& app) {
  auto o = std::make_shared<kde_options>();
  CLI::App* sub = app.add_subcommand("kde", "Kernel density estimate of one or more columns");
  sub->add_option("data", o->data,
                  "CSV file with a header row, commas (or tabs, semicolons: detected); default: a "
                  "built-in bimodal sample");
  sub->add_option("--na", o->na,
                  "missing values (blank, NA, N/A, NaN) in the used columns: error, or drop (skip "
                  "those rows, say how many)")
      ->capture_default_str();
  sub->add_option("--x", o->x,
                  "column(s), comma-separated (two: any density kernel, radial; three or more: "
                  "gaussian)")
      ->capture_default_str();
  sub->add_option(
         "--kernel", o->kernel,
         "gaussian, epanechnikov, biweight, triweight, tricube, cosine, boxcar, laplacian, "
         "cauchy, rational_quadratic")
      ->capture_default_str();
  sub->add_option("--bandwidth", o->bandwidth,
                  "silverman | scott | sj (Sheather-Jones solve-the-equation, as R's bw.SJ) | "
                  "sj-dpi (its direct plug-in) | isj (improved Sheather-Jones, as KDEpy) | cv-ls | "
                  "cv-ml | NUMBER[,…]")
      ->capture_default_str();
  auto* grid = sub->add_option("--grid", o->grid, "evaluate on N evenly spaced points (per axis)")
                   ->capture_default_str();
  sub->add_option("--at", o->at, "evaluate at the points of this CSV")->excludes(grid);
  sub->add_option("--out", o->out, "DENSITY.csv: x column(s), density");
  sub->add_option("--summary", o->summary, "SUMMARY.json: n, kernel, bandwidth, criterion, …");
  sub->add_option("--categorical", o->categorical,
                  "unordered categorical --x column(s), text or codes: Aitchison-Aitken kernels "
                  "(statsmodels' KDEMultivariate var_type 'u'; --bandwidth cv-ml or "
                  "normal-reference)");
  sub->add_option("--ordered", o->ordered,
                  "ordered categorical --x column(s): Wang-van Ryzin kernels (var_type 'o')");
  sub->add_option("--save", o->save,
                  "MODEL.safetensors: the fitted estimate (its data, kernel and bandwidths); kf "
                  "predict --model MODEL --input POINTS.csv gives the density at new points");
  sub->add_option("--sample", o->sample,
                  "N draws from the estimate into --out (a data point plus the kernel's noise: "
                  "gaussian in any dimension; in 1-D also the compact kernels, laplacian, cauchy)");
  sub->add_option("--seed", o->seed, "seed of --sample's draws (the same seed, the same draws)")
      ->capture_default_str();
  sub->add_option("--plot", o->plot, "FIG.svg or FIG.png: the density and a rug of the data");
  sub->add_option("--plot-criterion", o->plot_criterion, "FIG.svg|png: the criterion against h");
  sub->add_option("--criterion-csv", o->criterion_csv,
                  "CURVE.csv: the searched grid (scale, bandwidth, criterion)");
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->add_flag("--exact", o->exact,
                "exact sums instead of the binned route (1-D and 2-D from 5000 points): over each "
                "support through a k-d tree for compact kernels in 2-D, over all pairs otherwise "
                "(slow beyond ~10^5 points)");
  sub->footer(
      "Examples:\n"
      "  kf kde                                         # built-in bimodal sample, Silverman\n"
      "  kf kde data.csv --x height --bandwidth cv-ml --out density.csv --plot density.png\n"
      "  kf kde data.csv --x height --bandwidth sj --summary s.json     # R's bw.SJ\n"
      "  kf kde data.csv --x height --bandwidth isj  # improved Sheather-Jones, as KDEpy\n"
      "  kf kde data.csv --x height --sample 1000 --seed 1 --out draws.csv\n"
      "  kf kde data.csv --x height --save kde.safetensors  # then: kf predict --model\n"
      "  kf kde data.csv --x a,b --plot map.svg   # a filled contour map, the data on top\n"
      "  kf kde cars.csv --x hp,am,cyl --categorical am --ordered cyl --bandwidth cv-ml\n"
      "  kf kde data.csv --x a,b --kernel epanechnikov --out density2d.csv  # 2-D\n"
      "  mpirun -np 4 kf kde big.csv --x v --bandwidth cv-ml --out d.csv  # points over 4 ranks\n"
      "Routes (the summary names the one taken): 1-D from 5000 points is binned (linear\n"
      "binning + FFT, every kernel; density within 1e-4 of its peak, exact where it is tiny; the\n"
      "boxcar counted exactly); 2-D too (bilinear binning + 2-D FFT, within 2e-3 of the peak;\n"
      "cv-ls gaussian only; a cv-ml bandwidth at 10^6 points takes ~30 s); --exact forces exact\n"
      "sums. 3+ columns (gaussian only) are exact over all pairs: slow beyond ~10^5 points.\n"
      "On a terminal every step that takes over a second shows a progress bar with ETA.\n"
      "Under mpirun every rank reads the data: binned grids (1-D and 2-D) are binned in\n"
      "blocks and summed, criteria summed over blocks of the points, exact densities merged\n"
      "over blocks of the keys; rank 0 writes (equal to one process to 1e-12). Every route\n"
      "runs there.");
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
