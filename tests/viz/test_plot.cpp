// Figures: axis ticks (linear and log), and log axes that drop what they cannot show (values
// ≤ 0) instead of failing or drawing to −inf.
#include "kernelformer/viz/plot.hpp"

#include <gtest/gtest.h>

#include <cmath>
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

}  // namespace
}  // namespace kf::viz
