// kf::classify_fit_data / classify_probabilities for the Python classifiers (KernelClassifier,
// KNNClassifier in kernelformer/classification.py): what `kf classify` runs.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "common.hpp"
#include "kernelformer/regression/classifier.hpp"

namespace kf::py_bind {
namespace {

const_matrix_view<double> view2(const carray<double>& x, const char* what) {
  if (x.ndim() != 2)
    throw std::invalid_argument(fmt::format("{} must be a 2-D array (n, d)", what));
  return {x.data(), static_cast<index>(x.shape(0)), static_cast<index>(x.shape(1))};
}

// The spec from the Python side's arguments: method "nw" (a distance kernel, bandwidths: empty
// to choose) or "knn" (k: 0 to choose in 1..k_max), the criterion "log_loss" or "accuracy".
classify_spec make_spec(const std::string& method, const kernel_spec& kernel,
                        const std::vector<double>& bandwidth, index k, index k_max,
                        bool distance_weights, const std::string& criterion) {
  classify_spec s;
  if (method == "nw")
    s.method = classify_method::nw;
  else if (method == "knn")
    s.method = classify_method::knn;
  else
    throw std::invalid_argument("method must be 'nw' or 'knn', not '" + method + "'");
  if (kernel.is_product()) throw std::invalid_argument("the classifier takes a single kernel");
  s.kernel = kernel.first;
  s.bandwidth = bandwidth;
  s.k = k;
  s.k_max = k_max;
  s.knn_distance_weights = distance_weights;
  if (criterion == "log_loss")
    s.criterion = classify_criterion::log_loss;
  else if (criterion == "accuracy")
    s.criterion = classify_criterion::accuracy;
  else
    throw std::invalid_argument("criterion must be 'log_loss' or 'accuracy', not '" + criterion +
                                "'");
  return s;
}

}  // namespace

void bind_classifier(py::module_& m) {
  m.def(
      "classify_fit_data",
      [](const std::string& method, const kernel_spec& kernel, const std::vector<double>& bandwidth,
         index k, index k_max, bool distance_weights, const std::string& criterion,
         const py::array& x0, const std::vector<index>& labels, index num_classes, int threads) {
        const carray<double> x = as_c<double>(x0, "X");
        classify_fit f;
        {
          py::gil_scoped_release nogil;
          thread_scope scope(resolve_threads(threads));
          f = classify_fit_data(
              make_spec(method, kernel, bandwidth, k, k_max, distance_weights, criterion),
              view2(x, "X"), labels, num_classes);
        }
        py::dict d;
        d["bandwidth"] = f.spec.bandwidth;
        d["k"] = f.spec.k;
        d["log_loss"] = f.loo.log_loss;
        d["accuracy"] = f.loo.accuracy;
        d["undefined"] = f.undefined;
        d["at_search_boundary"] = f.at_search_boundary;
        py::list curve;
        for (const auto& p : f.curve) curve.append(py::make_tuple(p.scale, p.bandwidth, p.value));
        d["curve"] = curve;
        return d;
      },
      py::arg("method"), py::arg("kernel"), py::arg("bandwidth"), py::arg("k"), py::arg("k_max"),
      py::arg("distance_weights"), py::arg("criterion"), py::arg("x"), py::arg("labels"),
      py::arg("num_classes"), py::arg("threads") = 0,
      "Chooses the classifier's bandwidth or k by leave-one-out (kf::classify_fit_data): a dict "
      "with bandwidth, k, log_loss, accuracy, undefined, at_search_boundary, curve.");
  m.def(
      "classify_probabilities",
      [](const std::string& method, const kernel_spec& kernel, const std::vector<double>& bandwidth,
         index k, bool distance_weights, const py::array& x0, const std::vector<index>& labels,
         index num_classes, const py::array& xq0, int threads) {
        const carray<double> x = as_c<double>(x0, "X (training)"), xq = as_c<double>(xq0, "X");
        matrix<double> p;
        {
          py::gil_scoped_release nogil;
          thread_scope scope(resolve_threads(threads));
          p = classify_probabilities(
              make_spec(method, kernel, bandwidth, k, k, distance_weights, "log_loss"),
              view2(x, "X (training)"), labels, num_classes, view2(xq, "X"), false);
        }
        py::array_t<double> out(
            {static_cast<py::ssize_t>(p.rows()), static_cast<py::ssize_t>(p.cols())});
        std::copy(p.data(), p.data() + p.rows() * p.cols(), out.mutable_data());
        return out;
      },
      py::arg("method"), py::arg("kernel"), py::arg("bandwidth"), py::arg("k"),
      py::arg("distance_weights"), py::arg("x"), py::arg("labels"), py::arg("num_classes"),
      py::arg("xq"), py::arg("threads") = 0,
      "Class probabilities (nq, C) at the rows of xq (kf::classify_probabilities).");
}

}  // namespace kf::py_bind
