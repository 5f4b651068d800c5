// kernelformer/explore/explorer.hpp — kernel smoothing and attention on the same data, side by
// side (the computations behind `kf serve` and the report's seed-002 figure).
//
// Data: n points of a built-in function with Gaussian noise (seeded, deterministic).
// Nadaraya–Watson: weight K(|x0 − x_i| / h) with any distance kernel of the core.
// Attention: q = k = φ(x), the 4-D sinusoidal positional encoding of seed 002,
//   φ(x) = [sin ω1 x, cos ω1 x, sin ω2 x, cos ω2 x],  ω1 = π / (2R), ω2 = π / R  (R: the range),
// weight exp(φ(x0)·φ(x_i) / T) — the exp_dot kernel. φ(x0)·φ(x_i) = cos ω1 d + cos ω2 d depends
// only on d = x0 − x_i and decreases on [0, R]: dot-product attention on positional encodings is
// a stationary kernel smoother, with equivalent Gaussian bandwidth √(T / (ω1² + ω2²)) near d = 0.
// Both curves are one call each of the smoothing primitive.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

struct explorer_request {
  std::string function = "seed001";  // seed001 | sin | sinusoids | linear | step
  index n = 40;
  double noise = 1.0;
  std::uint64_t seed = 0;
  std::string kernel = "gaussian";  // any distance kernel name
  double bandwidth = 0.5;
  double temperature = 0.1;
  index grid = 200;
};

struct explorer_function_info {
  std::string name, description;
  double lo, hi;
};
std::vector<explorer_function_info> explorer_functions();

// Checks ranges (2 ≤ n ≤ 2000, 0 < bandwidth ≤ 1e3, 0 < temperature ≤ 1e3, 0 ≤ noise ≤ 10,
// 10 ≤ grid ≤ 2000, a known function and distance kernel); throws std::invalid_argument naming the
// parameter and what was expected.
void explorer_validate(const explorer_request& r);

struct explorer_data {
  std::vector<double> x, y;         // sorted by x
  std::vector<double> grid, truth;  // query grid over [lo, hi] and f there
  double lo = 0, hi = 1;
};
explorer_data explorer_make_data(const explorer_request& r);

// φ(x) rows for the given range (n × 4).
matrix<double> explorer_features(const std::vector<double>& x, double lo, double hi);
double explorer_equivalent_bandwidth(double temperature, double lo, double hi);

struct explorer_result {
  explorer_data data;
  std::vector<double> nw, attention;       // at the grid (NaN where no weight: compact kernel)
  double bandwidth_loo = 0;                // LOO-CV bandwidth of the chosen kernel
  double attention_bandwidth = 0;          // equivalent Gaussian bandwidth of the attention
  index heat_rows = 0;                     // ≤ 60 grid rows, evenly spaced
  std::vector<double> heat_x;              // their x
  matrix<double> heat_nw, heat_attention;  // heat_rows × n normalized weights
};
explorer_result explorer_compute(const explorer_request& r);

// Weights every data point gets when the query is data point `point` (each sums to 1, or is all
// zero when no weight is positive). Throws std::out_of_range for a bad index.
struct explorer_profile {
  double x0 = 0;
  std::vector<double> nw, attention;
};
explorer_profile explorer_point_profile(const explorer_request& r, index point);

}  // namespace kf
