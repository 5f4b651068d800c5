// Internal: the tile machinery shared by the fast forward, backward and top-k paths of the
// smoothing primitive (see smooth.cpp for the scheme).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <new>
#include <numbers>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>
#include "detail/eigen.hpp"

#include "detail/blas.hpp"
#include "detail/isa_dispatch.hpp"
#include "detail/smooth_common.hpp"
#include "detail/tile_kernel.hpp"
#include "detail/vec_exp.hpp"

namespace kf::detail::tiles {

constexpr index kBq = 256;          // most query rows per tile (scratch size)
constexpr index kBqBackward = 128;  // the backward pass's tiles (five GEMMs each) stop at this
constexpr index kBqTopk = 64;       // the top-k path's query blocks
constexpr index kBk = 256;          // keys per tile
constexpr index kDirectMaxD = 8;    // sqdist factors this narrow use direct differences
constexpr index kNarrowDv = 4;      // this few value columns: P·V by dot products, not GEMM

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

template <class T>
using array_map = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

// ---- argument tiles ----

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

// ---- everything prepared once per call ----

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

// Classifies the tile; returns false when it cannot contribute.
template <class T>
bool tile_active(const plan<T>& pl, scratch<T>& sc, index i0, index bq, index kb, bool& partial) {
  const index j0 = kb * kBk, bk = std::min(kBk, pl.m - j0);
  double min_r2 = 0;
  if (pl.dist_box) {
    pl.dist_box->query_box(pl.in.q, i0, bq, sc.qlo, sc.qhi);
    min_r2 = pl.dist_box->min_sqdist(sc.qlo, sc.qhi, kb);
  }
  const tile_class cls = pl.msk->classify(i0, i0 + bq, j0, j0 + bk, min_r2);
  if (cls == tile_class::out) return false;
  for (std::size_t f = 0; f < pl.engines.size(); ++f) {
    if (!pl.boxes[f]) continue;
    pl.boxes[f]->query_box(pl.in.q, i0, bq, sc.qlo, sc.qhi);
    if (pl.boxes[f]->min_sqdist(sc.qlo, sc.qhi, kb) > pl.support[f]) return false;
  }
  partial = cls == tile_class::partial;
  return true;
}

// Kernels whose weight calls a libm function that does not vectorize (sin, log1p): the tile's
// log-weights by Eigen's vectorized array functions. Returns false for the other kernels (their
// per-element weight() vectorizes as it is). log(1 + u) for log1p(u) errs by ~1 ulp absolute in
// the log-weight, i.e. ~1 ulp relative in the weight. has_vector_weights names those kernels.
template <class K>
constexpr bool has_vector_weights =
    std::is_same_v<K, kernel_periodic> || std::is_same_v<K, kernel_cauchy>;

template <class T, class K>
bool vector_weights(const K& kk, const T* s, T* w, index bq, index bk, bool first) {
  auto apply = [&](auto&& fn) {
    for (index a = 0; a < bq; ++a) {
      Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> sa(s + a * kBk, bk);
      array_map<T> wa(w + a * kBk, bk);
      if (first)
        wa = fn(sa);
      else
        wa += fn(sa);
    }
    return true;
  };
  if constexpr (std::is_same_v<K, kernel_periodic> && std::is_same_v<T, float>) {
    // Vectorized with the ISA chosen at run time (vec_exp.hpp): 9% of the periodic forward at
    // n = 1024, where Eigen's sin and the passes around it took 21%.
    const float inv_p = float(1.0 / kk.period), g = float(-2.0 / (kk.bandwidth * kk.bandwidth));
    for (index a = 0; a < bq; ++a)
      detail::periodic_log_weight(s + a * kBk, w + a * kBk, bk, inv_p, g, !first);
    return true;
  } else if constexpr (std::is_same_v<K, kernel_periodic>) {
    const T c = T(std::numbers::pi / kk.period), g = T(-2.0 / (kk.bandwidth * kk.bandwidth));
    return apply([&](const auto& sa) { return g * (c * sa.sqrt()).sin().square(); });
  } else if constexpr (std::is_same_v<K, kernel_cauchy>) {
    const T c = T(1.0 / (kk.bandwidth * kk.bandwidth));
    return apply([&](const auto& sa) { return -(T(1) + c * sa).log(); });
  } else {
    static_assert(!has_vector_weights<K>, "has_vector_weights lists the kernels served above");
    return false;
  }
}

// True when weight_tile(…, keep_args = false) writes the tile by one GEMM straight into sc.w
// (attention's exp(q·k/T) alone).
template <class T>
bool fused_exp_dot(const plan<T>& pl) {
  return pl.engines.size() == 1 && std::holds_alternative<kernel_exp_dot>(pl.rk.factors[0].kern) &&
         pl.engines[0].arg == kernel_arg::dot && pl.rk.log_domain;
}

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

// Fills sc.w with the tile's weights (log-weights in the log domain), with masked-out entries set
// to −inf (log) or 0 (direct) and recorded in sc.allowed. Leaves the factor arguments in sc.s[f]
// when keep_args (the backward pass's kernel derivatives read them); without it, attention's
// kernel exp(q·k/T) gets its log-weights q·k/T straight from the GEMM (alpha = 1/T: the same
// rounding as s·(1/T), one pass over the tile fewer).
// w_zeroed (fused tiles only): sc.w holds zeros on the tile, and the GEMM adds to it (β = 1).
// key_panels (float, single-factor kernels on the register-tiled route): the tile's keys packed
// for tile_scores — times 1/T for attention's fused kernel, times the factor's
// packed_key_scale() otherwise — which then computes the tile in registers instead of the GEMM.
// ratio (plan::ratio_c > 0 only): sc.w gets u = 1 + c·s instead of the log-weight −log u, and
// masked-out entries get +inf; the forward turns it into P = umin / u (no log, no exp).
template <class T>
void weight_tile(const plan<T>& pl, scratch<T>& sc, index i0, index bq, index j0, index bk,
                 bool partial, bool keep_args = true, bool w_zeroed = false,
                 const float* key_panels = nullptr, bool ratio = false) {
  const bool logd = pl.rk.log_domain;
  const bool fused = !keep_args && fused_exp_dot(pl);
  if (fused) {
    const auto& ed = std::get<kernel_exp_dot>(pl.rk.factors[0].kern);
    const auto& qv = pl.engines[0].qv;
    if constexpr (std::is_same_v<T, float>) {
      if (key_panels)
        tile_scores(qv.row(i0), qv.ld, bq, qv.cols, key_panels, panel_count(bk), sc.w.data(), kBk);
    }
    if (!key_panels)
      pl.engines[0].tile(sc.w.data(), i0, bq, j0, bk, T(1.0 / ed.temperature),
                         w_zeroed ? T(1) : T(0));
  }
  for (std::size_t f = 0; f < pl.engines.size() && !fused; ++f) {
    const auto& eng = pl.engines[f];
    const bool to_log = logd && !pl.rk.factors[f].log_domain;
    // One column by direct differences, one factor, nothing reading the distance tile later
    // (1-D regression): the weights straight from q − k, one pass over the tile instead of two.
    const auto& fk = pl.rk.factors[f].kern;
    const bool direct_1d =
        !keep_args && !ratio && pl.engines.size() == 1 && eng.direct && eng.c1 - eng.c0 == 1 &&
        !to_log && !pl.msk->needs_distance() &&
        !visit_inline([](const auto& kk) { return has_vector_weights<std::decay_t<decltype(kk)>>; },
                      fk);
    if (direct_1d) {
      visit_inline(
          [&](const auto& kk) {
            const T* kc = eng.kt.data() + j0;
            for (index a = 0; a < bq; ++a) {
              const T qa = eng.qv(i0 + a, 0);
              T* wa = sc.w.data() + a * kBk;
              for (index b = 0; b < bk; ++b) {
                const T dq = qa - kc[b];
                wa[b] = kk.template weight<T>(dq * dq);
              }
            }
          },
          fk);
      continue;
    }
    if (key_panels)  // the route serves single-factor kernels: key_panels are factor 0's
      eng.tile_packed(sc.s[f].data(), i0, bq, j0, bk, key_panels);
    else
      eng.tile(sc.s[f].data(), i0, bq, j0, bk);
    if (ratio) {
      const T c = T(pl.ratio_c);
      for (index a = 0; a < bq; ++a) {
        const T* sa = sc.s[f].data() + a * kBk;
        T* wa = sc.w.data() + a * kBk;
        for (index b = 0; b < bk; ++b) wa[b] = T(1) + c * sa[b];
      }
      continue;
    }
    visit_inline(
        [&](const auto& kk) {
          if (!to_log && vector_weights(kk, sc.s[f].data(), sc.w.data(), bq, bk, f == 0)) return;
          for (index a = 0; a < bq; ++a) {
            const T* sa = sc.s[f].data() + a * kBk;
            T* wa = sc.w.data() + a * kBk;
            if (!to_log && f == 0) {  // the common case, without the branches below (vectorizes)
              for (index b = 0; b < bk; ++b) wa[b] = kk.template weight<T>(sa[b]);
              continue;
            }
            for (index b = 0; b < bk; ++b) {
              T x = kk.template weight<T>(sa[b]);
              if (to_log) x = x > T(0) ? std::log(x) : kNegInf<T>;
              wa[b] = f == 0 ? x : wa[b] + x;
            }
          }
        },
        pl.rk.factors[f].kern);
  }
  if (!partial) return;
  const bool need_r2 = pl.msk->needs_distance();
  if (need_r2 && pl.dist) pl.dist->tile(sc.r2.data(), i0, bq, j0, bk);
  const T* r2 = pl.dist ? sc.r2.data() : sc.s[0].data();
  const T excluded = ratio ? std::numeric_limits<T>::infinity() : logd ? kNegInf<T> : T(0);
  index off = 0;
  if (pl.msk->is_causal_only(off)) {  // the language models' mask: no per-element dispatch
    for (index a = 0; a < bq; ++a)
      for (index b = 0; b < bk; ++b) {
        const bool ok = j0 + b <= i0 + a + off;
        sc.allowed[a * kBk + b] = ok;
        if (!ok) sc.w[a * kBk + b] = excluded;
      }
    return;
  }
  for (index a = 0; a < bq; ++a)
    for (index b = 0; b < bk; ++b) {
      const bool ok = pl.msk->allows(i0 + a, j0 + b, need_r2 ? double(r2[a * kBk + b]) : 0.0);
      sc.allowed[a * kBk + b] = ok;
      if (!ok) sc.w[a * kBk + b] = excluded;
    }
}

// One scratch per thread, kept across calls: attention makes many small calls, and allocating
// the tiles each time cost more than the work (every entry read is written first, so stale
// contents are harmless).
template <class T>
scratch<T>& thread_scratch() {
  static thread_local scratch<T> sc(0);
  return sc;
}

// The index, in [0, plan::threads), of the thread running the current block: per-thread
// accumulators (the backward pass's dK, dV) use it. Set by parallel_blocks.
inline int& block_thread() {
  static thread_local int t = 0;
  return t;
}

// Runs fn(thread_scratch, query block) over the blocks of `rows` query rows (≤ kBq) in parallel;
// rethrows the first exception after the region.
template <class T, class Fn>
void parallel_blocks(const plan<T>& pl, index rows, Fn&& fn) {
  const index blocks = (pl.n + rows - 1) / rows;
  if ((blocks == 1 || pl.threads == 1) && omp_in_parallel()) {
    // One thread's work inside a caller's parallel region (attention runs a call per head
    // there): no nested team to start, and OpenBLAS is single-threaded inside the region.
    scratch<T>& sc = thread_scratch<T>();
    block_thread() = 0;
    for (index qb = 0; qb < blocks; ++qb) isa_invoke(fn, sc, qb);
    return;
  }
  std::exception_ptr err;
  std::mutex mu;
#pragma omp parallel num_threads(pl.threads)
  {
    // BLAS calls inside run single-threaded: OpenBLAS (OpenMP build) sizes its team from
    // omp_get_max_threads() unless omp_in_parallel(), which is false for a team of one. This
    // also makes results independent of the thread count.
    omp_set_num_threads(1);
    scratch<T>& sc = thread_scratch<T>();
    block_thread() = omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
    for (index qb = 0; qb < blocks; ++qb) {
      try {
        isa_invoke(fn, sc, qb);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!err) err = std::current_exception();
      }
    }
  }
  if (err) std::rethrow_exception(err);
}

[[noreturn]] inline void throw_overflow(index i) {
  throw std::overflow_error("smooth: a kernel log-weight overflowed to +inf in query row " +
                            std::to_string(i) + " (|q.k| / T beyond the floating-point range)");
}

// Paths implemented in their own files (explicitly instantiated for float and double).
template <class T>
smooth_stats forward_dense(const plan<T>& pl, matrix_view<T> out, matrix_view<T> out_sq,
                           std::span<T> lse);
template <class T>
void backward_dense(const plan<T>& pl, smooth_grads<T>& g, const_matrix_view<T> dout,
                    const_matrix_view<T> out, std::span<const T> lse);
template <class T>
smooth_stats forward_topk(const plan<T>& pl, matrix_view<T> out, matrix_view<T> out_sq,
                          std::span<T> lse);
template <class T>
void backward_topk(const plan<T>& pl, smooth_grads<T>& g, const_matrix_view<T> dout);

}  // namespace kf::detail::tiles
