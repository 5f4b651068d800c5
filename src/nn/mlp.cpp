#include "kernelformer/nn/mlp.hpp"

#include "nn/elementwise.hpp"

namespace kf::nn {

template <class T>
mlp<T>::mlp(parameters<T>& p, const std::string& prefix, index channels, index hidden, activation a,
            double dropout)
    : act(a), dropout_rate(dropout) {
  linear1 = linear<T>(p, prefix + "linear1", channels, hidden);
  linear2 = linear<T>(p, prefix + "linear2", hidden, channels);
}

template <class T>
void mlp<T>::forward(parameters<T>& p, matrix_view<T> y, const_matrix_view<T> x, cache& c,
                     std::mt19937_64* rng) const {
  const index n = x.rows, f = linear1.out;
  auto make = [&](matrix<T>& m) {  // fully overwritten: reuse the buffer when the shape holds
    m.resize(n, f);
  };
  make(c.f1), make(c.g1), make(c.g1d);
  linear1.forward(p, c.f1.view(), x);                  // f1 = linear1(x)
  activation_forward(act, c.g1.view(), c.f1.cview());  // g1 = act(f1)
  dropout{dropout_rate}.forward(c.g1d.view(), c.g1.cview(), c.drop, rng);
  linear2.forward(p, y, c.g1d.cview());  // y = linear2(drop(g1))
}

template <class T>
void mlp<T>::backward(parameters<T>& p, matrix_view<T> dx, const_matrix_view<T> dy,
                      const_matrix_view<T> x, const cache& c) const {
  const index n = dy.rows, f = linear1.out;
  const auto dg1d = detail::workspace(c.dg1d, n, f, false);
  const auto dg1 = detail::workspace(c.dg1, n, f, true);
  const auto df1 = detail::workspace(c.df1, n, f, true);
  linear2.backward(p, dg1d, dy, c.g1d.cview(), true);  // y = linear2(g1d)
  dropout{dropout_rate}.backward(dg1, const_matrix_view<T>(dg1d), c.drop);
  activation_backward(act, df1, const_matrix_view<T>(dg1), c.f1.cview());  // g1 = act(f1)
  linear1.backward(p, dx, const_matrix_view<T>(df1), x);                   // f1 = linear1(x)
}

template struct mlp<float>;
template struct mlp<double>;

}  // namespace kf::nn
