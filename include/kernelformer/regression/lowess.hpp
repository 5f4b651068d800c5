// kernelformer/regression/lowess.hpp — LOWESS, Cleveland's robust locally weighted regression
// (Cleveland 1979; R's `lowess`, statsmodels' `lowess`).
//
// At each x_i, the local-linear fit with tricube weights (1 − (|x_j − x_i|/h_i)³)³ over the
// nearest neighbours, h_i the distance to the farthest of the ⌊span·n⌋ nearest (ties at that
// distance included); then `iterations` robustness passes, each weight times the bisquare
// (1 − (r_j / 6 m)²)² of the last pass's residual r_j (m the median |residual|). As R's C code:
// a point within 0.001·h of x_i gets weight 1 and beyond 0.999·h weight 0; a robustness weight is
// 1 below 0.001·6m and 0 beyond 0.999·6m; the slope is dropped (a weighted mean) when the local
// x spread is under 0.001 of the range; the passes stop early when 6m < 1e-7 × the mean
// |residual|. With delta > 0 the fit is computed only at points more than delta beyond the last
// fitted one and interpolated linearly in between (R's default, 1% of the range: a few hundred
// local fits whatever n). Each local fit sums over its sorted window: O(fits × span·n).
//
// Tested against R's lowess to 1e-12 (tests/regression/test_lowess.cpp, fixtures made by
// python/make_fixture_lowess.py) and against statsmodels (whose own code differs from R's by
// ~1e-9, and by ~1e-6 with delta).
#pragma once

#include <span>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf {

struct lowess_spec {
  double span = 2.0 / 3.0;  // the fraction of the points in each local fit (0, 1]
  int iterations = 3;       // robustness passes after the first fit (0: none)
  double delta = -1;        // interpolate within delta of the last fit; < 0: 1% of the x range
};

struct lowess_fit {
  lowess_spec spec;             // delta resolved
  std::vector<double> x, y;     // the data, sorted by x (stable: ties keep their order)
  std::vector<double> fitted;   // the smooth at each sorted x
  std::vector<double> weights;  // the last robustness weights (all 1 without iterations)
  std::vector<index> order;     // order[k]: the input row of sorted point k
  index neighbours = 0;         // points in each local fit, ⌊span·n⌋ clamped to [2, n]
  index local_fits = 0;         // local regressions computed in the last pass (the rest
                                // interpolated)
  int passes = 0;               // passes made: 1 + the robustness iterations run
};

// LOWESS of y on x (n ≥ 2 finite pairs). Throws std::invalid_argument naming what is wrong.
lowess_fit lowess(std::span<const double> x, std::span<const double> y,
                  const lowess_spec& spec = {});

// The smooth at new points: the local fit at each point itself — its span's nearest points,
// tricube weights times the last pass's robustness weights — as statsmodels' `xvals` does (so
// beyond the data it extrapolates the end's local line). At a training x fitted without delta
// skipping it equals `fitted` there. NaN where every weight is 0.

std::vector<double> lowess_predict(const lowess_fit& fit, std::span<const double> at);

}  // namespace kf
