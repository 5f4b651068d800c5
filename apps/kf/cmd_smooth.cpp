// kf smooth — nonparametric regression from a CSV file (or built-in data): NW, local-linear or
// KNN, bandwidth by rule or criterion, fit + standard error on a grid, summary JSON, plots.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "common.hpp"
#include "fit_options.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/model/saved_smoother.hpp"
#include "kernelformer/regression/cross_validation.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "mixed_data.hpp"
#include "smooth_local_poly.hpp"
#include "smooth_lowess.hpp"
#include "smooth_outputs.hpp"

namespace kf::cli {
namespace {

struct smooth_options {
  std::string data, x = "x", y = "y", method = "nw", kernel = "gaussian", bandwidth = "cv";
  std::string knn_weights = "uniform", at, out, summary, plot, plot_criterion, criterion_csv, loo;
  std::string save;  // MODEL.safetensors: the fitted smoother (model/saved_smoother.hpp)
  std::string k = "10";
  std::string cv = "loo";  // loo | kfold:K | groups:COL
  std::uint64_t cv_seed = 0;
  index k_max = 100;
  index grid = 200;
  bool exact = false;
  std::string na = "error";
  bool quiet = false;
  int degree = -1, derivative = 0;   // local polynomial (smooth_local_poly.cpp)
  std::string categorical, ordered;  // mixed data (mixed_data.cpp)
  double span = 2.0 / 3.0;           // lowess
  int iterations = 3;
  std::string delta = "auto";
  std::vector<const CLI::Option*> not_for_lowess;      // options lowess has no use for
  std::vector<const CLI::Option*> not_for_local_poly;  // nor local polynomials
};

// Seed 000's picture: a noisy sinusoid, y = sin(x) + 0.3·ε on 200 points x ~ U(0, 10).
io::csv_table builtin_sinusoid() {
  std::mt19937_64 rng(0);
  std::uniform_real_distribution<double> u(0.0, 10.0);
  std::normal_distribution<double> e(0.0, 1.0);
  io::csv_table t;
  t.source = "built-in noisy sinusoid";
  t.names = {"x", "y"};
  t.columns.resize(2);
  for (int i = 0; i < 200; ++i) {
    const double x = u(rng);
    t.columns[0].push_back(x);
    t.columns[1].push_back(std::sin(x) + 0.3 * e(rng));
  }
  return t;
}

regression_method parse_method(const std::string& m) {
  if (m == "nw" || m == "nadaraya-watson" || m == "local-constant") return regression_method::nw;
  if (m == "local-linear" || m == "ll") return regression_method::local_linear;
  if (m == "knn") return regression_method::knn;
  throw user_error("--method " + m + ": expected nw, local-linear, knn or lowess");
}

// Points at which to report the fit: --at FILE, or a grid over the data range (1-D: N points;
// d-D: N per axis if that stays ≤ 1e6 points, else the data points).
matrix<double> prediction_points(const smooth_options& o, const matrix<double>& x,
                                 const std::vector<std::string>& xcols) {
  if (!o.at.empty()) return read_points(o.at, xcols);
  return smooth_grid(x, o.grid);
}

// --cv: "" for leave-one-out, else the group column (groups:COL) or "" with k > 0 (kfold:K).
struct cv_choice {
  index k = 0;        // kfold:K
  std::string group;  // groups:COL
  bool folds() const { return k > 0 || !group.empty(); }
};
cv_choice parse_cv(const std::string& text) {
  cv_choice c;
  if (text == "loo") return c;
  if (text.starts_with("groups:") && text.size() > 7) {
    c.group = text.substr(7);
    return c;
  }
  if (text.starts_with("kfold:")) {
    char* end = nullptr;
    const long long k = std::strtoll(text.c_str() + 6, &end, 10);
    if (*end == '\0' && end != text.c_str() + 6 && k >= 2 && k <= 1000000) {
      c.k = static_cast<index>(k);
      return c;
    }
  }
  throw user_error("--cv " + text.substr(0, 40) +
                   ": expected loo, kfold:K (K >= 2) or groups:COLUMN");
}

// The folds of --cv for the n rows read (group values from their column), or null for LOO.
std::shared_ptr<const cv_folds> make_folds(const cv_choice& c, std::uint64_t seed, index n,
                                           std::span<const double> groups) {
  if (!c.folds()) return nullptr;
  try {
    return std::make_shared<const cv_folds>(c.k > 0 ? cv_folds_kfold(n, c.k, seed)
                                                    : cv_folds_groups(groups));
  } catch (const std::invalid_argument& e) {
    throw user_error(fmt::format("--cv: {}", e.what()));
  }
}

// Every option that needs no data, checked before any is read; every output path too.
regression_spec smooth_spec(const smooth_options& o, bandwidth_criterion& crit) {
  regression_spec spec;
  spec.method = parse_method(o.method);
  if (o.degree < -1 || o.degree > 3)
    throw user_error(fmt::format("--degree {}: expected 0..3", o.degree));
  if (o.degree == 0 || o.degree == 1) {  // nw and local-linear by name
    if (spec.method == regression_method::knn)
      throw user_error("--degree does not apply to knn (a local average of k neighbours)");
    spec.method = o.degree == 0 ? regression_method::nw : regression_method::local_linear;
  }
  std::vector<double> fixed;
  crit = parse_bandwidth(o.bandwidth, bandwidth_for::regression, fixed);
  spec.bandwidth = fixed;
  spec.kernel = parse_distance_kernel(o.kernel, "regression", true);
  if (const auto* rff = std::get_if<kernel_rff>(&spec.kernel); rff && rff->features > 8192)
    throw user_error(fmt::format(
        "--kernel {}: features={} is above 8192 (the confidence band keeps r^2 numbers)",
        o.kernel.substr(0, 60), rff->features));
  if (std::holds_alternative<kernel_rff>(spec.kernel) && spec.method != regression_method::nw)
    throw user_error(fmt::format(
        "--kernel rff: --method {} is refused ({}); rff takes --method nw", o.method,
        spec.method == regression_method::knn ? "knn has no kernel"
                                              : "the signed weights of far points, times (x_j - "
                                                "x)^2, swamp the local second moment"));
  if (crit == bandwidth_criterion::dpi &&
      (spec.method != regression_method::local_linear ||
       !std::holds_alternative<kernel_gaussian>(spec.kernel) || split_list(o.x, "--x").size() != 1))
    throw user_error(
        "--bandwidth dpi is the direct plug-in of gaussian local-linear regression on one column "
        "(KernSmooth's dpill): add --method local-linear (--kernel gaussian, one --x), or use cv");
  spec.knn_distance_weights = parse_knn_distance_weights(o.knn_weights);
  spec.k = parse_k(o.k);
  if (o.k_max < 1) throw user_error("--k-max must be at least 1");
  if (o.at.empty() && o.grid < 2) throw user_error("--grid must be at least 2");
  spec.k_max = o.k_max;
  spec.exact = o.exact;
  if (parse_cv(o.cv).folds()) {
    if (spec.method == regression_method::knn ? spec.k != 0 : crit != bandwidth_criterion::loo_cv)
      throw user_error(
          fmt::format("--cv {} chooses {} by cross-validation: add {}", o.cv,
                      spec.method == regression_method::knn ? "k" : "the bandwidth",
                      spec.method == regression_method::knn ? "--k cv" : "--bandwidth cv"));
    if (dist::size() > 1)
      throw mpi_refusal("under mpirun, --cv kfold/groups is not sharded: run one process");
  }
  spec.per_point = !o.loo.empty();  // only --loo writes per-point diagnostics
  require_fit_outputs({o.out, o.summary, o.plot, o.plot_criterion, o.criterion_csv});
  if (!o.loo.empty()) require_output(o.loo, "--loo", {".csv"});
  if (!o.save.empty()) require_output(o.save, "--save", {".safetensors"});
  if (dist::size() > 1) {
    // Under mpirun (docs/scale-out.md): every rank reads the data and takes its block of the
    // points; rank 0 writes.
    if (!o.loo.empty())
      throw mpi_refusal("under mpirun, --loo (per-point diagnostics) is not kept: run one process");
    spec.shard = dist::world_shard();
  }
  return spec;
}

// --method lowess: its own options checked, every output path checked, then the data read (one
// --x column) and handed to run_lowess.
void run_lowess_method(const smooth_options& o) {
  if (!o.save.empty())
    throw user_error(
        "--save does not apply to --method lowess (a saved smoother is nw, "
        "local-linear or knn)");
  for (const CLI::Option* opt : o.not_for_lowess)
    if (opt->count() > 0)
      throw user_error(
          fmt::format("{} does not apply to --method lowess (its smoothing parameter is --span)",
                      opt->get_name()));
  lowess_request q;
  q.spec.span = o.span;
  q.spec.iterations = o.iterations;
  if (!(o.span > 0 && o.span <= 1))
    throw user_error(fmt::format("--span {}: expected a fraction of the points in (0, 1]", o.span));
  if (o.iterations < 0 || o.iterations > 100)
    throw user_error(fmt::format("--iterations {}: expected 0..100", o.iterations));
  if (o.delta != "auto") {
    char* end = nullptr;
    q.spec.delta = std::strtod(o.delta.c_str(), &end);
    if (o.delta.empty() || *end != '\0' || !(q.spec.delta >= 0) || !std::isfinite(q.spec.delta))
      throw user_error("--delta " + o.delta.substr(0, 40) + ": expected auto or a distance >= 0");
  }
  if (o.at.empty() && o.grid < 2) throw user_error("--grid must be at least 2");
  if (dist::size() > 1)
    throw mpi_refusal("under mpirun, --method lowess is not sharded: run one process");
  q.out = {o.out, o.summary, o.plot, "", ""};
  require_fit_outputs(q.out);
  const auto xcols = split_list(o.x, "--x");
  if (xcols.size() != 1) throw user_error("--method lowess smooths on one --x column");
  stopwatch clock;
  io::csv_table table = o.data.empty() ? builtin_sinusoid()
                                       : read_data_columns(o.data, {xcols[0], o.y}, o.na, o.quiet);
  q.x = std::move(table.columns[table.column(xcols[0])]);
  q.y = std::move(table.columns[table.column(o.y)]);
  if (!o.at.empty()) {
    const matrix<double> at = read_points(o.at, xcols);
    q.at.assign(at.values().begin(), at.values().end());
  }
  q.grid = o.grid;
  q.xcol = xcols[0];
  q.ycol = o.y;
  q.source = table.source;
  q.quiet = o.quiet;
  q.read_seconds = clock.lap();
  run_lowess(q);
}

// --degree 2|3 or --derivative V: local polynomial regression of one --x column; its options
// checked, every output path checked, then the data read and handed to run_local_poly.
void run_local_poly_method(const smooth_options& o) {
  if (o.method != "nw" && o.method != "local-linear" && o.method != "ll")
    throw user_error("--degree/--derivative are local polynomial fits: drop --method " + o.method);
  if (o.degree > 3) throw user_error(fmt::format("--degree {}: expected 0..3", o.degree));
  local_poly_request q;
  q.spec.degree = o.degree >= 0 ? o.degree : o.derivative + 1;  // one above the derivative
  if (q.spec.degree > 3)
    throw user_error(
        fmt::format("--derivative {}: expected 0..3 (degree 3 at most)", o.derivative));
  q.spec.derivative = o.derivative;
  if (o.derivative < 0 || o.derivative > q.spec.degree)
    throw user_error(
        fmt::format("--derivative {}: expected 0..degree ({})", o.derivative, q.spec.degree));
  for (const CLI::Option* opt : o.not_for_local_poly)
    if (opt->count() > 0)
      throw user_error(
          fmt::format("{} does not apply to a local polynomial fit (--degree, "
                      "--derivative)",
                      opt->get_name()));
  std::vector<double> fixed;
  q.criterion = parse_bandwidth(o.bandwidth, bandwidth_for::regression, fixed);
  if (q.criterion == bandwidth_criterion::dpi)
    throw user_error("--bandwidth dpi is for local-linear fits (degree 1, no derivative)");
  if (q.criterion == bandwidth_criterion::fixed) q.spec.bandwidth = fixed.at(0);
  q.spec.kernel = parse_distance_kernel(o.kernel, "regression", true);
  if (std::holds_alternative<kernel_rff>(q.spec.kernel))
    throw user_error("--kernel rff does not apply to a local polynomial fit");
  q.spec.exact = o.exact;
  if (o.at.empty() && o.grid < 2) throw user_error("--grid must be at least 2");
  if (dist::size() > 1)
    throw mpi_refusal("under mpirun, a local polynomial fit is not sharded: run one process");
  q.out = {o.out, o.summary, o.plot, o.plot_criterion, o.criterion_csv};
  require_fit_outputs(q.out);
  const auto xcols = split_list(o.x, "--x");
  if (xcols.size() != 1) throw user_error("--degree/--derivative fit on one --x column");
  stopwatch clock;
  io::csv_table table = o.data.empty() ? builtin_sinusoid()
                                       : read_data_columns(o.data, {xcols[0], o.y}, o.na, o.quiet);
  q.x = std::move(table.columns[table.column(xcols[0])]);
  q.y = std::move(table.columns[table.column(o.y)]);
  if (!o.at.empty()) {
    const matrix<double> at = read_points(o.at, xcols);
    q.at.assign(at.values().begin(), at.values().end());
  }
  q.grid = o.grid;
  q.xcol = xcols[0];
  q.ycol = o.y;
  q.source = table.source;
  q.quiet = o.quiet;
  q.read_seconds = clock.lap();
  run_local_poly(q);
}

// --categorical / --ordered: Nadaraya-Watson on product kernels (mixed_data.cpp).
void run_mixed_method(const smooth_options& o) {
  if (o.method != "nw")
    throw user_error(
        "--categorical/--ordered fit Nadaraya-Watson (local constant): drop --method " + o.method);
  for (const CLI::Option* opt : o.not_for_local_poly)
    if (opt->count() > 0)
      throw user_error(
          fmt::format("{} does not apply with --categorical/--ordered", opt->get_name()));
  if (o.degree >= 0 || o.derivative > 0 || o.exact || o.kernel != "gaussian")
    throw user_error(
        "--categorical/--ordered take the gaussian for continuous columns, no "
        "--degree, --derivative, --exact or --kernel");
  if (dist::size() > 1) throw mpi_refusal("under mpirun, mixed data are not sharded");
  mixed_request q;
  q.data = o.data;
  q.at = o.at;
  q.xcols = split_list(o.x, "--x");
  q.y = o.y;
  q.categorical = o.categorical;
  q.ordered = o.ordered;
  q.bandwidth = o.bandwidth;
  q.na = o.na;
  q.out = {o.out, o.summary, o.plot, o.plot_criterion, o.criterion_csv};
  q.quiet = o.quiet;
  run_mixed_smooth(q);
}

void run(const smooth_options& o) {
  if (o.method == "lowess") return run_lowess_method(o);
  if (mixed_requested(o.categorical, o.ordered)) return run_mixed_method(o);
  if (o.degree >= 2 || o.derivative > 0) return run_local_poly_method(o);
  bandwidth_criterion crit{};
  regression_spec spec = smooth_spec(o, crit);
  const auto xcols = split_list(o.x, "--x");
  const cv_choice cv = parse_cv(o.cv);
  std::vector<std::string> used = xcols;
  used.push_back(o.y);
  if (!cv.group.empty() && std::find(used.begin(), used.end(), cv.group) == used.end())
    used.push_back(cv.group);
  step_progress steps;  // a bar per long library step (reading, binning, sums), on a terminal
  stopwatch clock;
  nlohmann::json seconds;
  io::csv_table table =
      o.data.empty() ? builtin_sinusoid() : read_data_columns(o.data, used, o.na, o.quiet);
  matrix<double> x;
  std::vector<double> y;
  try {
    x = table.select<double>(xcols);
    spec.folds = make_folds(
        cv, o.cv_seed, x.rows(),
        cv.group.empty() ? std::span<const double>{} : table.columns[table.column(cv.group)]);
    y = std::move(table.columns[table.column(o.y)]);
  } catch (const std::runtime_error& e) {
    throw user_error(e.what());
  }
  const std::string source = table.source;
  table = {};  // the parsed columns are in x and y now
  if (spec.method == regression_method::knn && crit != bandwidth_criterion::fixed &&
      o.bandwidth != "cv")
    throw user_error("--bandwidth does not apply to knn (its smoothing parameter is --k)");
  if (!o.plot.empty() && (x.cols() > 2 || (x.cols() == 2 && !o.at.empty())))
    throw user_error(
        "--plot draws a 1-D fit or a 2-D contour map on the grid (one or two --x columns, no "
        "--at)");
  if (const auto why = regression_shard_refusal(spec, x.rows(), x.cols());
      spec.shard.active() && !why.empty())
    throw mpi_refusal("under mpirun, " + why + " (kf smooth --help)");

  seconds["read"] = clock.lap();
  regression_fit fit;
  {
    progress_bar bar(spec.method == regression_method::knn ? "choosing k"
                                                           : "choosing the bandwidth");
    try {
      fit = regression_fit_data(spec, std::move(x), std::move(y), crit,
                                [&](int done, int total) { bar.update(done, total); });
    } catch (const std::invalid_argument& e) {
      throw user_error(fmt::format("{}: {}", source, e.what()));
    }
  }
  if ((!o.plot_criterion.empty() || !o.criterion_csv.empty()) && fit.curve.empty())
    throw user_error(
        "--plot-criterion/--criterion-csv need a searched bandwidth (--bandwidth cv, gcv or aic)");
  seconds["fit"] = clock.lap();
  matrix<double> at = prediction_points(o, fit.x, xcols);
  if (o.out.empty() && o.plot.empty()) {  // only the 9-row preview is printed
    matrix<double> nine(9, at.cols());
    for (index r = 0; r < 9; ++r)
      for (index c = 0; c < at.cols(); ++c) nine(r, c) = at(r * (at.rows() - 1) / 8, c);
    at = std::move(nine);
  }
  const regression_prediction pred = regression_predict(fit, at.cview());
  seconds["predict"] = clock.lap();
  const smooth_run r{spec, fit, pred, at, xcols, o.y, source};
  write_smooth_outputs({o.out, o.summary, o.plot, o.plot_criterion, o.criterion_csv}, o.loo, r,
                       seconds);
  if (!o.save.empty() && dist::is_root())
    io::write_file_atomic(o.save,
                          model::saved_smoother_encode(fit, xcols, o.y, command_line_text()));
  if (dist::is_root() && !o.quiet) smooth_print(r, o.out);
}

// kf smooth --help's examples and its notes on routes, MPI and LOWESS.
constexpr const char* kSmoothFooter =
    "Examples:\n"
    "  kf smooth                                      # built-in noisy sinusoid, LOO-CV\n"
    "  kf smooth data.csv --x t --y v --loo loo.csv  # leave-one-out fits, hat diagonal\n"
    "  kf smooth data.csv --x age --y income --method local-linear --out fit.csv --plot fit.svg\n"
    "  kf smooth data.csv --x a,b --y z --bandwidth gcv --summary s.json --out fit.csv\n"
    "  kf smooth data.csv --x t --y v --method local-linear --bandwidth dpi  # as R's dpill\n"
    "  kf smooth data.csv --method knn --k 15 --knn-weights distance --out knn.csv\n"
    "  kf smooth data.csv --x a,b,c --method knn --k cv --summary s.json  # k by LOO-CV\n"
    "  kf smooth data.csv --kernel rff:features=512 --bandwidth cv  # ~ gaussian, linear time\n"
    "  kf smooth data.csv --x t --y v --save fit.safetensors    # then: kf predict --model\n"
    "  kf smooth data.csv --x t --y v --cv kfold:10 --plot-criterion cv.svg  # 10-fold CV\n"
    "  kf smooth data.csv --x t --y v --cv groups:site  # leave one site out\n"
    "  kf smooth data.csv --x t --y v --degree 3 --plot cubic.svg  # local cubic, band\n"
    "  kf smooth data.csv --x t --y v --derivative 1 --out slope.csv  # m'(x) and its se\n"
    "  kf smooth cars.csv --x hp,am,cyl --y mpg --categorical am --ordered cyl  # mixed data\n"
    "  kf smooth data.csv --x t --y v --method lowess --out fit.csv --plot fit.png  # as R\n"
    "  kf smooth data.csv --method lowess --span 0.3 --iterations 0 --delta 0\n"
    "  mpirun -np 4 kf smooth big.csv --x t --y v --out fit.csv  # points over 4 ranks\n"
    "Routes (the summary names the one taken): 1-D nw/local-linear from 5000 points are\n"
    "binned (linear binning + FFT, every kernel but the boxcar; within 1e-4 of the range of y,\n"
    "1e-6 for the gaussian), compact kernels below that use exact sorted windows; 2-column nw\n"
    "is binned in 2-D (within 2e-3 of the range of y); knn uses sorted neighbors (1-D) or a\n"
    "k-d tree. Compact kernels elsewhere (2-column local-linear, 3+ columns, --exact) are exact\n"
    "through a k-d tree over each support (slow at 10^6 points, silverman: 3-D nw ~20-30 s,\n"
    "3-D local-linear ~40-45 s, 2-column nw --exact ~1.5-2 min); other kernels sum all pairs:\n"
    "slow beyond ~10^5 points. rff takes the primitive's feature-map route (O(n·r) a fit,\n"
    "O(n·r^2) for the band: ~gaussian within ~r^-1/2 of its weights; nw only). On a terminal "
    "every step that takes over a second (reading,\n"
    "binning, transforms, exact sums, neighbor queries, the search) shows a bar with ETA.\n"
    "Under mpirun every rank reads the data: binned grids (1-D, 2-D) are binned in blocks\n"
    "and summed, every route's criteria summed over blocks of the points; predictions are\n"
    "merged over blocks of the keys (all pairs) or split by blocks of the points (knn, sorted\n"
    "windows, k-d tree); rank 0 writes (equal to one process to 1e-12). Refused there: --loo,\n"
    "knn --exact, rff, lowess.\n"
    "lowess is R's lowess (equal to 1e-12): local-linear fits with tricube weights over the\n"
    "span's nearest points, bisquare robustness passes; with delta (1% of the range by default)\n"
    "a few hundred local fits whatever n (10^6 points in about a second); --delta 0 fits at\n"
    "every point: O(n^2 span), slow beyond ~10^5 points. No confidence band.";

// The options of --method lowess.
void add_lowess_options(CLI::App* sub, smooth_options& o) {
  sub->add_option("--span", o.span, "lowess: the fraction of the points in each local fit")
      ->capture_default_str();
  sub->add_option("--iterations", o.iterations,
                  "lowess: robustness passes (bisquare weights of the residuals); 0: none")
      ->capture_default_str();
  sub->add_option("--delta", o.delta,
                  "lowess: fit only at points more than this beyond the last fitted one and "
                  "interpolate in between; auto: 1% of the x range (R's default), 0: every point")
      ->capture_default_str();
}

// The options that choose another smoother or another cross-validation: categorical columns,
// local polynomials and derivatives, k-fold or grouped CV.
void add_choice_options(CLI::App* sub, smooth_options& o) {
  sub->add_option("--categorical", o.categorical,
                  "unordered categorical --x column(s), text or codes: Aitchison-Aitken kernels "
                  "in product with gaussians (nw; statsmodels' KernelReg var_type 'u')");
  sub->add_option("--ordered", o.ordered,
                  "ordered categorical --x column(s), numbers (their distance counts) or text "
                  "(sorted): Wang-van Ryzin kernels (var_type 'o')");
  sub->add_option("--degree", o.degree,
                  "local polynomial degree 0..3 (0: nw, 1: local-linear, 2-3: local quadratic or "
                  "cubic fits; one --x column)");
  sub->add_option("--derivative", o.derivative,
                  "report the V-th derivative of the regression function (V <= degree; the degree "
                  "defaults to V + 1), with its standard error")
      ->capture_default_str();
  sub->add_option("--cv", o.cv,
                  "how --bandwidth cv and --k cv hold points out: loo (leave-one-out, closed "
                  "form), kfold:K (K folds, shuffled by --cv-seed), groups:COLUMN (leave one "
                  "group out: one fold per value of COLUMN)")
      ->capture_default_str();
  sub->add_option("--cv-seed", o.cv_seed, "the shuffle of --cv kfold:K")->capture_default_str();
}

}  // namespace

void add_smooth(CLI::App& app) {
  auto o = std::make_shared<smooth_options>();
  CLI::App* sub = app.add_subcommand(
      "smooth",
      "Kernel regression of y on x: Nadaraya-Watson, local-linear or KNN, with a "
      "data-driven bandwidth and a confidence band");
  sub->add_option("data", o->data,
                  "CSV file with a header row, commas (or tabs, semicolons: detected); default: a "
                  "built-in noisy sinusoid");
  sub->add_option("--na", o->na,
                  "missing values (blank, NA, N/A, NaN) in the used columns: error, or drop (skip "
                  "those rows, say how many)")
      ->capture_default_str();
  sub->add_option("--x", o->x, "predictor column(s), comma-separated")->capture_default_str();
  sub->add_option("--y", o->y, "response column")->capture_default_str();
  sub->add_option("--method", o->method,
                  "nw | local-linear | knn | lowess (Cleveland's robust local regression, as R's "
                  "lowess: --span, --iterations, --delta)")
      ->capture_default_str();
  add_lowess_options(sub, *o);
  sub->add_option("--kernel", o->kernel,
                  "distance kernel: gaussian, epanechnikov, biweight, triweight, tricube, cosine, "
                  "boxcar, laplacian, cauchy, …, or rff[:features=R,seed=S] (random Fourier "
                  "features ~ gaussian, O(n·r))")
      ->capture_default_str();
  sub->add_option("--bandwidth", o->bandwidth,
                  "silverman | scott | cv (leave-one-out) | gcv | aic (AICc) | dpi (direct "
                  "plug-in, gaussian local-linear on one column: KernSmooth's dpill) | "
                  "NUMBER[,NUMBER…]")
      ->capture_default_str();
  sub->add_option("--k", o->k,
                  "neighbours for knn: a number, or cv (leave-one-out CV over 1..k-max)")
      ->capture_default_str();
  sub->add_option("--k-max", o->k_max, "largest k tried by --k cv")->capture_default_str();
  add_choice_options(sub, *o);
  sub->add_flag("--exact", o->exact,
                "exact sums instead of the binned route (1-D nw/local-linear from 5000 points, "
                "2-D nw) or the neighbor search (knn). Compact kernels stay fast: sorted windows "
                "in 1-D (a CV bandwidth at 10^6 points in ~3 s epanechnikov), a k-d tree over each "
                "support in 2+ columns; the other kernels sum all pairs, slow beyond ~10^5 points");
  sub->add_option("--knn-weights", o->knn_weights, "uniform | distance")->capture_default_str();
  auto* grid = sub->add_option("--grid", o->grid, "fit on N evenly spaced points (per axis)")
                   ->capture_default_str();
  sub->add_option("--at", o->at, "fit at the points of this CSV instead of a grid")->excludes(grid);
  sub->add_option("--out", o->out, "FIT.csv: x column(s), fit, se (written atomically)");
  sub->add_option("--summary", o->summary,
                  "SUMMARY.json: n, method, kernel, bandwidth, criterion, df, …");
  sub->add_option("--plot", o->plot, "FIG.svg or FIG.png: data, fit and 95% band");
  sub->add_option("--plot-criterion", o->plot_criterion, "FIG.svg|png: the criterion against h");
  sub->add_option("--criterion-csv", o->criterion_csv,
                  "CURVE.csv: the searched grid (scale, bandwidth, criterion)");
  sub->add_option("--save", o->save,
                  "MODEL.safetensors: the fitted smoother (its data, kernel and bandwidth); kf "
                  "predict --model MODEL --input POINTS.csv gives the fit and se at new points");
  sub->add_option("--loo", o->loo,
                  "LOO.csv: per training point x, y, fit, loo_fit, hat (W_ii), loo_residual");
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  for (const char* name :
       {"--kernel", "--bandwidth", "--k", "--k-max", "--cv", "--cv-seed", "--exact",
        "--knn-weights", "--plot-criterion", "--criterion-csv", "--loo"})
    o->not_for_lowess.push_back(sub->get_option(name));
  for (const char* name : {"--k", "--k-max", "--cv", "--cv-seed", "--knn-weights", "--loo",
                           "--save", "--span", "--iterations", "--delta"})
    o->not_for_local_poly.push_back(sub->get_option(name));
  o->not_for_lowess.push_back(sub->get_option("--degree"));
  o->not_for_lowess.push_back(sub->get_option("--derivative"));
  sub->footer(kSmoothFooter);
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
