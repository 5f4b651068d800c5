// The fast path of the smoothing primitive (contracts in kernelformer/smooth.hpp).
//
// Queries are cut into blocks of up to kBq rows (plan::forward_rows; one OpenMP task each), keys
// into blocks of kBk. For a (query block, key block) tile:
//   1. the mask classifies the tile (out → skipped; compact kernels also skip tiles whose
//      bounding boxes are farther apart than the support);
//   2. each kernel factor's argument tile S = Q·Kᵀ (dot) or |q − k|² (sqdist) is computed — by
//      GEMM, or by direct differences when the factor has ≤ kDirectMaxD columns (exact where the
//      expansion |q|² + |k|² − 2q·k would cancel catastrophically);
//   3. the kernel maps S to log-weights or weights (one std::visit per tile, never per element);
//   4. log domain: online (running max, rescaled sum, rescaled accumulator) update with
//      P = exp(W − max) and acc += P·V by GEMM; direct domain: sum += ΣW, acc += W·V.
// In float, where AVX2 runs, single-factor kernels (attention's, and the distance kernels by the
// expansion) take the register-tiled route: steps 2 and 4's products by detail/tile_kernel.hpp
// on K and V packed once per call (docs/architecture.md). The backward's route serves
// attention's kernel.
// The backward pass recomputes W per tile from lse and follows smooth.hpp's rule; dK and dV are
// accumulated per thread and summed at the end. Top-k masks take a separate path: tiles select
// the k best keys per row, then the selected pairs are evaluated exactly, pair by pair.
#include "kernelformer/smooth.hpp"

#include <atomic>

#include "detail/smooth_features.hpp"
#include "detail/smooth_tiles.hpp"
#include "detail/vec_exp.hpp"

