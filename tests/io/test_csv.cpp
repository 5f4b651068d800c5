// CSV: headers or not, comments, column selection, and errors that name file, line and column.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "kernelformer/io/atomic_file.hpp"
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
  expect_error("x,y\n1,\n", "blank; --na drop");
  expect_error("x,x\n1,2\n", "'x' appears twice (columns 1 and 2)");
  expect_error("x,,y\n1,2,3\n", "column 2 has an empty name");
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

// As spreadsheets write it: a UTF-8 byte-order mark and CRLF line ends change nothing.
TEST(Csv, ByteOrderMarkAndCrlf) {
  const auto with_header = io::csv_parse("\xEF\xBB\xBFx,y\r\n1,2\r\n3,4\r\n", "t.csv");
  EXPECT_EQ(with_header.names, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(with_header.rows(), 2);
  const auto no_header = io::csv_parse(
      "\xEF\xBB\xBF"
      "1,2\r\n3,4\r\n",
      "t.csv");
  ASSERT_EQ(no_header.rows(), 2) << "the first data row survives the mark";
  EXPECT_EQ(no_header.columns[0][0], 1.0);
  EXPECT_EQ(no_header.columns[1][1], 4.0);
}

// Only the requested columns are parsed: the others may hold text.
TEST(Csv, SelectedColumnsOnly) {
  io::csv_options opt;
  opt.columns = {"y", "x"};
  const auto t = io::csv_parse("name,x,y\nalpha,1,2\n\"b, c\",3,4\n", "t.csv", opt);
  EXPECT_EQ(t.names, (std::vector<std::string>{"y", "x"}));
  EXPECT_EQ(t.columns[0], (std::vector<double>{2, 4}));
  EXPECT_EQ(t.columns[1], (std::vector<double>{1, 3}));
  opt.columns = {"z"};
  try {
    io::csv_parse("x,y\n1,2\n", "data.csv", opt);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no column named 'z'; columns are: x, y"),
              std::string::npos)
        << e.what();
  }
}

TEST(Csv, DropBlankRows) {
  io::csv_options opt;
  opt.columns = {"x", "y"};
  opt.drop_blank = true;
  const auto t = io::csv_parse("x,y,note\n1,2,\n,3,a\n4,,b\n5,6,c\n", "t.csv", opt);
  EXPECT_EQ(t.columns[0], (std::vector<double>{1, 5}));
  EXPECT_EQ(t.columns[1], (std::vector<double>{2, 6}));
  EXPECT_EQ(t.dropped_rows, 2);
}

// --na drop skips a row for every spelling of a missing value (blank, NA, N/A, NaN, any case);
// without it, the error says the cell is a missing value and names the option.
TEST(Csv, DropMissingValuesSpelledAnyWay) {
  io::csv_options opt;
  opt.columns = {"x", "y"};
  opt.drop_blank = true;
  const auto t = io::csv_parse("x,y\n1,2\nNA,3\n4,nan\n5,N/A\n6,NaN\n7,\n8,9\n", "t.csv", opt);
  EXPECT_EQ(t.columns[0], (std::vector<double>{1, 8}));
  EXPECT_EQ(t.dropped_rows, 5);
  try {
    io::csv_parse("x,y\n1,2\n3,NA\n", "t.csv");
    FAIL() << "NA accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("line 3, column 'y': 'NA' is not a number (a missing "
                                         "value; --na drop skips such rows)"),
              std::string::npos)
        << e.what();
  }
}

// The separator is detected from the first line: a comma if it has one, else a tab, else a
// semicolon (quoted cells may hold it); csv_options::separator forces one.
TEST(Csv, SemicolonAndTabSeparatedFilesAreRead) {
  for (const char* text : {"x;y\n1;2\n3;4\n", "x\ty\n1\t2\n3\t4\n", "\"x\";\"y\"\n1;2\n3;4\n"}) {
    const auto t = io::csv_parse(text, "t.csv");
    ASSERT_EQ(t.names, (std::vector<std::string>{"x", "y"})) << text;
    EXPECT_EQ(t.columns[1], (std::vector<double>{2, 4})) << text;
  }
  io::csv_options labels;
  labels.text_columns = {"name"};
  const auto q = io::csv_parse("name;v\n\"a;b\";1\n", "t.csv", labels);
  EXPECT_EQ(q.text[0][0], "a;b");
  io::csv_options comma;
  comma.separator = ',';
  const auto one = io::csv_parse("x;y\n1\n", "t.csv", comma);  // one column named "x;y"
  EXPECT_EQ(one.names, std::vector<std::string>{"x;y"});
  // A decimal comma under semicolons: a clear error naming the cell.
  EXPECT_THROW(io::csv_parse("x;y\n1,5;2\n", "t.csv"), std::runtime_error);
}

// A series' gaps: blank, NA, N/A and NaN read as NaN with missing_as_nan (infinities stay
// errors); record_lines gives each row's line in the file (comments and blank lines skipped).
TEST(Csv, MissingValuesAsNanAndLineNumbers) {
  io::csv_options opt;
  opt.columns = {"y"};
  opt.missing_as_nan = true;
  opt.record_lines = true;
  const auto t = io::csv_parse("t,y\n1,2\n# note\n2,\n\n3,NA\n4,n/a\n5,nan\n6,7\n", "t.csv", opt);
  const auto& y = t.columns[0];
  ASSERT_EQ(y.size(), 6u);
  EXPECT_EQ(y[0], 2);
  for (int i = 1; i <= 4; ++i) EXPECT_TRUE(std::isnan(y[std::size_t(i)])) << i;
  EXPECT_EQ(y[5], 7);
  EXPECT_EQ(t.lines, (std::vector<index>{2, 4, 6, 7, 8, 9}));
  EXPECT_THROW(io::csv_parse("y\n1\ninf\n", "t.csv", opt), std::runtime_error);
  EXPECT_THROW(io::csv_parse("y,z\n1,2\n,3\n", "t.csv"), std::runtime_error);  // the default
}

