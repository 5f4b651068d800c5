// Top-k masks on the fast path: tiles stream the kernel values exactly as the dense path does,
// each query row keeps a bounded heap of its k best keys (by weight, or by distance for KNN;
// ties → smaller distance, then smaller index), and the selected pairs are then evaluated
// exactly, pair by pair, with the same row code as the reference. Selection is treated as fixed
// in the backward pass (gradients flow through the selected weights only).
#include <algorithm>
#include <atomic>

#include "smooth/pairs.hpp"
#include "smooth/route.hpp"
#include "smooth/tiles/parallel_blocks.hpp"
#include "smooth/tiles/weight_tile.hpp"

namespace kf::detail::tiles {
namespace {

struct candidate {
  double w;   // weight (or log-weight) as the tile computed it
  double r2;  // squared distance
  index j;
};

// Returns, per query row, its selected keys (at most k, ascending): the keys that pass the other
// predicates and rank best. Both passes call it, so forward and backward see the same selection.
template <class T>
std::vector<std::vector<index>> select_topk(const plan<T>& pl) {
  const index k = pl.msk->topk_k();
  const bool by_w = pl.msk->topk_by() == topk_rank::weight;
  // better(a, b): a ranks before b. As a heap comparator it keeps the WORST kept key on top.
  auto better = [by_w](const candidate& a, const candidate& b) {
    if (by_w && a.w != b.w) return a.w > b.w;
    if (a.r2 != b.r2) return a.r2 < b.r2;
    return a.j < b.j;
  };
  std::vector<std::vector<index>> sel(static_cast<std::size_t>(pl.n));
  const index rows = kBqTopk;
  parallel_blocks(pl, rows, [&](scratch<T>& sc, index qb) {
    const index i0 = qb * rows, bq = std::min(rows, pl.n - i0);
    std::vector<std::vector<candidate>> heaps(static_cast<std::size_t>(bq));
    for (index kb = 0; kb < pl.key_blocks(); ++kb) {
      bool partial = false;
      if (!tile_active(pl, sc, i0, bq, kb, partial)) continue;
      const index j0 = kb * kBk, bk = std::min(kBk, pl.m - j0);
      weight_tile(pl, sc, i0, bq, j0, bk, partial);
      // Without a separate distance engine the kernel itself is one sqdist factor on all columns,
      // and the tile's arguments s[0] are the squared distances already (plan's constructor).
      const T* r2 = sc.s[0].data();
      if (pl.dist) {
        pl.dist->tile(sc.r2.data(), i0, bq, j0, bk);
        r2 = sc.r2.data();
      }
      for (index a = 0; a < bq; ++a) {
        auto& h = heaps[static_cast<std::size_t>(a)];
        for (index b = 0; b < bk; ++b) {
          // The heap stays ≤ k: O(m log k) per row, and nothing of size m is kept per row.
          if (partial && !sc.allowed[a * kBk + b]) continue;
          const candidate c{double(sc.w[a * kBk + b]), double(r2[a * kBk + b]), j0 + b};
          if (static_cast<index>(h.size()) < k) {
            h.push_back(c);
            std::push_heap(h.begin(), h.end(), better);
          } else if (better(c, h.front())) {
            std::pop_heap(h.begin(), h.end(), better);
            h.back() = c;
            std::push_heap(h.begin(), h.end(), better);
          }
        }
      }
    }
    for (index a = 0; a < bq; ++a) {
      auto& keys = sel[static_cast<std::size_t>(i0 + a)];
      for (const auto& c : heaps[static_cast<std::size_t>(a)]) keys.push_back(c.j);
      std::sort(keys.begin(), keys.end());
    }
  });
  return sel;
}

}  // namespace

// out (n, dv), out_sq (n, dv) or empty, lse (n) or empty, as smooth_forward_sq; sums in double
// over the ≤ k selected keys per row. No dropout term: validate_inputs refuses it with top-k.
template <class T>
smooth_stats forward_topk(const plan<T>& pl, matrix_view<T> out, matrix_view<T> out_sq,
                          std::span<T> lse) {
  const auto sel = select_topk(pl);
  std::atomic<index> empty{0};
  const index rows = kBqTopk;
  parallel_blocks(pl, rows, [&](scratch<T>&, index qb) {
    const index i0 = qb * rows, bq = std::min(rows, pl.n - i0);
    for (index i = i0; i < i0 + bq; ++i) {
      const auto r = evaluate_pairs(i, sel[static_cast<std::size_t>(i)], pl.in.q, pl.in.k, pl.rk);
      for (index c = 0; c < pl.dv; ++c) {
        double acc = 0, acc_sq = 0;
        for (std::size_t a = 0; a < r.keys.size(); ++a) {
          acc += r.p[a] * double(pl.v(r.keys[a], c));
          acc_sq += r.p[a] * r.p[a] * double(pl.v(r.keys[a], c));
        }
        out(i, c) = static_cast<T>(acc);
        if (!out_sq.empty()) out_sq(i, c) = static_cast<T>(acc_sq);
      }
      if (!lse.empty()) lse[static_cast<std::size_t>(i)] = static_cast<T>(r.lse);
      if (r.empty) ++empty;
    }
  });
  return {empty.load(), smooth_route::topk};
}

// Gradients through the selected pairs only (the selection is piecewise constant in q and k).
// Serial over rows: every row adds into the one dk buffer (m, d), kept in double.
template <class T>
void backward_topk(const plan<T>& pl, smooth_grads<T>& g, const_matrix_view<T> dout) {
  const auto sel = select_topk(pl);
  std::vector<double> dq(static_cast<std::size_t>(pl.n * pl.d)),
      dk(static_cast<std::size_t>(pl.m * pl.d));
  for (index i = 0; i < pl.n; ++i) {
    const auto r = evaluate_pairs(i, sel[static_cast<std::size_t>(i)], pl.in.q, pl.in.k, pl.rk);
    row_backward(r, i, dout, pl.v, pl.in.q, pl.in.k, pl.rk, dq.data() + i * pl.d, dk, g.dv,
                 g.dparam);
  }
  // No chaining through per-dimension bandwidths here: smooth_backward already pointed g.dq, g.dk
  // at buffers for the scaled inputs and chains them itself.
  add_grads(g, dq, dk, pl.in, smooth_options{}, false);
}

template smooth_stats forward_topk<float>(const plan<float>&, matrix_view<float>,
                                          matrix_view<float>, std::span<float>);
template smooth_stats forward_topk<double>(const plan<double>&, matrix_view<double>,
                                           matrix_view<double>, std::span<double>);
template void backward_topk<float>(const plan<float>&, smooth_grads<float>&,
                                   const_matrix_view<float>);
template void backward_topk<double>(const plan<double>&, smooth_grads<double>&,
                                    const_matrix_view<double>);

}  // namespace kf::detail::tiles
