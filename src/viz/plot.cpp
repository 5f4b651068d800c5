#include "kernelformer/viz/plot.hpp"

#include <cairo-svg.h>
#include <cairo.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>

#include "draw_common.hpp"
#include "kernelformer/io/atomic_file.hpp"

namespace kf::viz {
// Shared with the other figures (draw_common.hpp).
using detail::append, detail::format_for, detail::put_text, detail::render_surface,
    detail::tick_label, detail::viridis;

namespace {

// The finite extent of some values; empty (lo > hi) until a finite one is added, so NaN/∞ and
// log-axis values ≤ 0 (mapped to NaN) never stretch an axis.
struct range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
};

// Tick positions at 1, 2 or 5 × 10^k covering [lo, hi] with about `target` ticks.
std::vector<double> nice_ticks(double lo, double hi, int target) {
  const double span = hi - lo;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));  // 10^k ≤ raw < 10^(k+1)
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})  // the smallest nice step ≥ raw
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  std::vector<double> t;
  // The 1e-9 tolerances keep an end tick that rounding puts a hair outside, and print a
  // round-off residue such as 1e-17 as a clean 0.
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

}  // namespace

// On a log axis lo, hi are data values (> 0), not exponents; the ticks come back as values.
std::vector<double> axis_ticks(double lo, double hi, bool log, int target) {
  if (!log) return nice_ticks(lo, hi, target);
  const double a = std::log10(lo), b = std::log10(hi);  // the exponent range
  std::vector<double> t;
  for (double e = std::ceil(a - 1e-9); e <= std::floor(b + 1e-9); ++e)
    t.push_back(std::pow(10.0, e));
  if (t.size() < 2) {  // less than two decades: nice ticks of the exponent
    t.clear();
    for (double v : nice_ticks(a, b, 5)) t.push_back(std::pow(10.0, v));
  }
  return t;
}

namespace {

// The plot area of a figure and its data → pixel mapping (log axes in decades).
struct plot_frame {
  double W, H, left, right, top, bottom;  // image size and margins, pixels
  range xr, yr;                           // axis ranges in transformed units (log10 on log axes)
  bool log_x, log_y;

  // tx, ty: data → axis units (NaN for v ≤ 0 on a log axis); px, py: data → pixels, y upwards.

