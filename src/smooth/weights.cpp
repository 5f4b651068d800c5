// smooth_weights: rows of the normalized weight matrix on demand. It materializes rows, so the
// plain per-row code (pairs.hpp) is the right tool, not a tiled route.
#include <string>
#include <type_traits>

#include "kernelformer/smooth.hpp"
#include "smooth/pairs.hpp"

namespace kf {

// w (rows.size(), m), or (n, m) when rows is empty, from q (n, d) and k (m, d); each row sums to
// 1, or is all zeros for an empty row. Costs O(m·d) per requested row (plus the top-k sort).
// The p_ij are those before weight dropout (opt.dropout is not applied here). Throws
// std::invalid_argument on bad inputs, a wrong w shape, or a row index outside [0, n).
template <class T>
void smooth_weights(matrix_view<T> w, std::span<const index> rows, const_matrix_view<T> q,
                    const_matrix_view<T> k, const kernel_spec& kern, const mask& msk,
                    const smooth_options& options) {
  kernel_spec kern2 = kern;  // extreme bandwidths or inputs: on q/h, k/h (smooth/common.hpp)
  smooth_options opt = options;
  const bool rescaled = detail::rescale_extreme<T>(kern2, opt, q, k);
  const auto rk = detail::resolve(rescaled ? kern2 : kern, q.cols, std::is_same_v<T, float>);
  // No values: an empty v and check_v = false.
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
    const auto r =
        detail::evaluate_pairs(i, detail::select_row(i, sc.q, sc.k, rk, msk), sc.q, sc.k, rk);
    // Keys outside the mask (or the top-k) get exactly 0.
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
