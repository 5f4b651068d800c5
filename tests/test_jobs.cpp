// run_jobs (kernelformer/jobs.hpp): every job once, one OpenMP thread per worker, the first
// exception rethrown, and a job's numbers those of a one-thread run whatever the worker count.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "kernelformer/jobs.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/periodic_experiment.hpp"
#include "kernelformer/model/regressor_train.hpp"

namespace {

using kf::index;

TEST(Jobs, EveryJobRunsOnceOnAOneThreadTeam) {
  for (int workers : {1, 2, 3, 9}) {
    std::vector<int> runs(7, 0), team(7, 0);
    std::atomic<int> monitored{0};
    kf::run_jobs(
        7, workers,
        [&](index i) {
          ++runs[std::size_t(i)];
          int n = 0;
#pragma omp parallel
          {
#pragma omp atomic
            ++n;
          }
          team[std::size_t(i)] = n;
        },
        [&] { ++monitored; });
    for (int i = 0; i < 7; ++i) {
      EXPECT_EQ(runs[std::size_t(i)], 1) << "job " << i << ", " << workers << " workers";
      EXPECT_EQ(team[std::size_t(i)], 1) << "job " << i << ": a parallel region's team";
    }
    EXPECT_GE(monitored.load(), 1) << "the monitor runs at least once, at the end";
  }
  kf::run_jobs(0, 2, [](index) { FAIL() << "no job to run"; });
}

TEST(Jobs, TheFirstExceptionIsRethrownAndNoFurtherJobStarts) {
  std::atomic<int> started{0};
  EXPECT_THROW(kf::run_jobs(50, 1,
                            [&](index i) {
                              ++started;
                              if (i == 3) throw std::runtime_error("job 3");
                            }),
               std::runtime_error);
  EXPECT_EQ(started.load(), 4) << "one worker: jobs 0..3, then none";
  EXPECT_THROW(kf::run_jobs(
                   4, 2, [](index) {}, [] { throw std::logic_error("monitor"); }),
               std::logic_error);
}

TEST(Jobs, WorkersDefaultToTheCoresAndAtLeastOne) {
  EXPECT_EQ(kf::job_workers(0), 1);
  EXPECT_EQ(kf::job_workers(1), 1);
  EXPECT_EQ(kf::job_workers(1000), omp_get_max_threads());
}

// The reference: the same training on this thread with a team of one (what OMP_NUM_THREADS=1
// gives a process). Two runs on two workers must give the same bytes.
TEST(Jobs, ATrainingRunEqualsTheOneThreadRunBitwise) {
  using namespace kf::model;
  // The code configuration (d 128) on 128 windows: wide enough that OpenBLAS cuts its GEMMs by
  // the thread count (with a team of two the bytes differ — checked when this test was written; the
  // quick configuration's do not).
  const auto d = periodic_make(periodic_function::sin);
  kf::matrix<float> x(128, d.train_x.cols());
  std::copy_n(d.train_x.data(), x.size(), x.data());
  const std::vector<float> y(d.train_y.begin(), d.train_y.begin() + 128);
  auto train = [&](std::uint64_t seed) {
    auto cfg = periodic_config("code");
    cfg.block.dropout = 0.05;
    sequence_regressor<float> m(cfg, seed);
    train_options o;
    o.epochs = 1;
    o.batch = 64;
    o.seed = seed;
    train_regressor(m, x, y, o);
    return checkpoint_encode(m.params(), {});
  };
  std::vector<std::string> reference;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  for (std::uint64_t seed : {0, 1}) reference.push_back(train(seed));
  omp_set_num_threads(threads);
  std::vector<std::string> got(2);
  kf::run_jobs(2, 2, [&](index i) { got[std::size_t(i)] = train(std::uint64_t(i)); });
  // (Booleans: a failure must not print two 850 kB checkpoints.)
  EXPECT_TRUE(got[0] == reference[0]) << "seed 0: the worker's weights differ from one thread's";
  EXPECT_TRUE(got[1] == reference[1]) << "seed 1: the worker's weights differ from one thread's";
  EXPECT_FALSE(got[0] == got[1]) << "the two seeds gave the same weights";
}

}  // namespace
