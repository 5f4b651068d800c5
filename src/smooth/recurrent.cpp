// The recurrent form of the feature-map route (kernelformer/smooth_recurrent.hpp): one state
// [S | z] of r × (dv + 1) numbers, its log-scale, and φ computed by the route's own blocks.
#include "kernelformer/smooth_recurrent.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "detail/feature_maps.hpp"

namespace kf {

template <class T>
struct smooth_recurrent<T>::impl {
  detail::feature_kernel fk;
  detail::feature_weights<T> fw;
  index d = 0, dv = 0, r = 0, count = 0;
  matrix<T> s;    // r × (dv + 1): [Σ φ(k) vᵀ | Σ φ(k)], each φ(k) times e^{−ls}
  double ls = 0;  // the log-scale of the state: the true sums are e^{ls} · s
  mutable matrix<T> phi, nd;  // 1 × r: φ of the row at hand; 1 × (dv + 1): φ(q)ᵀ[S | z]
  mutable double ls_row = 0;  // the log-scale taken out of phi
  // phi ← φ(x) for one row, stabilized by the row's own largest exponent (favor), its log-scale
  // into ls_row: the same feature_block the batch route uses, so both give the same features.
  void features(std::span<const T> x) const {
    detail::feature_block(fk, fw, const_matrix_view<T>(x.data(), 1, d), phi.view(), &ls_row,
                          nullptr);
  }
};

template <class T>
smooth_recurrent<T>::smooth_recurrent() = default;
template <class T>
smooth_recurrent<T>::smooth_recurrent(smooth_recurrent&&) noexcept = default;
template <class T>
smooth_recurrent<T>& smooth_recurrent<T>::operator=(smooth_recurrent&&) noexcept = default;
template <class T>
smooth_recurrent<T>::~smooth_recurrent() = default;

// Resolves the kernel for width d (auto T, parameter checks) and takes W from feature_map_draw's
// cache; the state starts at zero: s (r, dv + 1), phi (1, r), nd (1, dv + 1).
template <class T>
smooth_recurrent<T>::smooth_recurrent(const kernel_spec& kern, index d, index dv)
    : p_(std::make_unique<impl>()) {
  if (d < 1 || dv < 0)
    throw std::invalid_argument("smooth_recurrent: needs d >= 1 key columns and dv >= 0 values");
  const kernel_spec k = kernel_resolve(kern, d, std::is_same_v<T, float>);
  if (k.is_product() || !kernel_is_feature_map(k.first))
    throw std::invalid_argument("smooth_recurrent: '" + kernel_describe(k) +
                                "' is not a feature-map kernel (elu1, rff, favor); exact kernels "
                                "keep their keys (a KV cache) instead");
  impl& p = *p_;
  p.fk = detail::feature_kernel_of(k.first, d);
  p.fw = detail::feature_weights_of<T>(p.fk);
  p.d = d;
  p.dv = dv;
  p.r = p.fk.r;
  p.s = matrix<T>(p.r, dv + 1);
  p.phi = matrix<T>(1, p.r);
  p.nd = matrix<T>(1, dv + 1);
}

// O(r·(d + dv)) per key. Throws std::logic_error on a default-constructed object and
// std::invalid_argument on wrong sizes; the state is unchanged when it throws.
template <class T>
void smooth_recurrent<T>::append(std::span<const T> k, std::span<const T> v) {
  if (!p_)
    throw std::logic_error("smooth_recurrent::append: a default-constructed state has no kernel");
  impl& p = *p_;
  if (static_cast<index>(k.size()) != p.d || static_cast<index>(v.size()) != p.dv)
    throw std::invalid_argument(
        "smooth_recurrent::append: the key needs d = " + std::to_string(p.d) +
        " entries and the value dv = " + std::to_string(p.dv));
  p.features(k);
  // Bring the state and the new key to the larger of the two log-scales (favor; 0 otherwise).
  T f = T(1);
  if (p.count == 0) {
    p.ls = p.ls_row;
  } else if (p.ls_row > p.ls) {
    // The new key is the largest so far: the state shrinks (factor ≤ 1), so nothing can overflow.
    const T down = static_cast<T>(std::exp(p.ls - p.ls_row));
    for (T& x : p.s.values()) x *= down;
    p.ls = p.ls_row;
  } else {
    // Otherwise the new key's features are scaled down into the state's scale (f ≤ 1).
    f = static_cast<T>(std::exp(p.ls_row - p.ls));
  }
  const index sw = p.dv + 1;
  for (index l = 0; l < p.r; ++l) {
    const T a = f * p.phi(0, l);
    T* sl = p.s.data() + l * sw;
    for (index c = 0; c < p.dv; ++c) sl[c] += a * v[static_cast<std::size_t>(c)];  // S += φ vᵀ
    sl[p.dv] += a;                                                                 // z += φ
  }
  ++p.count;
}

// O(r·(d + dv)) per query; const (only the mutable row buffers change), so one state serves
// many queries. Throws as append does, and std::overflow_error on a non-finite feature sum.
template <class T>
T smooth_recurrent<T>::query(std::span<T> out, std::span<const T> q) const {
  if (!p_)
    throw std::logic_error("smooth_recurrent::query: a default-constructed state has no kernel");
  const impl& p = *p_;
  if (static_cast<index>(q.size()) != p.d || static_cast<index>(out.size()) != p.dv)
    throw std::invalid_argument(
        "smooth_recurrent::query: the query needs d = " + std::to_string(p.d) +
        " entries and out dv = " + std::to_string(p.dv));
  std::fill(out.begin(), out.end(), T(0));
  if (p.count == 0) return -std::numeric_limits<T>::infinity();
  p.features(q);
  const index sw = p.dv + 1;
  T* nd = p.nd.data();
  std::fill(nd, nd + sw, T(0));
  for (index l = 0; l < p.r; ++l) {  // [N | D] = φ(q)ᵀ [S | z]
    const T a = p.phi(0, l);
    const T* sl = p.s.data() + l * sw;
    for (index c = 0; c < sw; ++c) nd[c] += a * sl[c];
  }
  const T dsum = nd[p.dv];
  if (!std::isfinite(dsum))
    throw std::overflow_error(
        "smooth_recurrent: the feature-map sum overflowed (inputs beyond the floating-point range "
        "of φ)");
  if (!(dsum > T(0))) return -std::numeric_limits<T>::infinity();
  for (index c = 0; c < p.dv; ++c) out[static_cast<std::size_t>(c)] = nd[c] / dsum;
  // True sum = e^{ls_row + ls} · dsum: both scales go back into lse; they cancel in out.
  return static_cast<T>(std::log(double(dsum)) + p.ls_row + p.ls);
}

template <class T>
index smooth_recurrent<T>::size() const {
  return p_ ? p_->count : 0;
}

template <class T>
void smooth_recurrent<T>::clear() {
  if (!p_) return;
  std::fill(p_->s.values().begin(), p_->s.values().end(), T(0));
  p_->ls = 0;
  p_->count = 0;
}

template class smooth_recurrent<float>;
template class smooth_recurrent<double>;

}  // namespace kf
