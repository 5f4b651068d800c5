// kernelformer/regression/bandwidth_dpi.hpp — the direct plug-in bandwidth of gaussian
// local-linear regression (Ruppert, Sheather & Wand 1995), as R's KernSmooth::dpill computes it
// at its defaults (its numbers to ~1e-9: tests/regression/test_bandwidth_dpi.cpp against
// tests/fixtures/dpill_cases.json; the algorithm step by step: docs/notes/dpill_algorithm.md).
//
//   h = [σ̂² (b − a) / (2√π θ̂₂₂ n)]^(1/5)
//
// σ² and θ₂₄ first from least-squares quartics over N blocks of the sorted data (N ≤ 5 by
// Mallows' Cp), then θ₂₂ = mean m''² from a binned local cubic at a pilot bandwidth, then σ²
// again from a binned local-linear fit at a second pilot; 1% of the points trimmed at each end,
// a grid of 401 points over the trimmed range. The cost is a sort and O(n + 401·L) for the
// binned fits (L the kernel's half-width in grid steps): 10^6 points in about the time of the
// sort.
#pragma once

#include <span>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf {

// Every quantity of the computation, for tests and the summary.
struct dpi_steps {
  index n = 0;          // points after trimming
  double a = 0, b = 0;  // the grid's range: the trimmed data's
  index blocks_max = 0, blocks = 0;
  std::vector<double> cp;  // Mallows' Cp for 1..blocks_max blocks
  double sigma2_quartic = 0, theta24 = 0, pilot_theta22 = 0, theta22 = 0, pilot_sigma2 = 0;
  double sigma2 = 0, h = 0;
};

// The bandwidth for local-linear regression of y on x with the gaussian kernel. Throws
// std::invalid_argument naming the problem: fewer than 10 points, non-finite or constant x, a
// fit that cannot be made (fewer than 5 distinct x in a block, a pilot bandwidth below the grid's
// resolution, a singular local fit: data too irregular; R's dpill answers NaN or stops there).
double bandwidth_dpi(std::span<const double> x, std::span<const double> y,
                     dpi_steps* steps = nullptr);

}  // namespace kf
