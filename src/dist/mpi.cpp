// dist/mpi.hpp on MPI. Reductions use user operators declared non-commutative: MPI then combines
// the ranks' buffers in rank order, so a result does not depend on timing or on which rank
// finished first (MPI 4.0 §6.9.5: non-commutative operations are applied in ascending rank
// order, with whatever bracketing the algorithm chooses for a given size).
#include <mpi.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "kernelformer/dist/mpi.hpp"

namespace kf::dist {
namespace {

bool g_active = false;  // MPI_Init ran here (and MPI_Finalize has not)
int g_rank = 0, g_size = 1;
comm_stats g_stats;

// The state records' layout for the merge operator (set around each reduction: MPI calls the
// operator from inside MPI_Reduce, on this thread).
// Globals because MPI_User_function takes no user data; safe because only the main thread calls
// MPI (MPI_THREAD_FUNNELED).
index g_record_dv = 0;
bool g_record_sq = false;

// Throws std::runtime_error naming the call. (MPI's default handler on MPI_COMM_WORLD aborts
// first; the check covers handlers that return.)
void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(fmt::format("MPI: {} failed ({})", what, rc));
}

// Counts one collective: bytes this rank handed to MPI, and the wall time inside the call.
class timed {
 public:
  explicit timed(double bytes) : t0_(std::chrono::steady_clock::now()) {
    g_stats.bytes += bytes;
    ++g_stats.calls;
  }
  ~timed() {
    g_stats.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  timed(const timed&) = delete;
  timed& operator=(const timed&) = delete;

 private:
  std::chrono::steady_clock::time_point t0_;
};

// MPI's user-operator signature: inout ← in ∘ inout, `in` from the lower ranks.
// len counts records (reduce_state's contiguous type), each 1 + dv (+ dv) doubles.
void merge_op(void* in, void* inout, int* len, MPI_Datatype*) {
  // in holds the lower ranks' records: merge so that they come first, as a chain in rank order.
  std::vector<double> tmp(
      static_cast<const double*>(in),
      static_cast<const double*>(in) +
          static_cast<std::size_t>(*len) * (1 + g_record_dv * (g_record_sq ? 2 : 1)));
  merge_records(tmp.data(), static_cast<const double*>(inout), *len, g_record_dv, g_record_sq);
  std::copy(tmp.begin(), tmp.end(), static_cast<double*>(inout));
}

// Same order discipline for sums: floating-point addition is not associative, so a fixed order is
// what makes every rank's (and every run's) sum bit-identical.
template <class T>
void sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  // (lower ranks) + (this part), in that order.
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = a[i] + b[i];
}

// commute = 0: non-commutative, hence applied in rank order (see the top of the file).
MPI_Op make_op(MPI_User_function* fn) {
  MPI_Op op;
  check(MPI_Op_create(fn, 0, &op), "MPI_Op_create");
  return op;
}

template <class T>
void allreduce_ordered(std::span<T> x) {
  if (g_size == 1 || x.empty()) return;
  // Created on first use (after MPI_Init) and kept for the life of the process.
  static const MPI_Op op = make_op(&sum_op<T>);
  const MPI_Datatype type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
  const timed t(double(x.size_bytes()));
  // MPI counts are int: buffers go in chunks of 2^24 elements, far below INT_MAX.
  constexpr std::size_t chunk = std::size_t(1) << 24;
  for (std::size_t p = 0; p < x.size(); p += chunk) {
    const auto c = static_cast<int>(std::min(chunk, x.size() - p));
    check(MPI_Allreduce(MPI_IN_PLACE, x.data() + p, c, type, op, MPI_COMM_WORLD), "MPI_Allreduce");
  }
}

// For MPI's built-in min and max, which are exact: no order to fix.
double allreduce_scalar(double x, MPI_Op op) {
  if (g_size == 1) return x;
  const timed t(sizeof(double));
  check(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, op, MPI_COMM_WORLD), "MPI_Allreduce");
  return x;
}

}  // namespace

bool available() { return true; }

session::session(int* argc, char*** argv) {
  if (!started_by_mpirun()) return;
  int provided = 0;
  // Only the main thread calls MPI (OpenMP threads compute between the calls).
  check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  g_active = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
}

session::~session() {
  if (!g_active) return;
  MPI_Finalize();
  g_active = false;
}

int rank() { return g_rank; }
int size() { return g_size; }

