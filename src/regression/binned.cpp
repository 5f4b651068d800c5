// Linear binning and FFT convolution for the 1-D fast path (see binned.hpp).
#include "kernelformer/regression/binned.hpp"

#include <fftw3.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <stdexcept>

#include "detail/fft_size.hpp"
#include "kernelformer/progress.hpp"

namespace kf {
namespace {

// The smallest power of two ≥ v (1 for v ≤ 1).
index next_pow2(index v) {
  index p = 1;
  while (p < v) p <<= 1;
  return p;
}

// RAII buffers and plans for one transform size P (real ↔ half-complex).
struct fft_plan {
  index p;             // transform length P
  double* real;        // (P) the real signal, and the inverse transform's output
  fftw_complex* spec;  // (P/2 + 1) its half spectrum
  fftw_plan fwd, inv;
  // Plans made under the library's planner lock (FFTW's planner is not thread-safe; executing
  // is). FFTW_ESTIMATE: no trial runs, since a plan is made for every compute/sum_weights call.
  explicit fft_plan(index size) : p(size) {
    real = fftw_alloc_real(static_cast<std::size_t>(p));
    spec = fftw_alloc_complex(static_cast<std::size_t>(p / 2 + 1));
    const std::lock_guard<std::mutex> lock(detail::fftw_planner_lock());
    fwd = fftw_plan_dft_r2c_1d(static_cast<int>(p), real, spec, FFTW_ESTIMATE);
    inv = fftw_plan_dft_c2r_1d(static_cast<int>(p), spec, real, FFTW_ESTIMATE);
  }
  ~fft_plan() {
    const std::lock_guard<std::mutex> lock(detail::fftw_planner_lock());
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(inv);
    fftw_free(real);
    fftw_free(spec);
  }
  fft_plan(const fft_plan&) = delete;
  fft_plan& operator=(const fft_plan&) = delete;
  // Spectrum of a real signal (zero-padded to P).
  std::vector<std::complex<double>> forward(const std::vector<double>& v) {
    std::fill(real, real + p, 0.0);
    std::copy(v.begin(), v.begin() + std::min<index>(static_cast<index>(v.size()), p), real);
    fftw_execute(fwd);
    std::vector<std::complex<double>> out(static_cast<std::size_t>(p / 2 + 1));  // (P/2 + 1)
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = {spec[i][0], spec[i][1]};
    return out;
  }
  // First g entries of the inverse transform of a·b, divided by P: the circular convolution of
  // the two signals (FFTW's inverse is unnormalized, hence 1/P), which equals the linear one on
  // those entries when P ≥ g + lags + 1 (detail/fft_size.hpp).
  std::vector<double> convolve(const std::vector<std::complex<double>>& a,
                               const std::vector<std::complex<double>>& b, index g) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      const auto z = a[i] * b[i];
      spec[i][0] = z.real();
      spec[i][1] = z.imag();
    }
    fftw_execute(inv);
    std::vector<double> out(static_cast<std::size_t>(g));
    for (index i = 0; i < g; ++i) out[static_cast<std::size_t>(i)] = real[i] / double(p);
    return out;
  }
};

// Grid size for a bandwidth: h/δ ≥ cells_per_h over the span, a power of two, capped.
// δ = span/(cells − 1), so cells − 1 ≥ span/h · cells_per_h; never below 64 nodes.
index grid_cells(double span, double h, double cells_per_h, const binned_settings& st) {
  const double want = std::min(span / h * cells_per_h, double(st.max_cells));
  return std::min(st.max_cells,
                  std::max<index>(64, next_pow2(static_cast<index>(std::ceil(want)) + 1)));
}

// Lags covered by a weight of the given reach on a grid of spacing delta (the whole grid when the
// reach is unbounded or longer than it).
index grid_lags(double reach, double delta, index cells) {
  if (!(reach / delta < double(cells))) return cells - 1;
  return std::min<index>(cells - 1, static_cast<index>(std::ceil(reach / delta)));
}

}  // namespace

