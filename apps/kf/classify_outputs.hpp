// What kf classify reads and writes beside the fit: the class labels of a text column, the
// probabilities per row (CSV), the decision regions of a 2-D fit (a figure), and on the terminal
// the fit's scores and the leave-one-out confusion matrix.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "kernelformer/regression/classifier.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::cli {

// Class names in order (numerically when every label is a number, else as text) and each row's
// class index.
struct label_set {
  std::vector<std::string> names;
  std::vector<index> of_row;
};
label_set index_labels(const std::vector<std::string>& text);

// Per row: the x columns, the true label (when labels is given: the training rows), the most
// probable class and p_<class> for every class.
std::string proba_csv(const std::vector<std::string>& xcols, const std::string& y,
                      const label_set& ls, const_matrix_view<double> x,
                      const std::vector<index>* labels, const matrix<double>& proba);

// Decision regions over the data's box (5% margin) on a grid × grid lattice: the most probable
// class of each cell, then the data points coloured by their class; SVG or PNG by the path.
std::string region_plot(const classify_fit& fit, const_matrix_view<double> x, const label_set& ls,
                        const std::vector<index>& labels, const std::vector<std::string>& xcols,
                        const std::string& title, index grid, const std::string& path);

// n, columns, classes, method, kernel, k or bandwidth, the criterion, LOO log-loss and accuracy,
// the confusion matrix, rows no other point reaches.
nlohmann::json classify_summary(const classify_fit& fit, const label_set& ls,
                                const std::vector<std::string>& xcols, const std::string& y,
                                const std::string& kernel, const std::string& criterion);

// The leave-one-out confusion matrix (rows: true class, columns: predicted), names cut at 24.
void print_confusion(const classify_fit& fit, const label_set& ls, const std::string& y);

// How a fit is named in its plot's title, its summary and on the terminal.
struct classify_names {
  std::string method;  // knn | nw
  std::string param;   // "k = 5" or "bandwidth = 0.3"
  std::string how;     // "given", or the criterion that chose it (SPEC: as asked)
  std::string kernel;  // the distance kernel, or knn's weights (inverse_distance | uniform)
};
classify_names classify_fit_names(const classify_spec& spec, const classify_fit& fit);

// The terminal report of a fit on ROWS rows of the file DATA (label column Y): the data and the
// parameter in two lines, warnings on stderr (the search's edge, rows out of every kernel's
// reach), the confusion matrix.
void print_classify_result(const classify_fit& fit, const label_set& ls,
                           const classify_names& names, const std::string& data,
                           const std::string& y, index rows);

}  // namespace kf::cli
