// kf classify — kernel classification from a CSV file: NW or KNN class probabilities (the
// smoother with one-hot labels), bandwidth or k by leave-one-out log-loss or accuracy, a
// confusion matrix, per-row LOO probabilities, a decision-region plot for 2-D x.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "common.hpp"
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
  index k_max = 50, grid = 150;
  bool quiet = false;
};

// Class names in order (numerically when every label is a number, else as text) and each row's
// class index.
struct label_set {
  std::vector<std::string> names;
  std::vector<index> of_row;
};

label_set index_labels(const std::vector<std::string>& text) {
  bool numeric = true;
  std::vector<double> value(text.size());
  for (std::size_t i = 0; i < text.size() && numeric; ++i) {
    char* end = nullptr;
    value[i] = std::strtod(text[i].c_str(), &end);
    numeric = end != text[i].c_str() && *end == '\0' && std::isfinite(value[i]);
  }
  label_set s;
  std::map<double, index> by_value;
  std::map<std::string, index> by_text;
  for (std::size_t i = 0; i < text.size(); ++i) {  // keys first, then numbered in order
    if (numeric)
      by_value.emplace(value[i], 0);
    else
      by_text.emplace(text[i], 0);
  }
  for (auto& kv : by_value) kv.second = static_cast<index>(s.names.size()), s.names.push_back("");
  for (auto& kv : by_text)
    kv.second = static_cast<index>(s.names.size()), s.names.push_back(kv.first);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const index c = numeric ? by_value[value[i]] : by_text[text[i]];
    if (s.names[static_cast<std::size_t>(c)].empty())
      s.names[static_cast<std::size_t>(c)] = text[i];
    s.of_row.push_back(c);
  }
  return s;
}

std::string csv_cell(const std::string& s) {
  const bool plain = s.find_first_of(",\"\n") == std::string::npos &&
                     (s.empty() || (s.front() != ' ' && s.back() != ' '));
  if (plain) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

// Probabilities as CSV: per row the x columns, the true label (when known: the training rows),
// the most probable class and p_<class> for every class.
std::string proba_csv(const std::vector<std::string>& xcols, const std::string& y,
                      const label_set& ls, const_matrix_view<double> x,
                      const std::vector<index>* labels, const matrix<double>& proba) {
  std::string csv =
      fmt::format("{}", fmt::join(xcols, ",")) + (labels ? "," + csv_cell(y) : "") + ",predicted";
  for (const auto& name : ls.names) csv += "," + csv_cell("p_" + name);
  csv += "\n";
  const index C = proba.cols();
  for (index i = 0; i < x.rows; ++i) {
    for (index c = 0; c < x.cols; ++c) csv += fmt::format("{},", x(i, c));
    if (labels)
      csv += csv_cell(ls.names[static_cast<std::size_t>((*labels)[static_cast<std::size_t>(i)])]) +
             ",";
    csv += csv_cell(ls.names[static_cast<std::size_t>(classify_argmax(proba.cview().row(i), C))]);
    for (index c = 0; c < C; ++c) csv += fmt::format(",{}", proba(i, c));
    csv += "\n";
  }
  return csv;
}

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
  try {
    const kernel_spec ks = kernel_parse(o.kernel);
    if (ks.is_product() || kernel_arg_of(ks.first) != kernel_arg::sqdist)
      throw user_error("--kernel " + o.kernel +
                       ": classification needs a distance kernel "
                       "(gaussian, epanechnikov, tricube, …)");
    spec.kernel = ks.first;
  } catch (const std::invalid_argument& e) {
    throw user_error(std::string("--kernel: ") + e.what());
  }
  if (o.bandwidth != "auto") {
    if (spec.method == classify_method::knn)
      throw user_error("--bandwidth does not apply to knn (its smoothing parameter is --k)");
    for (const auto& item : split_list(o.bandwidth, "--bandwidth")) {
      char* end = nullptr;
      const double h = std::strtod(item.c_str(), &end);
      if (*end != '\0' || end == item.c_str() || !(std::isfinite(h) && h > 0))
        throw user_error("--bandwidth " + item + ": expected auto or positive numbers");
      spec.bandwidth.push_back(h);
    }
    if (spec.bandwidth.size() != 1 && static_cast<index>(spec.bandwidth.size()) != d)
      throw user_error(fmt::format("--bandwidth: {} values for {} --x columns (give 1 or {})",
                                   spec.bandwidth.size(), d, d));
  }
  if (o.k != "cv") {
    char* end = nullptr;
    const long long k = std::strtoll(o.k.c_str(), &end, 10);
    if (*end != '\0' || end == o.k.c_str() || k < 1)
      throw user_error("--k " + o.k.substr(0, 40) + ": expected a positive integer or cv");
    spec.k = static_cast<index>(k);
  }
  if (o.k_max < 1) throw user_error("--k-max must be at least 1");
  spec.k_max = o.k_max;
  if (o.knn_weights != "uniform" && o.knn_weights != "distance")
    throw user_error("--knn-weights " + o.knn_weights + ": expected uniform or distance");
  spec.knn_distance_weights = o.knn_weights == "distance";
  return spec;
}

