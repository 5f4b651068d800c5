// Seed 003's periodic experiment (model/periodic_experiment.hpp): the functions, the protocol's
// data (series, windows, context, test targets) and its three model configurations.
#include "kernelformer/model/periodic_experiment.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <utility>

namespace kf::model {

periodic_function periodic_function_parse(const std::string& name) {
  if (name == "sin") return periodic_function::sin;
  if (name == "sin-exp" || name == "sin_exp") return periodic_function::sin_exp;
  if (name == "square") return periodic_function::square;
  throw std::invalid_argument("unknown function '" + name + "' (sin, sin-exp, square)");
}

std::string periodic_function_name(periodic_function f) {
  return f == periodic_function::sin       ? "sin"
         : f == periodic_function::sin_exp ? "sin-exp"
                                           : "square";
}

double periodic_value(periodic_function f, double x) {
  switch (f) {
    case periodic_function::sin:
      return std::sin(x);
    case periodic_function::sin_exp:
      return std::sin(x) * std::exp(0.01 * x);
    case periodic_function::square: {
      const double two_pi = 2 * std::numbers::pi;
      const double r = x - two_pi * std::floor(x / two_pi);  // scipy.signal.square: duty 0.5
      return r < std::numbers::pi ? 1.0 : -1.0;
    }
  }
  return 0;
}

periodic_data periodic_make(periodic_function f) {
  periodic_data d;
  const index n = periodic_data::kSeries, w = periodic_data::kWindow;
  d.series.resize(static_cast<std::size_t>(n));  // y_t = f(0.1·t), t = 0..999
  for (index t = 0; t < n; ++t)
    d.series[static_cast<std::size_t>(t)] = periodic_value(f, 0.1 * double(t));
  auto windows = series_windows_make(d.series, w, w, n);  // 901 samples
  d.train_x = std::move(windows.x);                       // (901, 99)
  d.train_y = std::move(windows.y);                       // (901): each window's next value
  d.context.assign(d.series.end() - w, d.series.end());   // x = 90.1 … 99.9
  for (index j = 0; j < periodic_data::kSteps; ++j) {     // x = 100.0 … 119.9, past the series
    const double x = 100.0 + 0.1 * double(j);
    d.test_x.push_back(x);
    d.test_y.push_back(periodic_value(f, x));
  }
  return d;
}

forecast periodic_forecast(const periodic_data& d, const window_predictor& predict) {
  return forecast_run(d.context, d.test_y, periodic_data::kWindow, predict);
}

nw_forecaster nw_forecaster_fit(const periodic_data& d, bool scaled, nw_bandwidth_rule rule) {
  return nw_forecaster_fit(d.train_x, d.train_y, scaled, rule, d.series, periodic_data::kSteps);
}

forecast periodic_forecast_model(const periodic_data& d, sequence_regressor<float>& m) {
  return periodic_forecast(d, forecast_predictor(m));
}

regressor_config periodic_config(const std::string& name) {
  regressor_config c;
  c.seq_len = periodic_data::kWindow;
  c.layers = 2;
  c.block.heads = 2;
  c.block.dropout = 0.1;
  c.block.act = nn::activation::relu;  // post-LN: the block default, PyTorch's
  if (name == "code") {
    c.block.d_model = 128;
    c.block.d_ff = 128;
  } else if (name == "paper") {
    c.block.d_model = 512;
    c.block.d_ff = 512;
    c.pe_dim = 128;  // embedding 384 wide, PE 128 concatenated: d_model 512
    c.pe_concat = true;
  } else if (name == "quick") {  // seconds: tests and the demo
    c.layers = 1;
    c.block.d_model = 16;
    c.block.d_ff = 32;
  } else {
    throw std::invalid_argument("unknown configuration '" + name + "' (paper, code, quick)");
  }
  return c;
}

}  // namespace kf::model
