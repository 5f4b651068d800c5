// Internal: bounding boxes of key blocks, so compact kernels and radius masks skip the tiles they
// cannot reach.
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

#include "smooth/tiles/tile_sizes.hpp"

namespace kf::detail::tiles {

// Axis-aligned bounding boxes of key blocks (and of a query block) on columns [c0, c1), to skip
// tiles a compact kernel or a radius mask cannot reach.
template <class T>
struct box_index {
  index c0 = 0, c1 = 0;
  std::vector<double> lo, hi;  // per key block, per column

  box_index(const_matrix_view<T> k, index col0, index col1) : c0(col0), c1(col1) {
    const index nb = (k.rows + kBk - 1) / kBk, df = c1 - c0;
    lo.assign(static_cast<std::size_t>(nb * df), std::numeric_limits<double>::infinity());
    hi.assign(static_cast<std::size_t>(nb * df), -std::numeric_limits<double>::infinity());
    for (index j = 0; j < k.rows; ++j)
      for (index c = 0; c < df; ++c) {
        const auto at = static_cast<std::size_t>((j / kBk) * df + c);
        lo[at] = std::min(lo[at], double(k(j, c0 + c)));
        hi[at] = std::max(hi[at], double(k(j, c0 + c)));
      }
  }
  void query_box(const_matrix_view<T> q, index i0, index bq, std::vector<double>& qlo,
                 std::vector<double>& qhi) const {
    const index df = c1 - c0;
    qlo.assign(static_cast<std::size_t>(df), std::numeric_limits<double>::infinity());
    qhi.assign(static_cast<std::size_t>(df), -std::numeric_limits<double>::infinity());
    for (index i = i0; i < i0 + bq; ++i)
      for (index c = 0; c < df; ++c) {
        qlo[static_cast<std::size_t>(c)] =
            std::min(qlo[static_cast<std::size_t>(c)], double(q(i, c0 + c)));
        qhi[static_cast<std::size_t>(c)] =
            std::max(qhi[static_cast<std::size_t>(c)], double(q(i, c0 + c)));
      }
  }
  // Lower bound of |q − k|² over the query box and key block kb.
  double min_sqdist(const std::vector<double>& qlo, const std::vector<double>& qhi,
                    index kb) const {
    const index df = c1 - c0;
    double s = 0;
    for (index c = 0; c < df; ++c) {
      const auto at = static_cast<std::size_t>(kb * df + c);
      const double gap = std::max({0.0, qlo[static_cast<std::size_t>(c)] - hi[at],
                                   lo[at] - qhi[static_cast<std::size_t>(c)]});
      s += gap * gap;
    }
    return s * (1 - 1e-12);  // a hair of slack for rounding at the support edge
  }
};

}  // namespace kf::detail::tiles
