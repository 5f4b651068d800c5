// The bad-input suite, continued: what a failed or killed run leaves behind. A run killed with
// SIGKILL mid-work (training, a report, an experiment grid) leaves its outputs as they were: the
// --save file keeps its old bytes, no --out folder appears, no temporary is left. A run that
// fails when it writes — a full file system (a 256 KiB tmpfs when this user may mount one), or a
// file-size limit (RLIMIT_FSIZE, any user) — exits non-zero naming the file and leaves no folder
// and no partial file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <thread>

#include "apps/run_kf.hpp"
#include "inputs.hpp"
#include "test_paths.hpp"

namespace kf::bad {
namespace {

// kf ARGS started through sh (so PRELUDE can set limits first), killed with SIGKILL after
// `after`; returns true when it died of the signal.
bool kill_mid_run(const std::string& args, std::chrono::milliseconds after) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::FILE* null = std::fopen("/dev/null", "w");
    dup2(fileno(null), 1);
    dup2(fileno(null), 2);
    std::string cmd = "exec ";  // appended: GCC 12 warns falsely (-Warray-bounds) on a + b + c
    cmd.append(KF_EXE).append(" ").append(args);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(after);
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
}

// The names in DIR (not recursive).
std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> left;
  for (const auto& f : fs::directory_iterator(dir)) left.insert(f.path().filename().string());
  return left;
}

// A fresh case folder holding only m.safetensors (the sentinel).
std::string fresh_case(const std::string& name) {
  const std::string dir = inputs_dir() + "/../cases/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  put(dir + "/m.safetensors", kSentinel);
  return dir;
}

void expect_untouched_after_kill(const std::string& name, const std::string& args) {
  const std::string dir = fresh_case(name);
  ASSERT_TRUE(kill_mid_run(expand(args, inputs_dir(), dir), std::chrono::milliseconds(1500)))
      << "the run ended before the kill";
  EXPECT_EQ(io::read_file(dir + "/m.safetensors"), kSentinel);
  EXPECT_EQ(names_in(dir), std::set<std::string>{"m.safetensors"});
}

TEST(KilledRun, PeriodicTrainingLeavesItsOutputsAsTheyWere) {
  expect_untouched_after_kill(
      "kill_periodic",
      "train periodic --config quick --epochs 500 --save {out}/m.safetensors "
      "--out {out}/run --summary {out}/run/s.json");
}

TEST(KilledRun, SeriesTrainingLeavesItsOutputsAsTheyWere) {
  expect_untouched_after_kill("kill_series",
                              "train series {in}/data.csv --y y --x x --epochs 100000000 "
                              "--patience 0 --save {out}/m.safetensors --out {out}/run");
}

TEST(KilledRun, LanguageModelTrainingLeavesItsOutputsAsTheyWere) {
  expect_untouched_after_kill("kill_lm",
                              "train lm --corpus {in}/corpus.txt --iters 100000 --save "
                              "{out}/m.safetensors --out {out}/run");
}

// The report computes for ~15 s (seed 002's mimicry, the periodic and language models): killed
// after 1.5 s, its --out folder (two levels deep) must not exist.
TEST(KilledRun, ReportLeavesNoFolder) {
  expect_untouched_after_kill("kill_report",
                              "report --out {out}/rep/page --sections seed002,periodic,lm --quiet");
}

// An experiment grid of 4 runs (~20 s): killed during the second, no folder and no figure.
TEST(KilledRun, ExperimentLeavesNoFolder) {
  expect_untouched_after_kill("kill_experiment",
                              "experiment periodic --config quick --functions sin --seeds 0,1,2,3 "
                              "--quiet --out {out}/grid");
}

// kf ARGS under a file-size limit of LIMIT_KIB with SIGXFSZ ignored: every write beyond it
// fails with EFBIG, as on a full disk. (sh's ulimit -f counts 512-byte blocks.)
test::result run_kf_file_limited(const std::string& args, int limit_kib) {
  // appended, not a + b + c: GCC 12 warns falsely (-Warray-bounds) on that
  std::string cmd = "trap '' XFSZ; ulimit -f ";
  cmd.append(std::to_string(2 * limit_kib))
      .append("; exec ")
      .append(KF_EXE)
      .append(" ")
      .append(args)
      .append(" 2>&1");
  return test::run_shell(cmd);
}

struct write_failure_case {
  std::string name, args, file;  // file: a fragment of the path the message must name
  int limit_kib = 64;            // below the largest output file
};

void PrintTo(const write_failure_case& c, std::ostream* os) { *os << "kf " << c.args; }

class WriteFails : public ::testing::TestWithParam<write_failure_case> {};

// Each command has an output file larger than its limit: the run fails naming a file, exit 1, and
// the case folder is exactly as it was (the sentinel, no --out folder, no temporary).
TEST_P(WriteFails, UnderAFileSizeLimitNothingIsLeft) {
  const auto& c = GetParam();
  const std::string dir = fresh_case("fsize_" + c.name);
  const auto r = run_kf_file_limited(expand(c.args, inputs_dir(), dir), c.limit_kib);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(c.file), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("File too large"), std::string::npos) << r.output;
  EXPECT_EQ(names_in(dir), std::set<std::string>{"m.safetensors"}) << r.output;
}

std::vector<write_failure_case> write_failure_cases() {
  return {{"report", "report --out {out}/rep --sections seed000,seed001 --quiet", "rep/figures/"},
          {"experiment",
           "experiment periodic --config quick --functions sin --seeds 0 --epochs 2 --quiet "
           "--out {out}/grid",
           "grid/"},
          {"train", "train periodic --config quick --epochs 2 --out {out}/run --quiet", "run/"},
          {"demo", "demo --out {out}/npy/data", "npy/data/", 2}};
}

INSTANTIATE_TEST_SUITE_P(Outputs, WriteFails, ::testing::ValuesIn(write_failure_cases()),
                         [](const auto& i) { return i.param.name; });

// A real full file system: a 256 KiB tmpfs mounted for the test (root, or a user allowed to
// mount; skipped otherwise). kf report fails on ENOSPC naming the file, exit 1, and leaves the
// file system empty.
TEST(FullDisk, ReportFailsAndLeavesNothing) {
  const std::string mnt = inputs_dir() + "/../cases/tmpfs_full";
  fs::create_directories(mnt);
  if (::mount("kf_full", mnt.c_str(), "tmpfs", 0, "size=256k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << ")";
  const auto r = test::run_kf("report --out " + mnt + "/rep --sections seed000,seed001 --quiet");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("/rep/"), std::string::npos) << r.output;
  EXPECT_TRUE(names_in(mnt).empty()) << r.output;
  EXPECT_EQ(::umount(mnt.c_str()), 0);
}

}  // namespace
}  // namespace kf::bad
