// src/viz/draw_common.hpp — internal: the cairo helpers shared by the viz sources (plot.cpp,
// contour.cpp), so every figure has the same colours, tick labels and output handling.
//
// viridis() is the colour map of heatmaps and contour bands; put_text() anchors text by its
// extents; render_surface() runs a drawing on an SVG or PNG surface and returns the bytes;
// format_for() picks the format from a path's extension. Not installed; not a public API.
#pragma once

#include <cairo-svg.h>
#include <cairo.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernelformer/viz/plot.hpp"

namespace kf::viz::detail {

// Short tick text: %g, or one-digit scientific ("1e+06") for very large or small magnitudes.
inline std::string tick_label(double v) {
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e5 || a < 1e-3) return fmt::format("{:.0e}", v);
  return fmt::format("{:g}", v);
}

// Text anchored at (x, y): ax, ay in [0, 1] pick the anchor within the text's extents.
inline void put_text(cairo_t* cr, const std::string& s, double x, double y, double ax, double ay,
                     double size) {
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_move_to(cr, x - ax * e.width - e.x_bearing, y - ay * e.height - e.y_bearing);
  cairo_show_text(cr, s.c_str());
}

// cairo's write callback: appends the bytes to the std::string passed as closure, so images are
// produced in memory and the caller decides where (and how atomically) they go.
inline cairo_status_t append(void* closure, const unsigned char* data, unsigned int len) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), len);
  return CAIRO_STATUS_SUCCESS;
}

// Viridis, sampled at 9 points and interpolated linearly.
inline rgb viridis(double t) {
  static const double c[9][3] = {
      {0.267, 0.005, 0.329}, {0.283, 0.141, 0.458}, {0.254, 0.265, 0.530},
      {0.207, 0.372, 0.553}, {0.164, 0.471, 0.558}, {0.128, 0.567, 0.551},
      {0.135, 0.659, 0.518}, {0.478, 0.821, 0.318}, {0.993, 0.906, 0.144}};
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * 8.0;  // t ∈ [0, 1] → segment i, fraction f
  const int i = std::min(7, static_cast<int>(t));
  const double f = t - i;
  return {c[i][0] + f * (c[i + 1][0] - c[i][0]), c[i][1] + f * (c[i + 1][1] - c[i][1]),
          c[i][2] + f * (c[i + 1][2] - c[i][2])};
}

// Runs draw_fn on an SVG (streamed into the string as cairo writes it) or ARGB32 image surface
// (encoded as PNG at the end) and returns the bytes. Throws std::runtime_error with cairo's
// message if the surface failed — checked after finish, when the SVG has been flushed.
template <class Draw>
std::string render_surface(int width, int height, image_format fmt, Draw&& draw_fn) {
  std::string out;
  cairo_surface_t* surf = fmt == image_format::svg
                              ? cairo_svg_surface_create_for_stream(append, &out, width, height)
                              : cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
  cairo_t* cr = cairo_create(surf);
  draw_fn(cr);
  cairo_destroy(cr);
  if (fmt == image_format::png) cairo_surface_write_to_png_stream(surf, append, &out);
  cairo_surface_finish(surf);
  const cairo_status_t st = cairo_surface_status(surf);
  cairo_surface_destroy(surf);
  if (st != CAIRO_STATUS_SUCCESS)
    throw std::runtime_error(std::string("plot rendering failed: ") + cairo_status_to_string(st));
  return out;
}

// The format a path asks for; throws std::invalid_argument naming the path otherwise.
inline image_format format_for(const std::string& path) {
  if (path.ends_with(".svg")) return image_format::svg;
  if (path.ends_with(".png")) return image_format::png;
  throw std::invalid_argument(fmt::format("{}: a plot is written as .svg or .png", path));
}

}  // namespace kf::viz::detail
