// exp over arrays with run-time instruction-set dispatch (contract in vec_exp.hpp).
#include "detail/vec_exp.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>  // the AVX2 double loop (its functions carry target attributes)
#endif

namespace kf::detail {
namespace {

// e^r − 1 − r ≈ r²·(c2 + c3·r + c4·r² + c5·r³) on |r| ≤ ln2/2 in float: a minimax fit for the
// relative error of e^r (Lawson's iteration on 4,000 Chebyshev nodes; 1.05e-7 at worst before
// rounding). Degree 5 instead of Taylor's 7: five multiply-adds per value instead of eight, which
// took the float exp from 12% to 10% of attention's forward at n = 4096 (perf record).
constexpr float kExpF[4] = {0.499992311000824f, 0.16667114198207855f, 0.041890114545822144f,
                            0.008312525227665901f};

// Where exp_body puts a result: in place, or (Move) into y with the source zeroed.
template <bool Move, class T>
[[gnu::always_inline]] inline void store(T* x, T* y, index i, T e) {
  if constexpr (Move) {
    y[i] = e;
    x[i] = T(0);
  } else {
    x[i] = e;
  }
}

// One loop body, inlined into each target-specific wrapper below, so the compiler vectorizes it
// with that wrapper's instruction set. Every step is branch-free (selects), so `omp simd` holds.
// x[i] ← exp(x[i] − offset); returns Σ x[i] when Sum (a vector reduction: its order depends on n
// only, as the callers' rows are aligned). Move: the result goes to y[i] instead and x[i] ← 0.
template <class T, bool Sum = false, bool Move = false>
[[gnu::always_inline]] inline T exp_body(T* x, index n, T offset = T(0), T* y = nullptr) {
  T sum = T(0);
  if constexpr (std::is_same_v<T, double>) {
    constexpr double log2e = 1.4426950408889634, shift = 0x1.8p52;
    constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    constexpr double lo = -708.0, hi = 709.0;
#pragma omp simd reduction(+ : sum)
    for (index i = 0; i < n; ++i) {
      const double a = x[i] - offset;
      const double v = std::min(std::max(a, lo), hi);
      const double t = v * log2e + shift;  // round(v·log2e) in the low mantissa bits
      const double k = t - shift;
      const double r = (v - k * ln2_hi) - k * ln2_lo;  // |r| ≤ ln2/2
      // e^r: Taylor to r^13/13! (truncation < 2e-17 relative on |r| ≤ 0.347), evaluated by
      // Estrin's scheme: a dependency chain of depth 5 instead of Horner's 13.
      const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
      const double q0 = 1.0 + r, q1 = 1.0 / 2 + r * (1.0 / 6), q2 = 1.0 / 24 + r * (1.0 / 120),
                   q3 = 1.0 / 720 + r * (1.0 / 5040), q4 = 1.0 / 40320 + r * (1.0 / 362880),
                   q5 = 1.0 / 3628800 + r * (1.0 / 39916800),
                   q6 = 1.0 / 479001600 + r * (1.0 / 6227020800);
      const double s0 = q0 + q1 * r2, s1 = q2 + q3 * r2, s2 = q4 + q5 * r2;
      const double p = (s0 + s1 * r4) + (s2 + q6 * r4) * r8;
      // 2^k: t's bits are 0x4338000000000000 + k; adding the bias and shifting by 52 leaves
      // (k + 1023) in the exponent field (k ∈ [−1022, 1023] here).
      const std::uint64_t bits = (std::bit_cast<std::uint64_t>(t) + 1023u) << 52;
      const double e = a < lo ? 0.0 : p * std::bit_cast<double>(bits);
      store<Move>(x, y, i, e);
      if constexpr (Sum) sum += e;
    }
  } else {
    constexpr float log2e = 1.44269504f, shift = 0x1.8p23f;
    constexpr float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    constexpr float lo = -86.0f, hi = 88.0f;
#pragma omp simd reduction(+ : sum)
    for (index i = 0; i < n; ++i) {
      const float a = x[i] - offset;
      // No lower clamp: below lo (−inf included) the result is selected away, whatever the
      // intermediate values (NaN for −inf) were.
      const float v = std::min(a, hi);
      const float t = v * log2e + shift;
      const float k = t - shift;
      const float r = (v - k * ln2_hi) - k * ln2_lo;
      // e^r = 1 + r + r²·(c2 + c3·r + (c4 + c5·r)·r²): a degree-5 minimax fit on |r| ≤ ln2/2
      // (kExpF; relative error 1.05e-7 before rounding, 0.9 ulp).
      const float r2 = r * r;
      const float p =
          (1.0f + r) + r2 * ((kExpF[0] + kExpF[1] * r) + (kExpF[2] + kExpF[3] * r) * r2);
      // p·2^k by adding k to p's exponent field (an integer add instead of a multiply): t's low
      // 9 bits hold k mod 512, so t's bits shifted by 23 are k·2^23 mod 2^32. p ∈ [0.7, 1.42] has
      // biased exponent 126 or 127, and k ∈ [−124, 127] for a ∈ [lo, hi] keeps the sum in
      // [2, 254]: a normal float (lo = −86, not −87, for that).
      const std::uint32_t bits =
          std::bit_cast<std::uint32_t>(p) + (std::bit_cast<std::uint32_t>(t) << 23);
      const float e = a < lo ? 0.0f : std::bit_cast<float>(bits);
      store<Move>(x, y, i, e);
      if constexpr (Sum) sum += e;
    }
  }
  return sum;
}

// w[i] ← g·sin²(π·√s[i]·inv_p) (Add: w[i] += …), the periodic kernel's log-weight. t = √s/p is
// reduced to f = t − round(t) ∈ [−½, ½] exactly (floats ≥ 2^23 are integers: f = 0), then sin(πf)
// is its Taylor series to f¹³ (truncation < 1e-9 on |f| ≤ ½). A general sin (Eigen's) spends
// most of its time on a large-argument reduction this does not need: t is rounded once either way.
template <bool Add>
[[gnu::always_inline]] inline void sin2_body(const float* s, float* w, index n, float inv_p,
                                             float g) {
  constexpr float big = 0x1p23f, shift = 0x1.8p23f;
  constexpr double pi = 3.14159265358979323846, pi2 = pi * pi;
  constexpr float c1 = float(pi), c3 = float(-pi * pi2 / 6), c5 = float(pi * pi2 * pi2 / 120),
                  c7 = float(-pi * pi2 * pi2 * pi2 / 5040),
                  c9 = float(pi * pi2 * pi2 * pi2 * pi2 / 362880),
                  c11 = float(-pi * pi2 * pi2 * pi2 * pi2 * pi2 / 39916800),
                  c13 = float(pi * pi2 * pi2 * pi2 * pi2 * pi2 * pi2 / 6227020800.0);
#pragma omp simd
  for (index i = 0; i < n; ++i) {
    const float t = std::min(std::sqrt(s[i]) * inv_p, big);
    const float f = t - ((t + shift) - shift), f2 = f * f;
    const float sn =
        f * (c1 + f2 * (c3 + f2 * (c5 + f2 * (c7 + f2 * (c9 + f2 * (c11 + f2 * c13))))));
    const float x = g * (sn * sn);
    if constexpr (Add)
      w[i] += x;
    else
      w[i] = x;
  }
}

void sin2_base(const float* s, float* w, index n, float inv_p, float g, bool add) {
  add ? sin2_body<true>(s, w, n, inv_p, g) : sin2_body<false>(s, w, n, inv_p, g);
}

void exp_base_f(float* x, index n) { exp_body(x, n); }
void exp_base_d(double* x, index n) { exp_body(x, n); }
float exps_base_f(float* x, index n, float s) { return exp_body<float, true>(x, n, s); }
double exps_base_d(double* x, index n, double s) { return exp_body<double, true>(x, n, s); }
float expm_base_f(float* x, float* y, index n, float s) {
  return exp_body<float, true, true>(x, n, s, y);
}
double expm_base_d(double* x, double* y, index n, double s) {
  return exp_body<double, true, true>(x, n, s, y);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define KF_HAVE_X86_VARIANTS 1
__attribute__((target("avx2,fma"))) void sin2_avx2(const float* s, float* w, index n, float inv_p,
                                                   float g, bool add) {
  add ? sin2_body<true>(s, w, n, inv_p, g) : sin2_body<false>(s, w, n, inv_p, g);
}
__attribute__((target("avx512f,avx512dq"))) void sin2_avx512(const float* s, float* w, index n,
                                                             float inv_p, float g, bool add) {
  add ? sin2_body<true>(s, w, n, inv_p, g) : sin2_body<false>(s, w, n, inv_p, g);
}
// The AVX2 loops' shared steps, for float (8 lanes) and double (4): where a result goes (in
// place, or Move: to y with the source zeroed, as store() above), and the lanes' sum in a fixed
// order (pairs, then pairs of pairs), so a row's sum depends on its length only.
template <bool Move>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void put(float* x, float* y, index i,
                                                                __m256 e) {
  _mm256_storeu_ps((Move ? y : x) + i, e);
  if constexpr (Move) _mm256_storeu_ps(x + i, _mm256_setzero_ps());
}
template <bool Move>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void put(double* x, double* y, index i,
                                                                __m256d e) {
  _mm256_storeu_pd((Move ? y : x) + i, e);
  if constexpr (Move) _mm256_storeu_pd(x + i, _mm256_setzero_pd());
}
[[gnu::target("avx2,fma"), gnu::always_inline]] inline float lane_sum(__m256 acc) {
  alignas(32) float l[8];
  _mm256_store_ps(l, acc);
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}
[[gnu::target("avx2,fma"), gnu::always_inline]] inline double lane_sum(__m256d acc) {
  alignas(32) double l[4];
  _mm256_store_pd(l, acc);
  return (l[0] + l[1]) + (l[2] + l[3]);
}
// The float loop by intrinsics, for the same reasons (15% of attention's forward at n = 1024).
template <bool Sum, bool Move>
__attribute__((target("avx2,fma"))) float exp_avx2_f_body(float* x, index n, float offset,
                                                          float* y) {
  const __m256 lo = _mm256_set1_ps(-86.0f), hi = _mm256_set1_ps(88.0f),
               off = _mm256_set1_ps(offset), log2e = _mm256_set1_ps(1.44269504f),
               shift = _mm256_set1_ps(0x1.8p23f), ln2_hi = _mm256_set1_ps(0.693359375f),
               ln2_lo = _mm256_set1_ps(-2.12194440e-4f), one = _mm256_set1_ps(1.0f);
  const __m256 c2 = _mm256_set1_ps(kExpF[0]), c3 = _mm256_set1_ps(kExpF[1]),
               c4 = _mm256_set1_ps(kExpF[2]), c5 = _mm256_set1_ps(kExpF[3]);
  __m256 acc = _mm256_setzero_ps();
  index i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_sub_ps(_mm256_loadu_ps(x + i), off);
    const __m256 v = _mm256_min_ps(a, hi);
    const __m256 t = _mm256_fmadd_ps(v, log2e, shift);
    const __m256 k = _mm256_sub_ps(t, shift);
    const __m256 r = _mm256_fnmadd_ps(k, ln2_lo, _mm256_fnmadd_ps(k, ln2_hi, v));
    const __m256 r2 = _mm256_mul_ps(r, r);
    const __m256 q0 = _mm256_add_ps(one, r), q1 = _mm256_fmadd_ps(r, c3, c2),
                 q2 = _mm256_fmadd_ps(r, c5, c4);
    const __m256 p = _mm256_fmadd_ps(_mm256_fmadd_ps(q2, r2, q1), r2, q0);
    __m256 e = _mm256_castsi256_ps(
        _mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(_mm256_castps_si256(t), 23)));
    e = _mm256_andnot_ps(_mm256_cmp_ps(a, lo, _CMP_LT_OQ), e);  // below −86 (and −inf): 0
    put<Move>(x, y, i, e);
    if constexpr (Sum) acc = _mm256_add_ps(acc, e);
  }
  float sum = Sum ? lane_sum(acc) : 0.0f;
  // The last n mod 8 values by the generic loop (the same formula).
  if (i < n) sum += exp_body<float, Sum, Move>(x + i, n - i, offset, Move ? y + i : nullptr);
  return sum;
}

__attribute__((target("avx2,fma"))) void exp_avx2_f(float* x, index n) {
  exp_avx2_f_body<false, false>(x, n, 0.0f, nullptr);
}
// The double loop again, by intrinsics: GCC's code for exp_body<double> kept the running sum on
// the stack and clamped by four blends (21 cycles per 4 values here); this keeps every
// constant and the running sum in registers and clamps by max/min (contract: vec_exp.hpp).
template <bool Sum, bool Move>
__attribute__((target("avx2,fma"))) double exp_avx2_d_body(double* x, index n, double offset,
                                                           double* y) {
  const __m256d lo = _mm256_set1_pd(-708.0), hi = _mm256_set1_pd(709.0),
                off = _mm256_set1_pd(offset), log2e = _mm256_set1_pd(1.4426950408889634),
                shift = _mm256_set1_pd(0x1.8p52),
                ln2_hi = _mm256_set1_pd(6.93147180369123816490e-01),
                ln2_lo = _mm256_set1_pd(1.90821492927058770002e-10), one = _mm256_set1_pd(1.0);
  const __m256i bias = _mm256_set1_epi64x(1023);
  // 1/2!, 1/3!, …, 1/13!: the Taylor coefficients after 1 + r
  __m256d d[12];
  double f = 1;
  for (int j = 0; j < 12; ++j) {
    f *= j + 2;
    d[j] = _mm256_set1_pd(1.0 / f);
  }
  __m256d acc = _mm256_setzero_pd();
  index i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d a = _mm256_sub_pd(_mm256_loadu_pd(x + i), off);
    const __m256d v = _mm256_min_pd(_mm256_max_pd(a, lo), hi);
    const __m256d t = _mm256_fmadd_pd(v, log2e, shift);
    const __m256d k = _mm256_sub_pd(t, shift);
    const __m256d r = _mm256_fnmadd_pd(k, ln2_lo, _mm256_fnmadd_pd(k, ln2_hi, v));
    const __m256d r2 = _mm256_mul_pd(r, r), r4 = _mm256_mul_pd(r2, r2), r8 = _mm256_mul_pd(r4, r4);
    // (no lambda here: it would not inherit this function's target attribute)
    const __m256d q0 = _mm256_add_pd(one, r), q1 = _mm256_fmadd_pd(r, d[1], d[0]),
                  q2 = _mm256_fmadd_pd(r, d[3], d[2]), q3 = _mm256_fmadd_pd(r, d[5], d[4]),
                  q4 = _mm256_fmadd_pd(r, d[7], d[6]), q5 = _mm256_fmadd_pd(r, d[9], d[8]),
                  q6 = _mm256_fmadd_pd(r, d[11], d[10]);
    const __m256d s0 = _mm256_fmadd_pd(q1, r2, q0), s1 = _mm256_fmadd_pd(q3, r2, q2),
                  s2 = _mm256_fmadd_pd(q5, r2, q4);
    const __m256d p = _mm256_fmadd_pd(_mm256_fmadd_pd(q6, r4, s2), r8, _mm256_fmadd_pd(s1, r4, s0));
    const __m256i bits = _mm256_slli_epi64(_mm256_add_epi64(_mm256_castpd_si256(t), bias), 52);
    __m256d e = _mm256_mul_pd(p, _mm256_castsi256_pd(bits));
    e = _mm256_andnot_pd(_mm256_cmp_pd(a, lo, _CMP_LT_OQ), e);  // below −708 (and −inf): 0
    put<Move>(x, y, i, e);
    if constexpr (Sum) acc = _mm256_add_pd(acc, e);
  }
  double sum = Sum ? lane_sum(acc) : 0.0;
  // The last n mod 4 values by the generic loop (the same formula).
  if (i < n) sum += exp_body<double, Sum, Move>(x + i, n - i, offset, Move ? y + i : nullptr);
  return sum;
}