  double tx(double v) const { return log_x ? (v > 0 ? std::log10(v) : NAN) : v; }
  double ty(double v) const { return log_y ? (v > 0 ? std::log10(v) : NAN) : v; }
  double px(double x) const {
    return left + (tx(x) - xr.lo) / (xr.hi - xr.lo) * (W - left - right);
  }
  double py(double y) const {
    return H - bottom - (ty(y) - yr.lo) / (yr.hi - yr.lo) * (H - top - bottom);
  }
  bool drawable(double y) const { return std::isfinite(ty(y)); }  // only y is checked
};

// Margins (left 80 px for tick labels, top 48 with a title, bottom 60 for the x label) and axis
// ranges covering every series' finite x, y and band tops. An empty range becomes [0, 1]; a
// constant one is widened by ±0.5 so the mapping never divides by zero.
plot_frame frame_of(const figure& f) {
  plot_frame fr{
      double(f.width), double(f.height), 80, 24, f.title.empty() ? 20.0 : 48.0, 60, {}, {},
      f.log_x,         f.log_y};
  for (const auto& s : f.data) {
    for (double v : s.x) fr.xr.add(fr.tx(v));
    for (double v : s.y) fr.yr.add(fr.ty(v));
    for (double v : s.y_upper) fr.yr.add(fr.ty(v));
  }
  range& xr = fr.xr;
  range& yr = fr.yr;
  if (!(xr.lo <= xr.hi)) xr = {0, 1};
  if (!(yr.lo <= yr.hi)) yr = {0, 1};
  if (xr.hi - xr.lo < 1e-12) xr.lo -= 0.5, xr.hi += 0.5;
  if (yr.hi - yr.lo < 1e-12) yr.lo -= 0.5, yr.hi += 0.5;
  const double ypad = 0.05 * (yr.hi - yr.lo);  // 5% headroom: extremes do not touch the frame
  yr.lo -= ypad, yr.hi += ypad;
  // Points at the ends of x would be cut in half by the frame: pad x too when any are drawn
  // (curves alone keep the tight range, as a function plot reads best).
  bool points = false;
  for (const auto& s : f.data) points = points || s.type == series::kind::points;
  if (points) {
    const double xpad = 0.03 * (xr.hi - xr.lo);
    xr.lo -= xpad, xr.hi += xpad;
  }
  return fr;
}

// The series in order, clipped to the plot area. A point whose y cannot be drawn (non-finite, or
// ≤ 0 on a log axis) is skipped; on a line it lifts the pen, so a gap shows as a gap.
void draw_series(cairo_t* cr, const plot_frame& fr, const series& s) {
  cairo_set_source_rgba(cr, s.color.r, s.color.g, s.color.b, s.alpha);
  const std::size_t n = std::min(s.x.size(), s.y.size());
  if (s.type == series::kind::points) {
    for (std::size_t i = 0; i < n; ++i) {  // all points as one path, filled once
      if (!fr.drawable(s.y[i])) continue;
      cairo_new_sub_path(cr);
      cairo_arc(cr, fr.px(s.x[i]), fr.py(s.y[i]), s.width, 0, 2 * M_PI);
    }
    cairo_fill(cr);
  } else if (s.type == series::kind::line) {
    cairo_set_line_width(cr, s.width);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    bool pen = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (!fr.drawable(s.y[i])) {
        pen = false;
        continue;
      }
      if (pen)
        cairo_line_to(cr, fr.px(s.x[i]), fr.py(s.y[i]));
      else
        cairo_move_to(cr, fr.px(s.x[i]), fr.py(s.y[i]));
      pen = true;
    }
    cairo_stroke(cr);
  } else if (s.type == series::kind::cells) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!fr.drawable(s.y[i])) continue;
      const double x0 = fr.px(s.x[i] - s.cell_w / 2), x1 = fr.px(s.x[i] + s.cell_w / 2);
      const double y0 = fr.py(s.y[i] + s.cell_h / 2), y1 = fr.py(s.y[i] - s.cell_h / 2);  // y0: top
      cairo_rectangle(cr, x0, y0, x1 - x0, y1 - y0);
    }
    cairo_fill(cr);
  } else {
    const std::size_t m = std::min(n, s.y_upper.size());
    std::size_t i = 0;
    while (i < m) {  // one polygon per run of finite values
      while (i < m && !(fr.drawable(s.y[i]) && fr.drawable(s.y_upper[i]))) ++i;
      const std::size_t start = i;
      while (i < m && fr.drawable(s.y[i]) && fr.drawable(s.y_upper[i])) ++i;
      if (i - start < 2) continue;
      cairo_move_to(cr, fr.px(s.x[start]), fr.py(s.y[start]));
      // Along the lower edge left → right, back along the upper edge right → left.
      for (std::size_t j = start + 1; j < i; ++j) cairo_line_to(cr, fr.px(s.x[j]), fr.py(s.y[j]));
      for (std::size_t j = i; j-- > start;) cairo_line_to(cr, fr.px(s.x[j]), fr.py(s.y_upper[j]));
      cairo_close_path(cr);
      cairo_fill(cr);
    }
  }
}

// Does the segment (u0, v0)–(u1, v1) meet the box [x0, x1] × [y0, y1]? (Liang–Barsky clipping.)
bool segment_meets_box(double u0, double v0, double u1, double v1, double x0, double x1, double y0,
                       double y1) {
  // The segment is u0 + t·du, t ∈ [0, 1]; each of the four edges p_e·t ≤ q_e narrows [t0, t1].
  double t0 = 0, t1 = 1;
  const double du = u1 - u0, dv = v1 - v0;
  const double p[4] = {-du, du, -dv, dv}, q[4] = {u0 - x0, x1 - u0, v0 - y0, y1 - v0};
  for (int e = 0; e < 4; ++e) {
    if (p[e] == 0) {  // parallel to this edge: outside it entirely, or no constraint
      if (q[e] < 0) return false;
      continue;
    }
    const double r = q[e] / p[e];
    if (p[e] < 0)
      t0 = std::max(t0, r);
    else
      t1 = std::min(t1, r);
    if (t0 > t1) return false;
  }
  return true;
}

