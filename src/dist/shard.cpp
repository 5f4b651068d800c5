// The parts of dist/mpi.hpp that do not talk to MPI: shards, names, the launch check.
#include <cstdlib>
#include <string>

#include "kernelformer/dist/mpi.hpp"

namespace kf::dist {

range shard(index n, int r, int ranks) {
  data_shard s;
  s.rank = r;
  s.ranks = ranks;
  const auto b = s.block_of(n);
  return {b.lo, b.hi};
}

bool started_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

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
