#include "kernelformer/explore/explorer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <random>
#include <stdexcept>
#include <utility>

#include "kernelformer/explore/demos.hpp"
#include "kernelformer/explore/explorer_head.hpp"
#include "kernelformer/masks.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "kernelformer/smooth.hpp"

namespace kf {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr index kHeatRows = 60, kHeatCols = 120;  // heatmap size limits (explorer_result)

// The noise-free function f(x) of a data set named in explorer_functions(); anything not listed
// is the step (names are validated before this is called).
double truth_of(const std::string& f, double x) {
  if (f == "seed001" || f == "seed001_numpy") return 2 * std::sin(x);
  if (f == "sin") return std::sin(2 * kPi * x);
  if (f == "sinusoids") return std::sin(2 * kPi * x) + 0.5 * std::sin(6 * kPi * x);
  if (f == "linear") return 1 + 2 * x;
  return x >= 0.5 ? 1.0 : 0.0;  // step
}

// The listed data set of that name, or nullptr.
const explorer_function_info* find_function(const std::string& name) {
  static const auto fs = explorer_functions();
  for (const auto& f : fs)
    if (f.name == name) return &f;
  return nullptr;
}

const explorer_kernel_info* find_kernel(const std::vector<explorer_kernel_info>& ks,
                                        std::string_view name) {
  for (const auto& k : ks)
    if (k.name == name) return &k;
  return nullptr;
}

// "name:a=1,b=2" → {a: 1, b: 2} (the canonical text kernel_format writes).
std::map<std::string, double> format_params(const kernel_spec& ks) {
  std::map<std::string, double> out;
  const std::string s = kernel_format(ks);
  std::size_t p = s.find(':');  // p: the ':' or ',' before the next "key=value"
  while (p != std::string::npos) {
    const std::size_t eq = s.find('=', p + 1), next = s.find(',', p + 1);
    out[s.substr(p + 1, eq - p - 1)] = std::stod(s.substr(eq + 1, next - eq - 1));
    p = next;
  }
  return out;
}

// Parses `text` as one kernel listed in `ks` and checks its extra parameters' ranges (a parameter
// the text leaves out is checked at its default). Every error is a std::invalid_argument that
// starts with `what`, the request field's name.
// Products ("a*b") are refused: the explorer's controls describe one kernel.
kernel_spec parse_listed(const std::string& text, const std::vector<explorer_kernel_info>& ks,
                         const char* what, const char* kind) {
  kernel_spec spec;
  try {
    spec = kernel_parse(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: {}", what, e.what()));
  }
  const explorer_kernel_info* info =
      spec.is_product() ? nullptr : find_kernel(ks, kernel_name(spec.first));
  if (!info) throw std::invalid_argument(fmt::format("{}: '{}' is not {}", what, text, kind));
  const auto values = format_params(spec);  // read back from the canonical text: parsed values
  for (const auto& p : info->params) {
    const auto it = values.find(p.key);
    const double v = it == values.end() ? p.value : it->second;
    if (!(v >= p.lo && v <= p.hi))
      throw std::invalid_argument(fmt::format("{}: {} {} = {} is outside [{}, {}]", what,
                                              info->name, p.key, v, p.lo, p.hi));
  }
  return spec;
}

// A vector as an (n, 1) matrix: 1-D points or values in the primitive's layout.
matrix<double> column(const std::vector<double>& v) {
  matrix<double> m(static_cast<index>(v.size()), 1);
  std::copy(v.begin(), v.end(), m.data());
  return m;
}

// Smooths the values v at the queries; NaN where the row is empty.
//   q: (G, d) queries, k: (n, d) keys, v: (n, 1) values → (G) curve
// An empty row (lse = −∞: no key has positive weight, e.g. a compact kernel far from the data)
// shows as a gap in the plot instead of a made-up 0.
std::vector<double> smooth_curve(const_matrix_view<double> q, const_matrix_view<double> k,
                                 const matrix<double>& v, const kernel_spec& kern) {
  const index g = q.rows;
  matrix<double> out(g, 1);
  std::vector<double> lse(static_cast<std::size_t>(g));
  smooth_forward<double>(out.view(), lse, q, k, v.cview(), kern, mask::none());
  std::vector<double> r(static_cast<std::size_t>(g));
  for (std::size_t i = 0; i < r.size(); ++i)
    r[i] = std::isinf(lse[i]) ? std::numeric_limits<double>::quiet_NaN()
                              : out(static_cast<index>(i), 0);
  return r;
}

// The weights of query rows q summed over runs of consecutive keys (run c is keys [first[c],
// first[c + 1])): the primitive with one-hot values, v_jc = 1 when key j is in run c, so
// out_ic = Σ_{j ∈ run c} p_ij — the fast path, no n-wide row is ever written out.
matrix<double> run_weights(const_matrix_view<double> q, const_matrix_view<double> k,
                           const std::vector<index>& first, const kernel_spec& kern) {
  const index cols = static_cast<index>(first.size()) - 1;
  matrix<double> v(k.rows, cols), out(q.rows, cols);
  for (index c = 0; c < cols; ++c)  // v: (n, cols) one-hot, out: (rows, cols)
    for (index j = first[std::size_t(c)]; j < first[std::size_t(c) + 1]; ++j) v(j, c) = 1;
  smooth_forward<double>(out.view(), {}, q, k, v.cview(), kern, mask::none());
  return out;
}

// The rows of m listed in pick, in that order: (pick.size(), m.cols()).
matrix<double> rows_of(const matrix<double>& m, const std::vector<index>& pick) {
  matrix<double> out(static_cast<index>(pick.size()), m.cols());
  for (std::size_t i = 0; i < pick.size(); ++i)
    for (index c = 0; c < m.cols(); ++c) out(static_cast<index>(i), c) = m(pick[i], c);
  return out;
}

}  // namespace

std::vector<explorer_function_info> explorer_functions() {
  return {
      {"seed001_numpy",
       "seed 001's 40 points exactly: numpy.random.seed(42); x = uniform(0, 6, 40), "
       "y = 2 sin x + normal(size=40)",
       0, 6, 40},
      {"seed001", "2 sin x + noise, x ~ U(0, 6): seed 001's function, any n", 0, 6},
      {"sin", "sin 2πx + noise, x ~ U(0, 1)", 0, 1},
      {"sinusoids",
       "sin 2πx + ½ sin 6πx + noise on n evenly spaced points of [0, 1] (seed 002: n = 50, "
       "no noise)",
       0, 1},
      {"linear", "1 + 2x + noise: nearly linear, so a large bandwidth is fine (seed 000)", 0, 1},
      {"step", "1[x ≥ ½] + noise: a jump that every smoother blurs", 0, 1}};
}

// Distance kernels of the catalog (those taking a squared distance), with a control for each
// parameter beyond the bandwidth; ranges are what the validation enforces.
std::vector<explorer_kernel_info> explorer_kernels() {
  std::vector<explorer_kernel_info> out;
  for (const auto& k : kernel_catalog()) {
    if (k.arg != kernel_arg::sqdist) continue;
    explorer_kernel_info e{std::string(k.name), std::string(k.doc), k.compact, {}};
    if (k.name == "rational_quadratic")
      e.params.push_back({"alpha", "α", 1, 0.05, 100, false, true});
    if (k.name == "periodic" || k.name == "locally_periodic")
      e.params.push_back({"period", "period p", 1, 0.02, 20, false, true});
    out.push_back(std::move(e));
  }
  return out;
}

// Dot-product kernels of the catalog (exp_dot, polynomial, linear, …) for the identity head.
std::vector<explorer_kernel_info> explorer_attention_kernels() {
  std::vector<explorer_kernel_info> out;
  for (const auto& k : kernel_catalog()) {
    if (k.arg != kernel_arg::dot) continue;
    explorer_kernel_info e{std::string(k.name), std::string(k.doc), k.compact, {}};
    if (k.name == "polynomial") {
      e.params.push_back({"degree", "degree p", 2, 1, 8, true, false});
      e.params.push_back({"c", "offset c", 1, -2, 10, false, false});
    }
    if (k.name == "linear") e.params.push_back({"c", "offset c", 0, -2, 10, false, false});
    out.push_back(std::move(e));
  }
  return out;
}

kernel_spec explorer_nw_kernel(const explorer_request& r) {
  static const auto ks = explorer_kernels();
  kernel_spec spec = parse_listed(r.kernel, ks, "kernel",
                                  "a distance kernel (gaussian, epanechnikov, periodic, …)");
  kernel_set_param(spec.first, r.bandwidth);  // the request's bandwidth overrides any "h=" text
  return spec;
}

kernel_spec explorer_attention_kernel(const explorer_request& r) {
  static const auto ks = explorer_attention_kernels();
  kernel_spec spec = parse_listed(r.attention_kernel, ks, "attention_kernel",
                                  "a dot kernel (exp_dot, polynomial, linear)");
  kernel_set_param(spec.first, r.temperature);  // likewise the temperature overrides "t="
  return spec;
}

const std::vector<std::string>& explorer_attention_modes() {
  static const std::vector<std::string> m = {"identity", "random", "mimic", "data"};
  return m;
}

void explorer_validate(const explorer_request& r) {
  const auto* f = find_function(r.function);
  if (!f) {
    std::string names;
    for (const auto& g : explorer_functions()) names += (names.empty() ? "" : ", ") + g.name;
    throw std::invalid_argument(fmt::format("function: unknown '{}' ({})", r.function, names));
  }
  if (!f->fixed_n && (r.n < 2 || r.n > 2000))
    throw std::invalid_argument(fmt::format("n: {} is outside 2..2000", r.n));
  if (!(r.noise >= 0 && r.noise <= 10))
    throw std::invalid_argument(fmt::format("noise: {} is outside [0, 10]", r.noise));
  if (!(r.bandwidth > 0 && r.bandwidth <= 1e3))
    throw std::invalid_argument(fmt::format("bandwidth: {} is outside (0, 1000]", r.bandwidth));
  if (!(r.temperature > 0 && r.temperature <= 1e3))
    throw std::invalid_argument(fmt::format("temperature: {} is outside (0, 1000]", r.temperature));
  if (r.grid < 10 || r.grid > 2000)
    throw std::invalid_argument(fmt::format("grid: {} is outside 10..2000", r.grid));
  explorer_nw_kernel(r);  // called for their checks only: each throws on a bad kernel
  explorer_attention_kernel(r);
  const auto& modes = explorer_attention_modes();
  if (std::find(modes.begin(), modes.end(), r.attention) == modes.end())
    throw std::invalid_argument(
        fmt::format("attention: unknown mode '{}' (identity, random, mimic, data)", r.attention));
}

// Validates r, then draws the data: x ~ U(lo, hi) (evenly spaced for "sinusoids"), sorted, and
// y = f(x) + noise·N(0, 1), both from one mt19937_64 seeded with r.seed, so a request always
// yields the same points. The fixed set ignores n, noise and seed.
explorer_data explorer_make_data(const explorer_request& r) {
  explorer_validate(r);
  const auto& f = *find_function(r.function);
  explorer_data d;
  d.lo = f.lo, d.hi = f.hi;
  if (f.name == "seed001_numpy") {
    auto s = demo::seed001_sorted();  // the data of kf demo and the report's seed-001 section
    d.x = std::move(s.x);
    d.y = std::move(s.y);
  } else {
    std::mt19937_64 rng(r.seed);
    std::uniform_real_distribution<double> u(d.lo, d.hi);
    std::normal_distribution<double> g(0.0, 1.0);
    const auto n = static_cast<std::size_t>(r.n);
    d.x.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      d.x[i] = f.name == "sinusoids" ? d.lo + (d.hi - d.lo) * double(i) / double(n - 1) : u(rng);
    std::sort(d.x.begin(), d.x.end());
    d.y.resize(n);
    for (std::size_t i = 0; i < n; ++i) d.y[i] = truth_of(f.name, d.x[i]) + r.noise * g(rng);
  }
  // The query grid: G evenly spaced points including both ends, and the truth there.
  const auto G = static_cast<std::size_t>(r.grid);
  d.grid.resize(G);
  d.truth.resize(G);
  for (std::size_t i = 0; i < G; ++i) {
    d.grid[i] = d.lo + (d.hi - d.lo) * double(i) / double(G - 1);
    d.truth[i] = truth_of(f.name, d.grid[i]);
  }
  return d;
}

// φ(x) = [sin ω1 t, cos ω1 t, sin ω2 t, cos ω2 t], t = x − lo        φ: (n, 4)
// ω1 = π/(2R) is a quarter turn over the range, so no two points of [lo, hi] share a feature row.
matrix<double> explorer_features(const std::vector<double>& x, double lo, double hi) {
  const double R = hi - lo, w1 = kPi / (2 * R), w2 = kPi / R;
  matrix<double> f(static_cast<index>(x.size()), 4);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double t = x[i] - lo;
    const auto r = static_cast<index>(i);
    f(r, 0) = std::sin(w1 * t), f(r, 1) = std::cos(w1 * t);
    f(r, 2) = std::sin(w2 * t), f(r, 3) = std::cos(w2 * t);
  }
  return f;
}

