// kf report on built-in data: the HTML page, every figure as SVG + PNG + CSV, the tables, the
// numbers the captions promise; and a clean error for an unwritable output directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

#include "apps/run_kf.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/periodic_experiment.hpp"
#include "kernelformer/model/periodic_reference.hpp"
#include "kernelformer/model/sequence_regressor.hpp"

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

fs::path report_dir(const char* tag) {
  return fs::temp_directory_path() /
         ("kf_report_" + std::string(tag) + "_" + std::to_string(::getpid()));
}

// Every figure promised for NAMES exists as SVG, PNG and CSV and is on the page.
void expect_figures(const std::string& d, const std::string& html,
                    const std::vector<std::string>& names) {
  for (const auto& name : names) {
    for (const char* ext : {".svg", ".png", ".csv"})
      EXPECT_TRUE(fs::exists(d + "/figures/" + name + ext)) << name << ext;
    EXPECT_NE(html.find(std::string("figures/") + name + ".svg"), std::string::npos) << name;
  }
  // Self-contained: no scripts or styles from elsewhere; figures numbered 1..N.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find(fmt::format("Figure {}.", names.size())), std::string::npos);
  EXPECT_EQ(html.find(fmt::format("Figure {}.", names.size() + 1)), std::string::npos);
}

// The seeds' demonstrations (no training beyond seed 002's small head): the page, its figures,
// tables and the numbers the captions promise. The training sections are the next test, so
// ctest runs the two side by side.
TEST(KfReport, SeedSectionsPage) {
  const fs::path dir = report_dir("seeds");
  const std::string d = dir.string();
  auto r = run_kf("report --quiet --sections seed000,seed001,seed004,seed002,seed003 --out " + d);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string html = io::read_file(d + "/index.html");
  expect_figures(
      d, html,
      {"seed000_bandwidths", "seed000_linear", "seed001_knn_vs_gaussian", "seed004_kernels",
       "seed004_pooling", "seed002_outputs", "seed002_profiles", "seed003_rbf_scatter"});
  for (const char* table : {"seed000_bandwidths_table", "seed003_rbf_table", "head_kernel_table"})
    EXPECT_TRUE(fs::exists(d + "/figures/" + table + ".csv")) << table;
  EXPECT_FALSE(fs::exists(d + "/figures/periodic_table.csv"));
  // The RBF identity holds to rounding with exact normalization.
  const std::string rbf = io::read_file(d + "/figures/seed003_rbf_table.csv");
  EXPECT_NE(rbf.find("e-1"), std::string::npos) << rbf;
  // The trained head is read back as a Gaussian of bandwidth 0.05.
  const std::string diag = io::read_file(d + "/figures/head_kernel_table.csv");
  EXPECT_NE(diag.find("\"seed 002: attention, trained to mimic\",gaussian,0.05"), std::string::npos)
      << diag;
  fs::remove_all(dir);
}

// The periodic experiment and the word-level language model, from the checkpoints in models/:
// their figures, the periodic table (the Transformer at or under the paper's MSE on all three
// functions), Fig. 4's autocorrelation table and every head in the head-as-kernel table.
TEST(KfReport, TrainedSectionsPage) {
#ifdef KF_SANITIZE_BUILD
  // Under the sanitizers (10x slower) the NW forecasters' bandwidth searches and rollouts alone
  // would take most of the test timeout; the training and checkpoint code runs in test_kf_train,
  // test_kf_lm and the checkpoint tests there.
  GTEST_SKIP() << "trained sections run in the dev build";
#endif
  const fs::path dir = report_dir("training");
  const std::string d = dir.string();
  auto r = run_kf("report --quiet --sections periodic,lm --out " + d);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string html = io::read_file(d + "/index.html");
  expect_figures(d, html,
                 {"periodic_sin", "periodic_sin-exp", "periodic_square", "periodic_attention",
                  "lm_attention"});
  // function, paper, Transformer (seed 0), …: the Transformer at or under the paper.
  const std::string table = io::read_file(d + "/figures/periodic_table.csv");
  int checked = 0;
  for (std::size_t at = table.find('\n') + 1; at < table.size(); ++checked) {
    const std::size_t end = table.find('\n', at);
    const std::string row = table.substr(at, end - at);
    const std::size_t c1 = row.find(','), c2 = row.find(',', c1 + 1), c3 = row.find(',', c2 + 1);
    const double paper = std::stod(row.substr(c1 + 1)), ours = std::stod(row.substr(c2 + 1));
    EXPECT_LE(ours, paper) << row;
    EXPECT_NE(c3, std::string::npos);
    at = end + 1;
  }
  EXPECT_EQ(checked, 3) << table;
  EXPECT_TRUE(fs::exists(d + "/figures/periodic_attention_table.csv"));
  EXPECT_NE(html.find("made by <code>"), std::string::npos);
  EXPECT_NE(html.find("--config code --cosine-lr --dropout 0.05"), std::string::npos);
  EXPECT_NE(html.find("kf train lm"), std::string::npos);
  const std::string diag = io::read_file(d + "/figures/head_kernel_table.csv");
  EXPECT_NE(diag.find("periodic sin (code, improved), layer 2 head 1"), std::string::npos) << diag;
  EXPECT_NE(diag.find("language model (word, tiny), layer 2 head 2"), std::string::npos) << diag;
  // Word × word maps: 7 words ("The", "cat", …, "."), 2 layers × 2 heads.
  const std::string lm = io::read_file(d + "/figures/lm_attention.csv");
  EXPECT_NE(lm.find("2,2,6,6,\".\",\".\","), std::string::npos) << lm.substr(0, 400);
  EXPECT_NE(lm.find("\"cat\""), std::string::npos);
  // " mat" is not among the fortunes' 8,000 most frequent pieces: labelled by its text.
  EXPECT_NE(lm.find("\"mat (unk)\""), std::string::npos);
  fs::remove_all(dir);
}