__attribute__((target("avx2,fma"))) void exp_avx2_d(double* x, index n) {
  exp_avx2_d_body<false, false>(x, n, 0.0, nullptr);
}
__attribute__((target("avx512f,avx512dq"))) void exp_avx512_f(float* x, index n) { exp_body(x, n); }
__attribute__((target("avx512f,avx512dq"))) void exp_avx512_d(double* x, index n) {
  exp_body(x, n);
}
__attribute__((target("avx2,fma"))) float exps_avx2_f(float* x, index n, float s) {
  return exp_avx2_f_body<true, false>(x, n, s, nullptr);
}
__attribute__((target("avx2,fma"))) double exps_avx2_d(double* x, index n, double s) {
  return exp_avx2_d_body<true, false>(x, n, s, nullptr);
}
__attribute__((target("avx512f,avx512dq"))) float exps_avx512_f(float* x, index n, float s) {
  return exp_body<float, true>(x, n, s);
}
__attribute__((target("avx512f,avx512dq"))) double exps_avx512_d(double* x, index n, double s) {
  return exp_body<double, true>(x, n, s);
}
__attribute__((target("avx2,fma"))) float expm_avx2_f(float* x, float* y, index n, float s) {
  return exp_avx2_f_body<true, true>(x, n, s, y);
}
__attribute__((target("avx2,fma"))) double expm_avx2_d(double* x, double* y, index n, double s) {
  return exp_avx2_d_body<true, true>(x, n, s, y);
}
__attribute__((target("avx512f,avx512dq"))) float expm_avx512_f(float* x, float* y, index n,
                                                                float s) {
  return exp_body<float, true, true>(x, n, s, y);
}
__attribute__((target("avx512f,avx512dq"))) double expm_avx512_d(double* x, double* y, index n,
                                                                 double s) {
  return exp_body<double, true, true>(x, n, s, y);
}
#endif