// How many data marks a legend box [bx, bx + bw] × [by, by + bh] (pixels, 4 px margin) would
// hide: points, band edges, line vertices and line segments crossing it; decision cells fill
// everything and do not count.
std::size_t marks_covered(const figure& f, const plot_frame& fr, double bx, double by, double bw,
                          double bh) {
  const double x0 = bx - 4, x1 = bx + bw + 4, y0 = by - 4, y1 = by + bh + 4;
  const auto inside = [&](double u, double v) { return u >= x0 && u <= x1 && v >= y0 && v <= y1; };
  std::size_t covered = 0;
  for (const auto& s : f.data) {
    if (s.type == series::kind::cells) continue;
    const std::size_t n = std::min(s.x.size(), s.y.size());
    for (std::size_t i = 0; i < n; ++i) {
      if (!fr.drawable(s.y[i])) continue;
      const double u = fr.px(s.x[i]), v = fr.py(s.y[i]);
      covered += inside(u, v);
      if (i < s.y_upper.size() && fr.drawable(s.y_upper[i]))
        covered += inside(u, fr.py(s.y_upper[i]));
      if (s.type == series::kind::line && i + 1 < n && fr.drawable(s.y[i + 1]))
        covered += segment_meets_box(u, v, fr.px(s.x[i + 1]), fr.py(s.y[i + 1]), x0, x1, y0, y1);
    }
  }
  return covered;
}

// The corner for a bw × bh legend that hides the fewest data marks: top right, top left, bottom
// right, bottom left, the first of the emptiest. Returns it and the box's top-left pixel.
std::pair<corner, std::pair<double, double>> legend_box(const figure& f, const plot_frame& fr,
                                                        double bw, double bh) {
  // Box corners 8 px inside the frame; c = 0..3 walks the corner enum's order (right/left, then
  // top/bottom), and a strict < keeps the earlier corner on a tie.
  const double xs[2] = {fr.W - fr.right - bw - 8, fr.left + 8};
  const double ys[2] = {fr.top + 8, fr.H - fr.bottom - bh - 8};
  std::pair<corner, std::pair<double, double>> best{corner::top_right, {xs[0], ys[0]}};
  std::size_t fewest = std::numeric_limits<std::size_t>::max();
  for (int c = 0; c < 4; ++c) {
    const double bx = xs[c % 2], by = ys[c / 2];
    const std::size_t covered = marks_covered(f, fr, bx, by, bw, bh);
    if (covered < fewest) fewest = covered, best = {static_cast<corner>(c), {bx, by}};
  }
  return best;
}

// The legend's size in pixels for the labelled series (0 × 0 when none is labelled).
std::pair<double, double> legend_size(cairo_t* cr, const figure& f) {
  std::size_t count = 0;
  double wmax = 0;
  cairo_set_font_size(cr, 12);
  for (const auto& s : f.data) {
    if (s.label.empty()) continue;
    cairo_text_extents_t e;
    cairo_text_extents(cr, s.label.c_str(), &e);
    wmax = std::max(wmax, e.x_advance);
    ++count;
  }
  if (count == 0) return {0, 0};
  return {wmax + 48, 20.0 * double(count) + 8};  // 38 px swatch column + text + 10; 20 px rows
}

// A legend of the labelled series, in the corner where it hides the least data.
void draw_legend(cairo_t* cr, const figure& f, const plot_frame& fr) {
  std::vector<const series*> labelled;
  for (const auto& s : f.data)
    if (!s.label.empty()) labelled.push_back(&s);
  if (labelled.empty()) return;
  const auto [bw, bh] = legend_size(cr, f);
  const auto [bx, by] = legend_box(f, fr, bw, bh).second;
  cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
  cairo_rectangle(cr, bx, by, bw, bh);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 0.7, 0.7, 0.7);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  for (std::size_t i = 0; i < labelled.size(); ++i) {
    const auto* s = labelled[i];
    const double yy = by + 14 + 20.0 * double(i);
    // A faint band (low alpha) still gets a visible swatch.
    cairo_set_source_rgba(cr, s->color.r, s->color.g, s->color.b, std::max(s->alpha, 0.35));
    if (s->type == series::kind::points) {
      cairo_arc(cr, bx + 18, yy, 3.5, 0, 2 * M_PI);
      cairo_fill(cr);
    } else if (s->type == series::kind::line) {
      cairo_set_line_width(cr, s->width);
      cairo_move_to(cr, bx + 6, yy), cairo_line_to(cr, bx + 30, yy);
      cairo_stroke(cr);
    } else {
      cairo_rectangle(cr, bx + 6, yy - 6, 24, 12);
      cairo_fill(cr);
    }
    cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
    put_text(cr, s->label, bx + 38, yy, 0.0, 0.5, 12);
  }
}

