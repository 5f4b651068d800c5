#include "kernelformer/explore/head_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <variant>

#include "kernelformer/explore/explorer.hpp"
#include "kernelformer/masks.hpp"
#include "kernelformer/smooth.hpp"

namespace kf {
namespace {

// The shapes tried, in report order (head_kernel_report::shapes follows it).
const std::vector<std::string>& candidates() {
  static const std::vector<std::string> c = {"gaussian",     "laplacian", "cauchy",
                                             "epanechnikov", "tricube",   "boxcar"};
  return c;
}

// Squared error of row p against the normalized profile of kernel k at centre c, bandwidth h.
// One visit per call, the kernel's weight inlined in the loops (this is kf inspect's inner loop:
// ~10^9 weights for a small model). Log-domain kernels (gaussian, laplacian, cauchy) are
// normalized with the row maximum subtracted, so tiny bandwidths never underflow to an empty
// row; the others use their positive part directly.
double row_sse(const any_kernel& k0, const double* p, const std::vector<double>& kx, double c,
               double h, std::vector<double>& buf) {
  any_kernel k = k0;
  kernel_set_param(k, h);
  const std::size_t n = kx.size();
  const double z = std::visit(
      [&](const auto& kk) {
        double total = 0;
        if constexpr (std::decay_t<decltype(kk)>::log_domain) {
          double mx = -std::numeric_limits<double>::infinity();
          for (std::size_t j = 0; j < n; ++j) {
            const double d = kx[j] - c;
            buf[j] = double(kk.template weight<double>(d * d));  // log K here
            mx = std::max(mx, buf[j]);
          }
          for (std::size_t j = 0; j < n; ++j) {
            buf[j] = std::isfinite(mx) ? std::exp(buf[j] - mx) : 0.0;
            total += buf[j];
          }
        } else {
          for (std::size_t j = 0; j < n; ++j) {
            const double d = kx[j] - c;
            buf[j] = std::max(double(kk.template weight<double>(d * d)), 0.0);
            total += buf[j];
          }
        }
        return total;
      },
      k);
  double sse = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const double q = z > 0 ? buf[j] / z : 0.0;  // an all-zero profile scores as q = 0
    sse += (p[j] - q) * (p[j] - q);
  }
  return sse;
}

// NaN for no values (a shape fitted on no row); the mean of the middle two for an even count.
double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

// Cost: rows × shapes × (centres ≈ 2S) × 41 bandwidths × S keys for the grid, the dominant term.
// Throws std::invalid_argument on mismatched sizes, fewer than 2 keys or all keys equal.
head_kernel_report head_kernel_fit(const_matrix_view<double> w, const std::vector<double>& qx,
                                   const std::vector<double>& kx) {
  if (static_cast<index>(qx.size()) != w.rows || static_cast<index>(kx.size()) != w.cols)
    throw std::invalid_argument("head_kernel_fit: positions do not match the weight matrix");
  if (kx.size() < 2) throw std::invalid_argument("head_kernel_fit: need at least 2 keys");
  const auto [mn, mx] = std::minmax_element(kx.begin(), kx.end());
  const double range = *mx - *mn;
  if (!(range > 0)) throw std::invalid_argument("head_kernel_fit: all key positions are equal");
  double gap = range;  // smallest spacing between sorted keys
  std::vector<double> sorted = kx;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t j = 1; j < sorted.size(); ++j)
    if (sorted[j] > sorted[j - 1]) gap = std::min(gap, sorted[j] - sorted[j - 1]);
  // Bandwidth grid: from a fraction of the spacing to twice the range, log-spaced.
  std::vector<double> hs;
  for (int g = 0; g <= 40; ++g)  // 41 values, 0.3·gap … 2·range
    hs.push_back(0.3 * gap * std::pow(2 * range / (0.3 * gap), g / 40.0));
  head_kernel_report rep;
  std::vector<double> buf(kx.size());
  double best_r2 = -std::numeric_limits<double>::infinity();
  for (const auto& name : candidates()) {
    const any_kernel k = kernel_parse(name).first;
    head_kernel_shape_fit f;
    f.kernel = name;
    double sse_total = 0, sst_total = 0;
    for (index i = 0; i < w.rows; ++i) {
      const double* p = w.data + i * w.ld;
      double s = 0;
      for (index j = 0; j < w.cols; ++j) s += p[j];
      if (!(s > 0.5)) continue;                // an empty row (sums are 1 or 0), or NaN: not fitted
      const double mean = s / double(w.cols);  // SST: the row against the uniform profile
      double sst = 0;
      for (index j = 0; j < w.cols; ++j) sst += (p[j] - mean) * (p[j] - mean);
      // Centres: every key position, the query's own position, and a grid reaching half the
      // range beyond the keys (a head may look past the first or last key).
      double best = std::numeric_limits<double>::infinity(), bc = 0, bh = 0;
      std::vector<double> centres = kx;
      centres.push_back(qx[static_cast<std::size_t>(i)]);
      const double step = range / double(kx.size() - 1);
      for (double c = *mn - range / 2; c < *mn; c += step) centres.push_back(c);
      for (double c = *mx + step; c <= *mx + range / 2; c += step) centres.push_back(c);
      for (double c : centres)
        for (double h : hs) {
          const double e = row_sse(k, p, kx, c, h, buf);
          if (e < best) best = e, bc = c, bh = h;
        }
      // Golden-section refinement of h, then of c within a key spacing, then of h again.
      // The grid's best is only replaced by an improvement, so refinement never makes it worse.
      const double gr = (std::sqrt(5.0) - 1) / 2;  // 1/φ: each iteration keeps 61.8% of [a, b]
      auto golden = [&](double a, double b, auto&& obj) {
        for (int it = 0; it < 30; ++it) {
          const double c1 = b - gr * (b - a), c2 = a + gr * (b - a);
          if (obj(c1) < obj(c2))
            b = c2;
          else
            a = c1;
        }
        return 0.5 * (a + b);
      };
      auto by_h = [&](double h) { return row_sse(k, p, kx, bc, h, buf); };
      auto by_c = [&](double c) { return row_sse(k, p, kx, c, bh, buf); };
      for (int pass = 0; pass < 2; ++pass) {
        const double h1 = golden(bh / 1.3, bh * 1.3, by_h);
        if (const double e = by_h(h1); e < best) best = e, bh = h1;
        const double c1 = golden(bc - gap, bc + gap, by_c);
        if (const double e = by_c(c1); e < best) best = e, bc = c1;
      }
      f.bandwidth.push_back(bh);
      f.offset.push_back(bc - qx[static_cast<std::size_t>(i)]);
      sse_total += best;
      sst_total += sst;
    }
    f.median_bandwidth = median(f.bandwidth);
    f.median_offset = median(f.offset);
    f.r2 = sst_total > 0 ? 1 - sse_total / sst_total : 0.0;  // pooled over rows, not averaged
    if (f.r2 > best_r2) best_r2 = f.r2, rep.best = static_cast<index>(rep.shapes.size());
    rep.shapes.push_back(std::move(f));
  }
  return rep;
}

