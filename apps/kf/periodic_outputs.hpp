// The files a periodic run leaves in its output directory (kf train periodic --out, and one run
// per function of kf experiment periodic): loss.csv/png, prediction.csv/png (seed 003 Fig. 3)
// and attention.csv/png (Fig. 4: the last layer's first head on the test context).
#pragma once

#include <string>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/periodic_experiment.hpp"

namespace kf::cli {

struct periodic_run {
  std::string function, config;
  const model::regressor_config& cfg;
  const model::periodic_data& data;
  const model::forecast& fc;
  const model::train_result& tr;
};

// Stages the files under dir in w (committed by the caller). Runs one evaluation forward of m.
void stage_periodic_outputs(io::atomic_writer& w, const std::string& dir, const periodic_run& r,
                            model::sequence_regressor<float>& m);

}  // namespace kf::cli
