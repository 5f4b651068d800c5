// kernelformer/regression/bandwidth_isj.hpp — the improved Sheather–Jones (ISJ) bandwidth of a
// gaussian-kernel density estimate in 1-D (Botev, Grotowski & Kroese 2010, "Kernel density
// estimation via diffusion"), as KDEpy's improved_sheather_jones computes it, so Python users get
// the same number (to ~1e-12: tests/regression/test_bandwidth_isj.cpp against
// tests/fixtures/isj_cases.json; the algorithm step by step: docs/notes/isj_algorithm.md).
//
//   h = √t* · (max x − min x),   t* the root of  t = ξ γ^[5](t)
//
// The data are binned linearly on 1024 equidistant points over [min − e, max + e],
// e = max(range/2, 6) (KDEpy's absolute 6 makes h depend on the data's units when the range is
// below 12: KDEpy issue #201); the binned data's DCT-II gives ‖f^(s)‖² at any diffusion time by
// Parseval, and γ^[5] chains the plug-in estimates from ‖f^(7)‖² down to ‖f''‖². t* is found by
// Brent's method in [0, b], b doubled from 1e-11 + 0.01·(N − 50)/1000 (N the number of distinct
// values, clamped to [50, 1050]) until the bracket holds a sign change. Unlike Botev's MATLAB,
// KDEpy scales t* by the data's range, not the grid's (KDEpy issue #199): we follow KDEpy. The
// cost is O(n) for the binning and the distinct count (counting sort into the grid's cells, then
// small hash tables) plus O(1024 log 1024) for the DCT: 10^6 points in about 15 ms.
#pragma once

#include <span>

#include "kernelformer/tensor.hpp"

namespace kf {

// The quantities of the computation, for tests and the summary.
struct isj_steps {
  index grid = 0;         // grid points (1024)
  double lo = 0, hi = 0;  // the grid's end points: the data's range extended by e on each side
  double t_star = 0;      // the root, in units of the grid's length squared
  double h = 0;           // the bandwidth, √t* · (max x − min x)
};

// The ISJ bandwidth of the values x. Throws std::invalid_argument naming the problem: fewer than
// 2 points, a non-finite value, constant data, or no root below 1 (few or heavily tied points,
// e.g. any 2 distinct values; KDEpy raises ValueError "Root finding did not converge. Need more
// data." there).
double bandwidth_isj(std::span<const double> x, isj_steps* steps = nullptr);

}  // namespace kf
