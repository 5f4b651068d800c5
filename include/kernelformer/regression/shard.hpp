// kernelformer/regression/shard.hpp — a fit shared by several processes, without MPI in the core.
//
// Every process holds the whole data set; each one does the O(n) work over its block of the
// points, and the results are combined by two elementwise reductions the caller provides
// (dist::world_shard in dist/mpi.hpp wires them to MPI; kf smooth/kde under mpirun):
//   binned routes   each process bins its block; the bin grids are summed, then every process
//                   runs the same FFT convolution on the same grid
//   criteria        sums over points: each process sums its points' leave-one-out terms against
//                   all keys (query block), and the partial sums are summed
//   evaluation      each process smooths every query over its block of the keys; the partial
//                   states (lse, out, out_sq) merge by max (of lse) and sum (of the rescaled
//                   terms): the log-sum-exp merge of smooth_partial.hpp
// Both reductions must give the same result on every process (the sum in a fixed order), so
// every process takes the same decisions (routes, bandwidths) and calls the same reductions.
// A default data_shard is one process: blocks are everything, reductions are the identity.
#pragma once

#include <functional>
#include <span>

#include "kernelformer/tensor.hpp"

namespace kf {

struct data_shard {
  int rank = 0, ranks = 1;
  // Elementwise sum / max over the processes, in place, the same result on every process.
  std::function<void(std::span<double>)> sum, max;

  bool active() const { return ranks > 1; }
  // This process's block [lo, hi) of n items: the first n % ranks blocks hold one more (the
  // blocks of dist::shard).
  struct block {
    index lo = 0, hi = 0;
    index size() const { return hi - lo; }
  };
  block block_of(index n) const {
    const index base = n / ranks, extra = n % ranks;
    const index lo = rank * base + (rank < extra ? rank : extra);
    return {lo, lo + base + (rank < extra ? 1 : 0)};
  }
  void sum_all(std::span<double> v) const {
    if (active()) sum(v);
  }
  void max_all(std::span<double> v) const {
    if (active()) max(v);
  }
  double sum_all(double v) const {
    sum_all(std::span<double>(&v, 1));
    return v;
  }
  // The one merge of partial sums over the processes (smooth_partial.hpp's, written with a max
  // and a sum, src/regression/shard.cpp): each process holds, per row, the log-sum-exp of its
  // block's weights lse_r and optionally its normalized outputs out_r and Σp² terms out_sq_r.
  // With M = max_r lse_r and w_r = e^{lse_r − M}: lse = M + log Σ w_r, out = Σ w_r out_r / Σ w_r,
  // out_sq = Σ w_r² out_sq_r / (Σ w_r)². A row with no weight anywhere stays −∞ (out 0). Every
  // process gets every row. Alone: nothing changes.
  void merge_log_sums(std::span<double> lse, matrix<double>* out = nullptr,
                      matrix<double>* out_sq = nullptr) const;
};

}  // namespace kf
