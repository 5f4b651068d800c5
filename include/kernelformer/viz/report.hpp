// kernelformer/viz/report.hpp — a self-contained HTML report: sections of text, figures and
// tables, written as one page (DIR/index.html) with every figure beside it in DIR/figures as
// SVG + PNG + the CSV behind it (kf report's page).
//
// Contract: titles, table cells and <pre> text are plain text (escaped here); intros, paragraphs
// and captions are HTML fragments written as given (they carry <sub>, <code>, <b>). Figures are
// numbered 1..N in the order they are added. Nothing touches the disk before commit(): every file
// is held in memory (io::atomic_writer, in_memory) and commit() creates DIR and DIR/figures when
// missing, writes each file as a temporary beside its destination and renames them all into
// place. A report that fails half-way (or whose process is killed) leaves no file and no folder.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/viz/plot.hpp"

namespace kf::viz {

// Text as HTML: & < > " escaped (safe inside elements and double-quoted attributes).
std::string html_escape(std::string_view text);

// One CSV field: quoted (with "" for ") when it holds a comma, a quote or a line break, or
// starts or ends with a space.
std::string csv_cell(std::string_view text);

// v with `digits` significant digits ("{:.{digits}g}"); NaN is "—" (a number that could not be
// measured, e.g. a kernel fit of an empty row).
std::string format_number(double v, int digits = 4);

// Numeric columns as CSV under a header row. Rows: the first column's length; a shorter column
// is padded with "nan".
std::string csv_columns(const std::vector<std::string>& names,
                        const std::vector<const std::vector<double>*>& columns);

// A labelled line (width in px) or scatter of points (radius in px), for figure::data.
series line_series(std::vector<double> x, std::vector<double> y, std::string label, rgb color,
                   double width = 2);
series point_series(std::vector<double> x, std::vector<double> y, std::string label,
                    rgb color = kGrey, double radius = 3);

// What the page says above its table of contents.
struct report_head {
  std::string title;       // <title>: the browser tab
  std::string heading;     // <h1>
  std::string intro_html;  // a paragraph under the subtitle
};

class report {
 public:
  report(std::string dir, report_head head);

  // <section id=ID> with an <h2> TITLE (listed in the table of contents) and an intro paragraph.
  void section(const std::string& id, const std::string& title, const std::string& intro_html);
  void end_section();
  void paragraph(const std::string& html);
  void pre(const std::string& text);  // preformatted plain text (a generated sample)

  // A numbered figure: NAME.svg, NAME.png and (when CSV is not empty) NAME.csv in figures/.
  void figure(const std::string& name, const viz::figure& f, const std::string& csv,
              const std::string& caption_html);
  void heatmap(const std::string& name, const viz::heatmap& h, const std::string& csv,
               const std::string& caption_html);
  // Several heatmaps in a grid of `columns` panels under one title (render_grid).
  void grid(const std::string& name, const std::vector<viz::heatmap>& panels, int columns,
            const std::string& title, const std::string& csv, const std::string& caption_html);

  // A table of plain-text cells; with CSV_NAME, also figures/CSV_NAME.csv (linked under it).
  void table(const std::vector<std::string>& head,
             const std::vector<std::vector<std::string>>& rows, const std::string& caption_html,
             const std::string& csv_name = "");

  // Stages DIR/index.html (SUBTITLE as plain text under the heading) and renames every staged
  // file into place.
  void commit(const std::string& subtitle);

  int figures() const { return figures_; }

 private:
  void stage_figure(const std::string& name, const std::string& svg, const std::string& png,
                    const std::string& csv, const std::string& title, const std::string& caption);

  std::string dir_;
  report_head head_;
  std::string toc_, body_;  // the <li> items of the contents, and the sections
  io::atomic_writer writer_;
  int figures_ = 0;
};

}  // namespace kf::viz
