// Shared pieces of the kf subcommands: loading arrays from .npy/.csv with errors that name the
// file, row and column; encoding outputs by extension; the one-line error convention.
#pragma once

#include <CLI/CLI.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernelformer/io/npy.hpp"
#include "kernelformer/regression/bandwidth.hpp"
#include "kernelformer/tensor.hpp"

namespace kf::cli {

// An error in what the user asked for: printed as one line, exit code 1.
struct user_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct loaded_array {
  std::string path;
  io::npy_dtype dtype = io::npy_dtype::f64;  // .csv reads as float64
  matrix<double> data;                       // values (exact for float32 inputs too)
};

// Reads PATH (.npy or .csv by extension); every value must be finite.
loaded_array load_array(const std::string& path, const std::string& what);

// The bytes of an output file for PATH's extension (.npy keeps T's dtype; .csv writes columns
// c0, c1, … or the given names).
template <class T>
std::string encode_output(const std::string& path, const_matrix_view<T> a);

// Throws user_error unless PATH ends with one of the extensions.
void require_extension(const std::string& path, const std::string& option,
                       std::initializer_list<const char*> exts);

// A progress bar with ETA on stderr — only when stderr is a terminal (silent in pipes and CI).
class progress_bar {
 public:
  explicit progress_bar(std::string label);
  ~progress_bar();
  void update(int done, int total, const std::string& note = "");

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  double start_;
};

// The bandwidth-criterion curve as a figure (for PATH's .svg/.png) or as CSV.
std::string criterion_plot(const std::vector<criterion_point>& curve, double chosen_h,
                           double chosen_value, const std::string& criterion, bool multi_column,
                           const std::string& path);
std::string criterion_csv(const std::vector<criterion_point>& curve);

// Splits "a,b,c" into its items (throws user_error on empty items).
std::vector<std::string> split_list(const std::string& text, const std::string& option);

// Subcommands.
void add_attend(CLI::App& app);
void add_demo(CLI::App& app);
void add_smooth(CLI::App& app);
void add_kde(CLI::App& app);
void add_predict(CLI::App& app);
void add_train(CLI::App& app);
void add_train_lm(CLI::App* train);
void add_sample(CLI::App& app);
void add_attention(CLI::App& app);
void add_serve(CLI::App& app);
void add_report(CLI::App& app);
void add_experiment(CLI::App& app);

}  // namespace kf::cli
