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

// ---- baseline: plain loops, with the build's flags ----

void scores_base(const float* a, index lda, index rows, index d, const float* kp, index panels,
                 float* s, index lds) {
  for (index i = 0; i < rows; ++i)
    for (index p = 0; p < panels; ++p) {
      float acc[kPanel] = {};
      const float* panel = kp + p * d * kPanel;
      for (index c = 0; c < d; ++c) {
        const float x = a[i * lda + c];
        for (index r = 0; r < kPanel; ++r) acc[r] += x * panel[c * kPanel + r];
      }
      for (index r = 0; r < kPanel; ++r) s[i * lds + p * kPanel + r] = acc[r];
    }
}

void accumulate_base(const float* p, index ldp, index rows, index k, const float* vp,
                     index panel_stride, index panels, float* c, index ldc) {
  for (index i = 0; i < rows; ++i)
    for (index q = 0; q < panels; ++q) {
      float acc[kPanel] = {};
      const float* panel = vp + q * panel_stride;
      for (index j = 0; j < k; ++j) {
        const float x = p[i * ldp + j];
        for (index r = 0; r < kPanel; ++r) acc[r] += x * panel[j * kPanel + r];
      }
      for (index r = 0; r < kPanel; ++r) c[i * ldc + q * kPanel + r] += acc[r];
    }
}

#ifdef KF_HAVE_X86_TILES
// ---- AVX2 + FMA: 6 rows × 16 columns in twelve registers ----
// Each row's two accumulators are named variables (not an array), so that every optimization
// level keeps them in registers.
#define KF_TILE_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define KF_TILE_DECL(r) __m256 acc##r##a = _mm256_setzero_ps(), acc##r##b = _mm256_setzero_ps();
#define KF_TILE_FMA(r, ptr)                        \
  if constexpr (R > r) {                           \
    const __m256 x = _mm256_broadcast_ss(ptr);     \
    acc##r##a = _mm256_fmadd_ps(x, lo, acc##r##a); \
    acc##r##b = _mm256_fmadd_ps(x, hi, acc##r##b); \
  }

