#include "common.hpp"

#include <sys/resource.h>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/viz/contour.hpp"
#include "kernelformer/viz/plot.hpp"

namespace kf::cli {

loaded_array load_array(const std::string& path, const std::string& what) {
  require_extension(path, what, {".npy", ".csv"});
  loaded_array a;
  a.path = path;
  if (path.ends_with(".csv")) {
    a.csv = io::csv_read(path).to_matrix<double>();  // csv_read already rejects non-finite cells
    return a;
  }
  a.npy.emplace(path);
  a.dtype = a.npy->header().dtype;
  if (a.rows() == 0 || a.cols() == 0) throw user_error(fmt::format("{}: the array is empty", path));
  return a;
}

index loaded_array::rows() const { return npy ? npy->header().rows() : csv.rows(); }
index loaded_array::cols() const { return npy ? npy->header().cols() : csv.cols(); }

template <class T>
const_matrix_view<T> loaded_array::as(matrix<T>& scratch) const {
  const_matrix_view<T> v;
  if (npy && npy->in_place<T>()) {
    v = npy->view<T>();
  } else {
    if (npy) {
      scratch = npy->to_matrix<T>();
    } else {
      scratch = matrix<T>(csv.rows(), csv.cols());
      for (index i = 0; i < csv.size(); ++i) scratch.data()[i] = static_cast<T>(csv.data()[i]);
    }
    v = scratch.cview();
  }
  for (index i = 0; i < v.rows; ++i) {
    const T* r = v.row(i);
    bool finite = true;
    for (index c = 0; c < v.cols; ++c) finite &= std::isfinite(r[c]);  // branch-free: vectorizes
    if (finite) continue;
    for (index c = 0; c < v.cols; ++c)
      if (!std::isfinite(r[c]))
        throw user_error(
            fmt::format("{}: row {}, column {} is {}; inputs must be finite", path, i, c, r[c]));
  }
  return v;
}
template const_matrix_view<float> loaded_array::as<float>(matrix<float>&) const;
template const_matrix_view<double> loaded_array::as<double>(matrix<double>&) const;

template <class T>
std::string encode_output(const std::string& path, const_matrix_view<T> a) {
  if (path.ends_with(".npy")) return io::npy_encode<T>(a);
  std::vector<std::string> names;
  std::vector<std::vector<double>> cols(static_cast<std::size_t>(a.cols));
  for (index c = 0; c < a.cols; ++c) {
    names.push_back(fmt::format("c{}", c));
    for (index i = 0; i < a.rows; ++i) cols[static_cast<std::size_t>(c)].push_back(double(a(i, c)));
  }
  return io::csv_encode(names, cols);
}

namespace {

// Kernel smoothing squares distances and residuals: a column with a value beyond ±1e150, or
// that is not constant but spans less than 1e-150, would square to inf or 0 in float64 and give
// an empty fit, zero densities or a false "constant" — refused here with the reason instead.
void check_data_scale(const io::csv_table& t) {
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    const auto& col = t.columns[c];
    if (col.empty()) continue;
    double lo = col[0], hi = col[0];
    std::size_t at = 0;
    for (std::size_t i = 0; i < col.size(); ++i) {
      lo = std::min(lo, col[i]), hi = std::max(hi, col[i]);
      if (std::abs(col[i]) > std::abs(col[at])) at = i;
    }
    const std::string& name = t.names[c];
    if (std::abs(col[at]) > 1e150)
      throw user_error(fmt::format(
          "{}: column '{}' holds {:.6g} (data row {}): kernel distances of values beyond ±1e150 "
          "overflow float64 when squared; rescale the column (e.g. to units of 1e150)",
          t.source, name, col[at], at + 1));
    if (hi > lo && hi - lo < 1e-150)
      throw user_error(fmt::format(
          "{}: column '{}' spans only {:.3g}: kernel distances below 1e-150 vanish when squared in "
          "float64; rescale the column (e.g. to units of its spread)",
          t.source, name, hi - lo));
  }
}

}  // namespace

io::csv_table read_data_columns(const std::string& path, const std::vector<std::string>& columns,
                                const std::string& na, bool quiet) {
  if (na != "error" && na != "drop")
    throw user_error(fmt::format("--na {}: expected error or drop", na));
  io::csv_options opt;
  opt.columns = columns;
  opt.drop_blank = na == "drop";
  // Under mpirun each rank parses its part of the file (its byte range) and the parts are
  // gathered in rank order, so every rank holds the whole file's rows, in the file's order.
  opt.part = dist::rank();
  opt.parts = dist::size();
  io::csv_table t = io::csv_read(path, opt);
  if (opt.parts > 1) {
    for (auto& col : t.columns) col = dist::allgather(col);
    t.dropped_rows = static_cast<index>(dist::allreduce_sum(double(t.dropped_rows)));
    if (t.rows() == 0) throw user_error(fmt::format("{}: no data rows", path));
  }
  check_data_scale(t);
  if (t.dropped_rows > 0 && !quiet && dist::is_root())
    fmt::print(stderr, "kf: note: {}: skipped {} rows with a missing value (--na drop)\n", path,
               t.dropped_rows);
  return t;
}

template <class T>
void stage_output(io::atomic_writer& writer, const std::string& path, const_matrix_view<T> a) {
  if (path.ends_with(".npy"))
    writer.stage_stream(path, [&](std::FILE* f) { return io::npy_write_stream<T>(f, a); });
  else
    writer.stage(path, encode_output<T>(path, a));
}
template void stage_output<float>(io::atomic_writer&, const std::string&, const_matrix_view<float>);
template void stage_output<double>(io::atomic_writer&, const std::string&,
                                   const_matrix_view<double>);