struct table {
  exp_variant v[3];
  int count = 0;
  int chosen = 0;
  table() {
    v[count++] = {"baseline",  true,        exp_base_f,  exp_base_d, exps_base_f,
                  exps_base_d, expm_base_f, expm_base_d, sin2_base};
#ifdef KF_HAVE_X86_VARIANTS
    __builtin_cpu_init();
    v[count++] = {"avx2",      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
                  exp_avx2_f,  exp_avx2_d,
                  exps_avx2_f, exps_avx2_d,
                  expm_avx2_f, expm_avx2_d,
                  sin2_avx2};
    v[count++] = {
        // F and DQ for the exp loops; BW and VL too, which isa_dispatch.hpp's AVX-512 wrapper is
        // compiled for (every CPU with DQ has them, but a VM may mask them).
        "avx512",
        __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"),
        exp_avx512_f,
        exp_avx512_d,
        exps_avx512_f,
        exps_avx512_d,
        expm_avx512_f,
        expm_avx512_d,
        sin2_avx512};
#endif
    const char* want = std::getenv("KF_SIMD");
    for (int i = 0; i < count; ++i) {
      if (!v[i].available) continue;
      chosen = i;
      if (want && std::string_view(want) == v[i].isa) break;
    }
  }
};

const table& the_table() {
  static const table t;
  return t;
}

}  // namespace

