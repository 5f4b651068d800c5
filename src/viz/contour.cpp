#include "kernelformer/viz/contour.hpp"

#include <cairo.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "draw_common.hpp"

namespace kf::viz {
using detail::format_for, detail::put_text, detail::render_surface, detail::tick_label,
    detail::viridis;

namespace {

// ---- validation and levels ----------------------------------------------------------------

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("contour plot: " + what);
}

void check(const contour_plot& c) {
  if (c.nx < 2 || c.ny < 2)
    fail(fmt::format("the grid is {} x {} nodes; at least 2 x 2 are needed", c.nx, c.ny));
  const std::size_t n = static_cast<std::size_t>(c.nx) * static_cast<std::size_t>(c.ny);
  if (c.values.size() != n)
    fail(
        fmt::format("{} values for a {} x {} grid (nx * ny = {})", c.values.size(), c.nx, c.ny, n));
  if (!(c.x1 > c.x0) || !(c.y1 > c.y0) || !std::isfinite(c.x1 - c.x0) ||
      !std::isfinite(c.y1 - c.y0))
    fail(fmt::format("the extent [{}, {}] x [{}, {}] is empty or not finite (x1 > x0, y1 > y0)",
                     c.x0, c.x1, c.y0, c.y1));
  if (c.levels < 2 || c.levels > 50)
    fail(fmt::format("levels = {}; between 2 and 50 colour bands can be drawn", c.levels));
  if (c.width < 320 || c.height < 240)
    fail(fmt::format("{} x {} pixels is too small (at least 320 x 240)", c.width, c.height));
  if (std::none_of(c.values.begin(), c.values.end(), [](double v) { return std::isfinite(v); }))
    fail("no value is finite: nothing to draw");
}

// ---- marching squares, in grid units (node (i, j) at the point (i, j)) ----------------------

struct xy {
  double x, y;
};
using polygon = std::vector<xy>;

// A grid cell: corners 0..3 are (i, j), (i+1, j), (i+1, j+1), (i, j+1) — counter-clockwise from
// the bottom left — and edge k joins corner k to corner k+1 (mod 4): bottom, right, top, left.
struct cell {
  std::array<double, 4> v;
  std::array<xy, 4> p;
  bool finite() const {
    return std::all_of(v.begin(), v.end(), [](double u) { return std::isfinite(u); });
  }
  double centre() const { return (v[0] + v[1] + v[2] + v[3]) / 4; }  // the saddle's referee
};

cell cell_at(const contour_plot& c, int i, int j) {
  const auto at = [&](int a, int b) {
    return c.values[static_cast<std::size_t>(b) * static_cast<std::size_t>(c.nx) +
                    static_cast<std::size_t>(a)];
  };
  const double x = i, y = j;
  return {{at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)},
          {xy{x, y}, xy{x + 1, y}, xy{x + 1, y + 1}, xy{x, y + 1}}};
}

// Where `level` crosses edge k (its ends on opposite sides, so their values differ), linearly.
// Measured from the edge's bottom/left end, so the two cells sharing an edge get the same point
// bit for bit and their polygons meet without a seam.
xy crossing(const cell& q, int k, double level) {
  int a = k, b = (k + 1) % 4;
  if (k >= 2) std::swap(a, b);  // top (2 → 3) and left (3 → 0) run right-to-left / downwards
  const double t = (level - q.v[static_cast<std::size_t>(a)]) /
                   (q.v[static_cast<std::size_t>(b)] - q.v[static_cast<std::size_t>(a)]);
  const xy pa = q.p[static_cast<std::size_t>(a)], pb = q.p[static_cast<std::size_t>(b)];
  return {pa.x + t * (pb.x - pa.x), pa.y + t * (pb.y - pa.y)};
}

// Which corners are above the level (value ≥ level), and whether the cell is a saddle: opposite
// corners alike, neighbours not. In a saddle the corners on the centre's side are joined, the two
// others cut off alone.
struct corners {
  std::array<bool, 4> above;
  bool saddle;
};
corners classify(const cell& q, double level) {
  corners k{{q.v[0] >= level, q.v[1] >= level, q.v[2] >= level, q.v[3] >= level}, false};
  k.saddle = k.above[0] == k.above[2] && k.above[1] == k.above[3] && k.above[0] != k.above[1];
  return k;
}

