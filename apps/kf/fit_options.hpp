// The option values kf smooth, kf kde and kf classify share, parsed in one place: a bandwidth
// given as a rule, a criterion or numbers; k as a number or cv; one distance kernel; the KNN
// weights; and the paths of a fit's output files, checked before any data is read.
#pragma once

#include <string>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/regression/bandwidth.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::cli {

// NUMBER[,NUMBER…]: one positive bandwidth, or one per column.
bool is_bandwidth_list(const std::string& text);
std::vector<double> parse_bandwidth_list(const std::string& text);

enum class bandwidth_for { regression, density };
// A rule (silverman, scott), the criteria that fit the task (regression: cv, gcv, aic; density:
// cv-ml, cv-ls), or numbers: then bandwidth_criterion::fixed and the numbers in `fixed`.
bandwidth_criterion parse_bandwidth(const std::string& text, bandwidth_for use,
                                    std::vector<double>& fixed);

// --k: a positive integer, or cv (0: chosen by leave-one-out CV up to --k-max).
index parse_k(const std::string& text);
// --knn-weights uniform | distance (true: inverse-distance weights).
bool parse_knn_distance_weights(const std::string& text);
// One distance kernel (gaussian, epanechnikov, …), or rff where allow_rff (nw and local linear:
// regression_kernel_supported); `task` names the use in the error.
any_kernel parse_distance_kernel(const std::string& text, const std::string& task,
                                 bool allow_rff = false);

// The files a fit writes (empty: not asked for); every one is checked by require_fit_outputs.
struct fit_outputs {
  std::string out, summary, plot, plot_criterion, criterion_csv;
};
void require_fit_outputs(const fit_outputs& f);

}  // namespace kf::cli
