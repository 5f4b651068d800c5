// libFuzzer target: the .npy reader (header parse, shape checks, conversion to a matrix).
#include <cstdint>
#include <string_view>

#include "fuzz_common.hpp"
#include "kernelformer/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  kf::fuzz::expect_clean([&] {
    const kf::io::npy_array a = kf::io::npy_parse(bytes, "fuzz.npy");
    const kf::matrix<float> m = a.to_matrix<float>();
    if (m.rows() != a.rows() || m.cols() != a.cols()) std::abort();
  });
  kf::fuzz::expect_clean([&] { (void)kf::io::npy_parse_header(bytes, "fuzz.npy"); });
  return 0;
}
