// kernelformer/regression/classifier.hpp — kernel classification: the smoother with one-hot
// labels as values.
//
//   p_c(x) = Σ_j K(x, x_j) [y_j = c] / Σ_j K(x, x_j)        (Nadaraya–Watson, any distance kernel)
//   KNN: the uniform (or inverse-distance) kernel under a top-k-by-distance mask
// One call of the primitive (smooth_forward) with V = the n×C one-hot matrix gives every class's
// probability at once; the probabilities of a row sum to 1. Leave-one-out probabilities use the
// mask j ≠ i (the k nearest *other* points for KNN). The bandwidth (per column, through
// bandwidth_search around the Silverman reference) or k (every k in 1..k_max) is chosen by the
// LOO log-loss −(1/n) Σ_i log p_{y_i}^{(−i)}(x_i) or by the LOO accuracy (ties broken by the
// log-loss). Probabilities are clipped to [1e-15, 1] inside the log-loss only. A row whose every
// weight is zero (a compact kernel with no training point in reach) gets the training class
// frequencies and is counted in `undefined`. Nadaraya–Watson: exact all-pairs sums in double,
// O(n²) per candidate bandwidth, comfortable up to ~10^4 training rows. KNN: the neighbor route
// (O(k log n) per row; k chosen from one search of k_max + 1 neighbors per point), or all pairs
// with classify_spec::exact.
#pragma once

#include <string>
#include <vector>

#include "kernelformer/kernels.hpp"
#include "kernelformer/regression/bandwidth.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

enum class classify_method { nw, knn };
enum class classify_criterion { log_loss, accuracy };

struct classify_spec {
  classify_method method = classify_method::nw;
  any_kernel kernel = kernel_gaussian{};  // nw: a distance kernel
  std::vector<double> bandwidth;          // nw: one per column of x (or one); empty: choose
  index k = 0;                            // knn; 0: choose k in 1..k_max
  index k_max = 50;
  bool knn_distance_weights = false;  // knn: weights 1/|x − x_j| instead of uniform
  // knn: the primitive under a top-k-by-distance mask over all pairs (O(n²), the reference)
  // instead of the neighbor route (a sorted copy in 1-D, a k-d tree beyond: regression/knn.hpp),
  // which the tests tie to it; ties in distance may pick other equidistant neighbors.
  bool exact = false;
  classify_criterion criterion = classify_criterion::log_loss;
};

// The probabilities of the classifier trained on (x, labels) at the rows of xq: an nq×C matrix
// (C = num_classes). loo: xq must be x; row i leaves training point i out. labels[i] is in
// 0..C−1. undefined (if not null) counts rows that fell back to the class frequencies.
matrix<double> classify_probabilities(const classify_spec& spec, const_matrix_view<double> x,
                                      const std::vector<index>& labels, index num_classes,
                                      const_matrix_view<double> xq, bool loo,
                                      index* undefined = nullptr);

struct classify_scores {
  double log_loss = 0, accuracy = 0;
};
// Mean log-loss (probabilities clipped to [1e-15, 1]) and accuracy of probability rows against
// labels; the predicted class is the most probable one (the smaller index on ties).
classify_scores classify_score(const_matrix_view<double> proba, const std::vector<index>& labels);
index classify_argmax(const double* row, index num_classes);

struct classify_fit {
  classify_spec spec;  // with the chosen bandwidth or k
  index num_classes = 0;
  matrix<double> loo_proba;  // n×C leave-one-out probabilities at the chosen parameter
  classify_scores loo;       // their log-loss and accuracy
  index undefined = 0;       // LOO rows that fell back to the class frequencies
  // confusion[t][p]: rows of true class t predicted (LOO) as p.
  std::vector<std::vector<index>> confusion;
  bool at_search_boundary = false;
  std::vector<criterion_point> curve;  // the criterion over the searched grid (k for knn)
};

// Chooses the parameter (unless given) and computes the LOO diagnostics. Throws
// std::invalid_argument naming the problem (fewer than 2 classes, too few rows, a label out of
// range, k out of range, a non-distance kernel, a constant column with a searched bandwidth).
classify_fit classify_fit_data(classify_spec spec, const_matrix_view<double> x,
                               const std::vector<index>& labels, index num_classes,
                               const progress_fn& progress = {});

std::string classify_criterion_name(classify_criterion c);

}  // namespace kf
