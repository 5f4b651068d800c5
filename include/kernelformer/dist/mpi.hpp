// kernelformer/dist/mpi.hpp — several processes, one result: MPI (Debian's OpenMPI) underneath.
//
// A process started by `mpirun -np N` is one of N ranks; started alone it is rank 0 of 1 and
// every call here is the identity, so callers need no #ifdef. Without MPI at configure time
// (KF_WITH_MPI off or no MPI found) the library is built with the single-process version only
// (dist::available() is false).
//
// What is reduced, and how (docs/scale-out.md):
//   smoothing   each rank runs the primitive over its shard of the keys (smooth_partial.hpp);
//               reduce_state merges the states at rank 0 with a user MPI operator declared
//               non-commutative, so MPI applies it in rank order: the result is deterministic
//               and equals the single-process one to rounding.
//   regression  kf smooth / kf kde: every rank parses its part of the file and the parts are
//               gathered (allgather), so every rank holds the data; binned grids, criteria and
//               partial states over blocks of the points are reduced (world_shard()).
//   training    each rank runs forward/backward on its share of every global batch;
//               allreduce_sum adds the gradient buffers, again by a non-commutative operator,
//               so every rank gets the same sum in the same order and takes the same step.
// Every call counts its bytes and wall time (stats()), for the communication figures.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "kernelformer/regression/shard.hpp"
#include "kernelformer/smooth_partial.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::dist {

// True when this library was built with MPI.
bool available();
// True when this process was started by mpirun (OpenMPI's or PMIx's environment variables).
bool started_by_mpirun();

// MPI_Init on construction when started by mpirun (and MPI is available), MPI_Finalize on
// destruction. One per process, in main().
class session {
 public:
  session(int* argc, char*** argv);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;
};

int rank();  // 0 when not distributed
int size();  // 1 when not distributed
inline bool is_root() { return rank() == 0; }
// Ends every rank with this exit code (MPI_Abort), or just this process when alone.
[[noreturn]] void abort(int code);

// The block of [0, n) that rank r of `ranks` owns: the first n % ranks blocks hold one more.
struct range {
  index lo = 0, hi = 0;
  index size() const { return hi - lo; }
};
range shard(index n, int r, int ranks);
inline range my_shard(index n) { return shard(n, rank(), size()); }

// Merges every rank's state into rank 0's, in rank order (other ranks' states are left as
// they were). All ranks must call it with states of the same shape.
template <class T>
void reduce_state(smooth_state<T>& s);

// Elementwise sum over ranks, in rank order, the result on every rank.
void allreduce_sum(std::span<float> x);
void allreduce_sum(std::span<double> x);
double allreduce_sum(double x);
double allreduce_min(double x);
double allreduce_max(double x);
// Elementwise max over ranks, the result on every rank (exact: no order to fix).
void allreduce_max(std::span<double> x);
// Every rank's values concatenated in rank order, on every rank (each rank's block broadcast
// from it): a file read in parts (io::csv_options::parts) put back together.
std::vector<double> allgather(std::span<const double> mine);

// This process as one of the ranks of a regression or density fit (regression/shard.hpp): its
// rank, and the rank-ordered sum and the max above as the shard's reductions. kf smooth and kf
// kde under mpirun.
data_shard world_shard();
void barrier();

// Bytes handed to MPI by this rank's collective calls so far, and the wall time inside them.
struct comm_stats {
  double bytes = 0, seconds = 0;
  index calls = 0;
};
comm_stats stats();

// "rank R of N" for messages, or "" when alone.
std::string where();

}  // namespace kf::dist
