// Internal: everything a tiled route prepares once per call (the kernel resolved into factors,
// the scaled inputs, one argument engine per factor, bounding boxes for compact kernels, the
// dropout mask) and the per-thread scratch tiles.
#pragma once

#include <omp.h>

#include <cstdint>
#include <limits>
#include <new>
#include <optional>
#include <type_traits>
#include <variant>
#include <vector>

#include "kernelformer/smooth.hpp"
#include "smooth/common.hpp"
#include "smooth/tiles/arg_engine.hpp"
#include "smooth/tiles/box_index.hpp"
#include "smooth/tiles/tile_sizes.hpp"

namespace kf::detail::tiles {

template <class T>
struct plan {
  detail::resolved_kernel rk;
  detail::scaled_inputs<T> in;
  const_matrix_view<T> v;
  matrix<T> vt;  // V transposed (dv × m) when dv ≤ kNarrowDv: contiguous value columns
  const mask* msk = nullptr;
  std::vector<arg_engine<T>> engines;              // one per kernel factor
  std::optional<arg_engine<T>> dist;               // |q − k|² on all columns (radius, top-k)
  std::vector<std::optional<box_index<T>>> boxes;  // per factor (compact ones)
  std::optional<box_index<T>> dist_box;            // for the radius mask
  std::vector<double> support;                     // per factor: max |q − k|² with K > 0
  detail::dropout_mask drop;                       // weight dropout (inactive by default)
  index n = 0, m = 0, d = 0, dv = 0;
  int threads = 1;
  // K = 1 / (1 + c·|q − k|²) alone (cauchy; rational quadratic with α = 1): the forward may
  // take the ratio form (weight_tile's `ratio`), 0 for other kernels.
  double ratio_c = 0;

  plan(const_matrix_view<T> q, const_matrix_view<T> k, const_matrix_view<T> vv, bool check_v,
       const kernel_spec& kern, const mask& mk, const smooth_options& opt)
      : rk(detail::resolve(kern, q.cols, std::is_same_v<T, float>)), v(vv), msk(&mk) {
    detail::validate_inputs(q, k, vv, check_v, mk, opt, rk);
    in = detail::scale_inputs(q, k, opt);
    n = q.rows;
    m = k.rows;
    d = q.cols;
    dv = vv.cols;
    drop = detail::dropout_mask(opt, m);
    if (dv <= kNarrowDv && !(dv == 1 && vv.ld == 1)) {
      vt = matrix<T>(dv, m);
      for (index j = 0; j < m; ++j)
        for (index c = 0; c < dv; ++c) vt(c, j) = vv(j, c);
    }
    for (const auto& f : rk.factors) {
      engines.emplace_back(f.arg, f.c0, f.c1, in.q, in.k);
      if (f.compact) {
        boxes.emplace_back(box_index<T>(in.k, f.c0, f.c1));
        const double h = kernel_param(f.kern);
        support.push_back(h * h);
      } else {
        boxes.emplace_back();
        support.push_back(std::numeric_limits<double>::infinity());
      }
    }
    const bool single_sqdist_all = !rk.spec.is_product() && rk.factors[0].arg == kernel_arg::sqdist;
    if ((mk.needs_distance() || mk.topk_k() > 0) && !single_sqdist_all)
      dist.emplace(kernel_arg::sqdist, 0, d, in.q, in.k);
    if (mk.needs_distance()) dist_box.emplace(in.k, 0, d);
    threads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
    if (!rk.spec.is_product()) {
      if (const auto* c = std::get_if<kernel_cauchy>(&rk.factors[0].kern))
        ratio_c = 1.0 / (c->bandwidth * c->bandwidth);
      else if (const auto* r = std::get_if<kernel_rational_quadratic>(&rk.factors[0].kern);
               r && r->alpha == 1.0)
        ratio_c = 1.0 / (2 * r->bandwidth * r->bandwidth);
    }
  }
  // Value column c, contiguous (dv ≤ kNarrowDv).
  const T* value_column(index c) const { return vt.size() == 0 ? v.data : vt.data() + c * m; }
  const arg_engine<T>& dist_engine() const { return dist ? *dist : engines[0]; }
  // Query rows per forward tile: large tiles amortize packing K and V over more rows (at
  // n = 4096: 346 ms with 256 rows vs 478 ms with 64), smaller ones keep both threads busy on
  // short problems. A function of n only, so results do not depend on the thread count.
  index forward_rows() const { return n >= 1024 ? kBq : (n >= 256 ? 128 : 64); }
  index backward_rows() const { return std::min(forward_rows(), kBqBackward); }
  index key_blocks() const { return (m + kBk - 1) / kBk; }
};

// Per-thread scratch for one query block.
// Tile rows start on Eigen's packet alignment (kBk is a multiple of the packet size), so the
// vectorized exp never peels a scalar head whose length would depend on malloc's address —
// results are bit-reproducible run to run and across thread counts.
template <class T>
struct aligned_allocator {
  using value_type = T;
  static constexpr std::align_val_t align{64};
  aligned_allocator() = default;
  template <class U>
  aligned_allocator(const aligned_allocator<U>&) {}  // NOLINT(google-explicit-constructor)
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), align)); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, align); }
  bool operator==(const aligned_allocator&) const { return true; }
};
template <class T>
using aligned_vector = std::vector<T, aligned_allocator<T>>;

template <class T>
struct scratch {
  aligned_vector<T> s[2], w, r2, p, g;
  aligned_vector<T> keep;           // one row of weight-dropout factors (0 or 1/(1 − rate))
  std::vector<float> kpack, vpack;  // one tile's keys and values, packed (see packed_panels)
  std::vector<std::uint8_t> allowed;
  std::vector<double> qlo, qhi;
  explicit scratch(index) {
    for (auto& x : s) x.assign(kBq * kBk, T(0));
    w.assign(kBq * kBk, T(0));
    r2.assign(kBq * kBk, T(0));
    p.assign(kBq * kBk, T(0));
    g.assign(kBq * kBk, T(0));
    keep.assign(kBk, T(0));
    allowed.assign(kBq * kBk, 1);
  }
};

}  // namespace kf::detail::tiles
