// Regression and density for numpy: regression_fit_data / regression_evaluate /
// regression_predict (Nadaraya–Watson, local linear, KNN) and kde_fit_data / kde_evaluate, in
// double precision, x as (n, d) and y as (n,). The training data stay with the caller: a
// prediction takes them again (used in place when C-contiguous float64), so a fitted Python
// estimator holds numpy arrays and numbers only and pickles as such.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <stdexcept>

#include "common.hpp"
#include "kernelformer/regression/bandwidth.hpp"
#include "kernelformer/regression/bandwidth_dpi.hpp"
#include "kernelformer/regression/bandwidth_isj.hpp"
#include "kernelformer/regression/cross_validation.hpp"
#include "kernelformer/regression/kde.hpp"
#include "kernelformer/regression/lowess.hpp"
#include "kernelformer/regression/smoother.hpp"

namespace kf::py_bind {
namespace {

carray<double> as_x(const py::array& a, const char* what) {
  if (a.ndim() != 2)
    throw std::invalid_argument(fmt::format(
        "{} must be a 2-D array (n samples, d features), got {} dimensions", what, a.ndim()));
  return as_c<double>(a, what);
}
carray<double> as_y(const py::array& a, const char* what) {
  if (a.ndim() != 1)
    throw std::invalid_argument(
        fmt::format("{} must be a 1-D array (n,), got {} dimensions", what, a.ndim()));
  return as_c<double>(a, what);
}
const_matrix_view<double> view(const carray<double>& x) {
  return {x.data(), static_cast<index>(x.shape(0)), static_cast<index>(x.shape(1))};
}
std::span<const double> span(const carray<double>& y) {
  return {y.data(), static_cast<std::size_t>(y.shape(0))};
}

any_kernel single_kernel(const kernel_spec& k, const char* what) {
  if (k.is_product())
    throw std::invalid_argument(fmt::format("{} takes a single kernel, not a product", what));
  return k.first;
}

py::list curve_list(const std::vector<criterion_point>& curve) {
  py::list out;
  for (const auto& p : curve) out.append(py::make_tuple(p.scale, p.bandwidth, p.value));
  return out;
}

py::array_t<bool> bool_array(const std::vector<unsigned char>& v) {
  py::array_t<bool> a(static_cast<py::ssize_t>(v.size()));
  bool* p = a.mutable_data();
  for (std::size_t i = 0; i < v.size(); ++i) p[i] = v[i] != 0;
  return a;
}

// The bandwidth choice's summary, the same fields in a regression and a density fit.
template <class Fit>
void put_search(py::dict& d, const Fit& f) {
  d["criterion"] = bandwidth_criterion_name(f.criterion);
  d["criterion_value"] = f.criterion_value;
  d["at_search_boundary"] = f.at_search_boundary;
  d["curve"] = curve_list(f.curve);
  d["search_evaluations"] = f.search_evaluations;
}

// The fit's numbers as a dict; the fit itself (its data, route and caches: the neighbor search,
// the binned grids) under "fit", an opaque RegressionFit that regression_predict_fit reuses.
py::dict fit_dict(regression_fit&& f) {
  py::dict d;
  d["bandwidth"] = f.spec.bandwidth;
  d["k"] = f.spec.k;
  put_search(d, f);
  d["fitted"] = to_numpy(std::move(f.fitted));
  d["loo_residuals"] = to_numpy(std::move(f.loo_residuals));
  d["hat_diag"] = to_numpy(std::move(f.hat_diag));
  d["df"] = f.df;
  d["rss"] = f.rss;
  d["r2"] = f.r2;
  d["sigma2"] = f.sigma2;
  d["loo_cv"] = f.loo_cv;
  d["gcv"] = f.gcv;
  d["aicc"] = f.aicc;
  d["undefined"] = f.undefined;
  d["route"] = std::string(f.route.name());
  d["route_why"] = f.route.why;
  d["fit"] = std::make_shared<regression_fit>(std::move(f));
  return d;
}

py::dict criteria_dict(const criterion_values& c) {
  py::dict d;
  d["loo_cv"] = c.loo_cv;
  d["gcv"] = c.gcv;
  d["aicc"] = c.aicc;
  d["df"] = c.df;
  d["rss"] = c.rss;
  d["undefined"] = c.undefined;
  return d;
}

// The density fit's numbers; the fit itself (its data, route and 1-D grid) under "fit", an
// opaque KdeFit that kde_evaluate_fit reuses.
py::dict kde_fit_dict(kde_fit&& f) {
  py::dict d;
  d["bandwidth"] = f.bandwidth;
  put_search(d, f);
  d["route"] = kde_route_name(f);
  d["route_why"] = f.route.why;
  d["fit"] = std::make_shared<kde_fit>(std::move(f));
  return d;
}

// The criteria (BandwidthCriterion, by name) and the rules of thumb: shared by regression and
// density.
void bind_bandwidth(py::module_& m) {
  py::enum_<bandwidth_criterion>(m, "BandwidthCriterion")
      .value("fixed", bandwidth_criterion::fixed)
      .value("silverman", bandwidth_criterion::silverman)
      .value("scott", bandwidth_criterion::scott)
      .value("loo_cv", bandwidth_criterion::loo_cv)
      .value("gcv", bandwidth_criterion::gcv)
      .value("aicc", bandwidth_criterion::aicc)
      .value("cv_ml", bandwidth_criterion::cv_ml)
      .value("cv_ls", bandwidth_criterion::cv_ls)
      .value("sj", bandwidth_criterion::sj)
      .value("sj_dpi", bandwidth_criterion::sj_dpi)
      .value("isj", bandwidth_criterion::isj)
      .value("dpi", bandwidth_criterion::dpi);
  m.def("bandwidth_criterion_parse", &bandwidth_criterion_parse, py::arg("text"),
        "'silverman', 'scott', 'cv', 'gcv', 'aic'/'aicc', 'dpi', 'cv-ml', 'cv-ls', 'sj', 'sj-dpi' "
        "-> BandwidthCriterion.");
  m.def("bandwidth_criterion_name", &bandwidth_criterion_name, py::arg("criterion"));
  m.def(
      "bandwidth_sheather_jones",
      [](py::array_t<double, py::array::c_style | py::array::forcecast> x, bool dpi, index nb,
         double tolerance) {
        const std::span<const double> v(x.data(), static_cast<std::size_t>(x.size()));
        py::gil_scoped_release release;
        return bandwidth_sheather_jones(
            v, dpi ? sj_method::direct_plug_in : sj_method::solve_the_equation, nb, tolerance);
      },
      py::arg("x"), py::arg("dpi") = false, py::arg("nb") = 1000, py::arg("tolerance") = 0.0,
      "R's bw.SJ of a 1-D sample (dpi=True: method='dpi'; tolerance <= 0: R's default).");
  m.def(
      "bandwidth_dpi",
      [](py::array_t<double, py::array::c_style | py::array::forcecast> x,
         py::array_t<double, py::array::c_style | py::array::forcecast> y) {
        const std::span<const double> xv(x.data(), static_cast<std::size_t>(x.size()));
        const std::span<const double> yv(y.data(), static_cast<std::size_t>(y.size()));
        py::gil_scoped_release release;
        return bandwidth_dpi(xv, yv);
      },
      py::arg("x"), py::arg("y"),
      "KernSmooth's dpill: the direct plug-in bandwidth of gaussian local-linear regression.");
  m.def(
      "bandwidth_isj",
      [](py::array_t<double, py::array::c_style | py::array::forcecast> x) {
        const std::span<const double> xv(x.data(), static_cast<std::size_t>(x.size()));
        py::gil_scoped_release release;
        return bandwidth_isj(xv);
      },
      py::arg("x"),
      "The improved Sheather-Jones bandwidth of a 1-D gaussian KDE (Botev et al. 2010), as KDEpy.");
  m.def(
      "bandwidth_rule",
      [](const py::array& x0, bandwidth_criterion rule) {
        const carray<double> x = as_x(x0, "X");
        return bandwidth_rule(view(x), rule);
      },
      py::arg("x"), py::arg("rule"), "Silverman's or Scott's bandwidth per column of x (n, d).");
}

// What to fit: the method and kf::regression_spec.
void bind_spec(py::module_& m) {
  py::enum_<regression_method>(m, "RegressionMethod")
      .value("nw", regression_method::nw)
      .value("local_linear", regression_method::local_linear)
      .value("knn", regression_method::knn);
  py::class_<regression_spec>(m, "RegressionSpec", "What to fit: kf::regression_spec.")
      .def(py::init<>())
      .def_readwrite("method", &regression_spec::method)
      .def_property(
          "kernel", [](const regression_spec& s) { return kernel_spec(s.kernel); },
          [](regression_spec& s, const kernel_spec& k) {
            s.kernel = single_kernel(k, "regression");
          })
      .def_readwrite("bandwidth", &regression_spec::bandwidth)
      .def_readwrite("k", &regression_spec::k)
      .def_readwrite("k_max", &regression_spec::k_max)
      .def_readwrite("knn_distance_weights", &regression_spec::knn_distance_weights)
      .def_readwrite("exact", &regression_spec::exact)
      .def_readwrite("binned_min_n", &regression_spec::binned_min_n)
      .def_readwrite("per_point", &regression_spec::per_point);
}

// k-fold and grouped cross-validation (regression/cross_validation.hpp): the library's seeded
// folds, and CV_K of a smoother at a given bandwidth.
void bind_cross_validation(py::module_& m) {
  m.def(
      "cv_folds_kfold",
      [](index n, index k, std::uint64_t seed) {
        cv_folds f = cv_folds_kfold(n, k, seed);
        return to_numpy(std::move(f.fold_of));
      },
      py::arg("n"), py::arg("k"), py::arg("seed") = 0,
      "The fold of each of n rows for k-fold CV, as `kf smooth --cv kfold:K --cv-seed SEED`.");
  m.def(
      "cv_criterion",
      [](const regression_spec& spec, const py::array& x0, const py::array& y0,
         const py::array_t<index, py::array::c_style | py::array::forcecast>& folds, int threads) {
        const carray<double> x = as_x(x0, "X"), y = as_y(y0, "y");
        const cv_folds f = cv_folds_from_ids(
            std::span<const index>(folds.data(), static_cast<std::size_t>(folds.size())), "");
        py::gil_scoped_release nogil;
        thread_scope scope(resolve_threads(threads));
        return cv_splits(view(x), span(y), f).criterion(spec);
      },
      py::arg("spec"), py::arg("x"), py::arg("y"), py::arg("folds"), py::arg("threads") = 0,
      "CV_K of the smoother spec (its bandwidth or k set) for a fold id per row: the mean squared "
      "held-out residual, each fold refitted on its own route; inf where one is undefined.");
}

// A fold id per row (any integer array) as the library's folds.
std::shared_ptr<const cv_folds> folds_of(const py::object& ids0, const std::string& name) {
  const auto ids = py::array_t<index, py::array::c_style | py::array::forcecast>(ids0);
  return std::make_shared<const cv_folds>(cv_folds_from_ids(
      std::span<const index>(ids.data(), static_cast<std::size_t>(ids.size())), name));
}

// The smoother: fit (bandwidth or k chosen by a criterion), predictions with standard errors,
// the criteria at a given bandwidth, and the route a fit takes.
void bind_smoother(py::module_& m) {
  m.def(
      "regression_fit_data",
      [](regression_spec spec, const py::array& x0, const py::array& y0,
         bandwidth_criterion criterion, int threads, const py::object& folds0,
         const std::string& folds_name) {
        const carray<double> x = as_x(x0, "X"), y = as_y(y0, "y");
        if (!folds0.is_none()) spec.folds = folds_of(folds0, folds_name);
        regression_fit f;
        {
          py::gil_scoped_release nogil;
          thread_scope scope(resolve_threads(threads));
          f = regression_fit_data(spec, view(x), span(y), criterion);
        }
        return fit_dict(std::move(f));
      },
      py::arg("spec"), py::arg("x"), py::arg("y"), py::arg("criterion"), py::arg("threads") = 0,
      py::arg("folds") = py::none(), py::arg("folds_name") = "given folds",
      R"(Fits y on x (n, d): chooses the bandwidth (or k) by the criterion and computes the
diagnostics. Returns a dict: bandwidth, k, criterion, criterion_value, at_search_boundary, curve
[(scale, bandwidth, value)], fitted, loo_residuals, hat_diag (n,), df, rss, r2, sigma2, loo_cv,
gcv, aicc, undefined, route. folds: a fold id per row (int array) for k-fold or grouped CV of
criterion loo_cv (and knn's k = 0) instead of leave-one-out.)");
  m.def(
      "regression_predict",
      [](const regression_spec& spec, const py::array& x0, const py::array& y0,
         const py::array& xq0, double sigma2, int threads) {
        const carray<double> x = as_x(x0, "X (training)"), y = as_y(y0, "y"), xq = as_x(xq0, "X");
        regression_eval e;
        {
          py::gil_scoped_release nogil;
          thread_scope scope(resolve_threads(threads));
          e = regression_evaluate(spec, view(x), span(y), view(xq), false);
        }
        std::vector<double> se(e.fit.size());
        for (std::size_t i = 0; i < se.size(); ++i)
          se[i] = e.defined[i] ? std::sqrt(sigma2 * e.sum_l2[i]) : 0.0;
        return py::make_tuple(to_numpy(std::move(e.fit)), to_numpy(std::move(se)),
                              bool_array(e.defined), e.undefined);
      },
      py::arg("spec"), py::arg("x"), py::arg("y"), py::arg("xq"), py::arg("sigma2"),
      py::arg("threads") = 0,
      "The fitted smoother at xq (nq, d): (fit, standard error sigma*sqrt(sum_j l_j^2), defined, "
      "undefined count). Where no training point has weight, defined is False and fit is 0.");
  m.def(
      "regression_criteria",
      [](const regression_spec& spec, const py::array& x0, const py::array& y0, int threads) {
        const carray<double> x = as_x(x0, "X"), y = as_y(y0, "y");
        criterion_values c;
        {
          py::gil_scoped_release nogil;
          thread_scope scope(resolve_threads(threads));
          c = regression_criteria(spec, view(x), span(y));
        }
        return criteria_dict(c);
      },
      py::arg("spec"), py::arg("x"), py::arg("y"), py::arg("threads") = 0,
      "The criteria (loo_cv, gcv, aicc, df, rss, undefined) at spec's bandwidth.");
  py::class_<regression_fit, std::shared_ptr<regression_fit>>(
      m, "RegressionFit", "A fitted smoother (opaque): its data, route and caches.")
      .def_property_readonly("route", [](const regression_fit& f) { return f.route.name(); });
  m.def(
      "regression_predict_fit",
      [](const regression_fit& fit, const py::array& xq0, double sigma2, int threads) {
        const carray<double> xq = as_x(xq0, "X");
        regression_prediction p;
        {
          py::gil_scoped_release nogil;
          thread_scope scope(resolve_threads(threads));
          p = regression_predict(fit, view(xq));
        }
        std::vector<double> se(p.fit.size());
        for (std::size_t i = 0; i < se.size(); ++i)
          se[i] = p.defined[i] ? std::sqrt(sigma2 * p.sum_l2[i]) : 0.0;
        return py::make_tuple(to_numpy(std::move(p.fit)), to_numpy(std::move(se)),
                              bool_array(p.defined), p.undefined);
      },
      py::arg("fit"), py::arg("xq"), py::arg("sigma2"), py::arg("threads") = 0,
      "The fitted smoother at xq (nq, d) on its route, reusing its neighbor search and binned "
      "grid: (fit, standard error sigma*sqrt(sum_j l_j^2), defined, undefined count).");
}

// Density: the bandwidth choice, the density at query rows on the fit's route, and ∫K.
void bind_kde(py::module_& m) {
  m.def(
      "kde_fit_data",
      [](const kernel_spec& kern, const py::array& x0, bandwidth_criterion criterion,
         std::vector<double> bandwidth, bool exact, int threads) {
        const any_kernel k = single_kernel(kern, "density");
        const carray<double> x = as_x(x0, "X");
        kde_options o;
        o.exact = exact;
        kde_fit f;
        {
          py::gil_scoped_release nogil;
          thread_scope scope(resolve_threads(threads));
          f = kde_fit_data(k, view(x), criterion, std::move(bandwidth), {}, o);
        }
        return kde_fit_dict(std::move(f));
      },
      py::arg("kernel"), py::arg("x"), py::arg("criterion"),
      py::arg("bandwidth") = std::vector<double>{}, py::arg("exact") = false,
      py::arg("threads") = 0,
      "Chooses a density bandwidth: a dict with binned, bandwidth (per column), criterion, "
      "criterion_value, at_search_boundary, curve, route.");
  py::class_<kde_fit, std::shared_ptr<kde_fit>>(
      m, "KdeFit", "A fitted density (opaque): its data, bandwidth, route and 1-D grid.")
      .def_property_readonly("route", [](const kde_fit& f) { return kde_route_name(f); });
  m.def(
      "kde_evaluate_fit",
      [](const kde_fit& fit, const py::array& at0, int threads, bool log) {
        const carray<double> at = as_x(at0, "X");
        std::vector<double> dens;
        {
          py::gil_scoped_release nogil;
          thread_scope scope(resolve_threads(threads));
          dens = log ? kde_log_evaluate(fit, view(at)) : kde_evaluate(fit, view(at));
        }
        return to_numpy(std::move(dens));
      },
      py::arg("fit"), py::arg("at"), py::arg("threads") = 0, py::arg("log") = false,
      "The density of a fit at the rows of at (nq, d), on its route (its 1-D grid reused); "
      "log=True: its log, exact in log space where the density underflows.");
  m.def(
      "kernel_integral_1d",
      [](const kernel_spec& k) { return kernel_integral_1d(single_kernel(k, "density")); },
      py::arg("kernel"), "The integral of K(|u|) over the real line at bandwidth 1.");
}

// LOWESS (regression/lowess.hpp): the fit as a dict of numpy arrays and numbers, so the Python
// estimator keeps plain arrays (and pickles as such); predictions interpolate in numpy.
void bind_lowess(py::module_& m) {
  m.def(
      "lowess",
      [](py::array_t<double, py::array::c_style | py::array::forcecast> x,
         py::array_t<double, py::array::c_style | py::array::forcecast> y, double span,
         int iterations, double delta) {
        if (x.ndim() != 1 || y.ndim() != 1)
          throw std::invalid_argument("lowess: x and y must be 1-D arrays");
        const std::span<const double> xs(x.data(), static_cast<std::size_t>(x.size()));
        const std::span<const double> ys(y.data(), static_cast<std::size_t>(y.size()));
        lowess_fit f;
        {
          py::gil_scoped_release release;
          f = lowess(xs, ys, {span, iterations, delta});
        }
        py::dict d;
        d["x"] = py::array_t<double>(static_cast<py::ssize_t>(f.x.size()), f.x.data());
        d["fitted"] =
            py::array_t<double>(static_cast<py::ssize_t>(f.fitted.size()), f.fitted.data());
        d["weights"] =
            py::array_t<double>(static_cast<py::ssize_t>(f.weights.size()), f.weights.data());
        d["order"] = py::array_t<index>(static_cast<py::ssize_t>(f.order.size()), f.order.data());
        d["neighbours"] = f.neighbours;
        d["local_fits"] = f.local_fits;
        d["passes"] = f.passes;
        d["delta"] = f.spec.delta;
        return d;
      },
      py::arg("x"), py::arg("y"), py::arg("span") = 2.0 / 3.0, py::arg("iterations") = 3,
      py::arg("delta") = -1.0,
      "R's lowess of y on x: a dict with the sorted x, the fitted values, the last robustness "
      "weights, the sort order, neighbours, local_fits, passes and the delta used (< 0 given: "
      "1% of the range).");
  m.def(
      "lowess_predict",
      [](py::array_t<double, py::array::c_style | py::array::forcecast> x,
         py::array_t<double, py::array::c_style | py::array::forcecast> y,
         py::array_t<double, py::array::c_style | py::array::forcecast> weights, index neighbours,
         int passes, py::array_t<double, py::array::c_style | py::array::forcecast> at) {
        lowess_fit f;
        f.x.assign(x.data(), x.data() + x.size());
        f.y.assign(y.data(), y.data() + y.size());
        f.weights.assign(weights.data(), weights.data() + weights.size());
        f.neighbours = neighbours;
        f.passes = passes;
        const std::span<const double> q(at.data(), static_cast<std::size_t>(at.size()));
        std::vector<double> out;
        {
          py::gil_scoped_release release;
          out = lowess_predict(f, q);
        }
        return py::array_t<double>(static_cast<py::ssize_t>(out.size()), out.data());
      },
      py::arg("x"), py::arg("y"), py::arg("weights"), py::arg("neighbours"), py::arg("passes"),
      py::arg("at"),
      "The local fits at `at` of a lowess fitted on the sorted x, y with the last robustness "
      "weights (passes > 1) and `neighbours` points a fit.");
}

}  // namespace

void bind_regression(py::module_& m) {
  bind_bandwidth(m);
  bind_spec(m);
  bind_smoother(m);
  bind_cross_validation(m);
  bind_kde(m);
  bind_lowess(m);
}

}  // namespace kf::py_bind
