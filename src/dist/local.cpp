// dist/mpi.hpp without MPI: one process, rank 0 of 1; every reduction is the identity.
#include <cstdlib>

#include "kernelformer/dist/mpi.hpp"

namespace kf::dist {

bool available() { return false; }
session::session(int*, char***) {}
session::~session() = default;
int rank() { return 0; }
int size() { return 1; }
void abort(int code) { std::exit(code); }
template <class T>
void reduce_state(smooth_state<T>&) {}
template void reduce_state<float>(smooth_state<float>&);
template void reduce_state<double>(smooth_state<double>&);
void allreduce_sum(std::span<float>) {}
void allreduce_sum(std::span<double>) {}
double allreduce_sum(double x) { return x; }
double allreduce_min(double x) { return x; }
double allreduce_max(double x) { return x; }
void allreduce_max(std::span<double>) {}
std::vector<double> allgather(std::span<const double> mine) { return {mine.begin(), mine.end()}; }
void barrier() {}
comm_stats stats() { return {}; }

}  // namespace kf::dist