// Decision regions over the data's box (5% margin): the most probable class of each grid cell,
// then the data points coloured by their class.
std::string region_plot(const classify_fit& fit, const_matrix_view<double> x, const label_set& ls,
                        const std::vector<index>& labels, const std::vector<std::string>& xcols,
                        const std::string& title, index grid, const std::string& path) {
  static const viz::rgb palette[] = {viz::kBlue, viz::kOrange, viz::kGreen,
                                     viz::kRed,  viz::kPurple, viz::kGrey};
  double lo[2], hi[2];
  for (int c = 0; c < 2; ++c) {
    lo[c] = hi[c] = x(0, c);
    for (index i = 0; i < x.rows; ++i)
      lo[c] = std::min(lo[c], x(i, c)), hi[c] = std::max(hi[c], x(i, c));
    const double pad = 0.05 * (hi[c] - lo[c]);
    lo[c] -= pad, hi[c] += pad;
  }
  matrix<double> g(grid * grid, 2);
  for (index r = 0; r < grid; ++r)
    for (index c = 0; c < grid; ++c) {
      g(r * grid + c, 0) = lo[0] + (hi[0] - lo[0]) * (double(c) + 0.5) / double(grid);
      g(r * grid + c, 1) = lo[1] + (hi[1] - lo[1]) * (double(r) + 0.5) / double(grid);
    }
  const matrix<double> p =
      classify_probabilities(fit.spec, x, labels, fit.num_classes, g.cview(), false);
  viz::figure f;
  f.title = title;
  f.xlabel = xcols[0];
  f.ylabel = xcols[1];
  const auto C = static_cast<std::size_t>(fit.num_classes);
  std::vector<viz::series> cells(C), pts(C);
  for (std::size_t c = 0; c < C; ++c) {
    cells[c] = {viz::series::kind::cells, {}, {}, {}, "", palette[c % 6], 0, 0.28};
    cells[c].cell_w = (hi[0] - lo[0]) / double(grid);
    cells[c].cell_h = (hi[1] - lo[1]) / double(grid);
    pts[c] = {viz::series::kind::points, {}, {}, {}, ls.names[c], palette[c % 6], 3, 0.9};
  }
  for (index i = 0; i < g.rows(); ++i) {
    auto& s = cells[static_cast<std::size_t>(classify_argmax(p.cview().row(i), fit.num_classes))];
    s.x.push_back(g(i, 0));
    s.y.push_back(g(i, 1));
  }
  const std::size_t stride = plot_stride(labels.size());
  for (std::size_t i = 0; i < labels.size(); i += stride) {
    auto& s = pts[static_cast<std::size_t>(labels[i])];
    s.x.push_back(x(static_cast<index>(i), 0));
    s.y.push_back(x(static_cast<index>(i), 1));
  }
  for (auto& s : pts) f.data.push_back(s);
  f.data.insert(f.data.begin(), cells.begin(), cells.end());
  return viz::render_for_path(f, path);
}

