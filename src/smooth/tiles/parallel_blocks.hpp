// Internal: query blocks run in parallel, one OpenMP task each, every block's body compiled for
// the CPU's vector width (detail/isa_dispatch.hpp).
#pragma once

#include <omp.h>

#include <exception>
#include <mutex>

#include "detail/isa_dispatch.hpp"
#include "smooth/tiles/plan.hpp"

namespace kf::detail::tiles {

// One scratch per thread, kept across calls: attention makes many small calls, and allocating
// the tiles each time cost more than the work (every entry read is written first, so stale
// contents are harmless). Defined out of line (scratch.cpp): where GCC saw that a block's scratch
// is this thread_local object, it specialized the block body to re-derive the object's address
// through __tls_get_addr at every use (89 calls in the register-tiled forward: 3% of a causal
// attention forward, 5% slower end to end).
template <class T>
scratch<T>& thread_scratch();

// The index, in [0, plan::threads), of the thread running the current block: per-thread
// accumulators (the backward pass's dK, dV) use it. Set by parallel_blocks.
inline int& block_thread() {
  static thread_local int t = 0;
  return t;
}

// Runs fn(thread_scratch, query block) over the blocks of `rows` query rows (≤ kBq) in parallel;
// rethrows the first exception after the region.
template <class T, class Fn>
void parallel_blocks(const plan<T>& pl, index rows, Fn&& fn) {
  const index blocks = (pl.n + rows - 1) / rows;
  if ((blocks == 1 || pl.threads == 1) && omp_in_parallel()) {
    // One thread's work inside a caller's parallel region (attention runs a call per head
    // there): no nested team to start, and OpenBLAS is single-threaded inside the region.
    scratch<T>& sc = thread_scratch<T>();
    block_thread() = 0;
    for (index qb = 0; qb < blocks; ++qb) isa_invoke(fn, sc, qb);
    return;
  }
  std::exception_ptr err;
  std::mutex mu;
#pragma omp parallel num_threads(pl.threads)
  {
    // BLAS calls inside run single-threaded: OpenBLAS (OpenMP build) sizes its team from
    // omp_get_max_threads() unless omp_in_parallel(), which is false for a team of one. This
    // also makes results independent of the thread count.
    omp_set_num_threads(1);
    scratch<T>& sc = thread_scratch<T>();
    block_thread() = omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
    for (index qb = 0; qb < blocks; ++qb) {
      try {
        isa_invoke(fn, sc, qb);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!err) err = std::current_exception();
      }
    }
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace kf::detail::tiles
