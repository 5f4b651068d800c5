// Shared pieces of the kf subcommands: loading arrays from .npy/.csv with errors that name the
// file, row and column; encoding outputs by extension; the one-line error convention.
#pragma once

#include <chrono>

#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/io/npy.hpp"
#include "kernelformer/model/data_parallel.hpp"
#include "kernelformer/progress.hpp"
#include "kernelformer/regression/bandwidth.hpp"
#include "kernelformer/tensor.hpp"

// CLI11 is included by the files that declare options (cmd_*.cpp, main.cpp) only: under the
// sanitizers every file that includes it spends ~10 s compiling its inline functions.
namespace CLI {
class App;
}  // namespace CLI

namespace kf::cli {

// An error in what the user asked for: printed as one line, exit code 1.
struct user_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// An option that does not run under mpirun, found the same way on every rank before any
// reduction: rank 0 prints it, every rank exits 2 (main.cpp), no MPI_Abort.
struct mpi_refusal : user_error {
  using user_error::user_error;
};

// An input array: a .npy file mapped read-only, or a .csv table parsed into float64.
struct loaded_array {
  std::string path;
  io::npy_dtype dtype = io::npy_dtype::f64;  // .csv reads as float64
  std::optional<io::npy_file> npy;           // .npy: the mapped file
  matrix<double> csv;                        // .csv: the values
  index rows() const;
  index cols() const;
  // The values as T: a view of the mapped file when it holds T in C order and the machine's byte
  // order (no copy), else converted into `scratch` in one pass. Throws user_error naming the
  // row and column of the first non-finite value.
  template <class T>
  const_matrix_view<T> as(matrix<T>& scratch) const;
};

// Maps or reads PATH (.npy or .csv by extension) and checks its header; an empty array is an
// error. The values are checked for finiteness by loaded_array::as.
loaded_array load_array(const std::string& path, const std::string& what);

// The bytes of an output file for PATH's extension (.npy keeps T's dtype; .csv writes columns
// c0, c1, … or the given names).
template <class T>
std::string encode_output(const std::string& path, const_matrix_view<T> a);

// Reads only COLUMNS of the CSV file PATH (the other columns may hold anything); NA is the --na
// option's value: "error" (a blank cell is an error) or "drop" (rows with a blank cell in one
// of COLUMNS are skipped, and a note says how many).
io::csv_table read_data_columns(const std::string& path, const std::vector<std::string>& columns,
                                const std::string& na, bool quiet);

// Stages an output file on WRITER: .npy streamed row by row from the view (no copy), .csv encoded.
template <class T>
void stage_output(io::atomic_writer& writer, const std::string& path, const_matrix_view<T> a);

// Throws user_error naming OPTION unless PATH can be written: its folder exists and is
// writable, PATH is not a folder, PATH is not a file the command line also names as an input
// (compared by device and inode, so any spelling), and no other output option names the same
// file. Commands call it for every output before the work starts, so a typo never costs a long
// run and an output never replaces an input.
void check_output_path(const std::string& path, const std::string& option);

// The command line that check_output_path compares outputs against (main calls it once). Also
// starts the list of files the command writes (written_files).
void set_command_line(int argc, char** argv);
// That command line as one string ("kf smooth data.csv --x t …"; arguments with spaces quoted):
// what a saved model records as trained_by.
std::string command_line_text();

// Every file the command has written so far (each atomic_writer commit), in the order they were
// first written, each once: main prints one line per file at the end of a command.
std::vector<std::string> written_files();

// An output FOLDER that a command creates (nested folders too): the nearest existing ancestor
// must be a writable folder, and DIR itself, if it exists, a folder.
void check_output_dir(const std::string& dir, const std::string& option);

// Creates the output folder DIR (and its parents); throws user_error naming OPTION on failure.
void make_output_dir(const std::string& dir, const std::string& option);

// An output file of a command that also has an --out folder OUT_DIR (created only when outputs
// are staged): as require_output, except that PATH's folder may be OUT_DIR or a folder inside
// it that does not exist yet (then checked as check_output_dir does). Stage such a file after
// make_output_parent(PATH).
void require_output_under(const std::string& path, const std::string& option,
                          std::initializer_list<const char*> exts, const std::string& out_dir);
// Creates PATH's folder if it does not exist yet.
void make_output_parent(const std::string& path, const std::string& option);

// require_extension and check_output_path together, for an output file option.
void require_output(const std::string& path, const std::string& option,
                    std::initializer_list<const char*> exts);

// Throws user_error unless PATH ends with one of the extensions.
void require_extension(const std::string& path, const std::string& option,
                       std::initializer_list<const char*> exts);

// Under mpirun: the hooks that make training data-parallel over the ranks (dist/mpi.hpp);
// alone: the single-process default.
model::data_parallel mpi_data_parallel();

// A progress bar with ETA on stderr — only when stderr is a terminal (silent in pipes and CI)
// and, under mpirun, on rank 0 only.
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
  double min_seconds_ = 0.3;
};

