// kf report's seed sections: the numbers and series come from explore/demos.hpp; here they become
// figures (colours, labels), captions that quote the measured numbers, tables and summary lines.
#include <fmt/format.h>

#include "report_sections.hpp"

namespace kf::cli {
namespace {

// Seed 000's nearly linear f: NW and local linear at b = 1.5.
void seed000_linear(viz::report& rep, const demo::seed000_result& r) {
  viz::figure f = make_figure("A nearly linear f tolerates a large bandwidth (b = 1.5)", "x", "y");
  f.data = {point_series(r.x, r.y_linear, "data"),
            line_series(r.grid, r.truth_linear, "true f = 0.3x + 1", viz::kGrey, 1.5),
            line_series(r.grid, r.nw_linear, "Nadaraya–Watson, b = 1.5", viz::kBlue),
            line_series(r.grid, r.ll_linear, "local linear, b = 1.5", viz::kGreen)};
  rep.figure("seed000_linear", f,
             csv_columns({"x", "truth", "nw", "local_linear"},
                         {&r.grid, &r.truth_linear, &r.nw_linear, &r.ll_linear}),
             fmt::format("With a symmetric kernel, a linear f's values left and right of x "
                         "average back to f(x): in the interior 3 ≤ x ≤ 7 the large bandwidth "
                         "costs little (NW MSE {}). At the edges the window is one-sided and NW "
                         "is biased toward the inside (MSE over all x {}); local-linear "
                         "regression removes that bias (MSE {}).",
                         num(r.mse_nw_interior, 3), num(r.mse_nw, 3), num(r.mse_ll, 3)));
}

}  // namespace

// Three bandwidths over the noisy sine (one figure, one table), then the nearly linear case.
void report_seed000(viz::report& rep, report_context& ctx) {
  rep.section("seed000", "Seed 000: kernel smoothing and its bandwidth",
              "Data y = f(x) + ε with f = sin and σ = 0.4 (120 points, x ~ U(0, 10)); a Gaussian "
              "kernel K = exp(−(x − x<sub>i</sub>)² / (2b²)) with bandwidth b.");
  const auto r = demo::seed000();
  viz::figure f = make_figure("Gaussian kernel smoothing at three bandwidths", "x", "y");
  f.data = {point_series(r.x, r.y, "data"),
            line_series(r.grid, r.truth, "true f = sin x", viz::kGrey, 1.5)};
  const viz::rgb colors[] = {viz::kOrange, viz::kBlue, viz::kPurple};
  std::vector<std::vector<std::string>> rows;
  for (std::size_t k = 0; k < r.fits.size(); ++k) {
    const auto& fit = r.fits[k];
    const std::string label = k == r.kChosen ? fmt::format("b = {:.3g} (LOO-CV)", fit.bandwidth)
                                             : fmt::format("b = {:.3g}", fit.bandwidth);
    f.data.push_back(line_series(r.grid, fit.fit, label, colors[k]));
    rows.push_back({label, num(fit.mse), num(fit.loo_cv), num(fit.df, 3)});
  }
  rep.figure("seed000_bandwidths", f,
             csv_columns({"x", "truth", "fit_small", "fit_cv", "fit_large"},
                         {&r.grid, &r.truth, &r.fits[0].fit, &r.fits[1].fit, &r.fits[2].fit}),
             "A small bandwidth follows the noise (variance), a large one flattens the sine "
             "(bias); leave-one-out cross-validation picks a bandwidth in between without "
             "knowing f.");
  ctx.summary.push_back(fmt::format(
      "Seed 000, Gaussian kernel smoothing of sin x + noise: LOO-CV picks b = {:.3g}; MSE against "
      "sin x {:.3g} (b = 0.08: {:.3g}, b = 2: {:.3g})",
      r.fits[1].bandwidth, r.fits[1].mse, r.fits[0].mse, r.fits[2].mse));
  rep.table({"bandwidth", "MSE vs true f", "LOO-CV", "effective df tr(L)"}, rows,
            "Seed 000: error against the truth and the criterion that chose b.",
            "seed000_bandwidths_table");
  seed000_linear(rep, r);
  rep.end_section();
}

// KNN's staircase against the Gaussian smoother on seed 001's 40 points.
void report_seed001(viz::report& rep, report_context& ctx) {
  rep.section("seed001", "Seed 001: KNN (k = 10) vs Gaussian kernel regression",
              "40 points, x ~ U(0, 6), y = 2 sin x + N(0, 1) (numpy seed 42, built in); 500 test "
              "points; Gaussian kernel with scikit-learn's rbf γ = 5 (h = 1/√10); KNN = the "
              "uniform kernel under a top-10-by-distance mask — the same primitive.");
  const auto r = demo::seed001();
  viz::figure f = make_figure("KNN (k = 10) vs Gaussian kernel regression (γ = 5)", "x", "y");
  f.data = {point_series(r.data.x, r.data.y, "training data (40)", viz::kGrey, 4),
            line_series(r.query, r.truth, "true 2 sin x", viz::kGrey, 1.5),
            line_series(r.query, r.knn, "KNN, k = 10", viz::kOrange),
            line_series(r.query, r.nw, "Gaussian kernel, h = 1/√10", viz::kBlue)};
  rep.figure("seed001_knn_vs_gaussian", f,
             csv_columns({"x", "truth", "knn", "gaussian"}, {&r.query, &r.truth, &r.knn, &r.nw}),
             fmt::format("KNN's fit is a staircase that jumps whenever the set of 10 nearest "
                         "points changes; the Gaussian kernel weighs points smoothly by distance. "
                         "MSE against 2 sin x on the 500 test points: KNN {}, Gaussian {}.",
                         num(r.mse_knn), num(r.mse_nw)));
  ctx.summary.push_back(fmt::format(
      "Seed 001, KNN (k = 10) vs Gaussian kernel regression: MSE against 2 sin x {:.3f} vs {:.3f}",
      r.mse_knn, r.mse_nw));
  rep.end_section();
}

// The six kernel shapes, then pooling on seed 001's points from lookup to average.
void report_seed004(viz::report& rep, report_context&) {
  rep.section(
      "seed004", "Seed 004: the kernels, and attention pooling's special cases",
      "Attention pooling f(q) = Σ α(q, k<sub>i</sub>) v<sub>i</sub> with weights from a "
      "kernel. The kernels of the core, drawn as functions of the distance u = |q − k| / h:");
  const auto r = demo::seed004();
  viz::figure f = make_figure("Kernels K(u), scaled to K(0) = 1", "u = (q − k) / h", "K(u)");
  const viz::rgb colors[] = {viz::kBlue, viz::kOrange, viz::kGreen,
                             viz::kRed,  viz::kPurple, viz::kGrey};
  std::vector<std::string> names = {"u"};
  std::vector<const std::vector<double>*> cols = {&r.u};
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    f.data.push_back(line_series(r.u, r.kernels[i].values, r.kernels[i].name, colors[i]));
    names.push_back(r.kernels[i].name), cols.push_back(&r.kernels[i].values);
  }
  rep.figure("seed004_kernels", f, csv_columns(names, cols),
             "The Gaussian, Laplacian and Cauchy kernels give every point some weight; boxcar, "
             "Epanechnikov and tricube have compact support (|u| ≤ 1), which the smoother uses to "
             "skip whole tiles of keys.");
  viz::figure f2 =
      make_figure("Attention pooling from one-hot to uniform weights", "query x", "pooled value");
  f2.data = {
      point_series(r.keys.x, r.keys.y, "key-value pairs", viz::kGrey, 4),
      line_series(r.query, r.lookup, "h → 0: one-hot weights (database lookup)", viz::kRed, 1.5),
      line_series(r.query, r.smoothing, "h = 0.3: kernel smoothing", viz::kBlue),
      line_series(r.query, r.average, "h → ∞: uniform weights (average pooling)", viz::kGreen)};
  rep.figure("seed004_pooling", f2,
             csv_columns({"x", "lookup", "smoothing", "average"},
                         {&r.query, &r.lookup, &r.smoothing, &r.average}),
             fmt::format("With a tiny bandwidth the weights are one-hot: a query equal to key 10 "
                         "puts weight {} on it — a database lookup, and between keys the output "
                         "jumps to the nearest value. With a huge bandwidth every weight is "
                         "1/40 = {} (measured {}): average pooling, a flat line at the mean {}.",
                         num(r.lookup_weight, 6), num(1.0 / 40, 4), num(r.average_weight, 6),
                         num(r.mean, 4)));
  rep.end_section();
}

}  // namespace kf::cli
