// The routes of regression and density evaluation, chosen in one place (route.hpp): the only
// caller of the support predicates (binned_supports, sorted_window_supports, kernel_compact with
// the support fraction).
#include "kernelformer/regression/route.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <variant>

#include "kernelformer/regression/binned.hpp"
#include "kernelformer/regression/kde.hpp"
#include "kernelformer/regression/smoother.hpp"
#include "regression/smoother_routes.hpp"

namespace kf {

std::string_view route::name() const {
  switch (kind) {
    case route_kind::neighbors:
      return "neighbors (sorted, two pointers; a k-d tree in 2+ columns)";
    case route_kind::all_pairs_topk:
      return "exact (all pairs, top-k mask)";
    case route_kind::features:
      return "features (random Fourier features, prefix sums: O(n·r))";
    case route_kind::binned:
      return "binned (linear binning + FFT)";
    case route_kind::binned2d:
      return "binned 2-D (bilinear binning + FFT)";
    case route_kind::sorted_windows:
      return "exact (sorted windows, running polynomial sums)";
    case route_kind::kd_tree:
      return "exact (k-d tree over each support)";
    case route_kind::all_pairs:
      break;
  }
  return "exact (all pairs)";
}

double support_fraction(const std::vector<double>& h, const_matrix_view<double> x) {
  double f = 1;
  for (index c = 0; c < x.cols; ++c) {
    double lo = x(0, c), hi = x(0, c);
    for (index i = 0; i < x.rows; ++i) lo = std::min(lo, x(i, c)), hi = std::max(hi, x(i, c));
    const double hc = h[h.size() == 1 ? 0 : static_cast<std::size_t>(c)];
    f *= hi > lo ? std::min(1.0, 2 * hc / (hi - lo)) : 1.0;
  }
  return f;
}

namespace {

// A compact kernel in two or more columns: the k-d tree while the support is a small part of
// the data's box, all pairs beyond.
route tree_or_all_pairs(const any_kernel& k, const std::vector<double>& h,
                        const_matrix_view<double> x) {
  const double f = x.rows > 0 ? support_fraction(h, x) : 1.0;
  if (f <= kKdTreeMaxFraction)
    return {route_kind::kd_tree,
            fmt::format("{} in {} columns: its support spans {:.3g}% of the data's box (≤ 5%)",
                        kernel_name(k), x.cols, 100 * f)};
  return {route_kind::all_pairs,
          fmt::format("{} in {} columns: its support spans {:.3g}% of the data's box (> 5%: the "
                      "k-d tree does not pay)",
                      kernel_name(k), x.cols, 100 * f)};
}

}  // namespace

route choose_regression_route(const regression_spec& spec, const_matrix_view<double> x) {
  const index n = x.rows, d = x.cols;
  if (spec.method == regression_method::knn) {
    if (spec.exact) return {route_kind::all_pairs_topk, "knn with --exact"};
    return {route_kind::neighbors,
            d == 1 ? "knn in 1 column" : fmt::format("knn in {} columns (a k-d tree)", d)};
  }
  if (std::holds_alternative<kernel_rff>(spec.kernel))
    return {route_kind::features, "the rff kernel (an explicit feature map)"};
  const bool large = !spec.exact && n >= spec.binned_min_n;
  if (large && d == 1 && binned_supports(spec.kernel))
    return {route_kind::binned, fmt::format("1 column, {} ≥ {} points, {}", n, spec.binned_min_n,
                                            kernel_name(spec.kernel))};
  if (large && d == 2 && spec.method == regression_method::nw && binned_supports(spec.kernel))
    return {route_kind::binned2d, fmt::format("2 columns, Nadaraya–Watson, {} ≥ {} points, {}", n,
                                              spec.binned_min_n, kernel_name(spec.kernel))};
  const std::string exact =
      spec.exact ? "--exact" : fmt::format("{} < {} points", n, spec.binned_min_n);
  if (d == 1 && detail::sorted_window_supports(spec.kernel))
    return {route_kind::sorted_windows,
            fmt::format("1 column, the compact {} kernel", kernel_name(spec.kernel))};
  if (d >= 2 && kernel_compact(spec.kernel)) {
    route r = tree_or_all_pairs(spec.kernel, detail::regression_bandwidths(spec, d), x);
    r.why += ", " + exact;
    return r;
  }
  if (!large) return {route_kind::all_pairs, exact};
  if (d == 1 || (d == 2 && spec.method == regression_method::nw))
    return {route_kind::all_pairs,
            fmt::format("the {} kernel is not binned", kernel_name(spec.kernel))};
  return {route_kind::all_pairs,
          fmt::format("{} columns{}: no binned grid", d, d == 2 ? ", local linear" : "")};
}

route choose_kde_route(const any_kernel& kernel, const std::vector<double>& h,
                       const_matrix_view<double> x, const kde_options& options) {
  const index n = x.rows, d = x.cols;
  if (!options.exact && n >= options.binned_min_n && (d == 1 || d == 2))
    return {
        d == 1 ? route_kind::binned : route_kind::binned2d,
        fmt::format("{} column{}, {} ≥ {} points", d, d == 1 ? "" : "s", n, options.binned_min_n)};
  const std::string exact = options.exact
                                ? "--exact"
                                : (d <= 2 ? fmt::format("{} < {} points", n, options.binned_min_n)
                                          : fmt::format("{} columns: no binned grid", d));
  if (d >= 2 && kernel_compact(kernel) && !h.empty()) {
    route r = tree_or_all_pairs(kernel, h, x);
    r.why += ", " + exact;
    return r;
  }
  return {route_kind::all_pairs, exact};
}

}  // namespace kf
