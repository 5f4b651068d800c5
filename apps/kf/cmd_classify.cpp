// kf classify — kernel classification from a CSV file: NW or KNN class probabilities (the
// smoother with one-hot labels), bandwidth or k by leave-one-out log-loss or accuracy, a
// confusion matrix, per-row LOO probabilities, a decision-region plot for 2-D x.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "classify_outputs.hpp"
#include "common.hpp"
#include "fit_options.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/regression/classifier.hpp"
#include "kernelformer/viz/plot.hpp"

namespace kf::cli {
namespace {

struct classify_options {
  std::string data, x, y, method = "nw", kernel = "gaussian", bandwidth = "auto", k = "cv";
  std::string knn_weights = "uniform", criterion = "log-loss", out, summary, plot, plot_criterion;
  std::string at;
  std::string na = "error";
  index k_max = 50, grid = 150, bins = 0;
  bool quiet = false;
};

classify_spec parse_spec(const classify_options& o, index d) {
  classify_spec spec;
  if (o.method == "nw" || o.method == "nadaraya-watson") {
    spec.method = classify_method::nw;
  } else if (o.method == "knn") {
    spec.method = classify_method::knn;
  } else {
    throw user_error("--method " + o.method + ": expected nw or knn");
  }
  if (o.criterion == "log-loss" || o.criterion == "accuracy")
    spec.criterion =
        o.criterion == "accuracy" ? classify_criterion::accuracy : classify_criterion::log_loss;
  else
    throw user_error("--criterion " + o.criterion + ": expected log-loss or accuracy");
  spec.kernel = parse_distance_kernel(o.kernel, "classification");
  if (o.bandwidth != "auto") {
    if (spec.method == classify_method::knn)
      throw user_error("--bandwidth does not apply to knn (its smoothing parameter is --k)");
    spec.bandwidth = parse_bandwidth_list(o.bandwidth);
    if (spec.bandwidth.size() != 1 && static_cast<index>(spec.bandwidth.size()) != d)
      throw user_error(fmt::format("--bandwidth: {} values for {} --x columns (give 1 or {})",
                                   spec.bandwidth.size(), d, d));
  }
  spec.k = parse_k(o.k);  // 0: cv
  if (o.k_max < 1) throw user_error("--k-max must be at least 1");
  spec.k_max = o.k_max;
  spec.knn_distance_weights = parse_knn_distance_weights(o.knn_weights);
  return spec;
}

// Every option that needs no data, and every output path, checked before the data is read.
classify_spec check_options(const classify_options& o, const std::vector<std::string>& xcols) {
  if (std::find(xcols.begin(), xcols.end(), o.y) != xcols.end())
    throw user_error("--y " + o.y + " is also an --x column");
  classify_spec spec = parse_spec(o, static_cast<index>(xcols.size()));
  if (!o.plot.empty() && xcols.size() != 2)
    throw user_error(
        fmt::format("--plot draws decision regions for 2 --x columns, not {}", xcols.size()));
  if (o.grid < 2 || o.grid > 1000) throw user_error("--grid must be in 2..1000");
  if (!o.at.empty() && o.out.empty())
    throw user_error("--at needs --out (where the probabilities at those points are written)");
  require_fit_outputs({o.out, o.summary, o.plot, o.plot_criterion, ""});
  if (o.na != "error" && o.na != "drop")
    throw user_error(fmt::format("--na {}: expected error or drop", o.na));
  return spec;
}

// The --x columns and the classes of --y: at least 2, and not one per row (a number to regress).
struct classify_data {
  matrix<double> x;
  label_set ls;
  index classes = 0;
};

// The labels as numbers, when every one is a number (else empty).
std::vector<double> numeric_labels(const std::vector<std::string>& text) {
  std::vector<double> v;
  for (const auto& t : text) {
    char* end = nullptr;
    const double d = std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(d)) return {};
    v.push_back(d);
  }
  return v;
}

// --bins K: a numeric --y cut at its K-quantiles into classes named "lo..hi" (equal counts up to
// ties; tied edges merge bins).
std::vector<std::string> bin_labels(const classify_options& o, const std::vector<double>& v) {
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  std::vector<double> edges;
  for (index k = 1; k < o.bins; ++k) {
    const double h = double(s.size() - 1) * double(k) / double(o.bins);
    const auto lo = static_cast<std::size_t>(h);
    const double e = s[lo] + (h - double(lo)) * (s[std::min(lo + 1, s.size() - 1)] - s[lo]);
    if (edges.empty() || e > edges.back()) edges.push_back(e);
  }
  std::vector<std::string> out;
  for (double x : v) {
    const auto b =
        static_cast<std::size_t>(std::upper_bound(edges.begin(), edges.end(), x) - edges.begin());
    const double lo = b == 0 ? s.front() : edges[b - 1];
    const double hi = b == edges.size() ? s.back() : edges[b];
    out.push_back(fmt::format("{:.4g}..{:.4g}", lo, hi));
  }
  return out;
}

// Refuses a --y that holds a quantity rather than classes: numbers, not all integers, more than
// 10 distinct values (the hint: kf smooth, or --bins).
void check_not_continuous(const classify_options& o, const std::vector<double>& v) {
  if (v.empty()) return;
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  const auto distinct = std::unique(s.begin(), s.end()) - s.begin();
  const bool integers =
      std::all_of(v.begin(), v.end(), [](double x) { return x == std::floor(x); });
  if (!integers && distinct > 10)
    throw user_error(fmt::format(
        "{}: column '{}' holds {} distinct numbers, not all integers: a quantity to regress (kf "
        "smooth), not class labels; to classify its ranges, add --bins K (K quantile classes)",
        o.data, o.y, distinct));
}

classify_data read_data(const classify_options& o, const std::vector<std::string>& xcols) {
  io::csv_options copt;
  copt.columns = xcols;
  copt.text_columns = {o.y};
  copt.drop_blank = o.na == "drop";
  io::csv_table table;
  try {
    table = io::csv_read(o.data, copt);
  } catch (const std::runtime_error& e) {
    throw user_error(e.what());
  }
  if (table.dropped_rows > 0 && !o.quiet)
    fmt::print(stderr, "kf: note: {}: skipped {} rows with a missing value (--na drop)\n", o.data,
               table.dropped_rows);
  const std::vector<double> numeric = numeric_labels(table.text[0]);
  if (o.bins > 0 && numeric.empty())
    throw user_error(
        fmt::format("--bins {}: column '{}' of {} is not all numbers", o.bins, o.y, o.data));
  if (o.bins == 0) check_not_continuous(o, numeric);
  classify_data d{table.select<double>(xcols),
                  index_labels(o.bins > 0 ? bin_labels(o, numeric) : table.text[0]), 0};
  d.classes = static_cast<index>(d.ls.names.size());
  if (d.classes < 2)
    throw user_error(
        fmt::format("{}: column '{}' holds a single class ('{}'); classification "
                    "needs at least 2",
                    o.data, o.y, d.ls.names[0].substr(0, 40)));
  if (d.classes == d.x.rows() || d.classes > 1000)
    throw user_error(
        fmt::format("{}: column '{}' has {} distinct values in {} rows: a number to "
                    "regress (kf smooth), not class labels",
                    o.data, o.y, d.classes, d.x.rows()));
  return d;
}

classify_fit fit_classifier(const classify_options& o, const classify_spec& spec,
                            const classify_data& d) {
  progress_bar bar(spec.method == classify_method::knn ? "choosing k" : "choosing the bandwidth");
  try {
    return classify_fit_data(spec, d.x.cview(), d.ls.of_row, d.classes,
                             [&](int done, int total) { bar.update(done, total); });
  } catch (const std::invalid_argument& e) {
    throw user_error(fmt::format("{}: {}", o.data, e.what()));
  }
}

// Every file asked for, staged and committed together; counts in AT_UNDEFINED the --at points no
// training point reaches.
void write_outputs(const classify_options& o, const std::vector<std::string>& xcols,
                   const classify_spec& spec, const classify_data& d, const classify_fit& fit,
                   const matrix<double>& at, const classify_names& names, index& at_undefined) {
  const bool knn = spec.method == classify_method::knn;
  const label_set& ls = d.ls;
  io::atomic_writer writer;
  if (!o.out.empty() && o.at.empty())
    writer.stage(o.out, proba_csv(xcols, o.y, ls, d.x.cview(), &ls.of_row, fit.loo_proba));
  if (!o.at.empty())
    writer.stage(o.out,
                 proba_csv(xcols, o.y, ls, at.cview(), nullptr,
                           classify_probabilities(fit.spec, d.x.cview(), ls.of_row, d.classes,
                                                  at.cview(), false, &at_undefined)));
  nlohmann::json js = classify_summary(fit, ls, xcols, o.y, names.kernel, names.how);
  if (!o.at.empty()) js["at"] = {{"file", o.at}, {"rows", at.rows()}, {"undefined", at_undefined}};
  if (!o.summary.empty()) writer.stage(o.summary, js.dump(2) + "\n");
  if (!o.plot.empty())
    writer.stage(o.plot, region_plot(fit, d.x.cview(), ls, ls.of_row, xcols,
                                     fmt::format("{} {} classifier, {} ({}), LOO accuracy {:.3f}",
                                                 names.method, names.kernel, names.param, names.how,
                                                 fit.loo.accuracy),
                                     o.grid, o.plot));
  if (!o.plot_criterion.empty())
    writer.stage(o.plot_criterion,
                 criterion_plot(fit.curve, knn ? double(fit.spec.k) : fit.spec.bandwidth[0],
                                spec.criterion == classify_criterion::log_loss
                                    ? fit.loo.log_loss
                                    : 1.0 - fit.loo.accuracy + 1e-9 * fit.loo.log_loss,
                                names.how, d.x.cols() > 1 && !knn, o.plot_criterion,
                                knn ? "k" : "bandwidth h"));
  writer.commit();
}

void run(const classify_options& o) {
  const auto xcols = split_list(o.x, "--x");
  const classify_spec spec = check_options(o, xcols);
  step_progress steps;  // a bar per long library step (reading, neighbor queries), on a terminal
  const classify_data d = read_data(o, xcols);
  matrix<double> at;
  if (!o.at.empty()) {
    try {
      at = read_points(o.at, xcols);
    } catch (const std::runtime_error& e) {
      throw user_error(e.what());
    }
  }
  const classify_fit fit = fit_classifier(o, spec, d);
  if (!o.plot_criterion.empty() && fit.curve.empty())
    throw user_error("--plot-criterion needs a searched parameter (--bandwidth auto or --k cv)");
  const classify_names names = classify_fit_names(spec, fit);
  index at_undefined = 0;
  write_outputs(o, xcols, spec, d, fit, at, names, at_undefined);
  if (o.quiet) return;
  print_classify_result(fit, d.ls, names, o.data, o.y, d.x.rows());
  if (at_undefined > 0)
    fmt::print(stderr,
               "kf classify: warning: {} of the --at points have no training point within the "
               "kernel's reach; their probabilities are the class frequencies\n",
               at_undefined);
  if (!o.out.empty() && !o.at.empty())
    fmt::print("kf classify: {} holds the probabilities at the {} points of {}\n", o.out, at.rows(),
               o.at);
}

}  // namespace