// The segments of the contour of `level` in one finite cell: none, one, or two in a saddle.
template <class Emit>
void cell_segments(const cell& q, double level, Emit&& emit) {
  const corners k = classify(q, level);
  if (k.saddle) {  // cut off each corner on the other side from the centre
    const bool centre_above = q.centre() >= level;
    for (int m = 0; m < 4; ++m)
      if (k.above[static_cast<std::size_t>(m)] != centre_above)
        emit(crossing(q, (m + 3) % 4, level), crossing(q, m, level));
    return;
  }
  int e[2], n = 0;
  for (int m = 0; m < 4 && n < 2; ++m)
    if (k.above[static_cast<std::size_t>(m)] != k.above[static_cast<std::size_t>((m + 1) % 4)])
      e[n++] = m;
  if (n == 2) emit(crossing(q, e[0], level), crossing(q, e[1], level));
}

// The part of a finite cell above `level`, bounded by the same chords as cell_segments: walk the
// corners, keeping those above and the crossings between. A saddle whose centre is below gives
// two corner triangles instead of one hexagon.
void cell_region_above(const cell& q, double level, std::vector<polygon>& out) {
  const corners k = classify(q, level);
  if (k.saddle && q.centre() < level) {
    for (int m = 0; m < 4; ++m)
      if (k.above[static_cast<std::size_t>(m)])
        out.push_back({crossing(q, (m + 3) % 4, level), q.p[static_cast<std::size_t>(m)],
                       crossing(q, m, level)});
    return;
  }
  polygon poly;
  for (int m = 0; m < 4; ++m) {
    const bool in = k.above[static_cast<std::size_t>(m)];
    if (in) poly.push_back(q.p[static_cast<std::size_t>(m)]);
    if (in != k.above[static_cast<std::size_t>((m + 1) % 4)]) poly.push_back(crossing(q, m, level));
  }
  if (!poly.empty()) out.push_back(std::move(poly));
}

// Every segment of the contour of `level`, in grid units, cell by cell (rows bottom to top).
template <class Emit>
void level_segments(const contour_plot& c, double level, Emit&& emit) {
  for (int j = 0; j + 1 < c.ny; ++j)
    for (int i = 0; i + 1 < c.nx; ++i) {
      const cell q = cell_at(c, i, j);
      if (!q.finite()) continue;
      const auto [lo, hi] = std::minmax({q.v[0], q.v[1], q.v[2], q.v[3]});
      if (lo < level && hi >= level) cell_segments(q, level, emit);
    }
}

// ---- drawing ------------------------------------------------------------------------------

// The plot area and the grid/data → pixel maps. Pixels are snapped to a quarter pixel: invisible
// in a PNG, and an SVG coordinate prints as "123.25" instead of "123.246094" (−40% of the bytes).
struct frame {
  double W, H, left, right, top, bottom;
  const contour_plot* c;
  double pw() const { return W - left - right; }
  double ph() const { return H - top - bottom; }
  static double snap(double v) { return std::round(v * 4) / 4; }
  double gx(double i) const { return snap(left + i / (c->nx - 1) * pw()); }  // grid units
  double gy(double j) const { return snap(H - bottom - j / (c->ny - 1) * ph()); }
  double dx(double x) const { return snap(left + (x - c->x0) / (c->x1 - c->x0) * pw()); }  // data
  double dy(double y) const { return snap(H - bottom - (y - c->y0) / (c->y1 - c->y0) * ph()); }
};

frame frame_of(const contour_plot& c) {
  return {double(c.width), double(c.height), 80, 120, c.title.empty() ? 20.0 : 48.0, 60, &c};
}

// One connected piece of a region within a row of cells (a strip), as its lower boundary and its
// upper boundary, both left → right; its outline is lower, then upper reversed, closed by the
// vertical edges at its two ends. Points along a grid line merge, so a run of whole cells costs
// four points and a cell the contour cuts one or two (about half the SVG of a polygon per cell).
struct strip_outline {
  std::vector<xy> lower, upper;

