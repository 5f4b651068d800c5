// Internal: operands of the register-tiled routes in the packed layouts of
// detail/tile_kernel.hpp, packed once per call or per tile.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "detail/eigen.hpp"
#include "detail/tile_kernel.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::detail::tiles {

// An operand of the register-tiled route (tile_kernel.hpp) in its packed layout: rows as the
// score kernel's transposed row panels (keys times attention's 1/T, the backward's values), or
// columns as the accumulation kernel's column panels (values; the backward's keys). Packed once
// per call when a call's packed operands fit in kPackOnceBytes together (attention's heads: 2 MiB
// per operand at m = 4096, d = 64); beyond that (n = m = 65,536, …) each tile packs its own rows
// into the thread's buffer, so the call's memory stays O((n + m)·d) with the constant it had.
constexpr std::size_t kPackOnceBytes = std::size_t{8} << 20;

// The route folds 1/T into the packed keys, so a partial sum of q·(k/T) could overflow where the
// GEMM route's q·k, scaled afterwards, would not — and +inf plus −inf would then be a silent NaN
// instead of the overflow error. So the route is taken only when no such sum can leave the float
// range: max|q| · max|k| · d / T ≤ 1e37 (a scan of Q and K, O((n + m)·d)).
inline bool tile_route_fits(const_matrix_view<float> q, const_matrix_view<float> k,
                            double key_scale) {
  auto max_abs = [](const_matrix_view<float> x) {
    // Eigen's vectorized max (a scalar max chain ran at ~3 cycles an element: 2–3% of the
    // attention backward at n = 1024). NaN inputs (only with check_finite off) may make the
    // bound NaN, and the GEMM route is taken; on either route they propagate to the output.
    float mx = 0;
    for (index i = 0; i < x.rows; ++i)
      mx = std::max(mx, Eigen::Map<const Eigen::ArrayXf>(x.row(i), x.cols).abs().maxCoeff());
    return double(mx);
  };
  const double bound = max_abs(q) * max_abs(k) * double(q.cols) * key_scale;
  return std::isfinite(bound) && bound <= 1e37;
}

struct packed_panels {
  const_matrix_view<float> src;
  bool by_rows = true;  // row panels (score kernel) or column panels (accumulation kernel)
  float scale = 1;      // row panels only: packed times this
  bool once = false;
  std::vector<float> all;

  // Floats the packed copy of a rows × cols operand takes.
  static std::size_t floats(index rows, index cols, bool by_rows) {
    return static_cast<std::size_t>(by_rows ? panel_count(rows) * kPanel * cols
                                            : rows * panel_count(cols) * kPanel);
  }
  packed_panels(const_matrix_view<float> x, bool rows, bool pack_once, float row_scale = 1)
      : src(x), by_rows(rows), scale(row_scale), once(pack_once) {
    if (!once) return;
    all.resize(floats(src.rows, src.cols, by_rows));
    pack(src.data, src.rows, all.data(), src.rows * kPanel);
  }
  // Rows [j0, j0 + count) (j0 a multiple of kPanel), packed, and the distance between column
  // panels (column panels only).
  const float* rows(std::vector<float>& buf, index j0, index count, index& stride) const {
    if (once) {
      stride = src.rows * kPanel;
      return all.data() + (by_rows ? j0 * src.cols : j0 * kPanel);
    }
    stride = count * kPanel;
    buf.resize(floats(count, src.cols, by_rows));
    pack(src.row(j0), count, buf.data(), stride);
    return buf.data();
  }
  const float* rows(std::vector<float>& buf, index j0, index count) const {
    index stride = 0;
    return rows(buf, j0, count, stride);
  }

 private:
  void pack(const float* x, index count, float* out, index stride) const {
    if (by_rows)
      pack_row_panels(x, src.ld, count, src.cols, scale, out);
    else
      pack_column_panels(x, src.ld, count, src.cols, out, stride);
  }
};

}  // namespace kf::detail::tiles
