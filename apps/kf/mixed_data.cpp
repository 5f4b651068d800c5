// kf smooth / kf kde on mixed data (mixed_data.hpp): categorical columns read as text, coded, and
// smoothed with the product kernels of regression/mixed_kernel.hpp.
#include "mixed_data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/viz/report.hpp"

namespace kf::cli {
namespace {

// One predictor: its kernel and, for a categorical column, its levels' text in code order (a
// text column is coded 0, 1, … in sorted order; a numeric one keeps its numbers as codes).
struct coded_column {
  column_type type = column_type::continuous;
  bool text = false;
  std::vector<std::string> levels;
};

struct mixed_data {
  matrix<double> x;
  std::vector<double> y;
  std::vector<coded_column> cols;
  std::string source;
};

bool as_number(const std::string& s, double& v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(v);
}

std::vector<coded_column> columns_of(const mixed_request& q) {
  std::vector<coded_column> cols(q.xcols.size());
  for (const auto& [list, type, option] :
       {std::tuple{q.categorical, column_type::unordered, "--categorical"},
        std::tuple{q.ordered, column_type::ordered, "--ordered"}}) {
    if (list.empty()) continue;
    for (const std::string& name : split_list(list, option)) {
      const auto it = std::find(q.xcols.begin(), q.xcols.end(), name);
      if (it == q.xcols.end())
        throw user_error(fmt::format("{} {}: not one of the --x columns ({})", option, name,
                                     fmt::join(q.xcols, ", ")));
      auto& c = cols[static_cast<std::size_t>(it - q.xcols.begin())];
      if (c.type != column_type::continuous)
        throw user_error(fmt::format("{}: both --categorical and --ordered", name));
      c.type = type;
    }
  }
  return cols;
}

// The codes of a categorical column's cells: from the data (coding null: numbers as they are,
// else text sorted) or with the data's coding (--at points: a level the data lack is an error).
std::vector<double> code(const std::vector<std::string>& cells, coded_column& c,
                         const coded_column* coding, const std::string& name,
                         const std::string& path) {
  std::vector<double> out(cells.size());
  bool numeric = coding ? !coding->text : true;
  for (std::size_t i = 0; numeric && i < cells.size(); ++i) numeric = as_number(cells[i], out[i]);
  if (coding && !coding->text && !numeric)
    throw user_error(
        fmt::format("{}: column {} holds text; the data's {} are numbers", path, name, name));
  c.text = !numeric;
  if (numeric) return out;
  c.levels = coding ? coding->levels : cells;
  if (!coding) {
    std::sort(c.levels.begin(), c.levels.end());
    c.levels.erase(std::unique(c.levels.begin(), c.levels.end()), c.levels.end());
  }
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto it = std::lower_bound(c.levels.begin(), c.levels.end(), cells[i]);
    if (it == c.levels.end() || *it != cells[i])
      throw user_error(fmt::format("{}: column {} has the level '{}', which the data lack", path,
                                   name, cells[i].substr(0, 60)));
    out[i] = double(it - c.levels.begin());
  }
  return out;
}

mixed_data read(const std::string& path, const mixed_request& q, std::vector<coded_column> cols,
                const mixed_data* coding) {
  io::csv_options opt;  // continuous columns (and y) as numbers, categorical ones as text
  if (!q.y.empty() && !coding) opt.columns.push_back(q.y);
  opt.drop_blank = q.na == "drop";
  for (std::size_t k = 0; k < cols.size(); ++k)
    (cols[k].type == column_type::continuous ? opt.columns : opt.text_columns)
        .push_back(q.xcols[k]);
  io::csv_table t;
  try {
    t = io::csv_read(path, opt);
  } catch (const std::runtime_error& e) {
    throw user_error(e.what());
  }
  mixed_data d;
  d.source = t.source;
  d.x =
      matrix<double>(t.rows_min() > 0 ? t.rows_min() : index(t.text.empty() ? 0 : t.text[0].size()),
                     static_cast<index>(cols.size()));
  for (std::size_t k = 0; k < cols.size(); ++k) {
    std::vector<double> v;
    if (cols[k].type == column_type::continuous) {
      v = t.columns[t.column(q.xcols[k])];
    } else {
      const auto at = std::find(t.text_names.begin(), t.text_names.end(), q.xcols[k]);
      v = code(t.text[static_cast<std::size_t>(at - t.text_names.begin())], cols[k],
               coding ? &coding->cols[k] : nullptr, q.xcols[k], path);
    }
    for (index i = 0; i < d.x.rows(); ++i)
      d.x(i, static_cast<index>(k)) = v[static_cast<std::size_t>(i)];
  }
  if (!q.y.empty() && !coding) d.y = t.columns[t.column(q.y)];
  d.cols = std::move(cols);
  return d;
}

mixed_spec spec_of(const mixed_data& d) {
  mixed_spec s;
  for (const auto& c : d.cols) s.types.push_back(c.type);
  return s;
}

// The bandwidths: given numbers, or statsmodels' normal reference with each λ kept in its range.
std::vector<double> reference_or_given(const mixed_request& q, const mixed_spec& s,
                                       const mixed_data& d) {
  if (!q.bandwidth.empty() &&
      (std::isdigit(static_cast<unsigned char>(q.bandwidth[0])) || q.bandwidth[0] == '.')) {
    const auto h = parse_bandwidth_list(q.bandwidth);
    if (h.size() != s.types.size())
      throw user_error(fmt::format("--bandwidth: {} values for {} columns (h or λ, one each)",
                                   h.size(), s.types.size()));
    return h;
  }
  std::vector<double> h = mixed_normal_reference(s, d.x.cview());
  const auto levels = mixed_levels(s, d.x.cview());
  for (std::size_t k = 0; k < h.size(); ++k) {
    if (s.types[k] == column_type::unordered)
      h[k] = std::min(h[k], double(levels[k] - 1) / double(levels[k]));
    if (s.types[k] == column_type::ordered) h[k] = std::min(h[k], 1.0);
  }
  return h;
}

std::string describe(const mixed_request& q, const mixed_data& d, const std::vector<double>& h) {
  std::vector<std::string> parts;
  for (std::size_t k = 0; k < h.size(); ++k)
    parts.push_back(fmt::format("{}: {} {} = {:.4g}", q.xcols[k],
                                d.cols[k].type == column_type::continuous  ? "gaussian"
                                : d.cols[k].type == column_type::unordered ? "Aitchison-Aitken"
                                                                           : "Wang-van Ryzin",
                                d.cols[k].type == column_type::continuous ? "h" : "lambda", h[k]));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string cell(const mixed_data& d, index i, std::size_t k) {
  const double v = d.x(i, static_cast<index>(k));
  return d.cols[k].text ? d.cols[k].levels[static_cast<std::size_t>(v)] : fmt::format("{}", v);
}

void finish(const mixed_request& q, const mixed_data& d, const mixed_data& at,
            const std::vector<double>& h, const std::vector<double>& value, const char* what,
            nlohmann::json js) {
  std::string csv = fmt::format("{},{}\n", fmt::join(q.xcols, ","), what);
  for (index i = 0; i < at.x.rows(); ++i) {
    for (std::size_t k = 0; k < q.xcols.size(); ++k) csv += viz::csv_cell(cell(at, i, k)) + ",";
    const double v = value[static_cast<std::size_t>(i)];
    csv += std::isfinite(v) ? fmt::format("{:.17g}\n", v) : std::string("\n");
  }
  js["data"] = d.source;
  js["n"] = d.x.rows();
  js["x"] = q.xcols;
  js["bandwidth"] = h;
  std::vector<std::string> types;
  for (const auto& c : d.cols)
    types.push_back(c.type == column_type::continuous  ? "continuous"
                    : c.type == column_type::unordered ? "unordered"
                                                       : "ordered");
  js["types"] = types;
  io::atomic_writer w;
  if (!q.out.out.empty()) w.stage(q.out.out, csv);
  if (!q.out.summary.empty()) w.stage(q.out.summary, js.dump(2) + "\n");
  w.commit();
  if (q.quiet) return;
  fmt::print("{} points from {}, mixed kernels ({})\n", d.x.rows(), d.source, describe(q, d, h));
  if (!q.out.out.empty()) return;
  const index show = std::min<index>(at.x.rows(), 9);
  fmt::print("\n{}\n", csv.substr(0, [&] {
    std::size_t pos = 0;
    for (index r = 0; r <= show && pos != std::string::npos; ++r) pos = csv.find('\n', pos) + 1;
    return pos;
  }()));
  fmt::print("(every point: --out FILE.csv)\n");
}

void check(const mixed_request& q, const char* cmd) {
  if (q.data.empty())
    throw user_error(fmt::format("kf {} with --categorical/--ordered needs a data file", cmd));
  if (!q.out.plot.empty() || !q.out.plot_criterion.empty() || !q.out.criterion_csv.empty())
    throw user_error(
        "--plot, --plot-criterion and --criterion-csv do not apply to mixed data "
        "(--categorical, --ordered)");
  require_fit_outputs(q.out);
}

}  // namespace

namespace {

// kf smooth (regression: cv = least squares) or kf kde (density: cv-ml = likelihood).
void run_mixed(const mixed_request& q, bool density) {
  const char* cmd = density ? "kde" : "smooth";
  check(q, cmd);
  const std::string search = density ? "cv-ml" : "cv";
  const bool numbers =
      !q.bandwidth.empty() &&
      (std::isdigit(static_cast<unsigned char>(q.bandwidth[0])) || q.bandwidth[0] == '.');
  const bool reference =
      q.bandwidth == "silverman" || q.bandwidth == "scott" || q.bandwidth == "normal-reference";
  const bool searched = q.bandwidth == search || (!density && q.bandwidth == "cv-ls");
  if (!numbers && !reference && !searched)
    throw user_error(
        fmt::format("--bandwidth {}: with categorical columns expected {}, "
                    "normal-reference or numbers (h or lambda per column)",
                    q.bandwidth, search));
  const auto cols = columns_of(q);
  const mixed_data d = read(q.data, q, cols, nullptr);
  const mixed_data at = q.at.empty() ? d : read(q.at, q, cols, &d);
  mixed_spec s = spec_of(d);
  nlohmann::json js;
  js["method"] = density ? "kde (mixed kernels)" : "nw (mixed kernels)";
  try {
    if (searched) {
      const auto r = density ? mixed_density_bandwidth_cv_ml(s, d.x.cview())
                             : mixed_nw_bandwidth_cv_ls(s, d.x.cview(), d.y);
      s.bandwidth = r.bandwidth;
      js["search_evaluations"] = r.evaluations;
    } else {
      s.bandwidth = reference_or_given(q, s, d);
    }
    js["criterion"] =
        searched ? (density ? "cv_ml" : "cv_ls") : (numbers ? "fixed" : "normal_reference");
    js["criterion_value"] =
        density ? mixed_density_cv_ml(s, d.x.cview()) : mixed_nw_cv_ls(s, d.x.cview(), d.y);
    const auto values = density ? mixed_density(s, d.x.cview(), at.x.cview())
                                : mixed_nw(s, d.x.cview(), d.y, at.x.cview());
    if (!q.quiet) fmt::print("kf {}: ", cmd);
    finish(q, d, at, s.bandwidth, values, density ? "density" : "fit", js);
  } catch (const std::invalid_argument& e) {
    throw user_error(fmt::format("{}: {}", d.source, e.what()));
  }
}

}  // namespace

void run_mixed_smooth(const mixed_request& q) { run_mixed(q, false); }
void run_mixed_kde(const mixed_request& q) { run_mixed(q, true); }

}  // namespace kf::cli
