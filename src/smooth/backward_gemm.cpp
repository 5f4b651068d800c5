// The backward pass on GEMM tiles (route.hpp), with the steps of backward_rows.hpp:
//   dV += Pᵀ·dOut and G = dOut·Vᵀ by OpenBLAS; then per kernel factor
//   dS_ij  = C_ij · dweight/ds(s_ij),   dparam += Σ C_ij · dweight/dparam(s_ij)
//   dot:    dQ += dS·K,  dK += dSᵀ·Q                      (OpenBLAS)
//   sqdist: dQ_i += 2 Σ_j dS_ij (q_i − k_j),  dK_j −= 2 Σ_i dS_ij (q_i − k_j)
//           (direct differences for narrow factors, the expansion on centered copies otherwise)
// Query blocks run in parallel; dQ rows belong to one block each and are accumulated in place.
#include <type_traits>

#include "smooth/backward_rows.hpp"
#include "smooth/tiles/parallel_blocks.hpp"
#include "smooth/tiles/weight_tile.hpp"

namespace kf::detail::tiles {
namespace {

// dQ rows [i0, i0 + bq) (dq: row i0, stride ldq) and dK (dk: row 0, stride ldk; the caller's
// matrix or a thread's buffer) from dS for one factor's columns.
template <class T>
void chain_factor(const arg_engine<T>& e, const T* ds, index i0, index bq, index j0, index bk,
                  T* dq, index ldq, T* dk, index ldk, bool want_dq, bool want_dk) {
  const index df = e.c1 - e.c0;
  if (e.arg == kernel_arg::dot) {
    if (want_dq)
      gemm(false, false, bq, df, bk, T(1), ds, kBk, e.kv.row(j0), e.kv.ld, T(1), dq + e.c0, ldq);
    if (want_dk)
      gemm(true, false, bk, df, bq, T(1), ds, kBk, e.qv.row(i0), e.qv.ld, T(1),
           dk + j0 * ldk + e.c0, ldk);
    return;
  }
  if (e.direct) {  // exact differences, as in the forward tile
    for (index a = 0; a < bq; ++a) {
      const T* dsa = ds + a * kBk;
      for (index c = 0; c < df; ++c) {
        const T qa = e.qv(i0 + a, c);
        const T* kc = e.kt.data() + c * e.kt.cols() + j0;
        T accq = 0;
        for (index b = 0; b < bk; ++b) {
          const T t = T(2) * dsa[b] * (qa - kc[b]);
          accq += t;
          if (want_dk) dk[(j0 + b) * ldk + e.c0 + c] -= t;
        }
        if (want_dq) dq[a * ldq + e.c0 + c] += accq;
      }
    }
    return;
  }
  // Expansion on centered copies: dQ += 2(rowsum ⊙ q − dS·k), dK += 2(colsum ⊙ k − dSᵀ·q).
  if (want_dq) {
    gemm(false, false, bq, df, bk, T(-2), ds, kBk, e.kv.row(j0), e.kv.ld, T(1), dq + e.c0, ldq);
    for (index a = 0; a < bq; ++a) {
      T rs = 0;
      for (index b = 0; b < bk; ++b) rs += ds[a * kBk + b];
      for (index c = 0; c < df; ++c) dq[a * ldq + e.c0 + c] += T(2) * rs * e.qv(i0 + a, c);
    }
  }
  if (want_dk) {
    gemm(true, false, bk, df, bq, T(-2), ds, kBk, e.qv.row(i0), e.qv.ld, T(1), dk + j0 * ldk + e.c0,
         ldk);
    for (index b = 0; b < bk; ++b) {
      T cs = 0;
      for (index a = 0; a < bq; ++a) cs += ds[a * kBk + b];
      for (index c = 0; c < df; ++c) dk[(j0 + b) * ldk + e.c0 + c] += T(2) * cs * e.kv(j0 + b, c);
    }
  }
}

// dS = C·dweight/ds for factor f into sc.p (C in sc.g, the factor's arguments in sc.s[f]);
// returns the factor's Σ C·dweight/dparam when want_dparam.
template <class T>
double factor_ds(const plan<T>& pl, std::size_t f, scratch<T>& sc, index bq, index bk,
                 bool want_dparam) {
  const bool direct_in_product = pl.rk.log_domain && !pl.rk.factors[f].log_domain;
  double dpar = 0;
  visit_inline(
      [&](const auto& kk) {
        using K = std::decay_t<decltype(kk)>;
        if constexpr (std::is_same_v<K, kernel_exp_dot> || std::is_same_v<K, kernel_gaussian>) {
          // A constant dweight in a product kernel: dS = C·dweight, one vectorized pass.
          if (!direct_in_product && !want_dparam) {
            const T dw = kk.template dweight<T>(T(0));
            for (index a = 0; a < bq; ++a)
              array_map<T>(sc.p.data() + a * kBk, bk) =
                  array_map<T>(sc.g.data() + a * kBk, bk) * dw;
            return;
          }
        }
        for (index a = 0; a < bq; ++a) {
          const T* sa = sc.s[f].data() + a * kBk;
          const T* ca = sc.g.data() + a * kBk;
          T* da = sc.p.data() + a * kBk;  // dS
          for (index b = 0; b < bk; ++b) {
            T c = ca[b];
            if (c != T(0) && direct_in_product) {
              const T w = kk.template weight<T>(sa[b]);
              c = w > T(0) ? c / w : T(0);
            }
            if (c == T(0)) {
              da[b] = T(0);
              continue;
            }
            da[b] = c * kk.template dweight<T>(sa[b]);
            if (want_dparam) dpar += double(c) * kk.dweight_dparam(double(sa[b]));
          }
        }
      },
      pl.rk.factors[f].kern);
  return dpar;
}

}  // namespace

template <class T>
void backward_gemm(const plan<T>& pl, const backward_route& r, smooth_grads<T>& g,
                   const_matrix_view<T> dout, const_matrix_view<T> out, std::span<const T> lse) {
  const index dv = pl.dv, m = pl.m;
  const bool want_dq = !g.dq.empty(), want_dk = !g.dk.empty(), want_dv = !g.dv.empty();
  const index rows = pl.backward_rows();
  key_grads<T> kg(pl, rows, pl.d, dv, /*always_buffered=*/false);
  parallel_blocks(pl, rows, [&](scratch<T>& sc, index qb) {
    const auto tid = static_cast<std::size_t>(block_thread());
    T *dk = nullptr, *dvp = nullptr;
    index ldk = 0, ldv = 0;
    kg.target(g, m, tid, dk, ldk, dvp, ldv);
    const index i0 = qb * rows, bq = std::min(rows, pl.n - i0);
    const backward_rows<T> br(dout, out, lse, i0, bq);
    for (index kb = 0; kb < pl.key_blocks(); ++kb) {
      bool partial = false;
      if (!tile_active(pl, sc, i0, bq, kb, partial)) continue;
      const index j0 = kb * kBk, bk = std::min(kBk, m - j0);
      // The kernels' arguments are read below unless dS comes from the fused pass (a constant
      // dweight) and no parameter gradient is asked for.
      weight_tile(pl, sc, i0, bq, j0, bk, partial, /*keep_args=*/g.want_dparam || !r.fuse_dw);
      normalize_tile(pl, sc, br, lse, i0, bq, bk);
      const T* pm = drop_tile_backward(pl, sc, i0, bq, j0, bk, want_dv);
      if (want_dv)
        gemm(true, false, bk, dv, bq, T(1), pm, kBk, dout.row(i0), dout.ld, T(1), dvp + j0 * ldv,
             ldv);
      gemm(false, true, bq, bk, dv, T(1), dout.row(i0), dout.ld, pl.v.row(j0), pl.v.ld, T(0),
           sc.g.data(), kBk);  // G
      weight_grads(pl, r, sc, br, bq, bk, partial);
      for (std::size_t f = 0; f < pl.engines.size(); ++f) {
        if (!r.fuse_dw) kg.dparam_t[tid][f] += factor_ds(pl, f, sc, bq, bk, g.want_dparam);
        chain_factor(pl.engines[f], sc.p.data(), i0, bq, j0, bk, want_dq ? g.dq.row(i0) : nullptr,
                     g.dq.ld, dk, ldk, want_dq, want_dk);
      }
    }
  });
  kg.reduce(g, m, pl.d, dv);
}

template void backward_gemm<float>(const plan<float>&, const backward_route&, smooth_grads<float>&,
                                   const_matrix_view<float>, const_matrix_view<float>,
                                   std::span<const float>);
template void backward_gemm<double>(const plan<double>&, const backward_route&,
                                    smooth_grads<double>&, const_matrix_view<double>,
                                    const_matrix_view<double>, std::span<const double>);

}  // namespace kf::detail::tiles
