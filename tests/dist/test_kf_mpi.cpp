// kf under Debian's OpenMPI: `mpirun -np 2` and `-np 3 --oversubscribe` against one process.
//   attend        keys sharded, merged at rank 0: float64 ≤ 1e-12, float32 ≤ 1e-6 relative
//   smooth, kde   points sharded (binned grids summed, criteria summed, partial states merged,
//                 queries split on the neighbor, sorted-window and k-d tree routes): the output
//                 CSV of one process to ≤ 1e-12 relative, for a fixed and a CV bandwidth (or k),
//                 on every route: all pairs, 1-D and 2-D binned, sorted windows, tree, knn
//   train         data-parallel periodic and LM training: the loss curves of the
//                 single-process run on the same global batches (≤ 1e-5 relative, float32)
//   refusals      top-k masks, knn --exact, rff, --loo and subcommands without a sharded
//                 route: non-zero exit, one message, no output written
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "apps/run_kf.hpp"
#include "kernelformer/io/npy.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

// "mpirun … -np N kf" as a prefix for run_kf's arguments (run_kf prepends the kf path).
// Under the sanitizers the ranks run without LeakSanitizer: OpenMPI leaves allocations of the
// plugins it loads and unloads (libmpi, libopen-pal, its mca components) at exit, whose stacks
// are gone by then, so no suppression can name them. Every other ASan/UBSan check stays on, and
// kf's own leaks are checked by every single-process test.
std::string mpirun(int n) {
#ifdef KF_SANITIZE_BUILD
  const std::string env = "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 ";
#else
  const std::string env;
#endif
  return env + std::string(KF_MPIEXEC).append(" --allow-run-as-root") +
         (n > 2 ? " --oversubscribe" : "") + " -np " + std::to_string(n) + " ";
}

test::result run_mpi(int n, const std::string& args) {
  // run_kf runs "KF_EXE args"; under mpirun the executable comes after the launcher.
  const std::string cmd = mpirun(n) + KF_EXE + " " + args + " 2>&1";
  test::result r{0, ""};
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) r.output += buf;
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// The numbers of one CSV column (header skipped).
std::vector<double> csv_column(const fs::path& file, int col) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  std::vector<double> v;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string cell;
    for (int c = 0; c <= col; ++c) std::getline(ss, cell, ',');
    v.push_back(std::stod(cell));
  }
  return v;
}

class KfMpi : public ::testing::Test {
 public:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("kf_mpi_" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& name) const { return (dir / name).string(); }
};

// max |a − b| / max |b| over two .npy files of the same dtype and shape.
double max_rel_diff(const std::string& a, const std::string& b) {
  const auto x = io::npy_read(a), y = io::npy_read(b);
  EXPECT_EQ(x.dtype, y.dtype);
  EXPECT_EQ(x.shape, y.shape);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < x.values.size() && i < y.values.size(); ++i) {
    num = std::max(num, std::abs(x.values[i] - y.values[i]));
    den = std::max(den, std::abs(y.values[i]));
  }
  return num / den;
}

template <class T>
void attend_case(const KfMpi& t, const std::string& kernel, const std::string& mask) {
  const std::string sfx = std::is_same_v<T, float> ? "32" : "64";
  io::npy_write<T>(t.p("q" + sfx + ".npy"), test::random_matrix<T>(57, 6, 1).cview());
  io::npy_write<T>(t.p("k" + sfx + ".npy"), test::random_matrix<T>(211, 6, 2).cview());
  io::npy_write<T>(t.p("v" + sfx + ".npy"), test::random_matrix<T>(211, 3, 3).cview());
  const std::string args = "attend -q " + t.p("q" + sfx + ".npy") + " -k " +
                           t.p("k" + sfx + ".npy") + " -v " + t.p("v" + sfx + ".npy") +
                           " --kernel " + kernel + " --mask '" + mask + "' --quiet -o ";
  const auto one = run_kf(args + t.p("one.npy"));
  ASSERT_EQ(one.code, 0) << one.output;
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-12;
  for (int n : {2, 3}) {
    const auto r = run_mpi(n, args + t.p("many.npy"));
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_LE(max_rel_diff(t.p("many.npy"), t.p("one.npy")), tol)
        << kernel << " " << mask << " -np " << n;
  }
}

TEST_F(KfMpi, AttendShardsKeysAndEqualsOneProcess) {
  attend_case<double>(*this, "exp_dot", "none");
  attend_case<double>(*this, "gaussian:h=0.8", "causal:100");
  attend_case<double>(*this, "epanechnikov:h=1.5", "window:20,70");
  attend_case<float>(*this, "exp_dot", "causal:150");
  attend_case<float>(*this, "laplacian:h=0.5", "padding:120");
}

