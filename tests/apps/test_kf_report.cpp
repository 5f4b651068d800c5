// kf report on built-in data: the HTML page, every figure as SVG + PNG + CSV, the tables, the
// numbers the captions promise; and a clean error for an unwritable output directory.
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

TEST(KfReport, WritesTheWholePage) {
  const fs::path dir = fs::temp_directory_path() / ("kf_report_" + std::to_string(::getpid()));
  const std::string d = dir.string();
  auto r = run_kf("report --quiet --out " + d);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string html = io::read_file(d + "/index.html");
  for (const char* name :
       {"seed000_bandwidths", "seed000_linear", "seed001_knn_vs_gaussian", "seed004_kernels",
        "seed004_pooling", "seed002_outputs", "seed002_profiles", "seed003_rbf_scatter",
        "periodic_sin", "periodic_sin-exp", "periodic_square", "periodic_sin_attention",
        "lm_attention"}) {
    for (const char* ext : {".svg", ".png", ".csv"})
      EXPECT_TRUE(fs::exists(d + "/figures/" + name + ext)) << name << ext;
    EXPECT_NE(html.find(std::string("figures/") + name + ".svg"), std::string::npos) << name;
  }
  for (const char* table :
       {"seed000_bandwidths_table", "seed003_rbf_table", "periodic_table", "head_kernel_table"})
    EXPECT_TRUE(fs::exists(d + "/figures/" + table + ".csv")) << table;
  // Self-contained: no scripts or styles from elsewhere.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("Figure 13."), std::string::npos);  // every figure numbered and captioned
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
}

}  // namespace
}  // namespace kf
