// kernelformer/model/periodic_reference.hpp — the numbers seed 003's experiment is judged against,
// defined once: the paper's test MSE (a 200-step rollout, model/periodic_experiment.hpp) per
// function, and this project's documented 3-seed results of the code configuration in its two
// settings (docs/results/periodic_code_improved_dropout005.md and periodic_code_faithful.md;
// `kf report --full` measures them again). `kf experiment periodic` prints the paper's column;
// `kf report` sets its Transformer beside all three.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernelformer/model/periodic_experiment.hpp"

namespace kf::model {

// The paper's rollout MSE: sin 0.0050, sin·exp 0.0085, square 0.0243.
double periodic_paper_mse(periodic_function f);

// Median, min and max of a rollout MSE over seeds.
struct mse_spread {
  double median = 0, lo = 0, hi = 0;
};
// Of measured values (≥ 1; the median is the upper one of an even count, as over 3 seeds).
mse_spread mse_spread_of(std::vector<double> v);

// The two settings of the code configuration (docs/nn.md), 100 epochs at Adam lr 1e-3 each.
struct periodic_setting {
  std::string_view name;
  index batch;
  bool cosine_lr;  // linear warmup, then cosine decay (train_options::cosine_lr)
  double dropout;
};
inline constexpr periodic_setting kPeriodicImproved{"improved", 64, true, 0.05};
inline constexpr periodic_setting kPeriodicFaithful{"faithful", 512, false, 0.1};

// Documented results over seeds 0, 1, 2 of the code configuration in each setting.
struct periodic_documented {
  mse_spread improved;  // docs/results/periodic_code_improved_dropout005.md
  mse_spread faithful;  // docs/results/periodic_code_faithful.md
};
periodic_documented periodic_documented_results(periodic_function f);

// The `kf train periodic` command that trains the code configuration in setting S.
std::string periodic_train_command(const std::string& function, const periodic_setting& s,
                                   std::uint64_t seed);

// The training options of setting S (100 epochs, lr 1e-3, the setting's batch and schedule).
train_options periodic_setting_options(const periodic_setting& s, std::uint64_t seed);
// The code configuration with the setting's dropout.
regressor_config periodic_setting_config(const periodic_setting& s);

}  // namespace kf::model
