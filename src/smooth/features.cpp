// The feature-map route of the primitive, forward (smooth/features.hpp describes the walk):
// O((n + m)·r·(d + dv)) work, O(r·dv) state per task, nothing n × m.
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "smooth/features.hpp"

namespace kf::detail::features {

// One work<T> per thread and T, rebuilt only when (d, r, sw) change, so repeated calls of the
// same sizes (attention's heads, step after step) allocate nothing.
template <class T>
work<T>& thread_work(index d, index r, index sw) {
  static thread_local std::unique_ptr<work<T>> w;
  if (!w || w->qrows.cols() != d || w->phiq.cols() != r || w->nd.cols() != sw)
    w = std::make_unique<work<T>>(d, r, sw);
  return *w;
}
template work<float>& thread_work<float>(index, index, index);
template work<double>& thread_work<double>(index, index, index);

// The route depends on the mask's prefix lengths, n and m only (never on the thread count), so
// the chunk and segment cuts and hence the summation order are the same on any machine.
template <class T>
route<T> make_route(const resolved_kernel& rk, const_matrix_view<T> q, const_matrix_view<T> k,
                    const_matrix_view<T> v, const mask& msk, const smooth_options& opt) {
  route<T> rt;
  rt.fk = *rk.features();
  rt.fw = feature_weights_of<T>(rt.fk);
  rt.q = q;
  rt.k = k;
  rt.v = v;
  rt.n = q.rows;
  rt.m = k.rows;
  rt.d = q.cols;
  rt.dv = v.cols;
  rt.r = rt.fk.r;
  rt.sw = rt.dv + 1;
  rt.threads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  msk.prefix_lengths(rt.n, rt.m, rt.len);  // validate_inputs checked that it is a prefix mask
  rt.order.resize(static_cast<std::size_t>(rt.n));
  std::iota(rt.order.begin(), rt.order.end(), index(0));
  rt.sorted = std::is_sorted(rt.len.begin(), rt.len.end());
  if (!rt.sorted)
    std::stable_sort(rt.order.begin(), rt.order.end(), [&](index a, index b) {
      return rt.len[static_cast<std::size_t>(a)] < rt.len[static_cast<std::size_t>(b)];
    });
  // Rows are in L order, so a chunk's first and last rows carry its smallest and largest L.
  const index nc = (rt.n + kChunk - 1) / kChunk;
  for (index c = 0; c < nc; ++c) {
    rt.lo.push_back(rt.length(c * kChunk));
    rt.hi.push_back(rt.length(c * kChunk + rt.chunk_rows(c) - 1));
  }
  const index ns = std::min(nc, kMaxSegments);
  // ns + 1 boundaries splitting the nc chunks as evenly as integers allow.
  for (index s = 0; s <= ns; ++s) rt.seg.push_back(ns == 0 ? 0 : s * nc / ns);
  // favor: one exponent shift for every key that any row sees (their largest exponent), so the
  // keys' features are ≤ 1 and their sums cannot overflow.
  const index lmax = nc > 0 ? rt.hi.back() : 0;
  if (rt.fk.kind == feature_kind::favor && lmax > 0) {
    const auto pieces = key_pieces(0, lmax, rt.m);
    std::vector<double> mx(pieces.size());
    run_tasks(rt.threads, static_cast<index>(pieces.size()), [&](index t) {
      matrix<T> scratch(kKeyBlock, rt.r);
      const auto [a, b] = pieces[static_cast<std::size_t>(t)];
      mx[static_cast<std::size_t>(t)] =
          feature_max_exponent(rt.fk, rt.fw, rt.k.block(a, 0, b - a, rt.d), scratch);
    });
    rt.key_shift = *std::max_element(mx.begin(), mx.end());
    // φ_true(k) = e^{key_ls} φ(k): the shift and favor's 1/√r, taken out once for every key.
    rt.key_ls = rt.key_shift - 0.5 * std::log(double(rt.r));
  }
  return rt;
}

// Returns ns states (r, sw), starts[s] = S(lo of segment s's first chunk). The keys below each
// start are cut into pieces (key_pieces: sizes from m only), summed in parallel, and the pieces
// are then added in key order as a prefix over segments — deterministic for any thread count.
template <class T>
std::vector<matrix<T>> segment_starts(const route<T>& rt) {
  const index ns = rt.segments();
  std::vector<std::pair<index, index>> pieces;
  std::vector<index> first_seg;  // the first segment whose start includes the piece
  index prev = 0;
  for (index s = 0; s < ns; ++s) {
    const index b = rt.lo[static_cast<std::size_t>(rt.seg[static_cast<std::size_t>(s)])];
    for (const auto& p : key_pieces(prev, b, rt.m)) {
      pieces.push_back(p);
      first_seg.push_back(s);
    }
    prev = b;
  }
  std::vector<matrix<T>> sums(pieces.size());
  run_tasks(rt.threads, static_cast<index>(pieces.size()), [&](index t) {
    const auto tu = static_cast<std::size_t>(t);
    sums[tu] = matrix<T>(rt.r, rt.sw);  // (r, dv + 1), zeroed
    state_add_keys(rt, sums[tu].view(), pieces[tu].first, pieces[tu].second,
                   thread_work<T>(rt.d, rt.r, rt.sw));
  });
  std::vector<matrix<T>> starts(static_cast<std::size_t>(ns), matrix<T>(rt.r, rt.sw));
  std::size_t p = 0;
  for (index s = 0; s < ns; ++s) {
    auto& st = starts[static_cast<std::size_t>(s)];
    if (s > 0) st = starts[static_cast<std::size_t>(s - 1)];
    for (; p < pieces.size() && first_seg[p] == s; ++p)
      for (index t = 0; t < st.size(); ++t) st.data()[t] += sums[p].data()[t];
  }
  return starts;
}

namespace {

// out_sq's states M_c = Σ_j v_jc φ(k_j)φ(k_j)ᵀ (r × r per value column), over the keys every row
// sees (a uniform mask): Σ_j p_ij² v_jc = φ(q_i)ᵀ M_c φ(q_i) / D_i².
template <class T>
std::vector<matrix<T>> sq_states(const route<T>& rt) {
  std::vector<matrix<T>> msq(static_cast<std::size_t>(rt.dv), matrix<T>(rt.r, rt.r));
  // A uniform mask (checked by forward): every row sees the keys [0, lo_0).
  const index keys = rt.lo.empty() ? 0 : rt.lo.front();
  work<T>& w = thread_work<T>(rt.d, rt.r, rt.sw);
  matrix<T> y(kKeyBlock, rt.r);
  for (index j = 0; j < keys; j += kKeyBlock) {
    const index b = std::min(kKeyBlock, keys - j);
    const auto phik = key_features(rt, j, b, w);
    for (index c = 0; c < rt.dv; ++c) {
      for (index a = 0; a < b; ++a)
        // y = diag(v_·c) φ(k), (b, r): then M_c += yᵀ φ(k) by one GEMM.
        for (index l = 0; l < rt.r; ++l) y(a, l) = phik(a, l) * rt.v(j + a, c);
      gemm(true, false, rt.r, rt.r, b, T(1), y.data(), rt.r, phik.data, phik.ld, T(1),
           msq[static_cast<std::size_t>(c)].data(), rt.r);
    }
  }
  return msq;
}

// out_sq rows of chunk c: φ(q)ᵀ M_c φ(q) / D², with z = φ(q) M_c in w.dphiq.
template <class T>
void chunk_sq(const route<T>& rt, index c, cview<T> phiq, cview<T> nd,
              const std::vector<matrix<T>>& msq, work<T>& w, matrix_view<T> out_sq) {
  const index b = phiq.rows;
  for (index col = 0; col < rt.dv; ++col) {
    gemm(false, false, b, rt.r, rt.r, T(1), phiq.data, phiq.ld,
         msq[static_cast<std::size_t>(col)].data(), rt.r, T(0), w.dphiq.data(), rt.r);
    for (index x = 0; x < b; ++x) {
      const T dsum = nd(x, rt.dv);
      T acc = 0;
      for (index l = 0; l < rt.r; ++l) acc += w.dphiq(x, l) * phiq(x, l);
      out_sq(rt.row(c * kChunk + x), col) = dsum > T(0) ? acc / (dsum * dsum) : T(0);
    }
  }
}

// One chunk: [N | D] from the state and the masked keys [lo_c, hi_c); the state moves on to the
// next chunk's lo when `advance`. Returns the chunk's empty rows.
template <class T>
index forward_chunk(const route<T>& rt, index c, matrix_view<T> s, bool advance, work<T>& w,
                    matrix_view<T> out, std::span<T> lse, const std::vector<matrix<T>>& msq,
                    matrix_view<T> out_sq) {
  const index b = rt.chunk_rows(c), r = rt.r, dv = rt.dv;
  const auto cu = static_cast<std::size_t>(c);
  const auto qc = chunk_queries(rt, c, w);
  const matrix_view<T> phiq = w.phiq.view().block(0, 0, b, r);
  feature_block(rt.fk, rt.fw, qc, phiq, w.ls.data(), nullptr);
  const matrix_view<T> nd = w.nd.view().block(0, 0, b, rt.sw);
  // nd (b, dv + 1) = φ(q) (b, r) · S(lo_c) (r, dv + 1): the keys every row of the chunk sees.
  gemm(false, false, b, rt.sw, r, T(1), phiq.data, phiq.ld, s.data, s.ld, T(0), nd.data, nd.ld);
  // Keys in [lo_c, hi_c) are seen by some rows of the chunk only: exact masked products.
  for (index j = rt.lo[cu]; j < rt.hi[cu]; j += kKeyBlock) {
    const index bk = std::min(kKeyBlock, rt.hi[cu] - j);
    const auto phik = key_features(rt, j, bk, w);
    const auto a = intra_weights(rt, c, phiq, phik, j, w);
    if (dv > 0)
      gemm(false, false, b, dv, bk, T(1), a.data, a.ld, rt.v.row(j), rt.v.ld, T(1), nd.data, nd.ld);
    for (index x = 0; x < b; ++x)
      for (index y = 0; y < bk; ++y) nd(x, dv) += a(x, y);
    if (advance) state_add(rt, s, phik, j);  // this chunk is done with the state
  }
  // Keys between this chunk's largest L and the next chunk's smallest reach no row here.
  if (advance) state_add_keys(rt, s, rt.hi[cu], rt.lo[cu + 1], w);
  if (!msq.empty()) chunk_sq(rt, c, phiq, nd, msq, w, out_sq);
  index empty = 0;
  for (index x = 0; x < b; ++x) {
    const index i = rt.row(c * kChunk + x);
    const T dsum = nd(x, dv);
    if (!std::isfinite(dsum))
      throw std::overflow_error("smooth: the feature-map sum of query row " + std::to_string(i) +
                                " overflowed (inputs beyond the floating-point range of φ)");
    const bool is_empty = !(dsum > T(0));
    const T inv = is_empty ? T(0) : T(1) / dsum;
    for (index col = 0; col < dv; ++col) out(i, col) = nd(x, col) * inv;
    if (!lse.empty())
      lse[static_cast<std::size_t>(i)] =
          is_empty ? -std::numeric_limits<T>::infinity()
                   : static_cast<T>(std::log(double(dsum)) + w.ls[static_cast<std::size_t>(x)] +
                                    rt.key_ls);
    empty += is_empty ? 1 : 0;
  }
  return empty;
}

}  // namespace

// Throws std::invalid_argument on bad inputs or shapes (as smooth_forward_sq), and for out_sq
// unless the mask is uniform and dv·r² ≤ 2^26 (the M_c states are dv matrices of r × r);
// std::overflow_error when a row's feature sum is not finite.
template <class T>
smooth_stats forward(matrix_view<T> out, matrix_view<T> out_sq, std::span<T> lse,
                     const_matrix_view<T> q, const_matrix_view<T> k, const_matrix_view<T> v,
                     const kernel_spec& kern, const mask& msk, const smooth_options& opt) {
  const auto rk = resolve(kern, q.cols, std::is_same_v<T, float>);
  validate_inputs(q, k, v, true, msk, opt, rk);
  check_shape(out.rows == q.rows && out.cols == v.cols,
              "out is " + std::to_string(out.rows) + " x " + std::to_string(out.cols) +
                  ", expected n x dv = " + std::to_string(q.rows) + " x " + std::to_string(v.cols));
  check_shape(out_sq.empty() || (out_sq.rows == q.rows && out_sq.cols == v.cols),
              "out_sq must be n x dv");
  check_shape(lse.empty() || static_cast<index>(lse.size()) == q.rows, "lse must have n entries");
  const auto sc = scale_inputs(q, k, opt);
  const route<T> rt = make_route(rk, sc.q, sc.k, v, msk, opt);
  const bool want_sq = !out_sq.empty();
  check_shape(!want_sq || rt.uniform(),
              "the squared-weight output of a feature-map kernel needs every row to see the same "
              "keys (mask none or one padding length), not '" +
                  msk.describe() + "'");
  check_shape(!want_sq || double(rt.dv) * double(rt.r) * double(rt.r) <= double(1 << 26),
              "the squared-weight output of a feature-map kernel keeps dv x r x r numbers: " +
                  std::to_string(rt.dv) + " x " + std::to_string(rt.r) + "^2 is too many");
  const std::vector<matrix<T>> msq = want_sq ? sq_states(rt) : std::vector<matrix<T>>{};
  const auto starts = segment_starts(rt);
  // Segments run in parallel, each walking its chunks in order from its own starting state.
  std::atomic<index> empty{0};
  run_tasks(rt.threads, rt.segments(), [&](index s) {
    work<T>& w = thread_work<T>(rt.d, rt.r, rt.sw);
    matrix<T> state = starts[static_cast<std::size_t>(s)];
    const index c1 = rt.seg[static_cast<std::size_t>(s + 1)];
    for (index c = rt.seg[static_cast<std::size_t>(s)]; c < c1; ++c)
      empty += forward_chunk(rt, c, state.view(), c + 1 < c1, w, out, lse, msq, out_sq);
  });
  return {empty.load(), smooth_route::features};
}

#define KF_INSTANTIATE(T)                                                                       \
  template route<T> make_route<T>(const resolved_kernel&, const_matrix_view<T>,                 \
                                  const_matrix_view<T>, const_matrix_view<T>, const mask&,      \
                                  const smooth_options&);                                       \
  template std::vector<matrix<T>> segment_starts<T>(const route<T>&);                           \
  template smooth_stats forward<T>(                                                             \
      matrix_view<T>, matrix_view<T>, std::span<T>, const_matrix_view<T>, const_matrix_view<T>, \
      const_matrix_view<T>, const kernel_spec&, const mask&, const smooth_options&);
KF_INSTANTIATE(float)
KF_INSTANTIATE(double)
#undef KF_INSTANTIATE

}  // namespace kf::detail::features