// d may be signed (the kernel takes d²); log-domain kernels return log K, hence the exp.
double kernel_at_distance(const any_kernel& k, double d) {
  return std::visit(
      [&](const auto& kk) {
        const double w = kk.template weight<double>(d * d);
        return std::decay_t<decltype(kk)>::log_domain ? std::exp(w) : w;
      },
      k);
}

double binned_reach(const any_kernel& k, double tail_tolerance) {
  const double h = kernel_param(k);
  if (kernel_compact(k)) return h;
  const double k0 = kernel_at_distance(k, 0.0);
  // Monotone decay checked on a fine sample up to the truncation point; a kernel that rises again
  // (periodic) or is still above the tolerance at 1e6 h is never truncated.
  double reach = h;
  while (kernel_at_distance(k, reach) >= tail_tolerance * k0) {
    reach *= 2;
    if (reach > 1e6 * h) return std::numeric_limits<double>::infinity();
  }
  // The crossing itself, not the doubling's power of two (which reached up to twice as far:
  // 16 bandwidths for the gaussian, 64 for the laplacian, whose 2-D transforms then spanned twice
  // the data's grid). Bisection keeps K(reach) < tolerance·K(0) at the returned end.
  double inside = reach / 2;
  for (int it = 0; it < 60 && reach - inside > 1e-6 * h; ++it) {
    const double mid = 0.5 * (inside + reach);
    (kernel_at_distance(k, mid) >= tail_tolerance * k0 ? inside : reach) = mid;
  }
  // Monotonicity: 4096 samples over [0, reach]; any rise beyond rounding (1e-12 relative) means a
  // kernel that comes back (periodic), which no cut may truncate.
  double prev = k0;
  for (int i = 1; i <= 4096; ++i) {
    const double v = kernel_at_distance(k, reach * double(i) / 4096.0);
    if (v > prev * (1 + 1e-12)) return std::numeric_limits<double>::infinity();
    prev = v;
  }
  return reach;
}

// The data binned on one grid of G nodes over [lo, hi].
struct binned_data::level {
  index cells;                     // G
  double delta;                    // δ = (hi − lo)/(G − 1)
  std::vector<double> c, cy, cyy;  // (G) binned 1, y, y² (cy, cyy empty for density)
  double self_a = 0, self_b = 0;   // Σ (1−f)² + f², Σ 2f(1−f): the binned self weights
};

bool binned_supports(const any_kernel& k) {
  // The boxcar jumps at its edge: binning would be first-order (1e-3 of the range of y at the
  // default grid), so it stays on the exact route.
  if (kernel_arg_of(k) != kernel_arg::sqdist || kernel_name(k) == "boxcar") return false;
  const double k0 = kernel_at_distance(k, 0.0);
  return std::isfinite(k0) && k0 > 0;
}

binned_data::binned_data(std::span<const double> x, std::span<const double> y, double lo, double hi,
                         const data_shard& shard)
    : x_(x), y_(y), lo_(lo), hi_(hi), shard_(shard) {
  if (!(hi > lo)) hi_ = lo + 1.0;  // a single distinct point: any grid works
}

binned_data::~binned_data() = default;

