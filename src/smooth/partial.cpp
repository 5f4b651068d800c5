// The primitive over a chunk of keys, and the exact merge of two partial results
// (kernelformer/smooth_partial.hpp).
#include "kernelformer/smooth_partial.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace kf {
namespace {

// (lse, weight of a, weight of b) of merging two rows; weights are e^{lse_x − lse}.
struct row_merge {
  double lse, wa, wb;
};

// The two rows' lse values a and b; either may be −inf (an empty row: the identity of the merge).
// The log-sum-exp is shifted by the larger one, so no exp overflows and the larger gets e^0 = 1.
row_merge merge_row(double a, double b) {
  constexpr double ninf = -std::numeric_limits<double>::infinity();
  if (a == ninf && b == ninf) return {ninf, 0.0, 0.0};
  if (b == ninf) return {a, 1.0, 0.0};
  if (a == ninf) return {b, 0.0, 1.0};
  const double mx = std::max(a, b);
  const double lse = mx + std::log(std::exp(a - mx) + std::exp(b - mx));
  return {lse, std::exp(a - lse), std::exp(b - lse)};
}

}  // namespace

// out (n, dv) of zeros, lse of −inf, out_sq (n, dv) only when asked for; keys = 0.
template <class T>
smooth_state<T> smooth_state_empty(index n, index dv, bool with_sq) {
  smooth_state<T> s;
  s.out = matrix<T>(n, dv);
  s.lse.assign(static_cast<std::size_t>(n), -std::numeric_limits<T>::infinity());
  if (with_sq) s.out_sq = matrix<T>(n, dv);
  return s;
}

// q (n, d) against one chunk of keys k (c, d) and values v (c, dv), c = k.rows; returns the
// chunk's state. Throws std::invalid_argument on a chunk outside [0, m_total), on dropout, on
// mismatched k and v, and whatever mask::validate and smooth_forward_sq throw.
template <class T>
smooth_state<T> smooth_partial(const_matrix_view<T> q, const_matrix_view<T> k,
                               const_matrix_view<T> v, index key_offset, index m_total,
                               const kernel_spec& kern, const mask& msk, const smooth_options& opt,
                               bool with_sq) {
  if (key_offset < 0 || k.rows < 0 || key_offset + k.rows > m_total)
    throw std::invalid_argument(
        fmt::format("smooth_partial: keys [{}, {}) are not inside the {} keys of the whole set",
                    key_offset, key_offset + k.rows, m_total));
  if (opt.dropout != 0)
    throw std::invalid_argument(
        "smooth_partial: dropout draws its mask from global (row, key) numbers and the whole "
        "row's normalizer; it is not offered on partial results");
  if (v.rows != k.rows)
    throw std::invalid_argument(
        fmt::format("smooth_partial: k has {} rows but v has {}", k.rows, v.rows));
  // The mask is checked against the whole problem, then seen from the chunk.
  msk.validate(q.rows, m_total);
  const mask chunk_mask = msk.key_range(key_offset, key_offset + k.rows);
  smooth_state<T> s = smooth_state_empty<T>(q.rows, v.cols, with_sq);
  s.keys = k.rows;
  // The primitive needs at least one key (validate_inputs), and an empty chunk is the identity
  // of merge anyway.
  if (k.rows == 0) return s;
  smooth_forward_sq<T>(s.out.view(), with_sq ? s.out_sq.view() : matrix_view<T>{}, s.lse, q, k, v,
                       kern, chunk_mask, opt);
  return s;
}

// Throws std::invalid_argument when the shapes differ; disjointness of the key sets is the
// caller's promise (it cannot be checked from the states). Arithmetic in double, stored as T.
template <class T>
void merge(smooth_state<T>& into, const smooth_state<T>& other) {
  const index n = into.out.rows(), dv = into.out.cols();
  if (other.out.rows() != n || other.out.cols() != dv ||
      other.out_sq.rows() != into.out_sq.rows() || other.out_sq.cols() != into.out_sq.cols())
    throw std::invalid_argument(
        fmt::format("merge: states of {} x {} and {} x {} rows/values (or one with out_sq and one "
                    "without) do not merge",
                    n, dv, other.out.rows(), other.out.cols()));
  // out_sq carries p², so its weights are the squares of out's (e^{2(lse_x − lse)}).
  const bool sq = into.out_sq.rows() > 0;
  for (index i = 0; i < n; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    const row_merge r = merge_row(into.lse[iu], other.lse[iu]);
    into.lse[iu] = static_cast<T>(r.lse);
    for (index c = 0; c < dv; ++c) {
      into.out(i, c) =
          static_cast<T>(r.wa * double(into.out(i, c)) + r.wb * double(other.out(i, c)));
      if (sq)
        into.out_sq(i, c) = static_cast<T>(r.wa * r.wa * double(into.out_sq(i, c)) +
                                           r.wb * r.wb * double(other.out_sq(i, c)));
    }
  }
  into.keys += other.keys;
}

// Counts rows with lse = −inf; a row with keys but total weight 0 counts too (its lse is −inf).
template <class T>
index smooth_state_empty_rows(const smooth_state<T>& s) {
  index e = 0;
  for (const T l : s.lse) e += std::isinf(l) && l < 0 ? 1 : 0;
  return e;
}

// Record layout per row: [lse, out_0 … out_{dv−1}, out_sq_0 … out_sq_{dv−1}] (the last dv only
// with_sq); rows are contiguous. The same arithmetic as merge(), without shape checks: the MPI
// operator's caller has fixed the record width.
void merge_records(double* inout, const double* in, index rows, index dv, bool with_sq) {
  const index width = 1 + dv * (with_sq ? 2 : 1);
  for (index i = 0; i < rows; ++i) {
    double* a = inout + i * width;
    const double* b = in + i * width;
    const row_merge r = merge_row(a[0], b[0]);
    a[0] = r.lse;
    for (index c = 1; c <= dv; ++c) a[c] = r.wa * a[c] + r.wb * b[c];
    if (with_sq)
      for (index c = 1 + dv; c < width; ++c) a[c] = r.wa * r.wa * a[c] + r.wb * r.wb * b[c];
  }
}

#define KF_INSTANTIATE(T)                                                             \
  template smooth_state<T> smooth_state_empty<T>(index, index, bool);                 \
  template smooth_state<T> smooth_partial<T>(                                         \
      const_matrix_view<T>, const_matrix_view<T>, const_matrix_view<T>, index, index, \
      const kernel_spec&, const mask&, const smooth_options&, bool);                  \
  template void merge<T>(smooth_state<T>&, const smooth_state<T>&);                   \
  template index smooth_state_empty_rows<T>(const smooth_state<T>&);
KF_INSTANTIATE(float)
KF_INSTANTIATE(double)
#undef KF_INSTANTIATE

}  // namespace kf
