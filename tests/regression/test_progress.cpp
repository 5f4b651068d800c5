// Progress reporting (kernelformer/progress.hpp): what a sink receives from a step, nested steps
// kept quiet, OpenMP loops counted in full, no final report on a throw — and the long steps of
// the regression routes (binning, 2-D transforms, neighbor queries, exact sums, CSV reading)
// each ending with done = total.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernelformer/io/csv.hpp"
#include "kernelformer/progress.hpp"
#include "kernelformer/regression/bandwidth.hpp"
#include "kernelformer/regression/kde.hpp"
#include "kernelformer/regression/smoother.hpp"

namespace kf {
namespace {

struct report {
  std::string step;
  index done, total;
};

struct recorder {
  std::vector<report> seen;
  progress_sink sink() {
    return [this](std::string_view s, index d, index t) { seen.push_back({std::string(s), d, t}); };
  }
  // Every report of steps whose name starts with prefix: done within [0, total], never
  // decreasing within a step (one step ends with done = total; a later one starts again), the
  // last one done = total. Returns how many reports there were.
  int check(const std::string& prefix) const {
    int count = 0;
    index last = -1;
    for (const auto& r : seen) {
      if (r.step.rfind(prefix, 0) != 0) continue;
      ++count;
      EXPECT_GE(r.done, 0) << r.step;
      EXPECT_LE(r.done, r.total) << r.step;
      EXPECT_GE(r.done, last) << r.step;
      last = r.done == r.total ? -1 : r.done;
    }
    if (count > 0) {
      const report* final_report = nullptr;
      for (const auto& r : seen)
        if (r.step.rfind(prefix, 0) == 0) final_report = &r;
      EXPECT_EQ(final_report->done, final_report->total) << prefix;
    }
    return count;
  }
};

TEST(Progress, StepReportsItsEndToTheSink) {
  recorder rec;
  {
    progress_scope scope(rec.sink());
    progress_step step("counting", 10);
    for (index i = 0; i < 10; ++i) step.add(1);
  }
  ASSERT_EQ(rec.seen.size(), 1u);  // a fast step: only its final report (no 0.1 s elapsed)
  EXPECT_EQ(rec.seen[0].step, "counting");
  EXPECT_EQ(rec.seen[0].done, 10);
  EXPECT_EQ(rec.seen[0].total, 10);
}

TEST(Progress, NestedStepsAndSilentStepsAreQuiet) {
  recorder rec;
  {
    progress_scope scope(rec.sink());
    {
      progress_step outer("outer", 2);
      { progress_step inner("inner", 5); }
      outer.set(2);
    }
    {
      progress_step silent("silent", 3, true);
      progress_step inner("inside a silent step", 5);
    }
  }
  ASSERT_EQ(rec.seen.size(), 1u);
  EXPECT_EQ(rec.seen[0].step, "outer");
}

TEST(Progress, NoSinkNoReportsAndTheScopeRestoresThePrevious) {
  recorder outer_rec, inner_rec;
  { progress_step alone("no sink", 4); }  // nothing to call: must not crash
  {
    progress_scope a(outer_rec.sink());
    {
      progress_scope b(inner_rec.sink());
      progress_step s("to the inner sink", 1);
    }
    progress_step s("to the outer sink", 1);
  }
  { progress_step after("after both scopes", 1); }
  ASSERT_EQ(inner_rec.seen.size(), 1u);
  EXPECT_EQ(inner_rec.seen[0].step, "to the inner sink");
  ASSERT_EQ(outer_rec.seen.size(), 1u);
  EXPECT_EQ(outer_rec.seen[0].step, "to the outer sink");
}

TEST(Progress, NoFinalReportWhenTheStepThrows) {
  recorder rec;
  progress_scope scope(rec.sink());
  EXPECT_THROW(
      {
        progress_step step("fails", 3);
        throw std::runtime_error("x");
      },
      std::runtime_error);
  EXPECT_TRUE(rec.seen.empty());
}

TEST(Progress, TicksFromOpenMpThreadsAddUp) {
  // tick counts 1024 units per 1024 rows on whichever thread ran them: the sum over threads is
  // n rounded down to whole blocks of each thread's rows; the final report says done = total.
  recorder rec;
  progress_scope scope(rec.sink());
  const index n = 1 << 16;
  {
    progress_step step("loop", n);
#pragma omp parallel for schedule(dynamic, 1024)
    for (index i = 0; i < n; ++i) step.tick(i);
  }
  EXPECT_EQ(rec.check("loop"), 1);
}

// The regression routes' steps, at sizes that take milliseconds: each step that ran ends with
// done = total, and the steps a route runs are the ones named.
TEST(Progress, RegressionRoutesReportTheirSteps) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 6);
  std::normal_distribution<double> e(0, 0.3);
  const index n = 6001;  // ≥ binned_min_n: the binned routes
  matrix<double> x1(n, 1), x2(n, 2), x3(n, 3);
  std::vector<double> y(static_cast<std::size_t>(n));
  for (index i = 0; i < n; ++i) {
    for (index c = 0; c < 3; ++c) x3(i, c) = u(rng);
    x1(i, 0) = x2(i, 0) = x3(i, 0);
    x2(i, 1) = x3(i, 1);
    y[static_cast<std::size_t>(i)] = std::sin(x1(i, 0)) + e(rng);
  }
  recorder rec;
  progress_scope scope(rec.sink());
  regression_spec nw;
  nw.bandwidth = {0.3};
  regression_fit_data(nw, x1.cview(), y, bandwidth_criterion::fixed);
  EXPECT_GE(rec.check("binning"), 1);
  EXPECT_GE(rec.check("evaluating at"), 1);
  rec.seen.clear();
  regression_fit_data(nw, x2.cview(), y, bandwidth_criterion::fixed);
  EXPECT_GE(rec.check("binning"), 1);
  EXPECT_GE(rec.check("2-D transforms"), 1);
  rec.seen.clear();
  regression_spec ep;
  ep.kernel = kernel_epanechnikov{};
  ep.bandwidth = {0.5};
  regression_fit_data(ep, x3.cview(), y, bandwidth_criterion::fixed);
  EXPECT_GE(rec.check("exact sums over each support"), 1);
  rec.seen.clear();
  regression_spec knn;
  knn.method = regression_method::knn;
  knn.k = 0;
  knn.k_max = 20;
  const auto fit = regression_fit_data(knn, x3.cview(), y, bandwidth_criterion::fixed);
  EXPECT_EQ(rec.check("choosing k by LOO-CV"), 1);
  EXPECT_EQ(rec.check("the fit's neighbors"), 1);
  rec.seen.clear();
  regression_predict(fit, x3.cview());
  EXPECT_EQ(rec.check("neighbor queries"), 1);
  rec.seen.clear();
  // A bandwidth search without a progress_fn reports itself, one step; the criterion
  // evaluations inside it (binning, sums) stay quiet.
  regression_fit_data(nw, x1.cview(), y, bandwidth_criterion::loo_cv);
  EXPECT_GE(rec.check("choosing the bandwidth"), 1);
  std::size_t search_end = 0;
  for (std::size_t r = 0; r < rec.seen.size(); ++r)
    if (rec.seen[r].step.rfind("choosing the bandwidth", 0) == 0) search_end = r;
  for (std::size_t r = 0; r <= search_end; ++r)  // nothing else reported during the search
    EXPECT_EQ(rec.seen[r].step.rfind("choosing the bandwidth", 0), 0u) << rec.seen[r].step;
  rec.seen.clear();
  // The exact all-pairs route (a gaussian in 3-D).
  regression_spec g3;
  g3.bandwidth = {0.5};
  regression_fit_data(g3, x3.cview().block(0, 0, 500, 3), std::span<const double>(y).first(500),
                      bandwidth_criterion::fixed);
  EXPECT_EQ(rec.check("exact sums over all pairs"), 1);
}

TEST(Progress, CsvReadingReportsBytes) {
  const auto path = std::filesystem::temp_directory_path() / "kf_progress_test.csv";
  {
    std::ofstream f(path);
    f << "x,y\n";
    for (int i = 0; i < 1000; ++i) f << i << "," << 2 * i << "\n";
  }
  const auto bytes = static_cast<index>(std::filesystem::file_size(path));
  recorder rec;
  {
    progress_scope scope(rec.sink());
    const auto t = io::csv_read(path.string());
    EXPECT_EQ(t.rows(), 1000);
  }
  std::filesystem::remove(path);
  ASSERT_EQ(rec.check("reading "), 1);
  EXPECT_EQ(rec.seen.back().total, bytes);  // counted in bytes of the file
}

}  // namespace
}  // namespace kf
