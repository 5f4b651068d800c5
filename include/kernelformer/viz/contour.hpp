// kernelformer/viz/contour.hpp — filled contour plots of a function on a regular 2-D grid (a
// density, a regression surface) with the data drawn on top, as SVG or PNG (cairo).
//
// The field is sampled at nx × ny grid nodes; between nodes it is read by marching squares: along
// a cell edge linearly, and a cell whose corners alternate around a level (a saddle) is resolved
// by the average of its four corners. The colour bands between `levels + 1` equally spaced level
// values (finite min … max) are filled with viridis colours (as heatmaps), the `levels − 1`
// interior contour lines are drawn on top, then the data points, axes, colour bar and legend.
// A band is one path and a contour level one stroke, so a 200 × 200 grid stays a small SVG; SVG
// text is emitted as <text> elements (searchable, selectable), not as glyph outlines.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "kernelformer/viz/plot.hpp"

namespace kf::viz {

struct contour_plot {
  std::string title, xlabel, ylabel;
  std::string scale;  // what the colours mean, beside the colour bar
  int nx = 0, ny = 0;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  // ny × nx, row-major: values[j·nx + i] is the field at x0 + i·(x1 − x0)/(nx − 1),
  // y0 + j·(y1 − y0)/(ny − 1) (row 0 at the bottom). NaN (or ±∞): no value; every cell touching
  // it is drawn blank and has no contour lines.
  std::vector<double> values;
  int levels = 10;             // colour bands, 2..50: levels − 1 contour lines between them
  std::vector<double> px, py;  // data points drawn on top (at most ~5000, by stride); may be empty
  std::string points_label = "data";  // the legend's one entry, when there are points
  int width = 820, height = 680;
};

// The band edges: levels + 1 values equally spaced from the finite minimum to the maximum; a
// constant field has one band, {v, v}. Throws std::invalid_argument if c is not drawable (below).
std::vector<double> contour_levels(const contour_plot& c);

// The contour of `level` as line segments {xa, ya, xb, yb} in data coordinates, one per cell it
// crosses (two in a saddle cell): a node is above when its value ≥ level, crossings are linear
// along the cell edges. Cells with a NaN corner give none.
std::vector<std::array<double, 4>> contour_segments(const contour_plot& c, double level);

// Throws std::invalid_argument (one line) unless nx, ny ≥ 2, values.size() = nx·ny, x1 > x0,
// y1 > y0 (finite), levels ∈ [2, 50], width ≥ 320, height ≥ 240, and some value is finite.
std::string render(const contour_plot& c, image_format fmt);
// By the extension of path (.svg or .png; throws std::invalid_argument otherwise).
std::string render_for_path(const contour_plot& c, const std::string& path);

}  // namespace kf::viz
