// The option values the fitting commands share (fit_options.hpp).
#include "fit_options.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "common.hpp"

namespace kf::cli {

bool is_bandwidth_list(const std::string& text) {
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  return end != text.c_str();
}

std::vector<double> parse_bandwidth_list(const std::string& text) {
  std::vector<double> h;
  for (const auto& item : split_list(text, "--bandwidth")) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (end == item.c_str() || *end != '\0' || !(std::isfinite(v) && v > 0))
      throw user_error("--bandwidth " + item + ": a fixed bandwidth must be a positive number");
    h.push_back(v);
  }
  return h;
}

bandwidth_criterion parse_bandwidth(const std::string& text, bandwidth_for use,
                                    std::vector<double>& fixed) {
  if (is_bandwidth_list(text)) {
    fixed = parse_bandwidth_list(text);
    return bandwidth_criterion::fixed;
  }
  bandwidth_criterion c{};
  try {
    c = bandwidth_criterion_parse(text);
  } catch (const std::invalid_argument& e) {
    throw user_error(std::string("--bandwidth: ") + e.what());
  }
  const bool density = c == bandwidth_criterion::cv_ml || c == bandwidth_criterion::cv_ls ||
                       c == bandwidth_criterion::sj || c == bandwidth_criterion::sj_dpi ||
                       c == bandwidth_criterion::isj;
  const bool regression = c == bandwidth_criterion::loo_cv || c == bandwidth_criterion::gcv ||
                          c == bandwidth_criterion::aicc || c == bandwidth_criterion::dpi;
  if (use == bandwidth_for::regression && density)
    throw user_error("--bandwidth " + text +
                     " is a density criterion; for regression use silverman, scott, cv, gcv, aic, "
                     "dpi or a number");
  if (use == bandwidth_for::density && regression)
    throw user_error("--bandwidth " + text +
                     " is a regression criterion; for density use silverman, scott, sj, sj-dpi, "
                     "isj, cv-ml, cv-ls or a number");
  return c;
}

index parse_k(const std::string& text) {
  if (text == "cv") return 0;
  char* end = nullptr;
  const long long k = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || k < 1)
    throw user_error("--k " + text.substr(0, 40) + ": expected a positive integer or cv");
  return static_cast<index>(k);
}

bool parse_knn_distance_weights(const std::string& text) {
  if (text != "uniform" && text != "distance")
    throw user_error("--knn-weights " + text + ": expected uniform or distance");
  return text == "distance";
}

any_kernel parse_distance_kernel(const std::string& text, const std::string& task, bool allow_rff) {
  kernel_spec ks;
  try {
    ks = kernel_parse(text);
  } catch (const std::invalid_argument& e) {
    throw user_error(std::string("--kernel: ") + e.what());
  }
  const bool rff = std::holds_alternative<kernel_rff>(ks.first);
  if (ks.is_product() || (kernel_arg_of(ks.first) != kernel_arg::sqdist && !(allow_rff && rff)))
    throw user_error(fmt::format(
        "--kernel {}: {} needs a single distance kernel (gaussian, epanechnikov, tricube, …{})",
        text.substr(0, 60), task, allow_rff ? ", or rff" : ""));
  return ks.first;
}

void require_fit_outputs(const fit_outputs& f) {
  if (!f.out.empty()) require_output(f.out, "--out", {".csv"});
  if (!f.summary.empty()) require_output(f.summary, "--summary", {".json"});
  if (!f.plot.empty()) require_output(f.plot, "--plot", {".svg", ".png"});
  if (!f.plot_criterion.empty())
    require_output(f.plot_criterion, "--plot-criterion", {".svg", ".png"});
  if (!f.criterion_csv.empty()) require_output(f.criterion_csv, "--criterion-csv", {".csv"});
}

}  // namespace kf::cli
