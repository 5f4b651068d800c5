// The all-pairs route of regression_evaluate: the smoothing primitive over every (query,
// training point) pair, the reference every faster route is tested against.
//
// Local linear from weighted means: with p_j the primitive's normalized weights at x0 and
// x centered on the training mean, m_x = Σ p x, m_y = Σ p y, S_xx = Σ p x xᵀ − m_x m_xᵀ,
// S_xy = Σ p x y − m_x m_y, the weighted least-squares line through the window gives
//   ŷ(x0) = m_y + (x0 − m_x)ᵀ β,   β = S_xx⁻¹ S_xy,
//   ℓ_j(x0) = p_j (1 + aᵀ(x_j − m_x)),   a = S_xx⁻¹ (x0 − m_x),
// so one primitive call with values [1, y, x, x xᵀ, x y] (and its Σ p² companion) gives the
// fit, the hat-matrix diagonal and Σ ℓ_j² for the standard error.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "detail/eigen.hpp"
#include "kernelformer/progress.hpp"
#include "kernelformer/smooth.hpp"
#include "regression/smoother_routes.hpp"

namespace kf::detail {
namespace {

// Log of the kernel's own weight at distance 0 (the training point's weight on itself). For rff
// it is φ(x)ᵀφ(x) = (2/r) Σ (cos² + sin²) = 1 exactly, whatever the draw.
double log_self_weight(const any_kernel& k) {
  if (std::holds_alternative<kernel_rff>(k)) return 0.0;
  return std::visit(
      [](const auto& kk) {
        const double w = kk.template weight<double>(0.0);
        return std::decay_t<decltype(kk)>::log_domain ? w : std::log(w);
      },
      k);
}

// The primitive's outputs at every query: Σ p v and Σ p² v for the value columns
// [1, y] (nw, knn) or [1, y, x, x xᵀ upper, x y] (local linear, x centered on `mean`), and the
// log-sum-exp of the weights.
struct all_pairs_sums {
  matrix<double> out, out_sq;
  std::vector<double> lse, mean;
  kernel_spec kern;
  index cx = 2, cxx = 0, cxy = 0;
};

// Σ p² v for the columns the standard error reads — [1] (nw) or [1, x, x xᵀ] (local linear,
// contiguous in v from column 2) — into ps.out_sq's rows from q0: a feature map's squared
// weights keep r² numbers per value column (smooth_forward_sq), so the others are not formed.
void feature_sq_columns(all_pairs_sums& ps, const matrix<double>& v, index q0,
                        const_matrix_view<double> xq, const_matrix_view<double> keys, bool ll,
                        const smooth_options& opt) {
  const index width = ll ? ps.cxy - ps.cx : 0, ns = 1 + width;
  matrix<double> vs(v.rows(), ns), o(xq.rows, ns), osq(xq.rows, ns);
  for (index j = 0; j < v.rows(); ++j) {
    vs(j, 0) = v(j, 0);
    for (index c = 0; c < width; ++c) vs(j, 1 + c) = v(j, ps.cx + c);
  }
  smooth_forward_sq<double>(o.view(), osq.view(), {}, xq, keys, vs.cview(), ps.kern, mask::none(),
                            opt);
  for (index i = 0; i < xq.rows; ++i) {
    ps.out_sq(q0 + i, 0) = osq(i, 0);
    for (index c = 0; c < width; ++c) ps.out_sq(q0 + i, ps.cx + c) = osq(i, 1 + c);
  }
}

// The primitive's kernel, mask and options for this spec: knn's uniform or 1/distance kernel
// under a top-k mask, or the spec's kernel at its bandwidth (per column in d > 1).
void primitive_setup(const regression_spec& spec, index n, index d, kernel_spec& kern, mask& msk,
                     smooth_options& opt) {
  if (spec.method == regression_method::knn) {
    if (spec.k < 1 || spec.k > n)
      throw std::invalid_argument(
          fmt::format("knn: k = {} must be in 1..{} (the number of points)", spec.k, n));
    kern = spec.knn_distance_weights ? kernel_spec(kernel_inverse_distance{})
                                     : kernel_spec(kernel_uniform{});
    msk = mask::none().topk(spec.k, topk_rank::distance);
  } else {
    if (!regression_kernel_supported(spec.kernel, spec.method))
      throw std::invalid_argument(
          std::holds_alternative<kernel_rff>(spec.kernel)
              ? std::string("local-linear with rff is refused: the signed weights of far points, "
                            "times (x_j - x)^2, swamp the local second moment (use nw)")
              : fmt::format("regression needs a distance kernel (gaussian, epanechnikov, …) or "
                            "rff (nw), not {}",
                            kernel_name(spec.kernel)));
    const auto h = regression_bandwidths(spec, d);
    any_kernel k = spec.kernel;
    if (d == 1) {
      kernel_set_param(k, h[0]);
    } else {
      kernel_set_param(k, 1.0);
      opt.bandwidth_per_dim = h;
    }
    kern = k;
  }
}

// want_sq = false leaves out_sq at 0 (a feature map's Σ p² costs O(n·r²); criteria need none).
all_pairs_sums primitive_sums(const regression_spec& spec, const_matrix_view<double> x,
                              std::span<const double> y, const_matrix_view<double> xq,
                              bool want_sq) {
  const index n = x.rows, d = x.cols, nq = xq.rows;
  all_pairs_sums ps;
  kernel_spec& kern = ps.kern;
  mask msk;
  smooth_options opt;
  primitive_setup(spec, n, d, kern, msk, opt);
  const bool ll = spec.method == regression_method::local_linear;

  // Training means (local linear works in centered coordinates).
  std::vector<double>& mean = ps.mean;
  mean.assign(static_cast<std::size_t>(d), 0.0);
  if (ll) {
    for (index i = 0; i < n; ++i)
      for (index c = 0; c < d; ++c) mean[static_cast<std::size_t>(c)] += x(i, c) / double(n);
  }
  // Value columns: [1, y] for nw/knn; [1, y, x (d), x xᵀ upper (d(d+1)/2), x y (d)] for ll.
  // With an active shard this process takes its block of the training points as keys.
  const auto b = spec.shard.block_of(n);
  const index npair = d * (d + 1) / 2;
  const index nv = ll ? 2 + d + npair + d : 2;
  const index cx = ps.cx, cxx = ps.cxx = 2 + d, cxy = ps.cxy = 2 + d + npair;
  matrix<double> v(b.size(), nv);
  for (index j = 0; j < b.size(); ++j) {
    const index i = b.lo + j;
    const double yi = y[static_cast<std::size_t>(i)];
    v(j, 0) = 1.0;
    v(j, 1) = yi;
    if (!ll) continue;
    index t = 0;
    for (index a = 0; a < d; ++a) {
      const double xa = x(i, a) - mean[static_cast<std::size_t>(a)];
      v(j, cx + a) = xa;
      v(j, cxy + a) = xa * yi;
      for (index c = a; c < d; ++c)
        v(j, cxx + t++) = xa * (x(i, c) - mean[static_cast<std::size_t>(c)]);
    }
  }
  ps.out = matrix<double>(nq, nv);
  ps.out_sq = matrix<double>(nq, nv);
  ps.lse.resize(static_cast<std::size_t>(nq));
  // Each query row's sums are independent of the others', so a long call (over ~2·10^8 pairs)
  // runs in blocks of query rows, reporting progress between them; the results are the same.
  // A feature map (rff) is one pass over the keys whatever nq: never in blocks.
  const bool features = kernel_is_feature_map(kern.first);
  const index rows_per_block =
      double(nq) * double(b.size()) > 2e8 && !features ? std::max<index>(1024, (nq + 63) / 64) : nq;
  progress_step step(fmt::format("exact sums over all pairs ({} x {})", nq, b.size()), nq);
  for (index q0 = 0; q0 < nq; q0 += rows_per_block) {
    const index m = std::min(rows_per_block, nq - q0);
    std::span<double> lse_block(ps.lse.data() + q0, static_cast<std::size_t>(m));
    if (want_sq && features) {
      smooth_forward<double>(ps.out.view().block(q0, 0, m, nv), lse_block, xq.block(q0, 0, m, d),
                             x.block(b.lo, 0, b.size(), d), v.cview(), kern, msk, opt);
      feature_sq_columns(ps, v, q0, xq.block(q0, 0, m, d), x.block(b.lo, 0, b.size(), d), ll, opt);
    } else if (want_sq) {
      smooth_forward_sq<double>(
          ps.out.view().block(q0, 0, m, nv), ps.out_sq.view().block(q0, 0, m, nv), lse_block,
          xq.block(q0, 0, m, d), x.block(b.lo, 0, b.size(), d), v.cview(), kern, msk, opt);
    } else {
      smooth_forward<double>(ps.out.view().block(q0, 0, m, nv), lse_block, xq.block(q0, 0, m, d),
                             x.block(b.lo, 0, b.size(), d), v.cview(), kern, msk, opt);
    }
    step.set(q0 + m);
  }
  // every process's partial sums over its block of the keys, merged (regression/shard.hpp)
  spec.shard.merge_log_sums(ps.lse, &ps.out, &ps.out_sq);
  return ps;
}

}  // namespace

regression_eval evaluate_all_pairs(const regression_spec& spec, const_matrix_view<double> x,
                                   std::span<const double> y, const_matrix_view<double> xq,
                                   bool at_training) {
  const index d = x.cols, nq = xq.rows;
  const bool features = std::holds_alternative<kernel_rff>(spec.kernel);
  const all_pairs_sums ps = primitive_sums(spec, x, y, xq, !(at_training && features));
  const matrix<double>& out = ps.out;
  const matrix<double>& out_sq = ps.out_sq;
  const std::vector<double>& lse = ps.lse;
  const std::vector<double>& mean = ps.mean;
  const index cx = ps.cx, cxx = ps.cxx, cxy = ps.cxy;
  const kernel_spec& kern = ps.kern;
  const bool ll = spec.method == regression_method::local_linear;
  regression_eval r = regression_eval_for(static_cast<std::size_t>(nq), at_training);
  const double lw0 = log_self_weight(kern.first);
  const auto hvec = spec.method == regression_method::knn
                        ? std::vector<double>(static_cast<std::size_t>(d), 1.0)
                        : regression_bandwidths(spec, d);
  for (index i = 0; i < nq; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    if (!(out(i, 0) > 0.5)) {  // Σ p = 0: no training point has weight here
      ++r.undefined;
      continue;
    }
    r.defined[iu] = 1;
    const double p_self = at_training ? std::exp(lw0 - lse[iu]) : 0.0;
    double fit = out(i, 1), sum_l2 = out_sq(i, 0), self = p_self;
    if (ll) {
      Eigen::MatrixXd s(d, d), dsc = Eigen::MatrixXd::Zero(d, d);
      Eigen::VectorXd mx(d), sxy(d), x0(d);
      index t = 0;
      for (index a = 0; a < d; ++a) {
        mx(a) = out(i, cx + a);
        x0(a) = xq(i, a) - mean[static_cast<std::size_t>(a)];
        dsc(a, a) = 1.0 / hvec[static_cast<std::size_t>(a)];
      }
      for (index a = 0; a < d; ++a)
        for (index b = a; b < d; ++b) {
          s(a, b) = s(b, a) = out(i, cxx + t++) - mx(a) * mx(b);
        }
      for (index a = 0; a < d; ++a) sxy(a) = out(i, cxy + a) - mx(a) * out(i, 1);
      // Singular local design (too few distinct points in the window): fall back to NW.
      const Eigen::MatrixXd sn = dsc * s * dsc;  // in bandwidth units
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(sn, Eigen::EigenvaluesOnly);
      if (es.eigenvalues().minCoeff() > 1e-9) {
        const auto ldlt = s.ldlt();
        const Eigen::VectorXd beta = ldlt.solve(sxy);
        const Eigen::VectorXd av = ldlt.solve(x0 - mx);
        fit = out(i, 1) + (x0 - mx).dot(beta);
        // Σ ℓ² = Σ p² (c0 + aᵀx)², c0 = 1 − aᵀ m_x
        const double c0 = 1.0 - av.dot(mx);
        Eigen::VectorXd px(d);
        Eigen::MatrixXd pxx(d, d);
        t = 0;
        for (index a = 0; a < d; ++a) {
          px(a) = out_sq(i, cx + a);
          for (index b = a; b < d; ++b) pxx(a, b) = pxx(b, a) = out_sq(i, cxx + t++);
        }
        sum_l2 = c0 * c0 * out_sq(i, 0) + 2 * c0 * av.dot(px) + av.dot(pxx * av);
        if (at_training) self = p_self * (1.0 + av.dot(x0 - mx));
      } else {
        ++r.ll_fallback;
      }
    }
    r.fit[iu] = fit;
    r.sum_l2[iu] = std::max(sum_l2, 0.0);
    if (at_training) r.self_weight[iu] = self;
  }
  return r;
}

}  // namespace kf::detail
