#include "common.hpp"

#include <fmt/format.h>

#include <cmath>

#include "kernelformer/io/csv.hpp"

namespace kf::cli {

void require_extension(const std::string& path, const std::string& option,
                       std::initializer_list<const char*> exts) {
  std::string list;
  for (const char* e : exts) {
    if (path.size() >= std::string(e).size() && path.ends_with(e)) return;
    list += (list.empty() ? "" : " or ") + std::string(e);
  }
  throw user_error(fmt::format("{} {}: expected a {} file", option, path, list));
}

loaded_array load_array(const std::string& path, const std::string& what) {
  require_extension(path, what, {".npy", ".csv"});
  loaded_array a;
  a.path = path;
  if (path.ends_with(".csv")) {
    a.data = io::csv_read(path).to_matrix<double>();  // csv_read already rejects non-finite cells
    return a;
  }
  const io::npy_array arr = io::npy_read(path);
  a.dtype = arr.dtype;
  a.data = arr.to_matrix<double>();
  if (a.data.size() == 0) throw user_error(fmt::format("{}: the array is empty", path));
  for (index i = 0; i < a.data.rows(); ++i)
    for (index c = 0; c < a.data.cols(); ++c)
      if (!std::isfinite(a.data(i, c)))
        throw user_error(fmt::format("{}: row {}, column {} is {}; inputs must be finite", path, i,
                                     c, a.data(i, c)));
  return a;
}

template <class T>
std::string encode_output(const std::string& path, const_matrix_view<T> a) {
  if (path.ends_with(".npy")) return io::npy_encode<T>(a);
  std::vector<std::string> names;
  std::vector<std::vector<double>> cols(static_cast<std::size_t>(a.cols));
  for (index c = 0; c < a.cols; ++c) {
    names.push_back(fmt::format("c{}", c));
    for (index i = 0; i < a.rows; ++i) cols[static_cast<std::size_t>(c)].push_back(double(a(i, c)));
  }
  return io::csv_encode(names, cols);
}

template std::string encode_output<float>(const std::string&, const_matrix_view<float>);
template std::string encode_output<double>(const std::string&, const_matrix_view<double>);

}  // namespace kf::cli
