// Internal: the part of the backward pass every tiled route shares. With p = w/Σw (recomputed per
// tile from lse, as FlashAttention does) and g_ij = dout_i·(v_j − out_i):
//   dV_j  += Σ_i p_ij dout_i                      (the route's product Pᵀ·dOut)
//   G_ij   = dout_i·v_j                           (the route's product dOut·Vᵀ)
//   C_ij   = p_ij (G_ij − dout_i·out_i)  (log domain) | (G_ij − dout_i·out_i) / Σw_i  (direct)
//          = d loss / d (log-)weight_ij
//   dS_ij  = C_ij · dweight/ds(s_ij)              (per kernel factor; fused when dweight is
//                                                  constant: dS = P ⊙ (G − dot)·dweight)
// then the route chains dS to dQ and dK. dK and dV are accumulated by every query block, into
// per-thread buffers (key_grads) that are summed at the end.
#pragma once

#include <array>
#include <cmath>
#include <vector>

#include "detail/vec_exp.hpp"
#include "smooth/route.hpp"
#include "smooth/tiles/plan.hpp"

namespace kf::detail::tiles {

// Per query block: dout_a·out_a, 1/Σw (from lse), and whether the row had any weight at all.
template <class T>
struct backward_rows {
  std::vector<T> dot_do, inv_sum;
  std::vector<bool> row_ok;
  backward_rows(const_matrix_view<T> dout, const_matrix_view<T> out, std::span<const T> lse,
                index i0, index bq)
      : dot_do(static_cast<std::size_t>(bq), T(0)),
        inv_sum(static_cast<std::size_t>(bq)),
        row_ok(static_cast<std::size_t>(bq)) {
    for (index a = 0; a < bq; ++a) {
      for (index c = 0; c < dout.cols; ++c) dot_do[a] += dout(i0 + a, c) * out(i0 + a, c);
      const T l = lse[static_cast<std::size_t>(i0 + a)];
      row_ok[a] = l > kNegInf<T>;
      inv_sum[a] = row_ok[a] ? std::exp(-l) : T(0);
    }
  }
};

// P (the normalized weights) in place of the tile's weights in sc.w.
template <class T>
void normalize_tile(const plan<T>& pl, scratch<T>& sc, const backward_rows<T>& br,
                    std::span<const T> lse, index i0, index bq, index bk) {
  for (index a = 0; a < bq; ++a) {
    array_map<T> wa(sc.w.data() + a * kBk, bk);
    if (!br.row_ok[a])
      wa.setZero();
    else if (pl.rk.log_domain)  // vectorized; exp(−inf) = 0 (masked entries)
      detail::exp_shift_sum(wa.data(), bk, lse[static_cast<std::size_t>(i0 + a)]);
    else
      wa *= br.inv_sum[a];
  }
}

// Weight dropout: out = (P∘M)·V with the row normalizer unchanged, so dV uses P∘M and the
// weights' gradient is P∘(M∘(dOut·Vᵀ) − dOut·out) — the same form, M applied to dOut·Vᵀ. Puts the
// tile's mask in sc.r2 (r2 is only read while weighting) and P∘M in sc.g (when dV is wanted);
// returns what dV multiplies: P, or P∘M.
template <class T>
const T* drop_tile_backward(const plan<T>& pl, scratch<T>& sc, index i0, index bq, index j0,
                            index bk, bool want_dv) {
  if (!pl.drop.active) return sc.w.data();
  for (index a = 0; a < bq; ++a) {
    T* ka = sc.r2.data() + a * kBk;
    pl.drop.row(i0 + a, j0, bk, ka);
    if (want_dv)
      array_map<T>(sc.g.data() + a * kBk, bk) =
          array_map<T>(sc.w.data() + a * kBk, bk) * array_map<T>(ka, bk);
  }
  return sc.g.data();
}

// From G = dOut·Vᵀ in sc.g and P in sc.w: with fuse_dw, dS = P ⊙ (G − dot)·dweight into sc.p;
// otherwise C into sc.g (masked entries and empty rows get 0).
template <class T>
void weight_grads(const plan<T>& pl, const backward_route& r, scratch<T>& sc,
                  const backward_rows<T>& br, index bq, index bk, bool partial) {
  const bool logd = pl.rk.log_domain, drop = pl.drop.active;
  const T const_dw = T(r.const_dw);
  for (index a = 0; a < bq; ++a) {
    T* ga = sc.g.data() + a * kBk;
    const T* pa = sc.w.data() + a * kBk;
    if (drop) {
      const T* ka = sc.r2.data() + a * kBk;
      for (index b = 0; b < bk; ++b) ga[b] *= ka[b];
    }
    const T dot = br.dot_do[a];
    if (r.fuse_dw) {
      T* da = sc.p.data() + a * kBk;
      for (index b = 0; b < bk; ++b) da[b] = pa[b] * (ga[b] - dot) * const_dw;
      continue;
    }
    for (index b = 0; b < bk; ++b) {
      const T gab = ga[b] - dot;
      // (sc.allowed is only written for partial tiles; masked entries get no gradient)
      const bool ok = br.row_ok[a] && (!partial || sc.allowed[a * kBk + b]);
      ga[b] = logd ? pa[b] * gab : (ok ? gab * br.inv_sum[a] : T(0));
    }
  }
}

// dK and dV as every query block adds to them: per-thread buffers when blocks run on several
// threads or rows are padded to whole panels (register tiles), else the caller's matrices
// (attention's per-head calls, one thread each). Rows of width dkw, dvw (d, dv, or whole panels).
template <class T>
struct key_grads {
  bool buffered = false;
  index dkw = 0, dvw = 0;
  std::vector<std::vector<T>> dk_t, dv_t;
  std::vector<std::array<double, 2>> dparam_t;

