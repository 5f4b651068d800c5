// kf smooth --save and kf predict --model on the saved smoother (model/saved_smoother.hpp), and
// kf kde --save on the saved density (model/saved_density.hpp): the
// prediction at new points equals what kf smooth --at gives there, on every route a user can
// name; bad files and bad inputs are one line and write nothing.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/saved_smoother.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

class KfSavedSmoother : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("kf_saved_smoother_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    // 6000 points (the 1-D binned route from 5000), two predictors and a response.
    std::string csv = "a,b,y\n";
    for (int i = 0; i < 6000; ++i) {
      const double a = std::fmod(i * 0.6180339887, 1.0) * 10, b = std::fmod(i * 0.4142135, 1.0);
      csv += fmt::format("{},{},{}\n", a, b, std::sin(a) + b + 0.2 * std::sin(37.0 * i));
    }
    io::write_file_atomic(p("data.csv"), csv);
    io::write_file_atomic(p("small.csv"), csv.substr(0, csv.find('\n', 4000)) + "\n");
    std::string pts = "b,a\n";  // another column order than the data's
    for (int i = 0; i < 25; ++i) pts += fmt::format("{},{}\n", 0.03 + 0.037 * i, 0.2 + 0.39 * i);
    io::write_file_atomic(p("points.csv"), pts);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& name) const { return (dir / name).string(); }

  // kf smooth ARGS --at points.csv --out a.csv --save m.safetensors, then kf predict on the same
  // points: the fit and se columns must be equal.
  void same_as_smooth(const std::string& data, const std::string& args) {
    SCOPED_TRACE(args);
    const auto s = run_kf(fmt::format("smooth {} {} --at {} --out {} --save {} --quiet", p(data),
                                      args, p("points.csv"), p("a.csv"), p("m.safetensors")));
    ASSERT_EQ(s.code, 0) << s.output;
    const auto r = run_kf(fmt::format("predict --model {} --input {} --out {} --quiet",
                                      p("m.safetensors"), p("points.csv"), p("b.csv")));
    ASSERT_EQ(r.code, 0) << r.output;
    const io::csv_table a = io::csv_read(p("a.csv")), b = io::csv_read(p("b.csv"));
    for (const char* col : {"fit", "se"}) {
      const auto& x = a.columns[a.column(col)];
      const auto& y = b.columns[b.column(col)];
      ASSERT_EQ(x.size(), y.size());
      for (std::size_t i = 0; i < x.size(); ++i)
        EXPECT_NEAR(x[i], y[i], 1e-12 * (1 + std::abs(x[i]))) << col << " row " << i;
    }
  }
};

TEST_F(KfSavedSmoother, PredictsWhatTheFitGaveOnEveryRoute) {
  same_as_smooth("data.csv", "--x a --y y");  // binned, LOO-CV
  same_as_smooth("data.csv", "--x a --y y --method local-linear --bandwidth gcv");  // binned
  same_as_smooth("small.csv", "--x a --y y --kernel epanechnikov --exact");  // sorted windows
  same_as_smooth("small.csv", "--x a,b --y y --bandwidth silverman");        // 2-D binned nw
  same_as_smooth("small.csv",
                 "--x a,b --y y --method local-linear --kernel epanechnikov "
                 "--bandwidth 1.5,0.3");                                        // k-d tree
  same_as_smooth("small.csv", "--x a,b --y y --method knn --k cv --k-max 20");  // neighbors
}

TEST_F(KfSavedSmoother, TheFileSaysWhatItIs) {
  ASSERT_EQ(run_kf(fmt::format("smooth {} --x a --y y --bandwidth aic --save {} --quiet",
                               p("small.csv"), p("m.safetensors")))
                .code,
            0);
  const model::checkpoint ck = model::checkpoint_load(p("m.safetensors"));
  EXPECT_TRUE(model::saved_smoother_is(ck));
  const model::saved_smoother s = model::saved_smoother_read(ck, "m");
  EXPECT_EQ(s.x.rows(), index(io::csv_read(p("small.csv")).columns[0].size()));
  EXPECT_EQ(s.x_names, std::vector<std::string>{"a"});
  EXPECT_EQ(s.y_name, "y");
  EXPECT_EQ(s.criterion, "aicc");
  EXPECT_NE(s.trained_by.find("kf smooth"), std::string::npos) << s.trained_by;
  ASSERT_EQ(s.spec.bandwidth.size(), 1u);
  EXPECT_GT(s.spec.bandwidth[0], 0);
}

