// kf — the launcher: sets how OpenMP's threads wait (and, under mpirun, how many each rank
// starts) in the environment, then runs the kf program (libexec/kernelformer/kf) in its place.
//
// Why a separate program: libgomp reads its settings once, from the environment, in its own
// initializer — before main, and glibc's initializer resets the environment a .preinit_array
// function could have changed. The kf program itself loads ~40 libraries (~30 ms, mostly the
// dynamic loader); starting it a second time to change its environment cost 5% of a
// half-second `kf train series`. This launcher needs only the C library (~1 ms).
//
// What it sets, unless the user did (docs/performance.md, "On a busy machine"):
//   GOMP_SPINCOUNT=3000   for the commands of many short parallel regions (short_regions:
//                         train, experiment, report, smooth, kde, classify, serve):
//                         a waiting thread spins ~3,000 iterations (tens of microseconds), then
//                         sleeps, instead of libgomp's ~300,000 (milliseconds): beside other busy
//                         processes the spinning threads took the cores the working threads
//                         needed (a small model's training 4-7x slower). Kept when OMP_WAIT_POLICY
//                         or GOMP_SPINCOUNT is set; KF_OMP_SPIN=N sets another count,
//                         KF_OMP_SPIN=default keeps libgomp's.
//   OMP_NUM_THREADS=C/R   under mpirun with R ranks on this host (OMPI_COMM_WORLD_LOCAL_SIZE,
//                         MPI_LOCALNRANKS) and C cores in the affinity mask, at least 1: the ranks
//                         share the cores instead of each starting a team of all of them. Kept
//                         when OMP_NUM_THREADS is set.
//   OMP_NUM_THREADS=F     for the training commands (train, experiment, report) when other
//                         processes keep busy cores this one may use: F = the cores left free
//                         (at least 1), looking at the running tasks at start (/proc/stat's
//                         procs_running, the least of 3 looks 2 ms apart). A team whose threads
//                         share cores with busy processes waits at every short region for the
//                         one that is descheduled; one thread on a free share of a core does
//                         not (beside 2 busy processes on 2 cores: 2.8x the quiet time with 2
//                         threads, ~2x with 1). Results do not depend on the thread count
//                         (detail/blas.cpp), so the model is the same. Kept when OMP_NUM_THREADS
//                         is set.
// KF_OMP_APPLIED tells the program what was set (`kf --version` prints it).
#include <limits.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

constexpr const char* kSpinCount = "3000";

bool in_env(const char* name) { return std::getenv(name) != nullptr; }

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
}

int local_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char* v = std::getenv(name);
    if (v == nullptr) continue;
    const long r = std::strtol(v, nullptr, 10);
    if (r > 0 && r < (1L << 20)) return static_cast<int>(r);
  }
  return 1;
}

// The commands whose work is many short parallel regions (training: every layer of every step;
// the bandwidth searches; kf serve's requests). kf attend's few long regions lose nothing to
// spinning and keep libgomp's default.
bool short_regions(int argc, char** argv) {
  if (argc < 2) return false;
  for (const char* sub : {"train", "experiment", "report", "smooth", "kde", "classify", "serve"})
    if (std::strcmp(argv[1], sub) == 0) return true;
  return false;
}

bool training(int argc, char** argv) {
  if (argc < 2) return false;
  for (const char* sub : {"train", "experiment", "report"})
    if (std::strcmp(argv[1], sub) == 0) return true;
  return false;
}

// Runnable tasks other than this one (/proc/stat's procs_running, which counts this one), the
// least of three looks 2 ms apart (a task that only passes through is not a busy process); -1
// when /proc/stat cannot be read.
int others_running() {
  int least = -1;
  for (int look = 0; look < 3; ++look) {
    if (look > 0) usleep(2000);
    std::FILE* f = std::fopen("/proc/stat", "r");
    if (f == nullptr) return -1;
    char line[256];
    int running = -1;
    while (std::fgets(line, sizeof(line), f) != nullptr)
      if (std::sscanf(line, "procs_running %d", &running) == 1) break;
    std::fclose(f);
    if (running < 1) return -1;
    least = least < 0 || running - 1 < least ? running - 1 : least;
  }
  return least;
}

