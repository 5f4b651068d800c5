// .npy: byte-for-byte agreement with numpy's own files, round trips, and clear errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/npy.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

std::string tmp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kf_test_npy_" + name)).string();
}

TEST(Npy, EncodesExactlyAsNumpyDoes) {
  const std::string path = std::string(KF_FIXTURES_DIR).append("/seed001_x.npy");
  const std::string numpy_bytes = io::read_file(path);
  const auto a = io::npy_read(path);
  EXPECT_EQ(a.dtype, io::npy_dtype::f64);
  ASSERT_EQ(a.shape, (std::vector<index>{40}));
  const auto m = a.to_matrix<double>();
  EXPECT_EQ(io::npy_encode<double>(m.cview(), true), numpy_bytes);
}

TEST(Npy, RoundTripFloatAndDouble) {
  const auto f = test::random_matrix<float>(5, 3, 1);
  const auto d = test::random_matrix<double>(4, 7, 2);
  io::npy_write<float>(tmp_path("f.npy"), f.cview());
  io::npy_write<double>(tmp_path("d.npy"), d.cview());
  const auto rf = io::npy_read(tmp_path("f.npy"));
  const auto rd = io::npy_read(tmp_path("d.npy"));
  EXPECT_EQ(rf.dtype, io::npy_dtype::f32);
  EXPECT_EQ(rf.shape, (std::vector<index>{5, 3}));
  EXPECT_EQ(rf.to_matrix<float>().values(), f.values());
  EXPECT_EQ(rd.to_matrix<double>().values(), d.values());
  const std::string bytes = io::read_file(tmp_path("d.npy"));
  EXPECT_EQ((bytes.find('\n') + 1) % 64, 0u) << "data starts on a 64-byte boundary";
  std::remove(tmp_path("f.npy").c_str());
  std::remove(tmp_path("d.npy").c_str());
}

