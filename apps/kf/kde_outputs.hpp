// What kf kde writes: the density on its points (CSV), the JSON summary and the figure of the
// density over a rug of the data. The caller stages and commits.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "kernelformer/regression/kde.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::cli {

struct kde_run {
  const any_kernel& kernel;
  const kde_fit& fit;
  const matrix<double>& x;   // the data
  const matrix<double>& at;  // the points the density was evaluated at
  const std::vector<double>& density;
  const std::vector<std::string>& xcols;
};

// N points per axis over the data's range widened by 3 bandwidths on each side; refuses more
// than 10^6 points (use --at).
matrix<double> kde_grid(const matrix<double>& x, const std::vector<double>& bandwidth,
                        index per_axis);
std::string kde_density_csv(const kde_run& r);
// n, columns, kernel, bandwidth(s), criterion and its value, route, times, memory, MPI.
nlohmann::json kde_summary(const kde_run& r, const nlohmann::json& seconds);
// The density and a rug of the data (every k-th point beyond 5000), SVG or PNG by the path.
std::string kde_plot(const kde_run& r, const std::string& path);

}  // namespace kf::cli
