// kf smooth / kf kde with categorical columns (--categorical, --ordered): the data read with those
// columns as text or numbers and coded, the fit on the product kernels of
// regression/mixed_kernel.hpp (statsmodels' KernelReg / KDEMultivariate with var_type 'c', 'u',
// 'o'), and the outputs. mixed_data.cpp.
#pragma once

#include <string>
#include <vector>

#include "common.hpp"
#include "fit_options.hpp"
#include "kernelformer/regression/mixed_kernel.hpp"

namespace kf::cli {

struct mixed_request {
  std::string data, at;              // CSV files (data: required); at: points, default the data's
  std::vector<std::string> xcols;    // every predictor, in order
  std::string y;                     // response (kf smooth); empty for kf kde
  std::string categorical, ordered;  // comma-separated names among xcols
  std::string bandwidth;  // cv / cv-ls | cv-ml | normal-reference (silverman) | NUMBER,…
  std::string na = "error";
  fit_outputs out;  // out, summary (plot, criterion outputs: refused before this)
  bool quiet = false;
};

// Whether --categorical or --ordered asks for the mixed-data route.
inline bool mixed_requested(const std::string& categorical, const std::string& ordered) {
  return !categorical.empty() || !ordered.empty();
}

// The fits; every option checked before the data are read; throws user_error.
void run_mixed_smooth(const mixed_request& q);
void run_mixed_kde(const mixed_request& q);

}  // namespace kf::cli
