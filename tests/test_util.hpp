// Shared test helpers: seeded random matrices and norm-aware elementwise comparison that prints
// the worst entry and a few pairs on failure.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <string>

#include "kernelformer/tensor.hpp"

namespace kf::test {

template <class T>
matrix<T> random_matrix(index r, index c, std::uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  matrix<T> m(r, c);
  for (index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(u(rng));
  return m;
}

// |x − ref| ≤ atol + rtol·|ref| elementwise.
template <class A, class B>
::testing::AssertionResult all_close(const_matrix_view<A> x, const_matrix_view<B> ref, double rtol,
                                     double atol) {
  if (x.rows != ref.rows || x.cols != ref.cols)
    return ::testing::AssertionFailure()
           << "shape " << x.rows << "x" << x.cols << " vs " << ref.rows << "x" << ref.cols;
  double worst = 0;
  index wi = -1, wj = -1, bad = 0;
  std::ostringstream pairs;
  for (index i = 0; i < x.rows; ++i)
    for (index j = 0; j < x.cols; ++j) {
      const double a = double(x(i, j)), b = double(ref(i, j));
      const double diff = std::abs(a - b);
      const bool ok = diff <= atol + rtol * std::abs(b) && std::isfinite(a) == std::isfinite(b);
      if (!ok) {
        if (bad < 4) pairs << " (" << i << "," << j << "): " << a << " vs " << b << ";";
        ++bad;
      }
      if (!(diff <= worst)) {
        worst = diff;
        wi = i;
        wj = j;
      }
    }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " entries differ; max |diff| = " << worst
                                       << " at (" << wi << "," << wj << ");" << pairs.str();
}

template <class A, class B>
::testing::AssertionResult all_close(const matrix<A>& x, const matrix<B>& ref, double rtol,
                                     double atol) {
  return all_close(x.cview(), ref.cview(), rtol, atol);
}

}  // namespace kf::test
