// kf smooth's outputs (smooth_outputs.hpp).
#include "smooth_outputs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/regression/cross_validation.hpp"
#include "kernelformer/viz/plot.hpp"

namespace kf::cli {

matrix<double> smooth_grid(const matrix<double>& x, index per_axis) {
  const index d = x.cols();
  double total = 1;
  for (index c = 0; c < d; ++c) total *= double(per_axis);
  if (total > 1e6) return x;  // fall back to the data points
  matrix<double> g(static_cast<index>(total), d);
  std::vector<double> lo(static_cast<std::size_t>(d)), hi(static_cast<std::size_t>(d));
  for (index c = 0; c < d; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    lo[cu] = hi[cu] = x(0, c);
    for (index i = 0; i < x.rows(); ++i) {
      lo[cu] = std::min(lo[cu], x(i, c));
      hi[cu] = std::max(hi[cu], x(i, c));
    }
  }
  for (index r = 0; r < g.rows(); ++r) {
    index rest = r;
    for (index c = d - 1; c >= 0; --c) {
      const index k = rest % per_axis;
      rest /= per_axis;
      const auto cu = static_cast<std::size_t>(c);
      g(r, c) = lo[cu] + (hi[cu] - lo[cu]) * double(k) / double(per_axis - 1);
    }
  }
  return g;
}

std::string smooth_method_name(regression_method m) {
  return m == regression_method::nw             ? "nw"
         : m == regression_method::local_linear ? "local-linear"
                                                : "knn";
}

std::string smooth_kernel_name(const regression_spec& spec) {
  if (spec.method == regression_method::knn)
    return spec.knn_distance_weights ? "inverse_distance" : "uniform";
  return std::string(kernel_name(spec.kernel));
}

std::string smooth_fit_csv(const smooth_run& r) {
  std::string csv = fmt::format("{},fit,se\n", fmt::join(r.xcols, ","));
  for (index i = 0; i < r.at.rows(); ++i) {
    for (index c = 0; c < r.at.cols(); ++c) csv += fmt::format("{},", r.at(i, c));
    const auto iu = static_cast<std::size_t>(i);
    csv += r.pred.defined[iu] ? fmt::format("{},{}\n", r.pred.fit[iu], r.pred.se[iu]) : ",\n";
  }
  return csv;
}

std::string smooth_loo_csv(const smooth_run& r) {
  const regression_fit& fit = r.fit;
  std::string csv =
      fmt::format("{},{},fit,loo_fit,hat,loo_residual\n", fmt::join(r.xcols, ","), r.y);
  for (index i = 0; i < fit.x.rows(); ++i) {
    const auto iu = static_cast<std::size_t>(i);
    for (index c = 0; c < fit.x.cols(); ++c) csv += fmt::format("{},", fit.x(i, c));
    const double res = fit.loo_residuals[iu];
    csv += std::isfinite(res)
               ? fmt::format("{},{},{},{},{}\n", fit.y[iu], fit.fitted[iu], fit.y[iu] - res,
                             fit.hat_diag[iu], res)
               : fmt::format("{},{},,{},\n", fit.y[iu], fit.fitted[iu], fit.hat_diag[iu]);
  }
  return csv;
}

nlohmann::json smooth_summary(const smooth_run& r, const nlohmann::json& seconds) {
  const regression_fit& fit = r.fit;
  nlohmann::json js;
  js["n"] = fit.x.rows();
  js["x"] = r.xcols;
  js["y"] = r.y;
  js["method"] = smooth_method_name(r.spec.method);
  js["kernel"] = smooth_kernel_name(r.spec);
  if (r.spec.method == regression_method::knn) {
    js["k"] = fit.spec.k;  // the chosen one under --k cv
    js["bandwidth"] = nullptr;
  } else if (fit.spec.bandwidth.size() == 1) {
    js["bandwidth"] = fit.spec.bandwidth[0];
  } else {
    js["bandwidth"] = fit.spec.bandwidth;
  }
  js["criterion"] = bandwidth_criterion_name(fit.criterion);
  js["criterion_value"] = fit.criterion_value;
  // How cv held points out: leave-one-out (closed form) or the folds of --cv.
  js["cv"] = fit.spec.folds ? fit.spec.folds->name : "leave-one-out";
  js["df"] = fit.df;
  js["r2"] = fit.r2;
  js["sigma"] = std::sqrt(fit.sigma2);
  js["loo_cv"] = fit.loo_cv;
  js["gcv"] = fit.gcv;
  js["aicc"] = fit.aicc;
  js["at_search_boundary"] = fit.at_search_boundary;
  js["search_evaluations"] = fit.search_evaluations;
  js["undefined_points"] = r.pred.undefined;
  js["seconds"] = seconds;
  js["peak_rss_mib"] = peak_rss_mib();  // read (the data), fit (parameter, criteria), predict
  js["route"] = fit.route.name();
  js["route_why"] = fit.route.why;
  // What rank 0 handed to MPI (grids, criterion sums, partial states) and its time inside MPI.
  add_mpi_summary(js);
  return js;
}

std::string smooth_plot(const smooth_run& r, const std::string& path) {
  const regression_fit& fit = r.fit;
  if (r.xcols.size() == 2)  // a filled contour map of the fitted surface, the data on top
    return contour_of_grid(
        {fmt::format("{} regression of {}, {} kernel ({})", smooth_method_name(r.spec.method), r.y,
                     smooth_kernel_name(r.spec), bandwidth_criterion_name(fit.criterion)),
         r.xcols[0], r.xcols[1], "fitted " + r.y},
        r.at, r.pred.fit, &r.pred.defined, fit.x, path);
  viz::figure f;
  f.title = fmt::format("{} regression, {} kernel, h = {:.4g} ({})",
                        smooth_method_name(r.spec.method), smooth_kernel_name(r.spec),
                        fit.spec.bandwidth.empty() ? 0.0 : fit.spec.bandwidth[0],
                        bandwidth_criterion_name(fit.criterion));
  f.xlabel = r.xcols[0];
  f.ylabel = r.y;
  viz::series band{viz::series::kind::band,    {},         {}, {},
                   "95% band (fit ± 1.96 se)", viz::kBlue, 1,  0.2};
  viz::series line{viz::series::kind::line, {}, {}, {}, "fit", viz::kBlue, 2.5, 1};
  for (index i = 0; i < r.at.rows(); ++i) {
    const auto iu = static_cast<std::size_t>(i);
    const double fv = r.pred.defined[iu] ? r.pred.fit[iu] : NAN;
    band.x.push_back(r.at(i, 0));
    band.y.push_back(fv - 1.96 * r.pred.se[iu]);
    band.y_upper.push_back(fv + 1.96 * r.pred.se[iu]);
    line.x.push_back(r.at(i, 0));
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
  return viz::render_for_path(f, path);
}

void smooth_print(const smooth_run& r, const std::string& out) {
  const regression_fit& fit = r.fit;
  const bool knn = r.spec.method == regression_method::knn;
  fmt::print("kf smooth: {} points from {}, method {}, kernel {}, route {} ({})\n", fit.x.rows(),
             r.source, smooth_method_name(r.spec.method), smooth_kernel_name(r.spec),
             fit.route.name(), fit.route.why);
  if (knn)
    fmt::print("k = {}{}", fit.spec.k,
               r.spec.k != 0    ? ""
               : fit.spec.folds ? fmt::format(" ({} CV)", fit.spec.folds->name)
                                : " (leave-one-out CV)");
  else
    fmt::print("bandwidth = {:.6g} ({})", fmt::join(fit.spec.bandwidth, ", "),
               bandwidth_criterion_name(fit.criterion));
  // A rule or a fixed bandwidth reports its leave-one-out CV score.
  const bool searched = fit.criterion != bandwidth_criterion::fixed &&
                        fit.criterion != bandwidth_criterion::silverman &&
                        fit.criterion != bandwidth_criterion::scott;
  const std::string folds =
      searched && fit.spec.folds ? fmt::format(" {}", fit.spec.folds->name) : "";
  fmt::print(", criterion {}{} = {:.6g}, df = {:.2f}, R² = {:.4f}, sigma = {:.4g}\n",
             bandwidth_criterion_name(searched ? fit.criterion : bandwidth_criterion::loo_cv),
             folds, fit.criterion_value, fit.df, fit.r2, std::sqrt(fit.sigma2));
  if (fit.at_search_boundary && knn)
    fmt::print(stderr, "kf smooth: warning: the best k is the largest tried ({}); raise --k-max\n",
               fit.spec.k);
  else if (fit.at_search_boundary)
    fmt::print(stderr,
               "kf smooth: warning: the best bandwidth is at the edge of the searched range "
               "(0.01–10 × Silverman); the criterion may keep falling beyond it\n");
  if (r.pred.undefined > 0)
    fmt::print(stderr,
               "kf smooth: warning: {} of {} output points have no data within the "
               "kernel's reach; their fit and se are left empty\n",
               r.pred.undefined, r.at.rows());
  if (!out.empty()) return;
  fmt::print("\n{:>10}  {:>10}  {:>10}\n", r.xcols[0], "fit", "se");
  for (int k = 0; k < 9; ++k) {
    const index i = k * (r.at.rows() - 1) / 8;
    const auto iu = static_cast<std::size_t>(i);
    fmt::print("{:10.4g}  {:10.4g}  {:10.4g}\n", r.at(i, 0), r.pred.fit[iu], r.pred.se[iu]);
  }
  fmt::print("(the fit and se at every point: --out FIT.csv)\n");
}

void write_smooth_outputs(const fit_outputs& o, const std::string& loo, const smooth_run& r,
                          const nlohmann::json& seconds) {
  io::atomic_writer writer;
  if (!o.out.empty()) writer.stage(o.out, smooth_fit_csv(r));
  if (!o.summary.empty()) writer.stage(o.summary, smooth_summary(r, seconds).dump(2) + "\n");
  if (!o.plot.empty()) writer.stage(o.plot, smooth_plot(r, o.plot));
  const regression_fit& fit = r.fit;
  if (!o.plot_criterion.empty())
    writer.stage(o.plot_criterion,
                 criterion_plot(fit.curve, fit.spec.bandwidth[0], fit.criterion_value,
                                bandwidth_criterion_name(fit.criterion),
                                fit.x.cols() > 1 && r.spec.method != regression_method::knn,
                                o.plot_criterion,
                                r.spec.method == regression_method::knn ? "k" : "bandwidth h"));
  if (!o.criterion_csv.empty()) writer.stage(o.criterion_csv, criterion_csv(fit.curve));
  if (!loo.empty()) writer.stage(loo, smooth_loo_csv(r));
  if (dist::is_root()) writer.commit();  // under mpirun rank 0 writes
}

}  // namespace kf::cli
