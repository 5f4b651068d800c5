// kf's progress bars: on a terminal (a pseudo-terminal here, forkpty) a long step draws a bar
// with its name and an ETA; in a pipe (run_kf) nothing is drawn. KF_PROGRESS_MIN_SECONDS=0 lets a
// bar show from the step's first report (~0.1 s) instead of after 0.3 s, so the test needs no
// long run.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "apps/run_kf.hpp"
#include "test_paths.hpp"

namespace kf {
namespace {

// Runs kf with ARGS on a pseudo-terminal; everything it wrote (stdout and stderr share the tty).
std::string run_on_terminal(const std::string& args) {
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    ::setenv("KF_PROGRESS_MIN_SECONDS", "0", 1);
    std::string cmd = KF_EXE;  // appended: GCC 12 warns falsely (-Warray-bounds) on a + b + c
    cmd.append(" ").append(args);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t got = ::read(master, buf, sizeof buf);
    if (got <= 0) break;  // EIO once the child has exited and closed the terminal
    out.append(buf, static_cast<std::size_t>(got));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(master);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out.substr(0, 2000);
  return out;
}

TEST(KfProgress, LongStepsDrawABarWithEtaOnATerminalOnly) {
  const auto dir = std::filesystem::temp_directory_path() / "kf_progress_cli";
  std::filesystem::create_directories(dir);
  const auto csv = (dir / "d3.csv").string();
  {
    std::ofstream f(csv);
    f << "a,b,c,y\n";
    for (int i = 0; i < 60000; ++i) {  // k by LOO-CV over 1..50 in 3-D: ~1 s in the dev build
      const double a = std::fmod(i * 0.6180339887, 1.0), b = std::fmod(i * 0.7548776662, 1.0),
                   c = std::fmod(i * 0.5698402910, 1.0);
      f << a << "," << b << "," << c << "," << std::sin(6 * a) + b * c << "\n";
    }
  }
  const std::string args = csv + " --x a,b,c --method knn --k cv --k-max 50 --quiet";
  const std::string tty = run_on_terminal("smooth " + args);
  EXPECT_NE(tty.find("choosing k by LOO-CV"), std::string::npos) << tty.substr(0, 2000);
  EXPECT_NE(tty.find("ETA"), std::string::npos) << tty.substr(0, 2000);
  const auto piped = test::run_kf("smooth " + args);
  EXPECT_EQ(piped.code, 0);
  EXPECT_EQ(piped.output.find("ETA"), std::string::npos) << piped.output;
  std::filesystem::remove_all(dir);
}

// kf train series: a bar with ETA over the epochs (its note: the validation loss and the best
// epoch so far), then one over the NW forecaster's bandwidth search (1,180 windows of 20: long
// enough for a bar).
TEST(KfProgress, SeriesTrainingDrawsEpochsAndTheBandwidthSearch) {
  const auto dir = std::filesystem::temp_directory_path() / "kf_progress_series";
  std::filesystem::create_directories(dir);
  const auto csv = (dir / "s.csv").string();
  {
    std::ofstream f(csv);
    f << "t,y\n";
    for (int t = 0; t < 1500; ++t) f << t << "," << std::sin(t * 0.5236) + 0.01 * (t % 7) << "\n";
  }
  const std::string tty = run_on_terminal("train series " + csv +
                                          " --y y --x t --window 20 --horizon 300 --epochs 2 "
                                          "--quiet");
  for (const char* what : {"training [", "val ", "best epoch", "choosing the bandwidth", "ETA"})
    EXPECT_NE(tty.find(what), std::string::npos) << what << "\n" << tty.substr(0, 2000);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kf
