// The per-thread scratch tiles (tiles/plan.hpp), out of line on purpose (parallel_blocks.hpp).
#include "smooth/tiles/parallel_blocks.hpp"

namespace kf::detail::tiles {

template <class T>
scratch<T>& thread_scratch() {
  static thread_local scratch<T> sc(0);
  return sc;
}

template scratch<float>& thread_scratch<float>();
template scratch<double>& thread_scratch<double>();

}  // namespace kf::detail::tiles
