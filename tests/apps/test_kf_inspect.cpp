// End-to-end: kf inspect on a periodic regressor and a language model trained for a moment —
// the architecture, the parameter count, one row per layer and head (shape, bandwidth, offset,
// R², tr W) — and bad inputs: one clear line, a non-zero exit, nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "test_paths.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

TEST(KfInspect, RegressorAndLanguageModel) {
  const fs::path dir = fs::temp_directory_path() / ("kf_inspect_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string d = dir.string();
  auto r =
      run_kf("train periodic --config quick --epochs 1 --quiet --save " + d + "/p.safetensors");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_kf("inspect " + d + "/p.safetensors --csv " + d + "/heads.csv --summary " + d +
             "/s.json");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* s :
       {"sequence_regressor", "parameters", "sin test context", "best shape", "df=tr W"})
    EXPECT_NE(r.output.find(s), std::string::npos) << s << "\n" << r.output;
  io::csv_options opt;
  opt.text_columns = {"site", "shape"};
  const auto heads = io::csv_read(d + "/heads.csv", opt);
  ASSERT_EQ(heads.rows(), 2);  // quick: one layer, two heads
  EXPECT_EQ(heads.text[0], (std::vector<std::string>{"self", "self"}));
  const auto df = heads.columns[heads.column("df")];
  for (double v : df) EXPECT_TRUE(v >= 0.0 && v <= 99.0 + 1e-4) << v;
  const std::string js = io::read_file(d + "/s.json");
  for (const char* key : {"\"architecture\"", "\"parameters\"", "\"heads\"", "\"r2\"", "\"offset\"",
                          "\"bandwidth\"", "\"df\"", "\"shapes\""})
    EXPECT_NE(js.find(key), std::string::npos) << key;
  // Another input: a window from a file.
  std::string row;
  for (int i = 0; i < 99; ++i) {  // appended in two steps: GCC 12's false -Wrestrict at -O3
    if (i) row += ",";
    row += std::to_string(0.01 * i);
  }
  io::write_file_atomic(d + "/w.csv", row + "\n" + row + "\n");
  r = run_kf("inspect " + d + "/p.safetensors --data " + d + "/w.csv --row 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("row 2 of"), std::string::npos) << r.output;

  const std::string corpus = std::string(KF_FIXTURES_DIR).append("/memorize_1k.txt");
  r = run_kf("train lm --corpus " + corpus + " --iters 2 --save " + d + "/lm.safetensors");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_kf("inspect " + d + "/lm.safetensors --text \"the cat\" --csv " + d + "/lm.csv");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("token_model"), std::string::npos) << r.output;
  const auto lm = io::csv_read(d + "/lm.csv", opt);
  EXPECT_GE(lm.rows(), 2);
  EXPECT_EQ(lm.columns[lm.column("queries")][0], 7.0);  // "the cat": 7 characters
  EXPECT_EQ(lm.text[0][0], "decoder_self");
  // A text longer than the context keeps its first context tokens, as kf attention does.
  r = run_kf("inspect " + d + "/lm.safetensors --text \"" + std::string(40, 'e') + "\"");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("keeping the first 32 (the context)"), std::string::npos) << r.output;

  // Bad inputs.
  const std::string out = " --csv " + d + "/o.csv";
  const std::pair<std::string, std::string> cases[] = {
      {d + "/missing.safetensors", "missing.safetensors"},
      {d + "/w.csv", "safetensors"},
      {d + "/p.safetensors --data " + d + "/w.csv --row 3", "--row 3"},
      {d + "/p.safetensors --text hello", "--text"},
      {d + "/lm.safetensors --data " + d + "/none.txt", "none.txt"},
      {d + "/lm.safetensors --data " + d + "/w.csv --text x", "not both"},
  };
  for (const auto& [args, expect] : cases) {
    r = run_kf("inspect " + args + out);
    EXPECT_EQ(r.code, test::error_exit(r.output)) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_FALSE(fs::exists(d + "/o.csv")) << args;
  }
  io::write_file_atomic(d + "/short.csv", "1,2,3\n");
  r = run_kf("inspect " + d + "/p.safetensors --data " + d + "/short.csv");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("windows of 99"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kf
