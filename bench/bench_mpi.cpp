// The communication terms of docs/scale-out.md's cost model, measured on this machine: the time
// of one rank-ordered all-reduce (dist::allreduce_sum, what data-parallel training calls once per
// step) and of one state reduction to rank 0 (dist::reduce_state, what sharded smoothing calls
// once), over message sizes from 8 bytes to 64 MiB. Run under mpirun:
//   mpirun -np 2 build/release/bench/bench_mpi
// `--quick` stops at 64 KiB with a few repetitions (ctest's bench_mpi_smoke: it still runs).
// Prints one markdown row per size: bytes, median seconds over the repetitions, and the
// bandwidth bytes / time. A fit t = α + bytes/β over the rows gives the latency α and the
// bandwidth β the model uses for processes on one machine (shared memory).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string_view>
#include <vector>

#include "kernelformer/dist/mpi.hpp"

namespace {

template <class F>
double median_seconds(int reps, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    kf::dist::barrier();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  // Every rank reports its own; the largest median is what a step waits for.
  return kf::dist::allreduce_max(t[t.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  const kf::dist::session mpi(&argc, &argv);
  if (kf::dist::size() < 2) {
    fmt::print(stderr, "bench_mpi: run it under mpirun -np N (N >= 2)\n");
    return 2;
  }
  const bool root = kf::dist::is_root();
  const bool quick = argc > 1 && std::string_view(argv[1]) == "--quick";
  const kf::index max_bytes = quick ? (kf::index(1) << 16) : (kf::index(64) << 20);
  const kf::index max_rows = quick ? (kf::index(1) << 12) : (kf::index(1) << 20);
  const auto reps_for = [quick](bool small) { return quick ? 3 : (small ? 200 : 10); };
  if (root) {
    fmt::print("ranks: {}\n\n| operation | bytes | median s | GB/s |\n|---|---|---|---|\n",
               kf::dist::size());
  }
  for (kf::index bytes = 8; bytes <= max_bytes; bytes *= 8) {
    std::vector<float> g(static_cast<std::size_t>(std::max<kf::index>(1, bytes / 4)), 1.0f);
    const int reps = reps_for(bytes < (kf::index(1) << 20));
    const double t = median_seconds(reps, [&] { kf::dist::allreduce_sum(std::span<float>(g)); });
    if (root)
      fmt::print("| allreduce_sum (float) | {} | {:.3g} | {:.3g} |\n", bytes, t,
                 double(bytes) / t / 1e9);
  }
  for (kf::index rows = 1; rows <= max_rows; rows *= 16) {
    // A state of `rows` query rows with one value column: (lse, out) = 16 bytes per row.
    auto s = kf::smooth_state_empty<double>(rows, 1);
    for (auto& l : s.lse) l = 0.0;
    const int reps = reps_for(rows < 4096);
    const double t = median_seconds(reps, [&] { kf::dist::reduce_state(s); });
    if (root)
      fmt::print("| reduce_state (float64, dv = 1) | {} | {:.3g} | {:.3g} |\n", rows * 16, t,
                 double(rows * 16) / t / 1e9);
  }
  return 0;
}
