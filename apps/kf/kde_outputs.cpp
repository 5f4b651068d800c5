// kf kde's outputs (kde_outputs.hpp).
#include "kde_outputs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "kernelformer/viz/plot.hpp"

namespace kf::cli {

matrix<double> kde_grid(const matrix<double>& x, const std::vector<double>& bandwidth,
                        index per_axis) {
  const index d = x.cols();
  double total = 1;
  for (index c = 0; c < d; ++c) total *= double(per_axis);
  if (total > 1e6) throw user_error("--grid: too many points in this many dimensions; use --at");
  matrix<double> at(static_cast<index>(total), d);
  std::vector<double> lo(static_cast<std::size_t>(d)), hi(static_cast<std::size_t>(d));
  for (index c = 0; c < d; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    lo[cu] = hi[cu] = x(0, c);
    for (index i = 0; i < x.rows(); ++i)
      lo[cu] = std::min(lo[cu], x(i, c)), hi[cu] = std::max(hi[cu], x(i, c));
    const double pad = 3 * bandwidth[bandwidth.size() == 1 ? 0 : cu];
    lo[cu] -= pad;
    hi[cu] += pad;
  }
  for (index r = 0; r < at.rows(); ++r) {
    index rest = r;
    for (index c = d - 1; c >= 0; --c) {
      const auto cu = static_cast<std::size_t>(c);
      const index k = rest % per_axis;
      rest /= per_axis;
      at(r, c) = lo[cu] + (hi[cu] - lo[cu]) * double(k) / double(per_axis - 1);
    }
  }
  return at;
}

std::string kde_density_csv(const kde_run& r) {
  std::string csv = fmt::format("{},density\n", fmt::join(r.xcols, ","));
  for (index i = 0; i < r.at.rows(); ++i) {
    for (index c = 0; c < r.at.cols(); ++c) csv += fmt::format("{},", r.at(i, c));
    csv += fmt::format("{}\n", r.density[static_cast<std::size_t>(i)]);
  }
  return csv;
}

nlohmann::json kde_summary(const kde_run& r, const nlohmann::json& seconds) {
  const kde_fit& fit = r.fit;
  nlohmann::json js;
  js["n"] = r.x.rows();
  js["x"] = r.xcols;
  js["method"] = "kde";
  js["kernel"] = std::string(kernel_name(r.kernel));
  if (fit.bandwidth.size() == 1)
    js["bandwidth"] = fit.bandwidth[0];
  else
    js["bandwidth"] = fit.bandwidth;
  js["criterion"] = bandwidth_criterion_name(fit.criterion);
  js["criterion_value"] = fit.criterion_value;
  js["df"] = nullptr;  // not defined for a density estimate
  js["at_search_boundary"] = fit.at_search_boundary;
  js["search_evaluations"] = fit.search_evaluations;
  js["route"] = kde_route_name(fit);
  js["route_why"] = fit.route.why;
  js["seconds"] = seconds;
  js["peak_rss_mib"] = peak_rss_mib();  // read (the data), fit (bandwidth and criterion), evaluate
  // What rank 0 handed to MPI (grids, criterion sums, partial states) and its time inside MPI.
  add_mpi_summary(js);
  return js;
}

std::string kde_plot(const kde_run& r, const std::string& path) {
  if (r.xcols.size() == 2)  // a filled contour map of the density on the grid, the data on top
    return contour_of_grid(
        {fmt::format("kernel density, {} kernel, h = {:.4g}, {:.4g} ({})", kernel_name(r.kernel),
                     r.fit.bandwidth[0], r.fit.bandwidth[1],
                     bandwidth_criterion_name(r.fit.criterion)),
         r.xcols[0], r.xcols[1], "density"},
        r.at, r.density, nullptr, r.x, path);
  viz::figure f;
  f.title = fmt::format("kernel density, {} kernel, h = {:.4g} ({})", kernel_name(r.kernel),
                        r.fit.bandwidth[0], bandwidth_criterion_name(r.fit.criterion));
  f.xlabel = r.xcols[0];
  f.ylabel = "density";
  viz::series line{viz::series::kind::line, {}, r.density, {}, "density", viz::kBlue, 2.5, 1};
  for (index i = 0; i < r.at.rows(); ++i) line.x.push_back(r.at(i, 0));
  const std::size_t stride = plot_stride(static_cast<std::size_t>(r.x.rows()));
  viz::series rug{viz::series::kind::points,
                  {},
                  {},
                  {},
                  stride == 1 ? "data (rug)" : fmt::format("data (rug, every {}th)", stride),
                  viz::kGrey,
                  2,
                  0.5};
  for (index i = 0; i < r.x.rows(); i += static_cast<index>(stride))
    rug.x.push_back(r.x(i, 0)), rug.y.push_back(0.0);
  f.data = {line, rug};
  return viz::render_for_path(f, path);
}

}  // namespace kf::cli
