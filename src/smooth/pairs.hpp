// Internal: the primitive's row code in double — one query row against explicit keys: the pair
// arguments, the row's keys under a mask (top-k by sorting), the row's normalized weights, out and
// lse, and the row's backward. The reference (reference.cpp), smooth_weights (weights.cpp) and the
// top-k route's exact evaluation of the selected pairs (topk.cpp) run it.
#pragma once

#include <algorithm>
#include <numeric>
#include <variant>
#include <vector>

#include "smooth/common.hpp"

namespace kf::detail {

// s = φ(q)ᵀφ(k) of a feature-map kernel, in double; with gq, gk also J_φ(q)ᵀφ(k) and
// J_φ(k)ᵀφ(q) times `g` added to gq, gk (d entries each).
template <class T>
double pair_features(const feature_kernel& fk, const T* qi, const T* kj, double g = 0,
                     double* gq = nullptr, double* gk = nullptr) {
  const auto d = static_cast<std::size_t>(fk.d), r = static_cast<std::size_t>(fk.r);
  std::vector<double> x(2 * d), phi(2 * r);
  for (std::size_t c = 0; c < d; ++c) x[c] = double(qi[c]), x[d + c] = double(kj[c]);
  feature_row(fk, x.data(), phi.data());
  feature_row(fk, x.data() + d, phi.data() + r);
  double s = 0;
  for (std::size_t l = 0; l < r; ++l) s += phi[l] * phi[r + l];
  if (gq == nullptr) return s;
  for (std::size_t l = 0; l < 2 * r; ++l) phi[l] *= g;
  feature_row_vjp(fk, x.data(), phi.data() + r, gq);
  feature_row_vjp(fk, x.data() + d, phi.data(), gk);
  return s;
}

// Scalar kernel argument s for one (query row, key row) pair on a factor's columns, in double.
template <class T>
double pair_arg(const T* qi, const T* kj, const factor& f) {
  if (f.features) return pair_features(*f.features, qi + f.c0, kj + f.c0);
  double s = 0;
  if (f.arg == kernel_arg::dot) {
    for (index c = f.c0; c < f.c1; ++c) s += double(qi[c]) * double(kj[c]);
  } else {
    for (index c = f.c0; c < f.c1; ++c) {
      const double t = double(qi[c]) - double(kj[c]);
      s += t * t;
    }
  }
  return s;
}

template <class T>
double pair_sqdist(const T* qi, const T* kj, index d) {
  double s = 0;
  for (index c = 0; c < d; ++c) {
    const double t = double(qi[c]) - double(kj[c]);
    s += t * t;
  }
  return s;
}

// ---- one query row evaluated exactly, pair by pair, in double (reference and top-k paths) ----

struct row_eval {
  std::vector<index> keys;   // the selected keys, ascending
  std::vector<double> s[2];  // kernel argument per factor, per selected key
  std::vector<double> w[2];  // weight per factor in that factor's own domain
  std::vector<double> p;     // normalized weights
  double lse = -std::numeric_limits<double>::infinity();  // log Σ w
  bool empty = true;
};

// The combined log-weight of one factor's weight value.
inline double to_log(const factor& f, double w) {
  return f.log_domain ? w : (w > 0 ? std::log(w) : -std::numeric_limits<double>::infinity());
}

template <class T>
row_eval evaluate_pairs(index i, std::vector<index> keys, const_matrix_view<T> q,
                        const_matrix_view<T> k, const resolved_kernel& rk) {
  constexpr double ninf = -std::numeric_limits<double>::infinity();
  row_eval r;
  r.keys = std::move(keys);
  std::vector<double> logw(r.keys.size(), 0.0);
  double mx = ninf;
  for (std::size_t a = 0; a < r.keys.size(); ++a) {
    for (std::size_t f = 0; f < rk.factors.size(); ++f) {
      const double s = pair_arg(q.row(i), k.row(r.keys[a]), rk.factors[f]);
      const double w = visit_inline([&](const auto& kk) { return kk.template weight<double>(s); },
                                    rk.factors[f].kern);
      r.s[f].push_back(s);
      r.w[f].push_back(w);
      logw[a] += to_log(rk.factors[f], w);
    }
    mx = std::max(mx, logw[a]);
  }
  if (mx == std::numeric_limits<double>::infinity())
    throw std::overflow_error("smooth: a kernel log-weight overflowed to +inf in query row " +
                              std::to_string(i) + " (|q.k| / T beyond the floating-point range)");
  r.p.assign(r.keys.size(), 0.0);
  if (rk.features()) {  // signed weights: p = w / Σw where Σw > 0, else the empty-row policy
    double sum = 0;
    for (double w : r.w[0]) sum += w;
    if (!(sum > 0)) return r;
    for (std::size_t a = 0; a < r.keys.size(); ++a) r.p[a] = r.w[0][a] / sum;
    r.lse = std::log(sum);
    r.empty = false;
    return r;
  }
  if (mx == ninf) return r;  // the empty-row policy
  double sum = 0;
  for (double l : logw) sum += std::exp(l - mx);
  for (std::size_t a = 0; a < r.keys.size(); ++a) r.p[a] = std::exp(logw[a] - mx) / sum;
  r.lse = mx + std::log(sum);
  r.empty = false;
  return r;
}

// Accumulates one evaluated row's gradients, in double: dq_i (d entries), dk (m×d, row-major),
// dv (optional view) and dparam. The rule of smooth.hpp, written once.
template <class T>
void row_backward(const row_eval& r, index i, const_matrix_view<T> dout, const_matrix_view<T> v,
                  const_matrix_view<T> q, const_matrix_view<T> k, const resolved_kernel& rk,
                  double* dq_i, std::vector<double>& dk, matrix_view<T> dv, double* dparam,
                  const dropout_mask& drop = {}) {
  if (r.empty) return;
  const index d = q.cols, nv = v.cols;
  // Weight dropout: out_i = Σ_j p_ij m_ij v_j (m = 0 or 1/(1 − rate)), normalizer unchanged.
  auto mf = [&](index j) { return !drop.active ? 1.0 : (drop.keep(i, j) ? drop.scale : 0.0); };
  std::vector<double> o(static_cast<std::size_t>(nv), 0.0);
  for (std::size_t a = 0; a < r.keys.size(); ++a)
    for (index c = 0; c < nv; ++c)
      o[static_cast<std::size_t>(c)] += r.p[a] * mf(r.keys[a]) * double(v(r.keys[a], c));
  const double sumw = std::exp(r.lse);
  for (std::size_t a = 0; a < r.keys.size(); ++a) {
    const index j = r.keys[a];
    const double mj = mf(j);
    double g = 0;  // dout_i · (m_ij v_j − out_i)
    for (index c = 0; c < nv; ++c)
      g += double(dout(i, c)) * (mj * double(v(j, c)) - o[static_cast<std::size_t>(c)]);
    if (!dv.empty())
      for (index c = 0; c < nv; ++c) dv(j, c) += static_cast<T>(r.p[a] * mj * double(dout(i, c)));
    for (std::size_t f = 0; f < rk.factors.size(); ++f) {
      const factor& fa = rk.factors[f];
      const double s = r.s[f][a], w = r.w[f][a];
      // cf = d loss / d (this factor's weight value, in its own domain)
      double cf;
      if (fa.log_domain)
        cf = r.p[a] * g;
      else if (!rk.log_domain)
        cf = g / sumw;  // direct single kernel: d out_i / d w_j = (v_j − out_i) / Σw
      else
        cf = w > 0 ? r.p[a] * g / w : 0.0;  // direct factor inside a product: d log w = dw / w
      double dw_ds = 0;
      visit_inline(
          [&](const auto& kk) {
            dw_ds = kk.template dweight<double>(s);
            dparam[f] += cf * kk.dweight_dparam(s);
          },
          fa.kern);
      const double ds = cf * dw_ds;
      if (ds == 0) continue;
      if (fa.features) {  // s = φ(q)ᵀφ(k): ds through both feature maps
        std::vector<double> gk(static_cast<std::size_t>(d), 0.0);
        pair_features(*fa.features, q.row(i), k.row(j), ds, dq_i, gk.data());
        for (index c = 0; c < d; ++c)
          dk[static_cast<std::size_t>(j * d + c)] += gk[static_cast<std::size_t>(c)];
        continue;
      }
      for (index c = fa.c0; c < fa.c1; ++c) {
        const double qc = double(q(i, c)), kc = double(k(j, c));
        dq_i[c] += ds * (fa.arg == kernel_arg::dot ? kc : 2 * (qc - kc));
        dk[static_cast<std::size_t>(j * d + c)] +=
            ds * (fa.arg == kernel_arg::dot ? qc : -2 * (qc - kc));
      }
    }
  }
}

// Adds double gradient buffers (n×d, m×d) into the views of grads — or, with per-dimension
// bandwidths, chains them through the scaling.
template <class T>
void add_grads(smooth_grads<T>& g, const std::vector<double>& dq, const std::vector<double>& dk,
               const scaled_inputs<T>& sc, const smooth_options& opt, bool chain_scaling) {
  const index n = sc.q.rows, m = sc.k.rows, d = sc.q.cols;
  if (sc.scaled && chain_scaling) {
    matrix<T> dqs(n, d), dks(m, d);
    for (index t = 0; t < n * d; ++t)
      dqs.data()[t] = static_cast<T>(dq[static_cast<std::size_t>(t)]);
    for (index t = 0; t < m * d; ++t)
      dks.data()[t] = static_cast<T>(dk[static_cast<std::size_t>(t)]);
    unscale_grads(g, dqs, dks, sc, opt);
    return;
  }
  if (!g.dq.empty())
    for (index i = 0; i < n; ++i)
      for (index c = 0; c < d; ++c)
        g.dq(i, c) += static_cast<T>(dq[static_cast<std::size_t>(i * d + c)]);
  if (!g.dk.empty())
    for (index j = 0; j < m; ++j)
      for (index c = 0; c < d; ++c)
        g.dk(j, c) += static_cast<T>(dk[static_cast<std::size_t>(j * d + c)]);
}

// Selects the keys of row i: mask predicates, then top-k by sorting all candidates.
template <class T>
std::vector<index> select_row(index i, const_matrix_view<T> q, const_matrix_view<T> k,
                              const resolved_kernel& rk, const mask& msk) {
  std::vector<index> cand;
  std::vector<double> cand_l, cand_r2;
  const bool topk = msk.topk_k() > 0;
  for (index j = 0; j < k.rows; ++j) {
    const bool need_r2 = msk.needs_distance() || topk;
    const double r2 = need_r2 ? pair_sqdist(q.row(i), k.row(j), q.cols) : 0.0;
    if (!msk.allows(i, j, r2)) continue;
    cand.push_back(j);
    if (!topk) continue;
    double l = 0;
    for (const auto& f : rk.factors) {
      const double s = pair_arg(q.row(i), k.row(j), f);
      l += to_log(
          f, std::visit([&](const auto& kk) { return kk.template weight<double>(s); }, f.kern));
    }
    cand_l.push_back(l);
    cand_r2.push_back(r2);
  }
  if (!topk || static_cast<index>(cand.size()) <= msk.topk_k()) return cand;
  std::vector<std::size_t> order(cand.size());
  std::iota(order.begin(), order.end(), 0);
  const bool by_w = msk.topk_by() == topk_rank::weight;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (by_w && cand_l[a] != cand_l[b]) return cand_l[a] > cand_l[b];
    if (cand_r2[a] != cand_r2[b]) return cand_r2[a] < cand_r2[b];
    return cand[a] < cand[b];
  });
  order.resize(static_cast<std::size_t>(msk.topk_k()));
  std::vector<index> keys;
  for (std::size_t o : order) keys.push_back(cand[o]);
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace kf::detail
