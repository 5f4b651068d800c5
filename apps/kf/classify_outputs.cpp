// kf classify's labels and outputs (classify_outputs.hpp).
#include "classify_outputs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "kernelformer/viz/plot.hpp"
#include "kernelformer/viz/report.hpp"

namespace kf::cli {

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

// Probabilities as CSV: per row the x columns, the true label (when known: the training rows),
// the most probable class and p_<class> for every class.
std::string proba_csv(const std::vector<std::string>& xcols, const std::string& y,
                      const label_set& ls, const_matrix_view<double> x,
                      const std::vector<index>* labels, const matrix<double>& proba) {
  // Appended piece by piece (GCC 12 warns falsely on `"literal" + std::string&&`, bug 105329).
  std::string csv = fmt::format("{}", fmt::join(xcols, ","));
  if (labels) csv.append(",").append(viz::csv_cell(y));
  csv += ",predicted";
  for (const auto& name : ls.names) csv.append(",").append(viz::csv_cell("p_" + name));
  csv += "\n";
  const index C = proba.cols();
  for (index i = 0; i < x.rows; ++i) {
    for (index c = 0; c < x.cols; ++c) csv += fmt::format("{},", x(i, c));
    if (labels)
      csv += viz::csv_cell(
                 ls.names[static_cast<std::size_t>((*labels)[static_cast<std::size_t>(i)])]) +
             ",";
    csv +=
        viz::csv_cell(ls.names[static_cast<std::size_t>(classify_argmax(proba.cview().row(i), C))]);
    for (index c = 0; c < C; ++c) csv += fmt::format(",{}", proba(i, c));
    csv += "\n";
  }
  return csv;
}

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

nlohmann::json classify_summary(const classify_fit& fit, const label_set& ls,
                                const std::vector<std::string>& xcols, const std::string& y,
                                const std::string& kernel, const std::string& criterion) {
  const bool knn = fit.spec.method == classify_method::knn;
  nlohmann::json js;
  js["n"] = fit.loo_proba.rows();
  js["x"] = xcols;
  js["y"] = y;
  js["classes"] = ls.names;
  js["method"] = knn ? "knn" : "nw";
  js["kernel"] = kernel;
  if (knn)
    js["k"] = fit.spec.k;
  else
    js["bandwidth"] = fit.spec.bandwidth;
  js["criterion"] = criterion;
  js["loo_log_loss"] = fit.loo.log_loss;
  js["loo_accuracy"] = fit.loo.accuracy;
  js["confusion"] = fit.confusion;  // [true][predicted], leave-one-out
  js["undefined"] = fit.undefined;
  js["at_search_boundary"] = fit.at_search_boundary;
  return js;
}

void print_confusion(const classify_fit& fit, const label_set& ls, const std::string& y) {
  const auto C = static_cast<index>(ls.names.size());
  std::size_t w = 9;
  for (const auto& name : ls.names) w = std::max(w, std::min<std::size_t>(name.size(), 24) + 1);
  fmt::print("\nconfusion matrix (leave-one-out; rows: true {}, columns: predicted)\n", y);
  fmt::print("{:>{}}", "", w);
  for (const auto& name : ls.names) fmt::print("{:>{}}", name.substr(0, 24), w);
  for (index t = 0; t < C; ++t) {
    fmt::print("\n{:>{}}", ls.names[static_cast<std::size_t>(t)].substr(0, 24), w);
    for (index p = 0; p < C; ++p)
      fmt::print("{:>{}}", fit.confusion[static_cast<std::size_t>(t)][static_cast<std::size_t>(p)],
                 w);
  }
  fmt::print("\n");
}

classify_names classify_fit_names(const classify_spec& spec, const classify_fit& fit) {
  const bool knn = spec.method == classify_method::knn;
  return {knn ? "knn" : "nw",
          knn ? fmt::format("k = {}", fit.spec.k)
              : fmt::format("bandwidth = {:.6g}", fmt::join(fit.spec.bandwidth, ", ")),
          fit.curve.empty() ? "given" : classify_criterion_name(spec.criterion),
          knn ? (spec.knn_distance_weights ? "inverse_distance" : "uniform")
              : std::string(kernel_name(spec.kernel))};
}

void print_classify_result(const classify_fit& fit, const label_set& ls,
                           const classify_names& names, const std::string& data,
                           const std::string& y, index rows) {
  fmt::print("kf classify: {} rows from {}, {} classes, method {}, kernel {}\n", rows, data,
             ls.names.size(), names.method, names.kernel);
  fmt::print("{} ({}), LOO log-loss = {:.4f}, LOO accuracy = {:.4f}\n", names.param, names.how,
             fit.loo.log_loss, fit.loo.accuracy);
  if (fit.at_search_boundary)
    fmt::print(stderr, "kf classify: warning: the best {} is at the edge of the searched range\n",
               names.method == "knn" ? "k (raise --k-max)" : "bandwidth (0.01–10 × Silverman)");
  if (fit.undefined > 0)
    fmt::print(stderr,
               "kf classify: warning: {} rows have no other point within the kernel's reach; "
               "their probabilities are the class frequencies\n",
               fit.undefined);
  print_confusion(fit, ls, y);
}

}  // namespace kf::cli
