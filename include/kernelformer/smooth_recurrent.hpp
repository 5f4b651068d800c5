// kernelformer/smooth_recurrent.hpp — the causal feature-map route of the primitive as a recurrence
// (an RNN): one key and one query at a time, O(r·(d + dv)) per step whatever the keys seen.
//
// For a feature-map kernel (elu1, rff, favor: feature_kernels.hpp) the state after keys 0..j−1 is
//   S = Σ_j φ(k_j) v_jᵀ   (r × dv)        z = Σ_j φ(k_j)   (r)
// and a query row gets out = φ(q)ᵀS / φ(q)ᵀz, lse = log φ(q)ᵀz — exactly smooth_forward's row i
// under a causal mask once keys 0..i are appended (tests/test_smooth_recurrent.cpp ties the two).
// favor's features are stabilized as the route's are: each φ(k) is stored as exp(u − c) with c
// the largest exponent seen so far (the state is rescaled when a larger one arrives) and the
// log-scale folded into lse. A row whose φ(q)ᵀz ≤ 0 (rff) or that sees no key is an empty row:
// out = 0, lse = −inf. Token generation keeps one state per layer and head (model/generation.hpp).
#pragma once

#include <memory>
#include <span>

#include "kernelformer/kernels.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

template <class T>
class smooth_recurrent {
 public:
  smooth_recurrent();
  // d: key/query columns, dv: value columns. Throws std::invalid_argument unless `kern` is a
  // feature-map kernel (or its parameters are invalid for width d).
  smooth_recurrent(const kernel_spec& kern, index d, index dv);
  smooth_recurrent(smooth_recurrent&&) noexcept;
  smooth_recurrent& operator=(smooth_recurrent&&) noexcept;
  ~smooth_recurrent();

  // Adds key k (d entries) with value v (dv entries).
  void append(std::span<const T> k, std::span<const T> v);
  // out (dv entries) = the smoothed value of query q (d entries) over every key appended so far;
  // returns lse (−inf for an empty row, whose out is 0).
  T query(std::span<T> out, std::span<const T> q) const;
  index size() const;  // keys appended
  void clear();        // forget every key (the features are kept)

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};

}  // namespace kf