// A whole figure: background, grid and tick labels, the series clipped to the frame, then the
// frame, axis labels, title and legend on top.
void draw(cairo_t* cr, const figure& f) {
  const plot_frame fr = frame_of(f);
  const double W = fr.W, H = fr.H, left = fr.left, right = fr.right, top = fr.top,
               bottom = fr.bottom;
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  auto text = [&](const std::string& s, double x, double y, double ax, double ay, double size) {
    put_text(cr, s, x, y, ax, ay, size);
  };

  // Grid and ticks.
  cairo_set_line_width(cr, 1);
  const range& xr = fr.xr;
  const range& yr = fr.yr;
  // The ranges are in log10 units on a log axis: back to values for axis_ticks.
  const auto yt = f.log_y ? axis_ticks(std::pow(10.0, yr.lo), std::pow(10.0, yr.hi), true, 6)
                          : axis_ticks(yr.lo, yr.hi, false, 6);
  const auto xt = f.log_x ? axis_ticks(std::pow(10.0, xr.lo), std::pow(10.0, xr.hi), true, 8)
                          : axis_ticks(xr.lo, xr.hi, false, 8);
  cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
  for (double v : yt) cairo_move_to(cr, left, fr.py(v)), cairo_line_to(cr, W - right, fr.py(v));
  for (double v : xt) cairo_move_to(cr, fr.px(v), top), cairo_line_to(cr, fr.px(v), H - bottom);
  cairo_stroke(cr);
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  for (double v : yt) text(tick_label(v), left - 8, fr.py(v), 1.0, 0.5, 12);
  for (double v : xt) text(tick_label(v), fr.px(v), H - bottom + 8, 0.5, 0.0, 12);

  cairo_save(cr);
  cairo_rectangle(cr, left, top, W - left - right, H - top - bottom);
  cairo_clip(cr);
  for (const auto& s : f.data) draw_series(cr, fr, s);
  cairo_restore(cr);

  // Frame, labels, title, legend.
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  cairo_set_line_width(cr, 1.2);
  cairo_rectangle(cr, left, top, W - left - right, H - top - bottom);
  cairo_stroke(cr);
  text(f.xlabel, left + (W - left - right) / 2, H - 14, 0.5, 1.0, 14);
  cairo_save(cr);
  cairo_translate(cr, 18, top + (H - top - bottom) / 2);
  cairo_rotate(cr, -M_PI / 2);
  text(f.ylabel, 0, 0, 0.5, 0.5, 14);
  cairo_restore(cr);
  if (!f.title.empty()) text(f.title, W / 2, 16, 0.5, 0.0, 16);
  draw_legend(cr, f, fr);
}