  key_grads(const plan<T>& pl, index rows, index dk_width, index dv_width, bool always_buffered)
      : dkw(dk_width), dvw(dv_width) {
    const auto nt = static_cast<std::size_t>(pl.threads);
    const bool one_thread = pl.threads == 1 || (pl.n + rows - 1) / rows == 1;
    buffered = !one_thread || always_buffered;
    dk_t.resize(buffered ? nt : 0);
    dv_t.resize(buffered ? nt : 0);
    dparam_t.assign(nt, {0.0, 0.0});
  }
  // Where thread tid adds its dK and dV rows (row 0) and their strides.
  void target(const smooth_grads<T>& g, index m, std::size_t tid, T*& dk, index& ldk, T*& dv,
              index& ldv) {
    dk = g.dk.data, dv = g.dv.data, ldk = g.dk.ld, ldv = g.dv.ld;
    if (!buffered) return;
    if (!g.dk.empty() && dk_t[tid].empty()) dk_t[tid].assign(static_cast<std::size_t>(m * dkw), 0);
    if (!g.dv.empty() && dv_t[tid].empty()) dv_t[tid].assign(static_cast<std::size_t>(m * dvw), 0);
    dk = dk_t[tid].data(), dv = dv_t[tid].data(), ldk = dkw, ldv = dvw;
  }
  // Adds the threads' buffers and parameter gradients to g, in thread order.
  void reduce(smooth_grads<T>& g, index m, index d, index dv) const {
    for (std::size_t t = 0; t < dparam_t.size(); ++t) {
      g.dparam[0] += dparam_t[t][0];
      g.dparam[1] += dparam_t[t][1];
      if (!g.dk.empty() && t < dk_t.size() && !dk_t[t].empty())
        for (index j = 0; j < m; ++j)
          for (index c = 0; c < d; ++c)
            g.dk(j, c) += dk_t[t][static_cast<std::size_t>(j * dkw + c)];
      if (!g.dv.empty() && t < dv_t.size() && !dv_t[t].empty())
        for (index j = 0; j < m; ++j)
          for (index c = 0; c < dv; ++c)
            g.dv(j, c) += dv_t[t][static_cast<std::size_t>(j * dvw + c)];
    }
  }
};

}  // namespace kf::detail::tiles
