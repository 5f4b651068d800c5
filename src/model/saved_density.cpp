// A fitted density estimate as a safetensors file (model/saved_density.hpp).
#include "kernelformer/model/saved_density.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "model/saved_fields.hpp"

namespace kf::model {
namespace {

using detail::saved_bandwidths;
using detail::saved_names;

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  detail::saved_fail(name, what);
}

}  // namespace

std::string saved_density_encode(const kde_fit& fit, const std::vector<std::string>& x_names,
                                 const std::string& trained_by) {
  std::string h;
  for (double v : fit.bandwidth) h += (h.empty() ? "" : ",") + fmt::format("{:.17g}", v);
  const std::map<std::string, std::string> meta = {
      {"kind", "density"},
      {"kernel", kernel_format(kernel_spec(fit.kernel))},
      {"bandwidth", h},
      {"exact", fit.options.exact ? "true" : "false"},
      {"x_names", nlohmann::json(x_names).dump()},
      {"criterion", std::string(bandwidth_criterion_name(fit.criterion))},
      {"route", kde_route_name(fit)},
      {"trained_by", trained_by}};
  checkpoint_tensor x{"x", {fit.x.rows(), fit.x.cols()}, checkpoint_dtype::f64, {}, {}, {}};
  x.values_f64.assign(fit.x.values().begin(), fit.x.values().end());
  const nn::parameters<float> none;
  return checkpoint_encode(none, meta, {x});
}

bool saved_density_is(const checkpoint& ck) {
  const auto it = ck.metadata.find("kind");
  return it != ck.metadata.end() && it->second == "density";
}

saved_density saved_density_read(const checkpoint& ck, const std::string& name) {
  if (!saved_density_is(ck)) fail(name, "not a saved density (metadata kind is not 'density')");
  const checkpoint_tensor* x = ck.find("x");
  if (x == nullptr) fail(name, "a saved density needs tensor 'x'");
  if (x->dtype != checkpoint_dtype::f64 || x->shape.size() != 2 || x->shape[0] < 2 ||
      x->shape[1] < 1)
    fail(name, "tensor 'x' is not F64, n x d with n >= 2");
  saved_density s;
  const auto& m = ck.metadata;
  try {
    const std::string kernel = checkpoint_metadata_get(m, "kernel");
    try {
      const kernel_spec k = kernel_parse(kernel);
      if (k.is_product()) throw std::invalid_argument("a product kernel");
      s.kernel = k.first;
    } catch (const std::invalid_argument&) {
      fail(name, "metadata 'kernel' is '" + checkpoint_quote(kernel) + "' (not a kernel kf knows)");
    }
    s.bandwidth = saved_bandwidths(checkpoint_metadata_get(m, "bandwidth"), name);
    s.exact = checkpoint_metadata_bool(m, "exact");
    s.x_names = saved_names(checkpoint_metadata_get(m, "x_names"), name, x->shape[1]);
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    if (what.rfind(name + ":", 0) == 0) throw;
    fail(name, what);
  }
  if (s.bandwidth.size() != static_cast<std::size_t>(x->shape[1]))
    fail(name, fmt::format("metadata 'bandwidth' has {} values for {} columns", s.bandwidth.size(),
                           x->shape[1]));
  for (const char* key : {"criterion", "route", "trained_by"})
    if (m.count(key))
      (key[0] == 'c' ? s.criterion : key[0] == 'r' ? s.route : s.trained_by) = m.at(key);
  s.x = matrix<double>(x->shape[0], x->shape[1]);
  std::copy(x->values_f64.begin(), x->values_f64.end(), s.x.data());
  return s;
}

kde_fit saved_density_fit(const saved_density& s) {
  kde_options o;
  o.exact = s.exact;
  return kde_fit_data(s.kernel, s.x.cview(), bandwidth_criterion::fixed, s.bandwidth, {}, o);
}

}  // namespace kf::model
