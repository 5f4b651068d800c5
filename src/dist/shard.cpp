// The parts of dist/mpi.hpp that do not talk to MPI: shards, names, the launch check.
#include <cstdlib>
#include <string>

#include "kernelformer/dist/mpi.hpp"

namespace kf::dist {

// Delegates to data_shard::block_of so the MPI code and the regression shards cut [0, n) the same
// way: contiguous blocks, the first n % ranks one item longer. Needs ranks ≥ 1 and 0 ≤ r < ranks.
range shard(index n, int r, int ranks) {
  data_shard s;
  s.rank = r;
  s.ranks = ranks;
  const auto b = s.block_of(n);
  return {b.lo, b.hi};
}

// Checked before MPI_Init (session), so only the environment can tell: OpenMPI sets
// OMPI_COMM_WORLD_SIZE, PMIx launchers PMIX_RANK, older PMI launchers PMI_SIZE.
bool started_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

// sum is the rank-ordered allreduce and max MPI's exact one (both the identity when alone), so
// a fit gives the same numbers on every rank.
data_shard world_shard() {
  data_shard s;
  s.rank = rank();
  s.ranks = size();
  s.sum = [](std::span<double> v) { allreduce_sum(v); };
  s.max = [](std::span<double> v) { allreduce_max(v); };
  return s;
}

std::string where() {
  return size() > 1 ? "rank " + std::to_string(rank()) + " of " + std::to_string(size()) : "";
}

}  // namespace kf::dist
