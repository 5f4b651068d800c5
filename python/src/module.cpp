// kernelformer._kernelformer — the C++ library for Python, nearly one to one.
//
// Kernel (kf::kernel_spec) and Mask (kf::mask) are parsed from the text `kf attend` takes; the
// primitive (bind_smooth.cpp) and the regression and density code (bind_regression.cpp) take
// numpy arrays, use C-contiguous float32/float64 ones in place, and release the GIL while they
// compute. std::invalid_argument (and std::overflow_error) become ValueError with the library's
// message; a wrong dtype is a TypeError. The Pythonic layer (kernelformer/*.py) sits on top.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <stdexcept>

#include "common.hpp"
#include "detail/blas.hpp"
#include "kernelformer/kernels.hpp"
#include "kernelformer/masks.hpp"

namespace kf::py_bind {
namespace {

const char* arg_name(kernel_arg a) {
  return a == kernel_arg::dot ? "dot" : a == kernel_arg::features ? "features" : "distance";
}

void bind_kernel(py::module_& m) {
  py::class_<kernel_spec>(m, "Kernel",
                          "A kernel K(q, k) as the primitive takes it: one kernel, or the product "
                          "A*B of two kernels on the column blocks [0, split) and [split, d).")
      .def_static(
          "parse",
          [](const std::string& text, index split) {
            kernel_spec k = kernel_parse(text);
            k.split = split;
            return k;
          },
          py::arg("text"), py::arg("split") = 0,
          "Parses NAME[:key=value,...] or A*B, as `kf attend --kernel` spells it.")
      .def("format", &kernel_format, "The text form, kernel_parse's inverse (without the split).")
      .def("describe", &kernel_describe, "A short description, e.g. 'gaussian(h=0.5)'.")
      .def_property_readonly("name",
                             [](const kernel_spec& k) {
                               std::string s(kernel_name(k.first));
                               if (k.is_product()) s += "*" + std::string(kernel_name(*k.second));
                               return s;
                             })
      .def_property_readonly("argument",
                             [](const kernel_spec& k) { return arg_name(kernel_arg_of(k.first)); })
      .def_property_readonly(
          "compact",
          [](const kernel_spec& k) { return !k.is_product() && kernel_compact(k.first); })
      .def_property_readonly("is_product", &kernel_spec::is_product)
      .def_property_readonly("split", [](const kernel_spec& k) { return k.split; })
      .def_property_readonly(
          "param", [](const kernel_spec& k) { return kernel_param(k.first); },
          "The first factor's bandwidth (distance kernels) or temperature (dot kernels); 0: auto.")
      .def(
          "with_param",
          [](const kernel_spec& k, double value) {
            kernel_spec c = k;
            kernel_set_param(c.first, value);
            return c;
          },
          py::arg("value"), "A copy with the first factor's parameter set.")
      .def(
          "resolve",
          [](const kernel_spec& k, index d, bool for_float) {
            return kernel_resolve(k, d, for_float);
          },
          py::arg("d"), py::arg("for_float") = false,
          "Resolves 'auto' parameters for feature dimension d and checks every parameter.")
      .def(
          "log_weight",
          [](const kernel_spec& k, double s) {
            if (k.is_product()) throw std::invalid_argument("log_weight: a single kernel only");
            return kernel_log_weight(k.first, s);
          },
          py::arg("s"), "log K at the argument s (q.k for dot kernels, |q - k|^2 otherwise).")
      .def("__repr__",
           [](const kernel_spec& k) {
             return fmt::format("Kernel('{}'{})", kernel_format(k),
                                k.is_product() ? fmt::format(", split={}", k.split) : "");
           })
      .def(
          py::pickle([](const kernel_spec& k) { return py::make_tuple(kernel_format(k), k.split); },
                     [](const py::tuple& t) {
                       kernel_spec k = kernel_parse(t[0].cast<std::string>());
                       k.split = t[1].cast<index>();
                       return k;
                     }));

  m.def(
      "kernel_catalog",
      [] {
        py::list out;
        for (const auto& i : kernel_catalog())
          out.append(
              py::make_tuple(std::string(i.name), std::string(i.doc), arg_name(i.arg), i.compact));
        return out;
      },
      "Every kernel as (name, formula, argument, compact), in the library's order.");
}

void bind_mask(py::module_& m) {
  py::class_<mask>(m, "Mask", "The set filter M(i): which keys j query i may see.")
      .def(py::init<>())
      .def_static("parse", &mask::parse, py::arg("text"),
                  "Parses 'causal&window:8' etc., as `kf attend --mask` spells it.")
      .def_static("none", &mask::none)
      .def_static("causal", &mask::causal, py::arg("offset") = 0)
      .def_static("window", &mask::window, py::arg("left"), py::arg("right"))
      .def_static("key_padding", &mask::key_padding, py::arg("lengths"))
      .def_static("radius", &mask::radius, py::arg("r"))
      .def_static(
          "matrix",
          [](const py::array& allowed) {
            if (allowed.ndim() != 2)
              throw std::invalid_argument(fmt::format(
                  "mask matrix: expected a 2-D (n, m) array, got {} dimensions", allowed.ndim()));
            const auto c =
                py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>::ensure(
                    allowed.attr("astype")("bool").attr("view")("uint8"));
            if (!c) throw py::error_already_set();
            std::vector<std::uint8_t> bits(c.data(), c.data() + c.size());
            return mask::matrix(static_cast<index>(c.shape(0)), static_cast<index>(c.shape(1)),
                                std::move(bits));
          },
          py::arg("allowed"), "A user matrix: query i may see key j where allowed[i, j].")
      .def(
          "topk",
          [](const mask& a, index k, const std::string& by) {
            if (by != "weight" && by != "distance")
              throw std::invalid_argument("mask topk: by = '" + by +
                                          "': expected 'weight' or 'distance'");
            return a.topk(k, by == "weight" ? topk_rank::weight : topk_rank::distance);
          },
          py::arg("k"), py::arg("by") = "weight")
      .def("__and__", [](const mask& a, const mask& b) { return a & b; })
      .def("__or__", [](const mask& a, const mask& b) { return a | b; })
      .def("validate", &mask::validate, py::arg("n"), py::arg("m"))
      .def("describe", &mask::describe)
      .def_property_readonly("is_none", &mask::is_none)
      .def_property_readonly("topk_k", &mask::topk_k)
      .def("__repr__", [](const mask& a) { return "Mask('" + a.describe() + "')"; })
      // Pickled as the text parse() reads. Per-row padding and user matrices have no text form:
      // refused with the way to rebuild them, never pickled into another mask.
      .def(py::pickle(
          [](const mask& a) {
            const std::string text = a.describe();
            if (text.find("per-row") != std::string::npos ||
                text.find("matrix:") != std::string::npos)
              throw py::type_error(
                  "cannot pickle Mask('" + text +
                  "'): per-row padding and user matrices have no text form; pickle the lengths "
                  "or the boolean array and rebuild it with Mask.key_padding(lengths) or "
                  "Mask.matrix(allowed)");
            return py::make_tuple(text);
          },
          [](const py::tuple& t) {
            if (t.size() != 1) throw std::runtime_error("Mask: bad pickle state");
            return mask::parse(t[0].cast<std::string>());
          }));
}

}  // namespace
}  // namespace kf::py_bind

