// Internal: one kernel factor's argument tile S (q·k for dot kernels, |q − k|² for distance
// kernels) for a (query block, key block) tile — by GEMM, by the expansion on centered copies, by
// direct differences for narrow factors, or from keys packed for the register tiles.
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "detail/blas.hpp"
#include "detail/tile_kernel.hpp"
#include "kernelformer/kernels.hpp"
#include "smooth/tiles/tile_sizes.hpp"

namespace kf::detail::tiles {

// Computes one kernel factor's argument tile S (rows × cols, row stride kBk) on columns [c0, c1).
template <class T>
struct arg_engine {
  kernel_arg arg = kernel_arg::dot;
  index c0 = 0, c1 = 0;
  bool direct = false;          // sqdist by direct differences
  const_matrix_view<T> qv, kv;  // the arrays the GEMMs read (column block, or centered copies)
  matrix<T> qcen, kcen;         // sqdist expansion: centered on the key mean
  std::vector<T> qn, kn;        // their squared norms
  matrix<T> kt;                 // direct: keys transposed, (c1 − c0) × m

  arg_engine(kernel_arg kind, index col0, index col1, const_matrix_view<T> q,
             const_matrix_view<T> k)
      : arg(kind), c0(col0), c1(col1) {
    const index df = c1 - c0;
    qv = q.block(0, c0, q.rows, df);
    kv = k.block(0, c0, k.rows, df);
    if (arg == kernel_arg::dot) return;
    if (df <= kDirectMaxD) {
      direct = true;
      kt = matrix<T>(df, k.rows);
      for (index j = 0; j < k.rows; ++j)
        for (index c = 0; c < df; ++c) kt(c, j) = kv(j, c);
      return;
    }
    // Row by row over contiguous columns, so the loops vectorize (element by element through
    // the views' accessors, this took 6% of a gaussian attention forward at n = 1024).
    std::vector<double> mean(static_cast<std::size_t>(df), 0.0);
    double* mu = mean.data();
    for (index j = 0; j < k.rows; ++j) {
      const T* kr = kv.row(j);
#pragma omp simd
      for (index c = 0; c < df; ++c) mu[c] += double(kr[c]);
    }
    for (double& x : mean) x /= double(k.rows);
    auto center = [&](const_matrix_view<T> x, matrix<T>& out, std::vector<T>& norms) {
      out = matrix<T>(x.rows, df);
      norms.assign(static_cast<std::size_t>(x.rows), T(0));
      for (index i = 0; i < x.rows; ++i) {
        const T* xr = x.row(i);
        T* yr = out.data() + i * df;
        double nrm = 0;
#pragma omp simd reduction(+ : nrm)
        for (index c = 0; c < df; ++c) {
          const double y = double(xr[c]) - mu[c];
          yr[c] = static_cast<T>(y);
          nrm += y * y;
        }
        norms[static_cast<std::size_t>(i)] = static_cast<T>(nrm);
      }
    };
    center(qv, qcen, qn);
    center(kv, kcen, kn);
    qv = qcen.cview();
    kv = kcen.cview();
  }

  // dot_scale multiplies a dot tile inside the GEMM (alpha); dot_beta = 1 adds it to s (the
  // forward keeps s zeroed, which spares OpenBLAS's β = 0 pass).
  void tile(T* s, index i0, index bq, index j0, index bk, T dot_scale = T(1),
            T dot_beta = T(0)) const {
    const index df = c1 - c0;
    if (arg == kernel_arg::dot) {
      detail::gemm(false, true, bq, bk, df, dot_scale, qv.row(i0), qv.ld, kv.row(j0), kv.ld,
                   dot_beta, s, kBk);
      return;
    }
    if (direct) {
      for (index a = 0; a < bq; ++a) {
        T* sa = s + a * kBk;
        for (index c = 0; c < df; ++c) {
          const T qc = qv(i0 + a, c);
          const T* kc = kt.data() + c * kt.cols() + j0;
          if (c == 0)
            for (index b = 0; b < bk; ++b) sa[b] = (qc - kc[b]) * (qc - kc[b]);
          else
            for (index b = 0; b < bk; ++b) sa[b] += (qc - kc[b]) * (qc - kc[b]);
        }
      }
      return;
    }
    detail::gemm(false, true, bq, bk, df, T(-2), qv.row(i0), qv.ld, kv.row(j0), kv.ld, T(0), s,
                 kBk);
    add_norms(s, i0, bq, j0, bk);
  }

  // True when the register-tiled route (tile_kernel.hpp) can compute this factor's tiles: a dot
  // product, or a squared distance by its expansion (not by direct differences).
  bool tileable() const { return arg == kernel_arg::dot || !direct; }
  // The factor the route packs keys with: the expansion's −2 (exact, a power of two).
  double packed_key_scale() const { return arg == kernel_arg::dot ? 1.0 : -2.0; }

  // tile() on the register-tiled route: key_panels are this factor's keys (kv) packed as
  // tile_scores's row panels, times packed_key_scale(). Float only (the route's precision).
  void tile_packed(T* s, index i0, index bq, index j0, index bk, const float* key_panels) const {
    if constexpr (std::is_same_v<T, float>) {
      tile_scores(qv.row(i0), qv.ld, bq, c1 - c0, key_panels, panel_count(bk), s, kBk);
      if (arg == kernel_arg::sqdist) add_norms(s, i0, bq, j0, bk);
    }
  }

 private:
  // s ← max(s + |q|² + |k|², 0) on the tile: the expansion of |q − k|², whose rounding can dip
  // below zero.
  void add_norms(T* s, index i0, index bq, index j0, index bk) const {
    const T* kj = kn.data() + j0;
    for (index a = 0; a < bq; ++a) {
      T* sa = s + a * kBk;
      const T qa = qn[static_cast<std::size_t>(i0 + a)];
      for (index b = 0; b < bk; ++b) sa[b] = std::max(sa[b] + qa + kj[b], T(0));
    }
  }
};

}  // namespace kf::detail::tiles