void exp_inplace(float* x, index n) {
  static const auto fn = the_table().v[the_table().chosen].exp_f;
  fn(x, n);
}
void exp_inplace(double* x, index n) {
  static const auto fn = the_table().v[the_table().chosen].exp_d;
  fn(x, n);
}

float exp_shift_sum(float* x, index n, float shift) {
  static const auto fn = the_table().v[the_table().chosen].exp_shift_sum_f;
  return fn(x, n, shift);
}
double exp_shift_sum(double* x, index n, double shift) {
  static const auto fn = the_table().v[the_table().chosen].exp_shift_sum_d;
  return fn(x, n, shift);
}

float exp_shift_sum_move(float* x, float* y, index n, float shift) {
  static const auto fn = the_table().v[the_table().chosen].exp_shift_sum_move_f;
  return fn(x, y, n, shift);
}
double exp_shift_sum_move(double* x, double* y, index n, double shift) {
  static const auto fn = the_table().v[the_table().chosen].exp_shift_sum_move_d;
  return fn(x, y, n, shift);
}

void periodic_log_weight(const float* s, float* w, index n, float inv_p, float g, bool add) {
  static const auto fn = the_table().v[the_table().chosen].periodic_log_weight;
  fn(s, w, n, inv_p, g, add);
}

std::span<const exp_variant> exp_variants() {
  const table& t = the_table();
  return {t.v, static_cast<std::size_t>(t.count)};
}

std::string exp_isa() { return the_table().v[the_table().chosen].isa; }

int simd_level() {
  static const int level = [] {
    const std::string_view isa = the_table().v[the_table().chosen].isa;
    return isa == "avx512" ? 2 : isa == "avx2" ? 1 : 0;
  }();
  return level;
}

}  // namespace kf::detail
