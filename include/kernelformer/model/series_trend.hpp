// kernelformer/model/series_trend.hpp — the kernel-trend forecaster of `kf train series`: a
// classical decomposition whose trend is the project's own local-linear smoother.
//
// On values z_0 … z_{n−1} with period m (m < 2: no season):
//   1. a first trend by the centered moving average over one period (2×m for an even m);
//   2. the season: the mean of z − that trend at each phase, centered to sum 0;
//   3. the trend: the local-linear smoother (regression/smoother.hpp, gaussian kernel, bandwidth
//      in steps by leave-one-out CV) of the deseasonalized z − season over t = 0 … n − 1;
//   4. the forecast k steps ahead: trend(n − 1) + k · slope + season at step n − 1 + k, the slope
//      the local line's at the last value (the fit at n − 1 minus the fit at n − 2).
// A local-linear fit has no boundary bias, so the last value's level and slope are the local
// line's, which is what a trend extrapolation needs.
#pragma once

#include <span>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf::model {

struct kernel_trend {
  double level = 0, slope = 0;  // the trend at the last value, and its change per step
  std::vector<double> season;   // m offsets summing to 0 (empty: none); season[(k − 1) % m]
                                // is the offset of the k-th step after the last value
  double bandwidth = 0;         // the smoother's, in steps (by LOO-CV)
  std::vector<double> forecast(index steps) const;  // 1 … steps ahead
};

// bandwidth > 0: the smoother's, as given (one pass instead of the search). Throws
// std::invalid_argument when z has fewer than max(2 m, 8) values or a non-finite one.
kernel_trend kernel_trend_fit(std::span<const double> z, index period, double bandwidth = 0);

}  // namespace kf::model
