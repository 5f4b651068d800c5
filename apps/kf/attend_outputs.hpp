// What kf attend prints beside the arrays it writes: the --compare-exact report of a
// random-feature kernel against the exact kernel it approximates.
#pragma once

#include <vector>

#include "kernelformer/masks.hpp"
#include "kernelformer/smooth.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::cli {

// --compare-exact: the relative error ||out − exact||_F / ||exact||_F of the outputs against the
// exact kernel the random features approximate, and of the implied weights p_ij on up to 8 rows
// (WEIGHT_ROWS, else evenly spaced): Σ_j |p_ij − p*_ij| (total variation × 2) and
// ||p_i − p*_i||_2 / ||p*_i||_2, averaged over the rows.
// OUT is what kern gave for the queries Q, keys K and values V under msk and opt; one line on
// stdout.
template <class T>
void print_compare_exact(const_matrix_view<T> q, const_matrix_view<T> k, const_matrix_view<T> v,
                         const_matrix_view<T> out, const kernel_spec& kern, const mask& msk,
                         const smooth_options& opt, const std::vector<index>& weight_rows);

}  // namespace kf::cli
