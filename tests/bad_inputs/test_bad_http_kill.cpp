// The bad-input suite, continued: the explorer's HTTP API (kf serve on a free loopback port)
// answers bad requests with 400 and a message naming the parameter, and keeps serving; and runs
// killed with SIGKILL mid-training leave their outputs as they were (the --save file keeps its
// old bytes, no --out folder appears, no temporary is left).
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>

#include "apps/run_kf.hpp"
#include "inputs.hpp"
#include "test_paths.hpp"

namespace kf::bad {
namespace {

using test::kf_server;

struct http_case {
  std::string name, query, parameter;
};

void PrintTo(const http_case& c, std::ostream* os) { *os << "GET /api/smooth?" << c.query; }

class BadRequest : public ::testing::TestWithParam<http_case> {
 protected:
  static void SetUpTestSuite() { srv = new kf_server(); }
  static void TearDownTestSuite() { delete srv; }
  static kf_server* srv;
};
kf_server* BadRequest::srv = nullptr;

TEST_P(BadRequest, IsRefusedWith400NamingTheParameter) {
  ASSERT_GT(srv->port, 0) << "kf serve did not start";
  httplib::Client c("127.0.0.1", srv->port);
  c.set_read_timeout(20, 0);
  const auto r = c.Get(("/api/smooth?" + GetParam().query).c_str());
  ASSERT_TRUE(r) << "no answer";
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find(GetParam().parameter), std::string::npos) << r->body;
  EXPECT_LE(r->body.size(), 1000u);
  const auto ok = c.Get("/api/kernels");  // still serving
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

std::vector<http_case> http_cases() {
  return {{"n_not_a_number", "n=abc", "n"},
          {"n_too_large", "n=1000000000", "n"},
          {"bandwidth_nan", "bandwidth=nan", "bandwidth"},
          {"bandwidth_negative", "bandwidth=-1", "bandwidth"},
          {"temperature_zero", "temperature=0", "temperature"},
          {"grid_too_small", "grid=1", "grid"},
          {"seed_negative", "seed=-1", "seed"},
          {"noise_infinite", "noise=inf", "noise"},
          {"unknown_function", "function=nope", "function"},
          {"unknown_kernel", "kernel=nope", "kernel"},
          {"value_too_long", "kernel=" + std::string(300, 'a'), "kernel"}};
}

INSTANTIATE_TEST_SUITE_P(Http, BadRequest, ::testing::ValuesIn(http_cases()),
                         [](const auto& i) { return i.param.name; });

// kf ARGS started, killed with SIGKILL after `after`; returns true when it died of the signal.
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

void expect_untouched_after_kill(const std::string& name, const std::string& args) {
  const std::string dir = inputs_dir() + "/../cases/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  put(dir + "/m.safetensors", kSentinel);
  ASSERT_TRUE(kill_mid_run(expand(args, inputs_dir(), dir), std::chrono::milliseconds(1500)))
      << "the run ended before the kill";
  EXPECT_EQ(io::read_file(dir + "/m.safetensors"), kSentinel);
  std::set<std::string> left;
  for (const auto& f : fs::directory_iterator(dir)) left.insert(f.path().filename().string());
  EXPECT_EQ(left, std::set<std::string>{"m.safetensors"});
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

}  // namespace
}  // namespace kf::bad