// φ(x0)·φ(x_i) = cos ω1 d + cos ω2 d ≈ 2 − (ω1² + ω2²) d²/2 near d = 0, so exp(q·k / T) is, up to
// a constant factor, the Gaussian exp(−d² / (2h²)) with h² = T / (ω1² + ω2²).
double explorer_equivalent_bandwidth(double temperature, double lo, double hi) {
  const double R = hi - lo, w1 = kPi / (2 * R), w2 = kPi / R;
  return std::sqrt(temperature / (w1 * w1 + w2 * w2));
}

// Both smoothers on the request's data: the NW curve on x, the head's curve on its queries, keys
// and values (explorer_head.hpp), and their downsampled weight matrices.
explorer_result explorer_compute(const explorer_request& r, const explorer_head& head) {
  explorer_result res;
  res.data = explorer_make_data(r);
  const auto& d = res.data;
  const index n = static_cast<index>(d.x.size());
  const kernel_spec nw_kernel = explorer_nw_kernel(r);
  const matrix<double> xg = column(d.grid), xk = column(d.x), yk = column(d.y);  // (G,1) (n,1)
  const matrix<double> qg = explorer_head_queries(head, d.grid, d.lo, d.hi),
                       kk = explorer_head_keys(head, d.x, d.lo, d.hi),
                       vk = explorer_head_values(head, d.x, d.y, d.lo, d.hi);
  res.nw = smooth_curve(xg.cview(), xk.cview(), yk, nw_kernel);
  res.attention = smooth_curve(qg.cview(), kk.cview(), vk, head.kernel);
  res.attention_bandwidth = head.mode == "identity" && r.attention_kernel == "exp_dot"
                                ? explorer_equivalent_bandwidth(r.temperature, d.lo, d.hi)
                                : std::numeric_limits<double>::quiet_NaN();
  // Heatmap rows: up to 60 grid points, evenly spaced; columns: runs of ⌈n / 120⌉ points.
  const index G = r.grid, rows = std::min(kHeatRows, G);
  std::vector<index> pick(static_cast<std::size_t>(rows));
  for (index i = 0; i < rows; ++i)  // first and last grid points are always picked
    pick[static_cast<std::size_t>(i)] = rows > 1 ? i * (G - 1) / (rows - 1) : 0;
  for (index p : pick) res.heat_x.push_back(d.grid[static_cast<std::size_t>(p)]);
  const index run = (n + kHeatCols - 1) / kHeatCols;  // ≤ 120 columns; the last run may be short
  for (index j = 0; j < n; j += run) res.heat_col_first.push_back(j);
  res.heat_col_first.push_back(n);
  res.heat_nw = run_weights(rows_of(xg, pick).cview(), xk.cview(), res.heat_col_first, nw_kernel);
  res.heat_attention =
      run_weights(rows_of(qg, pick).cview(), kk.cview(), res.heat_col_first, head.kernel);
  return res;
}

