// The merge of partial log-sum-exp sums over the processes (regression/shard.hpp): one place for
// the exact regression route's states and the density's log sums.
#include "kernelformer/regression/shard.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace kf {

void data_shard::merge_log_sums(std::span<double> lse, matrix<double>* out,
                                matrix<double>* out_sq) const {
  if (!active()) return;
  constexpr double ninf = -std::numeric_limits<double>::infinity();
  const auto nq = static_cast<index>(lse.size());
  const index nv = out ? out->cols() : 0, nsq = out_sq ? out_sq->cols() : 0;
  const index width = 1 + nv + nsq;
  std::vector<double> mx(lse.begin(), lse.end());
  max_all(mx);
  // Per row [Σ w, w·out…, w²·out_sq…], summed over the processes in one reduction.
  std::vector<double> rec(static_cast<std::size_t>(nq * width), 0.0);
  for (index i = 0; i < nq; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    const double w = lse[iu] == ninf ? 0.0 : std::exp(lse[iu] - mx[iu]);
    double* r = rec.data() + i * width;
    r[0] = w;
    for (index c = 0; c < nv; ++c) r[1 + c] = w * (*out)(i, c);
    for (index c = 0; c < nsq; ++c) r[1 + nv + c] = w * w * (*out_sq)(i, c);
  }
  sum_all(rec);
  for (index i = 0; i < nq; ++i) {
    const auto iu = static_cast<std::size_t>(i);
    const double* r = rec.data() + i * width;
    const double sw = r[0];
    lse[iu] = sw > 0 ? mx[iu] + std::log(sw) : ninf;
    for (index c = 0; c < nv; ++c) (*out)(i, c) = sw > 0 ? r[1 + c] / sw : 0.0;
    for (index c = 0; c < nsq; ++c) (*out_sq)(i, c) = sw > 0 ? r[1 + nv + c] / (sw * sw) : 0.0;
  }
}

}  // namespace kf
