// The feature maps of elu1, rff and favor (detail/feature_maps.hpp): the random projections, φ
// and its vector–Jacobian product per row in double and per block of rows in T.
#include "detail/feature_maps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <numbers>
#include <stdexcept>
#include <tuple>

#include "detail/blas.hpp"
#include "detail/vec_exp.hpp"

namespace kf::detail {
namespace {

// One splitmix64 step on the counter z: a bijective mix of 64 bits, cheap and portable, so a
// random number is a function of its index instead of a generator's state.
std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The i-th standard normal of stream `stream` under `seed`: Box–Muller on two counter-based
// uniforms in (0, 1]. A pure function of its arguments (the same in every process).
double normal_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  // Streams 1 (rff), 2 (favor's blocks) and 3 (favor's χ norms) get unrelated keys under one seed.
  const std::uint64_t key = splitmix64(seed ^ splitmix64(stream + 0x632be59bd9b4e019ULL));
  auto uniform = [&](std::uint64_t c) {
    return (double(splitmix64(key + c) >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  };
  // u1 > 0, so log(u1) is finite; the sine half of the Box–Muller pair is not used.
  const double u1 = uniform(2 * i), u2 = uniform(2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// rows × d i.i.d. N(0, 1).
std::vector<double> gaussian_rows(std::uint64_t seed, index rows, index d) {
  std::vector<double> w(static_cast<std::size_t>(rows * d));
  for (std::size_t t = 0; t < w.size(); ++t) w[t] = normal_at(seed, 1, t);
  return w;
}

// rows × d in blocks of d orthonormal rows (Gram–Schmidt on Gaussian blocks, twice for
// stability), each row then scaled by the norm of an independent N(0, I_d) vector, so that every
// row is marginally N(0, I_d) while the rows of a block are orthogonal (Choromanski et al. 2021).
std::vector<double> orthogonal_rows(std::uint64_t seed, index rows, index d) {
  std::vector<double> w(static_cast<std::size_t>(rows * d));
  std::vector<double> block(static_cast<std::size_t>(d * d));
  for (index b0 = 0; b0 < rows; b0 += d) {
    const auto off = static_cast<std::uint64_t>(b0 * d);
    for (index t = 0; t < d * d; ++t)
      block[static_cast<std::size_t>(t)] = normal_at(seed, 2, off + static_cast<std::uint64_t>(t));
    for (index a = 0; a < d; ++a) {
      double* ra = block.data() + a * d;
      // Modified Gram–Schmidt against the rows already orthonormal; the second pass removes what
      // rounding left of those components.
      for (int pass = 0; pass < 2; ++pass)
        for (index b = 0; b < a; ++b) {
          const double* rb = block.data() + b * d;
          double dot = 0;
          for (index c = 0; c < d; ++c) dot += ra[c] * rb[c];
          for (index c = 0; c < d; ++c) ra[c] -= dot * rb[c];
        }
      double nrm = 0;
      for (index c = 0; c < d; ++c) nrm += ra[c] * ra[c];
      nrm = std::sqrt(nrm);
      for (index c = 0; c < d; ++c) ra[c] /= nrm;
    }
    // The last block may be cut short: only its first rows − b0 rows are used.
    for (index a = 0; a < std::min(d, rows - b0); ++a) {
      const index row = b0 + a;
      double chi = 0;
      for (index c = 0; c < d; ++c) {
        const double g = normal_at(seed, 3, static_cast<std::uint64_t>(row * d + c));
        chi += g * g;
      }
      chi = std::sqrt(chi);
      for (index c = 0; c < d; ++c)
        w[static_cast<std::size_t>(row * d + c)] = chi * block[static_cast<std::size_t>(a * d + c)];
    }
  }
  return w;
}

}  // namespace

// Drawing is O(r·d²) for favor (Gram–Schmidt), so repeated calls reuse the one draw. The draw runs
// outside the lock; if two threads draw the same key at once, emplace keeps the first and both get
// that one (the draws are identical anyway).
std::shared_ptr<const feature_map> feature_map_draw(feature_kind kind, index d, index r,
                                                    std::uint64_t seed) {
  using key_t = std::tuple<int, index, index, std::uint64_t>;
  static std::mutex mu;
  static std::map<key_t, std::shared_ptr<const feature_map>> cache;
  const key_t key{static_cast<int>(kind), d, r, seed};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  auto fm = std::make_shared<feature_map>();
  fm->kind = kind;
  fm->d = d;
  fm->r = r;
  if (kind == feature_kind::rff) {
    fm->rows = r / 2;
    fm->w = gaussian_rows(seed, fm->rows, d);
  } else if (kind == feature_kind::favor) {
    fm->rows = r;
    fm->w = orthogonal_rows(seed, r, d);
  }
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= 64) cache.clear();  // models use a few; keep memory bounded anyway
  return cache.emplace(key, std::move(fm)).first->second;
}

// Throws std::invalid_argument for a kernel that is not elu1, rff or favor. elu1 draws nothing
// (rows = 0) but still shares a cached map for its d and r.
feature_kernel feature_kernel_of(const any_kernel& k, index d) {
  feature_kernel fk;
  fk.d = d;
  if (std::holds_alternative<kernel_elu1>(k)) {
    fk.kind = feature_kind::elu1;
    fk.r = d;
    fk.map = feature_map_draw(fk.kind, d, d, 0);
  } else if (const auto* f = std::get_if<kernel_rff>(&k)) {
    fk.kind = feature_kind::rff;
    fk.r = f->features;
    fk.scale = 1.0 / f->bandwidth;
    fk.dparam_factor = -1.0 / f->bandwidth;
    fk.map = feature_map_draw(fk.kind, d, fk.r, f->seed);
  } else if (const auto* g = std::get_if<kernel_favor>(&k)) {
    fk.kind = feature_kind::favor;
    fk.r = g->features;
    fk.scale = 1.0 / std::sqrt(g->temperature);
    fk.dparam_factor = -0.5 / g->temperature;
    fk.map = feature_map_draw(fk.kind, d, fk.r, g->seed);
  } else {
    throw std::invalid_argument(
        fmt::format("{} is not a feature-map kernel (elu1, rff, favor)", kernel_name(k)));
  }
  return fk;
}

// ---- one row in double ----

// x (d), phi (r). Unstabilized: favor's exp(u) can overflow where feature_block's shifted form
// does not. The same formulas as feature_block, written out plainly in double.
void feature_row(const feature_kernel& fk, const double* x, double* phi) {
  const index d = fk.d, r = fk.r;
  const std::vector<double>& w = fk.map->w;
  if (fk.kind == feature_kind::elu1) {
    for (index c = 0; c < d; ++c) phi[c] = x[c] > 0 ? x[c] + 1 : std::exp(x[c]);
    return;
  }
  const index rows = fk.map->rows;
  double x2 = 0;
  for (index c = 0; c < d; ++c) x2 += x[c] * x[c];
  x2 *= fk.scale * fk.scale;
  for (index l = 0; l < rows; ++l) {
    double p = 0;
    for (index c = 0; c < d; ++c) p += w[static_cast<std::size_t>(l * d + c)] * x[c];
    p *= fk.scale;
    if (fk.kind == feature_kind::rff) {
      // Features [0, rows) are the cosines, [rows, r) the sines (r = 2·rows).
      const double a = std::sqrt(2.0 / double(r));
      phi[l] = a * std::cos(p);
      phi[rows + l] = a * std::sin(p);
    } else {
      phi[l] = std::exp(p - 0.5 * x2) / std::sqrt(double(r));
    }
  }
}

// x (d), g (r), dx (d) accumulated. Recomputes φ(x) rather than taking it, since each derivative
// below is written in terms of φ.
void feature_row_vjp(const feature_kernel& fk, const double* x, const double* g, double* dx) {
  const index d = fk.d, r = fk.r;
  const std::vector<double>& w = fk.map->w;
  if (fk.kind == feature_kind::elu1) {
    for (index c = 0; c < d; ++c) dx[c] += g[c] * (x[c] > 0 ? 1.0 : std::exp(x[c]));
    return;
  }
  std::vector<double> phi(static_cast<std::size_t>(r));
  feature_row(fk, x, phi.data());
  const index rows = fk.map->rows;
  double tsum = 0;
  for (index l = 0; l < rows; ++l) {
    double t;  // d loss / d (the projection P_l = scale · w_l·x)
    if (fk.kind == feature_kind::rff) {
      t = -phi[static_cast<std::size_t>(rows + l)] * g[l] +
          phi[static_cast<std::size_t>(l)] * g[rows + l];
    } else {
      t = g[l] * phi[static_cast<std::size_t>(l)];  // also d loss / d u_l
      tsum += t;
    }
    for (index c = 0; c < d; ++c) dx[c] += fk.scale * t * w[static_cast<std::size_t>(l * d + c)];
  }
  if (fk.kind == feature_kind::favor)  // u_l = P_l − scale²|x|²/2
    for (index c = 0; c < d; ++c) dx[c] -= fk.scale * fk.scale * x[c] * tsum;
}

// ---- blocks of rows in T ----

// scale · W (rows, d) in T, formed once per route: φ is then one GEMM of x against it.
template <class T>
feature_weights<T> feature_weights_of(const feature_kernel& fk) {
  feature_weights<T> fw;
  fw.w.resize(fk.map->w.size());
  for (std::size_t t = 0; t < fw.w.size(); ++t) fw.w[t] = static_cast<T>(fk.scale * fk.map->w[t]);
  return fw;
}

namespace {

// |x'|²/2 = scale²|x_i|²/2 of row i, in double.
template <class T>
double half_sqnorm(const feature_kernel& fk, const T* x) {
  double s = 0;
  for (index c = 0; c < fk.d; ++c) s += double(x[c]) * double(x[c]);
  return 0.5 * fk.scale * fk.scale * s;
}

}  // namespace

// x (b, d), phi (b, r) with r ≥ rows columns, ls (b) or null.
template <class T>
void feature_block(const feature_kernel& fk, const feature_weights<T>& fw, const_matrix_view<T> x,
                   matrix_view<T> phi, double* ls, const double* shift) {
  const index b = x.rows, d = fk.d, r = fk.r, rows = fk.map->rows;
  if (b == 0) return;
  if (fk.kind == feature_kind::elu1) {
    for (index i = 0; i < b; ++i) {
      const T* xi = x.row(i);
      T* pi = phi.row(i);
      for (index c = 0; c < d; ++c) pi[c] = xi[c] > T(0) ? xi[c] + T(1) : std::exp(xi[c]);
      if (ls) ls[i] = 0;
    }
    return;
  }
  // P = x (scale W)ᵀ into the first `rows` columns of phi.
  gemm(false, true, b, rows, d, T(1), x.data, x.ld, fw.w.data(), d, T(0), phi.data, phi.ld);
  if (fk.kind == feature_kind::rff) {
    const T a = static_cast<T>(std::sqrt(2.0 / double(r)));
    for (index i = 0; i < b; ++i) {
      T* pi = phi.row(i);
      for (index l = 0; l < rows; ++l) {
        const T p = pi[l];
        pi[l] = a * std::cos(p);
        pi[rows + l] = a * std::sin(p);
      }
      if (ls) ls[i] = 0;
    }
    return;
  }
  const double half_log_r = 0.5 * std::log(double(r));
  for (index i = 0; i < b; ++i) {
    T* pi = phi.row(i);
    const double h = half_sqnorm(fk, x.row(i));
    double c;  // the exponent taken out: φ = exp(u − c), u = P − h
    if (shift == nullptr) {
      // h is the same for every feature of the row, so the largest u is the largest P minus h.
      const T pmax = *std::max_element(pi, pi + r);
      exp_shift_sum(pi, r, pmax);
      c = double(pmax) - h;
    } else {
      c = *shift;
      exp_shift_sum(pi, r, static_cast<T>(h + c));
    }
    if (ls) ls[i] = c - half_log_r;
  }
}

// x (b, d), phi (b, r), g (b, r) overwritten with dP (first rows columns), dx (b, d) accumulated.
// The stabilizer c is held constant (feature_maps.hpp): it cancels in out.
template <class T>
void feature_block_vjp(const feature_kernel& fk, const feature_weights<T>& fw,
                       const_matrix_view<T> x, cview<T> phi, matrix_view<T> g, matrix_view<T> dx) {
  const index b = x.rows, d = fk.d, rows = fk.map->rows;
  if (b == 0) return;
  if (fk.kind == feature_kind::elu1) {
    for (index i = 0; i < b; ++i)
      // elu'(x) + 0 = e^x = φ for x ≤ 0: no second exp.
      for (index c = 0; c < d; ++c) dx(i, c) += g(i, c) * (x(i, c) > T(0) ? T(1) : phi(i, c));
    return;
  }
  if (fk.kind == feature_kind::rff) {  // dP_l = −φ_sin,l g_cos,l + φ_cos,l g_sin,l
    for (index i = 0; i < b; ++i) {
      T* gi = g.row(i);
      const T* pi = phi.row(i);
      for (index l = 0; l < rows; ++l) gi[l] = -pi[rows + l] * gi[l] + pi[l] * gi[rows + l];
    }
  } else {  // du_l = g_l φ_l
    for (index i = 0; i < b; ++i) {
      T* gi = g.row(i);
      const T* pi = phi.row(i);
      for (index l = 0; l < rows; ++l) gi[l] *= pi[l];
    }
  }
  // dx += dP (scale W)
  gemm(false, false, b, d, rows, T(1), g.data, g.ld, fw.w.data(), d, T(1), dx.data, dx.ld);
  if (fk.kind != feature_kind::favor) return;
  const T s2 = static_cast<T>(fk.scale * fk.scale);  // u = P − scale²|x|²/2
  for (index i = 0; i < b; ++i) {
    T tsum = 0;
    for (index l = 0; l < rows; ++l) tsum += g(i, l);
    for (index c = 0; c < d; ++c) dx(i, c) -= s2 * x(i, c) * tsum;
  }
}

// scratch (bs, r): the GEMM tile, bs rows of x at a time, so x of any length needs no more.
template <class T>
double feature_max_exponent(const feature_kernel& fk, const feature_weights<T>& fw,
                            const_matrix_view<T> x, matrix<T>& scratch) {
  if (fk.kind != feature_kind::favor) return 0.0;
  double mx = -std::numeric_limits<double>::infinity();
  const index r = fk.r, bs = std::max<index>(1, scratch.rows());
  for (index i0 = 0; i0 < x.rows; i0 += bs) {
    const index b = std::min(bs, x.rows - i0);
    gemm(false, true, b, r, fk.d, T(1), x.row(i0), x.ld, fw.w.data(), fk.d, T(0), scratch.data(),
         r);
    for (index i = 0; i < b; ++i) {
      const T* pi = scratch.data() + i * r;
      mx = std::max(mx, double(*std::max_element(pi, pi + r)) - half_sqnorm(fk, x.row(i0 + i)));
    }
  }
  return mx;
}

#define KF_INSTANTIATE(T)                                                                        \
  template feature_weights<T> feature_weights_of<T>(const feature_kernel&);                      \
  template void feature_block<T>(const feature_kernel&, const feature_weights<T>&,               \
                                 const_matrix_view<T>, matrix_view<T>, double*, const double*);  \
  template void feature_block_vjp<T>(const feature_kernel&, const feature_weights<T>&,           \
                                     const_matrix_view<T>, const_matrix_view<T>, matrix_view<T>, \
                                     matrix_view<T>);                                            \
  template double feature_max_exponent<T>(const feature_kernel&, const feature_weights<T>&,      \
                                          const_matrix_view<T>, matrix<T>&);
KF_INSTANTIATE(float)
KF_INSTANTIATE(double)
#undef KF_INSTANTIATE

}  // namespace kf::detail
