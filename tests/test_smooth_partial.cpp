// Partial results over key chunks, merged, against the primitive over all keys at once: every
// kernel family × every splittable mask × uneven chunks (one empty), float32 and float64, with
// and without out_sq; the merge's identity and order; masks seen from a chunk; refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernelformer/smooth_partial.hpp"
#include "test_util.hpp"

namespace kf {
namespace {

template <class T>
struct problem {
  matrix<T> q, k, v;
};

template <class T>
problem<T> make_problem(index n, index m, index d, index dv, std::uint64_t seed) {
  return {test::random_matrix<T>(n, d, seed), test::random_matrix<T>(m, d, seed + 1),
          test::random_matrix<T>(m, dv, seed + 2)};
}

template <class T>
matrix<T> rows_of(const matrix<T>& a, index r0, index r1) {
  matrix<T> out(r1 - r0, a.cols());
  for (index i = r0; i < r1; ++i)
    for (index c = 0; c < a.cols(); ++c) out(i - r0, c) = a(i, c);
  return out;
}

// The state over keys split at `cuts` (ascending, inside [0, m]), merged left to right.
template <class T>
smooth_state<T> chunked(const problem<T>& p, const std::vector<index>& cuts,
                        const kernel_spec& kern, const mask& msk, bool sq) {
  const index m = p.k.rows();
  smooth_state<T> acc = smooth_state_empty<T>(p.q.rows(), p.v.cols(), sq);
  index j0 = 0;
  std::vector<index> ends = cuts;
  ends.push_back(m);
  for (const index j1 : ends) {
    const matrix<T> kc = rows_of(p.k, j0, j1), vc = rows_of(p.v, j0, j1);
    merge(acc, smooth_partial<T>(p.q.cview(), kc.cview(), vc.cview(), j0, m, kern, msk, {}, sq));
    j0 = j1;
  }
  return acc;
}

template <class T>
void check_against_whole(const std::string& kernel_text, const std::string& mask_text) {
  const index n = 37, m = 53, d = 3, dv = 5;
  const auto p = make_problem<T>(n, m, d, dv, 7);
  const kernel_spec kern = kernel_parse(kernel_text);
  const mask msk = mask::parse(mask_text);
  const double rtol = std::is_same_v<T, float> ? 1e-6 : 1e-12;
  for (const bool sq : {false, true}) {
    matrix<T> out(n, dv), out_sq(n, dv);
    std::vector<T> lse(static_cast<std::size_t>(n));
    const smooth_stats st =
        smooth_forward_sq<T>(out.view(), sq ? out_sq.view() : matrix_view<T>{}, lse, p.q.cview(),
                             p.k.cview(), p.v.cview(), kern, msk);
    for (const std::vector<index>& cuts :
         {std::vector<index>{}, std::vector<index>{20, 20, 41}, std::vector<index>{1, 2, 3, 50}}) {
      const auto s = chunked(p, cuts, kern, msk, sq);
      const std::string what = kernel_text + " / " + mask_text + (sq ? " sq" : "") + " cuts " +
                               std::to_string(cuts.size());
      EXPECT_TRUE(test::all_close(s.out, out, rtol, rtol)) << what;
      if (sq) {
        EXPECT_TRUE(test::all_close(s.out_sq, out_sq, rtol, rtol)) << what;
      }
      EXPECT_EQ(smooth_state_empty_rows(s), st.empty_rows) << what;
      EXPECT_EQ(s.keys, m) << what;
      for (index i = 0; i < n; ++i) {
        const double a = double(s.lse[std::size_t(i)]), b = double(lse[std::size_t(i)]);
        if (std::isinf(b)) {
          EXPECT_TRUE(std::isinf(a) && a < 0) << what << " row " << i;
        } else {
          EXPECT_NEAR(a, b, rtol * (1 + std::abs(b))) << what << " row " << i;
        }
      }
    }
  }
}

const std::vector<std::string> kKernels = {
    "exp_dot",      "gaussian:h=0.7", "laplacian:h=0.5",         "epanechnikov:h=1.1",
    "cauchy:h=0.6", "linear",         "polynomial:degree=2,c=1", "periodic:h=1,period=2",
    "boxcar:h=0.9"};
const std::vector<std::string> kMasks = {"none",       "causal",          "causal:4",
                                         "causal:-3",  "window:5",        "window:2,9",
                                         "padding:30", "causal&window:6", "causal:-1|window:-1,60",
                                         "radius:1.2"};

TEST(SmoothPartial, MergedChunksEqualTheWholeForEveryKernelAndMaskDouble) {
  for (const auto& k : kKernels)
    for (const auto& m : kMasks) check_against_whole<double>(k, m);
}

TEST(SmoothPartial, MergedChunksEqualTheWholeForEveryKernelAndMaskFloat) {
  for (const auto& k : kKernels)
    for (const auto& m : kMasks) check_against_whole<float>(k, m);
}

TEST(SmoothPartial, ProductKernelAndPerDimensionBandwidths) {
  const auto p = make_problem<double>(19, 31, 4, 2, 3);
  kernel_spec kern = kernel_parse("gaussian:h=0.8*epanechnikov:h=1.5");
  kern.split = 2;
  matrix<double> out(19, 2);
  smooth_forward<double>(out.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(), kern,
                         mask::causal(5));
  EXPECT_TRUE(
      test::all_close(chunked(p, {10, 17}, kern, mask::causal(5), false).out, out, 1e-12, 1e-12));

  smooth_options opt;
  opt.bandwidth_per_dim = {0.5, 1, 2, 0.7};
  const kernel_spec g = kernel_parse("gaussian");
  smooth_forward<double>(out.view(), {}, p.q.cview(), p.k.cview(), p.v.cview(), g, mask{}, opt);
  smooth_state<double> acc = smooth_state_empty<double>(19, 2);
  for (index j0 : {0, 13}) {
    const index j1 = j0 == 0 ? 13 : 31;
    const auto kc = rows_of(p.k, j0, j1), vc = rows_of(p.v, j0, j1);
    merge(acc, smooth_partial<double>(p.q.cview(), kc.cview(), vc.cview(), j0, 31, g, mask{}, opt));
  }
  EXPECT_TRUE(test::all_close(acc.out, out, 1e-12, 1e-12));
}

TEST(SmoothPartial, MergeIsCommutativeAndTheEmptyStateIsItsIdentity) {
  const auto p = make_problem<double>(11, 20, 2, 3, 5);
  const kernel_spec kern = kernel_parse("gaussian:h=0.3");
  const auto ka = rows_of(p.k, 0, 8), va = rows_of(p.v, 0, 8);
  const auto kb = rows_of(p.k, 8, 20), vb = rows_of(p.v, 8, 20);
  const auto a = smooth_partial<double>(p.q.cview(), ka.cview(), va.cview(), 0, 20, kern, {});
  const auto b = smooth_partial<double>(p.q.cview(), kb.cview(), vb.cview(), 8, 20, kern, {});
  auto ab = a, ba = b;
  merge(ab, b);
  merge(ba, a);
  EXPECT_TRUE(test::all_close(ab.out, ba.out, 1e-15, 1e-15));
  auto e = smooth_state_empty<double>(11, 3);
  merge(e, ab);
  EXPECT_TRUE(test::all_close(e.out, ab.out, 0, 0));
  auto ab2 = ab;
  merge(ab2, smooth_state_empty<double>(11, 3));
  EXPECT_TRUE(test::all_close(ab2.out, ab.out, 0, 0));
}

TEST(SmoothPartial, KeyRangeShiftsEveryPredicate) {
  // Evaluated element by element: the chunk's mask at (i, j) is the whole mask at (i, j0 + j).
  for (const std::string text : {"causal", "causal:3", "window:2,5", "padding:9", "causal&window:4",
                                 "causal:-1|window:-1,7"}) {
    const mask whole = mask::parse(text);
    for (index j0 : {0, 3, 8}) {
      const index j1 = j0 + 6;
      const mask part = whole.key_range(j0, j1);
      for (index i = 0; i < 15; ++i)
        for (index j = 0; j < j1 - j0; ++j)
          EXPECT_EQ(part.allows(i, j, 0), whole.allows(i, j0 + j, 0))
              << text << " j0=" << j0 << " i=" << i << " j=" << j;
    }
  }
  std::vector<std::uint8_t> bits(4 * 6);
  for (std::size_t t = 0; t < bits.size(); ++t) bits[t] = static_cast<std::uint8_t>(t % 3 == 0);
  const mask user = mask::matrix(4, 6, bits);
  const mask part = user.key_range(2, 5);
  for (index i = 0; i < 4; ++i)
    for (index j = 0; j < 3; ++j) EXPECT_EQ(part.allows(i, j, 0), user.allows(i, j + 2, 0));
}

TEST(SmoothPartial, RefusesTopkDropoutAndChunksOutsideTheSet) {
  const auto p = make_problem<double>(5, 8, 2, 1, 9);
  const kernel_spec kern = kernel_parse("gaussian");
  EXPECT_THROW(smooth_partial<double>(p.q.cview(), p.k.cview(), p.v.cview(), 0, 8, kern,
                                      mask::parse("knn:3")),
               std::invalid_argument);
  smooth_options opt;
  opt.dropout = 0.1;
  EXPECT_THROW(
      smooth_partial<double>(p.q.cview(), p.k.cview(), p.v.cview(), 0, 8, kern, mask{}, opt),
      std::invalid_argument);
  EXPECT_THROW(smooth_partial<double>(p.q.cview(), p.k.cview(), p.v.cview(), 4, 8, kern, mask{}),
               std::invalid_argument);
  auto a = smooth_state_empty<double>(5, 1), b = smooth_state_empty<double>(5, 2);
  EXPECT_THROW(merge(a, b), std::invalid_argument);
}

}  // namespace
}  // namespace kf
