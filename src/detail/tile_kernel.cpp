// Attention's tile products in registers (contract in tile_kernel.hpp).
#include "detail/tile_kernel.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string_view>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define KF_HAVE_X86_TILES 1
#endif

namespace kf::detail {

void pack_row_panels(const float* b, index ld, index rows, index d, float scale, float* out) {
  for (index p = 0; p < panel_count(rows); ++p) {
    float* o = out + p * d * kPanel;
    const float* bp = b + p * kPanel * ld;
    const index full = std::min(kPanel, rows - p * kPanel);
    if (full == kPanel) {
      // Column by column: each output row of 16 is contiguous, and the 16 input rows' cache
      // lines stay in L1 across consecutive columns.
      for (index c = 0; c < d; ++c)
        for (index r = 0; r < kPanel; ++r) o[c * kPanel + r] = scale * bp[r * ld + c];
      continue;
    }
    for (index c = 0; c < d; ++c) {
      for (index r = 0; r < full; ++r) o[c * kPanel + r] = scale * bp[r * ld + c];
      for (index r = full; r < kPanel; ++r) o[c * kPanel + r] = 0.0f;
    }
  }
}

void pack_column_panels(const float* b, index ld, index rows, index cols, float* out,
                        index panel_stride) {
  for (index q = 0; q < panel_count(cols); ++q) {
    float* o = out + q * panel_stride;
    const index width = std::min(kPanel, cols - q * kPanel);
    for (index j = 0; j < rows; ++j) {
      const float* bj = b + j * ld + q * kPanel;
      float* oj = o + j * kPanel;
      for (index r = 0; r < width; ++r) oj[r] = bj[r];
      for (index r = width; r < kPanel; ++r) oj[r] = 0.0f;
    }
  }
}

namespace {

// The three products share one form: c(i, 16q + r) (=, or += when Add) Σ_j A(i, j) · bp[q](j, r)
// for i < rows, j < inner, q < panels, with A(i, j) = a[i·lda + j], or a[j·lda + i] when Trans
// (A read transposed). Scores: Add = false, Trans = false (a wrapper: its panels are d·16
// apart); accumulate: Add; accumulate_t: both.

// ---- baseline: plain loops, with the build's flags ----

template <bool Add, bool Trans>
void product_base(const float* a, index lda, index rows, index inner, const float* bp,
                  index panel_stride, index panels, float* c, index ldc) {
  for (index i = 0; i < rows; ++i)
    for (index q = 0; q < panels; ++q) {
      float acc[kPanel] = {};
      const float* panel = bp + q * panel_stride;
      for (index j = 0; j < inner; ++j) {
        const float x = Trans ? a[j * lda + i] : a[i * lda + j];
        for (index r = 0; r < kPanel; ++r) acc[r] += x * panel[j * kPanel + r];
      }
      float* ci = c + i * ldc + q * kPanel;
      for (index r = 0; r < kPanel; ++r) ci[r] = Add ? ci[r] + acc[r] : acc[r];
    }
}

void scores_base(const float* a, index lda, index rows, index d, const float* kp, index panels,
                 float* s, index lds) {
  product_base<false, false>(a, lda, rows, d, kp, d * kPanel, panels, s, lds);
}

#ifdef KF_HAVE_X86_TILES
// ---- AVX2 + FMA: 6 rows × 16 columns in twelve registers ----
// Each row's two accumulators are named variables (not an array), so that every optimization
// level keeps them in registers.
#define KF_TILE_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define KF_TILE_DECL(r) __m256 acc##r##a = _mm256_setzero_ps(), acc##r##b = _mm256_setzero_ps();
// Row r of A at inner step j: rows 0–2 off one pointer and rows 3–5 off another, each a multiple
// of the row step away (a displacement when Trans, else lda by a scaled index), so the inner loop
// needs five general registers.
#define KF_TILE_FMA(r)                                                                     \
  if constexpr (R > r) {                                                                   \
    const __m256 x = _mm256_broadcast_ss((r < 3 ? a0 : a3) + (r % 3) * (Trans ? 1 : lda)); \
    acc##r##a = _mm256_fmadd_ps(x, lo, acc##r##a);                                         \
    acc##r##b = _mm256_fmadd_ps(x, hi, acc##r##b);                                         \
  }
#define KF_TILE_STORE(r)                                                                           \
  if constexpr (R > r) {                                                                           \
    float* cr = c + r * ldc;                                                                       \
    _mm256_storeu_ps(cr, Add ? _mm256_add_ps(_mm256_loadu_ps(cr), acc##r##a) : acc##r##a);         \
    _mm256_storeu_ps(cr + 8, Add ? _mm256_add_ps(_mm256_loadu_ps(cr + 8), acc##r##b) : acc##r##b); \
  }

// R rows (1…6) of one 16-column block, over the whole inner dimension. Not inlined: in its own
// function the loop keeps every general register it uses; inlined into the panel loop, GCC kept
// the loop counter and the row offsets on the stack (a store and reloads every step), and the
// products ran at 82% of sgemm instead of 92–97% (bench_attention's tile_gemms/4096/3).
template <int R, bool Add, bool Trans>
[[gnu::target("avx2,fma"), gnu::noinline]] void block(const float* a, index lda, index inner,
                                                      const float* bp, float* c, index ldc) {
  KF_TILE_ROWS(KF_TILE_DECL)
  const index step = Trans ? lda : 1;  // from one inner index to the next in A
  const float* a0 = a;
  const float* a3 = a + 3 * (Trans ? 1 : lda);
  for (const float *bj = bp, *end = bp + inner * kPanel; bj != end; bj += kPanel) {
    const __m256 lo = _mm256_loadu_ps(bj), hi = _mm256_loadu_ps(bj + 8);
    KF_TILE_ROWS(KF_TILE_FMA)
    a0 += step;
    a3 += step;
  }
  KF_TILE_ROWS(KF_TILE_STORE)
}
#undef KF_TILE_STORE
#undef KF_TILE_FMA
#undef KF_TILE_DECL
#undef KF_TILE_ROWS

// R rows (1…6) of A against every panel: the rows stay in L1 while the panels stream past.
template <int R, bool Add, bool Trans>
[[gnu::target("avx2,fma")]] void block_rows(const float* a, index lda, index inner, const float* bp,
                                            index panel_stride, index panels, float* c, index ldc) {
  for (index q = 0; q < panels; ++q)
    block<R, Add, Trans>(a, lda, inner, bp + q * panel_stride, c + q * kPanel, ldc);
}

// Row groups of 6, then one group of the 1…5 rows left.
template <bool Add, bool Trans>
void product_avx2(const float* a, index lda, index rows, index inner, const float* bp,
                  index panel_stride, index panels, float* c, index ldc) {
  const index row_step = Trans ? 1 : lda;  // from one row of A to the next
  index i = 0;
  for (; i + 6 <= rows; i += 6)
    block_rows<6, Add, Trans>(a + i * row_step, lda, inner, bp, panel_stride, panels, c + i * ldc,
                              ldc);
  using rows_fn = void (*)(const float*, index, index, const float*, index, index, float*, index);
  static constexpr rows_fn rest[6] = {nullptr,
                                      block_rows<1, Add, Trans>,
                                      block_rows<2, Add, Trans>,
                                      block_rows<3, Add, Trans>,
                                      block_rows<4, Add, Trans>,
                                      block_rows<5, Add, Trans>};
  if (rows > i)
    rest[rows - i](a + i * row_step, lda, inner, bp, panel_stride, panels, c + i * ldc, ldc);
}

void scores_avx2(const float* a, index lda, index rows, index d, const float* kp, index panels,
                 float* s, index lds) {
  product_avx2<false, false>(a, lda, rows, d, kp, d * kPanel, panels, s, lds);
}
#endif

struct table {
  tile_variant v[2];
  int count = 0;
  int chosen = 0;
  table() {
    v[count++] = {"baseline", true, scores_base, product_base<true, false>,
                  product_base<true, true>};
#ifdef KF_HAVE_X86_TILES
    __builtin_cpu_init();
    v[count++] = {"avx2", __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
                  scores_avx2, product_avx2<true, false>, product_avx2<true, true>};
#endif
    for (int i = 0; i < count; ++i)
      if (v[i].available) chosen = i;
  }
};

const table& the_table() {
  static const table t;
  return t;
}

bool simd_runs() { return std::string_view(the_table().v[the_table().chosen].isa) != "baseline"; }

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> on = [] {
    const char* env = std::getenv("KF_TILE_KERNEL");
    return simd_runs() && !(env && std::string_view(env) == "0");
  }();
  return on;
}

}  // namespace

void tile_scores(const float* a, index lda, index rows, index d, const float* kp, index panels,
                 float* s, index lds) {
  static const auto fn = the_table().v[the_table().chosen].scores;
  fn(a, lda, rows, d, kp, panels, s, lds);
}

void tile_accumulate(const float* p, index ldp, index rows, index k, const float* vp,
                     index panel_stride, index panels, float* c, index ldc) {
  static const auto fn = the_table().v[the_table().chosen].accumulate;
  fn(p, ldp, rows, k, vp, panel_stride, panels, c, ldc);
}

void tile_accumulate_t(const float* pt, index ldp, index rows, index k, const float* vp,
                       index panel_stride, index panels, float* c, index ldc) {
  static const auto fn = the_table().v[the_table().chosen].accumulate_t;
  fn(pt, ldp, rows, k, vp, panel_stride, panels, c, ldc);
}

bool tile_kernel_enabled() { return enabled_flag().load(std::memory_order_relaxed); }

bool set_tile_kernel_enabled(bool on) { return enabled_flag().exchange(on && simd_runs()); }

std::span<const tile_variant> tile_variants() {
  const table& t = the_table();
  return {t.v, static_cast<std::size_t>(t.count)};
}

const char* tile_isa() { return the_table().v[the_table().chosen].isa; }

}  // namespace kf::detail