namespace {

// The head attention_mimic trains: q = φ W_q, k = φ W_k, exp_dot(√d), identity values, so the
// primitive's output is the (n, n) weight matrix P.
struct mimic_head {
  matrix<double> phi;  // (n, f)
  matrix<double> eye;  // (n, n)
  kernel_exp_dot kern;
  index n, f, d;

  mimic_head(const std::vector<double>& x, double lo, double hi, index d_)
      : phi(explorer_features(x, lo, hi)),
        eye(static_cast<index>(x.size()), static_cast<index>(x.size())),
        n(static_cast<index>(x.size())),
        f(phi.cols()),
        d(d_) {
    for (index i = 0; i < n; ++i) eye(i, i) = 1;
    kern.temperature = std::sqrt(double(d));
  }
  matrix<double> project(const matrix<double>& w) const {  // φ W: (n, d)
    matrix<double> out(n, d);
    for (index i = 0; i < n; ++i)
      for (index j = 0; j < d; ++j) {
        double s = 0;
        for (index k = 0; k < f; ++k) s += phi(i, k) * w(k, j);
        out(i, j) = s;
      }
    return out;
  }
  // mean((P − target)²); with grad, [dW_q, dW_k] (row-major, W_q first) through smooth_backward.
  double loss(const matrix<double>& wq, const matrix<double>& wk, const matrix<double>& target,
              matrix<double>& out, std::vector<double>* grad) const {
    const matrix<double> q = project(wq), k = project(wk);
    std::vector<double> lse(static_cast<std::size_t>(n));
    smooth_forward<double>(out.view(), lse, q.cview(), k.cview(), eye.cview(), kern, mask::none());
    double loss = 0;
    matrix<double> dout(n, n);
    for (index i = 0; i < out.size(); ++i) {
      const double e = out.data()[i] - target.data()[i];
      loss += e * e;
      dout.data()[i] = 2 * e / double(out.size());
    }
    if (grad) {
      matrix<double> dq(n, d), dk(n, d);
      smooth_grads<double> gr(dq.view(), dk.view(), {});
      gr.want_dparam = false;
      smooth_backward<double>(gr, dout.cview(), out.cview(), lse, q.cview(), k.cview(), eye.cview(),
                              kern, mask::none());
      // dW = φᵀ d(q or k)
      grad->assign(static_cast<std::size_t>(2 * f * d), 0.0);  // [dW_q (f, d), dW_k (f, d)]
      for (index a = 0; a < f; ++a)
        for (index j = 0; j < d; ++j) {
          double sq = 0, sk = 0;
          for (index i = 0; i < n; ++i) sq += phi(i, a) * dq(i, j), sk += phi(i, a) * dk(i, j);
          (*grad)[static_cast<std::size_t>(a * d + j)] = sq;
          (*grad)[static_cast<std::size_t>(f * d + a * d + j)] = sk;
        }
    }
    return loss / double(out.size());
  }
};

}  // namespace

