// Uses kernelformer through find_package: three keys, one query, the smoothed value.
#include <kernelformer/smooth.hpp>

#include <cmath>
#include <cstdio>

int main() {
  kf::matrix<double> q(1, 1, {0.0}), k(3, 1, {-1.0, 0.0, 1.0}), v(3, 1, {1.0, 2.0, 3.0}), out(1, 1);
  kf::smooth_forward<double>(out.view(), {}, q.cview(), k.cview(), v.cview(),
                             kf::kernel_gaussian{1.0}, kf::mask::none());
  std::printf("consumer: out = %.6f\n", out(0, 0));
  return std::abs(out(0, 0) - 2.0) < 1e-12 ? 0 : 1;
}
