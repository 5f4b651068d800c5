// The parts of dist/mpi.hpp that do not talk to MPI: shards, names, the launch check.
#include <cstdlib>
#include <string>

#include "kernelformer/dist/mpi.hpp"

namespace kf::dist {

range shard(index n, int r, int ranks) {
  const index base = n / ranks, extra = n % ranks;
  const index lo = r * base + (r < extra ? r : extra);
  return {lo, lo + base + (r < extra ? 1 : 0)};
}

bool started_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

std::string where() {
  return size() > 1 ? "rank " + std::to_string(rank()) + " of " + std::to_string(size()) : "";
}

}  // namespace kf::dist
