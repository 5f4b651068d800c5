// kf smooth --degree P --derivative V (smooth_local_poly.cpp): local polynomial regression of
// degree 2–3, or a derivative of any degree's fit (regression/local_poly.hpp): the request
// cmd_smooth builds from its options and the data, and the run that fits, writes and prints.
#pragma once

#include <string>
#include <vector>

#include "common.hpp"
#include "fit_options.hpp"
#include "kernelformer/regression/local_poly.hpp"

namespace kf::cli {

struct local_poly_request {
  std::vector<double> x, y;  // the data (one --x column)
  std::vector<double> at;    // --at points; empty: `grid` points over the data's range
  index grid = 200;
  local_poly_spec spec;  // bandwidth set when the criterion is fixed
  bandwidth_criterion criterion = bandwidth_criterion::loo_cv;
  fit_outputs out;  // out (x, fit, se), summary, plot, plot_criterion, criterion_csv
  std::string xcol, ycol, source;
  double read_seconds = 0;
  bool quiet = false;
};

// Fits, writes every asked-for output atomically, prints the report (and a 9-row preview when
// nothing is written). Throws user_error naming the data for a bad fit.
void run_local_poly(const local_poly_request& q);

}  // namespace kf::cli
