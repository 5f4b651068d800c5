// End-to-end: kf train periodic (a short quick run) writes its summary, plots, attention map and
// a checkpoint that kf predict runs; bad inputs fail cleanly.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/io/npy.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

TEST(KfTrain, PeriodicQuickRunThenPredict) {
  const fs::path dir = fs::temp_directory_path() / ("kf_train_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string d = dir.string();
  // The checkpoint goes inside the --out folder, which is created only when outputs are staged.
  auto r = run_kf("train periodic --function square --epochs 2 --scale-inputs --dropout 0 --out " +
                  d + "/run --save " + d + "/run/ck/m.safetensors --summary " + d + "/s.json");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string js = io::read_file(d + "/s.json");
  for (const char* key : {"\"function\"", "\"config\"", "\"kernel\"", "\"seed\"", "\"epochs\"",
                          "\"test_mse_rollout\"", "\"test_mse_teacher_forced\"",
                          "\"epoch_seconds_median\"", "\"train_seconds\""})
    EXPECT_NE(js.find(key), std::string::npos) << key;
  EXPECT_NE(js.find("\"scale_inputs\": true"), std::string::npos) << js;
  EXPECT_NE(js.find("\"dropout\": 0.0"), std::string::npos) << js;
  for (const char* f : {"loss.csv", "loss.png", "prediction.csv", "prediction.png", "attention.png",
                        "attention.csv", "summary.json"})
    EXPECT_TRUE(fs::exists(d + "/run/" + f)) << f;
  EXPECT_EQ(io::csv_read(d + "/run/prediction.csv").rows(), 200);
  io::npy_write<float>(d + "/x.npy", test::random_matrix<float>(3, 99, 1).cview());
  fs::copy_file(d + "/run/ck/m.safetensors", d + "/m.safetensors");
  r = run_kf("predict --model " + d + "/m.safetensors --input " + d + "/x.npy --out " + d +
             "/y.npy");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(io::npy_read(d + "/y.npy").rows(), 3);
  // Bad inputs: one line, non-zero exit, nothing written.
  io::npy_write<float>(d + "/short.npy", test::random_matrix<float>(3, 50, 1).cview());
  io::write_file_atomic(d + "/broken.safetensors", "\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train periodic --function cosine --out " + d + "/bad", "unknown function"},
      {"train periodic --config huge --out " + d + "/bad", "unknown configuration"},
      {"train periodic --kernel nope --out " + d + "/bad", "unknown kernel"},
      {"train periodic --save " + d + "/bad.bin", ".safetensors"},
      {"train periodic --save " + d + "/bad/m.safetensors", "does not exist"},  // checked first
      {"train periodic --out " + d + "/run/summary.json", "not a folder"},
      {"train periodic --dropout 1 --out " + d + "/bad", "--dropout"},
      {"train periodic --dropout nan --out " + d + "/bad", "--dropout nan"},
      {"predict --model " + d + "/m.safetensors --input " + d + "/short.npy --out " + d +
           "/bad.npy",
       "99 values"},
      {"predict --model " + d + "/broken.safetensors --input " + d + "/x.npy --out " + d +
           "/bad.npy",
       "broken.safetensors"},
      {"predict --model " + d + "/none.safetensors --input " + d + "/x.npy --out " + d + "/bad.npy",
       "none.safetensors"},
  };
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(args);
    const auto rr = run_kf(args);
    EXPECT_NE(rr.code, 0);
    EXPECT_NE(rr.output.find(needle), std::string::npos) << rr.output;
    EXPECT_FALSE(fs::exists(d + "/bad")) << "no output directory";
    EXPECT_FALSE(fs::exists(d + "/bad.npy"));
    EXPECT_FALSE(fs::exists(d + "/bad.bin"));
  }
  fs::remove_all(dir);
}

