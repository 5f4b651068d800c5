// The plain reference implementation of the smoothing primitive: one query row at a time, every
// key visited, double precision throughout, top-k by sorting. Kept forever; the fast path in
// smooth.cpp is tested against it. smooth_weights also lives here: it materializes rows on
// demand, so plain per-row code is the right tool.
#include <algorithm>
#include <numeric>
#include <string>
#include <variant>

#include "detail/smooth_common.hpp"
#include "kernelformer/smooth.hpp"

namespace kf {
namespace {

// Selects the keys of row i: mask predicates, then top-k by sorting all candidates.
template <class T>
std::vector<index> select_row(index i, const_matrix_view<T> q, const_matrix_view<T> k,
                              const detail::resolved_kernel& rk, const mask& msk) {
  std::vector<index> cand;
  std::vector<double> cand_l, cand_r2;
  const bool topk = msk.topk_k() > 0;
  for (index j = 0; j < k.rows; ++j) {
    const bool need_r2 = msk.needs_distance() || topk;
    const double r2 = need_r2 ? detail::pair_sqdist(q.row(i), k.row(j), q.cols) : 0.0;
    if (!msk.allows(i, j, r2)) continue;
    cand.push_back(j);
    if (!topk) continue;
    double l = 0;
    for (const auto& f : rk.factors) {
      const double s = detail::pair_arg(q.row(i), k.row(j), f);
      l += detail::to_log(
          f, std::visit([&](const auto& kk) { return kk.template weight<double>(s); }, f.kern));
    }
    cand_l.push_back(l);
    cand_r2.push_back(r2);
  }
  if (!topk || static_cast<index>(cand.size()) <= msk.topk_k()) return cand;
  std::vector<std::size_t> order(cand.size());
  std::iota(order.begin(), order.end(), 0);
  const bool by_w = msk.topk_by() == topk_rank::weight;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (by_w && cand_l[a] != cand_l[b]) return cand_l[a] > cand_l[b];
    if (cand_r2[a] != cand_r2[b]) return cand_r2[a] < cand_r2[b];
    return cand[a] < cand[b];
  });
  order.resize(static_cast<std::size_t>(msk.topk_k()));
  std::vector<index> keys;
  for (std::size_t o : order) keys.push_back(cand[o]);
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

namespace reference {

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
  const detail::dropout_mask drop(opt, k.rows);
  smooth_stats st;
  for (index i = 0; i < q.rows; ++i) {
    const auto r = detail::evaluate_pairs(i, select_row(i, sc.q, sc.k, rk, msk), sc.q, sc.k, rk);
    for (index c = 0; c < v.cols; ++c) {
      double acc = 0, acc_sq = 0;
      for (std::size_t a = 0; a < r.keys.size(); ++a) {
        const double mj = !drop.active ? 1.0 : (drop.keep(i, r.keys[a]) ? drop.scale : 0.0);
        acc += r.p[a] * mj * double(v(r.keys[a], c));
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
  std::vector<double> dq(static_cast<std::size_t>(n * d)), dk(static_cast<std::size_t>(m * d));
  for (index i = 0; i < n; ++i) {
    const auto r = detail::evaluate_pairs(i, select_row(i, sc.q, sc.k, rk, msk), sc.q, sc.k, rk);
    detail::row_backward(r, i, dout, v, sc.q, sc.k, rk, dq.data() + i * d, dk, grads.dv,
                         grads.dparam, drop);
  }
  if (const auto* fk = rk.features()) {  // φ depends on x·scale: the parameter from dq, dk
    double acc = 0;
    for (index i = 0; i < n; ++i)
      for (index c = 0; c < d; ++c)
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

template <class T>
void smooth_weights(matrix_view<T> w, std::span<const index> rows, const_matrix_view<T> q,
                    const_matrix_view<T> k, const kernel_spec& kern, const mask& msk,
                    const smooth_options& options) {
  kernel_spec kern2 = kern;  // extreme bandwidths or inputs: on q/h, k/h (smooth_common.hpp)
  smooth_options opt = options;
  const bool rescaled = detail::rescale_extreme<T>(kern2, opt, q, k);
  const auto rk = detail::resolve(rescaled ? kern2 : kern, q.cols, std::is_same_v<T, float>);
  detail::validate_inputs(q, k, const_matrix_view<T>{}, false, msk, opt, rk);
  const index nr = rows.empty() ? q.rows : static_cast<index>(rows.size());
  detail::check_shape(
      w.rows == nr && w.cols == k.rows,
      "weights output must be " + std::to_string(nr) + " x " + std::to_string(k.rows));
  const auto sc = detail::scale_inputs(q, k, opt);
  for (index a = 0; a < nr; ++a) {
    const index i = rows.empty() ? a : rows[static_cast<std::size_t>(a)];
    detail::check_shape(i >= 0 && i < q.rows, "weights row " + std::to_string(i) +
                                                  " is outside 0.." + std::to_string(q.rows - 1));
    const auto r = detail::evaluate_pairs(i, select_row(i, sc.q, sc.k, rk, msk), sc.q, sc.k, rk);
    for (index j = 0; j < k.rows; ++j) w(a, j) = T(0);
    for (std::size_t b = 0; b < r.keys.size(); ++b) w(a, r.keys[b]) = static_cast<T>(r.p[b]);
  }
}

template void smooth_weights<float>(matrix_view<float>, std::span<const index>,
                                    const_matrix_view<float>, const_matrix_view<float>,
                                    const kernel_spec&, const mask&, const smooth_options&);
template void smooth_weights<double>(matrix_view<double>, std::span<const index>,
                                     const_matrix_view<double>, const_matrix_view<double>,
                                     const kernel_spec&, const mask&, const smooth_options&);

}  // namespace kf
