// FFT sizes for the binned routes' convolutions (regression/binned.cpp, binned2d.cpp).
#pragma once

#include <algorithm>
#include <mutex>

#include "kernelformer/tensor.hpp"

namespace kf::detail {

// FFTW's planner (plan creation and destruction) is not thread-safe: every plan of the library
// is made and destroyed under this one lock (binned.cpp, binned2d.cpp); executing plans is safe.
inline std::mutex& fftw_planner_lock() {
  static std::mutex m;
  return m;
}

// The smallest n' ≥ n whose only prime factors are 2, 3, 5 and 7: FFTW's fast sizes. A
// convolution of a G-cell grid with a kernel of ±L lags needs only P ≥ G + L + 1 for the circular
// transform to equal the linear convolution on the grid; rounding up to a power of two instead
// makes a 1024 + 32 grid 2048 wide (4× the area in 2-D).
inline index fast_fft_size(index n) {
  for (index m = std::max<index>(n, 1);; ++m) {
    index r = m;
    for (index f : {2, 3, 5, 7})
      while (r % f == 0) r /= f;
    if (r == 1) return m;
  }
}

}  // namespace kf::detail
