// kernelformer/explore/explorer.hpp — kernel smoothing and attention on the same data, side by
// side (the computations behind `kf serve` and the report's seed-002 figure).
//
// Data: n points of a built-in function with Gaussian noise (seeded, deterministic), or a fixed
// set (seed 001's 40 points, numpy seed 42).
// Nadaraya–Watson: weight K(|x0 − x_i| / h) with any distance kernel of the core and its
// parameters ("periodic:period=1").
// Attention: a head on φ(x), the 4-D sinusoidal positional encoding of seed 002,
//   φ(x) = [sin ω1 t, cos ω1 t, sin ω2 t, cos ω2 t],  t = x − lo,  ω1 = π / (2R), ω2 = π / R,
// q = φ(x0) W_q, k_i = φ(x_i) W_k, weight K(q, k_i) (explore/explorer_head.hpp). With W = I and
// K = exp(q·k / T) (mode "identity"), q·k = cos ω1 d + cos ω2 d depends only on d = x0 − x_i
// and decreases on [0, R]: dot-product attention on positional encodings is a stationary kernel
// smoother, with equivalent Gaussian bandwidth √(T / (ω1² + ω2²)) near d = 0. The other modes
// (random, trained to mimic the smoother, trained on the data) are heads that are not.
// Every curve and weight is one call of the smoothing primitive.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

struct explorer_request {
  std::string function = "seed001";  // a name of explorer_functions()
  index n = 40;                      // ignored by fixed data sets
  double noise = 1.0;                // ignored by fixed data sets
  std::uint64_t seed = 0;            // data noise, and the random head's W_q, W_k
  std::string kernel = "gaussian";   // a distance kernel, parameters after ':' ("periodic:p=1")
  double bandwidth = 0.5;
  std::string attention = "identity";        // identity | random | mimic | data
  std::string attention_kernel = "exp_dot";  // identity mode: exp_dot | polynomial | linear
  double temperature = 0.1;                  // identity mode's T
  index grid = 200;
};

struct explorer_function_info {
  std::string name, description;
  double lo, hi;
  index fixed_n = 0;  // > 0: a fixed data set of this many points (n, noise, seed ignored)
};
std::vector<explorer_function_info> explorer_functions();

// A kernel parameter beyond the bandwidth/temperature, for a control: key as kernel_parse reads
// it, default, range, integer or not, log scale or not.
struct explorer_kernel_param {
  std::string key, label;
  double value, lo, hi;
  bool integer = false, log_scale = false;
};
struct explorer_kernel_info {
  std::string name, doc;
  bool compact = false;
  std::vector<explorer_kernel_param> params;
};
std::vector<explorer_kernel_info> explorer_kernels();            // distance kernels (NW)
std::vector<explorer_kernel_info> explorer_attention_kernels();  // dot kernels (identity head)

// Checks ranges (2 ≤ n ≤ 2000, 0 < bandwidth ≤ 1e3, 0 < temperature ≤ 1e3, 0 ≤ noise ≤ 10,
// 10 ≤ grid ≤ 2000, a known function, distance kernel, attention mode and attention kernel, kernel
// parameters within their ranges); throws std::invalid_argument naming the parameter and what was
// expected.
void explorer_validate(const explorer_request& r);

struct explorer_data {
  std::vector<double> x, y;         // sorted by x
  std::vector<double> grid, truth;  // query grid over [lo, hi] and f there
  double lo = 0, hi = 1;
};
explorer_data explorer_make_data(const explorer_request& r);

// The NW kernel of the request: its parameters from `kernel`, its bandwidth from `bandwidth`.
kernel_spec explorer_nw_kernel(const explorer_request& r);
// The identity head's kernel: `attention_kernel` with temperature `temperature`.
kernel_spec explorer_attention_kernel(const explorer_request& r);
// identity, random, mimic, data (explorer_head.hpp).
const std::vector<std::string>& explorer_attention_modes();

// φ(x) rows for the given range (n × 4).
matrix<double> explorer_features(const std::vector<double>& x, double lo, double hi);
double explorer_equivalent_bandwidth(double temperature, double lo, double hi);

struct explorer_head;  // explore/explorer_head.hpp

struct explorer_result {
  explorer_data data;
  std::vector<double> nw, attention;  // at the grid (NaN where no weight: compact kernel)
  double attention_bandwidth = 0;     // identity exp_dot head: equivalent Gaussian bandwidth
  // The weight matrices, downsampled for a picture: ≤ 60 grid rows, evenly spaced; columns are
  // runs of consecutive data points (one point each up to 120 points), each column's weight the
  // sum over its run.
  std::vector<double> heat_x;         // the rows' x
  std::vector<index> heat_col_first;  // first data point of each column (size cols + 1, last = n)
  matrix<double> heat_nw, heat_attention;  // rows × cols
};
explorer_result explorer_compute(const explorer_request& r, const explorer_head& head);

// Weights every data point gets when the query is data point `point` (each sums to 1, or is all
// zero when no weight is positive). Throws std::out_of_range for a bad index.
struct explorer_profile {
  index point = 0;
  double x0 = 0;
  std::vector<double> nw, attention;
};
explorer_profile explorer_point_profile(const explorer_request& r, const explorer_head& head,
                                        const explorer_data& d, index point);
// The data point whose x is nearest to x0 (the lower index on a tie).
index explorer_nearest_point(const explorer_data& d, double x0);

// Leave-one-out CV bandwidth of the request's kernel on its data (NaN when CV cannot choose one,
// e.g. a compact kernel whose every bandwidth leaves a point without neighbours).
double explorer_loo_bandwidth(const explorer_request& r);

}  // namespace kf
