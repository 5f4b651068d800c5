// The forward pass on register tiles (route.hpp: float, one kernel factor on dot products or on
// squared distances by the expansion, dv > kNarrowDv, AVX2 on the CPU). The tile loop is the GEMM
// route's (forward_gemm.cpp); its two products are ours (detail/tile_kernel.hpp) instead of
// OpenBLAS's, which re-packs Q and K for every score tile and packs each fresh P:
//   - K is packed once per call into panels of 16 keys (d × 16, transposed, times key_scale:
//     1/T for attention, −2 for a distance's centered keys), and V into panels of 16 value
//     columns; beyond kPackOnceBytes each tile packs its own into the thread's scratch;
//   - tile_scores writes S = Q·(K·scale)ᵀ straight into the weight tile (a distance then adds
//     |q|² + |k|²), and tile_accumulate adds P·V into accumulator rows of whole value panels.
#include <atomic>

#include "smooth/forward_rows.hpp"
#include "smooth/tiles/packed_panels.hpp"
#include "smooth/tiles/parallel_blocks.hpp"
#include "smooth/tiles/weight_tile.hpp"

namespace kf::detail::tiles {

smooth_stats forward_registers(const plan<float>& pl, const forward_route& r,
                               matrix_view<float> out, std::span<float> lse) {
  const packed_panels keys(pl.engines[0].kv, /*rows=*/true, r.pack_once, r.key_scale);
  const packed_panels values(pl.v, /*rows=*/false, r.pack_once);
  const index value_panels = detail::panel_count(pl.dv);
  const index aw = value_panels * detail::kPanel;  // accumulator rows: whole value panels
  std::atomic<index> empty{0};
  const index rows = pl.forward_rows();
  parallel_blocks(pl, rows, [&](scratch<float>& sc, index qb) {
    const index i0 = qb * rows, bq = std::min(rows, pl.n - i0);
    online_rows<float> st(bq, pl.dv, aw, /*want_sq=*/false);
    for (index kb = 0; kb < pl.key_blocks(); ++kb) {
      bool partial = false;
      if (!tile_active(pl, sc, i0, bq, kb, partial)) continue;
      const index j0 = kb * kBk, bk = std::min(kBk, pl.m - j0);
      weight_tile(pl, sc, i0, bq, j0, bk, partial, /*keep_args=*/false, /*w_zeroed=*/false,
                  keys.rows(sc.kpack, j0, bk), r.ratio);
      st.update(pl, r, sc, i0, bk, sc.w.data());
      drop_tile(pl, sc, i0, bq, j0, bk, sc.w.data());
      index stride = 0;
      const float* vp = values.rows(sc.vpack, j0, bk, stride);
      detail::tile_accumulate(sc.w.data(), kBk, bq, bk, vp, stride, value_panels, st.acc.data(),
                              aw);
    }
    empty += st.finish(pl, i0, out, matrix_view<float>{}, lse);
  });
  return {empty.load(), smooth_route::register_tiles};
}

}  // namespace kf::detail::tiles
