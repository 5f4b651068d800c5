#include "kernelformer/explore/demos.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <utility>

#include "kernelformer/explore/explorer.hpp"
#include "kernelformer/masks.hpp"
#include "kernelformer/nn/layer_norm.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/smooth.hpp"

namespace kf::demo {
namespace {

matrix<double> column(const std::vector<double>& v) {  // (n, 1)
  matrix<double> m(static_cast<index>(v.size()), 1);
  std::copy(v.begin(), v.end(), m.data());
  return m;
}

// A matrix's values, row-major, as a vector (an (n, 1) result as a curve).
std::vector<double> values_of(const matrix<double>& m) {
  return std::vector<double>(m.values().begin(), m.values().end());
}

// Nadaraya–Watson of (x, y) at the queries with one kernel: one primitive call, 1-D.
std::vector<double> nw_curve(const std::vector<double>& x, const std::vector<double>& y,
                             const std::vector<double>& query, const kernel_spec& k) {
  const matrix<double> X = column(x), Y = column(y), Q = column(query);
  matrix<double> out(Q.rows(), 1);
  smooth_forward<double>(out.view(), {}, Q.cview(), X.cview(), Y.cview(), k, mask::none());
  return values_of(out);
}

std::vector<double> nw_gaussian(const std::vector<double>& x, const std::vector<double>& y,
                                const std::vector<double>& query, double h) {
  return nw_curve(x, y, query, kernel_gaussian{h});
}

// out_i = Σ_j w_ij y_j: a weight matrix applied to values.
std::vector<double> apply_weights(const matrix<double>& w, const std::vector<double>& y) {
  std::vector<double> out(static_cast<std::size_t>(w.rows()));
  for (index i = 0; i < w.rows(); ++i) {
    double s = 0;
    for (index j = 0; j < w.cols(); ++j) s += w(i, j) * y[std::size_t(j)];
    out[std::size_t(i)] = s;
  }
  return out;
}

// seed 000's nearly linear f = 0.3x + 1, with the noise draws of the sine data.
void seed000_linear(seed000_result& r) {
  const double h = r.linear_bandwidth;
  r.y_linear.resize(r.x.size());
  r.truth_linear.resize(r.grid.size());
  for (std::size_t i = 0; i < r.x.size(); ++i)
    r.y_linear[i] = 0.3 * r.x[i] + 1 + (r.y[i] - std::sin(r.x[i]));  // y − sin x: the noise
  for (std::size_t i = 0; i < r.grid.size(); ++i) r.truth_linear[i] = 0.3 * r.grid[i] + 1;
  r.nw_linear = nw_gaussian(r.x, r.y_linear, r.grid, h);
  regression_spec ll;
  ll.method = regression_method::local_linear;
  ll.bandwidth = {h};
  ll.exact = true;
  r.ll_linear =
      regression_evaluate(ll, column(r.x).cview(), r.y_linear, column(r.grid).cview(), false).fit;
  r.mse_nw_interior = mse(r.nw_linear, r.truth_linear, r.kInteriorFrom, r.kInteriorTo);
  r.mse_nw = mse(r.nw_linear, r.truth_linear);
  r.mse_ll = mse(r.ll_linear, r.truth_linear);
}

// LayerNorm (no affine) of x with the given ε: (n, d).
matrix<double> layer_norm_of(const matrix<double>& x, double eps) {
  nn::parameters<double> p;
  nn::layer_norm<double> ln(p, "ln", x.cols());
  p.finalize(0);
  ln.eps = eps;
  matrix<double> q(x.rows(), x.cols());
  typename nn::layer_norm<double>::cache c;
  ln.forward(p, q.view(), x.cview(), c);
  return q;
}

// max |exp_dot attention − Gaussian smoothing with h = d^¼| over the outputs, q = k = LN(x).
// Why they agree: with |q|² = |k|² = d, −|q − k|²/(2√d) = q·k/√d − √d, a shift that is the same
// for every key and cancels in the normalization; exp_dot's default temperature is √d.
double rbf_gap(const matrix<double>& q, const matrix<double>& v) {
  const double h = std::pow(double(q.cols()), 0.25);
  matrix<double> a(q.rows(), v.cols()), b(q.rows(), v.cols());
  smooth_forward<double>(a.view(), {}, q.cview(), q.cview(), v.cview(), kernel_exp_dot{},
                         mask::none());
  smooth_forward<double>(b.view(), {}, q.cview(), q.cview(), v.cview(), kernel_gaussian{h},
                         mask::none());
  double gap = 0;
  for (index i = 0; i < a.size(); ++i) gap = std::max(gap, std::abs(a.data()[i] - b.data()[i]));
  return gap;
}

}  // namespace

std::vector<double> linspace(double a, double b, index n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (index i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = a + (b - a) * double(i) / double(n - 1);
  return v;
}

// b must be at least as long as the range used; an empty range divides by zero (NaN).
double mse(const std::vector<double>& a, const std::vector<double>& b, std::size_t from,
           std::size_t to) {
  to = std::min(to, a.size());
  double s = 0;
  for (std::size_t i = from; i < to; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s / double(to - from);
}

xy_data seed001_points() {
  return {std::vector<double>(seed001_x.begin(), seed001_x.end()),
          std::vector<double>(seed001_y.begin(), seed001_y.end())};
}

xy_data seed001_sorted() {
  std::vector<std::size_t> order(seed001_x.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [](std::size_t a, std::size_t b) { return seed001_x[a] < seed001_x[b]; });
  xy_data d;
  for (std::size_t i : order) d.x.push_back(seed001_x[i]), d.y.push_back(seed001_y[i]);
  return d;
}

head_kernel_summary head_kernel_summarize(std::string head, const_matrix_view<double> weights,
                                          const std::vector<double>& query_x,
                                          const std::vector<double>& key_x) {
  const auto hk = head_kernel_fit(weights, query_x, key_x);
  const auto& b = hk.shapes[std::size_t(hk.best)];
  return {std::move(head), b.kernel, b.median_bandwidth,
          b.median_offset, b.r2,     hk.shapes[0].r2};  // shapes[0]: the Gaussian
}

seed000_result seed000() {
  seed000_result r;
  // The data: 120 uniform draws on [0, 10], sorted, then one noise draw per sorted point (the
  // order of draws is part of the demonstration: it fixes every number the report prints).
  std::mt19937_64 rng(0);
  std::uniform_real_distribution<double> u(0, 10);
  std::normal_distribution<double> g(0, 0.4);
  r.x.resize(120);
  r.y.resize(120);
  for (auto& v : r.x) v = u(rng);
  std::sort(r.x.begin(), r.x.end());
  for (std::size_t i = 0; i < r.x.size(); ++i) r.y[i] = std::sin(r.x[i]) + g(rng);
  r.grid = linspace(0, 10, 400);
  r.truth.resize(r.grid.size());
  for (std::size_t i = 0; i < r.grid.size(); ++i) r.truth[i] = std::sin(r.grid[i]);
  // LOO-CV's bandwidth (exact route: the criterion over all pairs), searched from b = 0.5.
  regression_spec spec;
  spec.bandwidth = {0.5};
  spec.exact = true;
  const matrix<double> X = column(r.x);
  const double hcv =
      regression_fit_data(spec, X.cview(), r.y, bandwidth_criterion::loo_cv).spec.bandwidth[0];
  // Too small (variance), LOO-CV's choice, too large (bias): the fit, its error against sin on
  // the grid, and the criterion and effective degrees of freedom the smoother reports.
  for (const double h : {0.08, hcv, 2.0}) {
    seed000_fit f;
    f.bandwidth = h;
    f.fit = nw_gaussian(r.x, r.y, r.grid, h);
    f.mse = mse(f.fit, r.truth);
    spec.bandwidth = {h};
    const auto cv = regression_criteria(spec, X.cview(), r.y);
    f.loo_cv = cv.loo_cv;
    f.df = cv.df;
    r.fits.push_back(std::move(f));
  }
  seed000_linear(r);
  return r;
}

seed001_result seed001(index queries) {
  // X, Y: (40, 1) keys and values; Q: (queries, 1). Three smoothers of the same values, each one
  // primitive call: only the kernel (and for attention, the features) differ.
  seed001_result r;
  r.data = seed001_points();
  r.bandwidth = 1 / std::sqrt(10.0);
  r.query = linspace(0, 6, queries);
  r.truth.resize(r.query.size());
  for (std::size_t i = 0; i < r.query.size(); ++i) r.truth[i] = 2 * std::sin(r.query[i]);
  const double h = r.bandwidth;
  const index m = static_cast<index>(r.data.x.size()), n = queries;
  r.nw = nw_gaussian(r.data.x, r.data.y, r.query, h);
  const matrix<double> X = column(r.data.x), Y = column(r.data.y), Q = column(r.query);
  matrix<double> knn(n, 1), att(n, 1);
  // KNN is not a separate algorithm: uniform weights on the 10 nearest keys (a top-k mask).
  smooth_forward<double>(knn.view(), {}, Q.cview(), X.cview(), Y.cview(), kernel_uniform{},
                         mask::none().topk(r.k, topk_rank::distance));
  r.knn = values_of(knn);
  // The lifted features (header): exp_dot at temperature 1 on q = (x/h, 1), k = (x'/h, −x'²/2h²).
  matrix<double> ql(n, 2), kl(m, 2);
  for (index i = 0; i < n; ++i) ql(i, 0) = Q(i, 0) / h, ql(i, 1) = 1.0;
  for (index j = 0; j < m; ++j) kl(j, 0) = X(j, 0) / h, kl(j, 1) = -X(j, 0) * X(j, 0) / (2 * h * h);
  smooth_forward<double>(att.view(), {}, ql.cview(), kl.cview(), Y.cview(), kernel_exp_dot{1.0},
                         mask::none());
  r.attention = values_of(att);
  r.mse_nw = mse(r.nw, r.truth);
  r.mse_knn = mse(r.knn, r.truth);
  for (std::size_t i = 0; i < r.nw.size(); ++i)
    r.max_nw_attention = std::max(r.max_nw_attention, std::abs(r.nw[i] - r.attention[i]));
  return r;
}

seed004_result seed004() {
  seed004_result r;
  r.u = linspace(-3, 3, 601);
  // K(u)/K(0) from the kernel's log-weight at s = u² (bandwidth 1): every shape peaks at 1.
  for (const char* name :
       {"gaussian", "boxcar", "epanechnikov", "laplacian", "tricube", "cauchy"}) {
    const any_kernel k = kernel_parse(name).first;
    const double log_k0 = kernel_log_weight(k, 0.0);
    kernel_profile p{name, std::vector<double>(r.u.size())};
    for (std::size_t i = 0; i < r.u.size(); ++i)
      p.values[i] = std::exp(kernel_log_weight(k, r.u[i] * r.u[i]) - log_k0);
    r.kernels.push_back(std::move(p));
  }
  // Pooling over seed 001's points as key-value pairs: the bandwidth moves the weights from
  // one-hot (h = 1e-5, below every gap between keys) to uniform (h = 1e3, far above the range).
  r.keys = seed001_sorted();
  const auto& xs = r.keys.x;
  r.query = linspace(0, 6, 600);
  r.lookup = nw_gaussian(xs, r.keys.y, r.query, r.lookup_h);
  r.average = nw_gaussian(xs, r.keys.y, r.query, r.average_h);
  r.smoothing = nw_gaussian(xs, r.keys.y, r.query, r.smoothing_h);
  // The weights when the query is key 10 itself.
  const index m = static_cast<index>(xs.size());
  const matrix<double> X = column(xs), Q = column({xs[std::size_t(r.kKey)]});
  matrix<double> w1(1, m), w2(1, m);
  smooth_weights<double>(w1.view(), {}, Q.cview(), X.cview(), kernel_gaussian{r.lookup_h},
                         mask::none());
  smooth_weights<double>(w2.view(), {}, Q.cview(), X.cview(), kernel_gaussian{r.average_h},
                         mask::none());
  r.lookup_weight = w1(0, r.kKey);  // ≈ 1: the query is that key
  r.average_weight = w2(0, 0);      // ≈ 1/40 for every key at h = 1e3; key 0 stands for all
  for (double v : r.keys.y) r.mean += v / double(r.keys.y.size());
  return r;
}

seed002_result seed002() {
  // target: (50, 50) Gaussian weights over the positions; attention_mimic trains a head on φ(x)
  // (d = 8) to reproduce them, and each weight matrix is then applied to the same values y.
  seed002_result r;
  // The explorer's "sinusoids" data set: seed 002's 50 points (its preset).
  explorer_request q;
  q.function = "sinusoids";
  q.n = 50;
  q.noise = 0;
  const auto d = explorer_make_data(q);
  r.x = d.x;
  r.y = d.y;
  const matrix<double> X = column(r.x);
  matrix<double> target(q.n, q.n);
  smooth_weights<double>(target.view(), {}, X.cview(), X.cview(), kernel_gaussian{r.bandwidth},
                         mask::none());
  r.mimic = attention_mimic(r.x, 0, 1, target, 8, 1500, 0.03, 2);
  r.smoother = apply_weights(r.mimic.target, r.y);
  r.random = apply_weights(r.mimic.before, r.y);
  r.trained = apply_weights(r.mimic.after, r.y);
  r.heads = {head_kernel_summarize("seed 002: kernel smoother (Gaussian h = 0.05)",
                                   r.mimic.target.cview(), r.x, r.x),
             head_kernel_summarize("seed 002: attention, random projections",
                                   r.mimic.before.cview(), r.x, r.x),
             head_kernel_summarize("seed 002: attention, trained to mimic", r.mimic.after.cview(),
                                   r.x, r.x)};
  return r;
}

// One case per d, seeded by d: x (64, d) ~ N(1.5, 3²), values v (64, 8) ~ N(0, 3²).
layer_norm_case seed003_case(index d) {
  constexpr index n = 64, dv = 8;
  std::mt19937_64 rng(static_cast<std::uint64_t>(d));
  std::normal_distribution<double> g(0, 3);
  layer_norm_case c{matrix<double>(n, d), matrix<double>(n, dv)};
  for (index i = 0; i < c.x.size(); ++i) c.x.data()[i] = g(rng) + 1.5;
  for (index i = 0; i < c.v.size(); ++i) c.v.data()[i] = g(rng);
  return c;
}

seed003_result seed003() {
  // For d = 16, 64, 256: q = k = LayerNorm(x) (64, d), v (64, 8). The identity needs |q|² = d
  // exactly, which holds for ε = 0 and to O(ε / var) with PyTorch's ε = 1e-5.
  seed003_result r;
  for (index d : {16, 64, 256}) {
    const auto c = seed003_case(d);
    const matrix<double> q = layer_norm_of(c.x, 1e-5), q0 = layer_norm_of(c.x, 0);
    layer_norm_rbf_row row;
    row.d = d;
    row.length_scale = std::pow(double(d), 0.25);
    row.max_diff = rbf_gap(q, c.v);
    row.max_diff_exact = rbf_gap(q0, c.v);
    // LayerNorm's geometry (with its ε): rows sum to 0 and have norm √d.
    for (index i = 0; i < q.rows(); ++i) {
      double s = 0, n2 = 0;
      for (index j = 0; j < d; ++j) s += q(i, j), n2 += q(i, j) * q(i, j);
      row.max_abs_sum = std::max(row.max_abs_sum, std::abs(s));
      row.max_norm_gap = std::max(row.max_norm_gap, std::abs(std::sqrt(n2) - std::sqrt(double(d))));
    }
    r.rows.push_back(row);
    if (d != 64) continue;
    // The scatter: √d = 8, so the score is q·k / 8 and the log-weight −|q − k|² / 16.
    for (index i = 0; i < 16; ++i)
      for (index j = 0; j < q.rows(); ++j) {
        double dot = 0, sq = 0;
        for (index t = 0; t < d; ++t)
          dot += q(i, t) * q(j, t), sq += (q(i, t) - q(j, t)) * (q(i, t) - q(j, t));
        r.score.push_back(dot / 8.0);
        r.gaussian_log_weight.push_back(-sq / 16.0);
      }
  }
  return r;
}

}  // namespace kf::demo
