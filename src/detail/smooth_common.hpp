// Internal: what the fast path and the reference share — argument checks at the API edge, the
// resolved kernel split into factors (column blocks), and per-dimension bandwidth scaling.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "detail/counter_mask.hpp"
#include "detail/feature_maps.hpp"
#include "detail/isa_dispatch.hpp"
#include "kernelformer/kernels.hpp"
#include "kernelformer/masks.hpp"
#include "kernelformer/smooth.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::detail {

// One factor of a kernel_spec: a kernel acting on columns [c0, c1) of q and k.
struct factor {
  any_kernel kern;
  index c0 = 0, c1 = 0;
  kernel_arg arg = kernel_arg::dot;
  bool log_domain = true;
  bool compact = false;
  std::shared_ptr<const feature_kernel> features;  // feature-map kernels: φ (else null)
};

struct resolved_kernel {
  kernel_spec spec;
  std::vector<factor> factors;  // 1 or 2
  bool log_domain = true;       // accumulation domain (a product is always log domain)
  // Feature-map kernels: weights φ(q)ᵀφ(k) are summed with their sign (rff's can be negative),
  // and a row whose sum is ≤ 0 is an empty row (feature_kernels.hpp).
  const feature_kernel* features() const { return factors[0].features.get(); }
};

inline resolved_kernel resolve(const kernel_spec& k, index d, bool is_float) {
  resolved_kernel r;
  r.spec = kernel_resolve(k, d, is_float);
  auto make = [](const any_kernel& a, index c0, index c1) {
    return factor{a, c0, c1, kernel_arg_of(a), kernel_log_domain(a), kernel_compact(a), nullptr};
  };
  if (r.spec.is_product()) {
    r.factors = {make(r.spec.first, 0, r.spec.split), make(*r.spec.second, r.spec.split, d)};
    r.log_domain = true;
  } else {
    r.factors = {make(r.spec.first, 0, d)};
    r.log_domain = r.factors[0].log_domain;
    if (r.factors[0].arg == kernel_arg::features)
      r.factors[0].features =
          std::make_shared<const feature_kernel>(feature_kernel_of(r.spec.first, d));
  }
  return r;
}

template <class T>
void check_finite(const_matrix_view<T> a, const char* what) {
  for (index i = 0; i < a.rows; ++i)
    for (index j = 0; j < a.cols; ++j)
      if (!std::isfinite(a(i, j)))
        throw std::invalid_argument(std::string("smooth: ") + what +
                                    " has a non-finite value at row " + std::to_string(i) +
                                    ", column " + std::to_string(j));
}

// Weight dropout (smooth_options::dropout): p_ij is kept when the shared counter mask keeps
// element i·m + j of the call; kept weights are scaled by 1/(1 − rate).
struct dropout_mask {
  counter_mask bits;
  index m = 0;
  double scale = 1;
  bool active = false;
  dropout_mask() = default;
  dropout_mask(const smooth_options& opt, index keys)
      : bits(opt.dropout_seed, opt.dropout),
        m(keys),
        scale(1.0 / (1.0 - opt.dropout)),
        active(opt.dropout > 0) {}
  bool keep(index i, index j) const { return bits.keep(static_cast<std::uint32_t>(i * m + j)); }
  // f[b] = the factor (0 or scale) of p_{i, j0+b}, b < count.
  template <class T>
  void row(index i, index j0, index count, T* f) const {
    const auto base = static_cast<std::uint32_t>(i * m + j0);
    const T s = static_cast<T>(scale);
    for (index b = 0; b < count; ++b)
      f[b] = bits.keep(base + static_cast<std::uint32_t>(b)) ? s : T(0);
  }
};

inline void check_shape(bool ok, const std::string& msg) {
  if (!ok) throw std::invalid_argument("smooth: " + msg);
}

