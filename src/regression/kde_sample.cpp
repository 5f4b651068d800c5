// Draws from a fitted kernel density (regression/kde.hpp): a training point chosen uniformly,
// plus the kernel's own noise at the fit's bandwidth — exact draws from the estimate.
#include <fmt/format.h>

#include <random>
#include <stdexcept>
#include <string>

#include "kernelformer/regression/kde.hpp"

namespace kf {

matrix<double> kde_sample(const kde_fit& fit, index n, std::uint64_t seed) {
  if (n < 0) throw std::invalid_argument("kde_sample: a negative number of draws");
  const index rows = fit.x.rows(), d = fit.x.cols();
  if (rows < 1) throw std::invalid_argument("kde_sample: the fit holds no data");
  const std::string name(kernel_name(fit.kernel));
  const bool gaussian = name == "gaussian";
  if (!gaussian && d != 1)
    throw std::invalid_argument(fmt::format(
        "sampling the {} kernel is offered in 1-D only (gaussian in any dimension)", name));
  if (!gaussian && !kernel_compact(fit.kernel) && name != "laplacian" && name != "cauchy")
    throw std::invalid_argument(fmt::format(
        "sampling is not offered for the {} kernel (gaussian, the compact kernels, laplacian, "
        "cauchy)",
        name));
  any_kernel unit = fit.kernel;  // bandwidth 1: the noise is scaled by the fit's below
  kernel_set_param(unit, 1.0);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<index> pick(0, rows - 1);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(-1.0, 1.0), accept(0.0, 1.0);
  std::exponential_distribution<double> exponential;
  std::cauchy_distribution<double> cauchy;
  auto one = [&]() -> double {  // a draw from the unit kernel in 1-D
    if (gaussian) return normal(rng);
    if (name == "laplacian") return (accept(rng) < 0.5 ? -1 : 1) * exponential(rng);
    if (name == "cauchy") return cauchy(rng);
    while (true) {  // compact: K ≤ K(0) = 1 on [−1, 1], accept u with probability K(u)
      const double u = uniform(rng);
      if (accept(rng) < std::exp(kernel_log_weight(unit, u * u))) return u;
    }
  };
  matrix<double> out(n, d);
  for (index i = 0; i < n; ++i) {
    const index c = pick(rng);
    for (index j = 0; j < d; ++j) out(i, j) = fit.x(c, j) + fit.bandwidth[std::size_t(j)] * one();
  }
  return out;
}

}  // namespace kf
