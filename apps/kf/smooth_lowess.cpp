// kf smooth --method lowess: Cleveland's robust local regression (regression/lowess.hpp) — the
// fit on a grid or at --at points, the summary, the figure of data, fit and the points the
// robustness passes set aside, the terminal preview.
#include "smooth_lowess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/viz/plot.hpp"

namespace kf::cli {
namespace {

std::string lowess_csv(const lowess_request& q, const std::vector<double>& at,
                       const std::vector<double>& fit) {
  std::string csv = q.xcol + ",fit\n";
  for (std::size_t i = 0; i < at.size(); ++i)
    csv += std::isnan(fit[i]) ? fmt::format("{:.17g},\n", at[i])
                              : fmt::format("{:.17g},{:.17g}\n", at[i], fit[i]);
  return csv;
}

nlohmann::json lowess_summary(const lowess_request& q, const lowess_fit& f,
                              const nlohmann::json& seconds) {
  nlohmann::json js;
  js["data"] = q.source;
  js["n"] = f.x.size();
  js["x"] = q.xcol;
  js["y"] = q.ycol;
  js["method"] = "lowess";
  js["span"] = f.spec.span;
  js["neighbours"] = f.neighbours;
  js["iterations"] = f.spec.iterations;
  js["passes"] = f.passes;
  js["delta"] = f.spec.delta;
  js["local_fits"] = f.local_fits;
  double rss = 0;
  for (std::size_t i = 0; i < f.x.size(); ++i)
    rss += (f.y[i] - f.fitted[i]) * (f.y[i] - f.fitted[i]);
  js["rss"] = rss;
  js["zero_weight_points"] = std::count(f.weights.begin(), f.weights.end(), 0.0);
  js["seconds"] = seconds;
  return js;
}

std::string lowess_plot(const lowess_request& q, const lowess_fit& f, const std::vector<double>& at,
                        const std::vector<double>& fit, const std::string& path) {
  viz::figure fig;
  fig.title = fmt::format("LOWESS, span {:.3g} ({} points a fit), {} robustness pass{}",
                          f.spec.span, f.neighbours, f.passes - 1, f.passes == 2 ? "" : "es");
  fig.xlabel = q.xcol;
  fig.ylabel = q.ycol;
  viz::series data{viz::series::kind::points, {}, {}, {}, "data", viz::kGrey, 2.0, 0.5};
  viz::series dropped{viz::series::kind::points, {},        {},  {},
                      "weight 0 (outlying)",     viz::kRed, 3.0, 0.9};
  const std::size_t stride = std::max<std::size_t>(1, f.x.size() / 20000);
  for (std::size_t i = 0; i < f.x.size(); ++i) {
    if (f.weights[i] == 0.0) {
      dropped.x.push_back(f.x[i]);
      dropped.y.push_back(f.y[i]);
    } else if (i % stride == 0) {
      data.x.push_back(f.x[i]);
      data.y.push_back(f.y[i]);
    }
  }
  viz::series line{viz::series::kind::line, at, fit, {}, "lowess", viz::kBlue, 2.5, 1};
  fig.data = {data, line};
  if (!dropped.x.empty()) fig.data.push_back(dropped);
  return viz::render_for_path(fig, path);
}

}  // namespace

void run_lowess(const lowess_request& q) {
  stopwatch clock;
  nlohmann::json seconds;
  seconds["read"] = q.read_seconds;
  lowess_fit f;
  try {
    f = lowess(q.x, q.y, q.spec);
  } catch (const std::invalid_argument& e) {
    throw user_error(fmt::format("{}: {}", q.source, e.what()));
  }
  seconds["fit"] = clock.lap();
  std::vector<double> at = q.at;
  if (at.empty()) {  // a grid over the data's range
    const double lo = f.x.front(), hi = f.x.back();
    for (index i = 0; i + 1 < q.grid; ++i)
      at.push_back(lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(q.grid - 1));
    at.push_back(hi);  // exactly: a rounded end past the data would have no fit
  }
  const std::vector<double> fit = lowess_predict(f, at);
  seconds["predict"] = clock.lap();
  io::atomic_writer w;
  if (!q.out.out.empty()) w.stage(q.out.out, lowess_csv(q, at, fit));
  if (!q.out.summary.empty()) w.stage(q.out.summary, lowess_summary(q, f, seconds).dump(2) + "\n");
  if (!q.out.plot.empty()) w.stage(q.out.plot, lowess_plot(q, f, at, fit, q.out.plot));
  w.commit();
  if (q.quiet) return;
  const auto zero = std::count(f.weights.begin(), f.weights.end(), 0.0);
  fmt::print(
      "lowess of {} on {} ({} points): span {:.4g} ({} points a fit), {} robustness "
      "pass{}, delta {:.4g} ({} local fits), {} point{} given weight 0\n",
      q.ycol, q.xcol, f.x.size(), f.spec.span, f.neighbours, f.passes - 1,
      f.passes == 2 ? "" : "es", f.spec.delta, f.local_fits, zero, zero == 1 ? "" : "s");
  if (!q.out.out.empty() || !q.out.plot.empty()) return;
  fmt::print("\n{:>10}  {:>10}\n", q.xcol, "fit");
  for (int k = 0; k < 9; ++k) {
    const std::size_t i = static_cast<std::size_t>(k) * (at.size() - 1) / 8;
    fmt::print("{:10.4g}  {:10.4g}\n", at[i], fit[i]);
  }
  fmt::print("(the fit at every point: --out FIT.csv)\n");
}

}  // namespace kf::cli
