// The feature-map route of the primitive, backward. With D_i, out_i from the forward walk and
//   dN_i = dout_i / D_i,   dD_i = −dout_i·out_i / D_i          (0 on empty rows)
//   E_i = [dN_i | dD_i]                                          (dv + 1)
// the forward [N_i | D_i] = φ(q_i)ᵀ S(lo_c) + Σ_{lo_c ≤ j < L_i} φ(q_i)ᵀφ(k_j) [v_j | 1] gives
//   dφ(q_i) = S(lo_c) E_i + Σ_j (dN_i·v_j + dD_i) φ(k_j)        (prefix state + masked keys)
//   dφ(k_j) = G_j [v_j | 1] + (masked part),  dv_j = G_jᵀ φ(k_j) (+ masked part)
//   G_j = Σ_{chunks c with lo_c > j} Σ_{i ∈ c} φ(q_i) E_iᵀ     (a suffix sum over chunks)
// then dq, dk through φ's Jacobian (feature_block_vjp). Phase A walks each segment forward as the
// forward pass did (the states, D, dq, the masked part of dk and dv, the segment's Σ φ(q) Eᵀ);
// phase B walks it backward with G and gives each key its prefix part, while the keys before
// every chunk's prefix take the total. The kernel parameter's gradient is
// dparam_factor · (Σ dq·q + Σ dk·k) (φ depends on x·scale only).
#include <cmath>
#include <string>

#include "smooth/features.hpp"