// Messages quote at most ~80 characters of a cell, a name or the column list.
TEST(Csv, MessagesAreBounded) {
  const std::string big(1'000'000, '7');
  for (const std::string& text : {"x,y\n1," + big + "z\n", big + "x,y\n1,2\n1\n"}) {
    try {
      io::csv_parse(text, "data.csv");
      ADD_FAILURE();
    } catch (const std::runtime_error& e) {
      EXPECT_LT(std::string(e.what()).size(), 300u);
    }
  }
  std::string many = "c0";
  for (int c = 1; c < 100'000; ++c) many += ",c" + std::to_string(c);
  std::string ones = "1";
  for (int c = 1; c < 100'000; ++c) ones += ",1";
  const auto t = io::csv_parse(many + "\n" + ones + "\n", "wide.csv");
  EXPECT_EQ(t.names.size(), 100'000u);
  try {
    t.column("nope");
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u);
    EXPECT_NE(std::string(e.what()).find("(99988 more)"), std::string::npos) << e.what();
  }
}

// Through the mapped reader, a file of several 8 MiB release windows parses exactly.
TEST(Csv, MappedReadOfALargeFile) {
  const std::string path = (std::filesystem::temp_directory_path() / "kf_test_csv_large.csv");
  std::string text = "i,half\n";
  for (int i = 0; i < 1'500'000; ++i)
    text += std::to_string(i) + "," + std::to_string(i / 2.0) + "\n";
  io::write_file_atomic(path, text);
  const auto t = io::csv_read(path);
  std::remove(path.c_str());
  ASSERT_EQ(t.rows(), 1'500'000);
  EXPECT_EQ(t.columns[0][1'234'567], 1'234'567.0);
  EXPECT_EQ(t.columns[1][1'234'567], 617'283.5);
  EXPECT_EQ(t.columns[0].capacity(), 1'500'002u) << "columns sized once by the line count";
}

// A pipe cannot be mapped: it is read into memory instead (kf smooth <(generate) works).
TEST(Csv, ReadsFromAPipe) {
  const std::string fifo = (std::filesystem::temp_directory_path() / "kf_test_csv_fifo").string();
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo) << "x,y\n1,2\n3,4\n"; });
  const auto t = io::csv_read(fifo);
  writer.join();
  std::remove(fifo.c_str());
  EXPECT_EQ(t.columns[1], (std::vector<double>{2, 4}));
}

TEST(Csv, EncodeRoundTrips) {
  const std::string text = io::csv_encode({"a", "b"}, {{0.1, 1e-300}, {2.0, -3.25}});
  EXPECT_EQ(text, "a,b\n0.1,2\n1e-300,-3.25\n");
  const auto t = io::csv_parse(text, "rt.csv");
  EXPECT_EQ(t.columns[0][1], 1e-300);
}

// Every split of a file into 1..7 parts: the parts' rows, concatenated in part order, are the
// whole file's (with a header, without one, with comments, blank lines, CRLF and a BOM, with and
// without a final newline), the lines recorded are the file's, and each row is read once.
TEST(Csv, PartsConcatenateToTheWholeFile) {
  const std::string texts[] = {
      "x,y\n1,2\n3,4\n5,6\n7,8\n9,10\n11,12\n13,14\n",
      "1,2\n3,4\n# note\n\n5,6\r\n7,8\n9,10",
      "\xEF\xBB\xBF# c\n\nx,y\r\n1,2\r\n\r\n3,4\r\n5,6",
      "x,y\n1,2\n",
  };
  for (const auto& text : texts) {
    io::csv_options whole_opt;
    whole_opt.record_lines = true;
    const auto whole = io::csv_parse(text, "t.csv", whole_opt);
    for (int parts = 1; parts <= 7; ++parts) {
      std::vector<double> a, b;
      std::vector<index> lines;
      for (int part = 0; part < parts; ++part) {
        io::csv_options opt = whole_opt;
        opt.part = part;
        opt.parts = parts;
        const auto t = io::csv_parse(text, "t.csv", opt);
        EXPECT_EQ(t.names, whole.names) << parts;
        a.insert(a.end(), t.columns[0].begin(), t.columns[0].end());
        b.insert(b.end(), t.columns[1].begin(), t.columns[1].end());
        lines.insert(lines.end(), t.lines.begin(), t.lines.end());
      }
      EXPECT_EQ(a, whole.columns[0]) << parts << " parts of " << text;
      EXPECT_EQ(b, whole.columns[1]) << parts << " parts of " << text;
      EXPECT_EQ(lines, whole.lines) << parts << " parts of " << text;
    }
  }
}

// An error in a later part names the file's line, as the whole file's read does.
TEST(Csv, APartsErrorNamesTheFilesLine) {
  const std::string text = "x,y\n1,2\n3,4\n5,6\n7,8\n9,oops\n11,12\n";
  for (int part = 0; part < 3; ++part) {
    io::csv_options opt;
    opt.part = part;
    opt.parts = 3;
    try {
      io::csv_parse(text, "data.csv", opt);
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("line 6, column 'y'"), std::string::npos) << e.what();
    }
  }
  io::csv_options owner;  // bytes [11, 22) of 33: line 6 starts at byte 20
  owner.part = 1;
  owner.parts = 3;
  EXPECT_THROW(io::csv_parse(text, "data.csv", owner), std::runtime_error);
}

}  // namespace
}  // namespace kf
