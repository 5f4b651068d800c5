// kf report's page and the small helpers its sections share (apps/kf/cmd_report.cpp: the seeds'
// demonstrations; apps/kf/report_trained.cpp: the trained models — periodic and language model).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/masks.hpp"
#include "kernelformer/smooth.hpp"
#include "kernelformer/viz/plot.hpp"

namespace kf::cli {

using viz::series;

inline std::string esc(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '<')
      r += "&lt;";
    else if (c == '>')
      r += "&gt;";
    else if (c == '&')
      r += "&amp;";
    else if (c == '"')
      r += "&quot;";
    else
      r += c;
  }
  return r;
}

inline std::string num(double v, int digits = 4) {
  if (std::isnan(v)) return "—";
  return fmt::format("{:.{}g}", v, digits);
}

// Collects figures, tables and text; stages every file in one atomic writer.
class report {
 public:
  explicit report(std::string dir) : dir_(std::move(dir)) {}

  void section(const std::string& id, const std::string& title, const std::string& intro) {
    toc_ += fmt::format("<li><a href=\"#{}\">{}</a></li>\n", id, esc(title));
    body_ += fmt::format("<section id=\"{}\"><h2>{}</h2>\n<p>{}</p>\n", id, esc(title), intro);
  }
  void end_section() { body_ += "</section>\n"; }
  void paragraph(const std::string& html) { body_ += "<p>" + html + "</p>\n"; }

  void figure(const std::string& name, const viz::figure& f, const std::string& csv,
              const std::string& caption) {
    stage_figure(name, viz::render(f, viz::image_format::svg),
                 viz::render(f, viz::image_format::png), csv, f.title, caption);
  }
  void heatmap(const std::string& name, const viz::heatmap& h, const std::string& csv,
               const std::string& caption) {
    stage_figure(name, viz::render(h, viz::image_format::svg),
                 viz::render(h, viz::image_format::png), csv, h.title, caption);
  }
  void grid(const std::string& name, const std::vector<viz::heatmap>& panels, int cols,
            const std::string& title, const std::string& csv, const std::string& caption) {
    stage_figure(name, viz::render_grid(panels, cols, title, viz::image_format::svg),
                 viz::render_grid(panels, cols, title, viz::image_format::png), csv, title,
                 caption);
  }
  void table(const std::vector<std::string>& head,
             const std::vector<std::vector<std::string>>& rows, const std::string& caption,
             const std::string& csv_name = "") {
    std::string h = "<table><caption>" + caption + "</caption>\n<tr>";
    std::string csv;
    for (std::size_t i = 0; i < head.size(); ++i) {
      h += "<th>" + esc(head[i]) + "</th>";
      csv += (i ? "," : "") + csv_cell(head[i]);
    }
    h += "</tr>\n";
    csv += "\n";
    for (const auto& r : rows) {
      h += "<tr>";
      for (std::size_t i = 0; i < r.size(); ++i) {
        // Appended piece by piece: GCC 12 at -O3 flags `"literal" + std::string&&` with a false
        // -Wrestrict (GCC bug 105329), and this is cheaper anyway.
        h.append("<td>").append(esc(r[i])).append("</td>");
        csv.append(i ? "," : "").append(csv_cell(r[i]));
      }
      h += "</tr>\n";
      csv += "\n";
    }
    h += "</table>\n";
    if (!csv_name.empty()) {
      w_.stage(dir_ + "/figures/" + csv_name + ".csv", csv);
      h +=
          fmt::format("<p class=\"files\"><a href=\"figures/{0}.csv\">{0}.csv</a></p>\n", csv_name);
    }
    body_ += h;
  }
  void pre(const std::string& text) { body_ += "<pre>" + esc(text) + "</pre>\n"; }

