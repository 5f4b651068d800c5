// Mixed data for numpy (regression/mixed_kernel.hpp): Nadaraya-Watson and density estimates on
// product kernels over continuous, unordered and ordered columns (statsmodels' var_type 'c', 'u',
// 'o'), their bandwidths by cross-validation or the normal reference. What
// MixedNadarayaWatsonRegressor and MixedKernelDensity (kernelformer/mixed.py) call.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "common.hpp"
#include "kernelformer/regression/mixed_kernel.hpp"

namespace kf::py_bind {

namespace {

std::vector<double> column_of(const py::array& a, const char* what) {
  const auto c = as_c<double>(a, what);
  if (c.ndim() != 1)
    throw std::invalid_argument(fmt::format("{} must be 1-D, got {} dimensions", what, c.ndim()));
  return std::vector<double>(c.data(), c.data() + c.shape(0));
}

mixed_spec mixed_of(const std::string& var_type, const std::vector<double>& bandwidth) {
  mixed_spec s;
  for (char c : var_type) {
    if (c != 'c' && c != 'u' && c != 'o')
      throw std::invalid_argument(fmt::format(
          "var_type '{}': one letter per column, c (continuous), u (unordered) or o (ordered)",
          var_type));
    s.types.push_back(c == 'c'   ? column_type::continuous
                      : c == 'u' ? column_type::unordered
                                 : column_type::ordered);
  }
  s.bandwidth = bandwidth;
  return s;
}

carray<double> rows_of(const py::array& a, const char* what) {
  auto c = as_c<double>(a, what);
  if (c.ndim() != 2)
    throw std::invalid_argument(
        fmt::format("{} must be 2-D (n, d), got {} dimensions", what, c.ndim()));
  return c;
}

const_matrix_view<double> view_of(const carray<double>& a) {
  return {a.data(), static_cast<index>(a.shape(0)), static_cast<index>(a.shape(1))};
}

}  // namespace

// Mixed data (regression/mixed_kernel.hpp): the product kernels and their CV searches, for
// MixedNadarayaWatsonRegressor and MixedKernelDensity (kernelformer/mixed.py).
void bind_mixed(py::module_& m) {
  m.def(
      "mixed_fit",
      [](const std::string& var_type, const py::array& x0, const py::object& y0,
         const std::string& how, std::vector<double> bandwidth) {
        const carray<double> x = rows_of(x0, "X");
        const bool regression = !y0.is_none();
        std::vector<double> y;
        if (regression) y = column_of(y0.cast<py::array>(), "y");
        mixed_spec s = mixed_of(var_type, bandwidth);
        py::gil_scoped_release nogil;
        int evaluations = 0;
        if (how == "cv") {
          const auto r = regression ? mixed_nw_bandwidth_cv_ls(s, view_of(x), y)
                                    : mixed_density_bandwidth_cv_ml(s, view_of(x));
          s.bandwidth = r.bandwidth;
          evaluations = r.evaluations;
        } else if (how == "normal_reference") {
          s.bandwidth = mixed_normal_reference(s, view_of(x));
          const auto levels = mixed_levels(s, view_of(x));
          for (std::size_t k = 0; k < levels.size(); ++k) {
            if (s.types[k] == column_type::unordered)
              s.bandwidth[k] = std::min(s.bandwidth[k], double(levels[k] - 1) / double(levels[k]));
            if (s.types[k] == column_type::ordered) s.bandwidth[k] = std::min(s.bandwidth[k], 1.0);
          }
        } else if (how != "fixed") {
          throw std::invalid_argument("how must be cv, normal_reference or fixed");
        }
        const double value =
            regression ? mixed_nw_cv_ls(s, view_of(x), y) : mixed_density_cv_ml(s, view_of(x));
        return std::make_tuple(s.bandwidth, value, evaluations);
      },
      py::arg("var_type"), py::arg("x"), py::arg("y"), py::arg("how"),
      py::arg("bandwidth") = std::vector<double>{},
      "(bandwidths, criterion, evaluations): cv (cv_ls for regression, y given; cv_ml for a "
      "density, y None), normal_reference (each lambda kept in its range) or fixed.");
  m.def(
      "mixed_predict",
      [](const std::string& var_type, const std::vector<double>& bandwidth, const py::array& x0,
         const py::object& y0, const py::array& xq0) {
        const carray<double> x = rows_of(x0, "X (training)"), xq = rows_of(xq0, "X");
        const mixed_spec s = mixed_of(var_type, bandwidth);
        if (y0.is_none()) {
          py::gil_scoped_release nogil;
          return mixed_density(s, view_of(x), view_of(xq));
        }
        const std::vector<double> y = column_of(y0.cast<py::array>(), "y");
        py::gil_scoped_release nogil;
        return mixed_nw(s, view_of(x), y, view_of(xq));
      },
      py::arg("var_type"), py::arg("bandwidth"), py::arg("x"), py::arg("y"), py::arg("xq"),
      "The regression (y given; NaN where no point has weight) or the density (y None) at xq.");
}

}  // namespace kf::py_bind
