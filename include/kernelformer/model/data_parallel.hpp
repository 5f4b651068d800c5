// kernelformer/model/data_parallel.hpp — one training step over several processes.
//
// Every process holds the whole model and draws the same global batch (same seed, same data
// order); process r computes forward and backward on its block of the batch's rows only
// (dist::shard). Its mean-loss gradient is scaled by b_r / b, the gradients are summed over the
// processes (in rank order, dist::allreduce_sum), and each process takes the same optimizer step
// from the same sum, so the parameters stay identical everywhere. The loss is summed the same
// way. With dropout 0 this is the single-process step on the same global batch, to rounding;
// with dropout each process draws its own masks (as PyTorch's DistributedDataParallel does),
// from a generator seeded by (seed, rank) and kept apart from the one that orders the data.
//
// The model code does not know MPI: kf fills these hooks from kernelformer/dist/mpi.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "kernelformer/tensor.hpp"

namespace kf::model {

struct data_parallel {
  int rank = 0, size = 1;
  std::function<void(std::span<float>)> allreduce_sum;  // elementwise sum over the processes
  std::function<double(double)> allreduce_sum_scalar;

  bool active() const { return size > 1; }
  // Rows [lo, hi) of a global batch of b rows that this process computes.
  std::pair<index, index> rows(index b) const {
    const index base = b / size, extra = b % size;
    const index lo = rank * base + (rank < extra ? rank : extra);
    return {lo, lo + base + (rank < extra ? 1 : 0)};
  }
  // After backward on the local rows: scales this process's mean-loss gradient and loss by
  // b_local / b and sums both over the processes. Returns the global batch's loss.
  double reduce(std::span<float> grads, double local_loss, index b_local, index b) const {
    if (!active()) return local_loss;
    const float share = static_cast<float>(double(b_local) / double(b));
    for (float& g : grads) g *= share;
    allreduce_sum(grads);
    return allreduce_sum_scalar(local_loss * double(b_local) / double(b));
  }
  // The seed of this process's dropout generator (the data order keeps the common seed).
  std::uint64_t dropout_seed(std::uint64_t seed) const {
    return seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(rank) + 1;
  }
};

}  // namespace kf::model