void expect_error(const std::string& bytes, const std::string& needle) {
  try {
    io::npy_parse(bytes, "bad.npy");
    ADD_FAILURE() << "no error for " << needle;
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bad.npy"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

TEST(Npy, ClearErrors) {
  const auto m = test::random_matrix<double>(3, 2, 3);
  const std::string good = io::npy_encode<double>(m.cview());
  expect_error("hello world, not npy", "magic");
  expect_error(good.substr(0, good.size() - 5), "truncated");
  std::string i4 = good;
  i4.replace(i4.find("<f8"), 3, "<i4");
  expect_error(i4, "float32");
  std::string order = good;
  order.replace(order.find("False"), 5, "Maybe");
  expect_error(order, "fortran_order");
  std::string three = good;
  three.replace(three.find("(3, 2)"), 6, "(3,2,1)");
  expect_error(three, "dimensions");
  std::string quoted = good;  // a 200-character dtype is quoted, not echoed whole
  quoted.replace(quoted.find("'<f8'"), 5, "'" + std::string(200, 'x') + "'");
  try {
    io::npy_parse(quoted, "bad.npy");
    ADD_FAILURE() << "no error for a long dtype";
  } catch (const std::runtime_error& e) {
    EXPECT_LT(std::string(e.what()).size(), 200u) << e.what();
  }
  EXPECT_THROW(io::npy_read("/nonexistent/x.npy"), std::runtime_error);
}

// A header whose shape wraps, or promises more than the file holds, is refused before anything
// is allocated (the product is computed with overflow checks, never modulo 2^64).
TEST(Npy, ShapesThatWrapOrExceedTheFileAreRefused) {
  const auto m = test::random_matrix<double>(3, 2, 3);
  const std::string good = io::npy_encode<double>(m.cview());
  auto with_shape = [&](const std::string& shape) {
    std::string b = good;
    b.replace(b.find("(3, 2)"), 6, shape);
    return b;
  };
  expect_error(with_shape("(3, 6148914691236517206)"), "more values than any file");
  expect_error(with_shape("(6148914691236517206, 3)"), "more values than any file");
  expect_error(with_shape("(99999999999999999999999, 1)"), "too large");
  expect_error(with_shape("(9223372036854775808, 1)"), "too large");
  expect_error(with_shape("(1000, 1000)"), "truncated");
  expect_error(with_shape("(-3, 2)"), "negative");
  expect_error(with_shape("(3, x)"), "malformed shape");
  EXPECT_EQ(io::npy_parse(with_shape("(0, 2)"), "empty.npy").values.size(), 0u);
}

// Layouts numpy writes besides C-order little-endian (python/make_fixture_npy_layouts.py): each
// converts to the same values as the C-order reference.
TEST(Npy, FortranOrderBigEndianAndVersion2ReadAsNumpyDoes) {
  const std::string dir = std::string(KF_FIXTURES_DIR).append("/");
  const auto ref = io::npy_read(dir + "npy_layout_c.npy").to_matrix<double>();
  ASSERT_EQ(ref.rows(), 3);
  ASSERT_EQ(ref.cols(), 4);
  EXPECT_EQ(ref(1, 2), 2.0 + 3.0 / 8);
  for (const char* name : {"npy_layout_fortran.npy", "npy_layout_big_f8_fortran.npy",
                           "npy_layout_big_f4.npy", "npy_layout_v2.npy"}) {
    SCOPED_TRACE(name);
    const io::npy_file f(dir + name);
    EXPECT_FALSE(f.in_place<double>());
    EXPECT_EQ(f.to_matrix<double>().values(), ref.values());  // exact: every value fits float32
    EXPECT_EQ(io::npy_read(dir + name).to_matrix<double>().values(), ref.values());
  }
  const auto vec = io::npy_read(dir + "npy_layout_vector.npy");
  EXPECT_EQ(vec.rows(), 4);
  EXPECT_EQ(vec.cols(), 1);
  const auto scalar = io::npy_read(dir + "npy_layout_scalar.npy");
  EXPECT_EQ(scalar.rows(), 1);
  EXPECT_EQ(scalar.values, std::vector<double>{2.5});
}

// A C-order little-endian file is used in place: the view points into the mapped file.
TEST(Npy, MappedFileIsUsedInPlace) {
  const auto f = test::random_matrix<float>(33, 5, 4);
  io::npy_write<float>(tmp_path("map.npy"), f.cview());
  {
    const io::npy_file file(tmp_path("map.npy"));
    ASSERT_TRUE(file.in_place<float>());
    EXPECT_FALSE(file.in_place<double>());
    const auto v = file.view<float>();
    EXPECT_EQ(v.rows, 33);
    EXPECT_EQ(v.cols, 5);
    for (index i = 0; i < f.size(); ++i) EXPECT_EQ(v.data[i], f.data()[i]);
    EXPECT_EQ(file.to_matrix<double>()(32, 4), double(f(32, 4)));
    EXPECT_THROW(file.view<double>(), std::runtime_error);
  }
  std::remove(tmp_path("map.npy").c_str());
  EXPECT_THROW(io::npy_file("/nonexistent/x.npy"), std::runtime_error);
  EXPECT_THROW(io::npy_file(std::filesystem::temp_directory_path().string()), std::runtime_error);
}

// A mapped file truncated under the reader ends the process with one line naming the file and
// exit status 1 (the guard's SIGBUS handler), not a crash.
TEST(NpyDeathTest, TruncatedWhileMappedIsAClearError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto f = test::random_matrix<double>(4096, 4, 5);  // 128 KiB: many pages
  const std::string path = tmp_path("trunc.npy");
  io::npy_write<double>(path, f.cview());
  EXPECT_EXIT(
      {
        io::mapped_file_guard();
        const io::npy_file file(path);
        std::filesystem::resize_file(path, 100);
        const auto v = file.view<double>();
        double sum = 0;
        for (index i = 0; i < v.rows; ++i) sum += v(i, 0);
        std::printf("%g\n", sum);
      },
      ::testing::ExitedWithCode(1), "trunc.npy: the file changed size while it was being read");
  std::remove(path.c_str());
}

TEST(AtomicWriter, StreamedStageWritesWholeOrNothing) {
  const std::string p = tmp_path("stream.txt");
  std::remove(p.c_str());
  {
    io::atomic_writer w;
    EXPECT_THROW(w.stage_stream(p,
                                [](std::FILE* f) {
                                  std::fputs("half", f);
                                  throw std::runtime_error("failed midway");
                                  return true;
                                }),
                 std::runtime_error);
  }
  EXPECT_FALSE(std::filesystem::exists(p));
  {
    io::atomic_writer w;
    w.stage_stream(p, [](std::FILE* f) { return std::fputs("whole", f) >= 0; });
    w.commit();
  }
  EXPECT_EQ(io::read_file(p), "whole");
  std::remove(p.c_str());
}

// A temporary left by a process killed mid-write (kill -9: no destructor ran) is removed the next
// time that output is staged; a live process's temporary is kept.
TEST(AtomicWriter, StaleTemporariesOfDeadProcessesAreRemoved) {
  const std::string p = tmp_path("stale.npy");
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string tag(host);
  for (char& c : tag)
    if (c == '/' || c == '.') c = '_';
  const std::string dead = p + ".tmp." + tag + ".999999999.0";  // beyond pid_max: no such process
  const std::string live = p + ".tmp." + tag + ".1.0";          // init is always alive
  const std::string other = p + ".tmp.other-host.999999999.0";  // another machine's: kept
  io::write_file_atomic(dead, "partial");
  io::write_file_atomic(live, "someone else's");
  io::write_file_atomic(other, "another host's");
  io::write_file_atomic(p, "whole");
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(other));
  std::remove(other.c_str());
  EXPECT_EQ(io::read_file(p), "whole");
  std::remove(live.c_str());
  std::remove(p.c_str());
}

TEST(AtomicWriter, NothingLeftBehindWithoutCommit) {
  const std::string p = tmp_path("atomic.txt");
  std::remove(p.c_str());
  {
    io::atomic_writer w;
    w.stage(p, "partial");
  }
  EXPECT_FALSE(std::filesystem::exists(p));
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    EXPECT_EQ(e.path().string().find("kf_test_npy_atomic.txt.tmp"), std::string::npos);
  io::write_file_atomic(p, "whole");
  EXPECT_EQ(io::read_file(p), "whole");
  std::remove(p.c_str());
  EXPECT_THROW(io::write_file_atomic("/nonexistent-dir/x.npy", "x"), std::runtime_error);
}

}  // namespace
}  // namespace kf
