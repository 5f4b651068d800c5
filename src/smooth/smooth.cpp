// The smoothing primitive's entry points (contracts in kernelformer/smooth.hpp): inputs checked,
// the route chosen once (route.hpp lists the routes and what each serves), the route run, and
// the route reported in smooth_stats.
#include "kernelformer/smooth.hpp"

#include "smooth/features.hpp"
#include "smooth/route.hpp"

namespace kf {

using detail::tiles::plan;

// The names stats and logs print; "unknown" is unreachable for a valid enum value but keeps
// the function total.
std::string_view smooth_route_name(smooth_route r) {
  switch (r) {
    case smooth_route::reference:
      return "reference";
    case smooth_route::gemm_tiles:
      return "gemm-tiles";
    case smooth_route::register_tiles:
      return "register-tiles";
    case smooth_route::topk:
      return "topk";
    case smooth_route::features:
      return "features";
  }
  return "unknown";
}

namespace {

// The dense routes (GEMM or register tiles) and top-k, as route.hpp decides.
template <class T>
smooth_stats forward_tiles(const plan<T>& pl, matrix_view<T> out, matrix_view<T> out_sq,
                           std::span<T> lse) {
  namespace tiles = detail::tiles;
  const tiles::forward_route r = tiles::choose_forward_route(pl, !out_sq.empty());
  if (r.kind == smooth_route::topk) return tiles::forward_topk(pl, out, out_sq, lse);
  if constexpr (std::is_same_v<T, float>)
    if (r.kind == smooth_route::register_tiles) return tiles::forward_registers(pl, r, out, lse);
  return tiles::forward_gemm(pl, r, out, out_sq, lse);
}

// The backward counterpart: gradients accumulate into g; returns the route that ran. Register
// tiles exist in float only, hence the if constexpr around them.
template <class T>
smooth_route backward_tiles(const plan<T>& pl, smooth_grads<T>& g, const_matrix_view<T> dout,
                            const_matrix_view<T> out, std::span<const T> lse) {
  namespace tiles = detail::tiles;
  const tiles::backward_route r = tiles::choose_backward_route(pl, g.want_dparam);
  if (r.kind == smooth_route::topk)
    tiles::backward_topk(pl, g, dout);
  else if constexpr (std::is_same_v<T, float>) {
    if (r.kind == smooth_route::register_tiles)
      tiles::backward_registers(pl, r, g, dout, out, lse);
    else
      tiles::backward_gemm(pl, r, g, dout, out, lse);
  } else
    tiles::backward_gemm(pl, r, g, dout, out, lse);
  return r.kind;
}

}  // namespace

// out (n, dv), out_sq (n, dv) or empty, lse (n) or empty, from q (n, d), k (m, d), v (m, dv).
// Throws std::invalid_argument (bad inputs, mask or shapes; a bandwidth too small for the
// distances) and std::overflow_error (a log-weight overflowing to +inf). The plan validates the
// inputs before the output shapes are checked here; the route then writes every row.
template <class T>
smooth_stats smooth_forward_sq(matrix_view<T> out, matrix_view<T> out_sq, std::span<T> lse,
                               const_matrix_view<T> q, const_matrix_view<T> k,
                               const_matrix_view<T> v, const kernel_spec& kern, const mask& msk,
                               const smooth_options& options) {
  // A feature map sums φ(K)ᵀV (features.cpp): decided from the kernel alone, before any plan.
  if (!kern.is_product() && kernel_is_feature_map(kern.first))
    return detail::features::forward<T>(out, out_sq, lse, q, k, v, kern, msk, options);
  // Extreme bandwidths or inputs: computed on q/h, k/h (detail::rescale_extreme).
  kernel_spec kern2 = kern;
  smooth_options opt = options;
  const bool rescaled = detail::rescale_extreme<T>(kern2, opt, q, k);
  // true: v is checked too (m rows; finite when opt.check_finite).
  const plan<T> pl(q, k, v, true, rescaled ? kern2 : kern, msk, opt);
  detail::check_shape(out.rows == q.rows && out.cols == v.cols,
                      "out is " + std::to_string(out.rows) + " x " + std::to_string(out.cols) +
                          ", expected n x dv = " + std::to_string(q.rows) + " x " +
                          std::to_string(v.cols));
  detail::check_shape(out_sq.empty() || (out_sq.rows == q.rows && out_sq.cols == v.cols),
                      "out_sq must be n x dv");
  detail::check_shape(lse.empty() || static_cast<index>(lse.size()) == q.rows,
                      "lse must have n entries");
  detail::check_shape(out_sq.empty() || opt.dropout == 0,
                      "the squared-weight output is not offered with dropout");
  const smooth_stats st = forward_tiles(pl, out, out_sq, lse);
  // Rescaled, a kernel positive everywhere and no mask: an empty row is a weight that fell below
  // the range even on q/h, k/h (every key too many bandwidths away), not one the math gives.
  if (rescaled && st.empty_rows > 0 && !kernel_compact(kern2.first) && msk.describe() == "none")
    throw std::invalid_argument(
        "smooth: " + std::to_string(st.empty_rows) +
        " query rows have every kernel weight below the floating-point range: the bandwidth " +
        detail::short_number(kernel_param(kern.first)) +
        " is too small for the distances to their nearest keys");
  return st;
}

template <class T>
smooth_stats smooth_forward(matrix_view<T> out, std::span<T> lse, const_matrix_view<T> q,
                            const_matrix_view<T> k, const_matrix_view<T> v, const kernel_spec& kern,
                            const mask& msk, const smooth_options& opt) {
  // The plain forward is the _sq entry with no out_sq: one code path for both.
  return smooth_forward_sq<T>(out, matrix_view<T>{}, lse, q, k, v, kern, msk, opt);
}

// dout (n, dv); out (n, dv) and lse (n) as smooth_forward returned them for the same inputs and
// options. dq (n, d), dk (m, d), dv (m, dv) accumulate (+=); empty views are skipped. The
// returned stats carry the route; empty_rows stays 0 (the forward counted them).
template <class T>
smooth_stats smooth_backward(smooth_grads<T>& grads, const_matrix_view<T> dout,
                             const_matrix_view<T> out, std::span<const T> lse,
                             const_matrix_view<T> q, const_matrix_view<T> k, const_matrix_view<T> v,
                             const kernel_spec& kern, const mask& msk, const smooth_options& opt) {
  if (!kern.is_product() && kernel_is_feature_map(kern.first)) {
    detail::features::backward<T>(grads, dout, out, q, k, v, kern, msk, opt);
    return {0, smooth_route::features};
  }
  const plan<T> pl(q, k, v, true, kern, msk, opt);
  detail::check_shape(dout.rows == q.rows && dout.cols == v.cols, "dout must be n x dv");
  detail::check_shape(out.rows == q.rows && out.cols == v.cols, "out must be n x dv");
  detail::check_shape(static_cast<index>(lse.size()) == q.rows, "lse must have n entries");
  detail::check_shape(grads.dq.empty() || (grads.dq.rows == q.rows && grads.dq.cols == q.cols),
                      "dq must be n x d");
  detail::check_shape(grads.dk.empty() || (grads.dk.rows == k.rows && grads.dk.cols == k.cols),
                      "dk must be m x d");
  detail::check_shape(grads.dv.empty() || (grads.dv.rows == v.rows && grads.dv.cols == v.cols),
                      "dv must be m x dv");
  // Gradients w.r.t. the scaled inputs go to temporaries when per-dimension bandwidths apply.
  // The chain rule needs dq' and dk' alone (dh_c sums their products with q', k'), so they cannot
  // accumulate into the caller's dq, dk directly: fresh zeroed (n, d) and (m, d) buffers.
  matrix<T> dqs, dks;
  smooth_grads<T> g;
  g.dv = grads.dv;
  g.want_dparam = grads.want_dparam;
  if (pl.in.scaled) {
    dqs = matrix<T>(q.rows, q.cols);
    dks = matrix<T>(k.rows, k.cols);
    g.dq = dqs.view();
    g.dk = dks.view();
  } else {
    g.dq = grads.dq;
    g.dk = grads.dk;
  }
  const smooth_route route = backward_tiles(pl, g, dout, out, lse);
  // g started at zero, so adding keeps the caller's accumulation contract for dparam too.
  grads.dparam[0] += g.dparam[0];
  grads.dparam[1] += g.dparam[1];
  if (pl.in.scaled) detail::unscale_grads(grads, dqs, dks, pl.in, opt);
  return {0, route};
}

#define KF_INSTANTIATE(T)                                                                          \
  template smooth_stats smooth_forward<T>(matrix_view<T>, std::span<T>, const_matrix_view<T>,      \
                                          const_matrix_view<T>, const_matrix_view<T>,              \
                                          const kernel_spec&, const mask&, const smooth_options&); \
  template smooth_stats smooth_backward<T>(                                                        \
      smooth_grads<T>&, const_matrix_view<T>, const_matrix_view<T>, std::span<const T>,            \
      const_matrix_view<T>, const_matrix_view<T>, const_matrix_view<T>, const kernel_spec&,        \
      const mask&, const smooth_options&);
KF_INSTANTIATE(float)
KF_INSTANTIATE(double)
#undef KF_INSTANTIATE

}  // namespace kf
