// kf smooth — nonparametric regression from a CSV file (or built-in data): NW, local-linear or
// KNN, bandwidth by rule or criterion, fit + standard error on a grid, summary JSON, plots.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "common.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/viz/plot.hpp"

namespace kf::cli {
namespace {

struct smooth_options {
  std::string data, x = "x", y = "y", method = "nw", kernel = "gaussian", bandwidth = "cv";
  std::string knn_weights = "uniform", at, out, summary, plot, plot_criterion, criterion_csv, loo;
  std::string k = "10";
  index k_max = 100;
  index grid = 200;
  bool exact = false;
  std::string na = "error";
  bool quiet = false;
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
  throw user_error("--method " + m + ": expected nw, local-linear or knn");
}

// "cv" etc., or NUMBER[,NUMBER...] (a fixed bandwidth per column).
bandwidth_criterion parse_bandwidth(const std::string& text, std::vector<double>& fixed) {
  double v = 0;
  const char* b = text.c_str();
  char* end = nullptr;
  v = std::strtod(b, &end);
  if (end != b) {
    for (const auto& item : split_list(text, "--bandwidth")) {
      char* e2 = nullptr;
      const double h = std::strtod(item.c_str(), &e2);
      if (*e2 != '\0' || !(std::isfinite(h) && h > 0))
        throw user_error("--bandwidth " + item + ": a fixed bandwidth must be a positive number");
      fixed.push_back(h);
    }
    (void)v;
    return bandwidth_criterion::fixed;
  }
  try {
    const auto c = bandwidth_criterion_parse(text);
    if (c == bandwidth_criterion::cv_ml || c == bandwidth_criterion::cv_ls)
      throw user_error("--bandwidth " + text +
                       " is a density criterion; for regression use "
                       "silverman, scott, cv, gcv, aic or a number");
    return c;
  } catch (const std::invalid_argument& e) {
    throw user_error(std::string("--bandwidth: ") + e.what());
  }
}

// Points at which to report the fit: --at FILE, or a grid over the data range (1-D: N points;
// d-D: N per axis if that stays ≤ 1e6 points, else the data points).
matrix<double> prediction_points(const smooth_options& o, const matrix<double>& x,
                                 const std::vector<std::string>& xcols) {
  if (!o.at.empty()) return read_points(o.at, xcols);
  if (o.grid < 2) throw user_error("--grid must be at least 2");
  const index d = x.cols();
  double total = 1;
  for (index c = 0; c < d; ++c) total *= double(o.grid);
  if (total > 1e6) return x;  // fall back to the data points
  matrix<double> g(static_cast<index>(total), d);
  std::vector<double> lo(static_cast<std::size_t>(d)), hi(static_cast<std::size_t>(d));
  for (index c = 0; c < d; ++c) {
    lo[static_cast<std::size_t>(c)] = hi[static_cast<std::size_t>(c)] = x(0, c);
    for (index i = 0; i < x.rows(); ++i) {
      lo[static_cast<std::size_t>(c)] = std::min(lo[static_cast<std::size_t>(c)], x(i, c));
      hi[static_cast<std::size_t>(c)] = std::max(hi[static_cast<std::size_t>(c)], x(i, c));
    }
  }
  for (index r = 0; r < g.rows(); ++r) {
    index rest = r;
    for (index c = d - 1; c >= 0; --c) {
      const index k = rest % o.grid;
      rest /= o.grid;
      const auto cu = static_cast<std::size_t>(c);
      g(r, c) = lo[cu] + (hi[cu] - lo[cu]) * double(k) / double(o.grid - 1);
    }
  }
  return g;
}

// Per training point: x, y, the fit, the leave-one-out fit y − (y − ŷ)/(1 − W_ii), the hat
// diagonal W_ii and the LOO residual (blank where W_ii = 1: no other point has weight there).
std::string loo_csv(const regression_fit& fit, const std::vector<std::string>& xcols,
                    const std::string& y) {
  std::string csv = fmt::format("{},{},fit,loo_fit,hat,loo_residual\n", fmt::join(xcols, ","), y);
  for (index i = 0; i < fit.x.rows(); ++i) {
    const auto iu = static_cast<std::size_t>(i);
    for (index c = 0; c < fit.x.cols(); ++c) csv += fmt::format("{},", fit.x(i, c));
    const double r = fit.loo_residuals[iu];
    csv += std::isfinite(r)
               ? fmt::format("{},{},{},{},{}\n", fit.y[iu], fit.fitted[iu], fit.y[iu] - r,
                             fit.hat_diag[iu], r)
               : fmt::format("{},{},,{},\n", fit.y[iu], fit.fitted[iu], fit.hat_diag[iu]);
  }
  return csv;
}

void run(const smooth_options& o) {
  // Validate everything cheap before reading data.
  regression_spec spec;
  spec.method = parse_method(o.method);
  std::vector<double> fixed;
  const bandwidth_criterion crit = parse_bandwidth(o.bandwidth, fixed);
  spec.bandwidth = fixed;
  try {
    const kernel_spec ks = kernel_parse(o.kernel);
    if (ks.is_product()) throw user_error("--kernel: regression takes a single distance kernel");
    spec.kernel = ks.first;
  } catch (const std::invalid_argument& e) {
    throw user_error(std::string("--kernel: ") + e.what());
  }
  if (kernel_arg_of(spec.kernel) != kernel_arg::sqdist)
    throw user_error(
        fmt::format("--kernel {}: regression needs a distance kernel (gaussian, "
                    "epanechnikov, tricube, …)",
                    kernel_name(spec.kernel)));
  if (o.knn_weights != "uniform" && o.knn_weights != "distance")
    throw user_error("--knn-weights " + o.knn_weights + ": expected uniform or distance");
  spec.knn_distance_weights = o.knn_weights == "distance";
  if (o.k == "cv") {
    spec.k = 0;
  } else {
    try {
      std::size_t used_chars = 0;
      spec.k = std::stoll(o.k, &used_chars);
      if (used_chars != o.k.size() || spec.k < 1) throw std::invalid_argument("k");
    } catch (const std::exception&) {
      throw user_error("--k " + o.k.substr(0, 40) + ": expected a positive integer or cv");
    }
  }
  if (o.k_max < 1) throw user_error("--k-max must be at least 1");
  spec.k_max = o.k_max;
  spec.exact = o.exact;
  spec.per_point = !o.loo.empty();  // only --loo writes per-point diagnostics
  if (!o.out.empty()) require_output(o.out, "--out", {".csv"});
  if (!o.summary.empty()) require_output(o.summary, "--summary", {".json"});
  if (!o.plot.empty()) require_output(o.plot, "--plot", {".svg", ".png"});
  if (!o.plot_criterion.empty())
    require_output(o.plot_criterion, "--plot-criterion", {".svg", ".png"});
  if (!o.criterion_csv.empty()) require_output(o.criterion_csv, "--criterion-csv", {".csv"});
  if (!o.loo.empty()) require_output(o.loo, "--loo", {".csv"});
  if (dist::size() > 1) {
    // Under mpirun (docs/scale-out.md): every rank reads the data and takes its block of the
    // points; rank 0 writes.
    if (!o.loo.empty())
      throw mpi_refusal("under mpirun, --loo (per-point diagnostics) is not kept: run one process");
    spec.shard = dist::world_shard();
  }

  const auto xcols = split_list(o.x, "--x");
  std::vector<std::string> used = xcols;
  used.push_back(o.y);
  step_progress steps;  // a bar per long library step (reading, binning, sums), on a terminal
  stopwatch clock;
  nlohmann::json seconds;
  io::csv_table table =
      o.data.empty() ? builtin_sinusoid() : read_data_columns(o.data, used, o.na, o.quiet);
  matrix<double> x;
  std::vector<double> y;
  try {
    x = table.select<double>(xcols);
    y = std::move(table.columns[table.column(o.y)]);
  } catch (const std::runtime_error& e) {
    throw user_error(e.what());
  }
  const std::string source = table.source;
  table = {};  // the parsed columns are in x and y now
  if (spec.method == regression_method::knn && crit != bandwidth_criterion::fixed &&
      o.bandwidth != "cv")
    throw user_error("--bandwidth does not apply to knn (its smoothing parameter is --k)");
  if (!o.plot.empty() && x.cols() != 1) throw user_error("--plot draws 1-D fits (one --x column)");
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

  // Outputs, staged together.
  io::atomic_writer writer;
  if (!o.out.empty()) {
    std::string csv = fmt::format("{},fit,se\n", fmt::join(xcols, ","));
    for (index i = 0; i < at.rows(); ++i) {
      for (index c = 0; c < at.cols(); ++c) csv += fmt::format("{},", at(i, c));
      const auto iu = static_cast<std::size_t>(i);
      csv += pred.defined[iu] ? fmt::format("{},{}\n", pred.fit[iu], pred.se[iu]) : ",\n";
    }
    writer.stage(o.out, csv);
  }
  const std::string method_name = spec.method == regression_method::nw             ? "nw"
                                  : spec.method == regression_method::local_linear ? "local-linear"
                                                                                   : "knn";
  nlohmann::json js;
  js["n"] = fit.x.rows();
  js["x"] = xcols;
  js["y"] = o.y;
  js["method"] = method_name;
  js["kernel"] = spec.method == regression_method::knn
                     ? (spec.knn_distance_weights ? "inverse_distance" : "uniform")
                     : std::string(kernel_name(spec.kernel));
  if (spec.method == regression_method::knn) {
    js["k"] = spec.k;
    js["bandwidth"] = nullptr;
  } else if (fit.spec.bandwidth.size() == 1) {
    js["bandwidth"] = fit.spec.bandwidth[0];
  } else {
    js["bandwidth"] = fit.spec.bandwidth;
  }
  js["criterion"] = bandwidth_criterion_name(fit.criterion);
  js["criterion_value"] = fit.criterion_value;
  js["df"] = fit.df;
  js["r2"] = fit.r2;
  js["sigma"] = std::sqrt(fit.sigma2);
  js["loo_cv"] = fit.loo_cv;
  js["gcv"] = fit.gcv;
  js["aicc"] = fit.aicc;
  js["at_search_boundary"] = fit.at_search_boundary;
  js["undefined_points"] = pred.undefined;
  js["seconds"] = seconds;
  js["peak_rss_mib"] = peak_rss_mib();  // read (the data), fit (parameter, criteria), predict
  js["route"] = regression_route(fit.spec, fit.x.rows(), fit.x.cols());
  // What rank 0 handed to MPI (grids, criterion sums, partial states) and its time inside MPI.
  add_mpi_summary(js);
  if (!o.summary.empty()) writer.stage(o.summary, js.dump(2) + "\n");
  if (!o.plot.empty()) {
    viz::figure f;
    f.title = fmt::format("{} regression, {} kernel, h = {:.4g} ({})", method_name,
                          js["kernel"].get<std::string>(),
                          fit.spec.bandwidth.empty() ? 0.0 : fit.spec.bandwidth[0],
                          bandwidth_criterion_name(fit.criterion));
    f.xlabel = xcols[0];
    f.ylabel = o.y;
    viz::series band{viz::series::kind::band,    {},         {}, {},
                     "95% band (fit ± 1.96 se)", viz::kBlue, 1,  0.2};
    viz::series line{viz::series::kind::line, {}, {}, {}, "fit", viz::kBlue, 2.5, 1};
    for (index i = 0; i < at.rows(); ++i) {
      const auto iu = static_cast<std::size_t>(i);
      const double fv = pred.defined[iu] ? pred.fit[iu] : NAN;
      band.x.push_back(at(i, 0));
      band.y.push_back(fv - 1.96 * pred.se[iu]);
      band.y_upper.push_back(fv + 1.96 * pred.se[iu]);
      line.x.push_back(at(i, 0));
      line.y.push_back(fv);
    }
    const std::size_t stride = plot_stride(fit.y.size());
    viz::series pts{viz::series::kind::points,
                    {},
                    {},
                    {},
                    stride == 1 ? "data" : fmt::format("data (every {}th point)", stride),
                    viz::kGrey,
                    2.5,
                    0.7};
    for (std::size_t i = 0; i < fit.y.size(); i += stride) {
      pts.x.push_back(fit.x(static_cast<index>(i), 0));
      pts.y.push_back(fit.y[i]);
    }
    f.data = {band, pts, line};
    writer.stage(o.plot, viz::render_for_path(f, o.plot));
  }
  if (!o.plot_criterion.empty())
    writer.stage(
        o.plot_criterion,
        criterion_plot(fit.curve, fit.spec.bandwidth[0], fit.criterion_value,
                       bandwidth_criterion_name(fit.criterion),
                       fit.x.cols() > 1 && spec.method != regression_method::knn, o.plot_criterion,
                       spec.method == regression_method::knn ? "k" : "bandwidth h"));
  if (!o.criterion_csv.empty()) writer.stage(o.criterion_csv, criterion_csv(fit.curve));
  if (!o.loo.empty()) writer.stage(o.loo, loo_csv(fit, xcols, o.y));
  if (!dist::is_root()) return;  // under mpirun rank 0 writes
  writer.commit();

  if (o.quiet) return;
  fmt::print("kf smooth: {} points from {}, method {}, kernel {}, route {}\n", fit.x.rows(), source,
             method_name, js["kernel"].get<std::string>(), js["route"].get<std::string>());
  if (spec.method == regression_method::knn)
    fmt::print("k = {}", spec.k);
  else
    fmt::print("bandwidth = {:.6g} ({})", fmt::join(fit.spec.bandwidth, ", "),
               bandwidth_criterion_name(fit.criterion));
  fmt::print(", criterion {} = {:.6g}, df = {:.2f}, R² = {:.4f}, sigma = {:.4g}\n",
             bandwidth_criterion_name(fit.criterion == bandwidth_criterion::fixed ||
                                              fit.criterion == bandwidth_criterion::silverman ||
                                              fit.criterion == bandwidth_criterion::scott
                                          ? bandwidth_criterion::loo_cv
                                          : fit.criterion),
             fit.criterion_value, fit.df, fit.r2, std::sqrt(fit.sigma2));
  if (fit.at_search_boundary && spec.method == regression_method::knn)
    fmt::print(stderr, "kf smooth: warning: the best k is the largest tried ({}); raise --k-max\n",
               fit.spec.k);
  else if (fit.at_search_boundary)
    fmt::print(stderr,
               "kf smooth: warning: the best bandwidth is at the edge of the searched range "
               "(0.01–10 × Silverman); the criterion may keep falling beyond it\n");
  if (pred.undefined > 0)
    fmt::print(stderr,
               "kf smooth: warning: {} of {} output points have no data within the "
               "kernel's reach; their fit and se are left empty\n",
               pred.undefined, at.rows());
  if (o.out.empty()) {
    fmt::print("\n{:>10}  {:>10}  {:>10}\n", xcols[0], "fit", "se");
    for (int r = 0; r < 9; ++r) {
      const index i = r * (at.rows() - 1) / 8;
      const auto iu = static_cast<std::size_t>(i);
      fmt::print("{:10.4g}  {:10.4g}  {:10.4g}\n", at(i, 0), pred.fit[iu], pred.se[iu]);
    }
    fmt::print("(write everything with --out FIT.csv; --summary, --plot for more)\n");
  } else {
    fmt::print("wrote {}\n", o.out);
  }
}

}  // namespace

void add_smooth(CLI::App& app) {
  auto o = std::make_shared<smooth_options>();
  CLI::App* sub = app.add_subcommand(
      "smooth",
      "Kernel regression of y on x: Nadaraya-Watson, local-linear or KNN, with a "
      "data-driven bandwidth and a confidence band");
  sub->add_option("data", o->data,
                  "CSV file with a header row (default: a built-in noisy sinusoid)");
  sub->add_option("--na", o->na,
                  "blank cells in the used columns: error, or drop (skip those rows, say how many)")
      ->capture_default_str();
  sub->add_option("--x", o->x, "predictor column(s), comma-separated")->capture_default_str();
  sub->add_option("--y", o->y, "response column")->capture_default_str();
  sub->add_option("--method", o->method, "nw | local-linear | knn")->capture_default_str();
  sub->add_option("--kernel", o->kernel,
                  "distance kernel: gaussian, epanechnikov, biweight, triweight, tricube, cosine, "
                  "boxcar, laplacian, cauchy, …")
      ->capture_default_str();
  sub->add_option("--bandwidth", o->bandwidth,
                  "silverman | scott | cv (leave-one-out) | gcv | aic (AICc) | NUMBER[,NUMBER…]")
      ->capture_default_str();
  sub->add_option("--k", o->k,
                  "neighbours for knn: a number, or cv (leave-one-out CV over 1..k-max)")
      ->capture_default_str();
  sub->add_option("--k-max", o->k_max, "largest k tried by --k cv")->capture_default_str();
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
  sub->add_option("--loo", o->loo,
                  "LOO.csv: per training point x, y, fit, loo_fit, hat (W_ii), loo_residual");
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->footer(
      "Examples:\n"
      "  kf smooth                                      # built-in noisy sinusoid, LOO-CV\n"
      "  kf smooth data.csv --x t --y v --loo loo.csv  # leave-one-out fits, hat diagonal\n"
      "  kf smooth data.csv --x age --y income --method local-linear --out fit.csv --plot fit.svg\n"
      "  kf smooth data.csv --x a,b --y z --bandwidth gcv --summary s.json --out fit.csv\n"
      "  kf smooth data.csv --method knn --k 15 --knn-weights distance --out knn.csv\n"
      "  kf smooth data.csv --x a,b,c --method knn --k cv --summary s.json  # k by LOO-CV\n"
      "  mpirun -np 4 kf smooth big.csv --x t --y v --out fit.csv  # points over 4 ranks\n"
      "Routes (the summary names the one taken): 1-D nw/local-linear from 5000 points are\n"
      "binned (linear binning + FFT, every kernel but the boxcar; within 1e-4 of the range of y,\n"
      "1e-6 for the gaussian), compact kernels below that use exact sorted windows; 2-column nw\n"
      "is binned in 2-D (within 2e-3 of the range of y); knn uses sorted neighbors (1-D) or a\n"
      "k-d tree. Compact kernels elsewhere (2-column local-linear, 3+ columns, --exact) are exact\n"
      "through a k-d tree over each support (slow at 10^6 points, silverman: 3-D nw ~20-30 s,\n"
      "3-D local-linear ~40-45 s, 2-column nw --exact ~1.5-2 min); other kernels sum all pairs:\n"
      "slow beyond ~10^5 points. On a terminal every step that takes over a second (reading,\n"
      "binning, transforms, exact sums, neighbor queries, the search) shows a bar with ETA.\n"
      "Under mpirun every rank reads the data: binned grids are binned in blocks and summed,\n"
      "all-pairs criteria are summed over blocks of the points, predictions merged over blocks\n"
      "of the keys; rank 0 writes (equal to one process to 1e-12). Refused there: --method knn,\n"
      "--loo, compact kernels on the sorted-window (1-D exact) and k-d tree (2+ columns) routes,\n"
      "2-column nw on the binned 2-D route.");
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