double attention_mimic_loss(const std::vector<double>& x, double lo, double hi,
                            const matrix<double>& target, const matrix<double>& wq,
                            const matrix<double>& wk, std::vector<double>* grad) {
  const index n = static_cast<index>(x.size());
  const mimic_head head(x, lo, hi, wq.cols());
  if (target.rows() != n || target.cols() != n || wk.cols() != wq.cols() || wq.rows() != head.f ||
      wk.rows() != head.f)
    throw std::invalid_argument("attention_mimic_loss: target must be n x n, W_q and W_k 4 x d");
  matrix<double> out(n, n);
  return head.loss(wq, wk, target, out, grad);
}

mimic_result attention_mimic(const std::vector<double>& x, double lo, double hi,
                             const matrix<double>& target, index d, index steps, double lr,
                             std::uint64_t seed) {
  const index n = static_cast<index>(x.size());
  if (target.rows() != n || target.cols() != n)
    throw std::invalid_argument("attention_mimic: target must be n x n");
  const mimic_head head(x, lo, hi, d);
  const index f = head.f;
  mimic_result r;
  r.target = target;
  std::mt19937_64 rng(seed);
  // W ~ N(0, 1/f): q, k entries of order 1 (φ has f = 4 unit-scale features). W_q drawn first.
  std::normal_distribution<double> g(0.0, 1.0 / std::sqrt(double(f)));
  r.wq = matrix<double>(f, d);
  r.wk = matrix<double>(f, d);
  for (index i = 0; i < r.wq.size(); ++i) r.wq.data()[i] = g(rng);
  for (index i = 0; i < r.wk.size(); ++i) r.wk.data()[i] = g(rng);
  auto rmse = [&](const matrix<double>& a) {
    double s = 0;
    for (index i = 0; i < a.size(); ++i) {
      const double e = a.data()[i] - target.data()[i];
      s += e * e;
    }
    return std::sqrt(s / double(a.size()));
  };
  r.before = matrix<double>(n, n);
  head.loss(r.wq, r.wk, target, r.before, nullptr);
  r.rmse_before = rmse(r.before);
  // Adam on [W_q, W_k].
  const index np = 2 * f * d;
  std::vector<double> m(static_cast<std::size_t>(np)), v(m.size()), grad;
  const double b1 = 0.9, b2 = 0.999;
  matrix<double> out(n, n);
  for (index step = 1; step <= steps; ++step) {
    r.loss.push_back(head.loss(r.wq, r.wk, target, out, &grad));  // the loss before this step
    const double c1 = 1 - std::pow(b1, double(step)), c2 = 1 - std::pow(b2, double(step));
    for (index p = 0; p < np; ++p) {
      const auto pu = static_cast<std::size_t>(p);
      m[pu] = b1 * m[pu] + (1 - b1) * grad[pu];
      v[pu] = b2 * v[pu] + (1 - b2) * grad[pu] * grad[pu];
      double& w = p < f * d ? r.wq.data()[p] : r.wk.data()[p - f * d];
      w -= lr * (m[pu] / c1) / (std::sqrt(v[pu] / c2) + 1e-12);
    }
  }
  r.after = matrix<double>(n, n);
  head.loss(r.wq, r.wk, target, r.after, nullptr);
  r.rmse_after = rmse(r.after);
  return r;
}

}  // namespace kf
