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

namespace kf {
namespace {

namespace fs = std::filesystem;
using test::run_kf;

TEST(KfReport, WritesTheWholePage) {
  const fs::path dir = fs::temp_directory_path() / ("kf_report_" + std::to_string(::getpid()));
  const std::string d = dir.string();
#ifdef KF_SANITIZE_BUILD
  // Under the sanitizers (10x slower) the training sections are left out: their code runs in
  // test_kf_train and test_kf_lm there; the dev build runs the whole report.
  const bool whole = false;
  auto r = run_kf("report --quiet --sections seed000,seed001,seed004,seed002,seed003 --out " + d);
#else
  const bool whole = true;
  auto r = run_kf("report --quiet --out " + d);
#endif
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string html = io::read_file(d + "/index.html");
  std::vector<std::string> names = {
      "seed000_bandwidths", "seed000_linear",  "seed001_knn_vs_gaussian", "seed004_kernels",
      "seed004_pooling",    "seed002_outputs", "seed002_profiles",        "seed003_rbf_scatter"};
  if (whole)
    for (const char* n : {"periodic_sin", "periodic_sin-exp", "periodic_square",
                          "periodic_sin_attention", "lm_attention"})
      names.push_back(n);
  for (const auto& name : names) {
    for (const char* ext : {".svg", ".png", ".csv"})
      EXPECT_TRUE(fs::exists(d + "/figures/" + name + ext)) << name << ext;
    EXPECT_NE(html.find(std::string("figures/") + name + ".svg"), std::string::npos) << name;
  }
  for (const char* table : {"seed000_bandwidths_table", "seed003_rbf_table", "head_kernel_table"})
    EXPECT_TRUE(fs::exists(d + "/figures/" + table + ".csv")) << table;
  EXPECT_EQ(fs::exists(d + "/figures/periodic_table.csv"), whole);
  // Self-contained: no scripts or styles from elsewhere.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find(fmt::format("Figure {}.", names.size())), std::string::npos);
  // The RBF identity holds to rounding with exact normalization.
  const std::string rbf = io::read_file(d + "/figures/seed003_rbf_table.csv");
  EXPECT_NE(rbf.find("e-1"), std::string::npos) << rbf;
  // The trained head is read back as a Gaussian of bandwidth 0.05.
  const std::string diag = io::read_file(d + "/figures/head_kernel_table.csv");
  EXPECT_NE(diag.find("\"seed 002: attention, trained to mimic\",gaussian,0.05"), std::string::npos)
      << diag;
  fs::remove_all(dir);
  io::write_file_atomic(d + "-file", "x");
  r = run_kf("report --out " + d + "-file/sub");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("cannot create directory"), std::string::npos) << r.output;
  fs::remove(d + "-file");
  r = run_kf("report --sections seed009 --out " + d);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("unknown section 'seed009'"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kf
