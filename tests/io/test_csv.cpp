// CSV: headers or not, comments, column selection, and errors that name file, line and column.
#include <gtest/gtest.h>

#include <string>

#include "kernelformer/io/csv.hpp"

namespace kf {
namespace {

TEST(Csv, HeaderCommentsAndSelection) {
  const auto t = io::csv_parse("# a comment\nx, y ,\"z\"\n1,2,3\n\n4,5.5,-6e-1\n", "t.csv");
  EXPECT_EQ(t.names, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(t.rows(), 2);
  const auto m = t.select<double>({"z", "x"});
  EXPECT_EQ(m(1, 0), -0.6);
  EXPECT_EQ(m(1, 1), 4.0);
}

TEST(Csv, NoHeaderGetsGeneratedNames) {
  const auto t = io::csv_parse("1,2\n3,4", "t.csv");
  EXPECT_EQ(t.names, (std::vector<std::string>{"c0", "c1"}));
  EXPECT_EQ(t.to_matrix<float>()(1, 1), 4.0f);
}

void expect_error(const std::string& text, const std::string& needle) {
  try {
    io::csv_parse(text, "data.csv");
    ADD_FAILURE() << "no error, expected " << needle;
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("data.csv"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

TEST(Csv, ErrorsNameFileLineAndColumn) {
  expect_error("x,y\n1,2\n3,abc\n", "line 3, column 'y'");
  expect_error("x,y\n1,2\n3\n", "line 3: 1 cells, expected 2");
  expect_error("x,y\n1,nan\n", "not finite");
  expect_error("x,y\n1,inf\n", "not finite");
  expect_error("x,y\n", "no data rows");
  expect_error("", "no data rows");
  const auto t = io::csv_parse("x,y\n1,2\n", "data.csv");
  try {
    t.column("w");
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("columns are: x, y"), std::string::npos) << e.what();
  }
}

TEST(Csv, EncodeRoundTrips) {
  const std::string text = io::csv_encode({"a", "b"}, {{0.1, 1e-300}, {2.0, -3.25}});
  EXPECT_EQ(text, "a,b\n0.1,2\n1e-300,-3.25\n");
  const auto t = io::csv_parse(text, "rt.csv");
  EXPECT_EQ(t.columns[0][1], 1e-300);
}

}  // namespace
}  // namespace kf
