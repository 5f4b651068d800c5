// End-to-end: kf train lm on a small text, then kf sample (deterministic per seed) and
// kf attention (grid and single head, PNG/SVG/CSV); bad inputs fail with one clear line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

TEST(KfLm, TrainSampleAttention) {
  const fs::path dir = fs::temp_directory_path() / ("kf_lm_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string d = dir.string(), corpus = std::string(KF_FIXTURES_DIR) + "/memorize_1k.txt";
  auto r = run_kf("train lm --corpus " + corpus + " --iters 20 --val-fraction 0.2 --out " + d +
                  "/run --save " + d + "/lm.safetensors --summary " + d + "/s.json");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string js = io::read_file(d + "/s.json");
  for (const char* key : {"\"val_loss\"", "\"val_perplexity\"", "\"tokens_per_second\"",
                          "\"tokenizer\"", "\"vocab\"", "\"evals\""})
    EXPECT_NE(js.find(key), std::string::npos) << key;
  for (const char* f : {"loss.csv", "loss.png", "loss.svg", "eval.csv", "sample.txt"})
    EXPECT_TRUE(fs::exists(d + "/run/" + f)) << f;
  const std::string m = " --model " + d + "/lm.safetensors";
  auto s1 = run_kf("sample" + m + " --prompt \"The \" --tokens 30 --seed 4");
  auto s2 = run_kf("sample" + m + " --prompt \"The \" --tokens 30 --seed 4");
  ASSERT_EQ(s1.code, 0) << s1.output;
  EXPECT_EQ(s1.output, s2.output);
  EXPECT_EQ(s1.output.rfind("The ", 0), 0u);
  // Characters never seen in training: a warning, not a crash.
  auto s3 = run_kf("sample" + m + " --prompt \"Zebra \xE2\x98\x83\" --tokens 5");
  EXPECT_EQ(s3.code, 0) << s3.output;
  EXPECT_NE(s3.output.find("not in the vocabulary"), std::string::npos);
  r = run_kf("attention" + m + " --out " + d + "/cat.png --csv " + d + "/cat.csv");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("4 panels, 23 tokens"), std::string::npos) << r.output;
  r = run_kf("attention" + m + " --layer 2 --head 1 --out " + d + "/l2h1.svg");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(io::read_file(d + "/l2h1.svg").find("<svg"), std::string::npos);
  // Errors.
  r = run_kf("attention" + m + " --layer 3 --out " + d + "/x.png");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("--layer 3 is outside 1..2"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d + "/x.png"));
  io::write_file_atomic(d + "/empty.txt", "");
  r = run_kf("train lm --corpus " + d + "/empty.txt --iters 2");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("empty"), std::string::npos) << r.output;
  io::write_file_atomic(d + "/bad.safetensors", "garbage");
  r = run_kf("sample --model " + d + "/bad.safetensors");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("bad.safetensors"), std::string::npos) << r.output;
  r = run_kf("sample" + m + " --temperature -1");
  EXPECT_EQ(r.code, 1);
  r = run_kf("train lm --tokenizer bpe --iters 1 --corpus " + corpus);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("unknown tokenizer"), std::string::npos) << r.output;
  // The kernel table: every kernel on the same budget.
  r = run_kf("experiment lm --corpus " + corpus +
             " --iters 3 --kernels exp_dot,gaussian:h=2 --out " + d + "/exp");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string table = io::read_file(d + "/exp/table.csv");
  EXPECT_NE(table.find("exp_dot,"), std::string::npos) << table;
  EXPECT_NE(table.find("gaussian:h=2,"), std::string::npos) << table;
  r = run_kf("experiment lm --corpus " + corpus + " --kernels nope --iters 1");
  EXPECT_EQ(r.code, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kf