void abort(int code) {
  if (g_active && g_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

// Every rank packs its rows as merge_records' layout [lse, out…, out_sq…] in double and rank 0
// receives the rank-ordered merge; rows go in blocks so the buffers stay bounded for any n.
// Collective: all ranks must call it with the same n, dv and with_sq.
template <class T>
void reduce_state(smooth_state<T>& s) {
  if (g_size == 1) return;
  const index n = s.out.rows(), dv = s.out.cols();
  const bool sq = s.out_sq.rows() > 0;
  const index width = 1 + dv * (sq ? 2 : 1);
  static const MPI_Op op = make_op(&merge_op);
  MPI_Datatype record;
  check(MPI_Type_contiguous(static_cast<int>(width), MPI_DOUBLE, &record), "MPI_Type_contiguous");
  MPI_Type_commit(&record);
  g_record_dv = dv;
  g_record_sq = sq;
  // Rows in blocks of ≤ 8 MiB of records, packed in double.
  const index block = std::max<index>(1, (index(1) << 20) / width);
  std::vector<double> mine, merged;
  index total_keys = 0;
  {
    // Key counts are integers summed in double: exact below 2^53.
    double k = double(s.keys), sum = 0;
    const timed t(sizeof(double));
    check(MPI_Reduce(&k, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
    total_keys = static_cast<index>(sum);
  }
  for (index r0 = 0; r0 < n; r0 += block) {
    const index rows = std::min(block, n - r0);
    mine.assign(static_cast<std::size_t>(rows * width), 0.0);
    for (index i = 0; i < rows; ++i) {
      double* rec = mine.data() + i * width;
      rec[0] = double(s.lse[static_cast<std::size_t>(r0 + i)]);
      for (index c = 0; c < dv; ++c) {
        rec[1 + c] = double(s.out(r0 + i, c));
        if (sq) rec[1 + dv + c] = double(s.out_sq(r0 + i, c));
      }
    }
    // Only the root needs a receive buffer (MPI ignores recvbuf on the other ranks).
    if (g_rank == 0) merged.assign(mine.size(), 0.0);
    const timed t(double(mine.size() * sizeof(double)));
    check(MPI_Reduce(mine.data(), g_rank == 0 ? merged.data() : nullptr, static_cast<int>(rows),
                     record, op, 0, MPI_COMM_WORLD),
          "MPI_Reduce");
    if (g_rank != 0) continue;
    for (index i = 0; i < rows; ++i) {
      const double* rec = merged.data() + i * width;
      s.lse[static_cast<std::size_t>(r0 + i)] = static_cast<T>(rec[0]);
      for (index c = 0; c < dv; ++c) {
        s.out(r0 + i, c) = static_cast<T>(rec[1 + c]);
        if (sq) s.out_sq(r0 + i, c) = static_cast<T>(rec[1 + dv + c]);
      }
    }
  }
  MPI_Type_free(&record);
  if (g_rank == 0) s.keys = total_keys;
}
template void reduce_state<float>(smooth_state<float>&);
template void reduce_state<double>(smooth_state<double>&);

void allreduce_sum(std::span<float> x) { allreduce_ordered(x); }
void allreduce_sum(std::span<double> x) { allreduce_ordered(x); }
// The scalar sum goes through the ordered operator too, so it matches the span version's order.
double allreduce_sum(double x) {
  double v[1] = {x};
  allreduce_ordered(std::span<double>(v));
  return v[0];
}
double allreduce_min(double x) { return allreduce_scalar(x, MPI_MIN); }
double allreduce_max(double x) { return allreduce_scalar(x, MPI_MAX); }

// Built-in MPI_MAX: exact, chunked as the sums are.
void allreduce_max(std::span<double> x) {
  if (g_size == 1 || x.empty()) return;
  const timed t(double(x.size_bytes()));
  constexpr std::size_t chunk = std::size_t(1) << 24;
  for (std::size_t p = 0; p < x.size(); p += chunk) {
    const auto c = static_cast<int>(std::min(chunk, x.size() - p));
    check(MPI_Allreduce(MPI_IN_PLACE, x.data() + p, c, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
          "MPI_Allreduce");
  }
}

std::vector<double> allgather(std::span<const double> mine) {
  if (g_size == 1) return {mine.begin(), mine.end()};
  const timed t(double(mine.size_bytes()));
  // Every rank's count, then each rank's block broadcast from it in chunks of 2^24 values (MPI
  // counts and displacements are int; a broadcast per chunk needs neither beyond the chunk).
  std::vector<long long> counts(static_cast<std::size_t>(g_size));
  long long own = static_cast<long long>(mine.size());
  check(MPI_Allgather(&own, 1, MPI_LONG_LONG, counts.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD),
        "MPI_Allgather");
  std::size_t total = 0;
  for (const long long c : counts) total += static_cast<std::size_t>(c);
  std::vector<double> all(total);
  constexpr std::size_t chunk = std::size_t(1) << 24;
  std::size_t at = 0;
  for (int r = 0; r < g_size; ++r) {
    const auto n = static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
    if (r == g_rank)
      std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(at));
    for (std::size_t p = 0; p < n; p += chunk) {
      const auto c = static_cast<int>(std::min(chunk, n - p));
      check(MPI_Bcast(all.data() + at + p, c, MPI_DOUBLE, r, MPI_COMM_WORLD), "MPI_Bcast");
    }
    at += n;
  }
  return all;
}

void barrier() {
  if (g_size == 1) return;
  const timed t(0);
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

comm_stats stats() { return g_stats; }

}  // namespace kf::dist
