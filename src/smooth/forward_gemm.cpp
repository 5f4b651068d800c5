// The forward pass on GEMM tiles (route.hpp: every kernel, mask and precision the register tiles
// and the other routes do not take). Per (query block, key block) tile:
//   1. the mask classifies the tile (out → skipped; compact kernels also skip tiles whose
//      bounding boxes are farther apart than the support);
//   2. each kernel factor's argument tile S = Q·Kᵀ (dot) or |q − k|² (sqdist) — by OpenBLAS, or
//      by direct differences when the factor has ≤ kDirectMaxD columns (exact where the
//      expansion |q|² + |k|² − 2q·k would cancel);
//   3. the kernel maps S to log-weights or weights (tiles/weight_tile.hpp);
//   4. the online row update (forward_rows.hpp), then acc += P·V: by OpenBLAS, or by dot
//      products against contiguous value columns when dv ≤ kNarrowDv (regression's values).
#include <atomic>

#include "smooth/forward_rows.hpp"
#include "smooth/tiles/parallel_blocks.hpp"
#include "smooth/tiles/weight_tile.hpp"

namespace kf::detail::tiles {
namespace {

// acc (+ acc_sq) += P·V (+ P²·V) for one tile: P is rows × bk at pm (stride kBk).
template <class T>
void accumulate_values(const plan<T>& pl, scratch<T>& sc, online_rows<T>& st, index j0, index bk,
                       const T* pm) {
  const index bq = st.bq, dv = pl.dv;
  const bool want_sq = !st.acc_sq.empty();
  if (dv <= kNarrowDv) {  // regression's few value columns: dot products, no GEMM packing
    using vec = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>;
    for (index a = 0; a < bq; ++a) {
      const vec prow(pm + a * kBk, bk);
      for (index c = 0; c < dv; ++c) {
        const vec vc(pl.value_column(c) + j0, bk);
        st.acc[a * st.aw + c] += prow.dot(vc);
        if (want_sq) st.acc_sq[a * dv + c] += prow.cwiseAbs2().dot(vc);
      }
    }
    return;
  }
  detail::gemm(false, false, bq, dv, bk, T(1), pm, kBk, pl.v.row(j0), pl.v.ld, T(1), st.acc.data(),
               dv);
  if (want_sq) {  // the squared tile goes through sc.g (unused by the forward pass)
    for (index a = 0; a < bq; ++a)
      array_map<T>(sc.g.data() + a * kBk, bk) =
          Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(pm + a * kBk, bk).square();
    detail::gemm(false, false, bq, dv, bk, T(1), sc.g.data(), kBk, pl.v.row(j0), pl.v.ld, T(1),
                 st.acc_sq.data(), dv);
  }
}

}  // namespace

template <class T>
smooth_stats forward_gemm(const plan<T>& pl, const forward_route& r, matrix_view<T> out,
                          matrix_view<T> out_sq, std::span<T> lse) {
  std::atomic<index> empty{0};
  const index rows = pl.forward_rows();
  parallel_blocks(pl, rows, [&](scratch<T>& sc, index qb) {
    const index i0 = qb * rows, bq = std::min(rows, pl.n - i0);
    if (r.keep_zeroed) {  // zeroed once per block (which also covers a call that threw mid-tile)
      const index cols = std::min(kBk, pl.m);  // every tile's bk is at most this
      for (index a = 0; a < bq; ++a) std::fill_n(sc.w.data() + a * kBk, cols, T(0));
    }
    online_rows<T> st(bq, pl.dv, pl.dv, r.want_sq);
    T* pm = r.keep_zeroed ? sc.p.data() : sc.w.data();  // P: in place of the weights, or moved
    for (index kb = 0; kb < pl.key_blocks(); ++kb) {
      bool partial = false;
      if (!tile_active(pl, sc, i0, bq, kb, partial)) continue;
      const index j0 = kb * kBk, bk = std::min(kBk, pl.m - j0);
      weight_tile(pl, sc, i0, bq, j0, bk, partial, /*keep_args=*/false, r.keep_zeroed, nullptr,
                  r.ratio);
      st.update(pl, r, sc, i0, bk, pm);
      drop_tile(pl, sc, i0, bq, j0, bk, pm);
      accumulate_values(pl, sc, st, j0, bk, pm);
    }
    empty += st.finish(pl, i0, out, out_sq, lse);
  });
  return {empty.load(), smooth_route::gemm_tiles};
}

template smooth_stats forward_gemm<float>(const plan<float>&, const forward_route&,
                                          matrix_view<float>, matrix_view<float>, std::span<float>);
template smooth_stats forward_gemm<double>(const plan<double>&, const forward_route&,
                                           matrix_view<double>, matrix_view<double>,
                                           std::span<double>);

}  // namespace kf::detail::tiles
