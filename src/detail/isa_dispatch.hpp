// Internal: the smoother's block loops compiled for AVX2 and AVX-512 beside the build's own
// instruction set, chosen at run time.
//
// A portable build compiles for baseline x86-64 (SSE2). The exp pass and the register-tile
// products dispatch by themselves (vec_exp.hpp, tile_kernel.hpp), but the rest of a block's work
// — distances by direct differences, compact kernels' weights, the row bookkeeping, P·V for
// narrow values — ran at SSE2 width: 1.5–3.6× slower than a -march=native build on the 1-D
// regression paths. isa_invoke(fn, args...) calls fn through a wrapper that carries
// target("avx2,fma") or target("avx512…") and GCC's `flatten`: every call inside fn whose body
// the compiler can see (weight_tile, the kernels' weight functions, the std::visit over kernels,
// the loops) is inlined into the wrapper and compiled for that instruction set. Calls it cannot
// see (BLAS, the exp pass, OpenMP's runtime) stay calls to their own dispatched code.
//
// Why this is safe where compiling a whole file twice is not: the wrappers are templates on the
// callable's type, and each call site passes its own lambda, so every wrapper instantiation is a
// distinct symbol; nothing that another file also instantiates is compiled with the wider
// instruction set (no inline function's out-of-line copy can be picked by the linker for a CPU
// that lacks it). The level is vec_exp's choice (simd_level(): KF_SIMD=baseline|avx2|avx512
// selects another available one, as for the exp pass).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <variant>

#include "detail/vec_exp.hpp"

namespace kf::detail {

// std::visit over a kernel variant with direct calls: GCC's std::visit calls each alternative
// through a table of function pointers, which `flatten` cannot inline, so the per-kernel tile
// loops would stay at the baseline instruction set. This chain of index tests compiles to a
// jump table over inlined bodies. Same contract as std::visit for the smoother's uses (one
// variant, a callable valid for every alternative, the same result type for all).
template <class Fn, class V, std::size_t... I>
decltype(auto) visit_inline_impl(Fn&& fn, V& v, std::index_sequence<I...>) {
  using R = decltype(fn(*std::get_if<0>(&v)));
  if constexpr (std::is_void_v<R>) {
    (void)((v.index() == I ? (fn(*std::get_if<I>(&v)), true) : false) || ...);
  } else {
    R r{};
    (void)((v.index() == I ? (r = fn(*std::get_if<I>(&v)), true) : false) || ...);
    return r;
  }
}

template <class Fn, class V>
decltype(auto) visit_inline(Fn&& fn, V& v) {
  return visit_inline_impl(std::forward<Fn>(fn), v,
                           std::make_index_sequence<std::variant_size_v<std::remove_cv_t<V>>>{});
}

// Under AddressSanitizer (the asan preset, the fuzz build) only the build's own instruction set
// is compiled: the AVX2 and AVX-512 wrappers are the same source compiled for wider registers,
// so the sanitizer checks every memory access of it once, and the dev suite checks every variant's
// numbers. Flattened and instrumented three times over, the block loops took minutes per file to
// compile (src/smooth/topk.cpp: ~4 min at -O1), the CI's longest step.
#if defined(__SANITIZE_ADDRESS__)
#define KF_ISA_SINGLE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KF_ISA_SINGLE 1
#endif
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(KF_ISA_SINGLE)
// GCC widens the AVX-512 variant's loops to 512 bits only when asked; clang (the fuzz build) has
// no such target attribute and chooses the width itself.
#if defined(__clang__)
#define KF_AVX512_TARGET "avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"
#else
#define KF_AVX512_TARGET "avx512f,avx512dq,avx512vl,avx512bw,avx2,fma,prefer-vector-width=512"
#endif

template <class Fn, class... A>
[[gnu::target("avx2,fma"), gnu::flatten]] void isa_run_avx2(Fn& fn, A&&... a) {
  fn(std::forward<A>(a)...);
}

template <class Fn, class... A>
[[gnu::target(KF_AVX512_TARGET), gnu::flatten]] void isa_run_avx512(Fn& fn, A&&... a) {
  fn(std::forward<A>(a)...);
}

// fn(a...) at the run-time instruction-set level.
template <class Fn, class... A>
void isa_invoke(Fn& fn, A&&... a) {
  switch (simd_level()) {
    case 2:
      isa_run_avx512(fn, std::forward<A>(a)...);
      return;
    case 1:
      isa_run_avx2(fn, std::forward<A>(a)...);
      return;
    default:
      fn(std::forward<A>(a)...);
  }
}
#else
template <class Fn, class... A>
void isa_invoke(Fn& fn, A&&... a) {
  fn(std::forward<A>(a)...);
}
#endif

}  // namespace kf::detail