TEST_F(KfMpi, RefusesWhatCannotBeSharded) {
  io::npy_write<double>(p("x.npy"), test::random_matrix<double>(10, 2, 1).cview());
  const auto r = run_mpi(2, "attend -q " + p("x.npy") + " -k " + p("x.npy") + " -v " + p("x.npy") +
                                " --mask knn:3 -o " + p("out.npy"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("top-k/knn"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(p("out.npy")));
  const auto s = run_mpi(2, "demo");
  EXPECT_EQ(s.code, 2) << s.output;
  EXPECT_NE(s.output.find("does not run under mpirun"), std::string::npos) << s.output;
}

// n points as CSV: one column, y = sin(x) + 0.3 eps with x ~ U(0, 10) ("x,y"), or two,
// z = sin(a) cos(b) + 0.2 eps with (a, b) ~ U(0, 10)^2 ("a,b,z"); eps ~ N(0, 1).
void write_sample(const std::string& path, int n, std::uint64_t seed, int columns) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 10.0);
  std::normal_distribution<double> e(0.0, 1.0);
  std::ofstream f(path);
  f << (columns == 1 ? "x,y\n" : "a,b,z\n");
  f.precision(17);
  for (int i = 0; i < n; ++i) {
    const double a = u(rng);
    if (columns == 1) {
      f << a << "," << std::sin(a) + 0.3 * e(rng) << "\n";
      continue;
    }
    const double b = u(rng);
    f << a << "," << b << "," << std::sin(a) * std::cos(b) + 0.2 * e(rng) << "\n";
  }
}
void write_xy(const std::string& path, int n, std::uint64_t seed) {
  write_sample(path, n, seed, 1);
}

// max |a − b| / max |b| over the numeric cells of two CSV files with the same header and shape
// (a blank cell must be blank in both); +inf when they differ in header, shape or blanks.
double csv_max_rel_diff(const std::string& a, const std::string& b) {
  std::ifstream fa(a), fb(b);
  std::string la, lb;
  if (!std::getline(fa, la) || !std::getline(fb, lb) || la != lb) return INFINITY;
  double num = 0, den = 0;
  while (true) {
    const bool ga = static_cast<bool>(std::getline(fa, la));
    const bool gb = static_cast<bool>(std::getline(fb, lb));
    if (ga != gb) return INFINITY;
    if (!ga) break;
    std::stringstream sa(la), sb(lb);
    std::string ca, cb;
    while (std::getline(sa, ca, ',')) {
      if (!std::getline(sb, cb, ',') || ca.empty() != cb.empty()) return INFINITY;
      if (ca.empty()) continue;
      const double x = std::stod(ca), y = std::stod(cb);
      num = std::max(num, std::abs(x - y));
      den = std::max(den, std::abs(y));
    }
  }
  return den > 0 ? num / den : num;
}

// `kf ARGS --out F.csv` alone and under mpirun -np 2 and 3: the same file to 1e-12.
void regression_case(const KfMpi& t, const std::string& args) {
  const auto one = run_kf(args + " --quiet --out " + t.p("one.csv"));
  ASSERT_EQ(one.code, 0) << args << "\n" << one.output;
  for (int n : {2, 3}) {
    const auto r = run_mpi(n, args + " --quiet --out " + t.p("many.csv"));
    ASSERT_EQ(r.code, 0) << args << " -np " << n << "\n" << r.output;
    EXPECT_LE(csv_max_rel_diff(t.p("many.csv"), t.p("one.csv")), 1e-12) << args << " -np " << n;
  }
}

TEST_F(KfMpi, SmoothShardsPointsAndEqualsOneProcess) {
  write_xy(p("small.csv"), 301, 1);  // exact route (all pairs)
  write_xy(p("big.csv"), 6007, 2);   // binned route (from 5000 points)
  const std::string small = "smooth " + p("small.csv"), big = "smooth " + p("big.csv");
  regression_case(*this, small + " --bandwidth 0.4 --summary " + p("s.json"));
  regression_case(*this, small + " --bandwidth cv");
  regression_case(*this, small + " --method local-linear --bandwidth gcv --grid 57");
  regression_case(*this, small + " --kernel laplacian --bandwidth aic --at " + p("big.csv"));
  regression_case(*this, big + " --bandwidth 0.3");
  regression_case(*this, big + " --bandwidth cv --kernel epanechnikov");
  regression_case(*this, big + " --method local-linear --bandwidth cv");
}

// The routes that split the queries (neighbors, sorted windows, k-d tree) and the 2-D grid.
TEST_F(KfMpi, SmoothSplitsQueriesOnNeighborWindowAndTreeRoutesAndSumsTheTwoDGrid) {
  write_xy(p("small.csv"), 301, 5);
  write_sample(p("plane.csv"), 1201, 6, 2);
  write_sample(p("big2.csv"), 6007, 7, 2);
  const std::string small = "smooth " + p("small.csv"), plane = "smooth " + p("plane.csv");
  const std::string xz = " --x a,b --y z";
  regression_case(*this, small + " --method knn --k 7 --knn-weights distance");
  regression_case(*this, small + " --method knn --k cv --k-max 40");
  regression_case(*this, plane + xz + " --method knn --k cv --k-max 30 --grid 9");
  regression_case(*this, small + " --kernel epanechnikov --bandwidth cv");  // sorted windows
  regression_case(*this, small + " --kernel boxcar --method local-linear --bandwidth 0.7");
  regression_case(*this, plane + xz + " --kernel biweight --bandwidth 0.6 --grid 11");  // tree
  regression_case(*this, plane + xz +
                             " --kernel epanechnikov --method local-linear "
                             "--bandwidth cv --grid 7");
  // 2-D binned: a fixed bandwidth (its criteria are summed over the grid too; a CV search's
  // final grid at 32 cells per bandwidth takes ~15 s in the dev build).
  regression_case(*this, "smooth " + p("big2.csv") + xz + " --bandwidth 0.8 --grid 13");
}

