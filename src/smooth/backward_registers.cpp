// The backward pass on register tiles (route.hpp: attention's kernel exp(q·k/T) in float, no
// parameter gradient, dv > kNarrowDv, AVX2 on the CPU), with the steps of backward_rows.hpp and
// all five products on detail/tile_kernel.hpp instead of OpenBLAS:
//   S  = Q·(K/T)ᵀ and G = dOut·Vᵀ   tile_scores, K (times 1/T) and V packed as row panels
//   dQ += dS·K                      tile_accumulate, K packed as column panels
//   dV += Pᵀ·dOut, dK += dSᵀ·Q      tile_accumulate_t, each query block's dOut and Q rows packed
//                                   as column panels, P and dS read transposed in place
// dQ, dK and dV go through buffers whose rows are whole panels (contiguous rows are also faster to
// add into than the heads' strided ones: 3%, A/B), added to the caller's matrices at the end.
#include "smooth/backward_rows.hpp"
#include "smooth/tiles/packed_panels.hpp"
#include "smooth/tiles/parallel_blocks.hpp"
#include "smooth/tiles/weight_tile.hpp"

namespace kf::detail::tiles {

void backward_registers(const plan<float>& pl, const backward_route& r, smooth_grads<float>& g,
                        const_matrix_view<float> dout, const_matrix_view<float> out,
                        std::span<const float> lse) {
  const index d = pl.d, dv = pl.dv, m = pl.m;
  const bool want_dq = !g.dq.empty(), want_dk = !g.dk.empty(), want_dv = !g.dv.empty();
  const auto& qv = pl.engines[0].qv;
  const packed_panels krows(pl.engines[0].kv, /*rows=*/true, r.pack_once, r.key_scale);
  const packed_panels vrows(pl.v, /*rows=*/true, r.pack_once);
  const packed_panels kcols(pl.engines[0].kv, /*rows=*/false, r.pack_once);
  const index d_panels = panel_count(d), dv_panels = panel_count(dv);
  const index dkw = d_panels * kPanel, dvw = dv_panels * kPanel;  // buffer rows: whole panels
  const index rows = pl.backward_rows();
  key_grads<float> kg(pl, rows, dkw, dvw, /*always_buffered=*/true);
  parallel_blocks(pl, rows, [&](scratch<float>& sc, index qb) {
    float *dk = nullptr, *dvp = nullptr;
    index ldk = 0, ldv = 0;
    kg.target(g, m, static_cast<std::size_t>(block_thread()), dk, ldk, dvp, ldv);
    const index i0 = qb * rows, bq = std::min(rows, pl.n - i0);
    // This block's dOut and Q rows as column panels, and its dQ rows.
    std::vector<float> do_cols(packed_panels::floats(bq, dv, false)), q_cols, pack_buf;
    pack_column_panels(dout.row(i0), dout.ld, bq, dv, do_cols.data(), bq * kPanel);
    if (want_dk) {
      q_cols.resize(packed_panels::floats(bq, d, false));
      pack_column_panels(qv.row(i0), qv.ld, bq, d, q_cols.data(), bq * kPanel);
    }
    std::vector<float> dq_block(want_dq ? static_cast<std::size_t>(bq * dkw) : 0, 0.0f);
    const backward_rows<float> br(dout, out, lse, i0, bq);
    for (index kb = 0; kb < pl.key_blocks(); ++kb) {
      bool partial = false;
      if (!tile_active(pl, sc, i0, bq, kb, partial)) continue;
      const index j0 = kb * kBk, bk = std::min(kBk, m - j0);
      weight_tile(pl, sc, i0, bq, j0, bk, partial, /*keep_args=*/false, false,
                  krows.rows(sc.kpack, j0, bk));
      normalize_tile(pl, sc, br, lse, i0, bq, bk);
      const float* pm = drop_tile_backward(pl, sc, i0, bq, j0, bk, want_dv);
      if (want_dv)
        tile_accumulate_t(pm, kBk, bk, bq, do_cols.data(), bq * kPanel, dv_panels, dvp + j0 * ldv,
                          ldv);
      tile_scores(dout.row(i0), dout.ld, bq, dv, vrows.rows(sc.vpack, j0, bk), panel_count(bk),
                  sc.g.data(), kBk);                 // G
      weight_grads(pl, r, sc, br, bq, bk, partial);  // dS (fused) into sc.p
      if (want_dq) {
        index stride = 0;
        const float* kp = kcols.rows(pack_buf, j0, bk, stride);
        tile_accumulate(sc.p.data(), kBk, bq, bk, kp, stride, d_panels, dq_block.data(), dkw);
      }
      if (want_dk)
        tile_accumulate_t(sc.p.data(), kBk, bk, bq, q_cols.data(), bq * kPanel, d_panels,
                          dk + j0 * ldk, ldk);
    }
    for (index a = 0; a < static_cast<index>(dq_block.size()) / dkw; ++a)
      for (index c = 0; c < d; ++c)
        g.dq(i0 + a, c) += dq_block[static_cast<std::size_t>(a * dkw + c)];
  });
  kg.reduce(g, m, d, dv);
}

}  // namespace kf::detail::tiles