// The data on a G-node grid, binned on first use and kept (a bandwidth search comes back to the
// same few grid sizes). Linear binning: a point at t = (x − lo)/δ = g + f gives 1 − f to node g and
// f to g + 1, which keeps Σ c = n and the points' mean. Not thread-safe (levels_ grows).
const binned_data::level& binned_data::binned_at(index cells) const {
  for (const auto& l : levels_)
    if (l->cells == cells) return *l;
  auto l = std::make_unique<level>();
  l->cells = cells;
  l->delta = (hi_ - lo_) / double(cells - 1);
  l->c.assign(static_cast<std::size_t>(cells), 0.0);
  const bool with_y = !y_.empty();
  if (with_y) {
    l->cy = l->c;
    l->cyy = l->c;
  }
  double sa = 0, sb = 0;
  const auto mine = shard_.block_of(static_cast<index>(x_.size()));
  progress_step step(fmt::format("binning {} points", mine.size()), mine.size());
  // Blocks of 65,536 points, progress counted between them: the inner loop makes no call, so the
  // grids' pointers stay in registers.
  const double inv_delta = 1.0 / l->delta;
  double* c = l->c.data();
  double* cy = with_y ? l->cy.data() : nullptr;
  double* cyy = with_y ? l->cyy.data() : nullptr;
  constexpr std::size_t kBlock = std::size_t{1} << 16;
  const auto end = static_cast<std::size_t>(mine.hi);
  for (auto b0 = static_cast<std::size_t>(mine.lo); b0 < end; b0 += kBlock) {
    const std::size_t b1 = std::min(end, b0 + kBlock);
    for (std::size_t i = b0; i < b1; ++i) {
      const double t = (x_[i] - lo_) * inv_delta;
      auto g = static_cast<index>(std::floor(t));
      g = std::clamp<index>(g, 0, cells - 2);  // x = hi: g = G − 2, f = 1
      const double f = t - double(g), w0 = 1 - f, w1 = f;
      const auto gu = static_cast<std::size_t>(g);
      c[gu] += w0, c[gu + 1] += w1;
      sa += w0 * w0 + w1 * w1;
      sb += 2 * w0 * w1;
      if (!with_y) continue;
      const double yi = y_[i];
      cy[gu] += w0 * yi, cy[gu + 1] += w1 * yi;
      cyy[gu] += w0 * yi * yi, cyy[gu + 1] += w1 * yi * yi;
    }
    step.add(static_cast<index>(b1 - b0));
  }
  l->self_a = sa;
  l->self_b = sb;
  if (shard_.active()) {
    // The other processes' blocks: one rank-ordered sum of the grids, packed.
    const auto g = static_cast<std::size_t>(cells);
    std::vector<double> all(with_y ? 3 * g + 2 : g + 2);  // [c | cy | cyy | sa, sb]
    std::copy(l->c.begin(), l->c.end(), all.begin());
    if (with_y) {
      std::copy(l->cy.begin(), l->cy.end(), all.begin() + static_cast<std::ptrdiff_t>(g));
      std::copy(l->cyy.begin(), l->cyy.end(), all.begin() + static_cast<std::ptrdiff_t>(2 * g));
    }
    all[all.size() - 2] = sa;
    all[all.size() - 1] = sb;
    shard_.sum_all(all);
    std::copy(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(g), l->c.begin());
    if (with_y) {
      std::copy(all.begin() + static_cast<std::ptrdiff_t>(g),
                all.begin() + static_cast<std::ptrdiff_t>(2 * g), l->cy.begin());
      std::copy(all.begin() + static_cast<std::ptrdiff_t>(2 * g),
                all.begin() + static_cast<std::ptrdiff_t>(3 * g), l->cyy.begin());
    }
    l->self_a = all[all.size() - 2];
    l->self_b = all[all.size() - 1];
  }
  levels_.push_back(std::move(l));
  return *levels_.back();
}

