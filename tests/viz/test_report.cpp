// The HTML report builder (viz/report.hpp): escaping of text and CSV cells, a page with a figure
// and a table (numbered, linked, its files beside it), and files that appear only on commit() —
// none, not even a temporary, when the report is dropped before it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/viz/report.hpp"

namespace kf::viz {
namespace {

namespace fs = std::filesystem;

// A fresh folder with figures/ inside (the report's contract: both exist before staging).
fs::path fresh_dir(const char* tag) {
  const fs::path d = fs::temp_directory_path() /
                     ("kf_test_report_" + std::string(tag) + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "figures");
  return d;
}

std::size_t files_under(const fs::path& d) {
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(d)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(Report, EscapesTextAndCsvCells) {
  EXPECT_EQ(html_escape("a < b && c > \"d\""), "a &lt; b &amp;&amp; c &gt; &quot;d&quot;");
  EXPECT_EQ(html_escape("</script>"), "&lt;/script&gt;");
  EXPECT_EQ(html_escape("Σ K(q, k) — ½"), "Σ K(q, k) — ½");  // UTF-8 passes through
  EXPECT_EQ(csv_cell("plain"), "plain");
  EXPECT_EQ(csv_cell("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_cell("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(format_number(0.0123456), "0.01235");
  EXPECT_EQ(format_number(1234567.0, 3), "1.23e+06");
  EXPECT_EQ(format_number(NAN), "—");
}

TEST(Report, CsvColumnsPadShortColumns) {
  const std::vector<double> a = {1, 2, 3}, b = {0.5, 0.25};
  EXPECT_EQ(csv_columns({"a", "b"}, {&a, &b}), "a,b\n1,0.5\n2,0.25\n3,nan\n");
  EXPECT_EQ(csv_columns({"a"}, {}), "a\n");
}

TEST(Report, PageWithAFigureAndATable) {
  const fs::path d = fresh_dir("page");
  report rep(d.string(), {"tab <title>", "Heading & more", "Intro with <b>markup</b>."});
  rep.section("s1", "First <section>", "An intro with x<sub>i</sub>.");
  figure f;
  f.title = "A line & its points";
  f.xlabel = "x";
  f.ylabel = "y";
  const std::vector<double> x = {0, 1, 2}, y = {0, 1, 4};
  f.data = {line_series(x, y, "y = x²", kBlue), point_series(x, y, "data")};
  rep.figure("fig_a", f, csv_columns({"x", "y"}, {&x, &y}), "Caption <i>kept</i>.");
  rep.table({"name", "value"}, {{"a,b", "1"}, {"<c>", "\"2\""}}, "A table.", "table_a");
  rep.pre("sample <text>");
  rep.end_section();
  heatmap h;
  h.title = "Weights";
  h.rows = h.cols = 2;
  h.values = {1, 0, 0.5, 0.5};
  rep.section("s2", "Second", "");
  rep.heatmap("fig_b", h, "", "No CSV.");
  rep.end_section();
  EXPECT_EQ(rep.figures(), 2);
  rep.commit("Made for <the> test");

  const std::string html = io::read_file((d / "index.html").string());
  // Titles, headings, cells and <pre> escaped; intros, captions and the head's intro as given.
  EXPECT_NE(html.find("<title>tab &lt;title&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("<h1>Heading &amp; more</h1>"), std::string::npos);
  EXPECT_NE(html.find("<p class=\"subtitle\">Made for &lt;the&gt; test</p>"), std::string::npos);
  EXPECT_NE(html.find("<p>Intro with <b>markup</b>.</p>"), std::string::npos);
  EXPECT_NE(html.find("<li><a href=\"#s1\">First &lt;section&gt;</a></li>"), std::string::npos);
  EXPECT_NE(html.find("<section id=\"s1\"><h2>First &lt;section&gt;</h2>\n<p>An intro with "
                      "x<sub>i</sub>.</p>"),
            std::string::npos);
  EXPECT_NE(html.find("<b>Figure 1. A line &amp; its points.</b> Caption <i>kept</i>."),
            std::string::npos);
  EXPECT_NE(html.find("<b>Figure 2. Weights.</b> No CSV."), std::string::npos);
  EXPECT_NE(html.find("<a href=\"figures/fig_a.csv\">CSV</a>"), std::string::npos);
  EXPECT_EQ(html.find("figures/fig_b.csv"), std::string::npos);
  EXPECT_NE(html.find("<td>a,b</td><td>1</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>&lt;c&gt;</td><td>&quot;2&quot;</td>"), std::string::npos);
  EXPECT_NE(html.find("<pre>sample &lt;text&gt;</pre>"), std::string::npos);
  EXPECT_EQ(count(html, "<section "), 2u);
  EXPECT_EQ(count(html, "</section>"), 2u);
  EXPECT_EQ(html.find("http"), std::string::npos);  // self-contained
  // The files beside the page: SVG and PNG for both figures, the CSVs given.
  for (const char* file :
       {"fig_a.svg", "fig_a.png", "fig_a.csv", "fig_b.svg", "fig_b.png", "table_a.csv"})
    EXPECT_TRUE(fs::exists(d / "figures" / file)) << file;
  EXPECT_FALSE(fs::exists(d / "figures/fig_b.csv"));
  EXPECT_EQ(io::read_file((d / "figures/fig_a.csv").string()), "x,y\n0,0\n1,1\n2,4\n");
  EXPECT_EQ(io::read_file((d / "figures/table_a.csv").string()),
            "name,value\n\"a,b\",1\n<c>,\"\"\"2\"\"\"\n");
  const std::string png = io::read_file((d / "figures/fig_a.png").string());
  EXPECT_EQ(png.substr(1, 3), "PNG");
  EXPECT_NE(io::read_file((d / "figures/fig_a.svg").string()).find("<svg"), std::string::npos);
  fs::remove_all(d);
}

TEST(Report, FilesAppearOnlyOnCommit) {
  const fs::path d = fresh_dir("atomic");
  figure f;
  f.title = "t";
  const std::vector<double> x = {0, 1}, y = {1, 2};
  f.data = {line_series(x, y, "", kBlue)};
  {
    report rep(d.string(), {"t", "h", ""});
    rep.section("s", "s", "");
    rep.figure("f", f, csv_columns({"x", "y"}, {&x, &y}), "");
    rep.table({"a"}, {{"1"}}, "c", "t");
    // Staged, not placed: no destination file exists yet.
    EXPECT_FALSE(fs::exists(d / "figures/f.svg"));
    EXPECT_FALSE(fs::exists(d / "figures/t.csv"));
    EXPECT_FALSE(fs::exists(d / "index.html"));
    // Dropped without commit (a section threw): the temporaries are removed too.
  }
  EXPECT_EQ(files_under(d), 0u);
  {
    report rep(d.string(), {"t", "h", ""});
    rep.figure("f", f, "", "");
    rep.commit("done");
  }
  EXPECT_EQ(files_under(d), 3u);  // index.html, f.svg, f.png: nothing else left behind
  EXPECT_TRUE(fs::exists(d / "index.html"));
  fs::remove_all(d);
}

// Nothing touches the disk before commit(): a report into a folder that does not exist yet holds
// its figures in memory, and one destroyed without commit (a failure half-way) leaves neither a
// file nor the folder; a committed one makes the folders then.
TEST(Report, NothingTouchesTheDiskBeforeCommitAndTheFoldersAreMadeThen) {
  const fs::path d = fresh_dir("missing") / "page";
  figure f;
  f.title = "t";
  const std::vector<double> x = {0, 1}, y = {1, 2};
  f.data = {line_series(x, y, "", kBlue)};
  {
    report rep(d.string(), {"t", "h", ""});
    rep.figure("f", f, "", "");
    EXPECT_FALSE(fs::exists(d));
  }
  EXPECT_FALSE(fs::exists(d));
  report rep(d.string(), {"t", "h", ""});
  rep.figure("f", f, "", "");
  rep.commit("s");
  EXPECT_TRUE(fs::exists(d / "index.html"));
  EXPECT_TRUE(fs::exists(d / "figures" / "f.svg"));
  fs::remove_all(d.parent_path());
}

}  // namespace
}  // namespace kf::viz
