// kf attend's --compare-exact report (attend_outputs.hpp).
#include "attend_outputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kf::cli {

template <class T>
void print_compare_exact(const_matrix_view<T> q, const_matrix_view<T> k, const_matrix_view<T> v,
                         const_matrix_view<T> out, const kernel_spec& kern, const mask& msk,
                         const smooth_options& opt, const std::vector<index>& weight_rows) {
  const kernel_spec exact(*kernel_exact_counterpart(kern.first));
  matrix<T> ex(q.rows, v.cols);
  smooth_forward<T>(ex.view(), {}, q, k, v, exact, msk, opt);
  double num = 0, den = 0;
  for (index i = 0; i < q.rows; ++i)
    for (index c = 0; c < v.cols; ++c) {
      const double e = double(ex(i, c)), diff = double(out(i, c)) - e;
      num += diff * diff;
      den += e * e;
    }
  std::vector<index> rows = weight_rows;
  if (rows.empty())
    for (index t = 0; t < std::min<index>(8, q.rows); ++t)
      rows.push_back(t * q.rows / std::min<index>(8, q.rows));
  matrix<T> pw(static_cast<index>(rows.size()), k.rows), pe(pw.rows(), k.rows);
  smooth_weights<T>(pw.view(), rows, q, k, kern, msk, opt);
  smooth_weights<T>(pe.view(), rows, q, k, exact, msk, opt);
  double tv = 0, rel = 0;
  for (index a = 0; a < pw.rows(); ++a) {
    double l1 = 0, d2 = 0, e2 = 0;
    for (index j = 0; j < k.rows; ++j) {
      const double diff = double(pw(a, j)) - double(pe(a, j));
      l1 += std::abs(diff);
      d2 += diff * diff;
      e2 += double(pe(a, j)) * double(pe(a, j));
    }
    tv += l1;
    rel += e2 > 0 ? std::sqrt(d2 / e2) : 0.0;
  }
  const double nr = double(std::max<index>(1, pw.rows()));
  fmt::print(
      "compare-exact: {} vs {}: outputs rel. error {:.4g} (Frobenius); weights on {} rows: "
      "mean sum|p - p*| {:.4g}, mean rel. L2 {:.4g}\n",
      kernel_describe(kernel_resolve(kern, q.cols, std::is_same_v<T, float>)),
      kernel_describe(kernel_resolve(exact, q.cols, std::is_same_v<T, float>)),
      den > 0 ? std::sqrt(num / den) : std::sqrt(num), pw.rows(), tv / nr, rel / nr);
}

template void print_compare_exact<float>(const_matrix_view<float>, const_matrix_view<float>,
                                         const_matrix_view<float>, const_matrix_view<float>,
                                         const kernel_spec&, const mask&, const smooth_options&,
                                         const std::vector<index>&);
template void print_compare_exact<double>(const_matrix_view<double>, const_matrix_view<double>,
                                          const_matrix_view<double>, const_matrix_view<double>,
                                          const kernel_spec&, const mask&, const smooth_options&,
                                          const std::vector<index>&);

}  // namespace kf::cli
