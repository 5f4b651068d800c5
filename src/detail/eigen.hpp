// Internal: Eigen, as every file of the library includes it.
//
// GCC 12's AVX-512 intrinsics build their "undefined" vectors by self-initialization
// (`__m256d __Y = __Y;` in _mm256_undefined_pd and friends, avx512fintrin.h). Once Eigen's
// AVX-512 packet code (pmax, predux, extract…) is inlined into ours, -Wmaybe-uninitialized and
// -Wuninitialized flag those header lines — GCC bug 105593, fixed in GCC 13 — and -Werror stops
// any build whose flags enable AVX-512 (-march=x86-64-v4, or -march=native on such a CPU).
// The warning is about GCC's own header, reached through Eigen's, so it is silenced for these
// includes and the code inlined from them only: GCC matches a middle-end warning against the
// pragmas along the whole inlining chain, and our own code keeps both warnings as errors.
#pragma once

#pragma GCC diagnostic push
#if !defined(__clang__)  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Dense>
#include <unsupported/Eigen/SpecialFunctions>
#pragma GCC diagnostic pop
