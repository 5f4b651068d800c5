// Internal: the feature-map route of the primitive (src/smooth/features.cpp: forward,
// src/smooth/features_backward.cpp: backward) — the decision's data and the steps both share.
//
// Every mask it serves gives row i a prefix of the keys, [0, L_i) (masks.hpp prefix_lengths):
// none (L = m), causal(offset) (L = i + offset + 1), padding, and their combinations. Rows are
// taken in order of L (stable; already so for causal and one padding length) and cut into
// chunks of kChunk rows; chunk c's rows have L in [lo_c, hi_c]. With the state
//   S(P) = [Σ_{j<P} φ(k_j) v_jᵀ | Σ_{j<P} φ(k_j)]                 r × (dv + 1)
// a row of chunk c gets [N_i | D_i] = φ(q_i)ᵀ S(lo_c) + Σ_{lo_c ≤ j < L_i} φ(q_i)ᵀφ(k_j) [v_j | 1]
// (the second sum exact, on a masked kChunk × kKeyBlock product), out_i = N_i / D_i, and
// lse_i = log D_i plus the log-scales taken out of φ(q_i) and φ(k). The state moves from S(lo_c)
// to S(lo_{c+1}) by the keys in between. Consecutive chunks form up to kMaxSegments segments
// (a function of n only); each segment's starting state is a sum of key pieces (a function of the
// sizes only), so results do not depend on the thread count. A causal mask is thus the RNN of
// linear attention walked in chunks; no mask at all is one state shared by every row.
#pragma once

#include <omp.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <numeric>
#include <span>
#include <vector>

#include "detail/blas.hpp"
#include "detail/feature_maps.hpp"
#include "smooth/common.hpp"

namespace kf::detail::features {

constexpr index kChunk = 64;         // query rows per chunk
constexpr index kKeyBlock = 256;     // keys per feature block
constexpr index kMaxSegments = 8;    // segments of chunks (parallel tasks over queries)
constexpr index kMaxKeyPieces = 16;  // pieces of a long key range (parallel tasks over keys)

template <class T>
struct route {
  feature_kernel fk;
  feature_weights<T> fw;
  const_matrix_view<T> q, k, v;
  index n = 0, m = 0, d = 0, dv = 0, r = 0, sw = 0;  // sw = dv + 1: the state's columns
  std::vector<index> len;                            // L_i of row i
  std::vector<index> order;                          // rows in order of L (stable)
  bool sorted = true;                                // order is the identity
  std::vector<index> lo, hi;  // per chunk: the smallest and largest L of its rows
  std::vector<index> seg;     // segment s holds chunks [seg[s], seg[s + 1])
  double key_shift = 0;       // favor: every key's exponent shift (their largest exponent)
  double key_ls = 0;          // the log-scale taken out of every φ(k_j)
  int threads = 1;

  index chunks() const { return static_cast<index>(lo.size()); }
  index segments() const { return static_cast<index>(seg.size()) - 1; }
  index chunk_rows(index c) const { return std::min(kChunk, n - c * kChunk); }
  index row(index t) const { return order[static_cast<std::size_t>(t)]; }
  index length(index t) const { return len[static_cast<std::size_t>(row(t))]; }
  bool uniform() const { return lo.empty() || lo.front() == hi.back(); }  // one key set
  const double* shift() const { return fk.kind == feature_kind::favor ? &key_shift : nullptr; }
};

// The per-task buffers (a task is a segment or a key piece).
template <class T>
struct work {
  matrix<T> qrows, phiq, dphiq, dxq;  // kChunk × d, r, r, d
  matrix<T> phik, dphik, dxk;         // kKeyBlock × r, r, d
  matrix<T> nd, e;                    // kChunk × sw: [N | D] and [dN | dD]
  matrix<T> a, da;                    // kChunk × kKeyBlock: intra-chunk weights, their gradient
  std::vector<double> ls;             // kChunk: the log-scales taken out of φ(q)
  std::vector<T> dsum;                // kChunk: D of the chunk's rows (backward)
  work(index d, index r, index sw)
      : qrows(kChunk, d),
        phiq(kChunk, r),
        dphiq(kChunk, r),
        dxq(kChunk, d),
        phik(kKeyBlock, r),
        dphik(kKeyBlock, r),
        dxk(kKeyBlock, d),
        nd(kChunk, sw),
        e(kChunk, sw),
        a(kChunk, kKeyBlock),
        da(kChunk, kKeyBlock),
        ls(kChunk),
        dsum(kChunk) {}
};

// This thread's buffers (kept across calls of the same sizes).
template <class T>
work<T>& thread_work(index d, index r, index sw);

// Builds the route: φ, the prefix lengths, the order, chunks, segments and favor's key shift.
// q and k are the (possibly per-dimension scaled) inputs; the mask was validated.
template <class T>
route<T> make_route(const resolved_kernel& rk, const_matrix_view<T> q, const_matrix_view<T> k,
                    const_matrix_view<T> v, const mask& msk, const smooth_options& opt);

// Runs fn(task) for task in [0, count), in parallel on `threads` threads with BLAS single-threaded
// inside (so results do not depend on the thread count); rethrows the first exception.
template <class Fn>
void run_tasks(int threads, index count, Fn&& fn) {
  if (omp_in_parallel()) {  // a caller's region (attention's heads): this thread does it all
    for (index t = 0; t < count; ++t) fn(t);
    return;
  }
  std::exception_ptr err;
  std::mutex mu;
#pragma omp parallel num_threads(std::max(1, threads))
  {
    omp_set_num_threads(1);
#pragma omp for schedule(dynamic, 1)
    for (index t = 0; t < count; ++t) {
      try {
        fn(t);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!err) err = std::current_exception();
      }
    }
  }
  if (err) std::rethrow_exception(err);
}