// Shapes, finiteness, options. `v` may be empty-columned (dv = 0) for weight-only calls.
template <class T>
void validate_inputs(const_matrix_view<T> q, const_matrix_view<T> k, const_matrix_view<T> v,
                     bool check_v, const mask& msk, const smooth_options& opt,
                     const resolved_kernel& rk) {
  check_shape(q.cols == k.cols, "queries have d = " + std::to_string(q.cols) +
                                    " columns but keys have " + std::to_string(k.cols));
  check_shape(q.cols >= 1, "queries and keys need at least one column");
  check_shape(k.rows >= 1, "at least one key is needed");
  if (check_v)
    check_shape(v.rows == k.rows, "values have " + std::to_string(v.rows) + " rows but there are " +
                                      std::to_string(k.rows) + " keys");
  if (opt.check_finite) {
    check_finite(q, "queries");
    check_finite(k, "keys");
    if (check_v) check_finite(v, "values");
  }
  msk.validate(q.rows, k.rows);
  if (rk.features()) {
    std::vector<index> len;
    check_shape(msk.prefix_lengths(q.rows, k.rows, len),
                "feature-map kernel " + kernel_describe(rk.spec) +
                    " takes the masks none, causal[:offset] and padding (each row a prefix of the "
                    "keys, summed as prefix sums), not '" +
                    msk.describe() + "'");
    check_shape(opt.dropout == 0, "dropout is not offered with feature-map kernels (" +
                                      kernel_describe(rk.spec) +
                                      "): the route never forms the weights it would drop");
  }
  check_shape(opt.dropout >= 0 && opt.dropout < 1,
              "dropout = " + std::to_string(opt.dropout) + " must be in [0, 1)");
  check_shape(opt.dropout == 0 || msk.topk_k() == 0, "dropout is not offered with a top-k mask");
  if (!opt.bandwidth_per_dim.empty()) {
    check_shape(static_cast<index>(opt.bandwidth_per_dim.size()) == q.cols,
                "bandwidth_per_dim has " + std::to_string(opt.bandwidth_per_dim.size()) +
                    " entries but d = " + std::to_string(q.cols));
    check_shape(!rk.spec.is_product() && (rk.factors[0].arg == kernel_arg::sqdist ||
                                          std::holds_alternative<kernel_rff>(rk.factors[0].kern)),
                "per-dimension bandwidths apply to distance kernels (and rff) only, not " +
                    kernel_describe(rk.spec));
    for (std::size_t c = 0; c < opt.bandwidth_per_dim.size(); ++c) {
      const double h = opt.bandwidth_per_dim[c];
      check_shape(std::isfinite(h) && h > 0, "bandwidth_per_dim[" + std::to_string(c) +
                                                 "] = " + std::to_string(h) +
                                                 " must be positive and finite");
    }
  }
}

// A number for a message: 3 significant digits ("1e-160", not "0.000000").
inline std::string short_number(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", x);
  return b;
}

