// Local polynomial regression for numpy (regression/local_poly.hpp): a fit (the bandwidth chosen
// for the degree-p fit of the function) kept as an opaque LocalPolyFit, and m̂^(ν) with standard
// errors at new points. What LocalPolynomialRegressor (kernelformer/regression.py) calls.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>

#include "common.hpp"
#include "kernelformer/regression/local_poly.hpp"

namespace kf::py_bind {
namespace {

std::vector<double> column_of(const py::array& a, const char* what) {
  const auto c = as_c<double>(a, what);
  if (c.ndim() != 1)
    throw std::invalid_argument(fmt::format("{} must be 1-D, got {} dimensions", what, c.ndim()));
  return std::vector<double>(c.data(), c.data() + c.shape(0));
}

py::array_t<bool> defined_array(const std::vector<unsigned char>& v) {
  py::array_t<bool> a(static_cast<py::ssize_t>(v.size()));
  bool* p = a.mutable_data();
  for (std::size_t i = 0; i < v.size(); ++i) p[i] = v[i] != 0;
  return a;
}

}  // namespace

void bind_local_poly(py::module_& m) {
  py::class_<local_poly_fit, std::shared_ptr<local_poly_fit>>(
      m, "LocalPolyFit", "A fitted local polynomial (opaque): local_poly_predict reads it.");
  m.def(
      "local_poly_fit_data",
      [](const kernel_spec& kernel, int degree, int derivative, double bandwidth,
         bandwidth_criterion criterion, bool exact, const py::array& x0, const py::array& y0,
         int threads) {
        if (kernel.is_product())
          throw std::invalid_argument("local polynomial: takes a single kernel, not a product");
        local_poly_spec spec;
        spec.kernel = kernel.first;
        spec.degree = degree;
        spec.derivative = derivative;
        spec.bandwidth = bandwidth;
        spec.exact = exact;
        std::vector<double> x = column_of(x0, "X"), y = column_of(y0, "y");
        auto f = std::make_shared<local_poly_fit>();
        {
          py::gil_scoped_release nogil;
          thread_scope scope(resolve_threads(threads));
          *f = local_poly_fit_data(spec, std::move(x), std::move(y), criterion);
        }
        py::dict d;
        d["bandwidth"] = f->spec.bandwidth;
        d["criterion"] = bandwidth_criterion_name(f->criterion);
        d["criterion_value"] = f->criterion_value;
        d["at_search_boundary"] = f->at_search_boundary;
        d["search_evaluations"] = f->search_evaluations;
        py::list curve;
        for (const auto& p : f->curve) curve.append(py::make_tuple(p.scale, p.bandwidth, p.value));
        d["curve"] = curve;
        d["df"] = f->df;
        d["rss"] = f->rss;
        d["r2"] = f->r2;
        d["sigma2"] = f->sigma2;
        d["loo_cv"] = f->loo_cv;
        d["gcv"] = f->gcv;
        d["aicc"] = f->aicc;
        d["undefined"] = f->undefined;
        d["route"] = f->route;
        d["route_why"] = f->why;
        d["fit"] = f;
        return d;
      },
      py::arg("kernel"), py::arg("degree"), py::arg("derivative"), py::arg("bandwidth"),
      py::arg("criterion"), py::arg("exact"), py::arg("x"), py::arg("y"), py::arg("threads") = 0,
      "Fits a 1-D local polynomial of `degree`, reporting its `derivative`: the bandwidth given "
      "(criterion fixed) or by silverman, scott, loo_cv, gcv, aicc of the function's fit. A dict: "
      "bandwidth, criterion, criterion_value, curve, df, rss, r2, sigma2, loo_cv, gcv, aicc, "
      "undefined, route, route_why, fit (opaque).");
  m.def(
      "local_poly_predict",
      [](const std::shared_ptr<local_poly_fit>& f, const py::array& xq0, int threads) {
        const std::vector<double> xq = column_of(xq0, "X");
        local_poly_prediction p;
        {
          py::gil_scoped_release nogil;
          thread_scope scope(resolve_threads(threads));
          p = local_poly_predict(*f, xq);
        }
        return py::make_tuple(to_numpy(std::move(p.fit)), to_numpy(std::move(p.se)),
                              defined_array(p.defined), p.undefined);
      },
      py::arg("fit"), py::arg("xq"), py::arg("threads") = 0,
      "(value, se, defined, undefined count) of the fit's derivative at xq; 0 where undefined.");
}

}  // namespace kf::py_bind
