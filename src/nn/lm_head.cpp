#include "kernelformer/nn/lm_head.hpp"

#include "detail/eigen.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "detail/blas.hpp"
#include "nn/elementwise.hpp"

namespace kf::nn {

// Tied head: registers nothing and has no bias; forward reads and backward accumulates into the
// embedding's (V, C) weight, so one gradient collects both uses.
template <class T>
lm_head<T> lm_head<T>::tied(index weight_id, index vocab_size, index channels) {
  lm_head<T> h;
  h.vocab = vocab_size;
  h.c = channels;
  h.w = weight_id;
  return h;
}

// Untied head: W (V, C) and b (V) with nn.Linear(C, V)'s U(±1/√C) init (fan_in = C).
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
               logits.ld);  // logits = h Wᵀ      (N, V) = (N, C)·(C, V); beta = 0 overwrites
  if (b < 0) return;        // tied heads have no bias
  const T* bv = p.value(b);
  for (index n = 0; n < logits.rows; ++n)
    for (index v = 0; v < vocab; ++v) logits(n, v) += bv[v];  // + b, broadcast over rows
}

template <class T>
void lm_head<T>::backward(parameters<T>& p, matrix_view<T> dh, const_matrix_view<T> dlogits,
                          const_matrix_view<T> h) const {
  // dh += dlogits W and dW += dlogitsᵀ h (+ db) are independent: side by side when small.
  detail::run_pair(
      !dh.empty() && detail::gemm_is_small(dlogits.rows, c, vocab),
      [&] {
        if (!dh.empty())
          detail::gemm(false, false, dlogits.rows, c, vocab, T(1), dlogits.data, dlogits.ld,
                       p.value(w), c, T(1), dh.data, dh.ld);  // dh += dlogits W    (N, C)
      },
      [&] {
        detail::gemm(true, false, vocab, c, dlogits.rows, T(1), dlogits.data, dlogits.ld, h.data,
                     h.ld, T(1), p.grad(w), c);                   // dW += dlogitsᵀ h    (V, C)
        if (b >= 0) detail::add_column_sums(p.grad(b), dlogits);  // db += Σ_rows dlogits  (V)
      });
}

// Mean token cross-entropy over the rows whose target is not −1 (N' of them); see the header for
// the formula. Targets are validated in a first pass, before anything is written, so a bad
// target throws with dlogits untouched.
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
    ++valid;  // N', the divisor of both the loss and the gradient
  }
  // Rows in parallel, each through an aligned scratch row (Eigen's vectorized exp; the same
  // packet path whatever the buffers' addresses, so results are bit-reproducible); row losses
  // are summed in row order, so the result does not depend on the thread count either.
  std::vector<double> row_loss(static_cast<std::size_t>(n), 0.0);
#pragma omp parallel for schedule(static) if (n * v >= (1 << 15))
  for (index r = 0; r < n; ++r) {
    const index t = targets[static_cast<std::size_t>(r)];
    thread_local Eigen::Array<T, Eigen::Dynamic, 1> e;
    if (e.size() != v) e.resize(v);
    e = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(logits.data + r * logits.ld, v);
    const T mx = e.maxCoeff();
    e = (e - mx).exp();  // e_j = exp(l_j − max) ∈ (0, 1]: no overflow, and the sum is ≥ 1
    double sum = 0;
    for (index j = 0; j < v; ++j) sum += double(e[j]);
    if (t != -1)
      row_loss[static_cast<std::size_t>(r)] = std::log(sum) + double(mx) - double(logits(r, t));
    // −log softmax_t = log Σ_j exp(l_j) − l_t = log(sum) + max − l_t
    if (dlogits.empty()) continue;
    T* dr = dlogits.data + r * dlogits.ld;
    if (t == -1) {  // ignored rows contribute nothing, and their gradient is written as 0
      std::fill_n(dr, v, T(0));
      continue;
    }
    const double scale = 1.0 / (sum * double(valid));  // d l_j = (softmax_j − [j = t]) / N'
    for (index j = 0; j < v; ++j) dr[j] = static_cast<T>(double(e[j]) * scale);
    dr[t] -= static_cast<T>(1.0 / double(valid));
  }
  double loss = 0;
  for (double l : row_loss) loss += l;
  return valid > 0 ? loss / double(valid) : 0.0;
}

template struct lm_head<float>;
template struct lm_head<double>;
template double cross_entropy<float>(const_matrix_view<float>, std::span<const index>,
                                     matrix_view<float>);
template double cross_entropy<double>(const_matrix_view<double>, std::span<const index>,
                                      matrix_view<double>);

}  // namespace kf::nn