  void commit(const std::string& subtitle) {
    const std::string html = fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kernelformer report: attention is kernel smoothing</title>
<style>
body {{ font-family: "DejaVu Sans", system-ui, sans-serif; max-width: 1000px; margin: 2em auto;
       padding: 0 1em; color: #1f2328; line-height: 1.5; }}
h1 {{ font-size: 1.7em; margin-bottom: 0.2em; }} h2 {{ border-bottom: 1px solid #d0d7de;
  padding-bottom: 0.2em; margin-top: 2.2em; }}
figure {{ margin: 1.5em 0; }} figure img {{ max-width: 100%; border: 1px solid #eee; }}
figcaption {{ font-size: 0.93em; color: #424a53; }} .files {{ font-size: 0.85em; }}
.files a {{ margin-right: 1em; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.92em; }}
caption {{ text-align: left; font-weight: bold; padding-bottom: 0.3em; }}
td, th {{ border: 1px solid #d0d7de; padding: 0.25em 0.6em; text-align: right; }}
th {{ background: #f6f8fa; }} td:first-child, th:first-child {{ text-align: left; }}
pre {{ background: #f6f8fa; padding: 0.8em; white-space: pre-wrap; font-size: 0.9em; }}
.subtitle {{ color: #57606a; }}
</style></head><body>
<h1>Attention is Nadaraya–Watson kernel smoothing</h1>
<p class="subtitle">{}</p>
<p>One primitive, out<sub>i</sub> = Σ<sub>j</sub> K(q<sub>i</sub>, k<sub>j</sub>) v<sub>j</sub> /
Σ<sub>j</sub> K(q<sub>i</sub>, k<sub>j</sub>), computes every curve and every attention head
below. Every number on this page was measured when the page was made, except the columns marked
"documented", which cite their file in the repository; each figure links its SVG, PNG and the
CSV behind it.</p>
<ol>
{}</ol>
{}
</body></html>
)",
                                         esc(subtitle), toc_, body_);
    w_.stage(dir_ + "/index.html", html);
    w_.commit();
  }

 private:
  static std::string csv_cell(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string r = "\"";
    for (char c : s) r += c == '"' ? std::string("\"\"") : std::string(1, c);
    return r + "\"";
  }
  void stage_figure(const std::string& name, const std::string& svg, const std::string& png,
                    const std::string& csv, const std::string& title, const std::string& caption) {
    const std::string base = dir_ + "/figures/" + name;
    w_.stage(base + ".svg", svg);
    w_.stage(base + ".png", png);
    if (!csv.empty()) w_.stage(base + ".csv", csv);
    ++figures_;
    body_ += fmt::format(
        "<figure id=\"fig-{0}\"><img src=\"figures/{0}.svg\" alt=\"{1}\">\n"
        "<figcaption><b>Figure {2}. {1}.</b> {3}</figcaption>\n"
        "<p class=\"files\"><a href=\"figures/{0}.svg\">SVG</a><a "
        "href=\"figures/{0}.png\">PNG</a>{4}"
        "</p></figure>\n",
        name, esc(title), figures_, caption,
        csv.empty() ? "" : fmt::format("<a href=\"figures/{}.csv\">CSV</a>", name));
  }

  std::string dir_, toc_, body_;
  io::atomic_writer w_;
  int figures_ = 0;
};

// --- small helpers -------------------------------------------------------------------------

inline matrix<double> col(const std::vector<double>& v) {
  matrix<double> m(static_cast<index>(v.size()), 1);
  for (std::size_t i = 0; i < v.size(); ++i) m(static_cast<index>(i), 0) = v[i];
  return m;
}

inline std::vector<double> linspace(double a, double b, index n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (index i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = a + (b - a) * double(i) / double(n - 1);
  return v;
}

// NW fit of (x, y) at xq with a distance kernel of bandwidth h.
inline std::vector<double> nw_fit(const std::vector<double>& x, const std::vector<double>& y,
                                  const std::vector<double>& xq, const std::string& kernel,
                                  double h) {
  kernel_spec k = kernel_parse(kernel);
  kernel_set_param(k.first, h);
  const matrix<double> X = col(x), Y = col(y), Q = col(xq);
  matrix<double> out(Q.rows(), 1);
  smooth_forward<double>(out.view(), {}, Q.cview(), X.cview(), Y.cview(), k, mask::none());
  return std::vector<double>(out.values().begin(), out.values().end());
}

inline double mse(const std::vector<double>& a, const std::vector<double>& b, std::size_t from = 0,
                  std::size_t to = std::size_t(-1)) {
  to = std::min(to, a.size());
  double s = 0;
  for (std::size_t i = from; i < to; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s / double(to - from);
}

inline std::string csv_columns(const std::vector<std::string>& names,
                               const std::vector<const std::vector<double>*>& cols) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? "," : "") + names[i];
  s += "\n";
  const std::size_t n = cols.empty() ? 0 : cols[0]->size();
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = 0; c < cols.size(); ++c)
      s += fmt::format("{}{}", c ? "," : "", r < cols[c]->size() ? (*cols[c])[r] : NAN);
    s += "\n";
  }
  return s;
}

inline std::string csv_matrix(const const_matrix_view<double> m) {
  std::string s;
  for (index i = 0; i < m.rows; ++i) {
    for (index j = 0; j < m.cols; ++j) s += fmt::format("{}{}", j ? "," : "", m(i, j));
    s += "\n";
  }
  return s;
}

inline series line(std::vector<double> x, std::vector<double> y, std::string label, viz::rgb c,
                   double width = 2) {
  return series{series::kind::line, std::move(x), std::move(y), {}, std::move(label), c, width, 1};
}
inline series points(std::vector<double> x, std::vector<double> y, std::string label,
                     viz::rgb c = viz::kGrey, double r = 3) {
  return series{series::kind::points, std::move(x), std::move(y), {}, std::move(label), c, r, 0.8};
}

// What the trained sections need from kf report's options.
struct report_context {
  bool full = false, quiet = false;
  std::string models;                          // the folder of the report's checkpoints
  std::vector<std::vector<std::string>> diag;  // head-as-kernel table rows
  std::vector<std::string> summary;            // lines printed when the page is written
};

// Seed 003 §5 (the periodic experiment) and seed 000's language model on "The cat sat on the
// mat.": checkpoints from models/ by default, trained now with --full.
void report_periodic(report& rep, report_context& ctx);
void report_language_model(report& rep, report_context& ctx);
// The folder of the report's checkpoints: given, else $KF_MODELS_DIR, the installed
// share/kernelformer/models, the source tree's models/.
std::string report_models_dir(const std::string& given);

}  // namespace kf::cli