void run(const classify_options& o) {
  const auto xcols = split_list(o.x, "--x");
  if (std::find(xcols.begin(), xcols.end(), o.y) != xcols.end())
    throw user_error("--y " + o.y + " is also an --x column");
  classify_spec spec = parse_spec(o, static_cast<index>(xcols.size()));
  if (!o.plot.empty() && xcols.size() != 2)
    throw user_error(
        fmt::format("--plot draws decision regions for 2 --x columns, not {}", xcols.size()));
  if (o.grid < 2 || o.grid > 1000) throw user_error("--grid must be in 2..1000");
  if (!o.out.empty()) require_output(o.out, "--out", {".csv"});
  if (!o.at.empty() && o.out.empty())
    throw user_error("--at needs --out (where the probabilities at those points are written)");
  if (!o.summary.empty()) require_output(o.summary, "--summary", {".json"});
  if (!o.plot.empty()) require_output(o.plot, "--plot", {".svg", ".png"});
  if (!o.plot_criterion.empty())
    require_output(o.plot_criterion, "--plot-criterion", {".svg", ".png"});
  if (o.na != "error" && o.na != "drop")
    throw user_error(fmt::format("--na {}: expected error or drop", o.na));

  step_progress steps;  // a bar per long library step (reading, neighbor queries), on a terminal
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
    fmt::print(stderr, "kf: note: {}: skipped {} rows with a blank cell (--na drop)\n", o.data,
               table.dropped_rows);
  const matrix<double> x = table.select<double>(xcols);
  const label_set ls = index_labels(table.text[0]);
  const auto C = static_cast<index>(ls.names.size());
  if (C < 2)
    throw user_error(
        fmt::format("{}: column '{}' holds a single class ('{}'); classification "
                    "needs at least 2",
                    o.data, o.y, ls.names[0].substr(0, 40)));
  if (C == x.rows() || C > 1000)
    throw user_error(
        fmt::format("{}: column '{}' has {} distinct values in {} rows: a number to "
                    "regress (kf smooth), not class labels",
                    o.data, o.y, C, x.rows()));
  matrix<double> at;
  if (!o.at.empty()) {
    try {
      at = read_points(o.at, xcols);
    } catch (const std::runtime_error& e) {
      throw user_error(e.what());
    }
  }
  classify_fit fit;
  {
    progress_bar bar(spec.method == classify_method::knn ? "choosing k" : "choosing the bandwidth");
    try {
      fit = classify_fit_data(spec, x.cview(), ls.of_row, C,
                              [&](int done, int total) { bar.update(done, total); });
    } catch (const std::invalid_argument& e) {
      throw user_error(fmt::format("{}: {}", o.data, e.what()));
    }
  }
  if (!o.plot_criterion.empty() && fit.curve.empty())
    throw user_error("--plot-criterion needs a searched parameter (--bandwidth auto or --k cv)");
  const bool knn = spec.method == classify_method::knn;
  const std::string param =
      knn ? fmt::format("k = {}", fit.spec.k)
          : fmt::format("bandwidth = {:.6g}", fmt::join(fit.spec.bandwidth, ", "));
  const std::string how = fit.curve.empty() ? "given" : classify_criterion_name(spec.criterion);
  const std::string kernel_text = knn ? (spec.knn_distance_weights ? "inverse_distance" : "uniform")
                                      : std::string(kernel_name(spec.kernel));

  io::atomic_writer writer;
  index at_undefined = 0;
  if (!o.out.empty() && o.at.empty())
    writer.stage(o.out, proba_csv(xcols, o.y, ls, x.cview(), &ls.of_row, fit.loo_proba));
  if (!o.at.empty())
    writer.stage(o.out, proba_csv(xcols, o.y, ls, at.cview(), nullptr,
                                  classify_probabilities(fit.spec, x.cview(), ls.of_row, C,
                                                         at.cview(), false, &at_undefined)));
  nlohmann::json js;
  js["n"] = x.rows();
  js["x"] = xcols;
  js["y"] = o.y;
  js["classes"] = ls.names;
  js["method"] = knn ? "knn" : "nw";
  js["kernel"] = kernel_text;
  if (knn)
    js["k"] = fit.spec.k;
  else
    js["bandwidth"] = fit.spec.bandwidth;
  js["criterion"] = how;
  js["loo_log_loss"] = fit.loo.log_loss;
  js["loo_accuracy"] = fit.loo.accuracy;
  js["confusion"] = fit.confusion;  // [true][predicted], leave-one-out
  js["undefined"] = fit.undefined;
  js["at_search_boundary"] = fit.at_search_boundary;
  if (!o.at.empty()) js["at"] = {{"file", o.at}, {"rows", at.rows()}, {"undefined", at_undefined}};
  if (!o.summary.empty()) writer.stage(o.summary, js.dump(2) + "\n");
  if (!o.plot.empty())
    writer.stage(o.plot, region_plot(fit, x.cview(), ls, ls.of_row, xcols,
                                     fmt::format("{} {} classifier, {} ({}), LOO accuracy {:.3f}",
                                                 js["method"].get<std::string>(), kernel_text,
                                                 param, how, fit.loo.accuracy),
                                     o.grid, o.plot));
  if (!o.plot_criterion.empty())
    writer.stage(
        o.plot_criterion,
        criterion_plot(fit.curve, knn ? double(fit.spec.k) : fit.spec.bandwidth[0],
                       spec.criterion == classify_criterion::log_loss
                           ? fit.loo.log_loss
                           : 1.0 - fit.loo.accuracy + 1e-9 * fit.loo.log_loss,
                       how, x.cols() > 1 && !knn, o.plot_criterion, knn ? "k" : "bandwidth h"));
  writer.commit();
  if (o.quiet) return;
  fmt::print("kf classify: {} rows from {}, {} classes, method {}, kernel {}\n", x.rows(), o.data,
             C, js["method"].get<std::string>(), kernel_text);
  fmt::print("{} ({}), LOO log-loss = {:.4f}, LOO accuracy = {:.4f}\n", param, how,
             fit.loo.log_loss, fit.loo.accuracy);
  if (fit.at_search_boundary)
    fmt::print(stderr, "kf classify: warning: the best {} is at the edge of the searched range\n",
               knn ? "k (raise --k-max)" : "bandwidth (0.01–10 × Silverman)");
  if (fit.undefined > 0)
    fmt::print(stderr,
               "kf classify: warning: {} rows have no other point within the kernel's reach; "
               "their probabilities are the class frequencies\n",
               fit.undefined);
  std::size_t w = 9;
  for (const auto& name : ls.names) w = std::max(w, std::min<std::size_t>(name.size(), 24) + 1);
  fmt::print("\nconfusion matrix (leave-one-out; rows: true {}, columns: predicted)\n", o.y);
  fmt::print("{:>{}}", "", w);
  for (const auto& name : ls.names) fmt::print("{:>{}}", name.substr(0, 24), w);
  for (index t = 0; t < C; ++t) {
    fmt::print("\n{:>{}}", ls.names[static_cast<std::size_t>(t)].substr(0, 24), w);
    for (index p = 0; p < C; ++p)
      fmt::print("{:>{}}", fit.confusion[static_cast<std::size_t>(t)][static_cast<std::size_t>(p)],
                 w);
  }
  fmt::print("\n");
  if (at_undefined > 0)
    fmt::print(stderr,
               "kf classify: warning: {} of the --at points have no training point within the "
               "kernel's reach; their probabilities are the class frequencies\n",
               at_undefined);
  if (!o.out.empty())
    fmt::print("wrote {}{}\n", o.out,
               o.at.empty()
                   ? ""
                   : fmt::format(" (probabilities at the {} points of {})", at.rows(), o.at));
}

}  // namespace

void add_classify(CLI::App& app) {
  auto o = std::make_shared<classify_options>();
  CLI::App* sub = app.add_subcommand(
      "classify",
      "Kernel classification: NW or KNN class probabilities (the smoother with one-hot labels), "
      "bandwidth or k by leave-one-out log-loss or accuracy");
  sub->add_option("data", o->data, "CSV file with a header row")->required();
  sub->add_option("--x", o->x, "predictor column(s), comma-separated")->required();
  sub->add_option("--y", o->y, "label column (text or numbers; each distinct value a class)")
      ->required();
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
  sub->add_option("--na", o->na, "blank cells in the used columns: error, or drop (skip rows)")
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
      "Probabilities are leave-one-out (row i's own label left out), so the confusion matrix and\n"
      "scores are honest; --at points are classified by every training row. Exact all-pairs\n"
      "sums: O(n^2) per candidate, fine up to ~10^4 rows.");
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