  static void add(std::vector<xy>& chain, xy p) {
    const std::size_t n = chain.size();
    if (n > 0 && chain[n - 1].x == p.x && chain[n - 1].y == p.y) return;
    if (n > 1 && chain[n - 2].y == p.y && chain[n - 1].y == p.y)  // along a row of nodes
      chain[n - 1] = p;
    else
      chain.push_back(p);
  }

  // A convex piece of a cell, counter-clockwise: its lower chain runs counter-clockwise from the
  // leftmost-lowest vertex to the rightmost-lowest, its upper chain clockwise from the
  // leftmost-highest to the rightmost-highest.
  void append(const polygon& poly) {
    const std::size_t m = poly.size();
    std::size_t lo0 = 0, lo1 = 0, up0 = 0, up1 = 0;
    const auto key = [&](std::size_t k, double sy) {
      return std::make_pair(poly[k].x, sy * poly[k].y);
    };
    for (std::size_t k = 1; k < m; ++k) {
      if (key(k, 1) < key(lo0, 1)) lo0 = k;
      if (key(k, -1) > key(lo1, -1)) lo1 = k;
      if (key(k, -1) < key(up0, -1)) up0 = k;
      if (key(k, 1) > key(up1, 1)) up1 = k;
    }
    for (std::size_t k = lo0;; k = (k + 1) % m) {
      add(lower, poly[k]);
      if (k == lo1) break;
    }
    for (std::size_t k = up0;; k = (k + m - 1) % m) {
      add(upper, poly[k]);
      if (k == up1) break;
    }
  }

  void emit(cairo_t* cr, const frame& fr) {
    cairo_move_to(cr, fr.gx(lower[0].x), fr.gy(lower[0].y));
    for (std::size_t k = 1; k < lower.size(); ++k)
      cairo_line_to(cr, fr.gx(lower[k].x), fr.gy(lower[k].y));
    for (std::size_t k = upper.size(); k-- > 0;)
      cairo_line_to(cr, fr.gx(upper[k].x), fr.gy(upper[k].y));
    cairo_close_path(cr);
    lower.clear(), upper.clear();
  }
};

// The region f ≥ level (level = −∞: every finite cell) as one path, filled once, strip by strip.
// A cell's piece that reaches its right edge continues into the next cell (whose piece reaches
// its left edge: the same nodes, the same crossing); one that does not ends the outline.
void fill_region(cairo_t* cr, const frame& fr, const contour_plot& c, double level) {
  strip_outline out;
  std::vector<polygon> pieces;
  for (int j = 0; j + 1 < c.ny; ++j) {
    bool open = false;
    for (int i = 0; i + 1 < c.nx; ++i) {
      const cell q = cell_at(c, i, j);
      pieces.clear();
      if (q.finite()) {
        const auto [lo, hi] = std::minmax({q.v[0], q.v[1], q.v[2], q.v[3]});
        if (lo >= level)
          pieces.push_back({q.p[0], q.p[1], q.p[2], q.p[3]});
        else if (hi >= level)
          cell_region_above(q, level, pieces);
      }
      const auto touches = [](const polygon& poly, double x) {
        return std::any_of(poly.begin(), poly.end(), [x](xy p) { return p.x == x; });
      };
      // A saddle's two corner triangles: the one that ends the open outline goes first.
      if (pieces.size() == 2 && !touches(pieces[0], i)) std::swap(pieces[0], pieces[1]);
      if (pieces.empty() && open) out.emit(cr, fr), open = false;  // a NaN cell ends it
      for (const polygon& poly : pieces) {
        if (open && !touches(poly, i)) out.emit(cr, fr);  // (cannot happen; kept safe)
        out.append(poly);
        open = touches(poly, i + 1);
        if (!open) out.emit(cr, fr);
      }
    }
    if (open) out.emit(cr, fr);
  }
  cairo_fill(cr);
}

rgb band_colour(std::size_t k, std::size_t bands) {
  return viridis((double(k) + 0.5) / double(bands));
}

