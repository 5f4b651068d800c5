// The explorer API's JSON, compact: numbers rounded to what is drawn, weight matrices as 8-bit
// levels in base64, long curves thinned (serve_api.cpp; docs/explorer.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernelformer/explore/explorer.hpp"
#include "kernelformer/explore/explorer_head.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::cli {

// v rounded to `digits` significant digits (the nearest double to the decimal, so the JSON
// writer's shortest round-trip form prints at most `digits` digits); |v| < 1e-15 becomes 0.
double round_sig(double v, int digits);
// Each value rounded; NaN is written as null.
nlohmann::json numbers(const std::vector<double>& v, int digits);
std::string base64(const std::vector<std::uint8_t>& b);
// A weight matrix as the heatmap draws it: levels 0..255 of w / max(w), row-major, base64.
nlohmann::json levels(const matrix<double>& w);
// Weights to 4 significant digits, and 0 below 1e-5 of the row's largest (a fraction of a pixel
// in the profile plot): far from the query most weights then travel as "0".
nlohmann::json weights(const std::vector<double>& w);
nlohmann::json profile_json(const explorer_profile& p);
// A head: its mode, kernel, training (the loss curve at most ~120 points) and whether it came
// from the cache.
nlohmann::json head_json(const explorer_head& h, bool hit);
// The head read as a kernel (/api/fit): its mode, every shape's fit, the best, the asymmetry.
nlohmann::json head_fit_json(const explorer_head& h, const explorer_head_diagnostics& fit);
// The data sets (/api/functions): name, description, x range, whether n is fixed.
nlohmann::json functions_json(const std::vector<explorer_function_info>& fs);
// Kernels (/api/kernels) with each one's extra parameters as the page's controls show them.
nlohmann::json kernels_json(const std::vector<explorer_kernel_info>& ks);

}  // namespace kf::cli
