// .npy: byte-for-byte agreement with numpy's own files, round trips, and clear errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/npy.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

std::string tmp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kf_test_npy_" + name)).string();
}

TEST(Npy, EncodesExactlyAsNumpyDoes) {
  const std::string path = std::string(KF_FIXTURES_DIR) + "/seed001_x.npy";
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
  std::string fort = good;
  fort.replace(fort.find("False"), 5, "True ");
  expect_error(fort, "Fortran");
  std::string three = good;
  three.replace(three.find("(3, 2)"), 6, "(3,2,1)");
  expect_error(three, "dimensions");
  EXPECT_THROW(io::npy_read("/nonexistent/x.npy"), std::runtime_error);
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
