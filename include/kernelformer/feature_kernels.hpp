// kernelformer/feature_kernels.hpp — kernels given by an explicit, finite feature map φ.
//
// Seed 001 introduces a kernel as a generalized dot product, K(q, k) = φ(q)ᵀφ(k). When φ has r
// explicit features, the smoother needs no n × m pass:
//   out_i = φ(q_i)ᵀ (Σ_j φ(k_j) v_jᵀ) / φ(q_i)ᵀ (Σ_j φ(k_j)),   O((n + m)·r·dv)
// and a causal mask is a running prefix sum (smooth.hpp's feature route, src/smooth/features.cpp).
//   elu1   φ(x) = elu(x) + 1 per column (r = d): linear attention (Katharopoulos et al. 2020)
//   rff    φ(x) = √(2/r) [cos(Wx/h), sin(Wx/h)], W (r/2 × d) i.i.d. N(0, 1): random Fourier
//          features, E φ(q)ᵀφ(k) = exp(−|q − k|²/(2h²)), the gaussian kernel (Rahimi & Recht 2007)
//   favor  φ(x) = exp(Wx' − |x'|²/2)/√r, x' = x/√T, W (r × d) blocks of orthogonal rows with
//          χ_d norms: positive orthogonal random features, E φ(q)ᵀφ(k) = exp(q·k/T) (FAVOR+,
//          Choromanski et al. 2021), T = √d by default as exp_dot's
// W is a pure function of (seed, r, d): the same in forward and backward, float and double, and
// in every process (detail/feature_maps.cpp draws it from a counter-based generator).
//
// In the scalar interface every other kernel has, these are the linear kernel in feature space:
// the argument is s = φ(q)ᵀφ(k) (kernel_arg::features) and K = s, summed directly (not in the
// log domain). rff's features are signed, so a row's sum can be ≤ 0: such a row follows the
// primitive's empty-row policy (out = 0, lse = −inf, counted in smooth_stats::empty_rows).
// The parameters (h, T) enter through φ, so dweight_dparam here is 0; the primitive computes
// their gradient from the inputs' gradients (φ depends on x/h or x/√T only).
// `redraw=1` (fresh features at every training step) is honoured by the attention layers in
// training (kernel_with_draw, kernels.hpp); kernel_resolve refuses it, so one smoothing call
// always uses the features of `seed`.
#pragma once

#include <cstdint>
#include <string_view>

#include "kernelformer/tensor.hpp"

namespace kf {

enum class kernel_arg { dot, sqdist, features };

#define KF_FEATURE_KERNEL_COMMON()                           \
  static constexpr kernel_arg arg = kernel_arg::features;    \
  static constexpr bool log_domain = false, compact = false; \
  template <class T>                                         \
  T weight(T s) const {                                      \
    return s;                                                \
  }                                                          \
  template <class T>                                         \
  T dweight(T) const {                                       \
    return T(1);                                             \
  }                                                          \
  double dweight_dparam(double) const { return 0.0; }

// K = Σ_c (elu(q_c) + 1)(elu(k_c) + 1): positive, no parameter, no randomness.
struct kernel_elu1 {
  static constexpr std::string_view name = "elu1";
  static constexpr std::string_view doc =
      "phi(x) = elu(x) + 1 per column, K = phi(q).phi(k): linear attention (features)";
  KF_FEATURE_KERNEL_COMMON()
  double param() const { return 0.0; }
  void set_param(double) {}
};

// K ≈ exp(−|q − k|²/(2h²)) by r random Fourier features (r even; signed).
struct kernel_rff {
  static constexpr std::string_view name = "rff";
  static constexpr std::string_view doc =
      "random Fourier features ~ gaussian(h): features=R (even, 256), seed=S, redraw=0|1";
  KF_FEATURE_KERNEL_COMMON()
  double bandwidth = 1.0;
  index features = 256;
  std::uint64_t seed = 0;
  bool redraw = false;
  double param() const { return bandwidth; }
  void set_param(double h) { bandwidth = h; }
};

// K ≈ exp(q·k/T) by r positive orthogonal random features; T = 0 means √d.
struct kernel_favor {
  static constexpr std::string_view name = "favor";
  static constexpr std::string_view doc =
      "FAVOR+ positive orthogonal features ~ exp(q.k/T): features=R (256), seed=S, redraw=0|1";
  KF_FEATURE_KERNEL_COMMON()
  double temperature = 0.0;
  index features = 256;
  std::uint64_t seed = 0;
  bool redraw = false;
  double param() const { return temperature; }
  void set_param(double t) { temperature = t; }
};
#undef KF_FEATURE_KERNEL_COMMON

}  // namespace kf
