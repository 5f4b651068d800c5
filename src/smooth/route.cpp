// The one decision of a forward or backward call's route (route.hpp lists the routes).
#include "smooth/route.hpp"

#include <cmath>
#include <type_traits>
#include <variant>

#include "smooth/tiles/packed_panels.hpp"
#include "smooth/tiles/weight_tile.hpp"

namespace kf::detail::tiles {

// Takes the prepared plan of one forward call; returns how it runs. Order matters: top-k masks
// rank whole rows, so they take their own route before any tile is considered; of the rest,
// register tiles are tried first (float, AVX2) and gemm tiles take everything else.
template <class T>
forward_route choose_forward_route(const plan<T>& pl, bool want_sq) {
  forward_route r;
  r.want_sq = want_sq;
  if (pl.msk->topk_k() > 0) {
    r.kind = smooth_route::topk;
    return r;
  }
  r.fused = fused_exp_dot(pl);
  // The ratio form serves plain forward calls; smooth_forward_sq's calls keep the log form.
  r.ratio = pl.ratio_c > 0 && !want_sq;
  if constexpr (std::is_same_v<T, float>) {
    const auto& eng = pl.engines[0];
    // One factor whose tile the register products can form; narrow values (dv ≤ kNarrowDv) are
    // faster as dot products on the gemm route, and the register route forms no out_sq.
    bool registers = pl.engines.size() == 1 && eng.tileable() && !want_sq && pl.dv > kNarrowDv &&
                     detail::tile_kernel_enabled();
    if (registers) {
      const double key_scale =
          r.fused ? 1.0 / std::get<kernel_exp_dot>(pl.rk.factors[0].kern).temperature
                  : eng.packed_key_scale();
      // Keys are packed pre-scaled, so the route is refused when a partial sum could leave the
      // float range.
      registers = tile_route_fits(eng.qv, eng.kv, std::abs(key_scale));
      if (registers) {
        r.kind = smooth_route::register_tiles;
        r.key_scale = float(key_scale);
        // Keys as row panels plus values as column panels, packed once if they fit together.
        r.pack_once = (packed_panels::floats(pl.m, eng.kv.cols, true) +
                       packed_panels::floats(pl.m, pl.dv, false)) *
                          sizeof(float) <=
                      kPackOnceBytes;
      }
    }
  }
  // Only the GEMM writes the fused tile with β = 1; the register tiles write their own.
  r.keep_zeroed = r.fused && r.kind == smooth_route::gemm_tiles;
  return r;
}

// Takes the prepared plan of one backward call; returns how it runs. The fused dS pass needs a
// constant dweight (d log K / d arg), which exp_dot and the gaussian have and no other kernel
// does, and no kernel-parameter gradient (dweight_dparam(s) needs each entry's argument s,
// which the fused pass does not keep).
template <class T>
backward_route choose_backward_route(const plan<T>& pl, bool want_dparam) {
  backward_route r;
  if (pl.msk->topk_k() > 0) {
    r.kind = smooth_route::topk;
    return r;
  }
  if (pl.rk.log_domain && pl.engines.size() == 1 && pl.rk.factors[0].log_domain && !want_dparam)
    visit_inline(
        [&](const auto& kk) {
          using K = std::decay_t<decltype(kk)>;
          if constexpr (std::is_same_v<K, kernel_exp_dot> || std::is_same_v<K, kernel_gaussian>) {
            r.fuse_dw = true;
            r.const_dw = double(kk.template dweight<T>(T(0)));
          }
        },
        pl.rk.factors[0].kern);
  if constexpr (std::is_same_v<T, float>) {
    // Register tiles in the backward serve attention's exp(q·k/T) only (route.hpp).
    if (r.fuse_dw && fused_exp_dot(pl) && pl.dv > kNarrowDv && detail::tile_kernel_enabled()) {
      const auto& e = pl.engines[0];
      const double key_scale = 1.0 / std::get<kernel_exp_dot>(pl.rk.factors[0].kern).temperature;
      if (tile_route_fits(e.qv, e.kv, key_scale)) {
        r.kind = smooth_route::register_tiles;
        r.key_scale = float(key_scale);
        r.pack_once =
            // K (times 1/T) and V as row panels for S and G; K again as column panels for
            // dQ += dS·K.
            (packed_panels::floats(pl.m, pl.d, true) + packed_panels::floats(pl.m, pl.dv, true) +
             packed_panels::floats(pl.m, pl.d, false)) *
                sizeof(float) <=
            kPackOnceBytes;
      }
    }
  }
  return r;
}

template forward_route choose_forward_route<float>(const plan<float>&, bool);
template forward_route choose_forward_route<double>(const plan<double>&, bool);
template backward_route choose_backward_route<float>(const plan<float>&, bool);
template backward_route choose_backward_route<double>(const plan<double>&, bool);

}  // namespace kf::detail::tiles
