#include "kernelformer/explore/explorer_head.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "kernelformer/explore/attention_fit.hpp"
#include "kernelformer/masks.hpp"
#include "kernelformer/smooth.hpp"

namespace kf {
namespace {

// Trained and random heads: seed 002's 4 × 8 projections, softmax(q·k / √8).
constexpr index kHeadDim = 8;
// mimic: attention_mimic on 50 evenly spaced positions (the report's seed-002 setting), 300 Adam
// steps; data: at most 200 points, 300 steps.
constexpr index kMimicPositions = 50, kMimicSteps = 300, kDataPoints = 200, kDataSteps = 300;
constexpr double kMimicLr = 0.05, kDataLr = 0.05;

// n ≥ 2 evenly spaced points from lo to hi, both included.
std::vector<double> linspace(double lo, double hi, index n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (index i = 0; i < n; ++i) v[std::size_t(i)] = lo + (hi - lo) * double(i) / double(n - 1);
  return v;
}

// φ W        φ: (n, 4), W: (4, d) → (n, d). Naive loops: n ≤ a few thousand, d ≤ 8.
matrix<double> project(const matrix<double>& phi, const matrix<double>& w) {
  matrix<double> out(phi.rows(), w.cols());
  for (index i = 0; i < phi.rows(); ++i)
    for (index c = 0; c < phi.cols(); ++c)
      for (index j = 0; j < w.cols(); ++j) out(i, j) += phi(i, c) * w(c, j);
  return out;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The NW weights among `pos` (every position a query and a key): attention_mimic's target.
matrix<double> smoother_weights(const explorer_request& r, const std::vector<double>& pos) {
  const index m = static_cast<index>(pos.size());
  const matrix<double> x(m, 1, pos);
  matrix<double> w(m, m);
  smooth_weights<double>(w.view(), {}, x.cview(), x.cview(), explorer_nw_kernel(r), mask::none());
  return w;
}

// Random and mimic heads: attention_mimic from the request's seed; with 0 steps it only draws the
// initial W_q, W_k, which is exactly the random head. Records the loss as an RMSE.
void train_mimic(explorer_head& h, const explorer_request& r, const explorer_data& d) {
  const auto pos = linspace(d.lo, d.hi, kMimicPositions);
  const index steps = h.mode == "mimic" ? kMimicSteps : 0;  // random: the starting point
  const auto t0 = std::chrono::steady_clock::now();
  const mimic_result m =
      attention_mimic(pos, d.lo, d.hi, smoother_weights(r, pos), kHeadDim, steps, kMimicLr, r.seed);
  h.train_ms = ms_since(t0);
  h.wq = m.wq, h.wk = m.wk;
  for (double l : m.loss) h.loss.push_back(std::sqrt(l));  // per step: weight RMSE
  h.loss_before = m.rmse_before, h.loss_after = m.rmse_after;
  h.steps = steps, h.train_points = kMimicPositions;
}

// Data head: trained on m ≤ 200 points picked at evenly strided indices of the sorted data
// (first and last always included), so training time does not grow with n.
void train_data(explorer_head& h, const explorer_request& r, const explorer_data& d) {
  const index n = static_cast<index>(d.x.size()), m = std::min(n, kDataPoints);
  std::vector<double> x, y;
  for (index i = 0; i < m; ++i) {
    const auto j = static_cast<std::size_t>(m > 1 ? i * (n - 1) / (m - 1) : 0);
    x.push_back(d.x[j]), y.push_back(d.y[j]);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const attention_fit_result f =
      attention_fit_data(x, y, d.lo, d.hi, kHeadDim, kDataSteps, kDataLr, r.seed);
  h.train_ms = ms_since(t0);
  h.wq = f.params.wq, h.wk = f.params.wk, h.wv = f.params.wv;
  h.loss = f.loss;
  h.loss_before = f.mse_before, h.loss_after = f.mse_after;
  h.steps = kDataSteps, h.train_points = m;
}

}  // namespace

// Only what the mode reads goes into the key: the identity head depends on its kernel alone,
// random on seed and range, mimic also on the NW kernel it copies, data on the data set.
// Doubles are printed with 17 digits, so two keys are equal only for equal values.
std::string explorer_head_key(const explorer_request& r) {
  explorer_validate(r);
  if (r.attention == "identity")
    return fmt::format("identity|{}|{:.17g}", kernel_format(explorer_attention_kernel(r)),
                       r.temperature);
  const auto fs = explorer_functions();
  const auto f = std::find_if(fs.begin(), fs.end(), [&](auto& g) { return g.name == r.function; });
  if (r.attention == "random") return fmt::format("random|{}|{}|{}", r.seed, f->lo, f->hi);
  if (r.attention == "mimic")
    return fmt::format("mimic|{}|{}|{}|{}", r.seed, f->lo, f->hi,
                       kernel_format(explorer_nw_kernel(r)));
  if (f->fixed_n) return fmt::format("data|{}|{}", r.function, r.seed);
  return fmt::format("data|{}|{}|{:.17g}|{}", r.function, r.n, r.noise, r.seed);
}

explorer_head explorer_make_head(const explorer_request& r) {
  const explorer_data d = explorer_make_data(r);  // validates r
  explorer_head h;
  h.mode = r.attention;
  if (h.mode == "identity") {
    h.kernel = explorer_attention_kernel(r);
    h.wq = matrix<double>(4, 4);
    for (index i = 0; i < 4; ++i) h.wq(i, i) = 1;
    h.wk = h.wq;
    return h;
  }
  kernel_exp_dot k;  // softmax(q·k / √d), d = 8: the usual scaled dot product
  k.temperature = std::sqrt(double(kHeadDim));
  h.kernel = k;
  if (h.mode == "data")
    train_data(h, r, d);
  else
    train_mimic(h, r, d);
  return h;
}

matrix<double> explorer_head_queries(const explorer_head& h, const std::vector<double>& x,
                                     double lo, double hi) {
  return project(explorer_features(x, lo, hi), h.wq);
}

matrix<double> explorer_head_keys(const explorer_head& h, const std::vector<double>& x, double lo,
                                  double hi) {
  return project(explorer_features(x, lo, hi), h.wk);
}

matrix<double> explorer_head_values(const explorer_head& h, const std::vector<double>& x,
                                    const std::vector<double>& y, double lo, double hi) {
  const index n = static_cast<index>(x.size());
  matrix<double> v(n, 1);
  if (h.wv.empty()) {
    std::copy(y.begin(), y.end(), v.data());
    return v;
  }
  const matrix<double> phi = explorer_features(x, lo, hi);
  const index f = phi.cols();  // wv = [w_φ (4), w_y, bias]: v_i = φ(x_i)·w_φ + w_y y_i + bias
  for (index i = 0; i < n; ++i) {
    double s = h.wv[std::size_t(f)] * y[std::size_t(i)] + h.wv[std::size_t(f + 1)];
    for (index c = 0; c < f; ++c) s += h.wv[std::size_t(c)] * phi(i, c);
    v(i, 0) = s;
  }
  return v;
}

// Throws std::invalid_argument unless 2 ≤ positions and 1 ≤ rows ≤ positions.
explorer_head_diagnostics explorer_head_diagnose(const explorer_head& h, double lo, double hi,
                                                 index positions, index rows) {
  if (positions < 2 || rows < 1 || rows > positions)
    throw std::invalid_argument("explorer_head_diagnose: 2 <= positions, 1 <= rows <= positions");
  const auto pos = linspace(lo, hi, positions);
  const matrix<double> q = explorer_head_queries(h, pos, lo, hi),
                       k = explorer_head_keys(h, pos, lo, hi);
  std::vector<index> pick;
  std::vector<double> qx;
  for (index i = 0; i < rows; ++i) {
    pick.push_back(rows > 1 ? i * (positions - 1) / (rows - 1) : positions / 2);
    qx.push_back(pos[std::size_t(pick.back())]);
  }
  matrix<double> w(rows, positions);  // normalized weights of the picked query rows
  smooth_weights<double>(w.view(), pick, q.cview(), k.cview(), h.kernel, mask::none());
  explorer_head_diagnostics out;
  out.fit = head_kernel_fit(w.cview(), qx, pos);
  out.positions = positions, out.rows = rows;
  // Asymmetry of the kernel itself (not of the row-normalized weights): log K from the kernel.
  matrix<double> lk(positions, positions);
  double mx = -std::numeric_limits<double>::infinity();
  for (index i = 0; i < positions; ++i)
    for (index j = 0; j < positions; ++j) {
      double s = 0;
      for (index c = 0; c < q.cols(); ++c) s += q(i, c) * k(j, c);
      lk(i, j) = kernel_log_weight(h.kernel.first, s);
      mx = std::max(mx, lk(i, j));
    }
  double diff = 0, norm = 0;
  for (index i = 0; i < positions; ++i)
    for (index j = 0; j < positions; ++j) {
      // Scaled so the largest entry is 1: exp cannot overflow, and the ratio is scale-free.
      const double a = std::exp(lk(i, j) - mx), b = std::exp(lk(j, i) - mx);
      diff += (a - b) * (a - b), norm += a * a;
    }
  out.asymmetry = norm > 0 ? std::sqrt(diff / norm) : 0.0;
  return out;
}

}  // namespace kf
