// The periodic experiment's reference numbers and the settings they were measured in
// (model/periodic_reference.hpp): one table, read by kf experiment and kf report.
#include "kernelformer/model/periodic_reference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace kf::model {
namespace {

// One row per function: the paper's number and the documented spreads (median, min, max).
struct reference_row {
  periodic_function fn;
  double paper;
  periodic_documented documented;
};
constexpr reference_row kReference[] = {
    {periodic_function::sin, 0.0050, {{0.000231, 5.2e-5, 0.000356}, {0.00751, 0.00361, 0.00938}}},
    {periodic_function::sin_exp, 0.0085, {{0.000892, 0.000876, 0.0013}, {0.0173, 0.00412, 0.0345}}},
    {periodic_function::square, 0.0243, {{0.00875, 0.00871, 0.0092}, {0.0167, 0.0160, 0.0321}}}};

// The row of f; every enumerator has one (the throw guards a value cast from outside the enum).
const reference_row& row_of(periodic_function f) {
  for (const auto& r : kReference)
    if (r.fn == f) return r;
  throw std::invalid_argument("periodic reference: unknown function");
}

}  // namespace

double periodic_paper_mse(periodic_function f) { return row_of(f).paper; }

periodic_documented periodic_documented_results(periodic_function f) {
  return row_of(f).documented;
}

mse_spread mse_spread_of(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("mse_spread_of: no values");
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};  // upper median for an even count
}

std::string periodic_train_command(const std::string& function, const periodic_setting& s,
                                   std::uint64_t seed) {
  return fmt::format(
      "kf train periodic --function {} --config code --batch {}{} --dropout {} --seed {}", function,
      s.batch, s.cosine_lr ? " --cosine-lr" : "", s.dropout, seed);
}

// The run periodic_train_command names (kf train's protocol defaults: Adam 1e-3, 100 epochs),
// with the setting's batch and schedule.
train_options periodic_setting_options(const periodic_setting& s, std::uint64_t seed) {
  train_options to;
  to.epochs = 100;
  to.batch = s.batch;
  to.lr = 1e-3;
  to.cosine_lr = s.cosine_lr;
  to.seed = seed;
  return to;
}

regressor_config periodic_setting_config(const periodic_setting& s) {
  auto cfg = periodic_config("code");
  cfg.block.dropout = s.dropout;
  return cfg;
}

}  // namespace kf::model