TEST_F(KfSavedSmoother, BadModelsAndInputsAreOneLineNothingWritten) {
  ASSERT_EQ(run_kf(fmt::format("smooth {} --x a,b --y y --bandwidth silverman --save {} --quiet",
                               p("small.csv"), p("m.safetensors")))
                .code,
            0);
  auto one_line = [&](const std::string& args, const std::string& expect, int code = 1) {
    SCOPED_TRACE(args);
    const auto r = run_kf(args);
    EXPECT_EQ(r.code, code) << r.output;  // 2: a bad option value
    EXPECT_NE(r.output.find(expect), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_FALSE(fs::exists(p("out.csv")));
  };
  io::write_file_atomic(p("one_column.csv"), "a\n1\n2\n");
  one_line(fmt::format("predict --model {} --input {} --out {}", p("m.safetensors"),
                       p("one_column.csv"), p("out.csv")),
           "b");
  one_line(fmt::format("predict --model {} --out {}", p("m.safetensors"), p("out.csv")),
           "a smoother needs --input");
  // Damaged metadata (the same tensors): each field at fault is named.
  const model::checkpoint good = model::checkpoint_load(p("m.safetensors"));
  for (const auto& [key, value, expect] :
       {std::tuple<std::string, std::string, std::string>{"kernel", "no_such_kernel",
                                                          "metadata 'kernel' is 'no_such_kernel'"},
        {"bandwidth", "0.5,-1", "metadata 'bandwidth'"},
        {"method", "spline", "metadata 'method' is 'spline'"}}) {
    model::checkpoint ck = good;
    ck.metadata[key] = value;
    io::write_file_atomic(p("bad.safetensors"), model::checkpoint_encode(nn::parameters<float>{},
                                                                         ck.metadata, ck.tensors));
    one_line(fmt::format("predict --model {} --input {} --out {}", p("bad.safetensors"),
                         p("points.csv"), p("out.csv")),
             expect);
  }
  one_line(fmt::format("smooth {} --x a --y y --method lowess --save {}", p("small.csv"),
                       p("l.safetensors")),
           "--save does not apply to --method lowess", 2);
  one_line(fmt::format("smooth {} --x a --y y --save {}", p("small.csv"), p("m.npy")), "--save", 2);
}

// kf kde --save and kf predict --model on the saved density (model/saved_density.hpp): the
// density at new points equals kf kde --at there (1-D binned, 2-D exact), and damaged metadata is
// one line naming the field.
TEST_F(KfSavedSmoother, SavedDensityPredictsWhatKdeGave) {
  for (const std::string args : {"--x a", "--x a,b --bandwidth cv-ml", "--x a --bandwidth isj"}) {
    SCOPED_TRACE(args);
    const std::string data = args == "--x a,b --bandwidth cv-ml" ? "small.csv" : "data.csv";
    ASSERT_EQ(run_kf(fmt::format("kde {} {} --at {} --out {} --save {} --quiet", p(data), args,
                                 p("points.csv"), p("a.csv"), p("k.safetensors")))
                  .code,
              0);
    const auto r = run_kf(fmt::format("predict --model {} --input {} --out {} --quiet",
                                      p("k.safetensors"), p("points.csv"), p("b.csv")));
    ASSERT_EQ(r.code, 0) << r.output;
    const io::csv_table a = io::csv_read(p("a.csv")), b = io::csv_read(p("b.csv"));
    const auto& x = a.columns[a.column("density")];
    const auto& y = b.columns[b.column("density")];
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-12 * x[i]) << i;
  }
  model::checkpoint ck = model::checkpoint_load(p("k.safetensors"));
  ck.metadata["bandwidth"] = "0.1,0.2";  // two values for one column
  io::write_file_atomic(p("bad.safetensors"),
                        model::checkpoint_encode(nn::parameters<float>{}, ck.metadata, ck.tensors));
  const auto r = run_kf(fmt::format("predict --model {} --input {} --out {}", p("bad.safetensors"),
                                    p("points.csv"), p("out.csv")));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("metadata 'bandwidth' has 2 values for 1 columns"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(p("out.csv")));
}

}  // namespace
}  // namespace kf