// Scale before squaring (smooth_forward, smooth_weights). A single distance kernel whose one
// length is its bandwidth h (gaussian, laplacian, cauchy, rational quadratic, the compact
// kernels) computes -|q - k|^2 / (2h^2) and the like: with h below sqrt(T's smallest normal)
// h^2 underflows (every weight 0, or NaN), and with |q|, |k| or h beyond sqrt(T's largest) a
// square overflows. There the call is rewritten to the per-dimension route with h_c = h and
// bandwidth 1, which divides q and k by h first: the same weights, computed where T holds
// them. Inputs whose ratio to h exceeds T's range cannot be scaled either way:
// std::invalid_argument says so. Returns true when kern and opt were rewritten.
template <class T>
bool rescale_extreme(kernel_spec& kern, smooth_options& opt, const_matrix_view<T> q,
                     const_matrix_view<T> k) {
  if (kern.is_product() || !opt.bandwidth_per_dim.empty()) return false;
  const bool length_only = std::visit(
      [](const auto& kk) {
        using K = std::decay_t<decltype(kk)>;
        return std::is_same_v<K, kernel_gaussian> || std::is_same_v<K, kernel_laplacian> ||
               std::is_same_v<K, kernel_cauchy> || std::is_same_v<K, kernel_rational_quadratic> ||
               K::compact;
      },
      kern.first);
  const double h = kernel_param(kern.first);
  if (!length_only || !(h > 0) || !std::isfinite(h)) return false;  // resolve() reports bad h
  const double lo = std::sqrt(double(std::numeric_limits<T>::min())) * 1e3,
               hi = std::sqrt(double(std::numeric_limits<T>::max())) * 1e-3;
  double big = 0;
  for (const auto* a : {&q, &k})
    for (index i = 0; i < a->rows; ++i)
      for (index c = 0; c < a->cols; ++c) big = std::max(big, std::abs(double((*a)(i, c))));
  if (h >= lo && h <= hi && big <= hi) return false;
  if (big / h > double(std::numeric_limits<T>::max()) * 1e-3)
    throw std::invalid_argument(
        "smooth: bandwidth " + short_number(h) + " is too small for inputs as large as " +
        short_number(big) + ": their ratio exceeds the floating-point range (rescale the inputs)");
  opt.bandwidth_per_dim.assign(static_cast<std::size_t>(q.cols), h);
  kernel_set_param(kern.first, 1.0);
  return true;
}

// q and k divided column-wise by the per-dimension bandwidths (or the originals, unscaled).
template <class T>
struct scaled_inputs {
  matrix<T> qbuf, kbuf;
  const_matrix_view<T> q, k;
  bool scaled = false;
};

template <class T>
scaled_inputs<T> scale_inputs(const_matrix_view<T> q, const_matrix_view<T> k,
                              const smooth_options& opt) {
  scaled_inputs<T> s;
  s.q = q;
  s.k = k;
  if (opt.bandwidth_per_dim.empty()) return s;
  s.scaled = true;
  auto scale = [&](const_matrix_view<T> a, matrix<T>& buf) {
    buf = matrix<T>(a.rows, a.cols);
    for (index i = 0; i < a.rows; ++i)
      for (index c = 0; c < a.cols; ++c)
        buf(i, c) = static_cast<T>(a(i, c) / opt.bandwidth_per_dim[static_cast<std::size_t>(c)]);
  };
  scale(q, s.qbuf);
  scale(k, s.kbuf);
  s.q = s.qbuf.cview();
  s.k = s.kbuf.cview();
  return s;
}

// Chain rule for per-dimension bandwidths: with q' = q / h_c the backward produced dq', dk';
// dq += dq' / h_c, dk += dk' / h_c, dh_c += −(Σ_i dq'_ic q'_ic + Σ_j dk'_jc k'_jc) / h_c.
template <class T>
void unscale_grads(smooth_grads<T>& g, const matrix<T>& dqs, const matrix<T>& dks,
                   const scaled_inputs<T>& s, const smooth_options& opt) {
  const index d = s.q.cols;
  if (g.dbandwidth_per_dim.size() != static_cast<std::size_t>(d))
    g.dbandwidth_per_dim.assign(static_cast<std::size_t>(d), 0.0);
  for (index c = 0; c < d; ++c) {
    const double h = opt.bandwidth_per_dim[static_cast<std::size_t>(c)];
    double acc = 0;
    for (index i = 0; i < dqs.rows(); ++i) {
      acc += double(dqs(i, c)) * double(s.q(i, c));
      if (!g.dq.empty()) g.dq(i, c) += static_cast<T>(dqs(i, c) / h);
    }
    for (index j = 0; j < dks.rows(); ++j) {
      acc += double(dks(j, c)) * double(s.k(j, c));
      if (!g.dk.empty()) g.dk(j, c) += static_cast<T>(dks(j, c) / h);
    }
    g.dbandwidth_per_dim[static_cast<std::size_t>(c)] += -acc / h;
  }
}

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

}  // namespace kf::detail
