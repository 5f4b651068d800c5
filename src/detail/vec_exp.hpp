// Internal: exp over arrays, vectorized, with the instruction set chosen at run time (and the
// periodic kernel's sin² pass, which needs the same treatment).
//
// The smoother's tiles spend most of their time in exp (Eigen's double exp divides, and Eigen
// picks its vector width when the library is compiled). Here one plain loop — Cody–Waite range
// reduction x = n·ln2 + r, a polynomial for e^r (Taylor in double, a minimax fit in float), 2^n in
// the exponent bits — is compiled three times: with the build's own flags ("baseline": SSE2 for a
// portable build), for AVX2+FMA and for AVX-512 (the AVX2 exp is the same formula written with
// intrinsics: GCC's code for the plain loop kept the running sum on the stack and clamped by
// blends, 25% slower in double); the first call picks the widest one this CPU runs
// (KF_SIMD=baseline|avx2|avx512 selects another available one, e.g. to compare).
// A portable build therefore runs AVX2 or AVX-512 code where the CPU has it, and never an
// instruction the CPU lacks.
//
// Contract (tests/test_vec_exp.cpp ties every variant to std::exp):
//   - relative error ≤ 4 ulp for normal results; exp(0) = 1 exactly;
//   - arguments below −708 (double) / −86 (float), including −inf, give exactly 0 (results that
//     would be subnormal are flushed: the smoother uses exp(w − max) ≤ 1, where such weights are
//     below 1e-307 / 5e-38 of the row's largest);
//   - arguments above 709 / 88 are clamped there (finite); NaN is not supported (callers never
//     pass one: inputs are checked or come from finite parameters).
#pragma once

#include <span>
#include <string>

#include "kernelformer/tensor.hpp"

namespace kf::detail {

void exp_inplace(float* x, index n);
void exp_inplace(double* x, index n);
// x[i] ← exp(x[i] − shift) (same contract, applied to x[i] − shift), returning Σ x[i]: the
// smoother's forward row step in one pass.
float exp_shift_sum(float* x, index n, float shift);
double exp_shift_sum(double* x, index n, double shift);
// y[i] ← exp(x[i] − shift) and x[i] ← 0, returning Σ y[i] (the same values and sum as
// exp_shift_sum): the forward keeps its score tile zeroed, so the next tile's GEMM adds to it
// (β = 1) without OpenBLAS's separate β = 0 pass.
float exp_shift_sum_move(float* x, float* y, index n, float shift);
double exp_shift_sum_move(double* x, double* y, index n, double shift);

// w[i] ← g·sin²(π·√s[i]·inv_p), or w[i] += it when add: the periodic kernel's log-weight on a
// tile of squared distances s ≥ 0 (g = −2/h², inv_p = 1/period). Absolute error ≤ ~2 ulp of |g|
// beyond the rounding of √s·inv_p itself (which std::sin(π/p·√s) has too); float only.
void periodic_log_weight(const float* s, float* w, index n, float inv_p, float g, bool add);

// The variants compiled in; `available` says whether this CPU runs them.
struct exp_variant {
  const char* isa;  // "baseline", "avx2", "avx512"
  bool available;
  void (*exp_f)(float*, index);
  void (*exp_d)(double*, index);
  float (*exp_shift_sum_f)(float*, index, float);
  double (*exp_shift_sum_d)(double*, index, double);
  float (*exp_shift_sum_move_f)(float*, float*, index, float);
  double (*exp_shift_sum_move_d)(double*, double*, index, double);
  void (*periodic_log_weight)(const float*, float*, index, float, float, bool);
};
std::span<const exp_variant> exp_variants();
// The variant exp_inplace uses (after KF_SIMD), e.g. "avx2".
std::string exp_isa();
// The same choice as a level: 0 baseline, 1 AVX2+FMA, 2 AVX-512 (isa_dispatch.hpp runs the
// smoother's block loops at this level too).
int simd_level();

}  // namespace kf::detail
