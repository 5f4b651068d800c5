// libFuzzer target: the CSV reader, every column and (when the table has a column named "x")
// that column alone with blank rows dropped, as kf smooth --na drop reads it.
#include <cstdint>
#include <string_view>

#include "fuzz_common.hpp"
#include "kernelformer/io/csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kf::fuzz::expect_clean([&] {
    const kf::io::csv_table t = kf::io::csv_parse(text, "fuzz.csv");
    const kf::matrix<double> m = t.to_matrix<double>();
    if (m.rows() != t.rows()) std::abort();
  });
  kf::fuzz::expect_clean([&] {
    kf::io::csv_options o;
    o.columns = {"x"};
    o.drop_blank = true;
    const kf::io::csv_table t = kf::io::csv_parse(text, "fuzz.csv", o);
    (void)t.select<double>({"x"});
  });
  return 0;
}