namespace kf {
namespace detail::tiles {

// ---- forward (no top-k) ----

template <class T>
smooth_stats forward_dense(const plan<T>& pl, matrix_view<T> out, matrix_view<T> out_sq,
                           std::span<T> lse) {
  std::atomic<index> empty{0};
  const index dv = pl.dv;
  const bool want_sq = !out_sq.empty();
  const index rows = pl.forward_rows();
  // Attention's kernel alone: the score tile stays zeroed between tiles (the exp pass moves P
  // to sc.p and leaves zeros), so each tile's GEMM adds to it, with no β = 0 pass.
  // In float, where the AVX2 tile products run, single-factor kernels on dot products or squared
  // distances take the register-tiled route instead (tile_kernel.hpp): keys and V packed once,
  // both tile products in registers, and the score tile written (not added to), so it is not
  // kept zeroed. Attention's keys are packed times 1/T, a distance's (centered) keys times −2.
  const auto& eng = pl.engines[0];
  const bool fused = fused_exp_dot(pl);
  bool tiled = std::is_same_v<T, float> && pl.engines.size() == 1 && eng.tileable() && !want_sq &&
               dv > kNarrowDv && detail::tile_kernel_enabled();
  std::optional<packed_panels> kpacked, vpacked;
  if constexpr (std::is_same_v<T, float>) {
    const double key_scale = !tiled ? 1.0
                             : fused
                                 ? 1.0 / std::get<kernel_exp_dot>(pl.rk.factors[0].kern).temperature
                                 : eng.packed_key_scale();
    tiled = tiled && tile_route_fits(eng.qv, eng.kv, std::abs(key_scale));
    if (tiled) {
      const bool once = (packed_panels::floats(pl.m, eng.kv.cols, true) +
                         packed_panels::floats(pl.m, dv, false)) *
                            sizeof(float) <=
                        kPackOnceBytes;
      kpacked.emplace(eng.kv, /*rows=*/true, once, float(key_scale));
      vpacked.emplace(pl.v, /*rows=*/false, once);
    }
  }
  const bool keep_zeroed = fused && !tiled;
  // K = 1/u, u = 1 + c·|q − k|² (cauchy): the tile holds u, and exp(log K − max) is umin / u, a
  // division instead of a log and an exp per weight (they took 28% of the forward at n = 1024).
  const bool ratio = pl.ratio_c > 0 && !want_sq;
  // Accumulator rows are whole value panels on the tiled route.
  const index aw = tiled ? detail::panel_count(dv) * detail::kPanel : dv;
  parallel_blocks(pl, rows, [&](scratch<T>& sc, index qb) {
    const index i0 = qb * rows, bq = std::min(rows, pl.n - i0);
    if (keep_zeroed) {
      const index cols = std::min(kBk, pl.m);  // every tile's bk is at most this
      for (index a = 0; a < bq; ++a) std::fill_n(sc.w.data() + a * kBk, cols, T(0));
    }
    std::vector<T> acc(static_cast<std::size_t>(bq * aw), T(0));
    std::vector<T> acc_sq(want_sq ? static_cast<std::size_t>(bq * dv) : 0, T(0));  // Σ p² v
    std::vector<T> mx(static_cast<std::size_t>(bq), kNegInf<T>),
        sum(static_cast<std::size_t>(bq), T(0));
    for (index kb = 0; kb < pl.key_blocks(); ++kb) {
      bool partial = false;
      if (!tile_active(pl, sc, i0, bq, kb, partial)) continue;
      const index j0 = kb * kBk, bk = std::min(kBk, pl.m - j0);
      const float* key_panels = kpacked ? kpacked->rows(sc.kpack, j0, bk) : nullptr;
      weight_tile(pl, sc, i0, bq, j0, bk, partial, /*keep_args=*/false, keep_zeroed, key_panels,
                  ratio);
      T* pm = keep_zeroed ? sc.p.data() : sc.w.data();  // P (in place of the weights, or moved)
      if (ratio) {
        for (index a = 0; a < bq; ++a) {
          array_map<T> ua(sc.w.data() + a * kBk, bk);
          const T umin = ua.minCoeff();  // ≥ 1; +inf when the whole row is masked out
          const T tmax = umin == std::numeric_limits<T>::infinity() ? kNegInf<T> : -std::log(umin);
          const T nmax = std::max(mx[a], tmax);
          if (nmax == kNegInf<T>) {  // nothing in this row yet
            ua.setZero();
            continue;
          }
          // P = K·exp(−nmax) = exp(−nmax) / u; exp(−nmax) is umin itself when this tile holds the
          // row's largest weight so far (P = 1 there, exactly).
          const T top = tmax >= mx[a] ? umin : std::exp(-nmax);
          ua = top * ua.inverse();
          const T psum = ua.sum();
          const T scale = std::exp(mx[a] - nmax);
          sum[a] = sum[a] * scale + psum;
          if (scale != T(1))
            for (index c = 0; c < dv; ++c) acc[a * aw + c] *= scale;
          mx[a] = nmax;
        }
      } else if (pl.rk.log_domain) {
        for (index a = 0; a < bq; ++a) {
          array_map<T> wa(sc.w.data() + a * kBk, bk);
          const T tmax = wa.maxCoeff();
          if (tmax == std::numeric_limits<T>::infinity()) throw_overflow(i0 + a);
          const T nmax = std::max(mx[a], tmax);
          if (nmax == kNegInf<T>) {  // nothing in this row yet
            wa.setZero();
            if (keep_zeroed) array_map<T>(pm + a * kBk, bk).setZero();
            continue;
          }
          // P = exp(W − max) and its sum in one vectorized pass (ISA chosen at run time;
          // exp(−inf) = 0 for masked entries).
          const T psum = keep_zeroed ? detail::exp_shift_sum_move(wa.data(), pm + a * kBk, bk, nmax)
                                     : detail::exp_shift_sum(wa.data(), bk, nmax);
          const T scale = std::exp(mx[a] - nmax);  // exp(−inf) = 0 on the first contribution
          sum[a] = sum[a] * scale + psum;
          if (scale != T(1))
            for (index c = 0; c < dv; ++c) acc[a * aw + c] *= scale;
          if (want_sq && scale != T(1))
            for (index c = 0; c < dv; ++c) acc_sq[a * dv + c] *= scale * scale;
          mx[a] = nmax;
        }
      } else {
        for (index a = 0; a < bq; ++a) sum[a] += array_map<T>(sc.w.data() + a * kBk, bk).sum();
      }
      if (pl.drop.active)  // the sums above are the whole rows'; only the values see the mask
        for (index a = 0; a < bq; ++a) {
          pl.drop.row(i0 + a, j0, bk, sc.keep.data());
          array_map<T>(pm + a * kBk, bk) *= array_map<T>(sc.keep.data(), bk);
        }
      if (dv <= kNarrowDv) {  // regression's few value columns: dot products, no GEMM packing
        for (index a = 0; a < bq; ++a) {
          const T* pa = pm + a * kBk;
          using vec = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>;
          const vec prow(pa, bk);
          for (index c = 0; c < dv; ++c) {
            const vec vc(pl.value_column(c) + j0, bk);
            acc[a * aw + c] += prow.dot(vc);
            if (want_sq) acc_sq[a * dv + c] += prow.cwiseAbs2().dot(vc);
          }
        }
      } else if (vpacked) {
        if constexpr (std::is_same_v<T, float>) {
          index stride = 0;
          const float* vp = vpacked->rows(sc.vpack, j0, bk, stride);
          detail::tile_accumulate(pm, kBk, bq, bk, vp, stride, detail::panel_count(dv), acc.data(),
                                  aw);
        }
      } else {
        detail::gemm(false, false, bq, dv, bk, T(1), pm, kBk, pl.v.row(j0), pl.v.ld, T(1),
                     acc.data(), dv);
        if (want_sq) {  // the squared tile goes through sc.g (unused by the forward pass)
          for (index a = 0; a < bq; ++a)
            array_map<T>(sc.g.data() + a * kBk, bk) = array_map<T>(pm + a * kBk, bk).square();
          detail::gemm(false, false, bq, dv, bk, T(1), sc.g.data(), kBk, pl.v.row(j0), pl.v.ld,
                       T(1), acc_sq.data(), dv);
        }
      }
    }
    for (index a = 0; a < bq; ++a) {
      const bool is_empty = !(sum[a] > T(0));
      const T inv = is_empty ? T(0) : T(1) / sum[a];
      for (index c = 0; c < dv; ++c) out(i0 + a, c) = acc[a * aw + c] * inv;
      if (want_sq)
        for (index c = 0; c < dv; ++c) out_sq(i0 + a, c) = acc_sq[a * dv + c] * inv * inv;
      if (!lse.empty())
        lse[static_cast<std::size_t>(i0 + a)] =
            is_empty ? kNegInf<T> : (pl.rk.log_domain ? mx[a] : T(0)) + std::log(sum[a]);
      if (is_empty) ++empty;
    }
  });
  return {empty.load(), tiled ? smooth_route::tiled : smooth_route::dense};
}

template smooth_stats forward_dense<float>(const plan<float>&, matrix_view<float>,
                                           matrix_view<float>, std::span<float>);
template smooth_stats forward_dense<double>(const plan<double>&, matrix_view<double>,
                                            matrix_view<double>, std::span<double>);

}  // namespace detail::tiles

using detail::tiles::plan;

std::string_view smooth_route_name(smooth_route r) {
  switch (r) {
    case smooth_route::reference:
      return "reference";
    case smooth_route::dense:
      return "dense";
    case smooth_route::tiled:
      return "tiled";
    case smooth_route::topk:
      return "topk";
    case smooth_route::features:
      return "features";
  }
  return "unknown";
}

template <class T>
smooth_stats smooth_forward_sq(matrix_view<T> out, matrix_view<T> out_sq, std::span<T> lse,
                               const_matrix_view<T> q, const_matrix_view<T> k,
                               const_matrix_view<T> v, const kernel_spec& kern, const mask& msk,
                               const smooth_options& options) {
  // The route, decided once from the kernel: a feature map sums φ(K)ᵀV (smooth_features.cpp).
  if (!kern.is_product() && kernel_is_feature_map(kern.first))
    return detail::features::forward<T>(out, out_sq, lse, q, k, v, kern, msk, options);
  // Extreme bandwidths or inputs: computed on q/h, k/h (detail::rescale_extreme).
  kernel_spec kern2 = kern;
  smooth_options opt = options;
  const bool rescaled = detail::rescale_extreme<T>(kern2, opt, q, k);
  const plan<T> pl(q, k, v, true, rescaled ? kern2 : kern, msk, opt);
  detail::check_shape(out.rows == q.rows && out.cols == v.cols,
                      "out is " + std::to_string(out.rows) + " x " + std::to_string(out.cols) +
                          ", expected n x dv = " + std::to_string(q.rows) + " x " +
                          std::to_string(v.cols));
  detail::check_shape(out_sq.empty() || (out_sq.rows == q.rows && out_sq.cols == v.cols),
                      "out_sq must be n x dv");
  detail::check_shape(lse.empty() || static_cast<index>(lse.size()) == q.rows,
                      "lse must have n entries");
  detail::check_shape(out_sq.empty() || opt.dropout == 0,
                      "the squared-weight output is not offered with dropout");
  const smooth_stats st = msk.topk_k() > 0 ? detail::tiles::forward_topk(pl, out, out_sq, lse)
                                           : detail::tiles::forward_dense(pl, out, out_sq, lse);
  // Rescaled, a kernel positive everywhere and no mask: an empty row is a weight that fell below
  // the range even on q/h, k/h (every key too many bandwidths away), not one the math gives.
  if (rescaled && st.empty_rows > 0 && !kernel_compact(kern2.first) && msk.describe() == "none")
    throw std::invalid_argument(
        "smooth: " + std::to_string(st.empty_rows) +
        " query rows have every kernel weight below the floating-point range: the bandwidth " +
        detail::short_number(kernel_param(kern.first)) +
        " is too small for the distances to their nearest keys");
  return st;
}

template <class T>
smooth_stats smooth_forward(matrix_view<T> out, std::span<T> lse, const_matrix_view<T> q,
                            const_matrix_view<T> k, const_matrix_view<T> v, const kernel_spec& kern,
                            const mask& msk, const smooth_options& opt) {
  return smooth_forward_sq<T>(out, matrix_view<T>{}, lse, q, k, v, kern, msk, opt);
}

template <class T>
void smooth_backward(smooth_grads<T>& grads, const_matrix_view<T> dout, const_matrix_view<T> out,
                     std::span<const T> lse, const_matrix_view<T> q, const_matrix_view<T> k,
                     const_matrix_view<T> v, const kernel_spec& kern, const mask& msk,
                     const smooth_options& opt) {
  if (!kern.is_product() && kernel_is_feature_map(kern.first))
    return detail::features::backward<T>(grads, dout, out, q, k, v, kern, msk, opt);
  const plan<T> pl(q, k, v, true, kern, msk, opt);
  detail::check_shape(dout.rows == q.rows && dout.cols == v.cols, "dout must be n x dv");
  detail::check_shape(out.rows == q.rows && out.cols == v.cols, "out must be n x dv");
  detail::check_shape(static_cast<index>(lse.size()) == q.rows, "lse must have n entries");
  detail::check_shape(grads.dq.empty() || (grads.dq.rows == q.rows && grads.dq.cols == q.cols),
                      "dq must be n x d");
  detail::check_shape(grads.dk.empty() || (grads.dk.rows == k.rows && grads.dk.cols == k.cols),
                      "dk must be m x d");
  detail::check_shape(grads.dv.empty() || (grads.dv.rows == v.rows && grads.dv.cols == v.cols),
                      "dv must be m x dv");
  // Gradients w.r.t. the scaled inputs go to temporaries when per-dimension bandwidths apply.
  matrix<T> dqs, dks;
  smooth_grads<T> g;
  g.dv = grads.dv;
  g.want_dparam = grads.want_dparam;
  if (pl.in.scaled) {
    dqs = matrix<T>(q.rows, q.cols);
    dks = matrix<T>(k.rows, k.cols);
    g.dq = dqs.view();
    g.dk = dks.view();
  } else {
    g.dq = grads.dq;
    g.dk = grads.dk;
  }
  if (msk.topk_k() > 0)
    detail::tiles::backward_topk(pl, g, dout);
  else
    detail::tiles::backward_dense(pl, g, dout, out, lse);
  grads.dparam[0] += g.dparam[0];
  grads.dparam[1] += g.dparam[1];
  if (pl.in.scaled) detail::unscale_grads(grads, dqs, dks, pl.in, opt);
}

#define KF_INSTANTIATE(T)                                                                          \
  template smooth_stats smooth_forward<T>(matrix_view<T>, std::span<T>, const_matrix_view<T>,      \
                                          const_matrix_view<T>, const_matrix_view<T>,              \
                                          const kernel_spec&, const mask&, const smooth_options&); \
  template void smooth_backward<T>(smooth_grads<T>&, const_matrix_view<T>, const_matrix_view<T>,   \
                                   std::span<const T>, const_matrix_view<T>, const_matrix_view<T>, \
                                   const_matrix_view<T>, const kernel_spec&, const mask&,          \
                                   const smooth_options&);
KF_INSTANTIATE(float)
KF_INSTANTIATE(double)
#undef KF_INSTANTIATE

}  // namespace kf