PYBIND11_MODULE(_kernelformer, m) {
  using namespace kf::py_bind;
  m.doc() = "kernelformer's C++ library (the binding; use the kernelformer package on top of it)";
  m.attr("__version__") = KF_VERSION;
  // OpenMP's default as the library sees it: OMP_NUM_THREADS, else the core count. Not
  // omp_get_max_threads() here: a library imported before us may have lowered it on this thread
  // (PyTorch sets its own thread count at import).
  default_threads = omp_get_num_procs();
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env != nullptr && std::atoi(env) > 0)
    default_threads = std::atoi(env);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const std::overflow_error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());  // a kernel log-weight overflowed
    }
  });

  m.def(
      "set_num_threads",
      [](int n) {
        if (n < 0) throw std::invalid_argument(fmt::format("threads = {} must be >= 0", n));
        thread_setting = n;
      },
      py::arg("n"), "Threads for every later call (0: OpenMP's default).");
  m.def(
      "get_num_threads", [] { return resolve_threads(0); },
      "Threads a call uses when it is not given any.");
  m.def(
      "input_copies", [] { return input_copies.load(); },
      "How many input arrays were converted (dtype or layout) since import; C-contiguous "
      "float32/float64 arrays are used in place and do not count.");
  m.def("blas_parallel_mode", &kf::detail::blas_parallel_mode,
        "OpenBLAS's threading model (2: the OpenMP build, the one the library needs).");

  bind_kernel(m);
  bind_mask(m);
  bind_smooth(m);
  bind_regression(m);
  bind_classifier(m);
  bind_local_poly(m);
  bind_mixed(m);
}