// Binary search on the sorted x; throws std::out_of_range on empty data.
index explorer_nearest_point(const explorer_data& d, double x0) {
  if (d.x.empty()) throw std::out_of_range("no data points");
  const auto it = std::lower_bound(d.x.begin(), d.x.end(), x0);
  if (it == d.x.begin()) return 0;
  if (it == d.x.end()) return static_cast<index>(d.x.size()) - 1;
  const auto j = static_cast<index>(it - d.x.begin());
  return x0 - *(it - 1) <= *it - x0 ? j - 1 : j;  // x[j−1] < x0 ≤ x[j]; ties go to j − 1
}

explorer_profile explorer_point_profile(const explorer_request& r, const explorer_head& head,
                                        const explorer_data& d, index point) {
  const index n = static_cast<index>(d.x.size());
  if (point < 0 || point >= n)
    throw std::out_of_range(fmt::format("point: {} is outside 0..{}", point, n - 1));
  explorer_profile p;
  p.point = point;
  p.x0 = d.x[static_cast<std::size_t>(point)];
  const matrix<double> xk = column(d.x);
  const matrix<double> qk = explorer_head_queries(head, d.x, d.lo, d.hi),
                       kk = explorer_head_keys(head, d.x, d.lo, d.hi);
  matrix<double> w(1, n);                   // one weight row, reused for both smoothers
  const std::vector<index> rows = {point};  // the query is data point `point` itself
  smooth_weights<double>(w.view(), rows, xk.cview(), xk.cview(), explorer_nw_kernel(r),
                         mask::none());
  p.nw.assign(w.values().begin(), w.values().end());
  smooth_weights<double>(w.view(), rows, qk.cview(), kk.cview(), head.kernel, mask::none());
  p.attention.assign(w.values().begin(), w.values().end());
  return p;
}

// spec.exact: no binned approximation, so CV scores the same exact NW the explorer draws.
double explorer_loo_bandwidth(const explorer_request& r) {
  const explorer_data d = explorer_make_data(r);
  try {
    regression_spec spec;
    spec.kernel = explorer_nw_kernel(r).first;
    kernel_set_param(spec.kernel, 1.0);  // the fit carries the bandwidth in spec.bandwidth
    spec.bandwidth = {r.bandwidth};
    spec.exact = true;
    const matrix<double> xk = column(d.x);
    const auto fit = regression_fit_data(spec, xk.cview(), d.y, bandwidth_criterion::loo_cv);
    return fit.spec.bandwidth.at(0);
  } catch (const std::invalid_argument&) {  // CV could not choose (see the header): NaN, no error
    return std::numeric_limits<double>::quiet_NaN();
  }
}

}  // namespace kf