// On a busy machine, as many threads as cores are left free (at least 1); appends what it set.
void busy_threads(char* applied, std::size_t size) {
  const int others = others_running();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const int cores = affinity_cores();
  if (others < 0 || online < 1) return;
  const long free_cores = online - others;
  if (free_cores >= cores) return;
  const int threads = free_cores > 1 ? static_cast<int>(free_cores) : 1;
  char value[16];
  std::snprintf(value, sizeof(value), "%d", threads);
  setenv("OMP_NUM_THREADS", value, 1);
  char note[160];
  std::snprintf(note, sizeof(note),
                "%d other tasks running on %ld cores: %d thread%s (OMP_NUM_THREADS=N to choose)",
                others, online, threads, threads == 1 ? "" : "s");
  setenv("KF_BUSY_NOTE", note, 1);  // the program prints it (apps/kf/main.cpp)
  const std::size_t used = std::strlen(applied);
  std::snprintf(applied + used, size - used,
                ", OMP_NUM_THREADS=%d (%d other tasks running on %ld cores)", threads, others,
                online);
}

// Sets the variables; writes what it set, for KF_OMP_APPLIED.
void apply(bool spin, bool train, char* applied, std::size_t size) {
  std::snprintf(applied, size, "none");
  const char* want = std::getenv("KF_OMP_SPIN");
  std::size_t used = 0;
  if (!spin) {
    used = std::size_t(std::snprintf(applied, size, "none for waiting (not a training command)"));
  } else if (in_env("OMP_WAIT_POLICY") || in_env("GOMP_SPINCOUNT")) {
    used = std::size_t(
        std::snprintf(applied, size, "none for waiting (%s is set)",
                      in_env("OMP_WAIT_POLICY") ? "OMP_WAIT_POLICY" : "GOMP_SPINCOUNT"));
  } else if (want != nullptr && std::strcmp(want, "default") == 0) {
    used = std::size_t(std::snprintf(applied, size, "none for waiting (KF_OMP_SPIN=default)"));
  } else {
    const char* count = want != nullptr && *want != '\0' ? want : kSpinCount;
    setenv("GOMP_SPINCOUNT", count, 1);
    used = std::size_t(std::snprintf(applied, size, "GOMP_SPINCOUNT=%s", count));
  }
  const int ranks = local_ranks();
  if (ranks > 1 && !in_env("OMP_NUM_THREADS") && used < size) {
    const int per_rank = affinity_cores() / ranks > 0 ? affinity_cores() / ranks : 1;
    char value[16];
    std::snprintf(value, sizeof(value), "%d", per_rank);
    setenv("OMP_NUM_THREADS", value, 1);
    std::snprintf(applied + used, size - used, ", OMP_NUM_THREADS=%d (%d MPI ranks on this host)",
                  per_rank, ranks);
  } else if (ranks == 1 && train && !in_env("OMP_NUM_THREADS")) {
    busy_threads(applied, size);
  }
}

}  // namespace

int main(int argc, char** argv) {
  char applied[160];
  apply(short_regions(argc, argv), training(argc, argv), applied, sizeof(applied));
  setenv("KF_OMP_APPLIED", applied, 1);
  // The program: installed (bin/kf, libexec/kernelformer/kf) or in the build tree (kf,
  // libexec/kernelformer/kf beside it).
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) {
    std::fprintf(stderr, "kf: error: cannot find this program's path (/proc/self/exe)\n");
    return 1;
  }
  self[n] = '\0';
  char* slash = std::strrchr(self, '/');
  *slash = '\0';
  char target[PATH_MAX + 64];
  for (const char* rel : {"/../libexec/kernelformer/kf", "/libexec/kernelformer/kf"}) {
    std::snprintf(target, sizeof(target), "%s%s", self, rel);
    if (access(target, X_OK) == 0) {
      execv(target, argv);
      std::fprintf(stderr, "kf: error: cannot run %s: %s\n", target, std::strerror(errno));
      return 1;
    }
  }
  std::fprintf(stderr, "kf: error: the kf program is missing beside %s (libexec/kernelformer/kf)\n",
               self);
  return 1;
}
