// kf report — the seeds' demonstrations, reproduced and measured, as one self-contained HTML page
// (DIR/index.html, figures beside it in DIR/figures as SVG + PNG + the CSV behind each).
// Sections: seed 000 (bandwidths; the nearly-linear case), seed 001 (KNN vs Gaussian kernel
// regression), seed 004 (kernel shapes; attention pooling's special cases), seed 002 (kernel
// smoothing vs attention on positional encodings; attention trained to mimic the smoother; the
// head-as-kernel diagnostic), seed 003 (the RBF view of attention after LayerNorm; LayerNorm's
// geometry; the periodic experiment), seed 000 again (a language model's attention on "The cat
// sat on the mat.").
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numbers>
#include <random>

#include "common.hpp"
#include "kernelformer/explore/explorer.hpp"
#include "kernelformer/explore/head_kernel.hpp"
#include "kernelformer/explore/seed001_data.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/masks.hpp"
#include "kernelformer/model/lm_train.hpp"
#include "kernelformer/model/periodic_experiment.hpp"
#include "kernelformer/nn/layer_norm.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/smooth.hpp"
#include "kernelformer/text/tokenizer.hpp"
#include "kernelformer/viz/plot.hpp"

#include "report_page.hpp"

namespace kf::cli {
namespace {

struct report_options {
  std::string out = "kf-report", sections = "all", models;
  bool full = false, quiet = false;
};

// --- seed 000: bandwidths; the nearly-linear case -------------------------------------------

void seed000(report& rep, std::vector<std::string>& summary) {
  rep.section("seed000", "Seed 000: kernel smoothing and its bandwidth",
              "Data y = f(x) + ε with f = sin and σ = 0.4 (120 points, x ~ U(0, 10)); a Gaussian "
              "kernel K = exp(−(x − x<sub>i</sub>)² / (2b²)) with bandwidth b.");
  std::mt19937_64 rng(0);
  std::uniform_real_distribution<double> u(0, 10);
  std::normal_distribution<double> g(0, 0.4);
  std::vector<double> x(120), y(120);
  for (auto& v : x) v = u(rng);
  std::sort(x.begin(), x.end());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = std::sin(x[i]) + g(rng);
  const auto grid = linspace(0, 10, 400);
  std::vector<double> truth(grid.size());
  for (std::size_t i = 0; i < grid.size(); ++i) truth[i] = std::sin(grid[i]);
  regression_spec spec;
  spec.bandwidth = {0.5};
  spec.exact = true;
  const auto fit = regression_fit_data(spec, col(x).cview(), y, bandwidth_criterion::loo_cv);
  const double hcv = fit.spec.bandwidth[0];
  const std::vector<double> hs = {0.08, hcv, 2.0};
  std::vector<std::vector<double>> fits;
  std::vector<std::vector<std::string>> rows;
  viz::figure f;
  f.title = "Gaussian kernel smoothing at three bandwidths";
  f.xlabel = "x";
  f.ylabel = "y";
  f.data = {points(x, y, "data"), line(grid, truth, "true f = sin x", viz::kGrey, 1.5)};
  const viz::rgb colors[] = {viz::kOrange, viz::kBlue, viz::kPurple};
  for (std::size_t k = 0; k < hs.size(); ++k) {
    fits.push_back(nw_fit(x, y, grid, "gaussian", hs[k]));
    const auto cv = regression_criteria(
        [&] {
          regression_spec s = spec;
          s.bandwidth = {hs[k]};
          return s;
        }(),
        col(x).cview(), y);
    const std::string label =
        k == 1 ? fmt::format("b = {:.3g} (LOO-CV)", hs[k]) : fmt::format("b = {:.3g}", hs[k]);
    f.data.push_back(line(grid, fits.back(), label, colors[k]));
    rows.push_back({label, num(mse(fits.back(), truth)), num(cv.loo_cv), num(cv.df, 3)});
  }
  rep.figure("seed000_bandwidths", f,
             csv_columns({"x", "truth", "fit_small", "fit_cv", "fit_large"},
                         {&grid, &truth, &fits[0], &fits[1], &fits[2]}),
             "A small bandwidth follows the noise (variance), a large one flattens the sine "
             "(bias); leave-one-out cross-validation picks a bandwidth in between without "
             "knowing f.");
  summary.push_back(fmt::format(
      "Seed 000, Gaussian kernel smoothing of sin x + noise: LOO-CV picks b = {:.3g}; MSE against "
      "sin x {:.3g} (b = 0.08: {:.3g}, b = 2: {:.3g})",
      hcv, mse(fits[1], truth), mse(fits[0], truth), mse(fits[2], truth)));
  rep.table({"bandwidth", "MSE vs true f", "LOO-CV", "effective df tr(L)"}, rows,
            "Seed 000: error against the truth and the criterion that chose b.",
            "seed000_bandwidths_table");
  // The nearly-linear case.
  std::vector<double> yl(x.size()), tl(grid.size());
  for (std::size_t i = 0; i < x.size(); ++i) yl[i] = 0.3 * x[i] + 1 + (y[i] - std::sin(x[i]));
  for (std::size_t i = 0; i < grid.size(); ++i) tl[i] = 0.3 * grid[i] + 1;
  const double hb = 1.5;
  const auto nwl = nw_fit(x, yl, grid, "gaussian", hb);
  regression_spec ll;
  ll.method = regression_method::local_linear;
  ll.bandwidth = {hb};
  ll.exact = true;
  const auto llf = regression_evaluate(ll, col(x).cview(), yl, col(grid).cview(), false).fit;
  viz::figure f2;
  f2.title = "A nearly linear f tolerates a large bandwidth (b = 1.5)";
  f2.xlabel = "x";
  f2.ylabel = "y";
  f2.data = {points(x, yl, "data"), line(grid, tl, "true f = 0.3x + 1", viz::kGrey, 1.5),
             line(grid, nwl, "Nadaraya–Watson, b = 1.5", viz::kBlue),
             line(grid, llf, "local linear, b = 1.5", viz::kGreen)};
  const std::size_t a = 120, b = 280;  // interior: x in [3, 7]
  rep.figure("seed000_linear", f2,
             csv_columns({"x", "truth", "nw", "local_linear"}, {&grid, &tl, &nwl, &llf}),
             fmt::format("With a symmetric kernel, a linear f's values left and right of x "
                         "average back to f(x): in the interior 3 ≤ x ≤ 7 the large bandwidth "
                         "costs little (NW MSE {}). At the edges the window is one-sided and NW "
                         "is biased toward the inside (MSE over all x {}); local-linear "
                         "regression removes that bias (MSE {}).",
                         num(mse(nwl, tl, a, b), 3), num(mse(nwl, tl), 3), num(mse(llf, tl), 3)));
  rep.end_section();
}

// --- seed 001: KNN vs Gaussian kernel regression --------------------------------------------

void seed001(report& rep, std::vector<std::string>& summary) {
  rep.section("seed001", "Seed 001: KNN (k = 10) vs Gaussian kernel regression",
              "40 points, x ~ U(0, 6), y = 2 sin x + N(0, 1) (numpy seed 42, built in); 500 test "
              "points; Gaussian kernel with scikit-learn's rbf γ = 5 (h = 1/√10); KNN = the "
              "uniform kernel under a top-10-by-distance mask — the same primitive.");
  std::vector<double> x(demo::seed001_x.begin(), demo::seed001_x.end()),
      y(demo::seed001_y.begin(), demo::seed001_y.end());
  const auto tx = linspace(0, 6, 500);
  std::vector<double> truth(tx.size());
  for (std::size_t i = 0; i < tx.size(); ++i) truth[i] = 2 * std::sin(tx[i]);
  const double h = 1 / std::sqrt(10.0);
  const auto nw = nw_fit(x, y, tx, "gaussian", h);
  const matrix<double> X = col(x), Y = col(y), Q = col(tx);
  matrix<double> kn(Q.rows(), 1);
  smooth_forward<double>(kn.view(), {}, Q.cview(), X.cview(), Y.cview(), kernel_uniform{},
                         mask::none().topk(10, topk_rank::distance));
  const std::vector<double> knn(kn.values().begin(), kn.values().end());
  viz::figure f;
  f.title = "KNN (k = 10) vs Gaussian kernel regression (γ = 5)";
  f.xlabel = "x";
  f.ylabel = "y";
  f.data = {points(x, y, "training data (40)", viz::kGrey, 4),
            line(tx, truth, "true 2 sin x", viz::kGrey, 1.5),
            line(tx, knn, "KNN, k = 10", viz::kOrange),
            line(tx, nw, "Gaussian kernel, h = 1/√10", viz::kBlue)};
  rep.figure("seed001_knn_vs_gaussian", f,
             csv_columns({"x", "truth", "knn", "gaussian"}, {&tx, &truth, &knn, &nw}),
             fmt::format("KNN's fit is a staircase that jumps whenever the set of 10 nearest "
                         "points changes; the Gaussian kernel weighs points smoothly by distance. "
                         "MSE against 2 sin x on the 500 test points: KNN {}, Gaussian {}.",
                         num(mse(knn, truth)), num(mse(nw, truth))));
  summary.push_back(fmt::format(
      "Seed 001, KNN (k = 10) vs Gaussian kernel regression: MSE against 2 sin x {:.3f} vs {:.3f}",
      mse(knn, truth), mse(nw, truth)));
  rep.end_section();
}

// --- seed 004: kernels; attention pooling's special cases -----------------------------------

void seed004(report& rep) {
  rep.section(
      "seed004", "Seed 004: the kernels, and attention pooling's special cases",
      "Attention pooling f(q) = Σ α(q, k<sub>i</sub>) v<sub>i</sub> with weights from a "
      "kernel. The kernels of the core, drawn as functions of the distance u = |q − k| / h:");
  const auto u = linspace(-3, 3, 601);
  viz::figure f;
  f.title = "Kernels K(u), scaled to K(0) = 1";
  f.xlabel = "u = (q − k) / h";
  f.ylabel = "K(u)";
  const std::vector<std::pair<std::string, viz::rgb>> ks = {
      {"gaussian", viz::kBlue}, {"boxcar", viz::kOrange},  {"epanechnikov", viz::kGreen},
      {"laplacian", viz::kRed}, {"tricube", viz::kPurple}, {"cauchy", viz::kGrey}};
  std::vector<std::vector<double>> vals;
  for (const auto& [name, colr] : ks) {
    const any_kernel k = kernel_parse(name).first;
    std::vector<double> v(u.size());
    const double log_k0 = kernel_log_weight(k, 0.0);
    for (std::size_t i = 0; i < u.size(); ++i)
      v[i] = std::exp(kernel_log_weight(k, u[i] * u[i]) - log_k0);
    vals.push_back(v);
    f.data.push_back(line(u, v, name, colr));
  }
  std::vector<std::string> names = {"u"};
  std::vector<const std::vector<double>*> cols = {&u};
  for (std::size_t i = 0; i < ks.size(); ++i)
    names.push_back(ks[i].first), cols.push_back(&vals[i]);
  rep.figure("seed004_kernels", f, csv_columns(names, cols),
             "The Gaussian, Laplacian and Cauchy kernels give every point some weight; boxcar, "
             "Epanechnikov and tricube have compact support (|u| ≤ 1), which the smoother uses to "
             "skip whole tiles of keys.");
  // Special cases on the seed-001 data.
  std::vector<double> x(demo::seed001_x.begin(), demo::seed001_x.end()),
      y(demo::seed001_y.begin(), demo::seed001_y.end());
  std::vector<std::size_t> order(x.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return x[a] < x[b]; });
  std::vector<double> xs, ys;
  for (auto i : order) xs.push_back(x[i]), ys.push_back(y[i]);
  const auto tx = linspace(0, 6, 600);
  const auto lookup = nw_fit(xs, ys, tx, "gaussian", 1e-5);
  const auto pool = nw_fit(xs, ys, tx, "gaussian", 1e3);
  const auto mid = nw_fit(xs, ys, tx, "gaussian", 0.3);
  viz::figure f2;
  f2.title = "Attention pooling from one-hot to uniform weights";
  f2.xlabel = "query x";
  f2.ylabel = "pooled value";
  f2.data = {points(xs, ys, "key-value pairs", viz::kGrey, 4),
             line(tx, lookup, "h → 0: one-hot weights (database lookup)", viz::kRed, 1.5),
             line(tx, mid, "h = 0.3: kernel smoothing", viz::kBlue),
             line(tx, pool, "h → ∞: uniform weights (average pooling)", viz::kGreen)};
  // Weights at a query equal to a key.
  const matrix<double> X = col(xs), Q = col({xs[10]});
  matrix<double> w1(1, 40), w2(1, 40);
  smooth_weights<double>(w1.view(), {}, Q.cview(), X.cview(), kernel_gaussian{1e-5}, mask::none());
  smooth_weights<double>(w2.view(), {}, Q.cview(), X.cview(), kernel_gaussian{1e3}, mask::none());
  double mean = 0;
  for (double v : ys) mean += v / double(ys.size());
  rep.figure("seed004_pooling", f2,
             csv_columns({"x", "lookup", "smoothing", "average"}, {&tx, &lookup, &mid, &pool}),
             fmt::format("With a tiny bandwidth the weights are one-hot: a query equal to key 10 "
                         "puts weight {} on it — a database lookup, and between keys the output "
                         "jumps to the nearest value. With a huge bandwidth every weight is "
                         "1/40 = {} (measured {}): average pooling, a flat line at the mean {}.",
                         num(w1(0, 10), 6), num(1.0 / 40, 4), num(w2(0, 0), 6), num(mean, 4)));
  rep.end_section();
}

// --- seed 002: kernel smoothing vs attention; mimicry; head-as-kernel -----------------------

void seed002(report& rep, std::vector<std::vector<std::string>>& diag_rows,
             std::vector<std::string>& summary) {
  rep.section(
      "seed002", "Seed 002: kernel smoothing and attention on the same 50 points",
      "50 points evenly spaced on [0, 1], values sin 2πx + ½ sin 6πx. Kernel smoothing: Gaussian, "
      "h = 0.05. Attention: each point's 4-D sinusoidal positional encoding φ(x) is turned into a "
      "query and a key by 4×8 matrices W<sub>q</sub>, W<sub>k</sub>, weights softmax(q·k/√8). "
      "First with random matrices (as in the seed's tool), then trained to mimic the smoother.");
  explorer_request r;
  r.function = "sinusoids";
  r.n = 50;
  r.noise = 0;
  const auto d = explorer_make_data(r);
  const matrix<double> X = col(d.x);
  matrix<double> target(50, 50);
  smooth_weights<double>(target.view(), {}, X.cview(), X.cview(), kernel_gaussian{0.05},
                         mask::none());
  const auto mim = attention_mimic(d.x, 0, 1, target, 8, 1500, 0.03, 2);
  auto apply = [&](const matrix<double>& w) {
    std::vector<double> o(50);
    for (index i = 0; i < 50; ++i) {
      double s = 0;
      for (index j = 0; j < 50; ++j) s += w(i, j) * d.y[std::size_t(j)];
      o[std::size_t(i)] = s;
    }
    return o;
  };
  const auto nw = apply(target), before = apply(mim.before), after = apply(mim.after);
  viz::figure f;
  f.title = "Kernel smoothing and attention outputs on the same input";
  f.xlabel = "position x";
  f.ylabel = "value";
  f.data = {points(d.x, d.y, "input values", viz::kGrey, 3.5),
            series{series::kind::line,
                   d.x,
                   nw,
                   {},
                   "kernel smoothing (Gaussian, h = 0.05)",
                   viz::kBlue,
                   7,
                   0.35},
            line(d.x, before, "attention, random W_q, W_k", viz::kOrange),
            line(d.x, after, "attention, W_q, W_k trained to mimic", viz::kRed)};
  rep.figure("seed002_outputs", f,
             csv_columns({"x", "y", "kernel_smoothing", "attention_random", "attention_trained"},
                         {&d.x, &d.y, &nw, &before, &after}),
             fmt::format("Both are weighted averages of the same values; only the weights differ. "
                         "Random projections give a far flatter, shifted weighting (output MSE "
                         "against the smoother {}); after {} Adam steps on the weight difference, "
                         "attention reproduces the smoother (output MSE {}).",
                         num(mse(before, nw), 3), mim.loss.size(), num(mse(after, nw), 3)));
  summary.push_back(fmt::format(
      "Seed 002, attention trained to mimic the smoother: output MSE {:.3g} (random W_q, W_k) "
      "-> {:.3g}",
      mse(before, nw), mse(after, nw)));
  std::vector<double> pt(50), pb(50), pa(50);
  for (index j = 0; j < 50; ++j)
    pt[std::size_t(j)] = target(25, j), pb[std::size_t(j)] = mim.before(25, j),
    pa[std::size_t(j)] = mim.after(25, j);
  viz::figure f2;
  f2.title = fmt::format("Weight profile of the middle position (x = {:.3f})", d.x[25]);
  f2.xlabel = "key position x";
  f2.ylabel = "weight";
  f2.data = {series{series::kind::line, d.x, pt, {}, "kernel smoothing", viz::kBlue, 7, 0.35},
             line(d.x, pb, "attention, random", viz::kOrange),
             line(d.x, pa, "attention, trained", viz::kRed)};
  rep.figure("seed002_profiles", f2,
             csv_columns({"x", "kernel_smoothing", "attention_random", "attention_trained"},
                         {&d.x, &pt, &pb, &pa}),
             fmt::format("The smoother's weights are a bell centred on the query. Root mean "
                         "squared weight difference over the whole 50×50 matrix: random "
                         "attention {}, trained attention {}.",
                         num(mim.rmse_before, 3), num(mim.rmse_after, 3)));
  auto diag = [&](const std::string& what, const matrix<double>& w) {
    const auto hk = head_kernel_fit(w.cview(), d.x, d.x);
    const auto& b = hk.shapes[std::size_t(hk.best)];
    diag_rows.push_back({what, b.kernel, num(b.median_bandwidth, 3), num(b.median_offset, 3),
                         num(b.r2, 4), num(hk.shapes[0].r2, 4)});
  };
  diag("seed 002: kernel smoother (Gaussian h = 0.05)", target);
  diag("seed 002: attention, random projections", mim.before);
  diag("seed 002: attention, trained to mimic", mim.after);
  rep.paragraph(
      "<b>Head-as-kernel diagnostic.</b> For each query row of a head's weights we fit a kernel "
      "profile K((x<sub>j</sub> − c)/h)/Σ K over centre c and bandwidth h, for six shapes, and "
      "report the best shape, the median bandwidth, the median offset c − x<sub>i</sub> and R². "
      "Applied to the smoother it recovers its own kernel; applied to trained heads it says which "
      "kernel smoother the head is (table in the seed-003 section, with the periodic model's and "
      "the language model's heads).");
  rep.end_section();
}

// --- seed 003: RBF view, LayerNorm geometry -------------------------------------------------

void seed003_theory(report& rep) {
  rep.section(
      "seed003", "Seed 003: dot-product attention after LayerNorm is an RBF kernel",
      "After LayerNorm (no affine), every vector has mean 0 and norm √d (up to ε), so "
      "|q − k|² = 2d − 2 q·k and exp(q·k/√d) = e<sup>√d</sup> · exp(−|q − k|² / (2√d)): softmax "
      "attention equals Gaussian kernel smoothing with length-scale h = d<sup>¼</sup>.");
  std::vector<std::vector<std::string>> rows;
  std::vector<double> sx, sy;
  for (index d : {16, 64, 256}) {
    nn::parameters<double> p;
    const nn::layer_norm<double> ln(p, "ln", d);
    p.finalize(0);
    std::mt19937_64 rng(static_cast<std::uint64_t>(d));
    std::normal_distribution<double> g(0, 3);
    const index n = 64;
    matrix<double> x(n, d), q(n, d), v(n, 8);
    for (index i = 0; i < x.size(); ++i) x.data()[i] = g(rng) + 1.5;
    for (index i = 0; i < v.size(); ++i) v.data()[i] = g(rng);
    typename nn::layer_norm<double>::cache c;
    ln.forward(p, q.view(), x.cview(), c);
    matrix<double> a(n, 8), b(n, 8);
    smooth_forward<double>(a.view(), {}, q.cview(), q.cview(), v.cview(), kernel_exp_dot{},
                           mask::none());
    smooth_forward<double>(b.view(), {}, q.cview(), q.cview(), v.cview(),
                           kernel_gaussian{std::pow(double(d), 0.25)}, mask::none());
    // The same with exact normalization (ε = 0): the identity holds to rounding.
    nn::layer_norm<double> ln0 = ln;
    ln0.eps = 0;
    matrix<double> q0(n, d), a0(n, 8), b0(n, 8);
    ln0.forward(p, q0.view(), x.cview(), c);
    smooth_forward<double>(a0.view(), {}, q0.cview(), q0.cview(), v.cview(), kernel_exp_dot{},
                           mask::none());
    smooth_forward<double>(b0.view(), {}, q0.cview(), q0.cview(), v.cview(),
                           kernel_gaussian{std::pow(double(d), 0.25)}, mask::none());
    double diff = 0, diff0 = 0, maxsum = 0, maxnorm = 0;
    for (index i = 0; i < a.size(); ++i) {
      diff = std::max(diff, std::abs(a.data()[i] - b.data()[i]));
      diff0 = std::max(diff0, std::abs(a0.data()[i] - b0.data()[i]));
    }
    for (index i = 0; i < n; ++i) {
      double s = 0, nn2 = 0;
      for (index j = 0; j < d; ++j) s += q(i, j), nn2 += q(i, j) * q(i, j);
      maxsum = std::max(maxsum, std::abs(s));
      maxnorm = std::max(maxnorm, std::abs(std::sqrt(nn2) - std::sqrt(double(d))));
    }
    rows.push_back({std::to_string(d), num(std::pow(double(d), 0.25), 4), num(diff, 3),
                    num(diff0, 3), num(maxsum, 3), num(maxnorm, 3)});
    if (d == 64)
      for (index i = 0; i < 16; ++i)
        for (index j = 0; j < n; ++j) {
          double dot = 0, sq = 0;
          for (index t = 0; t < d; ++t)
            dot += q(i, t) * q(j, t), sq += (q(i, t) - q(j, t)) * (q(i, t) - q(j, t));
          sx.push_back(dot / 8.0);
          sy.push_back(-sq / 16.0);
        }
  }
  rep.table(
      {"d", "h = d^¼", "max |exp_dot − gaussian| (LayerNorm, ε = 1e-5)", "same, ε = 0",
       "max |Σ LN(x)|", "max ||LN(x)| − √d|"},
      rows,
      "Attention with exp(q·k/√d) vs Gaussian smoothing with h = d^¼ on LayerNorm outputs "
      "(64 tokens, 8 value dims); LayerNorm's outputs are orthogonal to the all-ones vector "
      "and have norm √d; the small gap is LayerNorm's ε = 1e-5, and with ε = 0 the two agree to "
      "rounding.",
      "seed003_rbf_table");
  viz::figure f;
  f.title = "q·k/√d vs −|q − k|²/(2√d) for LayerNorm outputs (d = 64)";
  f.xlabel = "q·k / √d  (attention score)";
  f.ylabel = "−|q − k|² / (2√d)  (Gaussian log-weight)";
  f.data = {points(sx, sy, "token pairs", viz::kBlue, 2.5)};
  rep.figure("seed003_rbf_scatter", f, csv_columns({"score", "gaussian_log_weight"}, {&sx, &sy}),
             "Every pair lies on the line y = x − √d = x − 8: the two scores differ by a constant, "
             "which the softmax normalization removes. The slope is exactly 1 because LayerNorm "
             "fixed every norm.");
  rep.end_section();
}

void run(const report_options& o) {
  report_context ctx;
  ctx.full = o.full;
  ctx.quiet = o.quiet;
  auto& diag = ctx.diag;
  const std::vector<std::string> all = {"seed000", "seed001",  "seed004", "seed002",
                                        "seed003", "periodic", "lm"};
  std::vector<std::string> chosen =
      o.sections == "all" ? all : split_list(o.sections, "--sections");
  for (const auto& c : chosen)
    if (std::find(all.begin(), all.end(), c) == all.end())
      throw user_error(
          fmt::format("--sections: unknown section '{}' (seed000, seed001, seed004, "
                      "seed002, seed003, periodic, lm, or all)",
                      c));
  // The checkpoints are found before anything is written, so a missing folder fails at once.
  const bool trained = std::find(chosen.begin(), chosen.end(), "periodic") != chosen.end() ||
                       std::find(chosen.begin(), chosen.end(), "lm") != chosen.end();
  if (trained && !o.full) ctx.models = report_models_dir(o.models);
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(o.out) / "figures", ec);
  if (ec)
    throw user_error(fmt::format("--out {}: cannot create directory ({})", o.out, ec.message()));
  const auto t0 = std::chrono::steady_clock::now();
  report rep(o.out);
  auto step = [&](const std::string& id, const char* what, auto&& fn) {
    if (std::find(chosen.begin(), chosen.end(), id) == chosen.end()) return;
    // Progress on stderr (with the bars); stdout keeps the results: the summary, the page.
    if (!o.quiet) fmt::print(stderr, "kf report: {}\n", what);
    fn();
  };
  step("seed000", "seed 000 (bandwidths)", [&] { seed000(rep, ctx.summary); });
  step("seed001", "seed 001 (KNN vs Gaussian)", [&] { seed001(rep, ctx.summary); });
  step("seed004", "seed 004 (kernels, pooling)", [&] { seed004(rep); });
  step("seed002", "seed 002 (smoothing vs attention, mimicry)",
       [&] { seed002(rep, diag, ctx.summary); });
  step("seed003", "seed 003 (RBF view, LayerNorm)", [&] { seed003_theory(rep); });
  step("periodic", "periodic experiment", [&] { report_periodic(rep, ctx); });
  step("lm", "language model", [&] { report_language_model(rep, ctx); });
  rep.section("diagnostic", "Head-as-kernel diagnostic: every head above, read as a kernel",
              "Best kernel shape per head with its median bandwidth and offset (in the head's "
              "position units: x for seed 002, positions for the periodic and language models) "
              "and R²; the last column is the Gaussian fit's R² for comparison. A causal head "
              "that looks back has a negative offset.");
  rep.table({"head", "best shape", "median bandwidth", "median offset", "R²", "Gaussian R²"}, diag,
            "The head-as-kernel diagnostic.", "head_kernel_table");
  rep.end_section();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.commit(fmt::format("Generated by kf report{} in {:.0f} s.", o.full ? " --full" : "", secs));
  if (!o.quiet && !ctx.summary.empty()) {
    fmt::print("\n");
    for (const auto& l : ctx.summary) fmt::print("{}\n", l);
  }
  if (!o.quiet)
    fmt::print(
        "kf report: wrote {}/index.html (figures in {}/figures) in {:.0f} s\n"
        "Open it in a browser (it works offline). For the interactive explorer: kf serve --port "
        "8080, then http://127.0.0.1:8080/\n",
        o.out, o.out, secs);
}

}  // namespace

void add_report(CLI::App& app) {
  auto o = std::make_shared<report_options>();
  CLI::App* sub = app.add_subcommand(
      "report", "Write the HTML report: the seeds' demonstrations, measured, with figures");
  sub->add_option("--out", o->out, "output directory (index.html + figures/)")
      ->capture_default_str();
  sub->add_flag("--full", o->full,
                "train every model now instead of evaluating models/: the periodic code "
                "configuration x 3 seeds in the improved and the faithful setting, the word-level "
                "language model (about an hour on 2 cores)");
  sub->add_option("--sections", o->sections,
                  "comma list of seed000, seed001, seed004, seed002, seed003, periodic, lm")
      ->capture_default_str();
  sub->add_option("--models", o->models,
                  "folder of the checkpoints the periodic and language-model sections evaluate "
                  "(default: the repository's models/, see models/README.md)");
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->footer(
      "Examples:\n"
      "  kf report --out report                          # about a minute on 2 cores\n"
      "  kf report --out report --sections seed001,seed002\n"
      "  kf report --out report --full                   # the real experiments: hours");
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
