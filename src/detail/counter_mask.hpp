// Internal: the one keep/drop decision behind every dropout in the project — the dropout layer
// and the smoothing primitive's weight dropout. Element t of a call keeps when 24 bits of a
// 32-bit hash of (seed, t) reach rate·2²⁴ (rate resolved to 2⁻²⁴). It is a pure function of
// (seed, t): no generator stream, so the backward pass can redraw it, rows vectorize (integer
// arithmetic on 32-bit lanes) and any split across threads gives the same mask.
#pragma once

#include <cmath>
#include <cstdint>

namespace kf::detail {

struct counter_mask {
  std::uint32_t lo = 0, hi = 0, threshold = 0;

  counter_mask() = default;
  counter_mask(std::uint64_t seed, double rate)
      : lo(static_cast<std::uint32_t>(seed)),
        hi(static_cast<std::uint32_t>(seed >> 32)),
        threshold(static_cast<std::uint32_t>(std::lround(rate * 16777216.0))) {}

  static std::uint32_t mix(std::uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
  }
  // t is the element's counter within the call (e.g. row · columns + column), taken mod 2³².
  bool keep(std::uint32_t t) const { return (mix(mix(t + lo) ^ hi) >> 8) >= threshold; }
};

}  // namespace kf::detail
