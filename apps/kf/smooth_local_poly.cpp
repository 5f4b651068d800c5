// kf smooth --degree P --derivative V: local polynomial regression (regression/local_poly.hpp) —
// the fit (or the derivative) with its 95% band on a grid or at --at points, the summary, the
// figure (data on top of the fit; a derivative has its own axis, so no data there), the terminal
// preview.
#include "smooth_local_poly.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/viz/plot.hpp"

namespace kf::cli {
namespace {

std::string what_of(const local_poly_fit& f) {
  const int v = f.spec.derivative;
  return v == 0   ? std::string("fit")
         : v == 1 ? std::string("first derivative")
                  : fmt::format("derivative {}", v);
}

std::string local_poly_csv(const local_poly_request& q, const std::vector<double>& at,
                           const local_poly_prediction& p) {
  std::string csv = q.xcol + ",fit,se\n";
  for (std::size_t i = 0; i < at.size(); ++i)
    csv += p.defined[i] ? fmt::format("{:.17g},{:.17g},{:.17g}\n", at[i], p.fit[i], p.se[i])
                        : fmt::format("{:.17g},,\n", at[i]);
  return csv;
}

nlohmann::json local_poly_summary(const local_poly_request& q, const local_poly_fit& f,
                                  const local_poly_prediction& p, const nlohmann::json& seconds) {
  nlohmann::json js;
  js["data"] = q.source;
  js["n"] = f.x.size();
  js["x"] = q.xcol;
  js["y"] = q.ycol;
  js["method"] = "local-polynomial";
  js["degree"] = f.spec.degree;
  js["derivative"] = f.spec.derivative;
  js["kernel"] = kernel_describe(kernel_spec{f.spec.kernel});
  js["bandwidth"] = f.spec.bandwidth;
  js["criterion"] = bandwidth_criterion_name(f.criterion);
  js["criterion_value"] = f.criterion_value;
  js["df"] = f.df;
  js["r2"] = f.r2;
  js["sigma"] = std::sqrt(f.sigma2);
  js["loo_cv"] = f.loo_cv;
  js["gcv"] = f.gcv;
  js["aicc"] = f.aicc;
  js["at_search_boundary"] = f.at_search_boundary;
  js["search_evaluations"] = f.search_evaluations;
  js["undefined_points"] = p.undefined;
  js["route"] = f.route;
  js["route_why"] = f.why;
  js["seconds"] = seconds;
  return js;
}

std::string local_poly_plot(const local_poly_request& q, const local_poly_fit& f,
                            const std::vector<double>& at, const local_poly_prediction& p,
                            const std::string& path) {
  viz::figure fig;
  fig.title = fmt::format("local polynomial of degree {}, {}, h = {:.4g} ({})", f.spec.degree,
                          what_of(f), f.spec.bandwidth, bandwidth_criterion_name(f.criterion));
  fig.xlabel = q.xcol;
  fig.ylabel = f.spec.derivative == 0
                   ? q.ycol
                   : fmt::format("d{} {} / d{}",
                                 f.spec.derivative == 1 ? "" : std::to_string(f.spec.derivative),
                                 q.ycol, q.xcol);
  viz::series band{viz::series::kind::band, {}, {}, {}, "95% band (± 1.96 se)", viz::kBlue, 1, 0.2};
  viz::series line{viz::series::kind::line, {}, {}, {}, what_of(f), viz::kBlue, 2.5, 1};
  for (std::size_t i = 0; i < at.size(); ++i) {
    if (!p.defined[i]) continue;
    band.x.push_back(at[i]);
    band.y.push_back(p.fit[i] - 1.96 * p.se[i]);
    band.y_upper.push_back(p.fit[i] + 1.96 * p.se[i]);
    line.x.push_back(at[i]);
    line.y.push_back(p.fit[i]);
  }
  fig.data = {band, line};
  if (f.spec.derivative == 0) {
    viz::series pts{viz::series::kind::points, {}, {}, {}, "data", viz::kGrey, 2.0, 0.5};
    const std::size_t stride = plot_stride(f.x.size());
    for (std::size_t i = 0; i < f.x.size(); i += stride) {
      pts.x.push_back(f.x[i]);
      pts.y.push_back(f.y[i]);
    }
    fig.data.insert(fig.data.begin() + 1, pts);
  }
  return viz::render_for_path(fig, path);
}

void print_report(const local_poly_request& q, const local_poly_fit& f,
                  const std::vector<double>& at, const local_poly_prediction& p) {
  fmt::print(
      "kf smooth: {} points from {}, local polynomial of degree {}, kernel {}, route {} "
      "({})\n",
      f.x.size(), q.source, f.spec.degree, kernel_describe(kernel_spec{f.spec.kernel}), f.route,
      f.why);
  fmt::print(
      "bandwidth = {:.6g} ({}{}), criterion {} = {:.6g}, df = {:.2f}, R² = {:.4f}, "
      "sigma = {:.4g}; reporting the {}\n",
      f.spec.bandwidth, bandwidth_criterion_name(f.criterion),
      f.spec.derivative > 0 && f.criterion != bandwidth_criterion::fixed
          ? ", chosen for the function: a derivative often wants a larger one"
          : "",
      bandwidth_criterion_name(f.criterion == bandwidth_criterion::gcv ||
                                       f.criterion == bandwidth_criterion::aicc
                                   ? f.criterion
                                   : bandwidth_criterion::loo_cv),
      f.criterion_value, f.df, f.r2, std::sqrt(f.sigma2), what_of(f));
  if (f.at_search_boundary)
    fmt::print(stderr,
               "kf smooth: warning: the best bandwidth is at the edge of the searched range; the "
               "criterion may keep falling beyond it\n");
  if (p.undefined > 0)
    fmt::print(stderr,
               "kf smooth: warning: {} of {} output points have too few data within the "
               "kernel's reach for degree {}; their fit and se are left empty\n",
               p.undefined, at.size(), f.spec.degree);
  if (!q.out.out.empty() || !q.out.plot.empty()) return;
  fmt::print("\n{:>10}  {:>10}  {:>10}\n", q.xcol, what_of(f).substr(0, 10), "se");
  for (int k = 0; k < 9; ++k) {
    const std::size_t i = static_cast<std::size_t>(k) * (at.size() - 1) / 8;
    fmt::print("{:10.4g}  {:10.4g}  {:10.4g}\n", at[i], p.fit[i], p.se[i]);
  }
  fmt::print("(the {} at every point: --out FIT.csv)\n", what_of(f));
}

}  // namespace

void run_local_poly(const local_poly_request& q) {
  stopwatch clock;
  nlohmann::json seconds;
  seconds["read"] = q.read_seconds;
  local_poly_fit f;
  {
    progress_bar bar("choosing the bandwidth");
    try {
      f = local_poly_fit_data(q.spec, q.x, q.y, q.criterion,
                              [&](int done, int total) { bar.update(done, total); });
    } catch (const std::invalid_argument& e) {
      throw user_error(fmt::format("{}: {}", q.source, e.what()));
    }
  }
  if ((!q.out.plot_criterion.empty() || !q.out.criterion_csv.empty()) && f.curve.empty())
    throw user_error(
        "--plot-criterion/--criterion-csv need a searched bandwidth (--bandwidth cv, gcv or aic)");
  seconds["fit"] = clock.lap();
  std::vector<double> at = q.at;
  if (at.empty()) {  // a grid over the data's range
    const auto [lo, hi] = std::minmax_element(f.x.begin(), f.x.end());
    for (index i = 0; i + 1 < q.grid; ++i)
      at.push_back(*lo + (*hi - *lo) * static_cast<double>(i) / static_cast<double>(q.grid - 1));
    at.push_back(*hi);
  }
  const local_poly_prediction p = local_poly_predict(f, at);
  seconds["predict"] = clock.lap();
  io::atomic_writer w;
  if (!q.out.out.empty()) w.stage(q.out.out, local_poly_csv(q, at, p));
  if (!q.out.summary.empty())
    w.stage(q.out.summary, local_poly_summary(q, f, p, seconds).dump(2) + "\n");
  if (!q.out.plot.empty()) w.stage(q.out.plot, local_poly_plot(q, f, at, p, q.out.plot));
  if (!q.out.plot_criterion.empty())
    w.stage(q.out.plot_criterion,
            criterion_plot(f.curve, f.spec.bandwidth, f.criterion_value,
                           bandwidth_criterion_name(f.criterion), false, q.out.plot_criterion));
  if (!q.out.criterion_csv.empty()) w.stage(q.out.criterion_csv, criterion_csv(f.curve));
  w.commit();
  if (!q.quiet) print_report(q, f, at, p);
}

}  // namespace kf::cli
