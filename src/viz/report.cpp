#include "kernelformer/viz/report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

namespace kf::viz {
namespace {

// The page's style sheet: one column of readable width, figures scaled to it, plain tables.
constexpr std::string_view kStyle =
    R"(body { font-family: "DejaVu Sans", system-ui, sans-serif; max-width: 1000px; margin: 2em auto;
       padding: 0 1em; color: #1f2328; line-height: 1.5; }
h1 { font-size: 1.7em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #d0d7de;
  padding-bottom: 0.2em; margin-top: 2.2em; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.93em; color: #424a53; } .files { font-size: 0.85em; }
.files a { margin-right: 1em; }
.table-scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.92em; }
code { overflow-wrap: anywhere; }
caption { text-align: left; font-weight: bold; padding-bottom: 0.3em; }
td, th { border: 1px solid #d0d7de; padding: 0.25em 0.6em; text-align: right; }
th { background: #f6f8fa; } td:first-child, th:first-child { text-align: left; }
pre { background: #f6f8fa; padding: 0.8em; white-space: pre-wrap; font-size: 0.9em; }
.subtitle { color: #57606a; }
)";

// ' width="W" height="H"' from an SVG's viewBox (cairo writes "0 0 W H"), or "" without one:
// the page then reserves each figure's space before it loads (figures load lazily, as the
// reader scrolls to them) and the layout does not jump.
std::string svg_size_attributes(std::string_view svg) {
  const auto at = svg.substr(0, 1024).find("viewBox=\"");
  if (at == std::string_view::npos) return "";
  double x = 0, y = 0, w = 0, h = 0;
  const std::string box(svg.substr(at + 9, 64));
  if (std::sscanf(box.c_str(), "%lf %lf %lf %lf", &x, &y, &w, &h) != 4 || !(w > 0) || !(h > 0))
    return "";
  return fmt::format(" width=\"{:.0f}\" height=\"{:.0f}\"", w, h);
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string r;
  r.reserve(text.size());
  for (char c : text) {
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

std::string csv_cell(std::string_view text) {
  // Leading or trailing spaces are quoted too: readers that trim would lose them.
  const bool plain = text.find_first_of(",\"\r\n") == std::string_view::npos &&
                     (text.empty() || (text.front() != ' ' && text.back() != ' '));
  if (plain) return std::string(text);
  std::string r = "\"";
  for (char c : text) r += c == '"' ? std::string("\"\"") : std::string(1, c);
  return r + "\"";
}

// "—" is U+2014 (UTF-8); the page declares charset utf-8.
std::string format_number(double v, int digits) {
  if (std::isnan(v)) return "—";
  return fmt::format("{:.{}g}", v, digits);
}

// Names are written as given (not csv_cell-quoted); values in fmt's shortest round-trip form.
std::string csv_columns(const std::vector<std::string>& names,
                        const std::vector<const std::vector<double>*>& columns) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? "," : "") + names[i];
  s += "\n";
  const std::size_t n = columns.empty() ? 0 : columns[0]->size();
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = 0; c < columns.size(); ++c)
      s += fmt::format("{}{}", c ? "," : "", r < columns[c]->size() ? (*columns[c])[r] : NAN);
    s += "\n";
  }
  return s;
}

// Aggregate order of series: type, x, y, y_upper, label, color, width, alpha. Lines are opaque.
series line_series(std::vector<double> x, std::vector<double> y, std::string label, rgb color,
                   double width) {
  return series{series::kind::line, std::move(x), std::move(y), {},
                std::move(label),   color,        width,        1};
}

// Points at alpha 0.8, so overlapping data points stay visible.
series point_series(std::vector<double> x, std::vector<double> y, std::string label, rgb color,
                    double radius) {
  return series{series::kind::points, std::move(x), std::move(y), {},
                std::move(label),     color,        radius,       0.8};
}

// The page is assembled as two strings (the contents list and the body) and written at
// commit(); figures and tables stage their files on the writer (in memory) as they are added.
report::report(std::string dir, report_head head)
    : dir_(std::move(dir)),
      head_(std::move(head)),
      writer_(io::staging{.in_memory = true, .make_folders = true}) {}

// `id` goes unescaped into an attribute and a link: a plain identifier is expected.
void report::section(const std::string& id, const std::string& title,
                     const std::string& intro_html) {
  toc_ += fmt::format("<li><a href=\"#{}\">{}</a></li>\n", id, html_escape(title));
  body_ += fmt::format("<section id=\"{}\"><h2>{}</h2>\n<p>{}</p>\n", id, html_escape(title),
                       intro_html);
}

void report::end_section() { body_ += "</section>\n"; }

void report::paragraph(const std::string& html) { body_ += "<p>" + html + "</p>\n"; }

void report::pre(const std::string& text) {
  body_.append("<pre>").append(html_escape(text)).append("</pre>\n");
}

// Both images are rendered now (in memory) and staged; a rendering error throws before the
// figure is numbered or anything is added to the page.
void report::figure(const std::string& name, const viz::figure& f, const std::string& csv,
                    const std::string& caption_html) {
  stage_figure(name, render(f, image_format::svg), render(f, image_format::png), csv, f.title,
               caption_html);
}

void report::heatmap(const std::string& name, const viz::heatmap& h, const std::string& csv,
                     const std::string& caption_html) {
  stage_figure(name, render(h, image_format::svg), render(h, image_format::png), csv, h.title,
               caption_html);
}

void report::grid(const std::string& name, const std::vector<viz::heatmap>& panels, int columns,
                  const std::string& title, const std::string& csv,
                  const std::string& caption_html) {
  stage_figure(name, render_grid(panels, columns, title, image_format::svg),
               render_grid(panels, columns, title, image_format::png), csv, title, caption_html);
}

void report::table(const std::vector<std::string>& head,
                   const std::vector<std::vector<std::string>>& rows,
                   const std::string& caption_html, const std::string& csv_name) {
  // The HTML table and its CSV copy are built side by side, cell by cell.
  // Appended piece by piece: GCC 12 at -O3 flags `"literal" + std::string&&` with a false
  // -Wrestrict (GCC bug 105329), and this is cheaper anyway.
  // In a box of its own that scrolls sideways, so a wide table on a phone scrolls in place
  // instead of widening the page.
  std::string h = "<div class=\"table-scroll\"><table><caption>";
  h.append(caption_html).append("</caption>\n<tr>");
  std::string csv;
  for (std::size_t i = 0; i < head.size(); ++i) {
    h.append("<th>").append(html_escape(head[i])).append("</th>");
    csv.append(i ? "," : "").append(csv_cell(head[i]));
  }
  h += "</tr>\n";
  csv += "\n";
  for (const auto& r : rows) {
    h += "<tr>";
    for (std::size_t i = 0; i < r.size(); ++i) {
      h.append("<td>").append(html_escape(r[i])).append("</td>");
      csv.append(i ? "," : "").append(csv_cell(r[i]));
    }
    h += "</tr>\n";
    csv += "\n";
  }
  h += "</table></div>\n";
  if (!csv_name.empty()) {
    writer_.stage(dir_ + "/figures/" + csv_name + ".csv", csv);
    h += fmt::format("<p class=\"files\"><a href=\"figures/{0}.csv\">{0}.csv</a></p>\n", csv_name);
  }
  body_ += h;
}

// index.html: head, style, heading, subtitle, intro, contents, sections. Staged last, so the
// page never links a file that is not there when it appears.
void report::commit(const std::string& subtitle) {
  const std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{}</title>\n<style>\n{}</style></head><body>\n<h1>{}</h1>\n"
      "<p class=\"subtitle\">{}</p>\n<p>{}</p>\n<ol>\n{}</ol>\n{}\n</body></html>\n",
      html_escape(head_.title), kStyle, html_escape(head_.heading), html_escape(subtitle),
      head_.intro_html, toc_, body_);
  writer_.stage(dir_ + "/index.html", html);
  writer_.commit();  // renames in staging order: figures first, index.html last
}

// One <figure>: the SVG shown, links to SVG, PNG and (if any) CSV; numbered in page order.
void report::stage_figure(const std::string& name, const std::string& svg, const std::string& png,
                          const std::string& csv, const std::string& title,
                          const std::string& caption) {
  // `name` is a file stem and an id: like section ids, written unescaped.
  const std::string base = dir_ + "/figures/" + name;
  writer_.stage(base + ".svg", svg);
  writer_.stage(base + ".png", png);
  if (!csv.empty()) writer_.stage(base + ".csv", csv);
  ++figures_;
  body_ += fmt::format(
      "<figure id=\"fig-{0}\"><img src=\"figures/{0}.svg\" alt=\"{1}\"{5} loading=\"lazy\">\n"
      "<figcaption><b>Figure {2}. {1}.</b> {3}</figcaption>\n"
      "<p class=\"files\"><a href=\"figures/{0}.svg\">SVG</a><a "
      "href=\"figures/{0}.png\">PNG</a>{4}"
      "</p></figure>\n",
      name, html_escape(title), figures_, caption,
      csv.empty() ? "" : fmt::format("<a href=\"figures/{}.csv\">CSV</a>", name),
      svg_size_attributes(svg));
}

}  // namespace kf::viz