// R rows (1…6) of one 16-column score block.
template <int R>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void scores_block(const float* a, index lda,
                                                                         index d, const float* kp,
                                                                         float* s, index lds) {
  KF_TILE_ROWS(KF_TILE_DECL)
  for (index c = 0; c < d; ++c) {
    const __m256 lo = _mm256_loadu_ps(kp + c * kPanel), hi = _mm256_loadu_ps(kp + c * kPanel + 8);
#define KF_TILE_SCORE_STEP(r) KF_TILE_FMA(r, a + r * lda + c)
    KF_TILE_ROWS(KF_TILE_SCORE_STEP)
#undef KF_TILE_SCORE_STEP
  }
#define KF_TILE_SCORE_STORE(r)                    \
  if constexpr (R > r) {                          \
    _mm256_storeu_ps(s + r * lds, acc##r##a);     \
    _mm256_storeu_ps(s + r * lds + 8, acc##r##b); \
  }
  KF_TILE_ROWS(KF_TILE_SCORE_STORE)
#undef KF_TILE_SCORE_STORE
}

// R rows (1…6) of one 16-column accumulation block.
template <int R>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void accumulate_block(const float* p,
                                                                             index ldp, index k,
                                                                             const float* vp,
                                                                             float* c, index ldc) {
  KF_TILE_ROWS(KF_TILE_DECL)
  for (index j = 0; j < k; ++j) {
    const __m256 lo = _mm256_loadu_ps(vp + j * kPanel), hi = _mm256_loadu_ps(vp + j * kPanel + 8);
#define KF_TILE_ACC_STEP(r) KF_TILE_FMA(r, p + r * ldp + j)
    KF_TILE_ROWS(KF_TILE_ACC_STEP)
#undef KF_TILE_ACC_STEP
  }
#define KF_TILE_ACC_STORE(r)                                                                       \
  if constexpr (R > r) {                                                                           \
    _mm256_storeu_ps(c + r * ldc, _mm256_add_ps(_mm256_loadu_ps(c + r * ldc), acc##r##a));         \
    _mm256_storeu_ps(c + r * ldc + 8, _mm256_add_ps(_mm256_loadu_ps(c + r * ldc + 8), acc##r##b)); \
  }
  KF_TILE_ROWS(KF_TILE_ACC_STORE)
#undef KF_TILE_ACC_STORE
}
#undef KF_TILE_FMA
#undef KF_TILE_DECL
#undef KF_TILE_ROWS

// R rows (1…6) of A against every panel: the rows stay in L1 while the panels stream past.
template <int R>
[[gnu::target("avx2,fma")]] void scores_rows(const float* a, index lda, index d, const float* kp,
                                             index panels, float* s, index lds) {
  for (index p = 0; p < panels; ++p)
    scores_block<R>(a, lda, d, kp + p * d * kPanel, s + p * kPanel, lds);
}

template <int R>
[[gnu::target("avx2,fma")]] void accumulate_rows(const float* p, index ldp, index k,
                                                 const float* vp, index panel_stride, index panels,
                                                 float* c, index ldc) {
  for (index q = 0; q < panels; ++q)
    accumulate_block<R>(p, ldp, k, vp + q * panel_stride, c + q * kPanel, ldc);
}

// Row groups of 6, then one group of the 1…5 rows left.
void scores_avx2(const float* a, index lda, index rows, index d, const float* kp, index panels,
                 float* s, index lds) {
  index i = 0;
  for (; i + 6 <= rows; i += 6) scores_rows<6>(a + i * lda, lda, d, kp, panels, s + i * lds, lds);
  const float* ai = a + i * lda;
  float* si = s + i * lds;
  switch (rows - i) {
    case 5:
      scores_rows<5>(ai, lda, d, kp, panels, si, lds);
      break;
    case 4:
      scores_rows<4>(ai, lda, d, kp, panels, si, lds);
      break;
    case 3:
      scores_rows<3>(ai, lda, d, kp, panels, si, lds);
      break;
    case 2:
      scores_rows<2>(ai, lda, d, kp, panels, si, lds);
      break;
    case 1:
      scores_rows<1>(ai, lda, d, kp, panels, si, lds);
      break;
    default:
      break;
  }
}

void accumulate_avx2(const float* p, index ldp, index rows, index k, const float* vp,
                     index panel_stride, index panels, float* c, index ldc) {
  index i = 0;
  for (; i + 6 <= rows; i += 6)
    accumulate_rows<6>(p + i * ldp, ldp, k, vp, panel_stride, panels, c + i * ldc, ldc);
  const float* pi = p + i * ldp;
  float* ci = c + i * ldc;
  switch (rows - i) {
    case 5:
      accumulate_rows<5>(pi, ldp, k, vp, panel_stride, panels, ci, ldc);
      break;
    case 4:
      accumulate_rows<4>(pi, ldp, k, vp, panel_stride, panels, ci, ldc);
      break;
    case 3:
      accumulate_rows<3>(pi, ldp, k, vp, panel_stride, panels, ci, ldc);
      break;
    case 2:
      accumulate_rows<2>(pi, ldp, k, vp, panel_stride, panels, ci, ldc);
      break;
    case 1:
      accumulate_rows<1>(pi, ldp, k, vp, panel_stride, panels, ci, ldc);
      break;
    default:
      break;
  }
}
#endif

struct table {
  tile_variant v[2];
  int count = 0;
  int chosen = 0;
  table() {
    v[count++] = {"baseline", true, scores_base, accumulate_base};
#ifdef KF_HAVE_X86_TILES
    __builtin_cpu_init();
    v[count++] = {"avx2", __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
                  scores_avx2, accumulate_avx2};
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

bool tile_kernel_enabled() { return enabled_flag().load(std::memory_order_relaxed); }

bool set_tile_kernel_enabled(bool on) { return enabled_flag().exchange(on && simd_runs()); }

std::span<const tile_variant> tile_variants() {
  const table& t = the_table();
  return {t.v, static_cast<std::size_t>(t.count)};
}

const char* tile_isa() { return the_table().v[the_table().chosen].isa; }

}  // namespace kf::detail
