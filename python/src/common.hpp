// The binding's shared helpers: numpy arrays in (used in place when they are C-contiguous of the
// right dtype, converted once otherwise, and counted), numpy arrays out (owning their buffer, no
// copy), the thread setting, and running a loop over batch items on OpenMP threads.
#pragma once

#include <omp.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf::py_bind {

namespace py = pybind11;

template <class T>
using carray = py::array_t<T, py::array::c_style | py::array::forcecast>;

// Inputs that had to be converted (dtype or layout) since import: the zero-copy test's hook.
inline std::atomic<long> input_copies{0};
// The thread setting (kernelformer.set_num_threads); 0 means OpenMP's default.
inline std::atomic<int> thread_setting{0};
inline int default_threads = 1;  // OMP_NUM_THREADS or the core count, at import

inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const int t = thread_setting.load();
  return t > 0 ? t : default_threads;
}

// While computing on this OS thread, OpenMP regions and OpenBLAS's own use `threads`.
class thread_scope {
 public:
  explicit thread_scope(int threads) : saved_(omp_get_max_threads()) {
    omp_set_num_threads(threads);
  }
  ~thread_scope() { omp_set_num_threads(saved_); }
  thread_scope(const thread_scope&) = delete;
  thread_scope& operator=(const thread_scope&) = delete;

 private:
  int saved_;
};

// Real numbers only: float (any width) and integers are taken; bool, complex, object, strings
// and dates are a TypeError naming the argument.
inline void check_real_dtype(const py::array& a, const char* what) {
  const char kind = a.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u')
    throw py::type_error(std::string(what) + " has dtype " + std::string(py::str(a.dtype())) +
                         ": expected real numbers (float32 or float64 are used in place; "
                         "integers and other floats are converted)");
}

// The array as C-contiguous T: the same object when it already is one, else one converted copy.
template <class T>
carray<T> as_c(const py::array& a, const char* what) {
  check_real_dtype(a, what);
  if (py::array_t<T, py::array::c_style>::check_(a)) return py::reinterpret_borrow<carray<T>>(a);
  ++input_copies;
  auto c = carray<T>::ensure(a);
  if (!c) throw py::error_already_set();
  return c;
}

inline bool is_dtype(const py::array& a, char kind, py::ssize_t size) {
  return a.dtype().kind() == kind && a.itemsize() == size;
}

// A new C-contiguous array of this shape; zero-filled if asked.
template <class T>
py::array_t<T> new_array(const std::vector<py::ssize_t>& shape, bool zero = false) {
  py::array_t<T> a(shape);
  if (zero && a.size() > 0) std::fill(a.mutable_data(), a.mutable_data() + a.size(), T(0));
  return a;
}

// A std::vector handed to numpy without a copy (the array owns it).
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>({static_cast<py::ssize_t>(heap->size())}, {sizeof(T)}, heap->data(), owner);
}

// The 2-D view of batch item b of a C-contiguous array (..., rows, cols).
template <class T>
const_matrix_view<T> item_view(const carray<T>& a, index b) {
  const auto nd = a.ndim();
  const index rows = static_cast<index>(a.shape(nd - 2)),
              cols = static_cast<index>(a.shape(nd - 1));
  return {a.data() + b * rows * cols, rows, cols};
}
template <class T>
matrix_view<T> item_view_mut(py::array_t<T>& a, index b) {
  const auto nd = a.ndim();
  const index rows = static_cast<index>(a.shape(nd - 2)),
              cols = static_cast<index>(a.shape(nd - 1));
  return {a.mutable_data() + b * rows * cols, rows, cols};
}

// Runs fn(b) for b in [0, nb) on `threads` OpenMP threads; rethrows the first exception.
// Call without the GIL.
template <class Fn>
void parallel_items(index nb, int threads, Fn&& fn) {
  if (threads <= 1 || nb <= 1) {
    for (index b = 0; b < nb; ++b) fn(b);
    return;
  }
  std::exception_ptr err;
  std::mutex mu;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (index b = 0; b < nb; ++b) {
    try {
      fn(b);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!err) err = std::current_exception();
    }
  }
  if (err) std::rethrow_exception(err);
}

// Runs fn(b, threads_for_item) for b in [0, nb): across the items, each single-threaded, when
// there are enough of them to share the threads evenly (as the attention layer does over heads);
// otherwise one item after the other, each on all `threads`. Call without the GIL.
template <class Fn>
void for_each_item(index nb, int threads, Fn&& fn) {
  const bool across = threads > 1 && nb >= threads && (nb % threads == 0 || nb >= 4 * threads);
  if (across)
    parallel_items(nb, threads, [&](index b) { fn(b, 1); });
  else
    for (index b = 0; b < nb; ++b) fn(b, threads);
}

void bind_smooth(py::module_& m);
void bind_regression(py::module_& m);
void bind_classifier(py::module_& m);
void bind_local_poly(py::module_& m);
void bind_mixed(py::module_& m);

}  // namespace kf::py_bind