void add_classify(CLI::App& app) {
  auto o = std::make_shared<classify_options>();
  CLI::App* sub = app.add_subcommand(
      "classify",
      "Kernel classification: NW or KNN class probabilities (the smoother with one-hot labels), "
      "bandwidth or k by leave-one-out log-loss or accuracy");
  sub->add_option("data", o->data,
                  "CSV file with a header row (commas, or tabs or semicolons: detected)")
      ->required();
  sub->add_option("--x", o->x, "predictor column(s), comma-separated")->required();
  sub->add_option("--y", o->y, "label column (text or numbers; each distinct value a class)")
      ->required();
  sub->add_option("--bins", o->bins,
                  "a numeric --y cut into K quantile classes named lo..hi (a continuous --y is "
                  "refused without it)");
  sub->add_option("--method", o->method, "nw | knn")->capture_default_str();
  sub->add_option("--kernel", o->kernel, "nw: distance kernel (gaussian, epanechnikov, …)")
      ->capture_default_str();
  sub->add_option("--bandwidth", o->bandwidth,
                  "nw: auto (chosen by --criterion) | NUMBER[,NUMBER…] (one per --x column)")
      ->capture_default_str();
  sub->add_option("--k", o->k, "knn: neighbours, or cv (every k in 1..k-max by --criterion)")
      ->capture_default_str();
  sub->add_option("--k-max", o->k_max, "largest k tried by --k cv")->capture_default_str();
  sub->add_option("--knn-weights", o->knn_weights, "uniform | distance")->capture_default_str();
  sub->add_option("--criterion", o->criterion,
                  "leave-one-out log-loss | accuracy (ties broken by log-loss)")
      ->capture_default_str();
  sub->add_option(
         "--na", o->na,
         "missing values (blank, NA, N/A, NaN) in the used columns: error, or drop (skip rows)")
      ->capture_default_str();
  sub->add_option("--out", o->out,
                  "PROBA.csv: per row the x columns, label, LOO prediction and LOO p_<class>; "
                  "with --at, the x columns, prediction and p_<class> at those points");
  sub->add_option("--at", o->at,
                  "POINTS.csv: classify these points (columns named like --x, or exactly as many "
                  "columns) with the chosen parameter; written to --out");
  sub->add_option("--summary", o->summary,
                  "SUMMARY.json: classes, parameter, LOO log-loss and accuracy, confusion");
  sub->add_option("--plot", o->plot, "FIG.svg|png: decision regions and data (2 --x columns)");
  sub->add_option("--grid", o->grid, "cells per axis of the decision-region plot")
      ->capture_default_str();
  sub->add_option("--plot-criterion", o->plot_criterion,
                  "FIG.svg|png: the criterion against the bandwidth or k");
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->footer(
      "Examples:\n"
      "  kf classify iris.csv --x petal_length,petal_width --y species --plot regions.svg\n"
      "  kf classify data.csv --x a,b,c --y label --criterion accuracy --out proba.csv\n"
      "  kf classify data.csv --x a,b --y label --method knn --k cv --k-max 30 --summary s.json\n"
      "  kf classify data.csv --x a --y label --kernel epanechnikov --bandwidth 0.5\n"
      "  kf classify train.csv --x a,b --y label --at new.csv --out new_proba.csv\n"
      "  kf classify houses.csv --x area,age --y price --bins 3   # price thirds as classes\n"
      "Probabilities are leave-one-out (row i's own label left out), so the confusion matrix and\n"
      "scores are honest; --at points are classified by every training row. Exact all-pairs\n"
      "sums: O(n^2) per candidate, fine up to ~10^4 rows.");
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
