// Internal: a tile's (log-)weights from its argument tiles — which tiles a mask or a compact
// kernel lets through, the kernels' vectorized weight passes, the mask applied per element.
#pragma once

#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>
#include <variant>

#include "detail/isa_dispatch.hpp"
#include "detail/tile_kernel.hpp"
#include "detail/vec_exp.hpp"
#include "smooth/tiles/plan.hpp"

namespace kf::detail::tiles {

// Classifies the tile; returns false when it cannot contribute.
template <class T>
bool tile_active(const plan<T>& pl, scratch<T>& sc, index i0, index bq, index kb, bool& partial) {
  const index j0 = kb * kBk, bk = std::min(kBk, pl.m - j0);
  double min_r2 = 0;
  if (pl.dist_box) {
    pl.dist_box->query_box(pl.in.q, i0, bq, sc.qlo, sc.qhi);
    min_r2 = pl.dist_box->min_sqdist(sc.qlo, sc.qhi, kb);
  }
  const tile_class cls = pl.msk->classify(i0, i0 + bq, j0, j0 + bk, min_r2);
  if (cls == tile_class::out) return false;
  for (std::size_t f = 0; f < pl.engines.size(); ++f) {
    if (!pl.boxes[f]) continue;
    pl.boxes[f]->query_box(pl.in.q, i0, bq, sc.qlo, sc.qhi);
    if (pl.boxes[f]->min_sqdist(sc.qlo, sc.qhi, kb) > pl.support[f]) return false;
  }
  partial = cls == tile_class::partial;
  return true;
}

// Kernels whose weight calls a libm function that does not vectorize (sin, log1p): the tile's
// log-weights by Eigen's vectorized array functions. Returns false for the other kernels (their
// per-element weight() vectorizes as it is). log(1 + u) for log1p(u) errs by ~1 ulp absolute in
// the log-weight, i.e. ~1 ulp relative in the weight. has_vector_weights names those kernels.
template <class K>
constexpr bool has_vector_weights =
    std::is_same_v<K, kernel_periodic> || std::is_same_v<K, kernel_cauchy>;

template <class T, class K>
bool vector_weights(const K& kk, const T* s, T* w, index bq, index bk, bool first) {
  auto apply = [&](auto&& fn) {
    for (index a = 0; a < bq; ++a) {
      Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> sa(s + a * kBk, bk);
      array_map<T> wa(w + a * kBk, bk);
      if (first)
        wa = fn(sa);
      else
        wa += fn(sa);
    }
    return true;
  };
  if constexpr (std::is_same_v<K, kernel_periodic> && std::is_same_v<T, float>) {
    // Vectorized with the ISA chosen at run time (vec_exp.hpp): 9% of the periodic forward at
    // n = 1024, where Eigen's sin and the passes around it took 21%.
    const float inv_p = float(1.0 / kk.period), g = float(-2.0 / (kk.bandwidth * kk.bandwidth));
    for (index a = 0; a < bq; ++a)
      detail::periodic_log_weight(s + a * kBk, w + a * kBk, bk, inv_p, g, !first);
    return true;
  } else if constexpr (std::is_same_v<K, kernel_periodic>) {
    const T c = T(std::numbers::pi / kk.period), g = T(-2.0 / (kk.bandwidth * kk.bandwidth));
    return apply([&](const auto& sa) { return g * (c * sa.sqrt()).sin().square(); });
  } else if constexpr (std::is_same_v<K, kernel_cauchy>) {
    const T c = T(1.0 / (kk.bandwidth * kk.bandwidth));
    return apply([&](const auto& sa) { return -(T(1) + c * sa).log(); });
  } else {
    static_assert(!has_vector_weights<K>, "has_vector_weights lists the kernels served above");
    return false;
  }
}

// True when weight_tile(…, keep_args = false) writes the tile by one GEMM straight into sc.w
// (attention's exp(q·k/T) alone).
template <class T>
bool fused_exp_dot(const plan<T>& pl) {
  return pl.engines.size() == 1 && std::holds_alternative<kernel_exp_dot>(pl.rk.factors[0].kern) &&
         pl.engines[0].arg == kernel_arg::dot && pl.rk.log_domain;
}

// Fills sc.w with the tile's weights (log-weights in the log domain), with masked-out entries set
// to −inf (log) or 0 (direct) and recorded in sc.allowed. Leaves the factor arguments in sc.s[f]
// when keep_args (the backward pass's kernel derivatives read them); without it, attention's
// kernel exp(q·k/T) gets its log-weights q·k/T straight from the GEMM (alpha = 1/T: the same
// rounding as s·(1/T), one pass over the tile fewer).
// w_zeroed (fused tiles only): sc.w holds zeros on the tile, and the GEMM adds to it (β = 1).
// key_panels (float, single-factor kernels on the register-tiled route): the tile's keys packed
// for tile_scores — times 1/T for attention's fused kernel, times the factor's
// packed_key_scale() otherwise — which then computes the tile in registers instead of the GEMM.
// ratio (plan::ratio_c > 0 only): sc.w gets u = 1 + c·s instead of the log-weight −log u, and
// masked-out entries get +inf; the forward turns it into P = umin / u (no log, no exp).
// weight_tile's fused case: attention's exp(q·k/T) with nothing reading the factor arguments, so
// the tile's log-weights q·k/T come straight from the GEMM or the register tile.
template <class T>
void fused_tile(const plan<T>& pl, scratch<T>& sc, index i0, index bq, index j0, index bk,
                bool w_zeroed, const float* key_panels) {
  const auto& ed = std::get<kernel_exp_dot>(pl.rk.factors[0].kern);
  const auto& qv = pl.engines[0].qv;
  if constexpr (std::is_same_v<T, float>) {
    if (key_panels)
      tile_scores(qv.row(i0), qv.ld, bq, qv.cols, key_panels, panel_count(bk), sc.w.data(), kBk);
  }
  if (!key_panels)
    pl.engines[0].tile(sc.w.data(), i0, bq, j0, bk, T(1.0 / ed.temperature),
                       w_zeroed ? T(1) : T(0));
}

// One column by direct differences, one factor, nothing reading the distance tile later (1-D
// regression): the weights straight from q − k, one pass over the tile instead of two.
// Returns false (and does nothing) where that shortcut does not apply.
template <class T>
bool direct_1d_tile(const plan<T>& pl, scratch<T>& sc, std::size_t f, index i0, index bq, index j0,
                    index bk, bool keep_args, bool ratio) {
  const auto& eng = pl.engines[f];
  const auto& fk = pl.rk.factors[f].kern;
  const bool to_log = pl.rk.log_domain && !pl.rk.factors[f].log_domain;
  const bool applies =
      !keep_args && !ratio && pl.engines.size() == 1 && eng.direct && eng.c1 - eng.c0 == 1 &&
      !to_log && !pl.msk->needs_distance() &&
      !visit_inline([](const auto& kk) { return has_vector_weights<std::decay_t<decltype(kk)>>; },
                    fk);
  if (!applies) return false;
  visit_inline(
      [&](const auto& kk) {
        const T* kc = eng.kt.data() + j0;
        for (index a = 0; a < bq; ++a) {
          const T qa = eng.qv(i0 + a, 0);
          T* wa = sc.w.data() + a * kBk;
          for (index b = 0; b < bk; ++b) {
            const T dq = qa - kc[b];
            wa[b] = kk.template weight<T>(dq * dq);
          }
        }
      },
      fk);
  return true;
}

// Factor f's contribution to the tile: its arguments into sc.s[f], then its weights written
// (f == 0) or added as log-weights (products of kernels in the log domain) into sc.w; with
// ratio, u = 1 + c·s instead.
template <class T>
void factor_tile(const plan<T>& pl, scratch<T>& sc, std::size_t f, index i0, index bq, index j0,
                 index bk, const float* key_panels, bool ratio) {
  const auto& eng = pl.engines[f];
  const bool to_log = pl.rk.log_domain && !pl.rk.factors[f].log_domain;
  if (key_panels)  // the route serves single-factor kernels: key_panels are factor 0's
    eng.tile_packed(sc.s[f].data(), i0, bq, j0, bk, key_panels);
  else
    eng.tile(sc.s[f].data(), i0, bq, j0, bk);
  if (ratio) {
    const T c = T(pl.ratio_c);
    for (index a = 0; a < bq; ++a) {
      const T* sa = sc.s[f].data() + a * kBk;
      T* wa = sc.w.data() + a * kBk;
      for (index b = 0; b < bk; ++b) wa[b] = T(1) + c * sa[b];
    }
    return;
  }
  visit_inline(
      [&](const auto& kk) {
        if (!to_log && vector_weights(kk, sc.s[f].data(), sc.w.data(), bq, bk, f == 0)) return;
        for (index a = 0; a < bq; ++a) {
          const T* sa = sc.s[f].data() + a * kBk;
          T* wa = sc.w.data() + a * kBk;
          if (!to_log && f == 0) {  // the common case, without the branches below (vectorizes)
            for (index b = 0; b < bk; ++b) wa[b] = kk.template weight<T>(sa[b]);
            continue;
          }
          for (index b = 0; b < bk; ++b) {
            T x = kk.template weight<T>(sa[b]);
            if (to_log) x = x > T(0) ? std::log(x) : kNegInf<T>;
            wa[b] = f == 0 ? x : wa[b] + x;
          }
        }
      },
      pl.rk.factors[f].kern);
}

// A partial tile (the mask cuts it): masked-out entries get the excluded value (−inf log-weight,
// 0 weight, +inf ratio) and sc.allowed records which entries count.
template <class T>
void mask_tile(const plan<T>& pl, scratch<T>& sc, index i0, index bq, index j0, index bk,
               bool ratio) {
  const bool need_r2 = pl.msk->needs_distance();
  if (need_r2 && pl.dist) pl.dist->tile(sc.r2.data(), i0, bq, j0, bk);
  const T* r2 = pl.dist ? sc.r2.data() : sc.s[0].data();
  const T excluded = ratio              ? std::numeric_limits<T>::infinity()
                     : pl.rk.log_domain ? kNegInf<T>
                                        : T(0);
  index off = 0;
  if (pl.msk->is_causal_only(off)) {  // the language models' mask: no per-element dispatch
    for (index a = 0; a < bq; ++a)
      for (index b = 0; b < bk; ++b) {
        const bool ok = j0 + b <= i0 + a + off;
        sc.allowed[a * kBk + b] = ok;
        if (!ok) sc.w[a * kBk + b] = excluded;
      }
    return;
  }
  for (index a = 0; a < bq; ++a)
    for (index b = 0; b < bk; ++b) {
      const bool ok = pl.msk->allows(i0 + a, j0 + b, need_r2 ? double(r2[a * kBk + b]) : 0.0);
      sc.allowed[a * kBk + b] = ok;
      if (!ok) sc.w[a * kBk + b] = excluded;
    }
}

template <class T>
void weight_tile(const plan<T>& pl, scratch<T>& sc, index i0, index bq, index j0, index bk,
                 bool partial, bool keep_args = true, bool w_zeroed = false,
                 const float* key_panels = nullptr, bool ratio = false) {
  if (!keep_args && fused_exp_dot(pl)) {
    fused_tile(pl, sc, i0, bq, j0, bk, w_zeroed, key_panels);
  } else {
    for (std::size_t f = 0; f < pl.engines.size(); ++f)
      if (!direct_1d_tile(pl, sc, f, i0, bq, j0, bk, keep_args, ratio))
        factor_tile(pl, sc, f, i0, bq, j0, bk, key_panels, ratio);
  }
  if (partial) mask_tile(pl, sc, i0, bq, j0, bk, ratio);
}

}  // namespace kf::detail::tiles