TEST_F(KfMpi, KdeShardsPointsAndEqualsOneProcess) {
  write_xy(p("small.csv"), 301, 3);
  write_xy(p("big.csv"), 6007, 4);
  const std::string small = "kde " + p("small.csv"), big = "kde " + p("big.csv");
  regression_case(*this, small + " --bandwidth 0.5");
  regression_case(*this, small + " --bandwidth cv-ml");
  regression_case(*this, small + " --bandwidth cv-ls --kernel epanechnikov");
  regression_case(*this, small + " --x x,y --bandwidth cv-ml --grid 23");  // 2-D, exact
  regression_case(*this, big + " --bandwidth 0.2");
  regression_case(*this, big + " --bandwidth cv-ml");
  regression_case(*this, big + " --bandwidth cv-ls --kernel biweight");
  regression_case(*this, big + " --x x,y --bandwidth 0.4,0.3 --grid 17");  // 2-D binned
  regression_case(*this, big + " --x x,y --bandwidth cv-ml --kernel epanechnikov --grid 17");
}

TEST_F(KfMpi, SmoothAndKdeRefuseWhatIsNotSharded) {
  write_xy(p("small.csv"), 301, 1);
  write_xy(p("big.csv"), 6007, 2);
  const struct {
    std::string args, says;
  } cases[] = {
      {"smooth " + p("small.csv") + " --method knn --exact", "top-k"},
      {"smooth " + p("small.csv") + " --loo " + p("loo.csv"), "--loo"},
      {"smooth " + p("small.csv") + " --kernel rff", "rff"},
  };
  for (const auto& c : cases) {
    const auto r = run_mpi(2, c.args + " --out " + p("out.csv"));
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find("under mpirun"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(p("out.csv"))) << c.args;
  }
}

// Each rank parses its part of the file: a bad cell in the last rank's part is reported with
// the file's line, and nothing is written.
TEST_F(KfMpi, EachRankReadsItsPartAndErrorsNameTheFilesLine) {
  write_xy(p("small.csv"), 301, 1);
  {
    std::ofstream f(p("small.csv"), std::ios::app);
    f << "5.5,oops\n";  // line 303: header, 301 rows, this one
  }
  const auto r = run_mpi(3, "smooth " + p("small.csv") + " --out " + p("out.csv"));
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 2 of 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("line 303, column 'y': 'oops' is not a number"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(p("out.csv")));
}

// The training command ARGS (ending in "--out ") run in one process and under mpirun -np 2 and 3:
// every run's loss.csv has `rows` losses and the data-parallel ones equal the single process's
// to 1e-5 relative (float32 sums in another order). `step` names a row in the messages.
void expect_same_losses(const KfMpi& t, const std::string& args, std::size_t rows,
                        const std::string& step) {
  const auto one = run_kf(args + t.p("one"));
  ASSERT_EQ(one.code, 0) << one.output;
  const auto ref = csv_column(t.dir / "one" / "loss.csv", 1);
  ASSERT_EQ(ref.size(), rows);
  for (int n : {2, 3}) {
    const std::string out = "np" + std::to_string(n);
    const auto r = run_mpi(n, args + t.p(out));
    ASSERT_EQ(r.code, 0) << r.output;
    const auto got = csv_column(t.dir / out / "loss.csv", 1);
    ASSERT_EQ(got.size(), ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i)
      EXPECT_NEAR(got[i], ref[i], 1e-5 * ref[i]) << step << " " << i + 1 << " -np " << n;
  }
}

TEST_F(KfMpi, PeriodicTrainingIsDataParallelWithTheSameLosses) {
  // 901 windows, batch 64: 15 steps per epoch, 30 steps; the last batch (5 rows) splits 3/2
  // over two ranks and 2/2/1 over three.
  expect_same_losses(
      *this,
      "train periodic --config quick --epochs 2 --batch 64 --dropout 0 --seed 3 --quiet --out ", 2,
      "epoch");
}

TEST_F(KfMpi, LanguageModelTrainingIsDataParallelWithTheSameLosses) {
  // 20 steps of batch 5 windows (3/2 over two ranks, 2/2/1 over three).
  {
    std::ofstream corpus(p("corpus.txt"));
    for (int i = 0; i < 20; ++i)
      corpus << "the cat sat on the mat. the dog sat on the log. a cat and a dog met. ";
  }
  expect_same_losses(*this,
                     "train lm --corpus " + p("corpus.txt") +
                         " --config tiny --iters 20 --batch 5 --seed 2 --quiet --out ",
                     20, "iteration");
}

}  // namespace
}  // namespace kf
