// Filled contour plots: marching-squares segments where a linear field puts them (saddles by the
// centre, NaN cells silent), SVG that stays small with its text as <text>, PNG pixels of the
// bands, the blank NaN cells and a constant field, and one-line errors for bad input.
#include "kernelformer/viz/contour.hpp"

#include <cairo.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace kf::viz {
namespace {

using segment = std::array<double, 4>;

// f(x, y) on an nx × ny grid over [x0, x1] × [y0, y1].
template <class F>
contour_plot grid(int nx, int ny, double x0, double x1, double y0, double y1, F f) {
  contour_plot c;
  c.nx = nx, c.ny = ny, c.x0 = x0, c.x1 = x1, c.y0 = y0, c.y1 = y1;
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i)
      c.values.push_back(f(x0 + i * (x1 - x0) / (nx - 1), y0 + j * (y1 - y0) / (ny - 1)));
  return c;
}

// A bump rescaled to exactly [0, 1], so 10 levels are 0, 0.1, …, 1; with 2000 points.
contour_plot bump(int n) {
  contour_plot c = grid(n, n, -3, 3, -2, 2, [](double x, double y) {
    return std::exp(-(x * x + 2 * y * y) / 2) + 0.3 * std::exp(-((x - 2) * (x - 2) + y * y));
  });
  const auto [lo, hi] = std::minmax_element(c.values.begin(), c.values.end());
  const double a = *lo, b = *hi;
  for (double& v : c.values) v = (v - a) / (b - a);
  c.title = "Gaussian bump";
  c.xlabel = "x";
  c.ylabel = "y";
  c.scale = "density";
  for (int k = 0; k < 2000; ++k) {
    c.px.push_back(-2.5 + 5.0 * ((k * 37) % 2000) / 2000.0);
    c.py.push_back(-1.8 + 3.6 * ((k * 91) % 2000) / 2000.0);
  }
  return c;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// Segments with their ends in a canonical order, sorted, for comparing as sets.
std::vector<segment> canonical(std::vector<segment> s) {
  for (auto& e : s)
    if (std::make_pair(e[2], e[3]) < std::make_pair(e[0], e[1])) e = {e[2], e[3], e[0], e[1]};
  std::sort(s.begin(), s.end());
  return s;
}

void expect_segments(const std::vector<segment>& got, const std::vector<segment>& want) {
  const auto g = canonical(got), w = canonical(want);
  ASSERT_EQ(g.size(), w.size());
  for (std::size_t i = 0; i < g.size(); ++i)
    for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(g[i][k], w[i][k], 1e-12) << i << ", " << k;
}

TEST(Contour, SegmentsOfALinearField) {
  // f = x on 3 × 3 nodes over [0, 1]²: the level 0.5 runs through the middle column of nodes.
  const auto c = grid(3, 3, 0, 1, 0, 1, [](double x, double) { return x; });
  expect_segments(contour_segments(c, 0.5), {{0.5, 0, 0.5, 0.5}, {0.5, 0.5, 0.5, 1}});
  expect_segments(contour_segments(c, 0.25), {{0.25, 0, 0.25, 0.5}, {0.25, 0.5, 0.25, 1}});
  EXPECT_TRUE(contour_segments(c, 1.5).empty());
  EXPECT_TRUE(contour_segments(c, -0.5).empty());

  // f = 2x − y on an uneven grid: every end lies on the level's line, one segment per cut cell.
  const auto d = grid(7, 5, -1, 2, 0.5, 3, [](double x, double y) { return 2 * x - y; });
  const auto s = contour_segments(d, 0.3);
  EXPECT_GE(s.size(), 4u);
  for (const auto& e : s) {
    EXPECT_NEAR(2 * e[0] - e[1], 0.3, 1e-12);
    EXPECT_NEAR(2 * e[2] - e[3], 0.3, 1e-12);
  }
}

TEST(Contour, SaddleIsResolvedByTheCentre) {
  // Corners bl = 1, br = 0, tr = 1, tl = 0; the centre's average is 0.5.
  contour_plot c;
  c.nx = c.ny = 2;
  c.values = {1, 0, 0, 1};
  // Level 0.4: the centre is above, so the high corners are joined and the low ones cut off.
  expect_segments(contour_segments(c, 0.4), {{0.6, 0, 1, 0.4}, {0, 0.6, 0.4, 1}});
  // Level 0.6: the centre is below, so the high corners are cut off alone.
  expect_segments(contour_segments(c, 0.6), {{0, 0.4, 0.4, 0}, {0.6, 1, 1, 0.6}});
}

TEST(Contour, NanCellsHaveNoSegments) {
  auto c = grid(3, 3, 0, 1, 0, 1, [](double x, double) { return x; });
  c.values[4] = std::nan("");  // the centre node touches all four cells
  EXPECT_TRUE(contour_segments(c, 0.25).empty());
  c.values[4] = 0.5;
  c.values[0] = std::nan("");  // only the bottom-left cell
  expect_segments(contour_segments(c, 0.25), {{0.25, 0.5, 0.25, 1}});
  c.values[0] = std::numeric_limits<double>::infinity();  // ±∞ is no value either
  expect_segments(contour_segments(c, 0.25), {{0.25, 0.5, 0.25, 1}});
}

TEST(Contour, LevelsAreEquallySpacedFromMinToMax) {
  auto c = grid(4, 3, 0, 1, 0, 1, [](double x, double) { return 2 + 4 * x; });
  c.values[5] = std::nan("");
  c.levels = 4;
  const auto e = contour_levels(c);
  ASSERT_EQ(e.size(), 5u);
  for (std::size_t k = 0; k < e.size(); ++k) EXPECT_NEAR(e[k], 2 + double(k), 1e-12);
}

TEST(Contour, SvgIsSmallAndKeepsItsText) {
  const contour_plot c = bump(200);
  const std::string svg = render(c, image_format::svg);
  ASSERT_TRUE(svg.starts_with("<?xml"));
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_LT(svg.size(), 1'500'000u) << "a path per cell would be several MB";
  std::printf("200 x 200 grid, 2000 points: SVG %zu bytes\n", svg.size());
  // One fill per band and one stroke per level, not one per cell.
  EXPECT_GE(count(svg, "<path"), 10u);
  EXPECT_LT(count(svg, "<path"), 100u);
  // Text is <text>, not glyph outlines: the title, axis labels, scale and every level.
  EXPECT_EQ(count(svg, "glyph"), 0u);
  for (const char* s : {">Gaussian bump</text>", ">density</text>", ">x</text>", ">y</text>",
                        ">data</text>", ">0</text>", ">0.5</text>", ">1</text>"})
    EXPECT_NE(svg.find(s), std::string::npos) << s;
  for (int k = 1; k < 10; ++k)
    EXPECT_NE(svg.find(">0." + std::to_string(k) + "</text>"), std::string::npos) << k;
  // render_for_path picks the format by extension.
  EXPECT_TRUE(render_for_path(c, "out/plot.svg").starts_with("<?xml"));
  EXPECT_TRUE(render_for_path(c, "out/plot.png").starts_with("\x89PNG\r\n\x1a\n"));
  EXPECT_THROW(render_for_path(c, "plot.pdf"), std::invalid_argument);
}

TEST(Contour, ManyPointsAreThinnedAndSaid) {
  contour_plot c = bump(60);
  c.points_label = "obs & <x>";
  c.px.assign(12000, 0.5), c.py.assign(12000, 0.25);
  const std::string svg = render(c, image_format::svg);
  EXPECT_NE(svg.find(">obs &amp; &lt;x&gt; (1 in 3 of 12000)</text>"), std::string::npos);
  c.px.clear(), c.py.clear();
  EXPECT_EQ(render(c, image_format::svg).find("obs"), std::string::npos) << "no legend";
}

// A PNG's pixels, decoded with cairo; pixel(x, y) is 0xRRGGBB.
struct png_image {
  cairo_surface_t* img = nullptr;
  explicit png_image(const std::string& png) {
    struct reader {
      const std::string* bytes;
      std::size_t at;
    } rd{&png, 0};
    img = cairo_image_surface_create_from_png_stream(
        [](void* r, unsigned char* out, unsigned int n) {
          auto* p = static_cast<reader*>(r);
          if (p->at + n > p->bytes->size()) return CAIRO_STATUS_READ_ERROR;
          std::memcpy(out, p->bytes->data() + p->at, n);
          p->at += n;
          return CAIRO_STATUS_SUCCESS;
        },
        &rd);
  }
  ~png_image() { cairo_surface_destroy(img); }
  png_image(const png_image&) = delete;
  png_image& operator=(const png_image&) = delete;
  bool ok() const { return cairo_surface_status(img) == CAIRO_STATUS_SUCCESS; }
  std::uint32_t pixel(int x, int y) const {
    std::uint32_t p;
    std::memcpy(
        &p, cairo_image_surface_get_data(img) + y * cairo_image_surface_get_stride(img) + 4 * x, 4);
    return p & 0xFFFFFFu;
  }
};

// The plot area of an 820 × 680 figure with a title: x ∈ [80, 700], y ∈ [48, 620] pixels.
TEST(Contour, PngBandsAndBlankNanCells) {
  contour_plot c = bump(41);
  c.px.clear(), c.py.clear();
  c.values[20 * 41 + 5] = std::nan("");  // the node at (x, y) = (−2.25, 0)
  const std::string png = render(c, image_format::png);
  ASSERT_TRUE(png.starts_with("\x89PNG\r\n\x1a\n"));
  const png_image im(png);
  ASSERT_TRUE(im.ok());
  EXPECT_EQ(cairo_image_surface_get_width(im.img), 820);
  // x = −2.25 → 80 + 0.125·620 = 157.5 px; y = 0 → 620 − 0.5·572 = 334 px.
  EXPECT_EQ(im.pixel(157, 334), 0xFFFFFFu) << "a NaN node's cells are blank";
  const std::uint32_t peak = im.pixel(390, 334), corner = im.pixel(85, 615);
  EXPECT_NE(peak, corner) << "the peak and the floor are different bands";
  EXPECT_NE(peak, 0xFFFFFFu);
  EXPECT_NE(corner, 0xFFFFFFu);
}

TEST(Contour, ConstantFieldIsOneBandWithoutLines) {
  contour_plot c = grid(30, 20, 0, 3, 0, 2, [](double, double) { return 2.5; });
  c.title = "flat";
  EXPECT_EQ(contour_levels(c), (std::vector<double>{2.5, 2.5}));
  EXPECT_TRUE(contour_segments(c, 2.5).empty());
  const std::string svg = render(c, image_format::svg);
  EXPECT_NE(svg.find(">2.5</text>"), std::string::npos);
  const png_image im(render(c, image_format::png));
  ASSERT_TRUE(im.ok());
  const std::uint32_t first = im.pixel(83, 51);
  EXPECT_NE(first, 0xFFFFFFu);
  for (int y = 51; y < 618; y += 7)
    for (int x = 83; x < 698; x += 11) ASSERT_EQ(im.pixel(x, y), first) << x << ", " << y;
}

TEST(Contour, BadInputThrowsOneLine) {
  const contour_plot ok = grid(3, 3, 0, 1, 0, 1, [](double x, double y) { return x * y; });
  auto expect_bad = [](const contour_plot& c, const std::string& says) {
    try {
      (void)render(c, image_format::svg);
      ADD_FAILURE() << "no throw; expected: " << says;
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(says), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
    EXPECT_THROW(contour_segments(c, 0.5), std::invalid_argument);
  };
  auto c = ok;
  c.nx = 1;
  expect_bad(c, "at least 2 x 2");
  c = ok, c.values.pop_back();
  expect_bad(c, "8 values for a 3 x 3 grid");
  c = ok, c.x1 = c.x0;
  expect_bad(c, "x1 > x0");
  c = ok, c.y1 = std::nan("");
  expect_bad(c, "y1 > y0");
  c = ok, c.levels = 1;
  expect_bad(c, "levels = 1");
  c = ok, c.levels = 51;
  expect_bad(c, "levels = 51");
  c = ok, c.width = 100;
  expect_bad(c, "too small");
  c = ok, c.values.assign(9, std::nan(""));
  expect_bad(c, "no value is finite");
  EXPECT_NO_THROW((void)render(ok, image_format::png));
}

}  // namespace
}  // namespace kf::viz