// --full keeps each of its 18 periodic runs in OUT/trained/ and a later --full with the same --out
// reuses every file that holds its command's weights (an interrupted --full resumes). Here the 18
// files are untrained models written by the test with made-up MSEs, so nothing trains: the section
// reuses them all, shows seed 0 of the improved setting, and its 3-seed cells are the files'
// medians with the documented median beside each.
TEST(KfReport, FullReusesTheRunsKeptInOut) {
#ifdef KF_SANITIZE_BUILD
  GTEST_SKIP() << "the NW forecasters' bandwidth searches run in the dev build";
#endif
  const fs::path dir = report_dir("full");
  const std::string d = dir.string();
  fs::create_directories(dir / "trained");
  for (const char* fn : {"sin", "sin-exp", "square"})
    for (const auto* s : {&model::kPeriodicImproved, &model::kPeriodicFaithful})
      for (std::uint64_t seed = 0; seed < 3; ++seed) {
        model::sequence_regressor<float> m(model::periodic_setting_config(*s), seed);
        auto md = m.config().to_metadata();
        md["trained_by"] = "OMP_NUM_THREADS=1 " + model::periodic_train_command(fn, *s, seed);
        // The MSE its training measured (here made up: seed + 1, times 10 for faithful).
        md["test_mse_rollout"] = fmt::format("{}", double(seed + 1) * (s->batch == 64 ? 1 : 10));
        io::write_file_atomic(
            fmt::format("{}/trained/periodic_{}_{}_s{}.safetensors", d, fn, s->name, seed),
            model::checkpoint_encode(m.params(), md));
      }
  auto r = run_kf("report --full --sections periodic --out " + d);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("18 of 18 periodic runs reused from " + d + "/trained"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("3-seed medians (--full): improved"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(18 of the 18 runs below reused from"), std::string::npos) << r.output;
  // Each cell: the median (min – max) of the files' MSEs, the documented median beside it.
  const std::string table = io::read_file(d + "/figures/periodic_table.csv");
  EXPECT_NE(table.find("2 (1 – 3); documented 0.00875"), std::string::npos) << table;
  EXPECT_NE(table.find("20 (10 – 30); documented 0.0167"), std::string::npos) << table;
  EXPECT_NE(
      io::read_file(d + "/index.html").find("0 of the 18 runs were trained by this run, 18 by"),
      std::string::npos);
  fs::remove_all(dir);
}

TEST(KfReport, ErrorsNameTheProblem) {
  const std::string d = report_dir("errors").string();
  io::write_file_atomic(d + "-file", "x");
  auto r = run_kf("report --out " + d + "-file/sub");
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("is not a folder"), std::string::npos) << r.output;
  fs::remove(d + "-file");
  r = run_kf("report --sections seed009 --out " + d);
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("unknown section 'seed009'"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d));
  r = run_kf("report --sections periodic --models " + d + "-missing --out " + d);
  EXPECT_EQ(r.code, test::error_exit(r.output));
  EXPECT_NE(r.output.find("no README.md there"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kf
