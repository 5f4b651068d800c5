// kernelformer/model/saved_density.hpp — a fitted density estimate (kf kde --save) as a
// safetensors file: its data, kernel, chosen bandwidth per column and route, so that
// `kf predict --model` (and Python's kernelformer.load_model) give the density at new points,
// equal to what `kf kde --at` gives there.
//
//   const std::string bytes = saved_density_encode(fit, {"x"}, "kf kde data.csv …");
//   saved_density s = saved_density_read(model::checkpoint_load("kde.safetensors"), path);
//   std::vector<double> f = kde_evaluate(saved_density_fit(s), points);
//
// Tensor: "x" (F64, n × d), the data. Metadata: kind "density", kernel (kernel_format),
// bandwidth (per column, comma-separated, 17 digits), exact (true | false), x_names (a JSON
// array), criterion (how the bandwidth was chosen, for display), route, trained_by. As a saved
// smoother, the estimate is its data: 8 bytes per point and column.
#pragma once

#include <string>
#include <vector>

#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/regression/kde.hpp"

namespace kf::model {

struct saved_density {
  any_kernel kernel = kernel_gaussian{};
  std::vector<double> bandwidth;  // per column
  bool exact = false;
  matrix<double> x;
  std::vector<std::string> x_names;
  std::string criterion, route, trained_by;
};

// The file's bytes (write them with io::write_file_atomic).
std::string saved_density_encode(const kde_fit& fit, const std::vector<std::string>& x_names,
                                 const std::string& trained_by);
// Reads a loaded checkpoint; throws std::runtime_error naming `name` (the path) and the field at
// fault.
saved_density saved_density_read(const checkpoint& ck, const std::string& name);
// Whether a loaded checkpoint is a saved density (metadata kind "density").
bool saved_density_is(const checkpoint& ck);
// The estimate fitted again with its saved bandwidth (no search): the fit kf kde had.
kde_fit saved_density_fit(const saved_density& s);

}  // namespace kf::model