// The cells of H as one image painted into the plot area at (x0, y0), cells cw × ch: each cell
// is a block of up to 8 × 8 pixels of its colour (so the picture stays sharp when a viewer
// smooths the scaling), NaN cells transparent (masked: the white background shows). An SVG then
// embeds one PNG instead of a <path> per cell — seed 003's attention figure, 29,801 cells, was
// 7 MB of paths (docs/reliability.md).
void draw_cells(cairo_t* cr, const heatmap& h, double lo, double hi, double x0, double y0,
                double cw, double ch) {
  constexpr int kMaxSide = 32767;  // cairo's largest image
  if (h.rows < 1 || h.cols < 1) return;
  if (h.rows > kMaxSide || h.cols > kMaxSide)
    throw std::invalid_argument(fmt::format(
        "heatmap: {} x {} cells; at most {} per side can be drawn", h.rows, h.cols, kMaxSide));
  const int bx =
      std::clamp(static_cast<int>(std::ceil(cw)), 1, std::clamp(kMaxSide / h.cols, 1, 8));
  const int by =
      std::clamp(static_cast<int>(std::ceil(ch)), 1, std::clamp(kMaxSide / h.rows, 1, 8));
  cairo_surface_t* img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, bx * h.cols, by * h.rows);
  cairo_surface_flush(img);
  unsigned char* data = cairo_image_surface_get_data(img);
  const int stride = cairo_image_surface_get_stride(img);
  if (data == nullptr) {  // the image could not be made (memory): cairo's error surfaces at finish
    cairo_surface_destroy(img);
    return;
  }
  for (int i = 0; i < h.rows; ++i)
    for (int j = 0; j < h.cols; ++j) {
      const double v = h.values[static_cast<std::size_t>(i) * static_cast<std::size_t>(h.cols) +
                                static_cast<std::size_t>(j)];
      std::uint32_t px = 0;  // transparent
      if (!std::isnan(v)) {
        const rgb col = viridis((v - lo) / (hi - lo));
        auto byte = [](double c) {
          return static_cast<std::uint32_t>(std::lround(std::clamp(c, 0.0, 1.0) * 255.0));
        };
        px = 0xFF000000u | byte(col.r) << 16 | byte(col.g) << 8 | byte(col.b);
      }
      for (int y = 0; y < by; ++y) {
        auto* row = reinterpret_cast<std::uint32_t*>(
            data + static_cast<std::ptrdiff_t>(i * by + y) * stride);
        std::fill_n(row + j * bx, bx, px);
      }
    }
  cairo_surface_mark_dirty(img);
  cairo_save(cr);
  cairo_translate(cr, x0, y0);
  cairo_scale(cr, cw / bx, ch / by);
  cairo_set_source_surface(cr, img, 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_paint(cr);
  cairo_restore(cr);
  cairo_surface_destroy(img);
}

// One heatmap filling h.width × h.height from the current origin (render_grid translates it).
// Colours span the finite values' [lo, hi]; a constant matrix gets [lo, lo + 1], so it shows as
// the bottom colour instead of dividing by zero.
void draw_heatmap(cairo_t* cr, const heatmap& h) {
  const double W = h.width, H = h.height;
  const bool tokens = !h.xticks.empty() || !h.yticks.empty();
  const double left = tokens ? 110 : 70, right = 90, top = h.title.empty() ? 20 : 48,
               bottom = tokens ? 110 : 60;
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : h.values)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(lo <= hi)) lo = 0, hi = 1;
  if (hi - lo < 1e-300) hi = lo + 1;
  const double pw = W - left - right, ph = H - top - bottom;
  const double cw = pw / std::max(1, h.cols), ch = ph / std::max(1, h.rows);
  draw_cells(cr, h, lo, hi, left, top, cw, ch);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  auto text = [&](const std::string& s, double x, double y, double ax, double ay, double size) {
    put_text(cr, s, x, y, ax, ay, size);
  };
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  if (tokens) {
    for (int j = 0; j < h.cols && j < static_cast<int>(h.xticks.size()); ++j) {
      cairo_save(cr);
      cairo_translate(cr, left + (j + 0.5) * cw, top + ph + 6);
      cairo_rotate(cr, M_PI / 4);
      text(h.xticks[static_cast<std::size_t>(j)], 0, 0, 0.0, 0.5, 12);
      cairo_restore(cr);
    }
    for (int i = 0; i < h.rows && i < static_cast<int>(h.yticks.size()); ++i)
      text(h.yticks[static_cast<std::size_t>(i)], left - 6, top + (i + 0.5) * ch, 1.0, 0.5, 12);
  } else {
    for (double v : nice_ticks(0, h.cols - 1, 6))  // index ticks at cell centres
      text(tick_label(v), left + (v + 0.5) * cw, top + ph + 6, 0.5, 0.0, 11);
    for (double v : nice_ticks(0, h.rows - 1, 6))
      text(tick_label(v), left - 6, top + (v + 0.5) * ch, 1.0, 0.5, 11);
  }
  text(h.xlabel, left + pw / 2, H - 12, 0.5, 1.0, 14);
  cairo_save(cr);
  cairo_translate(cr, 16, top + ph / 2);
  cairo_rotate(cr, -M_PI / 2);
  text(h.ylabel, 0, 0, 0.5, 0.5, 14);
  cairo_restore(cr);
  if (!h.title.empty()) text(h.title, W / 2, 16, 0.5, 0.0, 16);
  // Color bar: viridis is linear between its 9 samples, so a linear gradient with those 9 stops
  // is exact (and one element in an SVG, where 100 bands were 100 paths).
  const double bx = W - right + 20, bw = 18;
  cairo_pattern_t* bar = cairo_pattern_create_linear(0, top + ph, 0, top);
  for (int k = 0; k <= 8; ++k) {
    const rgb col = viridis(k / 8.0);
    cairo_pattern_add_color_stop_rgb(bar, k / 8.0, col.r, col.g, col.b);
  }
  cairo_set_source(cr, bar);
  cairo_rectangle(cr, bx, top, bw, ph);
  cairo_fill(cr);
  cairo_pattern_destroy(bar);
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  text(fmt::format("{:.3g}", hi), bx + bw + 4, top, 0.0, 0.0, 11);
  text(fmt::format("{:.3g}", lo), bx + bw + 4, top + ph, 0.0, 1.0, 11);
  if (!h.scale.empty()) {
    cairo_save(cr);
    cairo_translate(cr, bx + bw + 16, top + ph / 2);
    cairo_rotate(cr, M_PI / 2);
    text(h.scale, 0, 0, 0.5, 0.5, 11);
    cairo_restore(cr);
  }
}

}  // namespace

