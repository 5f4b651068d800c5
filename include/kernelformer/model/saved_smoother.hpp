// kernelformer/model/saved_smoother.hpp — a fitted smoother (kf smooth --save) as a safetensors
// file: the training data and everything that fixes the fit, so that `kf predict --model` gives
// the fit and its standard errors at new points, equal to what `kf smooth --at` gives there.
//
//   const std::string bytes = saved_smoother_encode(fit, {"x"}, "y", "kf smooth data.csv …");
//   saved_smoother s = saved_smoother_read(model::checkpoint_load("fit.safetensors"), path);
//   regression_prediction p = regression_predict(saved_smoother_fit(s), points);
//
// Tensors: "x" (F64, n × d) and "y" (F64, n), the data the smoother was fitted on. Metadata:
// kind "smoother", method (nw | local_linear | knn), kernel (kernel_format), bandwidth (the
// chosen values, comma-separated, 17 digits), k, knn_weights (uniform | distance), exact
// (true | false), x_names (a JSON array), y_name, criterion (how the bandwidth was chosen, for
// display), route, and trained_by. A nonparametric smoother *is* its data: the file grows with n
// (16 bytes per point and column: 10^6 points in 1-D, 32 MB). Refitting with the saved
// bandwidth costs one fit, no search (the binned route at 10^6 points: well under a second).
#pragma once

#include <string>
#include <vector>

#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/regression/smoother.hpp"

namespace kf::model {

struct saved_smoother {
  regression_spec spec;  // with the saved bandwidth
  matrix<double> x;
  std::vector<double> y;
  std::vector<std::string> x_names;
  std::string y_name, criterion, route, trained_by;
};

// The file's bytes (write them with io::write_file_atomic).
std::string saved_smoother_encode(const regression_fit& fit,
                                  const std::vector<std::string>& x_names,
                                  const std::string& y_name, const std::string& trained_by);
// Reads a loaded checkpoint; throws std::runtime_error naming `name` (the path) and the field at
// fault (kind, shapes, a bandwidth that is not positive and finite, an unknown kernel, …).
saved_smoother saved_smoother_read(const checkpoint& ck, const std::string& name);
// Whether a loaded checkpoint is a saved smoother (metadata kind "smoother").
bool saved_smoother_is(const checkpoint& ck);
// The smoother fitted again with its saved bandwidth (no search): the fit kf smooth had.
regression_fit saved_smoother_fit(saved_smoother s);

}  // namespace kf::model
