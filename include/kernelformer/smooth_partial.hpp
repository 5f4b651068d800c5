// kernelformer/smooth_partial.hpp — the primitive over a part of the keys, and the exact merge.
//
// A partial result over a chunk C of the keys is, per query row i,
//   lse_i = log Σ_{j ∈ C ∩ M(i)} K(q_i, k_j)      out_i = Σ_{j ∈ C ∩ M(i)} K v_j / exp(lse_i)
// (and optionally out_sq_i = Σ p_ij² v_j within the chunk). Two partials over disjoint chunks
// merge exactly — the log-sum-exp rescaling of split-K attention:
//   lse = log(e^{lse_a} + e^{lse_b}),  out = e^{lse_a − lse} out_a + e^{lse_b − lse} out_b,
//   out_sq = e^{2(lse_a − lse)} out_sq_a + e^{2(lse_b − lse)} out_sq_b
// computed in double. The (lse, out) pair is the (row max, row sum, weighted sum) state with the
// sum folded into the max, so it serves log-domain and compact kernels alike; an empty chunk row
// (lse = −inf, out = 0) is the identity. Merging is associative and commutative up to rounding,
// so keys arriving in chunks, keys streamed from disk and keys sharded over MPI ranks
// (dist/mpi.hpp) all give smooth_forward's result to rounding: ≤ 1e-12 relative in float64,
// ≤ 1e-6 in float32 (tests/test_smooth_partial.cpp).
//
// Masks see global key numbers (mask::key_range); top-k masks, which rank all keys of a row at
// once, and dropout are refused with std::invalid_argument.
#pragma once

#include <span>
#include <vector>

#include "kernelformer/smooth.hpp"

namespace kf {

template <class T>
struct smooth_state {
  matrix<T> out;       // n × dv, normalized within the keys seen so far (0 on empty rows)
  std::vector<T> lse;  // n: log of the row's weight sum so far (−inf: no key yet)
  matrix<T> out_sq;    // n × dv when asked for (smooth_forward_sq's out_sq), else 0 × 0
  index keys = 0;      // how many keys the state has seen
};

// An empty state for n rows and dv value columns: the identity of merge.
template <class T>
smooth_state<T> smooth_state_empty(index n, index dv, bool with_sq = false);

// The primitive over keys [key_offset, key_offset + k.rows) of a set of m_total keys: k and v
// hold that chunk's rows; the mask sees global key numbers. with_sq also fills out_sq.
template <class T>
smooth_state<T> smooth_partial(const_matrix_view<T> q, const_matrix_view<T> k,
                               const_matrix_view<T> v, index key_offset, index m_total,
                               const kernel_spec& kern, const mask& msk,
                               const smooth_options& opt = {}, bool with_sq = false);

// into ← into ⊕ other (same n, dv and with_sq; disjoint key sets). Empty rows count nowhere.
template <class T>
void merge(smooth_state<T>& into, const smooth_state<T>& other);

// The rows of a state that no key reached (the primitive's empty-row policy).
template <class T>
index smooth_state_empty_rows(const smooth_state<T>& s);

// Row-wise merge on flat records of 1 + dv (+ dv) doubles (lse, out…, out_sq…): what an MPI
// reduction operator applies to packed states (dist/mpi.cpp). inout ← inout ⊕ in, `rows` rows.
void merge_records(double* inout, const double* in, index rows, index dv, bool with_sq);

}  // namespace kf
