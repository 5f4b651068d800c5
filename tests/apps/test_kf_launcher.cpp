// The kf launcher (apps/kf/launcher.cpp): what it sets reaches libgomp before it starts (libgomp's
// own report, OMP_DISPLAY_ENV=verbose), whatever the user set is kept, arguments and exit codes
// pass through, and a missing program is one clear line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "apps/run_kf.hpp"

namespace {

namespace fs = std::filesystem;

// `kf ARGS` with the OpenMP variables cleared, then `env` set; its output with libgomp's report.
kf::test::result launched(const std::string& env, const std::string& args) {
  return kf::test::run_shell(
      "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_NUM_THREADS -u KF_OMP_SPIN "
      "-u OMPI_COMM_WORLD_LOCAL_SIZE -u MPI_LOCALNRANKS OMP_DISPLAY_ENV=verbose " +
      env + " " + std::string(KF_EXE) + " " + args + " 2>&1");
}

bool has(const kf::test::result& r, const std::string& text) {
  return r.output.find(text) != std::string::npos;
}

TEST(KfLauncher, TrainingCommandsWaitBriefly) {
  const auto r = launched("", "train series --help");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r, "GOMP_SPINCOUNT = '3000'")) << r.output;
  const auto v = launched("", "--version");  // not a training command: libgomp's default
  EXPECT_TRUE(has(v, "GOMP_SPINCOUNT = '300000'")) << v.output;
  EXPECT_TRUE(has(v, "OpenMP settings made by kf: none for waiting")) << v.output;
}

TEST(KfLauncher, WhatTheUserSetIsKept) {
  EXPECT_TRUE(has(launched("GOMP_SPINCOUNT=777", "train --help"), "GOMP_SPINCOUNT = '777'"));
  const auto active = launched("OMP_WAIT_POLICY=active", "train --help");
  EXPECT_TRUE(has(active, "OMP_WAIT_POLICY = 'ACTIVE'")) << active.output;
  EXPECT_FALSE(has(active, "GOMP_SPINCOUNT = '3000'")) << active.output;
  EXPECT_TRUE(has(launched("KF_OMP_SPIN=default", "train --help"), "GOMP_SPINCOUNT = '300000'"));
  EXPECT_TRUE(has(launched("KF_OMP_SPIN=50", "smooth --help"), "GOMP_SPINCOUNT = '50'"));
}

TEST(KfLauncher, MpiRanksOnOneHostShareItsCores) {
  const auto r = launched("OMPI_COMM_WORLD_LOCAL_SIZE=64", "--version");  // more ranks than cores
  EXPECT_TRUE(has(r, "OMP_NUM_THREADS = '1'")) << r.output;
  EXPECT_TRUE(has(r, "OMP_NUM_THREADS=1 (64 MPI ranks on this host)")) << r.output;
  EXPECT_TRUE(has(launched("OMPI_COMM_WORLD_LOCAL_SIZE=64 OMP_NUM_THREADS=3", "--version"),
                  "OMP_NUM_THREADS = '3'"));
}

TEST(KfLauncher, ArgumentsAndExitCodesPassThrough) {
  EXPECT_EQ(kf::test::run_kf("smooth --no-such-option").code, 2);
  const auto r = kf::test::run_kf("demo --rows 2");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r, "NW gaussian")) << r.output;
}

TEST(KfLauncher, AMissingProgramIsOneClearLine) {
  const fs::path dir = fs::temp_directory_path() / ("kf_launcher_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::copy_file(KF_EXE, dir / "kf", fs::copy_options::overwrite_existing);
  const auto r = kf::test::run_shell((dir / "kf").string() + " --version 2>&1");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r, "kf: error: the kf program is missing")) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;  // one line
  fs::remove_all(dir);
}

}  // namespace

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The launcher may train on fewer threads on a busy machine: the numbers must not change.
TEST(KfLauncher, TrainingGivesTheSameNumbersOnOneAndTwoThreads) {
  const fs::path dir = fs::temp_directory_path() / ("kf_threads_" + std::to_string(getpid()));
  fs::create_directories(dir);
  {
    std::ofstream csv(dir / "series.csv");
    csv << "t,y\n";
    for (int t = 0; t < 144; ++t)
      csv << t << "," << 100 + 0.3 * t + 10 * std::sin(2 * M_PI * t / 12) + std::cos(1.7 * t)
          << "\n";
  }
  for (const char* threads : {"1", "2"}) {
    const std::string out = (dir / threads).string();
    const auto r = kf::test::run_shell(
        std::string("OMP_NUM_THREADS=") + threads + " " + KF_EXE + " train series " +
        (dir / "series.csv").string() + " --y y --horizon 12 --epochs 8 --backtest 3 --out " + out +
        " --quiet 2>&1 && OMP_NUM_THREADS=" + threads + " " + KF_EXE +
        " train periodic --epochs 2 --out " + out + "/periodic --quiet 2>&1");
    ASSERT_EQ(r.code, 0) << r.output;
  }
  for (const char* file : {"forecast.csv", "periodic/prediction.csv"}) {  // loss.csv: seconds
    const std::string one = read_all(dir / "1" / file), two = read_all(dir / "2" / file);
    EXPECT_FALSE(one.empty()) << file;
    EXPECT_EQ(one, two) << file << " differs between 1 and 2 threads";
  }
  fs::remove_all(dir);
}

}  // namespace
