// kernelformer/viz/plot.hpp — simple, honest 2-D figures as SVG or PNG (cairo).
//
// A figure is data: a title, axis labels, and series drawn in order — points, lines, and
// bands (a filled region between two curves, e.g. a confidence band), and cells (filled
// rectangles on a grid, e.g. a classifier's decision regions). Axes get "nice" ticks
// (1, 2, 5 × 10^k; decades on a log axis), a light grid, and a legend of the labelled series in
// the corner of the plot where it hides the fewest data marks.
// Output bytes are produced in memory; save() writes them atomically by extension (.svg, .png).
#pragma once

#include <string>
#include <vector>

namespace kf::viz {

struct rgb {
  double r, g, b;
};

inline constexpr rgb kBlue{0.12, 0.47, 0.71}, kOrange{1.0, 0.50, 0.05}, kGreen{0.17, 0.63, 0.17},
    kRed{0.84, 0.15, 0.16}, kGrey{0.45, 0.45, 0.45}, kPurple{0.58, 0.40, 0.74};

struct series {
  // cells: each (x, y) is the centre of a filled cell_w × cell_h rectangle in data units (a
  // decision region drawn as a grid of cells)
  enum class kind { points, line, band, cells };
  kind type = kind::line;
  std::vector<double> x, y;
  std::vector<double> y_upper;  // band only: y is the lower edge
  std::string label;            // empty: not in the legend
  rgb color = kBlue;
  double width = 2.0;  // line width, or point radius
  double alpha = 1.0;
  double cell_w = 0, cell_h = 0;  // cells only
};

struct figure {
  std::string title, xlabel, ylabel;
  std::vector<series> data;
  bool log_x = false;
  bool log_y = false;  // e.g. a loss falling over decades; values ≤ 0 are not drawn
  int width = 900, height = 540;
};

// A matrix as an image (row i at the top → bottom, column j left → right), viridis colors, a
// color bar, and optional tick labels (tokens) on both axes.
struct heatmap {
  std::string title, xlabel, ylabel;
  int rows = 0, cols = 0;
  std::vector<double> values;               // rows × cols, row-major; NaN: a blank cell (a mask)
  std::vector<std::string> xticks, yticks;  // empty: numeric ticks
  std::string scale;                        // what the colours mean, beside the colour bar
  int width = 760, height = 680;
};

enum class image_format { svg, png };

// The tick values of an axis over [lo, hi] (about `target` of them): 1, 2, 5 × 10^k steps on a
// linear axis; on a log axis (lo > 0) the decades inside, or, within less than two decades,
// nice steps of the exponent.
std::vector<double> axis_ticks(double lo, double hi, bool log, int target);

std::string render(const figure& f, image_format fmt);
// Where render() puts the legend: the first of top right, top left, bottom right, bottom left
// whose box covers the fewest points, line vertices and band edges.
enum class corner { top_right, top_left, bottom_right, bottom_left };
corner legend_corner(const figure& f);
std::string render(const heatmap& h, image_format fmt);
std::string render_for_path(const heatmap& h, const std::string& path);
// Several heatmaps in a grid of `columns` panels (e.g. every layer × head), under one title.
std::string render_grid(const std::vector<heatmap>& panels, int columns, const std::string& title,
                        image_format fmt);
std::string render_grid_for_path(const std::vector<heatmap>& panels, int columns,
                                 const std::string& title, const std::string& path);
// Renders by the extension of path (.svg or .png; throws std::invalid_argument otherwise) and
// writes atomically.
void save(const figure& f, const std::string& path);
// The bytes for path's extension (for callers that stage several outputs together).
std::string render_for_path(const figure& f, const std::string& path);

}  // namespace kf::viz
