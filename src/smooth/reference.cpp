// The plain reference implementation of the smoothing primitive: one query row at a time, every
// key visited, double precision throughout, top-k by sorting. Kept forever; the fast path in
// every route (route.hpp) is tested against it.
#include <algorithm>
#include <numeric>
#include <string>
#include <variant>

#include "kernelformer/smooth.hpp"
#include "smooth/pairs.hpp"

namespace kf {
namespace reference {

// Same contract and checks as kf::smooth_forward_sq: out (n, dv), out_sq (n, dv) or empty, lse
// (n) or empty, from q (n, d), k (m, d), v (m, dv). Unlike the fast entry it does not rewrite
// extreme bandwidths (rescale_extreme); the pairs are evaluated in double.
template <class T>
smooth_stats smooth_forward_sq(matrix_view<T> out, matrix_view<T> out_sq, std::span<T> lse,
                               const_matrix_view<T> q, const_matrix_view<T> k,
                               const_matrix_view<T> v, const kernel_spec& kern, const mask& msk,
                               const smooth_options& opt) {
  const auto rk = detail::resolve(kern, q.cols, std::is_same_v<T, float>);
  detail::validate_inputs(q, k, v, true, msk, opt, rk);
  detail::check_shape(out.rows == q.rows && out.cols == v.cols, "out must be n x dv");
  detail::check_shape(out_sq.empty() || (out_sq.rows == q.rows && out_sq.cols == v.cols),
                      "out_sq must be n x dv");
  detail::check_shape(lse.empty() || static_cast<index>(lse.size()) == q.rows,
                      "lse must have n entries");
  detail::check_shape(out_sq.empty() || opt.dropout == 0,
                      "the squared-weight output is not offered with dropout");
  const auto sc = detail::scale_inputs(q, k, opt);
  // The same counter-based mask as the tiled routes draw: identical kept pairs, so the two agree.
  const detail::dropout_mask drop(opt, k.rows);
  smooth_stats st;
  for (index i = 0; i < q.rows; ++i) {
    const auto r =
        detail::evaluate_pairs(i, detail::select_row(i, sc.q, sc.k, rk, msk), sc.q, sc.k, rk);
    // r: the row's allowed keys (mask, then top-k by sorting), and their exact p_ij and lse in
    // double.
    for (index c = 0; c < v.cols; ++c) {
      // Out-of-mask keys are simply absent from r.keys; an empty row leaves acc = 0 (the policy).
      double acc = 0, acc_sq = 0;
      for (std::size_t a = 0; a < r.keys.size(); ++a) {
        const double mj = !drop.active ? 1.0 : (drop.keep(i, r.keys[a]) ? drop.scale : 0.0);
        acc += r.p[a] * mj * double(v(r.keys[a], c));
        // No dropout factor here: out_sq with dropout was refused above.
        acc_sq += r.p[a] * r.p[a] * double(v(r.keys[a], c));
      }
      out(i, c) = static_cast<T>(acc);
      if (!out_sq.empty()) out_sq(i, c) = static_cast<T>(acc_sq);
    }
    if (!lse.empty()) lse[static_cast<std::size_t>(i)] = static_cast<T>(r.lse);
    st.empty_rows += r.empty ? 1 : 0;
  }
  return st;
}

template <class T>
smooth_stats smooth_forward(matrix_view<T> out, std::span<T> lse, const_matrix_view<T> q,
                            const_matrix_view<T> k, const_matrix_view<T> v, const kernel_spec& kern,
                            const mask& msk, const smooth_options& opt) {
  return reference::smooth_forward_sq<T>(out, matrix_view<T>{}, lse, q, k, v, kern, msk, opt);
}

// Recomputes everything from q, k, v in double; out and lse are accepted for the common
// signature but not needed.
template <class T>
void smooth_backward(smooth_grads<T>& grads, const_matrix_view<T> dout, const_matrix_view<T>,
                     std::span<const T>, const_matrix_view<T> q, const_matrix_view<T> k,
                     const_matrix_view<T> v, const kernel_spec& kern, const mask& msk,
                     const smooth_options& opt) {
  const auto rk = detail::resolve(kern, q.cols, std::is_same_v<T, float>);
  detail::validate_inputs(q, k, v, true, msk, opt, rk);
  detail::check_shape(dout.rows == q.rows && dout.cols == v.cols, "dout must be n x dv");
  const auto sc = detail::scale_inputs(q, k, opt);
  const index n = q.rows, m = k.rows, d = q.cols;
  const detail::dropout_mask drop(opt, m);
  // Gradients w.r.t. the scaled inputs, (n, d) and (m, d) row-major in double; added (or chained
  // through the per-dimension bandwidths) into grads only at the end.
  std::vector<double> dq(static_cast<std::size_t>(n * d)), dk(static_cast<std::size_t>(m * d));
  for (index i = 0; i < n; ++i) {
    const auto r =
        detail::evaluate_pairs(i, detail::select_row(i, sc.q, sc.k, rk, msk), sc.q, sc.k, rk);
    // dv and dparam accumulate straight into grads; dq_i and dk into the buffers.
    detail::row_backward(r, i, dout, v, sc.q, sc.k, rk, dq.data() + i * d, dk, grads.dv,
                         grads.dparam, drop);
  }
  if (const auto* fk = rk.features()) {  // φ depends on x·scale: the parameter from dq, dk
    double acc = 0;
    for (index i = 0; i < n; ++i)
      for (index c = 0; c < d; ++c)
        // d loss / d param = dparam_factor · (Σ dq·q + Σ dk·k): feature_maps.hpp's rule.
        acc += dq[static_cast<std::size_t>(i * d + c)] * double(sc.q(i, c));
    for (index j = 0; j < m; ++j)
      for (index c = 0; c < d; ++c)
        acc += dk[static_cast<std::size_t>(j * d + c)] * double(sc.k(j, c));
    grads.dparam[0] += fk->dparam_factor * acc;
  }
  detail::add_grads(grads, dq, dk, sc, opt, true);
}

#define KF_INSTANTIATE(T)                                                                          \
  template smooth_stats smooth_forward<T>(matrix_view<T>, std::span<T>, const_matrix_view<T>,      \
                                          const_matrix_view<T>, const_matrix_view<T>,              \
                                          const kernel_spec&, const mask&, const smooth_options&); \
  template void smooth_backward<T>(smooth_grads<T>&, const_matrix_view<T>, const_matrix_view<T>,   \
                                   std::span<const T>, const_matrix_view<T>, const_matrix_view<T>, \
                                   const_matrix_view<T>, const kernel_spec&, const mask&,          \
                                   const smooth_options&);
KF_INSTANTIATE(float)
KF_INSTANTIATE(double)
#undef KF_INSTANTIATE

}  // namespace reference

}  // namespace kf