binned_data::moments binned_data::compute(const any_kernel& k, int degree, bool with_q,
                                          double cells_per_h, const binned_settings& st) const {
  if (!binned_supports(k))
    throw std::invalid_argument(
        fmt::format("binned smoothing does not support kernel {}", kernel_name(k)));
  if (y_.empty()) throw std::logic_error("binned_data::compute needs y");
  const double h = kernel_param(k);
  const index cells = grid_cells(hi_ - lo_, h, cells_per_h, st);
  const level& lv = binned_at(cells);
  const double delta = lv.delta;
  const index lags = grid_lags(binned_reach(k, st.tail_tolerance), delta, cells);
  const index p = detail::fast_fft_size(cells + lags + 1);  // no wrap-around onto the grid
  fft_plan plan(p);

  // S_m[g] = Σ_l c[g − l] κ_m(l) = Σ_g' c[g'] K(|g' − g|δ) ((g' − g)δ)^m, the moment at node g
  // (x_j − x = (g' − g)δ = −lδ), with
  // κ_m(l) = K(lδ/h)·(−lδ)^m at index l mod P, l ∈ [−lags, lags]; and K² for q.
  const int mmax = degree == 0 ? 0 : 2;
  auto kernel_signal = [&](int m, bool squared) {
    std::vector<double> sig(static_cast<std::size_t>(p), 0.0);
    for (index l = -lags; l <= lags; ++l) {
      const double u = double(l) * delta;
      double kv = kernel_at_distance(k, u);
      if (squared) kv *= kv;
      const index at = l >= 0 ? l : p + l;
      sig[static_cast<std::size_t>(at)] = kv * std::pow(-u, m);
    }
    return sig;
  };
  moments out;
  out.lo = lo_;
  out.delta = delta;
  out.c = lv.c;
  out.cy = lv.cy;
  out.cyy = lv.cyy;
  const auto fc = plan.forward(lv.c), fcy = plan.forward(lv.cy);  // shared by every m
  for (int m = 0; m <= mmax; ++m) {
    const auto fk = plan.forward(kernel_signal(m, false));
    out.s[m] = plan.convolve(fc, fk, cells);  // (G) Σ K (x_j − x)^m
    // (G) Σ K (x_j − x)^m y_j: t0 for NW, t0 and t1 for local linear
    if (m <= 1 && m <= degree) out.t[m] = plan.convolve(fcy, fk, cells);
  }
  if (with_q)  // (G) Σ K² (x_j − x)^m: Σℓ² for the standard errors
    for (int m = 0; m <= mmax; ++m)
      out.q[m] = plan.convolve(fc, plan.forward(kernel_signal(m, true)), cells);
  return out;
}

binned_data::sums binned_data::sum_weights(const std::function<double(double)>& w, double reach,
                                           double h, double cells_per_h,
                                           const binned_settings& st) const {
  const index cells = grid_cells(hi_ - lo_, h, cells_per_h, st);
  const level& lv = binned_at(cells);
  // The same convolution as compute's S_0, for any weight of |distance|.
  const index lags = grid_lags(reach, lv.delta, cells);
  const index p = detail::fast_fft_size(cells + lags + 1);
  fft_plan plan(p);
  std::vector<double> sig(static_cast<std::size_t>(p), 0.0);
  for (index l = -lags; l <= lags; ++l)
    sig[static_cast<std::size_t>(l >= 0 ? l : p + l)] = w(std::abs(double(l) * lv.delta));
  sums out;
  out.lo = lo_;
  out.delta = lv.delta;
  out.c = lv.c;
  out.s = plan.convolve(plan.forward(lv.c), plan.forward(sig), cells);
  // A point split (1 − f, f) over nodes g, g + 1 meets its own mass at distance 0 with weight
  // (1 − f)² + f² and at distance δ with 2f(1 − f): summed over the points, self_a and self_b.
  out.self = lv.self_a * w(0.0) + lv.self_b * w(lv.delta);
  return out;
}

// Beyond either end of the grid the end value is returned (g and f are clamped).
double binned_data::read(double lo, double delta, const std::vector<double>& v, double x) {
  const double t = (x - lo) / delta;
  const auto last = static_cast<index>(v.size()) - 1;
  auto g = static_cast<index>(std::floor(t));
  g = std::clamp<index>(g, 0, last - 1);
  const double f = std::clamp(t - double(g), 0.0, 1.0);
  return (1 - f) * v[static_cast<std::size_t>(g)] + f * v[static_cast<std::size_t>(g + 1)];
}

}  // namespace kf