namespace kf::detail::features {
namespace {

// dk (and the parameter's Σ dk·k) of keys [j, j + b) from dφ(k) in dphik (overwritten).
template <class T>
void key_grad(const route<T>& rt, index j, cview<T> phik, matrix_view<T> dphik, work<T>& w,
              smooth_grads<T>& g, double& dparam) {
  const index b = phik.rows;
  const matrix_view<T> dxk = w.dxk.view().block(0, 0, b, rt.d);
  for (index a = 0; a < b; ++a) std::fill_n(dxk.row(a), rt.d, T(0));
  const auto kb = rt.k.block(j, 0, b, rt.d);
  feature_block_vjp(rt.fk, rt.fw, kb, phik, dphik, dxk);
  for (index a = 0; a < b; ++a)
    for (index c = 0; c < rt.d; ++c) {
      dparam += double(dxk(a, c)) * double(kb(a, c));
      if (!g.dk.empty()) g.dk(j + a, c) += dxk(a, c);
    }
}

// E = [dN | dD] of chunk c's rows (w.e) from their D (w.dsum), dout and out.
template <class T>
matrix_view<T> chunk_e(const route<T>& rt, index c, const_matrix_view<T> dout,
                       const_matrix_view<T> out, work<T>& w) {
  const index b = rt.chunk_rows(c), dv = rt.dv;
  const matrix_view<T> e = w.e.view().block(0, 0, b, rt.sw);
  for (index x = 0; x < b; ++x) {
    const index i = rt.row(c * kChunk + x);
    const T dsum = w.dsum[static_cast<std::size_t>(x)];
    const T inv = dsum > T(0) ? T(1) / dsum : T(0);  // empty rows: no gradient
    T dd = 0;
    for (index col = 0; col < dv; ++col) {
      e(x, col) = dout(i, col) * inv;
      dd += dout(i, col) * out(i, col);
    }
    e(x, dv) = -dd * inv;
  }
  return e;
}

// Keys [j0, j1) seen through a prefix whose queries sum to G = Σ φ(q) Eᵀ: dφ(k) = [v | 1] Gᵀ,
// dv += φ(k) G_v.
template <class T>
void key_side(const route<T>& rt, index j0, index j1, const matrix<T>& gs, work<T>& w,
              smooth_grads<T>& g, double& dparam) {
  const index r = rt.r, dv = rt.dv;
  for (index j = j0; j < j1; j += kKeyBlock) {
    const index b = std::min(kKeyBlock, j1 - j);
    const auto phik = key_features(rt, j, b, w);
    const matrix_view<T> dphik = w.dphik.view().block(0, 0, b, r);
    if (dv > 0)
      gemm(false, true, b, r, dv, T(1), rt.v.row(j), rt.v.ld, gs.data(), rt.sw, T(0), dphik.data,
           dphik.ld);
    for (index a = 0; a < b; ++a)
      for (index l = 0; l < r; ++l) dphik(a, l) = (dv > 0 ? dphik(a, l) : T(0)) + gs(l, dv);
    if (!g.dv.empty() && dv > 0)
      gemm(false, false, b, dv, r, T(1), phik.data, phik.ld, gs.data(), rt.sw, T(1), g.dv.row(j),
           g.dv.ld);
    key_grad(rt, j, phik, dphik, w, g, dparam);
  }
}

// Phase A for chunk c: D, E, dφ(q) → dq; the masked keys' dk, dv; tot += φ(q)ᵀE; the state moves
// on when `advance`. D is kept in dsum_all (by position in L order) for phase B.
template <class T>
void chunk_forward_walk(const route<T>& rt, index c, matrix_view<T> s, bool advance,
                        const_matrix_view<T> dout, const_matrix_view<T> out, work<T>& w,
                        smooth_grads<T>& g, std::vector<T>& dsum_all, matrix<T>& tot,
                        double& dparam) {
  const index b = rt.chunk_rows(c), r = rt.r, dv = rt.dv, sw = rt.sw;
  const auto cu = static_cast<std::size_t>(c);
  const auto qc = chunk_queries(rt, c, w);
  const matrix_view<T> phiq = w.phiq.view().block(0, 0, b, r);
  feature_block(rt.fk, rt.fw, qc, phiq, nullptr, nullptr);
  for (index x = 0; x < b; ++x) {  // D = φ(q)ᵀ z(lo_c) + the masked keys' weights
    T acc = 0;
    for (index l = 0; l < r; ++l) acc += phiq(x, l) * s(l, dv);
    w.dsum[static_cast<std::size_t>(x)] = acc;
  }
  for (index j = rt.lo[cu]; j < rt.hi[cu]; j += kKeyBlock) {
    const index bk = std::min(kKeyBlock, rt.hi[cu] - j);
    const auto a = intra_weights(rt, c, phiq, key_features(rt, j, bk, w), j, w);
    for (index x = 0; x < b; ++x)
      for (index y = 0; y < bk; ++y) w.dsum[static_cast<std::size_t>(x)] += a(x, y);
  }
  for (index x = 0; x < b; ++x)
    dsum_all[static_cast<std::size_t>(c * kChunk + x)] = w.dsum[static_cast<std::size_t>(x)];
  const auto e = chunk_e(rt, c, dout, out, w);
  const matrix_view<T> dphiq = w.dphiq.view().block(0, 0, b, r);
  gemm(false, true, b, r, sw, T(1), e.data, e.ld, s.data, s.ld, T(0), dphiq.data, dphiq.ld);
  gemm(true, false, r, sw, b, T(1), phiq.data, phiq.ld, e.data, e.ld, T(1), tot.data(), sw);
  for (index j = rt.lo[cu]; j < rt.hi[cu]; j += kKeyBlock) {
    const index bk = std::min(kKeyBlock, rt.hi[cu] - j);
    const auto phik = key_features(rt, j, bk, w);
    const auto a = intra_weights(rt, c, phiq, phik, j, w);
    const matrix_view<T> da = w.da.view().block(0, 0, b, bk);  // dN·vᵀ + dD, masked
    if (dv > 0)
      gemm(false, true, b, bk, dv, T(1), e.data, e.ld, rt.v.row(j), rt.v.ld, T(0), da.data, da.ld);
    for (index x = 0; x < b; ++x) {
      const index allowed = std::max<index>(0, rt.length(c * kChunk + x) - j);
      for (index y = 0; y < bk; ++y)
        da(x, y) = y < allowed ? (dv > 0 ? da(x, y) : T(0)) + e(x, dv) : T(0);
    }
    gemm(false, false, b, r, bk, T(1), da.data, da.ld, phik.data, phik.ld, T(1), dphiq.data,
         dphiq.ld);
    const matrix_view<T> dphik = w.dphik.view().block(0, 0, bk, r);
    gemm(true, false, bk, r, b, T(1), da.data, da.ld, phiq.data, phiq.ld, T(0), dphik.data,
         dphik.ld);
    if (!g.dv.empty() && dv > 0)
      gemm(true, false, bk, dv, b, T(1), a.data, a.ld, e.data, e.ld, T(1), g.dv.row(j), g.dv.ld);
    key_grad(rt, j, phik, dphik, w, g, dparam);
    if (advance) state_add(rt, s, phik, j);
  }
  if (advance) state_add_keys(rt, s, rt.hi[cu], rt.lo[cu + 1], w);
  const matrix_view<T> dxq = w.dxq.view().block(0, 0, b, rt.d);
  for (index x = 0; x < b; ++x) std::fill_n(dxq.row(x), rt.d, T(0));
  feature_block_vjp(rt.fk, rt.fw, qc, phiq, dphiq, dxq);
  for (index x = 0; x < b; ++x) {
    const index i = rt.row(c * kChunk + x);
    for (index col = 0; col < rt.d; ++col) {
      dparam += double(dxq(x, col)) * double(qc(x, col));
      if (!g.dq.empty()) g.dq(i, col) += dxq(x, col);
    }
  }
}

// Phase B for segment s: from its last chunk to its first, the keys between a chunk's lo and the
// next chunk's lo take G = Σ over the later chunks of φ(q)ᵀE; then G gains this chunk's.
template <class T>
void segment_backward_walk(const route<T>& rt, index s, matrix<T> gs, const_matrix_view<T> dout,
                           const_matrix_view<T> out, const std::vector<T>& dsum_all, work<T>& w,
                           smooth_grads<T>& g, double& dparam) {
  const index c0 = rt.seg[static_cast<std::size_t>(s)],
              c1 = rt.seg[static_cast<std::size_t>(s + 1)];
  for (index c = c1 - 1; c >= c0; --c) {
    const auto cu = static_cast<std::size_t>(c);
    if (c + 1 < rt.chunks()) key_side(rt, rt.lo[cu], rt.lo[cu + 1], gs, w, g, dparam);
    if (c == c0) break;  // the keys before this segment take G from the segment before
    const index b = rt.chunk_rows(c);
    const matrix_view<T> phiq = w.phiq.view().block(0, 0, b, rt.r);
    feature_block(rt.fk, rt.fw, chunk_queries(rt, c, w), phiq, nullptr, nullptr);
    for (index x = 0; x < b; ++x)
      w.dsum[static_cast<std::size_t>(x)] = dsum_all[static_cast<std::size_t>(c * kChunk + x)];
    const auto e = chunk_e(rt, c, dout, out, w);
    gemm(true, false, rt.r, rt.sw, b, T(1), phiq.data, phiq.ld, e.data, e.ld, T(1), gs.data(),
         rt.sw);
  }
}

template <class T>
void backward_route(const route<T>& rt, smooth_grads<T>& g, const_matrix_view<T> dout,
                    const_matrix_view<T> out) {
  const index ns = rt.segments();
  const auto starts = segment_starts(rt);
  std::vector<T> dsum_all(static_cast<std::size_t>(rt.n));
  std::vector<matrix<T>> tot(static_cast<std::size_t>(ns), matrix<T>(rt.r, rt.sw));
  std::vector<double> dparam_a(static_cast<std::size_t>(ns), 0.0);
  run_tasks(rt.threads, ns, [&](index s) {
    const auto su = static_cast<std::size_t>(s);
    work<T>& w = thread_work<T>(rt.d, rt.r, rt.sw);
    matrix<T> state = starts[su];
    const index c1 = rt.seg[su + 1];
    for (index c = rt.seg[su]; c < c1; ++c)
      chunk_forward_walk(rt, c, state.view(), c + 1 < c1, dout, out, w, g, dsum_all, tot[su],
                         dparam_a[su]);
  });
  // after[s] = Σ_{s' > s} tot[s']; the keys before the first chunk's prefix take them all.
  std::vector<matrix<T>> after(static_cast<std::size_t>(ns), matrix<T>(rt.r, rt.sw));
  matrix<T> total(rt.r, rt.sw);
  for (index s = ns - 1; s >= 0; --s) {
    const auto su = static_cast<std::size_t>(s);
    after[su] = total;
    for (index t = 0; t < total.size(); ++t) total.data()[t] += tot[su].data()[t];
  }
  const auto head = key_pieces(0, rt.lo.empty() ? 0 : rt.lo.front(), rt.m);
  const index tasks = ns + static_cast<index>(head.size());
  std::vector<double> dparam_b(static_cast<std::size_t>(tasks), 0.0);
  run_tasks(rt.threads, tasks, [&](index t) {
    const auto tu = static_cast<std::size_t>(t);
    work<T>& w = thread_work<T>(rt.d, rt.r, rt.sw);
    if (t < ns)
      segment_backward_walk(rt, t, after[tu], dout, out, dsum_all, w, g, dparam_b[tu]);
    else
      key_side(rt, head[tu - static_cast<std::size_t>(ns)].first,
               head[tu - static_cast<std::size_t>(ns)].second, total, w, g, dparam_b[tu]);
  });
  if (!g.want_dparam || rt.fk.dparam_factor == 0) return;
  double acc = 0;
  for (double x : dparam_a) acc += x;
  for (double x : dparam_b) acc += x;
  g.dparam[0] += rt.fk.dparam_factor * acc;
}

}  // namespace

template <class T>
void backward(smooth_grads<T>& grads, const_matrix_view<T> dout, const_matrix_view<T> out,
              const_matrix_view<T> q, const_matrix_view<T> k, const_matrix_view<T> v,
              const kernel_spec& kern, const mask& msk, const smooth_options& opt) {
  const auto rk = resolve(kern, q.cols, std::is_same_v<T, float>);
  validate_inputs(q, k, v, true, msk, opt, rk);
  check_shape(dout.rows == q.rows && dout.cols == v.cols, "dout must be n x dv");
  check_shape(out.rows == q.rows && out.cols == v.cols, "out must be n x dv");
  check_shape(grads.dq.empty() || (grads.dq.rows == q.rows && grads.dq.cols == q.cols),
              "dq must be n x d");
  check_shape(grads.dk.empty() || (grads.dk.rows == k.rows && grads.dk.cols == k.cols),
              "dk must be m x d");
  check_shape(grads.dv.empty() || (grads.dv.rows == v.rows && grads.dv.cols == v.cols),
              "dv must be m x dv");
  const auto sc = scale_inputs(q, k, opt);
  const route<T> rt = make_route(rk, sc.q, sc.k, v, msk, opt);
  if (!sc.scaled) {
    backward_route(rt, grads, dout, out);
    return;
  }
  // Per-dimension bandwidths (rff): gradients w.r.t. the scaled inputs, then the chain rule.
  matrix<T> dqs(q.rows, q.cols), dks(k.rows, k.cols);
  smooth_grads<T> g(dqs.view(), dks.view(), grads.dv);
  g.want_dparam = grads.want_dparam;
  backward_route(rt, g, dout, out);
  grads.dparam[0] += g.dparam[0];
  unscale_grads(grads, dqs, dks, sc, opt);
}

#define KF_INSTANTIATE(T)                                                                     \
  template void backward<T>(smooth_grads<T>&, const_matrix_view<T>, const_matrix_view<T>,     \
                            const_matrix_view<T>, const_matrix_view<T>, const_matrix_view<T>, \
                            const kernel_spec&, const mask&, const smooth_options&);
KF_INSTANTIATE(float)
KF_INSTANTIATE(double)
#undef KF_INSTANTIATE

}  // namespace kf::detail::features
