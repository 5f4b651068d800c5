// kernelformer/regression/kde.hpp — kernel density estimation on the one primitive.
//
//   f̂(x) = 1/(n Π_c h_c) Σ_j K((x − x_j)/h) / Z_K
// The sum is the primitive's denominator: f̂(x) = exp(lse(x)) / (n Π h Z_K), so density costs the
// same streaming pass as smoothing. Z_K makes each kernel integrate to 1: in 1-D every finite
// distance kernel (gaussian √(2π), boxcar 2, epanechnikov 4/3, biweight 16/15, triweight 32/35,
// tricube 81/70, cosine 4/π, laplacian 2, cauchy π, rational_quadratic, …); in d dimensions the
// gaussian, whose radial form is the product kernel Π_c φ(u_c) (other kernels: 1-D only for now).
// Bandwidths: silverman, scott, cv_ml (likelihood CV), cv_ls (least-squares CV; ∫f̂² in closed
// form for the gaussian, by Simpson's rule on a fine grid otherwise), or fixed.
#pragma once

#include <span>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/regression/bandwidth.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

struct kde_fit {
  any_kernel kernel = kernel_gaussian{};
  std::vector<double> bandwidth;  // per column
  matrix<double> x;
  bandwidth_criterion criterion = bandwidth_criterion::fixed;
  double criterion_value = 0;  // cv_ml: −mean log f̂₋ᵢ(x_i); cv_ls: the LSCV score; rules: cv_ml
  bool at_search_boundary = false;
  std::vector<criterion_point> curve;
};

// ∫ K(|u|) du over the real line for a kernel with bandwidth 1 (its 1-D normalizing constant).
// Throws std::invalid_argument for kernels that are not integrable densities.
double kernel_integral_1d(const any_kernel& k);

kde_fit kde_fit_data(const any_kernel& kernel, const_matrix_view<double> x,
                     bandwidth_criterion criterion, std::vector<double> bandwidth = {},
                     const progress_fn& progress = {});

// f̂ at the rows of at.
std::vector<double> kde_evaluate(const kde_fit& fit, const_matrix_view<double> at);

// The density criteria at a given bandwidth (+inf where undefined).
double kde_cv_ml(const any_kernel& kernel, const_matrix_view<double> x,
                 const std::vector<double>& bandwidth);
double kde_cv_ls(const any_kernel& kernel, const_matrix_view<double> x,
                 const std::vector<double>& bandwidth);

}  // namespace kf
