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

}  // namespace kf::detail
