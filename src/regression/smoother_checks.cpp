// The data and bandwidth checks every regression route starts from (smoother_routes.hpp).
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "regression/smoother_routes.hpp"

namespace kf {

namespace detail {

void check_regression_data(const_matrix_view<double> x, std::span<const double> y) {
  if (x.rows < 1) throw std::invalid_argument("regression: no data points");
  if (x.cols < 1) throw std::invalid_argument("regression: x has no columns");
  if (static_cast<index>(y.size()) != x.rows)
    throw std::invalid_argument(
        fmt::format("regression: x has {} rows but y has {} values", x.rows, y.size()));
  for (index i = 0; i < x.rows; ++i) {
    for (index c = 0; c < x.cols; ++c)
      if (!std::isfinite(x(i, c)))
        throw std::invalid_argument(fmt::format("regression: x[{}, {}] is not finite", i, c));
    if (!std::isfinite(y[static_cast<std::size_t>(i)]))
      throw std::invalid_argument(fmt::format("regression: y[{}] is not finite", i));
  }
}

// The per-column bandwidths of spec (broadcasting a single value).
std::vector<double> regression_bandwidths(const regression_spec& spec, index d) {
  if (spec.bandwidth.size() != 1 && static_cast<index>(spec.bandwidth.size()) != d)
    throw std::invalid_argument(fmt::format(
        "regression: {} bandwidths given for {} x columns (give one, or one per column)",
        spec.bandwidth.size(), d));
  for (double h : spec.bandwidth)
    if (!(std::isfinite(h) && h > 0))
      throw std::invalid_argument(
          fmt::format("regression: bandwidth {} must be positive and finite", h));
  if (spec.bandwidth.size() == 1)
    return std::vector<double>(static_cast<std::size_t>(d), spec.bandwidth[0]);
  return spec.bandwidth;
}

}  // namespace detail

}  // namespace kf