// The rows of chunk c (in L order) as a view: q itself when the order is the identity, else
// gathered into w.qrows.
template <class T>
const_matrix_view<T> chunk_queries(const route<T>& rt, index c, work<T>& w) {
  const index t0 = c * kChunk, b = rt.chunk_rows(c);
  if (rt.sorted) return rt.q.block(t0, 0, b, rt.d);
  for (index a = 0; a < b; ++a)
    std::copy_n(rt.q.row(rt.row(t0 + a)), rt.d, w.qrows.data() + a * rt.d);
  return w.qrows.cview().block(0, 0, b, rt.d);
}

// φ of keys [j, j + b) (b ≤ kKeyBlock) into w.phik, stabilized by the keys' common shift.
template <class T>
matrix_view<T> key_features(const route<T>& rt, index j, index b, work<T>& w) {
  const matrix_view<T> phik = w.phik.view().block(0, 0, b, rt.r);
  feature_block(rt.fk, rt.fw, rt.k.block(j, 0, b, rt.d), phik, nullptr, rt.shift());
  return phik;
}

// S += φ(k)ᵀ [v | 1] for the b keys from j whose features are in phik.
template <class T>
void state_add(const route<T>& rt, matrix_view<T> s, cview<T> phik, index j) {
  const index b = phik.rows;
  if (rt.dv > 0)
    gemm(true, false, rt.r, rt.dv, b, T(1), phik.data, phik.ld, rt.v.row(j), rt.v.ld, T(1), s.data,
         s.ld);
  for (index a = 0; a < b; ++a)
    for (index l = 0; l < rt.r; ++l) s(l, rt.dv) += phik(a, l);
}

// S += the keys [j0, j1).
template <class T>
void state_add_keys(const route<T>& rt, matrix_view<T> s, index j0, index j1, work<T>& w) {
  for (index j = j0; j < j1; j += kKeyBlock) {
    const index b = std::min(kKeyBlock, j1 - j);
    state_add(rt, s, key_features(rt, j, b, w), j);
  }
}

// a (b × bk) ← φ(q)φ(k_J)ᵀ for keys J = [j, j + bk), zero where key j + c ≥ L of the row.
template <class T>
matrix_view<T> intra_weights(const route<T>& rt, index c, cview<T> phiq, cview<T> phik, index j,
                             work<T>& w) {
  const index b = phiq.rows, bk = phik.rows;
  const matrix_view<T> a = w.a.view().block(0, 0, b, bk);
  gemm(false, true, b, bk, rt.r, T(1), phiq.data, phiq.ld, phik.data, phik.ld, T(0), a.data, a.ld);
  for (index x = 0; x < b; ++x) {
    const index L = rt.length(c * kChunk + x);
    for (index y = std::max<index>(0, L - j); y < bk; ++y) a(x, y) = T(0);
  }
  return a;
}

// The key pieces and the starting state of every segment: starts[s] = S(lo of its first chunk).
template <class T>
std::vector<matrix<T>> segment_starts(const route<T>& rt);

// Cuts [j0, j1) into pieces of at most a size that depends on m only.
inline std::vector<std::pair<index, index>> key_pieces(index j0, index j1, index m) {
  const index size =
      std::max(4 * kKeyBlock,
               ((m + kMaxKeyPieces - 1) / kMaxKeyPieces + kKeyBlock - 1) / kKeyBlock * kKeyBlock);
  std::vector<std::pair<index, index>> out;
  for (index j = j0; j < j1; j += size) out.emplace_back(j, std::min(j1, j + size));
  return out;
}

// The route's entries, called by smooth_forward_sq / smooth_backward (src/smooth/smooth.cpp) for a
// feature-map kernel; same contracts as those.
template <class T>
smooth_stats forward(matrix_view<T> out, matrix_view<T> out_sq, std::span<T> lse,
                     const_matrix_view<T> q, const_matrix_view<T> k, const_matrix_view<T> v,
                     const kernel_spec& kern, const mask& msk, const smooth_options& opt);
template <class T>
void backward(smooth_grads<T>& grads, const_matrix_view<T> dout, const_matrix_view<T> out,
              const_matrix_view<T> q, const_matrix_view<T> k, const_matrix_view<T> v,
              const kernel_spec& kern, const mask& msk, const smooth_options& opt);

}  // namespace kf::detail::features