// Bands painted bottom-up, each as the region above its lower edge over those below it (so band
// boundaries never show an antialiasing seam), then one stroke per interior level.
void draw_field(cairo_t* cr, const frame& fr, const contour_plot& c,
                const std::vector<double>& edges) {
  const std::size_t bands = edges.size() - 1;
  for (std::size_t k = 0; k < bands; ++k) {
    const rgb col = band_colour(k, bands);
    cairo_set_source_rgb(cr, col.r, col.g, col.b);
    fill_region(cr, fr, c, k == 0 ? -std::numeric_limits<double>::infinity() : edges[k]);
  }
  cairo_set_source_rgba(cr, 0.1, 0.1, 0.1, 0.55);
  cairo_set_line_width(cr, 0.8);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
  for (std::size_t k = 1; k < bands; ++k) {
    xy last{-1, -1};  // a segment that starts where the last one ended continues its line
    level_segments(c, edges[k], [&](xy a, xy b) {
      if (b.x == last.x && b.y == last.y) std::swap(a, b);
      if (a.x != last.x || a.y != last.y) cairo_move_to(cr, fr.gx(a.x), fr.gy(a.y));
      cairo_line_to(cr, fr.gx(b.x), fr.gy(b.y));
      last = b;
    });
    cairo_stroke(cr);
  }
}

// Text on the figure. A PNG gets it drawn by cairo; an SVG gets <text> elements (cairo 1.16 would
// write each glyph as an outline: unsearchable, and the bulk of a small figure), placed with
// cairo's metrics for the baseline and with text-anchor for the horizontal alignment, so a
// viewer's slightly different font stays centred.
struct text_layer {
  bool svg;
  std::string elements;  // the SVG's <text> elements, spliced in before </svg>

  // s anchored at (x, y) as put_text does (ax, ay ∈ {0, 0.5, 1}), rotated by `degrees` about it.
  void put(cairo_t* cr, const std::string& s, double x, double y, double ax, double ay, double size,
           double degrees = 0) {
    if (s.empty()) return;
    if (!svg) {
      cairo_save(cr);
      cairo_translate(cr, x, y);
      cairo_rotate(cr, degrees * M_PI / 180);
      put_text(cr, s, 0, 0, ax, ay, size);
      cairo_restore(cr);
      return;
    }
    cairo_set_font_size(cr, size);
    cairo_text_extents_t e;
    cairo_text_extents(cr, s.c_str(), &e);
    double r = 0, g = 0, b = 0, a = 1;
    cairo_pattern_get_rgba(cairo_get_source(cr), &r, &g, &b, &a);
    const auto byte = [](double u) { return static_cast<int>(std::lround(u * 255)); };
    elements += fmt::format(
        "<text transform=\"translate({:.2f} {:.2f}) rotate({:g})\" y=\"{:.2f}\" "
        "font-family=\"DejaVu Sans, Verdana, sans-serif\" font-size=\"{:g}\" "
        "fill=\"#{:02x}{:02x}{:02x}\" text-anchor=\"{}\">{}</text>\n",
        x, y, degrees, -ay * e.height - e.y_bearing, size, byte(r), byte(g), byte(b),
        ax < 0.25   ? "start"
        : ax > 0.75 ? "end"
                    : "middle",
        escape(s));
  }

  static std::string escape(const std::string& s) {
    std::string out;
    for (char ch : s) switch (ch) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        default:
          out += ch;
      }
    return out;
  }
};

// Frame, tick marks and numbers (axis_ticks over the grid's extent), axis labels and title.
void draw_axes(cairo_t* cr, const frame& fr, const contour_plot& c, text_layer& text) {
  const double bottom = fr.H - fr.bottom, right = fr.W - fr.right;
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  cairo_set_line_width(cr, 1.2);
  cairo_rectangle(cr, fr.left, fr.top, fr.pw(), fr.ph());
  cairo_stroke(cr);
  cairo_set_line_width(cr, 1);
  const auto xt = axis_ticks(c.x0, c.x1, false, 8), yt = axis_ticks(c.y0, c.y1, false, 6);
  for (double v : xt) cairo_move_to(cr, fr.dx(v), bottom), cairo_line_to(cr, fr.dx(v), bottom + 5);
  for (double v : yt)
    cairo_move_to(cr, fr.left, fr.dy(v)), cairo_line_to(cr, fr.left - 5, fr.dy(v));
  cairo_stroke(cr);
  for (double v : xt) text.put(cr, tick_label(v), fr.dx(v), bottom + 8, 0.5, 0.0, 12);
  for (double v : yt) text.put(cr, tick_label(v), fr.left - 8, fr.dy(v), 1.0, 0.5, 12);
  text.put(cr, c.xlabel, fr.left + fr.pw() / 2, fr.H - 14, 0.5, 1.0, 14);
  text.put(cr, c.ylabel, 18, fr.top + fr.ph() / 2, 0.5, 0.5, 14, -90);
  text.put(cr, c.title, (fr.left + right) / 2, 16, 0.5, 0.0, 16);
}