// redraw=1: training draws fresh favor features every step; the checkpoint keeps the kernel
// (redraw=1 and seed=S) and kf predict uses seed=S's features. One smoothing call refuses it.
TEST(KfTrain, FeatureKernelRedrawTrainsSavesAndPredicts) {
  const fs::path dir = fs::temp_directory_path() / ("kf_redraw_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string d = dir.string();
  auto r = run_kf(
      "train periodic --function sin --epochs 1 --dropout 0 --kernel "
      "favor:features=16,seed=3,redraw=1 --save " +
      d + "/m.safetensors --summary " + d + "/s.json --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string js = io::read_file(d + "/s.json");
  EXPECT_NE(js.find("redraw=1"), std::string::npos) << js;
  EXPECT_NE(js.find("\"test_mse_rollout\""), std::string::npos) << js;
  io::npy_write<float>(d + "/x.npy", test::random_matrix<float>(2, 99, 1).cview());
  r = run_kf("predict --model " + d + "/m.safetensors --input " + d + "/x.npy --out " + d +
             "/y.npy");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto y = io::npy_read(d + "/y.npy");
  EXPECT_EQ(y.rows(), 2);
  for (double v : y.values) EXPECT_TRUE(std::isfinite(v));
  const std::string m = d + "/x.npy";
  r = run_kf("attend -q " + m + " -k " + m + " -v " + m + " --kernel favor:redraw=1 -o " + d +
             "/bad.npy");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("training"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d + "/bad.npy"));
  fs::remove_all(dir);
}

// kf predict on PyTorch's model (tests/fixtures, python/make_fixture_transformer.py): the
// predictions it writes are PyTorch's, from a CSV and from a float32 .npy input, to CSV and .npy.
TEST(KfPredict, PyTorchModelFromCsvAndNpyInputs) {
  const fs::path dir = fs::temp_directory_path() / ("kf_predict_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string d = dir.string(), fx = KF_FIXTURES_DIR;
  const auto io_arr = io::npy_read(fx + "/torch_regressor_io.npy").to_matrix<double>();
  const index b = io_arr.rows(), t = io_arr.cols() - 2;  // rows: x (T values) | y | prediction
  ASSERT_GE(b, 2);
  std::vector<std::string> names;
  std::vector<std::vector<double>> cols(static_cast<std::size_t>(t));
  matrix<float> x(b, t);
  for (index j = 0; j < t; ++j) {
    names.push_back(std::string("x").append(std::to_string(j)));  // GCC 12 -O3 -Wrestrict
    for (index i = 0; i < b; ++i) {
      x(i, j) = static_cast<float>(io_arr(i, j));
      cols[static_cast<std::size_t>(j)].push_back(io_arr(i, j));
    }
  }
  io::write_file_atomic(d + "/x.csv", io::csv_encode(names, cols));
  io::npy_write<float>(d + "/x.npy", x.cview());
  const std::string model = " --model " + fx + "/torch_regressor.safetensors";
  for (const char* in : {"x.csv", "x.npy"})
    for (const char* out : {"y.csv", "y.npy"}) {
      SCOPED_TRACE(std::string(in) + " -> " + out);
      const auto r = run_kf("predict" + model + " --batch 3 --input " + d + "/" + in + " --out " +
                            d + "/" + out);
      ASSERT_EQ(r.code, 0) << r.output;
      const auto y = std::string(out) == "y.csv" ? io::csv_read(d + "/" + out).to_matrix<double>()
                                                 : io::npy_read(d + "/" + out).to_matrix<double>();
      ASSERT_EQ(y.rows(), b);
      ASSERT_EQ(y.cols(), 1);
      for (index i = 0; i < b; ++i) EXPECT_NEAR(y(i, 0), io_arr(i, t + 1), 1e-4) << "row " << i;
    }
  fs::remove_all(dir);
}

TEST(KfExperiment, TableWithNadarayaWatsonBaseline) {
  const fs::path dir = fs::temp_directory_path() / ("kf_exp_" + std::to_string(::getpid()));
  auto r = run_kf(
      "experiment periodic --functions sin --kernels exp_dot,linear --seeds 0 --epochs 1 --out " +
      dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
  // The plan and its cost, stated once the first epoch has timed the pace.
  EXPECT_NE(r.output.find("kf experiment periodic: 2 runs of 1 epochs; about "), std::string::npos)
      << r.output;
  const std::string csv = io::read_file((dir / "table.csv").string());
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << csv;  // header + 2 runs
  const std::string md = io::read_file((dir / "table.md").string());
  EXPECT_NE(md.find("NW forecaster"), std::string::npos);
  EXPECT_NE(md.find("| sin | 0.005 |"), std::string::npos);
  EXPECT_NE(md.find("faithful"), std::string::npos) << md;
  for (const char* f : {"loss.png", "prediction.png", "prediction.csv", "attention.png"})
    EXPECT_TRUE(fs::exists(dir / "sin" / f)) << f;  // Fig. 3, Fig. 4 and loss, per function
  // The improvement options are named in the table, never mixed with the faithful setting.
  r = run_kf(
      "experiment periodic --functions sin-exp --seeds 0 --epochs 1 --scale-inputs --pre-ln "
      "--cosine-lr --dropout 0 --out " +
      dir.string() + "/improved");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string md2 = io::read_file((dir / "improved" / "table.md").string());
  EXPECT_NE(md2.find("improved (pre-LN, RMS-scaled windows, warmup + cosine lr, dropout 0)"),
            std::string::npos)
      << md2;
  // Each finished run is kept at once in OUT/runs; the same grid again reuses them (a kept
  // value changed by hand shows up in the table: nothing trained), other settings do not.
  const std::string kept = (dir / "runs" / "sin_linear_c_0_s0.json").string();  // linear:c=0
  ASSERT_TRUE(fs::exists(kept));
  std::string js = io::read_file(kept);
  const auto at = js.find("\"rollout\": ");
  ASSERT_NE(at, std::string::npos) << js;
  js.replace(at, js.find(',', at) - at, "\"rollout\": 123.5");
  io::write_file_atomic(kept, js);
  const std::string grid =
      "experiment periodic --functions sin --kernels exp_dot,linear --seeds 0 --out " +
      dir.string();
  r = run_kf(grid + " --epochs 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 of 2 runs reused"), std::string::npos) << r.output;
  EXPECT_NE(io::read_file((dir / "table.csv").string()).find(",123.5,"), std::string::npos);
  r = run_kf(
      "experiment periodic --functions sin --kernels linear --seeds 0 --epochs 2 --quiet --out " +
      dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(io::read_file((dir / "table.csv").string()).find(",123.5,"), std::string::npos);
  EXPECT_NE(run_kf("experiment periodic --seeds x --out " + dir.string() + "/bad").code, 0);
  EXPECT_FALSE(fs::exists(dir / "bad"));
  EXPECT_NE(run_kf("experiment periodic --dropout 2 --out " + dir.string() + "/bad").code, 0);
  EXPECT_FALSE(fs::exists(dir / "bad"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kf
