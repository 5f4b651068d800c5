// Internal: the part of the forward pass every tiled route shares — one query block's online
// state and its update from one tile's weights, the weight dropout, and the rows' final division.
//
// For each row a of the block (bq rows) the state is (mx_a, sum_a, acc_a[, acc_sq_a]):
//   log domain:  P = exp(W − mx'), mx' = max(mx, max W);  sum ← sum·e^{mx − mx'} + ΣP;
//                acc ← acc·e^{mx − mx'} (+ P·V by the route);  acc_sq ← acc_sq·e^{2(mx − mx')}
//   ratio form:  the tile holds u = 1/K; P = e^{−mx'}/u with mx' = max(mx, −log min u)
//   direct:      sum += ΣW (compact kernels are bounded by 1: no rescaling)
// and at the end out_a = acc_a / sum_a, out_sq_a = acc_sq_a / sum_a², lse_a = mx_a + log sum_a.
// The route adds P·V (and P²·V) into acc between update() and the next tile.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "detail/vec_exp.hpp"
#include "smooth/route.hpp"
#include "smooth/tiles/plan.hpp"

namespace kf::detail::tiles {

[[noreturn]] inline void throw_overflow(index i) {
  throw std::overflow_error("smooth: a kernel log-weight overflowed to +inf in query row " +
                            std::to_string(i) + " (|q.k| / T beyond the floating-point range)");
}

template <class T>
struct online_rows {
  index bq = 0, dv = 0;
  index aw = 0;                // accumulator row width: dv, or whole value panels (registers)
  std::vector<T> acc, acc_sq;  // (bq, aw) Σ P v and (bq, dv) Σ P² v, rescaled with mx
  std::vector<T> mx, sum;      // (bq) running max (log domain) and rescaled weight sum

  online_rows(index rows, index value_cols, index acc_width, bool want_sq)
      : bq(rows),
        dv(value_cols),
        aw(acc_width),
        acc(static_cast<std::size_t>(rows * acc_width), T(0)),
        acc_sq(want_sq ? static_cast<std::size_t>(rows * value_cols) : 0, T(0)),
        mx(static_cast<std::size_t>(rows), kNegInf<T>),
        sum(static_cast<std::size_t>(rows), T(0)) {}

  // Turns the tile's weights in sc.w (rows × bk, stride kBk) into P and updates every row: in
  // place, or into pm when pm is not sc.w (keep_zeroed: the weight tile is left zeroed).
  void update(const plan<T>& pl, const forward_route& r, scratch<T>& sc, index i0, index bk,
              T* pm) {
    for (index a = 0; a < bq; ++a) {
      T* wa = sc.w.data() + a * kBk;
      if (r.ratio)
        update_ratio(a, wa, bk);
      else if (pl.rk.log_domain)
        update_log(a, wa, pm == sc.w.data() ? nullptr : pm + a * kBk, bk, i0);
      else
        sum[a] += array_map<T>(wa, bk).sum();
    }
  }

  // Divides the rows out; returns how many were empty (the empty-row policy of smooth.hpp).
  index finish(const plan<T>& pl, index i0, matrix_view<T> out, matrix_view<T> out_sq,
               std::span<T> lse) const {
    index empty = 0;
    for (index a = 0; a < bq; ++a) {
      const bool is_empty = !(sum[a] > T(0));
      const T inv = is_empty ? T(0) : T(1) / sum[a];
      for (index c = 0; c < dv; ++c) out(i0 + a, c) = acc[a * aw + c] * inv;
      if (!acc_sq.empty())
        for (index c = 0; c < dv; ++c) out_sq(i0 + a, c) = acc_sq[a * dv + c] * inv * inv;
      if (!lse.empty())
        lse[static_cast<std::size_t>(i0 + a)] =
            is_empty ? kNegInf<T> : (pl.rk.log_domain ? mx[a] : T(0)) + std::log(sum[a]);
      if (is_empty) ++empty;
    }
    return empty;
  }

 private:
  void rescale(index a, T nmax, T psum) {
    const T scale = std::exp(mx[a] - nmax);  // exp(−inf) = 0 on the first contribution
    sum[a] = sum[a] * scale + psum;
    if (scale != T(1)) {
      for (index c = 0; c < dv; ++c) acc[a * aw + c] *= scale;
      if (!acc_sq.empty())
        for (index c = 0; c < dv; ++c) acc_sq[a * dv + c] *= scale * scale;
    }
    mx[a] = nmax;
  }

  // P = exp(W − max) and its sum in one vectorized pass (the ISA chosen at run time; exp(−inf)
  // = 0 for masked entries), in place or moved to moved_to.
  void update_log(index a, T* wa, T* moved_to, index bk, index i0) {
    array_map<T> w(wa, bk);
    const T tmax = w.maxCoeff();
    if (tmax == std::numeric_limits<T>::infinity()) throw_overflow(i0 + a);
    const T nmax = std::max(mx[a], tmax);
    if (nmax == kNegInf<T>) {  // nothing in this row yet
      w.setZero();
      if (moved_to) array_map<T>(moved_to, bk).setZero();
      return;
    }
    const T psum = moved_to ? detail::exp_shift_sum_move(wa, moved_to, bk, nmax)
                            : detail::exp_shift_sum(wa, bk, nmax);
    rescale(a, nmax, psum);
  }

  void update_ratio(index a, T* ua_data, index bk) {
    array_map<T> ua(ua_data, bk);
    const T umin = ua.minCoeff();  // ≥ 1; +inf when the whole row is masked out
    const T tmax = umin == std::numeric_limits<T>::infinity() ? kNegInf<T> : -std::log(umin);
    const T nmax = std::max(mx[a], tmax);
    if (nmax == kNegInf<T>) {  // nothing in this row yet
      ua.setZero();
      return;
    }
    // P = K·exp(−nmax) = exp(−nmax) / u; exp(−nmax) is umin itself when this tile holds the
    // row's largest weight so far (P = 1 there, exactly).
    const T top = tmax >= mx[a] ? umin : std::exp(-nmax);
    ua = top * ua.inverse();
    rescale(a, nmax, ua.sum());
  }
};

// Weight dropout on P (rows × bk at pm): the sums above are the whole rows'; only the values see
// the mask.
template <class T>
void drop_tile(const plan<T>& pl, scratch<T>& sc, index i0, index bq, index j0, index bk, T* pm) {
  if (!pl.drop.active) return;
  for (index a = 0; a < bq; ++a) {
    pl.drop.row(i0 + a, j0, bk, sc.keep.data());
    array_map<T>(pm + a * kBk, bk) *= array_map<T>(sc.keep.data(), bk);
  }
}

}  // namespace kf::detail::tiles