// Throws std::invalid_argument if values is not rows × cols.
std::string render(const heatmap& h, image_format fmt) {
  if (static_cast<std::size_t>(h.rows) * static_cast<std::size_t>(h.cols) != h.values.size())
    throw std::invalid_argument("heatmap: values do not match rows x cols");
  return render_surface(h.width, h.height, fmt, [&](cairo_t* cr) { draw_heatmap(cr, h); });
}

std::string render_for_path(const heatmap& h, const std::string& path) {
  return render(h, format_for(path));
}

std::string render_grid(const std::vector<heatmap>& panels, int columns, const std::string& title,
                        image_format fmt) {
  if (panels.empty() || columns < 1) throw std::invalid_argument("heatmap grid: no panels");
  int pw = 0, ph = 0;  // every cell is the largest panel's size; panels are not rescaled
  for (const auto& h : panels) {
    if (static_cast<std::size_t>(h.rows) * static_cast<std::size_t>(h.cols) != h.values.size())
      throw std::invalid_argument("heatmap: values do not match rows x cols");
    pw = std::max(pw, h.width), ph = std::max(ph, h.height);
  }
  const int n = static_cast<int>(panels.size());
  const int cols = std::min(columns, n), rows = (n + cols - 1) / cols;
  const int top = title.empty() ? 0 : 40;
  return render_surface(cols * pw, rows * ph + top, fmt, [&](cairo_t* cr) {
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    if (!title.empty()) {
      cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
      cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
      put_text(cr, title, cols * pw / 2.0, 10, 0.5, 0.0, 20);
    }
    for (int k = 0; k < n; ++k) {
      cairo_save(cr);
      cairo_translate(cr, (k % cols) * pw, top + (k / cols) * ph);
      cairo_rectangle(cr, 0, 0, pw, ph);  // a panel never draws into its neighbour
      cairo_clip(cr);
      draw_heatmap(cr, panels[static_cast<std::size_t>(k)]);
      cairo_restore(cr);
    }
  });
}

std::string render_grid_for_path(const std::vector<heatmap>& panels, int columns,
                                 const std::string& title, const std::string& path) {
  return render_grid(panels, columns, title, format_for(path));
}

// The legend's size needs text metrics, hence a throwaway 1×1 surface; the choice is the same
// legend_box call that draw_legend makes.
corner legend_corner(const figure& f) {
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t* cr = cairo_create(surface);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  const auto [bw, bh] = legend_size(cr, f);
  cairo_destroy(cr);
  cairo_surface_destroy(surface);
  return legend_box(f, frame_of(f), bw, bh).first;
}

std::string render(const figure& f, image_format fmt) {
  return render_surface(f.width, f.height, fmt, [&](cairo_t* cr) { draw(cr, f); });
}

std::string render_for_path(const figure& f, const std::string& path) {
  return render(f, format_for(path));
}

void save(const figure& f, const std::string& path) {
  io::write_file_atomic(path, render_for_path(f, path));
}

}  // namespace kf::viz
