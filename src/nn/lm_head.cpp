#include "kernelformer/nn/lm_head.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "detail/blas.hpp"

namespace kf::nn {

template <class T>
lm_head<T> lm_head<T>::tied(index weight_id, index vocab_size, index channels) {
  lm_head<T> h;
  h.vocab = vocab_size;
  h.c = channels;
  h.w = weight_id;
  return h;
}

template <class T>
lm_head<T>::lm_head(parameters<T>& p, const std::string& name, index channels, index vocab_size,
                    bool bias)
    : vocab(vocab_size), c(channels) {
  w = p.add(name + ".weight", {vocab, c}, init_kind::kaiming_linear, 1.0, c, vocab);
  if (bias) b = p.add(name + ".bias", {vocab}, init_kind::kaiming_linear, 1.0, c, vocab);
}

template <class T>
void lm_head<T>::forward(parameters<T>& p, matrix_view<T> logits, const_matrix_view<T> h) const {
  detail::gemm(false, true, h.rows, vocab, c, T(1), h.data, h.ld, p.value(w), c, T(0), logits.data,
               logits.ld);  // logits = h Wᵀ
  if (b < 0) return;
  const T* bv = p.value(b);
  for (index n = 0; n < logits.rows; ++n)
    for (index v = 0; v < vocab; ++v) logits(n, v) += bv[v];
}

template <class T>
void lm_head<T>::backward(parameters<T>& p, matrix_view<T> dh, const_matrix_view<T> dlogits,
                          const_matrix_view<T> h) const {
  if (!dh.empty())  // dh += dlogits W
    detail::gemm(false, false, dlogits.rows, c, vocab, T(1), dlogits.data, dlogits.ld, p.value(w),
                 c, T(1), dh.data, dh.ld);
  // dW += dlogitsᵀ h
  detail::gemm(true, false, vocab, c, dlogits.rows, T(1), dlogits.data, dlogits.ld, h.data, h.ld,
               T(1), p.grad(w), c);
  if (b < 0) return;
  T* db = p.grad(b);
  for (index n = 0; n < dlogits.rows; ++n)
    for (index v = 0; v < vocab; ++v) db[v] += dlogits(n, v);
}

template <class T>
double cross_entropy(const_matrix_view<T> logits, std::span<const index> targets,
                     matrix_view<T> dlogits) {
  const index n = logits.rows, v = logits.cols;
  if (static_cast<index>(targets.size()) != n)
    throw std::invalid_argument(
        fmt::format("cross_entropy: {} targets for {} rows", targets.size(), n));
  index valid = 0;
  for (index r = 0; r < n; ++r) {
    const index t = targets[static_cast<std::size_t>(r)];
    if (t == -1) continue;
    if (t < 0 || t >= v)
      throw std::out_of_range(
          fmt::format("cross_entropy: target {} at row {} is outside 0..{}", t, r, v - 1));
    ++valid;
  }
  double loss = 0;
  for (index r = 0; r < n; ++r) {
    const index t = targets[static_cast<std::size_t>(r)];
    double mx = -INFINITY, sum = 0;
    for (index j = 0; j < v; ++j) mx = std::max(mx, double(logits(r, j)));
    for (index j = 0; j < v; ++j) sum += std::exp(double(logits(r, j)) - mx);
    if (t != -1) loss += std::log(sum) + mx - double(logits(r, t));
    if (dlogits.empty()) continue;
    for (index j = 0; j < v; ++j) {
      const double pj = std::exp(double(logits(r, j)) - mx) / sum;
      dlogits(r, j) = t == -1 ? T(0) : static_cast<T>((pj - (j == t ? 1.0 : 0.0)) / double(valid));
    }
  }
  return valid > 0 ? loss / double(valid) : 0.0;
}

template struct lm_head<float>;
template struct lm_head<double>;
template double cross_entropy<float>(const_matrix_view<float>, std::span<const index>,
                                     matrix_view<float>);
template double cross_entropy<double>(const_matrix_view<double>, std::span<const index>,
                                      matrix_view<double>);

}  // namespace kf::nn
