// kf smooth --method lowess (smooth_lowess.cpp): the request cmd_smooth builds from its options
// and the data, and the run that fits, writes and prints.
#pragma once

#include <string>
#include <vector>

#include "common.hpp"
#include "fit_options.hpp"
#include "kernelformer/regression/lowess.hpp"

namespace kf::cli {

struct lowess_request {
  std::vector<double> x, y;  // the data (one --x column)
  std::vector<double> at;    // --at points; empty: `grid` points over the data's range
  index grid = 200;
  lowess_spec spec;
  fit_outputs out;  // out (x, fit), summary, plot; the criterion outputs do not apply
  std::string xcol, ycol, source;
  double read_seconds = 0;
  bool quiet = false;
};

// Fits, writes every asked-for output atomically, prints the one-line report (and a 9-row
// preview when nothing is written). Throws user_error naming the data for a bad fit.
void run_lowess(const lowess_request& q);

}  // namespace kf::cli
