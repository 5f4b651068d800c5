// The primitive for numpy: smooth_forward, smooth_backward, smooth_weights over arrays of shape
// (..., n, d), (..., m, d), (..., m, dv) — the leading dimensions are a batch (B, H for attention
// heads), one call of the library per batch item, items spread over the threads when there are
// enough of them. float32 when q, k and v all are, float64 otherwise (as `kf attend`).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <span>
#include <stdexcept>

#include "common.hpp"
#include "kernelformer/smooth.hpp"

namespace kf::py_bind {
namespace {

using shape_t = std::vector<py::ssize_t>;

std::string shape_text(const shape_t& s) {
  return "(" + fmt::format("{}", fmt::join(s, ", ")) + (s.size() == 1 ? ",)" : ")");
}

shape_t shape_of(const py::array& a) { return shape_t(a.shape(), a.shape() + a.ndim()); }

// Leading (batch) dimensions of an array of at least two dimensions.
shape_t leading(const py::array& a, const char* what) {
  if (a.ndim() < 2)
    throw std::invalid_argument(
        fmt::format("{} must have at least 2 dimensions (..., rows, columns), got shape {}", what,
                    shape_text(shape_of(a))));
  return shape_t(a.shape(), a.shape() + a.ndim() - 2);
}

void same_leading(const shape_t& a, const char* wa, const py::array& b, const char* wb) {
  const shape_t lb = leading(b, wb);
  if (lb != a)
    throw std::invalid_argument(
        fmt::format("{} have batch dimensions {} but {} have {}: the leading dimensions must match",
                    wa, shape_text(a), wb, shape_text(lb)));
}

index count(const shape_t& lead) {
  index nb = 1;
  for (auto s : lead) nb *= static_cast<index>(s);
  return nb;
}

shape_t with(shape_t lead, std::initializer_list<py::ssize_t> tail) {
  lead.insert(lead.end(), tail);
  return lead;
}

// One mask for every batch item, or one per item.
std::vector<mask> masks_of(const py::object& o, index nb) {
  if (py::isinstance<mask>(o)) return {o.cast<const mask&>()};
  auto ms = o.cast<std::vector<mask>>();
  if (ms.size() != 1 && static_cast<index>(ms.size()) != nb)
    throw std::invalid_argument(fmt::format(
        "{} masks given for {} batch items (give one, or one per item)", ms.size(), nb));
  return ms;
}
const mask& mask_at(const std::vector<mask>& ms, index b) {
  return ms.size() == 1 ? ms[0] : ms[static_cast<std::size_t>(b)];
}

// The dropout seed of batch item b: splitmix64 of the call's seed (as the attention layer).
std::uint64_t item_seed(std::uint64_t seed, index b) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(b + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A batch of matrices in one C-contiguous buffer: item b is rows × cols at data + b·rows·cols.
template <class T>
struct stack {
  T* data = nullptr;
  index rows = 0, cols = 0;
  matrix_view<T> at(index b) const { return {data + b * rows * cols, rows, cols}; }
  std::span<T> row_span(index b) const {  // for (…, n) arrays viewed as rows × 1
    return {data + b * rows, static_cast<std::size_t>(rows)};
  }
};
template <class T>
stack<const T> stack_of(const carray<T>& a) {
  const auto nd = a.ndim();
  return {a.data(), static_cast<index>(a.shape(nd - 2)), static_cast<index>(a.shape(nd - 1))};
}
template <class T>
stack<T> stack_of(py::array_t<T>& a, index rows, index cols) {
  return {a.size() > 0 ? a.mutable_data() : nullptr, rows, cols};
}

struct call_options {
  int threads = 0;
  std::vector<double> bandwidth_per_dim;
  bool check_finite = true;
  double dropout = 0;
  std::uint64_t seed = 0;
  smooth_options item(index b, int item_threads) const {
    smooth_options o;
    o.threads = item_threads;
    o.bandwidth_per_dim = bandwidth_per_dim;
    o.check_finite = check_finite;
    o.dropout = dropout;
    o.dropout_seed = dropout > 0 ? item_seed(seed, b) : 0;
    return o;
  }
};

template <class T>
py::tuple forward_typed(const py::array& q0, const py::array& k0, const py::array& v0,
                        const kernel_spec& kern, const py::object& mask_obj, bool want_lse,
                        const call_options& co) {
  const carray<T> q = as_c<T>(q0, "q"), k = as_c<T>(k0, "k"), v = as_c<T>(v0, "v");
  const shape_t lead = leading(q, "queries");
  same_leading(lead, "queries", k, "keys");
  same_leading(lead, "queries", v, "values");
  const index nb = count(lead);
  const std::vector<mask> masks = masks_of(mask_obj, nb);
  const auto qs = stack_of(q), ks = stack_of(k), vs = stack_of(v);
  auto out = new_array<T>(with(lead, {qs.rows, vs.cols}));
  auto lse = want_lse ? new_array<T>(with(lead, {qs.rows})) : py::array_t<T>();
  const auto os = stack_of(out, qs.rows, vs.cols);
  const auto ls = want_lse ? stack_of(lse, qs.rows, 1) : stack<T>{};
  std::vector<index> empty(static_cast<std::size_t>(nb));
  {
    py::gil_scoped_release nogil;
    const int threads = resolve_threads(co.threads);
    thread_scope scope(threads);
    for_each_item(nb, threads, [&](index b, int t) {
      empty[static_cast<std::size_t>(b)] =
          smooth_forward<T>(os.at(b), want_lse ? ls.row_span(b) : std::span<T>{}, qs.at(b),
                            ks.at(b), vs.at(b), kern, mask_at(masks, b), co.item(b, t))
              .empty_rows;
    });
  }
  index total = 0;
  for (index e : empty) total += e;
  return py::make_tuple(out, want_lse ? py::object(lse) : py::object(py::none()), total);
}

template <class T>
py::tuple backward_typed(const py::array& dout0, const py::array& out0, const py::array& lse0,
                         const py::array& q0, const py::array& k0, const py::array& v0,
                         const kernel_spec& kern, const py::object& mask_obj,
                         const std::vector<bool>& need, bool want_dparam, const call_options& co) {
  const carray<T> q = as_c<T>(q0, "q"), k = as_c<T>(k0, "k"), v = as_c<T>(v0, "v");
  const carray<T> dout = as_c<T>(dout0, "dout"), out = as_c<T>(out0, "out"),
                  lse = as_c<T>(lse0, "lse");
  const shape_t lead = leading(q, "queries");
  same_leading(lead, "queries", k, "keys");
  same_leading(lead, "queries", v, "values");
  const index nb = count(lead);
  const auto qs = stack_of(q), ks = stack_of(k), vs = stack_of(v);
  const shape_t out_shape = with(lead, {qs.rows, vs.cols}), lse_shape = with(lead, {qs.rows});
  if (shape_of(dout) != out_shape || shape_of(out) != out_shape)
    throw std::invalid_argument(fmt::format("dout and out must have shape {} (got {} and {})",
                                            shape_text(out_shape), shape_text(shape_of(dout)),
                                            shape_text(shape_of(out))));
  if (shape_of(lse) != lse_shape)
    throw std::invalid_argument(fmt::format("lse must have shape {} (got {})",
                                            shape_text(lse_shape), shape_text(shape_of(lse))));
  if (need.size() != 3) throw std::invalid_argument("need: three flags (dq, dk, dv)");
  const std::vector<mask> masks = masks_of(mask_obj, nb);
  const auto dos = stack_of(dout), outs = stack_of(out);
  const stack<const T> lss{lse.data(), qs.rows, 1};
  py::array_t<T> dq, dk, dv;
  if (need[0]) dq = new_array<T>(shape_of(q), true);
  if (need[1]) dk = new_array<T>(shape_of(k), true);
  if (need[2]) dv = new_array<T>(shape_of(v), true);
  const auto dqs = need[0] ? stack_of(dq, qs.rows, qs.cols) : stack<T>{};
  const auto dks = need[1] ? stack_of(dk, ks.rows, ks.cols) : stack<T>{};
  const auto dvs = need[2] ? stack_of(dv, vs.rows, vs.cols) : stack<T>{};
  std::vector<std::array<double, 2>> dparam(static_cast<std::size_t>(nb), {0.0, 0.0});
  std::vector<std::vector<double>> dbw(static_cast<std::size_t>(nb));
  {
    py::gil_scoped_release nogil;
    const int threads = resolve_threads(co.threads);
    thread_scope scope(threads);
    for_each_item(nb, threads, [&](index b, int t) {
      smooth_grads<T> g(need[0] ? dqs.at(b) : matrix_view<T>{},
                        need[1] ? dks.at(b) : matrix_view<T>{},
                        need[2] ? dvs.at(b) : matrix_view<T>{});
      g.want_dparam = want_dparam;
      const auto l = lss.at(b);
      smooth_backward<T>(g, dos.at(b), outs.at(b),
                         std::span<const T>(l.data, static_cast<std::size_t>(l.rows)), qs.at(b),
                         ks.at(b), vs.at(b), kern, mask_at(masks, b), co.item(b, t));
      const auto bu = static_cast<std::size_t>(b);
      dparam[bu] = {g.dparam[0], g.dparam[1]};
      dbw[bu] = std::move(g.dbandwidth_per_dim);
    });
  }
  // Summed over the batch in a fixed order: the same result for any thread count.
  double dp0 = 0, dp1 = 0;
  std::vector<double> dbw_sum(co.bandwidth_per_dim.size(), 0.0);
  for (index b = 0; b < nb; ++b) {
    const auto bu = static_cast<std::size_t>(b);
    dp0 += dparam[bu][0];
    dp1 += dparam[bu][1];
    for (std::size_t c = 0; c < dbw[bu].size() && c < dbw_sum.size(); ++c) dbw_sum[c] += dbw[bu][c];
  }
  auto opt_array = [](bool has, py::array_t<T>& a) {
    return has ? py::object(a) : py::object(py::none());
  };
  return py::make_tuple(opt_array(need[0], dq), opt_array(need[1], dk), opt_array(need[2], dv),
                        py::make_tuple(dp0, dp1), dbw_sum);
}

template <class T>
py::array weights_typed(const py::array& q0, const py::array& k0, const kernel_spec& kern,
                        const py::object& mask_obj, const std::vector<index>& rows,
                        const call_options& co) {
  const carray<T> q = as_c<T>(q0, "q"), k = as_c<T>(k0, "k");
  const shape_t lead = leading(q, "queries");
  same_leading(lead, "queries", k, "keys");
  const index nb = count(lead);
  const std::vector<mask> masks = masks_of(mask_obj, nb);
  const auto qs = stack_of(q), ks = stack_of(k);
  for (index r : rows)
    if (r < 0 || r >= qs.rows)
      throw std::invalid_argument(fmt::format("rows: row {} is outside 0..{}", r, qs.rows - 1));
  const index nr = rows.empty() ? qs.rows : static_cast<index>(rows.size());
  auto w = new_array<T>(with(lead, {nr, ks.rows}));
  const auto ws = stack_of(w, nr, ks.rows);
  const int threads = resolve_threads(co.threads);
  const index m = ks.rows, d = qs.cols;
  {
    py::gil_scoped_release nogil;
    thread_scope scope(threads);
    if (rows.empty() && m <= std::min<index>(200 * d, 16384)) {
      // The primitive itself with the identity for values: out = P·I = P, the forward's own
      // weights (the same rounding), at GEMM speed. One block of ≤ 512 identity columns at a
      // time (each block recomputes the scores: worth it while m is small against 200·d).
      const index block = std::min<index>(m, 512);
      matrix<T> eye(m, block);
      for (index c0 = 0; c0 < m; c0 += block) {
        const index bw = std::min(block, m - c0);
        std::fill(eye.values().begin(), eye.values().end(), T(0));
        for (index j = 0; j < bw; ++j) eye(c0 + j, j) = T(1);
        const const_matrix_view<T> e = eye.cview().block(0, 0, m, bw);
        for_each_item(nb, threads, [&](index b, int t) {
          smooth_forward<T>(ws.at(b).block(0, c0, nr, bw), {}, qs.at(b), ks.at(b), e, kern,
                            mask_at(masks, b), co.item(b, t));
        });
      }
    } else {
      // The reference's row loop (single-threaded, O(n·m·d) in double, no m × m block): in
      // parallel over chunks of rows.
      const index chunk = 64, chunks = (nr + chunk - 1) / chunk;
      parallel_items(nb * chunks, threads, [&](index bc) {
        const index b = bc / chunks, r0 = (bc % chunks) * chunk, r1 = std::min(nr, r0 + chunk);
        std::vector<index> sel(static_cast<std::size_t>(r1 - r0));
        for (index r = r0; r < r1; ++r)
          sel[static_cast<std::size_t>(r - r0)] =
              rows.empty() ? r : rows[static_cast<std::size_t>(r)];
        smooth_weights<T>(ws.at(b).block(r0, 0, r1 - r0, m), sel, qs.at(b), ks.at(b), kern,
                          mask_at(masks, b), co.item(b, 1));
      });
    }
  }
  return w;
}

bool all_f32(std::initializer_list<const py::array*> as) {
  for (const auto* a : as)
    if (!is_dtype(*a, 'f', 4)) return false;
  return true;
}

}  // namespace

void bind_smooth(py::module_& m) {
  m.def(
      "smooth_forward",
      [](const py::array& q, const py::array& k, const py::array& v, const kernel_spec& kern,
         const py::object& masks, bool want_lse, int threads, std::vector<double> bandwidth_per_dim,
         bool check_finite, double dropout, std::uint64_t seed) {
        const call_options co{threads, std::move(bandwidth_per_dim), check_finite, dropout, seed};
        return all_f32({&q, &k, &v}) ? forward_typed<float>(q, k, v, kern, masks, want_lse, co)
                                     : forward_typed<double>(q, k, v, kern, masks, want_lse, co);
      },
      py::arg("q"), py::arg("k"), py::arg("v"), py::arg("kernel"), py::arg("mask"),
      py::arg("want_lse") = true, py::arg("threads") = 0,
      py::arg("bandwidth_per_dim") = std::vector<double>{}, py::arg("check_finite") = true,
      py::arg("dropout") = 0.0, py::arg("seed") = 0,
      R"(out_i = sum_j K(q_i,k_j) v_j / sum_j K(q_i,k_j) for each batch item.

q (..., n, d), k (..., m, d), v (..., m, dv) -> (out (..., n, dv), lse (..., n) or None,
empty_rows). mask: a Mask or a list of one Mask per batch item. float32 if q, k, v all are.)");
  m.def(
      "smooth_backward",
      [](const py::array& dout, const py::array& out, const py::array& lse, const py::array& q,
         const py::array& k, const py::array& v, const kernel_spec& kern, const py::object& masks,
         std::vector<bool> need, bool want_dparam, int threads,
         std::vector<double> bandwidth_per_dim, double dropout, std::uint64_t seed) {
        const call_options co{threads, std::move(bandwidth_per_dim), false, dropout, seed};
        return is_dtype(q, 'f', 4) ? backward_typed<float>(dout, out, lse, q, k, v, kern, masks,
                                                           need, want_dparam, co)
                                   : backward_typed<double>(dout, out, lse, q, k, v, kern, masks,
                                                            need, want_dparam, co);
      },
      py::arg("dout"), py::arg("out"), py::arg("lse"), py::arg("q"), py::arg("k"), py::arg("v"),
      py::arg("kernel"), py::arg("mask"), py::arg("need") = std::vector<bool>{true, true, true},
      py::arg("want_dparam") = false, py::arg("threads") = 0,
      py::arg("bandwidth_per_dim") = std::vector<double>{}, py::arg("dropout") = 0.0,
      py::arg("seed") = 0,
      R"(Gradients of a loss through smooth_forward, from d loss / d out.

Returns (dq, dk, dv — None where need is False —, (dparam, dparam_second_factor) summed over the
batch, dbandwidth_per_dim). The dtype is q's; pass the forward's out and lse.)");
  m.def(
      "smooth_weights",
      [](const py::array& q, const py::array& k, const kernel_spec& kern, const py::object& masks,
         std::vector<index> rows, int threads, std::vector<double> bandwidth_per_dim,
         bool float64) {
        const call_options co{threads, std::move(bandwidth_per_dim), true, 0.0, 0};
        return all_f32({&q, &k}) && !float64 ? weights_typed<float>(q, k, kern, masks, rows, co)
                                             : weights_typed<double>(q, k, kern, masks, rows, co);
      },
      py::arg("q"), py::arg("k"), py::arg("kernel"), py::arg("mask"),
      py::arg("rows") = std::vector<index>{}, py::arg("threads") = 0,
      py::arg("bandwidth_per_dim") = std::vector<double>{}, py::arg("float64") = false,
      "The normalized weights p_ij, (..., n or len(rows), m); empty rows are zeros. float32 if q "
      "and k are (and float64 is not asked for).");
}

}  // namespace kf::py_bind
