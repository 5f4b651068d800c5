// Figures: axis ticks (linear and log), and log axes that drop what they cannot show (values
// ≤ 0) instead of failing or drawing to −inf.
#include "kernelformer/viz/plot.hpp"

#include <cairo.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kf::viz {
namespace {

void expect_ticks(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-9 * std::abs(want[i]) + 1e-12) << i;
}

TEST(Plot, AxisTicksLinearAndLog) {
  expect_ticks(axis_ticks(0.0, 1.0, false, 6), {0.0, 0.2, 0.4, 0.6, 0.8, 1.0});
  expect_ticks(axis_ticks(-3.0, 7.0, false, 6), {-2.0, 0.0, 2.0, 4.0, 6.0});
  // A loss from 0.8 down to 2e-7: one tick per decade inside the range.
  expect_ticks(axis_ticks(2e-7, 0.8, true, 6), {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1});
  // Less than two decades: nice steps of the exponent, still inside the range.
  const auto t = axis_ticks(2.0, 30.0, true, 6);
  ASSERT_GE(t.size(), 2u);
  for (double v : t) {
    EXPECT_GE(v, 2.0 * (1 - 1e-9));
    EXPECT_LE(v, 30.0 * (1 + 1e-9));
  }
}

figure loss_curve() {
  figure f;
  f.title = "loss";
  f.log_y = true;
  series s;
  for (int e = 1; e <= 50; ++e) {
    s.x.push_back(e);
    s.y.push_back(std::pow(10.0, -0.1 * e));  // 0.79 … 1e-5
  }
  f.data = {s};
  return f;
}

TEST(Plot, LogYRendersAndSkipsNonPositiveValues) {
  figure a = loss_curve(), lin = loss_curve();
  lin.log_y = false;
  const std::string sa = render(a, image_format::svg);
  ASSERT_NE(sa.find("<svg"), std::string::npos);
  EXPECT_NE(sa, render(lin, image_format::svg));  // the axis kind changes the drawing
  // Zero and negative values leave a gap on a log axis; the figure still renders, and differs
  // from the complete curve only by the gap.
  figure b = loss_curve();
  b.data[0].y[10] = 0.0;
  b.data[0].y[20] = -1.0;
  const std::string sb = render(b, image_format::svg);
  ASSERT_NE(sb.find("<svg"), std::string::npos);
  EXPECT_NE(sa, sb);
  // Nothing drawable at all: the default range, no exception.
  figure c = loss_curve();
  for (double& y : c.data[0].y) y = 0.0;
  EXPECT_NO_THROW((void)render(c, image_format::png));
}

// The legend goes to the corner where it hides the fewest data marks.
TEST(Plot, LegendAvoidsTheData) {
  figure f;
  series pts{series::kind::points, {}, {}, {}, "data", kBlue, 3, 1};
  for (int i = 0; i <= 100; ++i) {  // a rising line: the top left and bottom right stay empty
    pts.x.push_back(i);
    pts.y.push_back(i);
  }
  f.data.push_back(pts);
  EXPECT_EQ(legend_corner(f), corner::top_left);
  // A line with two vertices, neither in a corner, crossing the top right: its segment counts.
  figure g;
  g.data.push_back({series::kind::line, {20, 100}, {100, 100}, {}, "fit", kOrange, 2, 1});
  g.data.push_back({series::kind::points, {0}, {0}, {}, "", kBlue, 3, 1});
  EXPECT_EQ(legend_corner(g), corner::top_left);
  // Data only along the bottom: the default, top right.
  figure h;
  h.data.push_back({series::kind::line, {0, 50, 100}, {0, 0.1, 0}, {}, "flat", kGreen, 2, 1});
  h.data.push_back({series::kind::points, {0}, {10}, {}, "", kBlue, 3, 1});
  EXPECT_EQ(legend_corner(h), corner::top_right);
  // Every corner full: the first of the emptiest, and a figure without labels still renders.
  figure e;
  e.data.push_back(
      {series::kind::points, {0, 0, 100, 100, 100}, {0, 100, 0, 100, 100}, {}, "p", kBlue, 3, 1});
  EXPECT_EQ(legend_corner(e), corner::top_left);
  EXPECT_FALSE(render(e, image_format::svg).empty());
}

// A heatmap is one embedded image in an SVG, not a <path> per cell (seed 003's attention figure,
// 29,801 cells, was 7 MB of paths), and its cells keep their colours: equal values paint equal
// pixels at the cells' centres, different values different ones, NaN cells the white background.
TEST(Plot, HeatmapCellsAreOneImageAndKeepTheirColours) {
  heatmap h;
  h.rows = 150;
  h.cols = 200;  // 760 × 680 pixels: the plot area 600 × 600, cells 3 × 4 pixels
  for (int i = 0; i < h.rows; ++i)
    for (int j = 0; j < h.cols; ++j) h.values.push_back((i * 7 + j * 3) % 11);
  h.values[5 * 200 + 5] = std::nan("");
  const std::string svg = render(h, image_format::svg);
  std::size_t images = 0;
  for (auto at = svg.find("<image"); at != std::string::npos; at = svg.find("<image", at + 1))
    ++images;
  EXPECT_EQ(images, 1u);
  EXPECT_LT(svg.size(), 150'000u) << "a path per cell would be ~3 MB";

  std::string png = render(h, image_format::png);
  struct reader {
    const std::string* bytes;
    std::size_t at;
  } rd{&png, 0};
  cairo_surface_t* img = cairo_image_surface_create_from_png_stream(
      [](void* c, unsigned char* out, unsigned int n) {
        auto* r = static_cast<reader*>(c);
        if (r->at + n > r->bytes->size()) return CAIRO_STATUS_READ_ERROR;
        std::memcpy(out, r->bytes->data() + r->at, n);
        r->at += n;
        return CAIRO_STATUS_SUCCESS;
      },
      &rd);
  ASSERT_EQ(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
  const unsigned char* data = cairo_image_surface_get_data(img);
  const int stride = cairo_image_surface_get_stride(img);
  auto pixel = [&](int i, int j) {  // the centre of cell (i, j), RGB
    const int x = 70 + 3 * j + 1, y = 20 + 4 * i + 2;
    std::uint32_t p;
    std::memcpy(&p, data + y * stride + 4 * x, 4);
    return p & 0xFFFFFFu;
  };
  EXPECT_EQ(pixel(5, 5), 0xFFFFFFu) << "a NaN cell is blank";
  for (int i = 0; i < h.rows; i += 7)
    for (int j = 1; j < h.cols; j += 13) {
      const double v = h.values[static_cast<std::size_t>(i * 200 + j)];
      const double w = h.values[static_cast<std::size_t>(i * 200 + j - 1)];
      if ((i == 5 && (j == 5 || j == 6)) || std::isnan(v) || std::isnan(w)) continue;
      EXPECT_NE(pixel(i, j), pixel(i, j - 1)) << i << "," << j;  // neighbours differ by 3 (mod 11)
      // The same value 11 columns on (i*7 + j*3 repeats every 11 j): the same colour.
      if (j + 11 < h.cols) {
        EXPECT_EQ(pixel(i, j), pixel(i, j + 11)) << i << "," << j;
      }
    }
  cairo_surface_destroy(img);
}

}  // namespace
}  // namespace kf::viz