// A level's text: enough significant digits to tell neighbouring levels apart (at least 3).
std::string level_label(double v, double step, double magnitude) {
  if (std::abs(v) < step * 1e-6) return "0";  // a density's 1e-22 minimum reads as 0
  int digits = 3;
  if (step > 0 && magnitude / step >= 100)
    digits = std::min(12, static_cast<int>(std::ceil(std::log10(magnitude / step))) + 1);
  return fmt::format("{:.{}g}", v, digits);
}

// The colour bar: one block per band, the level values at their edges (every k-th when the bands
// are thinner than a label), and the scale's name beside it.
void draw_colour_bar(cairo_t* cr, const frame& fr, const contour_plot& c,
                     const std::vector<double>& edges, text_layer& text) {
  const std::size_t bands = edges.size() - 1;
  const double bx = fr.W - fr.right + 18, bw = 18, bottom = fr.H - fr.bottom;
  const double step = fr.ph() / double(bands);
  for (std::size_t k = 0; k < bands; ++k) {
    const rgb col = band_colour(k, bands);
    cairo_set_source_rgb(cr, col.r, col.g, col.b);
    cairo_rectangle(cr, bx, bottom - step * double(k + 1), bw, step);
    cairo_fill(cr);
  }
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, bx, fr.top, bw, fr.ph());
  cairo_stroke(cr);
  const double span = edges.back() - edges.front();
  const double magnitude = std::max(std::abs(edges.front()), std::abs(edges.back()));
  if (span == 0) {  // a constant field: its one value, beside its one band
    text.put(cr, level_label(edges[0], 0, magnitude), bx + bw + 5, fr.top + fr.ph() / 2, 0, 0.5,
             11);
  } else {
    const auto every = static_cast<std::size_t>(std::ceil(15 / step));  // labels ≥ 15 px apart
    for (std::size_t k = 0; k <= bands; ++k) {
      if (k % every != 0 && k != bands) continue;
      if (k != bands && double(bands - k) * step < 15) continue;  // too near the top's
      const double yk = bottom - step * double(k);
      cairo_move_to(cr, bx + bw, yk), cairo_line_to(cr, bx + bw + 3, yk);
      cairo_stroke(cr);
      text.put(cr, level_label(edges[k], span / double(bands), magnitude), bx + bw + 5, yk, 0, 0.5,
               11);
    }
  }
  text.put(cr, c.scale, fr.W - 18, fr.top + fr.ph() / 2, 0.5, 0.5, 12, 90);
}

// A data dot: dark, semi-transparent, over a faint light halo that shows it on the dark bands.
void dot_style(cairo_t* cr, bool halo) {
  if (halo)
    cairo_set_source_rgba(cr, 1, 1, 1, 0.35), cairo_set_line_width(cr, 4.5);
  else
    cairo_set_source_rgba(cr, 0.05, 0.05, 0.1, 0.6), cairo_set_line_width(cr, 2.75);
}

