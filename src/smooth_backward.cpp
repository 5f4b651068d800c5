// The fast backward pass of the smoothing primitive (no top-k): weights recomputed per tile from
// lse, then with p = w/Σw and g_ij = dout_i·(v_j − out_i):
//   dV_j  += Σ_i p_ij dout_i                      (GEMM Pᵀ·dOut)
//   C_ij   = p_ij g_ij (log domain) | g_ij / Σw_i (direct domain) = d loss / d weight_ij
//   dS_ij  = C_ij · dweight/ds(s_ij),   dparam += Σ C_ij · dweight/dparam(s_ij)
//   dot:    dQ += dS·K,  dK += dSᵀ·Q
//   sqdist: dQ_i += 2 Σ_j dS_ij (q_i − k_j),  dK_j −= 2 Σ_i dS_ij (q_i − k_j)
// Query blocks run in parallel; dK and dV are accumulated per thread and summed at the end.
// Attention's kernel in float, where the AVX2 tile products run, takes the register-tiled route
// (tile_kernel.hpp) for all five products: K (times 1/T) and V packed once per call as row panels
// for S = Q·Kᵀ/T and G = dOut·Vᵀ, K as column panels for dQ += dS·K; each query block packs its
// dOut and Q rows as column panels for dV += Pᵀ·dOut and dK += dSᵀ·Q. dQ, dK and dV then go
// through buffers whose rows are whole panels, added to the caller's matrices at the end.
#include <array>
#include <optional>
#include <type_traits>

#include "detail/smooth_tiles.hpp"
#include "detail/vec_exp.hpp"

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

}  // namespace

