#include "kernelformer/explore/attention_fit.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "kernelformer/explore/explorer.hpp"
#include "kernelformer/masks.hpp"
#include "kernelformer/optim/adamw.hpp"
#include "kernelformer/smooth.hpp"

namespace kf {
namespace {

// out = a · w:  (n, f) × (f, d) → (n, d).
matrix<double> times(const matrix<double>& a, const double* w, index d) {
  matrix<double> out(a.rows(), d);
  for (index i = 0; i < a.rows(); ++i)
    for (index c = 0; c < a.cols(); ++c) {
      const double s = a(i, c);
      for (index j = 0; j < d; ++j) out(i, j) += s * w[c * d + j];
    }
  return out;
}

// g = aᵀ · b:  (n, f)ᵀ × (n, d) → (f, d), g a row-major buffer of f·d.
void transposed_times(double* g, const matrix<double>& a, const matrix<double>& b) {
  std::fill(g, g + a.cols() * b.cols(), 0.0);
  for (index i = 0; i < a.rows(); ++i)
    for (index c = 0; c < a.cols(); ++c) {
      const double s = a(i, c);
      for (index j = 0; j < b.cols(); ++j) g[c * b.cols() + j] += s * b(i, j);
    }
}

}  // namespace

double attention_fit_loss(const attention_fit_params& p, const std::vector<double>& x,
                          const std::vector<double>& y, double lo, double hi,
                          attention_fit_params* grad) {
  const index n = static_cast<index>(x.size()), d = p.wq.cols();
  const matrix<double> phi = explorer_features(x, lo, hi);  // (n, 4)
  const index f = phi.cols(), fe = f + 2;
  if (n < 3 || y.size() != x.size() || p.wq.rows() != f || p.wk.rows() != f || p.wk.cols() != d ||
      static_cast<index>(p.wv.size()) != fe)
    throw std::invalid_argument("attention_fit_loss: x, y (n >= 3), W_q, W_k (4 x d), w_v (6)");
  matrix<double> e(n, fe);  // [φ, y, 1]
  for (index i = 0; i < n; ++i) {
    for (index c = 0; c < f; ++c) e(i, c) = phi(i, c);
    e(i, f) = y[static_cast<std::size_t>(i)], e(i, f + 1) = 1;
  }
  const matrix<double> q = times(phi, p.wq.data(), d), k = times(phi, p.wk.data(), d),
                       v = times(e, p.wv.data(), 1);
  kernel_exp_dot kern;
  kern.temperature = std::sqrt(double(d));
  const mask not_self = mask::causal(-1) | mask::window(-1, n);  // j ≠ i
  matrix<double> out(n, 1), dout(n, 1);
  std::vector<double> lse(static_cast<std::size_t>(n));
  smooth_forward<double>(out.view(), lse, q.cview(), k.cview(), v.cview(), kern, not_self);
  double mse = 0;
  for (index i = 0; i < n; ++i) {
    const double r = out(i, 0) - y[static_cast<std::size_t>(i)];
    mse += r * r;
    dout(i, 0) = 2 * r / double(n);
  }
  if (grad) {
    matrix<double> dq(n, d), dk(n, d), dv(n, 1);
    smooth_grads<double> gr(dq.view(), dk.view(), dv.view());
    gr.want_dparam = false;
    smooth_backward<double>(gr, dout.cview(), out.cview(), lse, q.cview(), k.cview(), v.cview(),
                            kern, not_self);
    grad->wq = matrix<double>(f, d), grad->wk = matrix<double>(f, d);
    grad->wv.assign(static_cast<std::size_t>(fe), 0.0);
    transposed_times(grad->wq.data(), phi, dq);  // dW_q = φᵀ dq
    transposed_times(grad->wk.data(), phi, dk);  // dW_k = φᵀ dk
    transposed_times(grad->wv.data(), e, dv);    // dw_v = eᵀ dv
  }
  return mse / double(n);
}

attention_fit_result attention_fit_data(const std::vector<double>& x, const std::vector<double>& y,
                                        double lo, double hi, index d, index steps, double lr,
                                        std::uint64_t seed) {
  if (d < 1 || steps < 0) throw std::invalid_argument("attention_fit_data: d >= 1, steps >= 0");
  const index f = 4, fe = f + 2;
  attention_fit_result res;
  auto& p = res.params;
  // Initial W as attention_mimic draws them: W_q then W_k, N(0, 1/f); w_v picks y.
  p.wq = matrix<double>(f, d), p.wk = matrix<double>(f, d);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0 / std::sqrt(double(f)));
  for (double& w : p.wq.values()) w = g(rng);
  for (double& w : p.wk.values()) w = g(rng);
  p.wv.assign(static_cast<std::size_t>(fe), 0.0);
  p.wv[std::size_t(f)] = 1;
  // Adam over one flat buffer [W_q, W_k, w_v], copied in and out of the shaped parameters.
  const auto flat = [](const attention_fit_params& a) {
    std::vector<double> v(a.wq.values());
    v.insert(v.end(), a.wk.values().begin(), a.wk.values().end());
    v.insert(v.end(), a.wv.begin(), a.wv.end());
    return v;
  };
  std::vector<double> buf = flat(p);
  optim::adamw<double> adam({.lr = lr}, static_cast<index>(buf.size()));
  attention_fit_params grad;
  for (index step = 0; step < steps; ++step) {
    res.loss.push_back(attention_fit_loss(p, x, y, lo, hi, &grad));
    adam.step(buf, flat(grad));
    std::copy_n(buf.begin(), f * d, p.wq.values().begin());
    std::copy_n(buf.begin() + f * d, f * d, p.wk.values().begin());
    std::copy_n(buf.begin() + 2 * f * d, fe, p.wv.begin());
  }
  res.mse_after = attention_fit_loss(p, x, y, lo, hi, nullptr);
  res.mse_before = res.loss.empty() ? res.mse_after : res.loss.front();
  return res;
}

}  // namespace kf
