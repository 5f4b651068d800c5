#include "kernelformer/model/saved_smoother.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "model/saved_fields.hpp"

namespace kf::model {
namespace {

std::string method_text(regression_method m) {
  return m == regression_method::nw             ? "nw"
         : m == regression_method::local_linear ? "local_linear"
                                                : "knn";
}

using detail::saved_bandwidths;
using detail::saved_names;

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  detail::saved_fail(name, what);
}

regression_method method_of(const std::string& text, const std::string& name) {
  if (text == "nw") return regression_method::nw;
  if (text == "local_linear") return regression_method::local_linear;
  if (text == "knn") return regression_method::knn;
  fail(name,
       "metadata 'method' is '" + checkpoint_quote(text) + "' (expected nw, local_linear or knn)");
}

}  // namespace

std::string saved_smoother_encode(const regression_fit& fit,
                                  const std::vector<std::string>& x_names,
                                  const std::string& y_name, const std::string& trained_by) {
  const regression_spec& s = fit.spec;
  std::string h;
  for (double v : s.bandwidth) h += (h.empty() ? "" : ",") + fmt::format("{:.17g}", v);
  const std::map<std::string, std::string> meta = {
      {"kind", "smoother"},
      {"method", method_text(s.method)},
      {"kernel", kernel_format(kernel_spec(s.kernel))},
      {"bandwidth", h},
      {"k", std::to_string(s.k)},
      {"knn_weights", s.knn_distance_weights ? "distance" : "uniform"},
      {"exact", s.exact ? "true" : "false"},
      {"x_names", nlohmann::json(x_names).dump()},
      {"y_name", y_name},
      {"criterion", std::string(bandwidth_criterion_name(fit.criterion))},
      {"route", std::string(fit.route.name())},
      {"trained_by", trained_by}};
  checkpoint_tensor x{"x", {fit.x.rows(), fit.x.cols()}, checkpoint_dtype::f64, {}, {}, {}};
  x.values_f64.assign(fit.x.values().begin(), fit.x.values().end());
  checkpoint_tensor y{"y", {static_cast<index>(fit.y.size())}, checkpoint_dtype::f64, {}, fit.y,
                      {}};
  const nn::parameters<float> none;
  return checkpoint_encode(none, meta, {x, y});
}

bool saved_smoother_is(const checkpoint& ck) {
  const auto it = ck.metadata.find("kind");
  return it != ck.metadata.end() && it->second == "smoother";
}

saved_smoother saved_smoother_read(const checkpoint& ck, const std::string& name) {
  if (!saved_smoother_is(ck)) fail(name, "not a saved smoother (metadata kind is not 'smoother')");
  const checkpoint_tensor* x = ck.find("x");
  const checkpoint_tensor* y = ck.find("y");
  if (x == nullptr || y == nullptr) fail(name, "a saved smoother needs tensors 'x' and 'y'");
  if (x->dtype != checkpoint_dtype::f64 || y->dtype != checkpoint_dtype::f64 ||
      x->shape.size() != 2 || y->shape.size() != 1 || x->shape[0] != y->shape[0] ||
      x->shape[0] < 1 || x->shape[1] < 1)
    fail(name, "tensors 'x' (F64, n x d) and 'y' (F64, n) do not match");
  saved_smoother s;
  const auto& m = ck.metadata;
  try {
    s.spec.method = method_of(checkpoint_metadata_get(m, "method"), name);
    const std::string kernel = checkpoint_metadata_get(m, "kernel");
    try {
      const kernel_spec k = kernel_parse(kernel);
      if (k.is_product()) throw std::invalid_argument("a product kernel");
      s.spec.kernel = k.first;
    } catch (const std::invalid_argument&) {
      fail(name, "metadata 'kernel' is '" + checkpoint_quote(kernel) + "' (not a kernel kf knows)");
    }
    s.spec.bandwidth = saved_bandwidths(checkpoint_metadata_get(m, "bandwidth"), name);
    s.spec.k = checkpoint_metadata_index(m, "k", 0, index(1) << 40);
    s.spec.knn_distance_weights = checkpoint_metadata_get(m, "knn_weights") == "distance";
    s.spec.exact = checkpoint_metadata_bool(m, "exact");
    s.x_names = saved_names(checkpoint_metadata_get(m, "x_names"), name, x->shape[1]);
    s.y_name = checkpoint_metadata_get(m, "y_name");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    if (what.rfind(name + ":", 0) == 0) throw;
    fail(name, what);
  }
  for (const char* key : {"criterion", "route", "trained_by"})
    if (m.count(key))
      (key[0] == 'c' ? s.criterion : key[0] == 'r' ? s.route : s.trained_by) = m.at(key);
  const bool by_column = s.spec.bandwidth.size() == static_cast<std::size_t>(x->shape[1]);
  if (s.spec.method != regression_method::knn && !by_column && s.spec.bandwidth.size() != 1)
    fail(name, fmt::format("metadata 'bandwidth' has {} values for {} columns",
                           s.spec.bandwidth.size(), x->shape[1]));
  s.x = matrix<double>(x->shape[0], x->shape[1]);
  std::copy(x->values_f64.begin(), x->values_f64.end(), s.x.data());
  s.y = y->values_f64;
  return s;
}

regression_fit saved_smoother_fit(saved_smoother s) {
  s.spec.per_point = false;  // predictions need no per-point diagnostics
  return regression_fit_data(s.spec, std::move(s.x), std::move(s.y), bandwidth_criterion::fixed);
}

}  // namespace kf::model
