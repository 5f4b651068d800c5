// End-to-end: the kf binary on real files — results, dtypes, and for every kind of bad input a
// one-line error, a non-zero exit and no output file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/npy.hpp"
#include "kernelformer/smooth.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

class KfAttend : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("kf_attend_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    write("q.npy", test::random_matrix<float>(9, 3, 1));
    write("k.npy", test::random_matrix<float>(11, 3, 2));
    write("v.npy", test::random_matrix<float>(11, 2, 3));
    write("q64.npy", test::random_matrix<double>(9, 3, 1));
  }
  void TearDown() override { fs::remove_all(dir); }
  template <class T>
  void write(const std::string& name, const matrix<T>& m) {
    io::npy_write<T>((dir / name).string(), m.cview());
  }
  std::string p(const std::string& name) const { return (dir / name).string(); }
  std::string base() const {
    return "attend -q " + p("q.npy") + " -k " + p("k.npy") + " -v " + p("v.npy");
  }
};

TEST_F(KfAttend, ComputesWhatTheLibraryComputes) {
  const auto r = run_kf(base() + " --kernel gaussian -b 0.7 --mask causal:2 -o " + p("out.npy") +
                        " --weights " + p("w.npy"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(test::written_lines(r.output), (std::vector<std::string>{p("out.npy"), p("w.npy")}))
      << r.output;
  const auto out = io::npy_read(p("out.npy"));
  EXPECT_EQ(out.dtype, io::npy_dtype::f32) << "float32 in, float32 out";
  const auto q = io::npy_read(p("q.npy")).to_matrix<float>();
  const auto k = io::npy_read(p("k.npy")).to_matrix<float>();
  const auto v = io::npy_read(p("v.npy")).to_matrix<float>();
  matrix<float> ref(9, 2);
  smooth_forward<float>(ref.view(), {}, q.cview(), k.cview(), v.cview(), kernel_gaussian{0.7},
                        mask::causal(2));
  EXPECT_TRUE(test::all_close(out.to_matrix<float>(), ref, 0, 0));
  const auto w = io::npy_read(p("w.npy"));
  EXPECT_EQ(w.shape, (std::vector<index>{9, 11}));
}

// The weights and output kf writes, against brute force in double written here: p_ij =
// w_ij / Σ_{j∈M(i)} w_ij and out_i = Σ_j p_ij v_j, for a distance kernel under a causal offset,
// a top-k mask and a product kernel split across the columns.
struct brute_attention {
  matrix<double> q, k, v;
  // log w(i, j) (−∞ outside the mask before top-k) for the case under test.
  std::function<double(index, index)> log_w;
  index topk = 0;  // keep the topk largest weights of each row (0: all)

  matrix<double> weights() const {
    matrix<double> p(q.rows(), k.rows());
    for (index i = 0; i < q.rows(); ++i) {
      std::vector<double> lw(static_cast<std::size_t>(k.rows()));
      for (index j = 0; j < k.rows(); ++j) lw[static_cast<std::size_t>(j)] = log_w(i, j);
      if (topk > 0) {  // no ties in random data: the k-th largest is a clean threshold
        std::vector<double> sorted = lw;
        std::sort(sorted.begin(), sorted.end(), std::greater<>());
        const double cut = sorted[static_cast<std::size_t>(topk - 1)];
        for (double& x : lw)
          if (x < cut) x = -INFINITY;
      }
      const double mx = *std::max_element(lw.begin(), lw.end());
      double sum = 0;
      for (double x : lw) sum += std::exp(x - mx);
      for (index j = 0; j < k.rows(); ++j)
        p(i, j) = std::exp(lw[static_cast<std::size_t>(j)] - mx) / sum;
    }
    return p;
  }
  matrix<double> out() const {
    const matrix<double> p = weights();
    matrix<double> o(q.rows(), v.cols());
    for (index i = 0; i < q.rows(); ++i)
      for (index c = 0; c < v.cols(); ++c) {
        double s = 0;
        for (index j = 0; j < k.rows(); ++j) s += p(i, j) * v(j, c);
        o(i, c) = s;
      }
    return o;
  }
};

TEST_F(KfAttend, WeightsAndOutputEqualBruteForce) {
  write("k64.npy", test::random_matrix<double>(11, 3, 2));
  write("v64.npy", test::random_matrix<double>(11, 2, 3));
  brute_attention b{test::random_matrix<double>(9, 3, 1),
                    test::random_matrix<double>(11, 3, 2),
                    test::random_matrix<double>(11, 2, 3),
                    {},
                    0};
  auto sqdist = [&](index i, index j, index c0, index c1) {
    double s = 0;
    for (index c = c0; c < c1; ++c) s += (b.q(i, c) - b.k(j, c)) * (b.q(i, c) - b.k(j, c));
    return s;
  };
  auto dot = [&](index i, index j, index c0, index c1) {
    double s = 0;
    for (index c = c0; c < c1; ++c) s += b.q(i, c) * b.k(j, c);
    return s;
  };
  struct case_t {
    std::string args;
    std::function<double(index, index)> log_w;
    index topk;
  };
  const std::vector<case_t> cases = {
      {"--kernel gaussian -b 0.7 --mask causal:2",
       [&](index i, index j) { return j <= i + 2 ? -sqdist(i, j, 0, 3) / (2 * 0.49) : -INFINITY; },
       0},
      {"--kernel exp_dot --temperature 0.5 --mask topk:3",
       [&](index i, index j) { return dot(i, j, 0, 3) / 0.5; }, 3},
      {"--kernel laplacian -b 0.3 --mask 'window:2&topk:2'",
       [&](index i, index j) {
         return std::abs(i - j) <= 2 ? -std::sqrt(sqdist(i, j, 0, 3)) / 0.3 : -INFINITY;
       },
       2},
      {"--kernel 'exp_dot:t=2*gaussian:h=0.8' --split 2",
       [&](index i, index j) { return dot(i, j, 0, 2) / 2 - sqdist(i, j, 2, 3) / (2 * 0.64); }, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    const auto r =
        run_kf("attend -q " + p("q64.npy") + " -k " + p("k64.npy") + " -v " + p("v64.npy") + " " +
               c.args + " -o " + p("o.npy") + " --weights " + p("w.npy"));
    ASSERT_EQ(r.code, 0) << r.output;
    b.log_w = c.log_w;
    b.topk = c.topk;
    const auto w = io::npy_read(p("w.npy"));
    ASSERT_EQ(w.dtype, io::npy_dtype::f64);
    EXPECT_TRUE(test::all_close(w.to_matrix<double>(), b.weights(), 1e-12, 1e-15));
    EXPECT_TRUE(
        test::all_close(io::npy_read(p("o.npy")).to_matrix<double>(), b.out(), 1e-12, 1e-14));
  }
}

TEST_F(KfAttend, MixedDtypesAndCsvGiveFloat64) {
  auto r = run_kf("attend -q " + p("q64.npy") + " -k " + p("k.npy") + " -v " + p("v.npy") + " -o " +
                  p("o.npy"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(io::npy_read(p("o.npy")).dtype, io::npy_dtype::f64);
  io::write_file_atomic(p("x.csv"), "x\n0\n1\n2\n");
  io::write_file_atomic(p("y.csv"), "y\n1\n2\n3\n");
  r = run_kf("attend -q " + p("x.csv") + " -k " + p("x.csv") + " -v " + p("y.csv") +
             " --kernel uniform -o " + p("o.csv"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(io::read_file(p("o.csv")), "c0\n2\n2\n2\n");
}

TEST_F(KfAttend, HelpDocumentsEveryOption) {
  const auto r = run_kf("attend --help");
  EXPECT_EQ(r.code, 0);
  for (const char* opt : {"--queries", "--keys", "--values", "--kernel", "--bandwidth",
                          "--temperature", "--mask", "--weights", "--out", "Examples"})
    EXPECT_NE(r.output.find(opt), std::string::npos) << opt;
  EXPECT_EQ(run_kf("--help").code, 0);
}

TEST_F(KfAttend, BadInputsFailCleanlyAndWriteNothing) {
  io::write_file_atomic(p("garbage.npy"), "not an npy file at all");
  io::npy_write<float>(p("k2.npy"), test::random_matrix<float>(11, 2, 5).cview());
  io::npy_write<float>(p("v12.npy"), test::random_matrix<float>(12, 2, 5).cview());
  matrix<float> nanq = test::random_matrix<float>(9, 3, 1);
  nanq(4, 1) = std::nanf("");
  write("nan.npy", nanq);
  const std::string out = " -o " + p("bad_out.npy");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"attend -q " + p("missing.npy") + " -k " + p("k.npy") + " -v " + p("v.npy") + out,
       "missing.npy"},
      {"attend -q " + p("garbage.npy") + " -k " + p("k.npy") + " -v " + p("v.npy") + out,
       "garbage.npy"},
      {"attend -q " + p("q.npy") + " -k " + p("k2.npy") + " -v " + p("v.npy") + out, "columns"},
      {"attend -q " + p("q.npy") + " -k " + p("k.npy") + " -v " + p("v12.npy") + out, "rows"},
      {"attend -q " + p("nan.npy") + " -k " + p("k.npy") + " -v " + p("v.npy") + out,
       "row 4, column 1"},
      {base() + " --kernel gaussian -b -1" + out, "bandwidth"},
      {base() + " --kernel gaussian -b 0" + out, "bandwidth"},
      {base() + " --kernel gaussian:h=0" + out, "bandwidth"},
      {base() + " --kernel gausian" + out, "unknown kernel"},
      {base() + " --mask sideways" + out, "unknown mask"},
      {base() + " --mask window:x" + out, "window"},
      {base() + " -b 0.5" + out, "--bandwidth applies to distance kernels"},
      {base() + " -o " + p("out.txt"), ".npy or .csv"},
      {base() + " -o " + p("no/such/dir/out.npy"), "out.npy"},
      {base() + out + " --weights " + p("w.npy") + " --weight-rows 3,99", "--weight-rows"},
  };
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(args);
    const auto r = run_kf(args);
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(p("bad_out.npy")));
    EXPECT_FALSE(fs::exists(p("w.npy")));
    for (const auto& e : fs::directory_iterator(dir))
      EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "leftover temp file";
    fs::remove(p("bad_out.npy"));
  }
  // A bad command line: "kf: error: ...", where to look, exit 2.
  for (const char* args :
       {"attend", "frobnicate", "attend -q a.npy -k b.npy -v c.npy -o d.npy -z"}) {
    SCOPED_TRACE(args);
    const auto r = run_kf(args);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.output.find("kf: error: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("--help"), std::string::npos) << r.output;
  }
}

// A shape whose product wraps 2^64 (it used to pass the size check and read out of bounds), a
// shape larger than the file, and an output folder that does not exist: one line, exit 1, the
// file named, nothing written (the output folder is checked before any input is read).
TEST_F(KfAttend, CraftedHeadersAndOutputPathsAreCaughtFirst) {
  std::string bytes = io::npy_encode<float>(test::random_matrix<float>(3, 2, 9).cview());
  std::string wrap = bytes, big = bytes;
  wrap.replace(wrap.find("(3, 2)"), 6, "(3, 6148914691236517206)");
  big.replace(big.find("(3, 2)"), 6, "(300, 2)");
  io::write_file_atomic(p("wrap.npy"), wrap);
  io::write_file_atomic(p("big.npy"), big);
  for (const auto& [file, needle] :
       {std::pair<std::string, std::string>{"wrap.npy", "more values"}, {"big.npy", "truncated"}}) {
    const auto r = run_kf("attend -q " + p(file) + " -k " + p("k.npy") + " -v " + p("v.npy") +
                          " -o " + p("o_bad.npy"));
    EXPECT_EQ(r.code, test::error_exit(r.output)) << r.output;
    EXPECT_NE(r.output.find(file), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(p("o_bad.npy")));
  }
  const auto r = run_kf("attend -q " + p("missing.npy") + " -k " + p("k.npy") + " -v " +
                        p("v.npy") + " -o " + p("nowhere/o.npy"));
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("does not exist"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("missing.npy"), std::string::npos) << "the output is checked first";
}

// Fortran-order and big-endian arrays (numpy's other layouts) give the same output as C order.
TEST_F(KfAttend, FortranOrderAndBigEndianInputsMatchCOrder) {
  const std::string dir_f = KF_FIXTURES_DIR;
  const std::string kv = " -k " + dir_f + "/npy_layout_c.npy -v " + dir_f + "/npy_layout_c.npy";
  const auto ref = run_kf("attend -q " + dir_f + "/npy_layout_c.npy" + kv + " -o " + p("c.npy"));
  ASSERT_EQ(ref.code, 0) << ref.output;
  for (const char* name : {"npy_layout_fortran.npy", "npy_layout_big_f8_fortran.npy"}) {
    SCOPED_TRACE(name);
    const auto r = run_kf("attend -q " + dir_f + "/" + name + kv + " -o " + p("l.npy"));
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_EQ(io::read_file(p("l.npy")), io::read_file(p("c.npy")));
  }
}

// Every subcommand's --help shows its own examples.
TEST(KfHelp, EverySubcommandShowsExamples) {
  for (const char* sub :
       {"attend", "demo", "smooth", "kde", "predict", "train periodic", "train series", "train lm",
        "sample", "attention", "serve", "report", "experiment periodic", "experiment lm"}) {
    SCOPED_TRACE(sub);
    const auto r = run_kf(std::string(sub) + " --help");
    EXPECT_EQ(r.code, 0);
    EXPECT_NE(r.output.find("Example"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("kf " + std::string(sub)), std::string::npos) << r.output;
  }
}

TEST(KfDemo, PrintsTheSeed001Table) {
  const auto r = run_kf("demo --rows 5");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("NW gaussian"), std::string::npos);
  EXPECT_NE(r.output.find("max |NW - attention|"), std::string::npos);
}

}  // namespace
}  // namespace kf