template <class T>
void backward_dense(const plan<T>& pl, smooth_grads<T>& g, const_matrix_view<T> dout,
                    const_matrix_view<T> out, std::span<const T> lse) {
  const index d = pl.d, dv = pl.dv, m = pl.m;
  const bool want_dq = !g.dq.empty(), want_dk = !g.dk.empty(), want_dv = !g.dv.empty();
  const bool logd = pl.rk.log_domain;
  const bool want_dparam = g.want_dparam;
  const auto nt = static_cast<std::size_t>(pl.threads);
  const index rows = pl.backward_rows();
  // A single log-domain factor with a constant dweight (attention's exp_dot, the Gaussian) and
  // no kernel-parameter gradient: dS = P ⊙ (G − dot) · dweight in the same pass as C (C is 0
  // where the weight is masked or the row empty, as P is).
  bool fuse_dw = false;
  T const_dw = T(0);
  if (logd && pl.engines.size() == 1 && pl.rk.factors[0].log_domain && !want_dparam)
    visit_inline(
        [&](const auto& kk) {
          using K = std::decay_t<decltype(kk)>;
          if constexpr (std::is_same_v<K, kernel_exp_dot> || std::is_same_v<K, kernel_gaussian>) {
            fuse_dw = true;
            const_dw = kk.template dweight<T>(T(0));
          }
        },
        pl.rk.factors[0].kern);
  // The register-tiled route (attention's kernel in float; see the top of the file).
  bool tiled = std::is_same_v<T, float> && fuse_dw && fused_exp_dot(pl) && dv > kNarrowDv &&
               detail::tile_kernel_enabled();
  std::optional<packed_panels> krows, vrows, kcols;
  if constexpr (std::is_same_v<T, float>) {
    const auto& e = pl.engines[0];
    const double key_scale =
        tiled ? 1.0 / std::get<kernel_exp_dot>(pl.rk.factors[0].kern).temperature : 1.0;
    tiled = tiled && tile_route_fits(e.qv, e.kv, key_scale);
    if (tiled) {
      const bool once = (packed_panels::floats(m, d, true) + packed_panels::floats(m, dv, true) +
                         packed_panels::floats(m, d, false)) *
                            sizeof(float) <=
                        kPackOnceBytes;
      krows.emplace(e.kv, /*rows=*/true, once, float(key_scale));
      vrows.emplace(pl.v, /*rows=*/true, once);
      kcols.emplace(e.kv, /*rows=*/false, once);
    }
  }
  // Row widths of the gradient buffers: whole panels on the tiled route.
  const index dkw = tiled ? detail::panel_count(d) * detail::kPanel : d;
  const index dvw = tiled ? detail::panel_count(dv) * detail::kPanel : dv;
  // dK and dV are accumulated by every query block: into per-thread buffers when blocks run on
  // several threads or on the tiled route, else straight into the caller's matrices (attention's
  // per-head calls). dQ rows belong to one block each and are accumulated in place (on the tiled
  // route, through a block buffer). The tiled route's buffers have rows of whole panels, and
  // contiguous rows are faster to accumulate into than the heads' strided ones (3%, A/B).
  const bool one_thread = pl.threads == 1 || (pl.n + rows - 1) / rows == 1;
  const bool buffered = !one_thread || tiled;
  const bool dq_buffered = tiled && want_dq;
  std::vector<std::vector<T>> dk_t(buffered ? nt : 0), dv_t(buffered ? nt : 0);
  std::vector<std::array<double, 2>> dparam_t(nt, {0.0, 0.0});

  parallel_blocks(pl, rows, [&](scratch<T>& sc, index qb) {
    const auto tid = static_cast<std::size_t>(block_thread());
    T* dk = g.dk.data;
    T* dvp = g.dv.data;
    index ldk = g.dk.ld, ldv = g.dv.ld;
    if (buffered) {
      if (want_dk && dk_t[tid].empty()) dk_t[tid].assign(static_cast<std::size_t>(m * dkw), T(0));
      if (want_dv && dv_t[tid].empty()) dv_t[tid].assign(static_cast<std::size_t>(m * dvw), T(0));
      dk = dk_t[tid].data(), dvp = dv_t[tid].data(), ldk = dkw, ldv = dvw;
    }
    const index i0 = qb * rows, bq = std::min(rows, pl.n - i0);
    // Tiled route: this block's dOut and Q rows as column panels, and its dQ rows.
    std::vector<float> do_cols, q_cols, pack_buf;
    std::vector<T> dq_block(dq_buffered ? static_cast<std::size_t>(bq * dkw) : 0, T(0));
    if constexpr (std::is_same_v<T, float>) {
      if (tiled) {
        do_cols.resize(packed_panels::floats(bq, dv, false));
        pack_column_panels(dout.row(i0), dout.ld, bq, dv, do_cols.data(), bq * detail::kPanel);
        if (want_dk) {
          const auto& qv = pl.engines[0].qv;
          q_cols.resize(packed_panels::floats(bq, d, false));
          pack_column_panels(qv.row(i0), qv.ld, bq, d, q_cols.data(), bq * detail::kPanel);
        }
      }
    }
    std::vector<T> dot_do(static_cast<std::size_t>(bq), T(0)),
        inv_sum(static_cast<std::size_t>(bq));
    std::vector<bool> row_ok(static_cast<std::size_t>(bq));
    for (index a = 0; a < bq; ++a) {
      for (index c = 0; c < dv; ++c) dot_do[a] += dout(i0 + a, c) * out(i0 + a, c);
      const T l = lse[static_cast<std::size_t>(i0 + a)];
      row_ok[a] = l > kNegInf<T>;
      inv_sum[a] = row_ok[a] ? std::exp(-l) : T(0);
    }
    for (index kb = 0; kb < pl.key_blocks(); ++kb) {
      bool partial = false;
      if (!tile_active(pl, sc, i0, bq, kb, partial)) continue;
      const index j0 = kb * kBk, bk = std::min(kBk, m - j0);
      const float* key_panels = nullptr;
      if constexpr (std::is_same_v<T, float>)
        if (tiled) key_panels = krows->rows(sc.kpack, j0, bk);
      // The kernels' arguments are read below unless dS comes from the fused pass (a constant
      // dweight) and no parameter gradient is asked for.
      weight_tile(pl, sc, i0, bq, j0, bk, partial, /*keep_args=*/want_dparam || !fuse_dw, false,
                  key_panels);
      // P = normalized weights of the tile, in place of the weights in sc.w.
      for (index a = 0; a < bq; ++a) {
        array_map<T> wa(sc.w.data() + a * kBk, bk);
        if (!row_ok[a])
          wa.setZero();
        else if (logd)  // vectorized; exp(−inf) = 0 (masked entries)
          detail::exp_shift_sum(wa.data(), bk, lse[static_cast<std::size_t>(i0 + a)]);
        else
          wa *= inv_sum[a];
      }
      // Weight dropout: out = (P∘M)·V with the row normalizer unchanged, so dV uses P∘M and the
      // weights' gradient is P∘(M∘(dOut·Vᵀ) − dOut·out) — the same form, M applied to dOut·Vᵀ.
      const bool drop = pl.drop.active;
      if (drop)
        for (index a = 0; a < bq; ++a) {
          T* ka = sc.r2.data() + a * kBk;  // the tile's mask (r2 is only read while weighting)
          pl.drop.row(i0 + a, j0, bk, ka);
          if (want_dv)
            array_map<T>(sc.g.data() + a * kBk, bk) =
                array_map<T>(sc.w.data() + a * kBk, bk) * array_map<T>(ka, bk);
        }
      const T* pm = drop ? sc.g.data() : sc.w.data();  // P, or P∘M
      if constexpr (std::is_same_v<T, float>) {
        if (tiled) {
          if (want_dv)
            detail::tile_accumulate_t(pm, kBk, bk, bq, do_cols.data(), bq * detail::kPanel,
                                      detail::panel_count(dv), dvp + j0 * ldv, ldv);
          tile_scores(dout.row(i0), dout.ld, bq, dv, vrows->rows(sc.vpack, j0, bk),
                      detail::panel_count(bk), sc.g.data(), kBk);
        }
      }
      if (!tiled) {
        if (want_dv)
          gemm(true, false, bk, dv, bq, T(1), pm, kBk, dout.row(i0), dout.ld, T(1), dvp + j0 * ldv,
               ldv);
        // C = d loss / d weight, into sc.g.
        gemm(false, true, bq, bk, dv, T(1), dout.row(i0), dout.ld, pl.v.row(j0), pl.v.ld, T(0),
             sc.g.data(), kBk);
      }
      for (index a = 0; a < bq; ++a) {
        T* ga = sc.g.data() + a * kBk;
        const T* pa = sc.w.data() + a * kBk;
        if (drop) {
          const T* ka = sc.r2.data() + a * kBk;
          for (index b = 0; b < bk; ++b) ga[b] *= ka[b];
        }
        if (fuse_dw) {  // dS = P ⊙ (G − dot) · dweight straight into sc.p
          T* da = sc.p.data() + a * kBk;
          const T dot = dot_do[a];
          for (index b = 0; b < bk; ++b) da[b] = pa[b] * (ga[b] - dot) * const_dw;
          continue;
        }
        for (index b = 0; b < bk; ++b) {
          const T gab = ga[b] - dot_do[a];
          // (sc.allowed is only written for partial tiles; masked entries get no gradient)
          const bool ok = row_ok[a] && (!partial || sc.allowed[a * kBk + b]);
          ga[b] = logd ? pa[b] * gab : (ok ? gab * inv_sum[a] : T(0));
        }
      }
      for (std::size_t f = 0; f < pl.engines.size(); ++f) {
        const bool direct_in_product = logd && !pl.rk.factors[f].log_domain;
        double dpar = 0;
        visit_inline(
            [&](const auto& kk) {
              using K = std::decay_t<decltype(kk)>;
              if constexpr (std::is_same_v<K, kernel_exp_dot> ||
                            std::is_same_v<K, kernel_gaussian>) {
                if (fuse_dw) return;  // dS is in sc.p already
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
        dparam_t[tid][f] += dpar;
        if constexpr (std::is_same_v<T, float>) {
          if (tiled) {  // dQ += dS·K, dK += dSᵀ·Q
            index stride = 0;
            if (want_dq) {
              const float* kp = kcols->rows(pack_buf, j0, bk, stride);
              detail::tile_accumulate(sc.p.data(), kBk, bq, bk, kp, stride, detail::panel_count(d),
                                      dq_block.data(), dkw);
            }
            if (want_dk)
              detail::tile_accumulate_t(sc.p.data(), kBk, bk, bq, q_cols.data(),
                                        bq * detail::kPanel, detail::panel_count(d), dk + j0 * ldk,
                                        ldk);
            continue;
          }
        }
        chain_factor(pl.engines[f], sc.p.data(), i0, bq, j0, bk, want_dq ? g.dq.row(i0) : nullptr,
                     g.dq.ld, dk, ldk, want_dq, want_dk);
      }
    }
    for (index a = 0; a < static_cast<index>(dq_block.size()) / dkw; ++a)
      for (index c = 0; c < d; ++c)
        g.dq(i0 + a, c) += dq_block[static_cast<std::size_t>(a * dkw + c)];
  });
  for (std::size_t t = 0; t < nt; ++t) {
    g.dparam[0] += dparam_t[t][0];
    g.dparam[1] += dparam_t[t][1];
    if (want_dk && t < dk_t.size() && !dk_t[t].empty())
      for (index j = 0; j < m; ++j)
        for (index c = 0; c < d; ++c) g.dk(j, c) += dk_t[t][static_cast<std::size_t>(j * dkw + c)];
    if (want_dv && t < dv_t.size() && !dv_t[t].empty())
      for (index j = 0; j < m; ++j)
        for (index c = 0; c < dv; ++c) g.dv(j, c) += dv_t[t][static_cast<std::size_t>(j * dvw + c)];
  }
}

template void backward_dense<float>(const plan<float>&, smooth_grads<float>&,
                                    const_matrix_view<float>, const_matrix_view<float>,
                                    std::span<const float>);
template void backward_dense<double>(const plan<double>&, smooth_grads<double>&,
                                     const_matrix_view<double>, const_matrix_view<double>,
                                     std::span<const double>);

}  // namespace kf::detail::tiles