// A bar per library step (kernelformer/progress.hpp: binning, transforms, exact sums, k-d tree
// queries, CSV parsing) for as long as it lives: each step that takes over ~0.3 s draws its own
// bar with ETA, labelled with the step's name. Silent where progress_bar is; a command opens
// one around its reading and computing (kf smooth, kde, classify).
class step_progress {
 public:
  step_progress();
  ~step_progress();
  step_progress(const step_progress&) = delete;
  step_progress& operator=(const step_progress&) = delete;

 private:
  std::unique_ptr<progress_scope> scope_;
  std::unique_ptr<progress_bar> bar_;
  std::string step_;
};

// A function on a square 2-D grid (the rows of `at`, N² of them, the second column varying
// fastest: smooth_grid's and kde_grid's order) as a filled contour plot with the data's points on
// top (viz/contour.hpp), for PATH's .svg/.png. Values where `defined` is 0 are left blank.
struct grid_contour {
  std::string title, xlabel, ylabel, scale;
};
std::string contour_of_grid(const grid_contour& labels, const matrix<double>& at,
                            const std::vector<double>& values,
                            const std::vector<unsigned char>* defined, const matrix<double>& data,
                            const std::string& path);

// The bandwidth-criterion curve as a figure (for PATH's .svg/.png) or as CSV.
std::string criterion_plot(const std::vector<criterion_point>& curve, double chosen_h,
                           double chosen_value, const std::string& criterion, bool multi_column,
                           const std::string& path, const std::string& parameter = "bandwidth h");

// Seconds since construction or the previous lap (the summaries' "seconds" breakdown).
class stopwatch {
 public:
  double lap() {
    const auto t = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(t - t0_).count();
    t0_ = t;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// Under mpirun (more than one rank): the summary's "mpi" block — ranks, bytes this rank handed to
// MPI, seconds inside MPI, calls. Alone: nothing.
void add_mpi_summary(nlohmann::json& js);

// This process's peak resident memory so far, in MiB (the summaries' "peak_rss_mib").
double peak_rss_mib();

// Every stride-th of n points goes into a scatter or rug plot, at most about max_points of them
// (an SVG of 10^7 circles helps nobody).
inline std::size_t plot_stride(std::size_t n, std::size_t max_points = 5000) {
  return n <= max_points ? 1 : (n + max_points - 1) / max_points;
}
std::string criterion_csv(const std::vector<criterion_point>& curve);

// Splits "a,b,c" into its items (throws user_error on empty items).
std::vector<std::string> split_list(const std::string& text, const std::string& option);

// The points of an --at CSV file: its columns named like the --x columns, or, when it lacks
// them, all of its columns if there are exactly as many (throws user_error otherwise).
matrix<double> read_points(const std::string& path, const std::vector<std::string>& xcols);

// The training command a checkpoint's metadata records ("trained_by"): prefix followed by the run
// options (model/train_state.hpp's run map) as flags — "true" gives the bare flag, "false" and
// "(fortunes)" (the default corpus) are left out, keys not starting with "--" are not options.
// No thread count: the numbers do not depend on it (detail/blas.cpp cuts products by shape).
std::string run_command(const std::string& prefix, const std::map<std::string, std::string>& run);

// Subcommands.
void add_attend(CLI::App& app);
void add_demo(CLI::App& app);
void add_smooth(CLI::App& app);
void add_kde(CLI::App& app);
void add_classify(CLI::App& app);
void add_inspect(CLI::App& app);
void add_predict(CLI::App& app);
void add_train(CLI::App& app);
void add_train_lm(CLI::App* train);
void add_train_series(CLI::App* train);
void add_train_seq2seq(CLI::App* train);
void add_sample(CLI::App& app);
void add_attention(CLI::App& app);
void add_serve(CLI::App& app);
void add_report(CLI::App& app);
void add_experiment(CLI::App& app);
void add_experiment_lm(CLI::App* experiment);  // kf experiment lm (cmd_experiment_lm.cpp)

}  // namespace kf::cli