// The data as small dark dots (every stride-th point, at most ~5000) — zero-length round-capped
// strokes, one path: ~30 bytes a point in an SVG, where a circle is ~150 — then the legend, in the
// plot's quadrant with the fewest points.
void draw_points(cairo_t* cr, const frame& fr, const contour_plot& c, text_layer& text) {
  const std::size_t n = std::min(c.px.size(), c.py.size());
  if (n == 0) return;
  const std::size_t stride = (n + 4999) / 5000;
  std::array<std::size_t, 4> per_corner{};  // points in each quadrant: TR, TL, BR, BL
  for (std::size_t i = 0; i < n; i += stride) {
    if (!std::isfinite(c.px[i]) || !std::isfinite(c.py[i])) continue;
    const double u = fr.dx(c.px[i]), v = fr.dy(c.py[i]);
    cairo_move_to(cr, u, v), cairo_line_to(cr, u, v);
    const bool left = u<fr.left + fr.pw() / 2, low = v> fr.top + fr.ph() / 2;
    ++per_corner[static_cast<std::size_t>(left) + 2 * static_cast<std::size_t>(low)];
  }
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
  cairo_path_t* dots = cairo_copy_path(cr);
  dot_style(cr, true);
  cairo_stroke(cr);
  cairo_append_path(cr, dots);
  cairo_path_destroy(dots);
  dot_style(cr, false);
  cairo_stroke(cr);

  const std::string label =
      stride > 1 ? fmt::format("{} (1 in {} of {})", c.points_label, stride, n) : c.points_label;
  cairo_set_font_size(cr, 12);
  cairo_text_extents_t e;
  cairo_text_extents(cr, label.c_str(), &e);
  const double bw = e.x_advance + 40, bh = 24;
  const auto corner = static_cast<std::size_t>(
      std::min_element(per_corner.begin(), per_corner.end()) - per_corner.begin());
  const double bx = corner % 2 == 0 ? fr.W - fr.right - bw - 8 : fr.left + 8;
  const double by = corner < 2 ? fr.top + 8 : fr.H - fr.bottom - bh - 8;
  cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
  cairo_rectangle(cr, bx, by, bw, bh);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 0.7, 0.7, 0.7);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  for (bool halo : {true, false}) {
    dot_style(cr, halo);
    cairo_move_to(cr, bx + 16, by + bh / 2), cairo_line_to(cr, bx + 16, by + bh / 2);
    cairo_stroke(cr);
  }
  cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
  text.put(cr, label, bx + 30, by + bh / 2, 0.0, 0.5, 12);
}

void draw(cairo_t* cr, const contour_plot& c, const std::vector<double>& edges, text_layer& text) {
  const frame fr = frame_of(c);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_save(cr);
  cairo_rectangle(cr, fr.left, fr.top, fr.pw(), fr.ph());
  cairo_clip(cr);
  draw_field(cr, fr, c, edges);
  draw_points(cr, fr, c, text);
  cairo_restore(cr);
  draw_axes(cr, fr, c, text);
  draw_colour_bar(cr, fr, c, edges, text);
}

}  // namespace

std::vector<double> contour_levels(const contour_plot& c) {
  check(c);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : c.values)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(hi > lo)) return {lo, lo};
  std::vector<double> edges(static_cast<std::size_t>(c.levels) + 1);
  for (std::size_t k = 0; k < edges.size(); ++k) edges[k] = lo + (hi - lo) * double(k) / c.levels;
  edges.back() = hi;  // exact, whatever the rounding
  return edges;
}

std::vector<std::array<double, 4>> contour_segments(const contour_plot& c, double level) {
  check(c);
  const double sx = (c.x1 - c.x0) / (c.nx - 1), sy = (c.y1 - c.y0) / (c.ny - 1);
  std::vector<std::array<double, 4>> out;
  level_segments(c, level, [&](xy a, xy b) {
    out.push_back({c.x0 + a.x * sx, c.y0 + a.y * sy, c.x0 + b.x * sx, c.y0 + b.y * sy});
  });
  return out;
}

std::string render(const contour_plot& c, image_format fmt) {
  const std::vector<double> edges = contour_levels(c);  // checks c
  text_layer text{fmt == image_format::svg, {}};
  std::string out =
      render_surface(c.width, c.height, fmt, [&](cairo_t* cr) { draw(cr, c, edges, text); });
  if (text.svg) {
    const std::size_t end = out.rfind("</svg>");
    if (end == std::string::npos) throw std::runtime_error("contour plot: cairo wrote no </svg>");
    out.insert(end, text.elements);
  }
  return out;
}

std::string render_for_path(const contour_plot& c, const std::string& path) {
  return render(c, format_for(path));
}

}  // namespace kf::viz
