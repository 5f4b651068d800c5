// What kf train series writes: the JSON summary (every error of every forecaster) and the files
// of its --out folder — forecast.csv/png (forecast vs truth), future.csv, test_windows.csv (the
// teacher-forced windows, kf predict's input), loss.csv/png, acf.png (the period found).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/series_experiment.hpp"
#include "train_options.hpp"

namespace kf::cli {

struct series_run {
  std::string data, y, x;  // the CSV file and its columns (x empty: rows are the steps)
  std::string config;      // quick | code | paper
  const model::series_data& d;
  const model::series_result& r;
  const model::train_result& tr;
  const model::regressor_config& cfg;  // the trained model's (with its input normalization)
  const model::train_options& to;
  index parameters = 0;
};

nlohmann::json series_summary(const series_run& run);

// Stages the files under dir in w (committed by the caller).
void stage_series_outputs(io::atomic_writer& w, const std::string& dir, const series_run& run,
                          const std::string& summary);

}  // namespace kf::cli
