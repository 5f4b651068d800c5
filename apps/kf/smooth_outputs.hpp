// What kf smooth writes and prints: the fit on its points (CSV), the per-point leave-one-out
// diagnostics (--loo), the JSON summary, the figure of data, fit and band, and the terminal
// report. Each takes the fitted smoother and its prediction; write_smooth_outputs stages and
// commits them.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "fit_options.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::cli {

struct smooth_run {
  const regression_spec& spec;  // as asked (method, kernel, k, ...)
  const regression_fit& fit;    // as fitted (the chosen bandwidth or k in fit.spec)
  const regression_prediction& pred;
  const matrix<double>& at;  // the points pred holds, one row each
  const std::vector<std::string>& xcols;
  const std::string& y;
  std::string source;  // the data's name: its file or "built-in noisy sinusoid"
};

// N evenly spaced points per axis over the data's range, rows in C order; the data points
// themselves when N^d would exceed 10^6.
matrix<double> smooth_grid(const matrix<double>& x, index per_axis);

std::string smooth_method_name(regression_method m);
// "inverse_distance" / "uniform" for knn, else the kernel's name.
std::string smooth_kernel_name(const regression_spec& spec);

// x column(s), fit, se; blank fit and se where no data is within the kernel's reach.
std::string smooth_fit_csv(const smooth_run& r);
// Per training point: x, y, the fit, the leave-one-out fit y − (y − ŷ)/(1 − W_ii), the hat
// diagonal W_ii and the LOO residual (blank where W_ii = 1: no other point has weight there).
std::string smooth_loo_csv(const smooth_run& r);
// n, columns, method, kernel, bandwidth or k, criteria, df, R², sigma, route, times, memory, MPI.
nlohmann::json smooth_summary(const smooth_run& r, const nlohmann::json& seconds);
// Data (every k-th point beyond 5000), fit and 95% band, as SVG or PNG by the path's extension.
std::string smooth_plot(const smooth_run& r, const std::string& path);
// The one-line description, the chosen parameter and criteria, warnings, and a 9-row preview
// when there is no --out.
void smooth_print(const smooth_run& r, const std::string& out);

// Every file asked for (F, and LOO: --loo), staged together and committed (under mpirun by rank 0
// only). SECONDS: the summary's time per step.
void write_smooth_outputs(const fit_outputs& f, const std::string& loo, const smooth_run& r,
                          const nlohmann::json& seconds);

}  // namespace kf::cli
