// Input speed: the CSV reader's parse rate in MB/s of file, and the .npy map (no copy) beside the
// copying read (npy_read: every value into a double vector), in the same run.
//   csv_read/<rows>   io::csv_read of an x,y table (file written once per size; MB/s of file)
//   npy_map/<rows>    io::npy_file + view<float> + a pass over the values (what kf attend does)
//   npy_read/<rows>   io::npy_read: the whole array converted to doubles (the old path)
// KF_BENCH_CSV=FILE times csv_read on that file instead (python/bench_io.py uses it to compare
// with numpy.loadtxt and pandas.read_csv on the same bytes).
//   build/release/bench/bench_io
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/io/npy.hpp"

namespace {

using kf::index;

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kf_bench_io_" + name)).string();
}

// An x,y table like the data: x ~ U(0, 6), y = 2 sin x + N(0, 1), 17 significant digits.
std::string csv_file(index rows) {
  const std::string path = temp("xy_" + std::to_string(rows) + ".csv");
  if (std::filesystem::exists(path)) return path;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(0, 6);
  std::normal_distribution<double> e(0, 1);
  std::string text = "x,y\n";
  char buf[64];
  for (index i = 0; i < rows; ++i) {
    const double x = u(rng);
    std::snprintf(buf, sizeof buf, "%.17g,%.17g\n", x, 2 * std::sin(x) + e(rng));
    text += buf;
  }
  kf::io::write_file_atomic(path, text);
  return path;
}

void BM_csv_read(benchmark::State& st) {
  const char* env = std::getenv("KF_BENCH_CSV");
  const std::string path = env != nullptr ? std::string(env) : csv_file(st.range(0));
  const auto bytes = static_cast<double>(std::filesystem::file_size(path));
  index rows = 0;
  for (auto _ : st) {
    const auto t = kf::io::csv_read(path);
    rows = t.rows();
    benchmark::DoNotOptimize(t.columns.data());
  }
  st.counters["MB_per_s"] =
      benchmark::Counter(bytes / 1e6, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["rows"] = static_cast<double>(rows);
}

std::string npy_file(index rows) {
  const std::string path = temp("q_" + std::to_string(rows) + ".npy");
  if (std::filesystem::exists(path)) return path;
  kf::matrix<float> q(rows, 64);
  std::mt19937 rng(2);
  std::normal_distribution<float> g(0, 1);
  for (float& x : q.values()) x = g(rng);
  kf::io::npy_write<float>(path, q.cview());
  return path;
}

void BM_npy_map(benchmark::State& st) {
  const std::string path = npy_file(st.range(0));
  for (auto _ : st) {
    const kf::io::npy_file f(path);
    const auto v = f.view<float>();
    float s = 0;
    for (index i = 0; i < v.rows * v.cols; ++i) s += v.data[i];
    benchmark::DoNotOptimize(s);
  }
  st.counters["MB_per_s"] =
      benchmark::Counter(static_cast<double>(std::filesystem::file_size(path)) / 1e6,
                         benchmark::Counter::kIsIterationInvariantRate);
}

void BM_npy_read(benchmark::State& st) {
  const std::string path = npy_file(st.range(0));
  for (auto _ : st) {
    const auto a = kf::io::npy_read(path);
    benchmark::DoNotOptimize(a.values.data());
  }
  st.counters["MB_per_s"] =
      benchmark::Counter(static_cast<double>(std::filesystem::file_size(path)) / 1e6,
                         benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_csv_read)->Arg(1'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_npy_map)->Arg(65'536)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_npy_read)->Arg(65'536)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