double peak_rss_mib() {
  // VmHWM: the peak resident set of this process's own memory since exec. getrusage's
  // ru_maxrss is kept across exec, so a kf started by a large parent (a Python benchmark holding
  // 10^7 points) would report the parent's size at fork.
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    double kib = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "VmHWM: %lf kB", &kib) == 1) break;
    std::fclose(f);
    if (kib >= 0) return kib / 1024.0;
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

model::data_parallel mpi_data_parallel() {
  model::data_parallel p;
  p.rank = dist::rank();
  p.size = dist::size();
  if (p.size > 1) {
    p.allreduce_sum = [](std::span<float> x) { dist::allreduce_sum(x); };
    p.allreduce_sum_scalar = [](double x) { return dist::allreduce_sum(x); };
  }
  return p;
}

std::string criterion_plot(const std::vector<criterion_point>& curve, double chosen_h,
                           double chosen_value, const std::string& criterion, bool multi_column,
                           const std::string& path, const std::string& parameter) {
  viz::figure f;
  f.title = fmt::format("{} selection: {}", parameter == "k" ? "k" : "bandwidth", criterion);
  f.xlabel = parameter + std::string(multi_column ? " (first column)" : "");
  f.ylabel = criterion;
  f.log_x = true;
  viz::series c{viz::series::kind::line, {}, {}, {}, "criterion", viz::kBlue, 2, 1};
  for (const auto& p : curve) {
    c.x.push_back(p.bandwidth[0]);
    c.y.push_back(std::isfinite(p.value) ? p.value : NAN);
  }
  viz::series chosen{viz::series::kind::points,
                     {chosen_h},
                     {chosen_value},
                     {},
                     fmt::format("chosen h = {:.4g}", chosen_h),
                     viz::kRed,
                     5,
                     1};
  f.data = {c, chosen};
  return viz::render_for_path(f, path);
}

std::string criterion_csv(const std::vector<criterion_point>& curve) {
  std::string csv = "scale,bandwidth,criterion\n";
  for (const auto& p : curve)
    csv += fmt::format("{},{},{}\n", p.scale, fmt::join(p.bandwidth, ";"), p.value);
  return csv;
}

void add_mpi_summary(nlohmann::json& js) {
  if (dist::size() <= 1) return;
  const dist::comm_stats cs = dist::stats();
  js["mpi"] = {{"ranks", dist::size()},
               {"bytes", cs.bytes},
               {"seconds_in_mpi", cs.seconds},
               {"calls", cs.calls}};
}

matrix<double> read_points(const std::string& path, const std::vector<std::string>& xcols) {
  const io::csv_table t = io::csv_read(path);
  bool named = true;
  for (const auto& c : xcols)
    named = named && std::find(t.names.begin(), t.names.end(), c) != t.names.end();
  if (!named && t.names.size() != xcols.size())
    throw user_error(fmt::format("{}: needs the x column(s) {} (or exactly {} columns)", path,
                                 fmt::join(xcols, ","), xcols.size()));
  return named ? t.select<double>(xcols) : t.to_matrix<double>();
}

std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    const auto comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? comma : comma - pos);
    if (item.empty()) throw user_error(option + " '" + text + "': empty item in the list");
    out.push_back(item);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

template std::string encode_output<float>(const std::string&, const_matrix_view<float>);
template std::string encode_output<double>(const std::string&, const_matrix_view<double>);

std::string run_command(const std::string& prefix, const std::map<std::string, std::string>& run) {
  std::string cmd = prefix;
  for (const auto& [key, value] : run) {
    if (!key.starts_with("--") || value == "false" || value == "(fortunes)") continue;
    cmd += " " + key;
    if (value == "true") continue;
    // Numbers in their shortest exact form (the run map keeps 17 digits: 0.05 → 0.05).
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    cmd += " " + (end && *end == '\0' && end != value.c_str() ? fmt::format("{}", v) : value);
  }
  return cmd;
}

std::string contour_of_grid(const grid_contour& labels, const matrix<double>& at,
                            const std::vector<double>& values,
                            const std::vector<unsigned char>* defined, const matrix<double>& data,
                            const std::string& path) {
  const auto n = static_cast<index>(std::llround(std::sqrt(double(at.rows()))));
  if (at.cols() != 2 || n < 2 || n * n != at.rows())
    throw user_error("a 2-D figure needs the grid (--grid N), not --at points");
  viz::contour_plot c;
  c.title = labels.title;
  c.xlabel = labels.xlabel;
  c.ylabel = labels.ylabel;
  c.scale = labels.scale;
  c.nx = c.ny = static_cast<int>(n);
  c.x0 = at(0, 0);
  c.x1 = at(at.rows() - 1, 0);
  c.y0 = at(0, 1);
  c.y1 = at(n - 1, 1);
  c.values.resize(static_cast<std::size_t>(n * n));
  for (index i = 0; i < n; ++i)  // grid row r = i·n + j holds (x_i, y_j): value[j·n + i]
    for (index j = 0; j < n; ++j) {
      const auto r = static_cast<std::size_t>(i * n + j);
      c.values[static_cast<std::size_t>(j * n + i)] =
          defined && !(*defined)[r] ? std::nan("") : values[r];
    }
  const std::size_t stride = plot_stride(static_cast<std::size_t>(data.rows()));
  for (index i = 0; i < data.rows(); i += static_cast<index>(stride)) {
    c.px.push_back(data(i, 0));
    c.py.push_back(data(i, 1));
  }
  return viz::render_for_path(c, path);
}

}  // namespace kf::cli
