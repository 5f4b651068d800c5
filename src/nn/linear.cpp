#include "kernelformer/nn/linear.hpp"

#include "detail/blas.hpp"
#include "nn/elementwise.hpp"

namespace kf::nn {

// Registers "<name>.weight" (out, in) and, with bias, "<name>.bias" (out). The bias follows the
// weight's init only for nn.Linear's default (kaiming_linear); any other init gets a zero bias.
template <class T>
linear<T>::linear(parameters<T>& p, const std::string& name, index in_features, index out_features,
                  bool bias, init_kind init, double scale)
    : in(in_features), out(out_features) {
  w = p.add(name + ".weight", {out, in}, init, scale, in, out);
  if (bias)
    b = p.add(name + ".bias", {out},
              init == init_kind::kaiming_linear ? init_kind::kaiming_linear : init_kind::zeros, 1.0,
              in, out);
}

template <class T>
void linear<T>::forward(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x) const {
  // y = x Wᵀ (+ b): y starts as the bias, the GEMM adds x Wᵀ
  if (b >= 0) detail::fill_rows(y, p.value(b));
  detail::gemm(false, true, x.rows, out, in, T(1), x.data, x.ld, p.value(w), in,
               b >= 0 ? T(1) : T(0), y.data, y.ld);  // (N, out) = (N, in)·(in, out)
}

template <class T>
void linear<T>::backward(parameters<T>& p, matrix_view<T> dx, const_matrix_view<T> dy,
                         const_matrix_view<T> x, bool overwrite_dx) const {
  // dx += dy W and dW += dyᵀ x (+ db) are independent: side by side when they are small.
  const bool pair = !dx.empty() && detail::gemm_is_small(dy.rows, in, out);
  detail::run_pair(
      pair,
      [&] {
        if (!dx.empty())
          detail::gemm(false, false, dy.rows, in, out, T(1), dy.data, dy.ld, p.value(w), in,
                       overwrite_dx ? T(0) : T(1), dx.data, dx.ld);  // dx (N, in)
      },
      [&] {
        detail::gemm(true, false, out, in, dy.rows, T(1), dy.data, dy.ld, x.data, x.ld, T(1),
                     p.grad(w), in);                         // dW += dyᵀ x     (out, in)
        if (b >= 0) detail::add_column_sums(p.grad(b), dy);  // db += Σ_rows dy  (out)
      });
}

template struct linear<float>;
template struct linear<double>;

}  // namespace kf::nn
