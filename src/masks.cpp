// The set filter M: predicates on (i, j, |q_i − k_j|), their and/or composition, tile
// classification for the fast path, and the text form used by the CLI and the server.
#include "kernelformer/masks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <stdexcept>

namespace kf {

// One node of the predicate tree, immutable once built and shared between masks (shared_ptr to
// const): combining or copying masks never copies a user matrix. Leaves are predicates, inner
// nodes op_and / op_or with both children set; the top-k stage lives on the mask, not in the tree.
struct mask::node {
  enum class kind { causal, window, padding, radius, user, op_and, op_or } k = kind::causal;
  index a = 0, b = 0;              // causal: offset; window: left, right
  double r2 = 0, r = 0;            // radius (squared)
  std::vector<index> lengths;      // padding
  index n = 0, m = 0;              // user matrix shape
  std::vector<std::uint8_t> bits;  // user matrix, row-major n×m
  std::shared_ptr<const node> lhs, rhs;
};

namespace {
using node = mask::node;
using kind = node::kind;

// The per-element predicate (mask::allows): i a query row, j a key, r2 = |q_i − k_j|² (read by
// radius only). Recursive, with && / || short-circuiting. Indices are assumed in range
// (validate() ran first): padding and user leaves index their arrays by i and j.
bool eval(const node& nd, index i, index j, double r2) {
  switch (nd.k) {
    case kind::causal:
      return j <= i + nd.a;
    case kind::window:
      return j >= i - nd.a && j <= i + nd.b;
    case kind::padding:
      return j < nd.lengths[nd.lengths.size() == 1 ? 0 : static_cast<std::size_t>(i)];
    case kind::radius:
      return r2 <= nd.r2;
    case kind::user:
      return nd.bits[static_cast<std::size_t>(i * nd.m + j)] != 0;
    case kind::op_and:
      return eval(*nd.lhs, i, j, r2) && eval(*nd.rhs, i, j, r2);
    case kind::op_or:
      return eval(*nd.lhs, i, j, r2) || eval(*nd.rhs, i, j, r2);
  }
  return false;
}

// Rows [i0, i1) × keys [j0, j1), both non-empty.
// Conservative: `out` and `in` must hold for every (i, j) of the tile, `partial` may be returned
// whenever unsure (the tile is then tested element by element), so it is never wrong, only slower.
// A user matrix has no structure to exploit and is always partial.
tile_class classify_node(const node& nd, index i0, index i1, index j0, index j1, double min_r2) {
  switch (nd.k) {
    case kind::causal:  // allowed iff j − i ≤ a
      if (j0 - (i1 - 1) > nd.a) return tile_class::out;
      if ((j1 - 1) - i0 <= nd.a) return tile_class::in;
      return tile_class::partial;
    case kind::window: {  // allowed iff −left ≤ j − i ≤ right
      const index lo = j0 - (i1 - 1), hi = (j1 - 1) - i0;  // range of j − i over the tile
      if (hi < -nd.a || lo > nd.b) return tile_class::out;
      if (lo >= -nd.a && hi <= nd.b) return tile_class::in;
      return tile_class::partial;
    }
    case kind::padding: {
      // Against the rows' lengths: out if no row reaches key j0, in if every row covers j1 − 1.
      index lmin = nd.lengths[0], lmax = nd.lengths[0];
      if (nd.lengths.size() > 1) {
        lmin = lmax = nd.lengths[static_cast<std::size_t>(i0)];
        for (index i = i0; i < i1; ++i) {
          lmin = std::min(lmin, nd.lengths[static_cast<std::size_t>(i)]);
          lmax = std::max(lmax, nd.lengths[static_cast<std::size_t>(i)]);
        }
      }
      if (j0 >= lmax) return tile_class::out;
      if (j1 <= lmin) return tile_class::in;
      return tile_class::partial;
    }
    case kind::radius:
      // min_r2 is only a lower bound, so a radius never proves a whole tile `in`.
      return min_r2 > nd.r2 ? tile_class::out : tile_class::partial;
    case kind::user:
      return tile_class::partial;
    case kind::op_and: {
      const auto a = classify_node(*nd.lhs, i0, i1, j0, j1, min_r2);
      // AND: one side out rules the tile out; in only if both sides are in.
      if (a == tile_class::out) return a;
      const auto b = classify_node(*nd.rhs, i0, i1, j0, j1, min_r2);
      if (b == tile_class::out) return b;
      return a == tile_class::in && b == tile_class::in ? tile_class::in : tile_class::partial;
    }
    case kind::op_or: {
      const auto a = classify_node(*nd.lhs, i0, i1, j0, j1, min_r2);
      // OR: one side in lets the whole tile in; out only if both sides are out.
      if (a == tile_class::in) return a;
      const auto b = classify_node(*nd.rhs, i0, i1, j0, j1, min_r2);
      if (b == tile_class::in) return b;
      return a == tile_class::out && b == tile_class::out ? tile_class::out : tile_class::partial;
    }
  }
  return tile_class::partial;
}

std::shared_ptr<node> make_node(kind k) {
  auto nd = std::make_shared<node>();
  nd->k = k;
  return nd;
}

// Whether any leaf needs |q − k| (mask::needs_distance): the smoother then forms distances.
bool has_radius(const node* nd) {
  if (!nd) return false;
  if (nd->k == kind::radius) return true;
  return has_radius(nd->lhs.get()) || has_radius(nd->rhs.get());
}

// Throws std::invalid_argument when a leaf cannot apply to n queries × m keys: padding lengths
// (1 or n of them, each in 0..m) and a user matrix's shape. causal, window and radius fit any size.
void validate_node(const node& nd, index n, index m) {
  switch (nd.k) {
    case kind::padding:
      if (nd.lengths.size() != 1 && static_cast<index>(nd.lengths.size()) != n)
        throw std::invalid_argument(
            fmt::format("mask key_padding: {} lengths given, expected 1 or one per query row ({})",
                        nd.lengths.size(), n));
      for (std::size_t i = 0; i < nd.lengths.size(); ++i)
        if (nd.lengths[i] < 0 || nd.lengths[i] > m)
          throw std::invalid_argument(
              fmt::format("mask key_padding: length {} at row {} is outside 0..{} (m keys)",
                          nd.lengths[i], i, m));
      break;
    case kind::user:
      if (nd.n != n || nd.m != m)
        throw std::invalid_argument(fmt::format(
            "mask matrix is {} x {} but the problem is {} queries x {} keys", nd.n, nd.m, n, m));
      break;
    case kind::op_and:
    case kind::op_or:
      validate_node(*nd.lhs, n, m);
      validate_node(*nd.rhs, n, m);
      break;
    default:
      break;
  }
}

// The node as keys [j0, j1) see it (mask::key_range).
// Returns a renumbered copy (key j of the chunk is key j0 + j); rows keep their numbers.
std::shared_ptr<const node> shift_node(const node& nd, index j0, index j1) {
  auto out = std::make_shared<node>(nd);
  switch (nd.k) {
    case kind::causal:  // j0 + j ≤ i + a  ⇔  j ≤ i + (a − j0)
      out->a = nd.a - j0;
      break;
    case kind::window:  // i − left ≤ j0 + j ≤ i + right
      // window: a = left grows and b = right shrinks by j0, as j − i does.
      out->a = nd.a + j0;
      out->b = nd.b - j0;
      break;
    case kind::padding:  // j0 + j < L  ⇔  j < L − j0, clipped to the chunk
      for (auto& len : out->lengths) len = std::clamp<index>(len - j0, 0, j1 - j0);
      break;
    case kind::user:
      if (j1 > nd.m)
        throw std::invalid_argument(fmt::format(
            "mask key_range: keys [{}, {}) are beyond the mask matrix's {} columns", j0, j1, nd.m));
      out->m = j1 - j0;
      out->bits.assign(static_cast<std::size_t>(nd.n * out->m), 0);
      for (index i = 0; i < nd.n; ++i)
        for (index j = j0; j < j1; ++j)
          out->bits[static_cast<std::size_t>(i * out->m + j - j0)] =
              nd.bits[static_cast<std::size_t>(i * nd.m + j)];
      break;
    case kind::op_and:
    case kind::op_or:
      out->lhs = shift_node(*nd.lhs, j0, j1);
      out->rhs = shift_node(*nd.rhs, j0, j1);
      break;
    case kind::radius:
      break;
  }
  return out;
}

// The text form parse() reads, except for per-row padding and user matrices (no text form).
std::string describe_node(const node& nd) {
  switch (nd.k) {
    case kind::causal:
      return nd.a == 0 ? "causal" : fmt::format("causal:{}", nd.a);
    case kind::window:
      return nd.a == nd.b ? fmt::format("window:{}", nd.a)
                          : fmt::format("window:{},{}", nd.a, nd.b);
    case kind::padding:
      return nd.lengths.size() == 1 ? fmt::format("padding:{}", nd.lengths[0]) : "padding:per-row";
    case kind::radius:
      return fmt::format("radius:{}", nd.r);  // shortest text that reads back to r
    case kind::user:
      return fmt::format("matrix:{}x{}", nd.n, nd.m);
    case kind::op_and:
      return describe_node(*nd.lhs) + "&" + describe_node(*nd.rhs);
    case kind::op_or:
      return describe_node(*nd.lhs) + "|" + describe_node(*nd.rhs);
  }
  return "?";
}

// The whole text must be one integer (from_chars: no sign '+', no spaces, no trailing text).
index parse_index(std::string_view s, std::string_view what) {
  index v = 0;
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end)
    throw std::invalid_argument(fmt::format("mask {}: '{}' is not an integer", what, s));
  return v;
}

double parse_double(std::string_view s, std::string_view what) {
  double v = 0;
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end)
    throw std::invalid_argument(fmt::format("mask {}: '{}' is not a number", what, s));
  return v;
}

}  // namespace

mask::mask() = default;
mask mask::none() { return {}; }

mask mask::causal(index offset) {
  auto nd = make_node(kind::causal);
  nd->a = offset;
  return mask(std::shared_ptr<const node>(nd));
}

namespace {
// Fills len (n entries) with row i's prefix length when the node allows exactly keys [0, L_i).
// Returns false for any leaf that is not a prefix (window, radius, user); len is then unusable.
bool prefix_node(const node& nd, index n, index m, std::vector<index>& len) {
  switch (nd.k) {
    case kind::causal:
      for (index i = 0; i < n; ++i)
        len[static_cast<std::size_t>(i)] = std::clamp<index>(i + nd.a + 1, 0, m);
      return true;
    case kind::padding:
      for (index i = 0; i < n; ++i)
        len[static_cast<std::size_t>(i)] = std::clamp<index>(
            nd.lengths[nd.lengths.size() == 1 ? 0 : static_cast<std::size_t>(i)], 0, m);
      return true;
    case kind::op_and:
    case kind::op_or: {
      std::vector<index> other(len.size());
      if (!prefix_node(*nd.lhs, n, m, len) || !prefix_node(*nd.rhs, n, m, other)) return false;
      for (std::size_t i = 0; i < len.size(); ++i)  // prefixes: ∩ is the shorter, ∪ the longer
        len[i] = nd.k == kind::op_and ? std::min(len[i], other[i]) : std::max(len[i], other[i]);
      return true;
    }
    default:
      return false;
  }
}
}  // namespace

bool mask::prefix_lengths(index n, index m, std::vector<index>& len) const {
  if (topk_k_ > 0) return false;
  // No predicate: every row sees all m keys.
  len.assign(static_cast<std::size_t>(n), m);
  return !root_ || prefix_node(*root_, n, m, len);
}

bool mask::is_causal_only(index& offset) const {
  if (!root_ || topk_k_ > 0 || root_->k != kind::causal) return false;
  offset = root_->a;
  return true;
}

mask mask::window(index left, index right) {
  // left + right < 0 allows no (i, j) at all; one negative side alone is a shifted band.
  if (left + right < 0)
    throw std::invalid_argument(fmt::format(
        "mask window: left = {} and right = {} leave an empty band (need left + right >= 0)", left,
        right));
  auto nd = make_node(kind::window);
  nd->a = left;
  nd->b = right;
  return mask(std::shared_ptr<const node>(nd));
}

mask mask::key_padding(std::vector<index> lengths) {
  if (lengths.empty()) throw std::invalid_argument("mask key_padding: no lengths given");
  auto nd = make_node(kind::padding);
  nd->lengths = std::move(lengths);
  return mask(std::shared_ptr<const node>(nd));
}

mask mask::radius(double r) {
  if (!(std::isfinite(r) && r >= 0))
    throw std::invalid_argument(fmt::format("mask radius: r = {} must be finite and >= 0", r));
  auto nd = make_node(kind::radius);
  nd->r = r;
  // Predicates compare squared distances (what the tiles compute); r is kept for describe().
  nd->r2 = r * r;
  return mask(std::shared_ptr<const node>(nd));
}

mask mask::matrix(index n, index m, std::vector<std::uint8_t> allowed) {
  if (n < 0 || m < 0 || static_cast<index>(allowed.size()) != n * m)
    throw std::invalid_argument(
        fmt::format("mask matrix: {} entries given for a {} x {} matrix", allowed.size(), n, m));
  auto nd = make_node(kind::user);
  nd->n = n;
  nd->m = m;
  nd->bits = std::move(allowed);
  return mask(std::shared_ptr<const node>(nd));
}

mask mask::combine(const mask& a, const mask& b, bool is_and) {
  const kind op = is_and ? kind::op_and : kind::op_or;
  const auto& ra = a.root_;
  const auto& rb = b.root_;
  // Top-k ranks the keys the predicates allow, so it cannot sit inside & or |.
  if (a.topk_k() > 0 || b.topk_k() > 0)
    throw std::invalid_argument(
        "mask: top-k is a final stage; combine predicates first, then topk");
  if (!ra) return op == kind::op_and ? b : a;  // all & x = x;  all | x = all
  if (!rb) return op == kind::op_and ? a : b;
  auto nd = make_node(op);
  nd->lhs = ra;
  nd->rhs = rb;
  return mask(std::shared_ptr<const node>(nd));
}

mask operator&(const mask& a, const mask& b) { return mask::combine(a, b, true); }
mask operator|(const mask& a, const mask& b) { return mask::combine(a, b, false); }

// A copy sharing the same predicate tree; only the final stage is set (a second call replaces it).
mask mask::topk(index k, topk_rank by) const {
  if (k < 1) throw std::invalid_argument(fmt::format("mask topk: k = {} must be >= 1", k));
  mask out = *this;
  out.topk_k_ = k;
  out.topk_by_ = by;
  return out;
}

bool mask::allows(index i, index j, double r2) const { return !root_ || eval(*root_, i, j, r2); }

// Rows [i0, i1) × keys [j0, j1), both non-empty (classify_node's conditions).
tile_class mask::classify(index i0, index i1, index j0, index j1, double min_r2) const {
  if (!root_) return tile_class::in;
  return classify_node(*root_, i0, i1, j0, j1, min_r2);
}

bool mask::needs_distance() const { return has_radius(root_.get()); }
bool mask::is_none() const { return !root_ && topk_k_ == 0; }

mask mask::key_range(index j0, index j1) const {
  if (topk_k_ > 0)
    throw std::invalid_argument(
        "mask: a top-k/knn stage ranks every key of a row at once; it cannot be split into key "
        "chunks or shards");
  if (j0 < 0 || j1 < j0)
    throw std::invalid_argument(fmt::format("mask key_range: [{}, {}) is not a range", j0, j1));
  // No predicate: every chunk sees all its keys.
  if (!root_) return *this;
  return mask(shift_node(*root_, j0, j1));
}

void mask::validate(index n, index m) const {
  if (root_) validate_node(*root_, n, m);
}

std::string mask::describe() const {
  std::string s = root_ ? describe_node(*root_) : "";
  if (topk_k_ > 0)
    // Top-k is written last and after '&', the only place parse() accepts it.
    s += fmt::format("{}{}:{}", root_ ? "&" : "", topk_by_ == topk_rank::weight ? "topk" : "knn",
                     topk_k_);
  return s.empty() ? "none" : s;
}

// Left to right without precedence: "a|b&c" is (a | b) & c. Each term is folded into acc as it is
// read; a top-k/knn term only records k and must be the last term, after '&'.
mask mask::parse(std::string_view text) {
  if (text.empty()) throw std::invalid_argument("mask: empty mask text (use 'none')");
  mask acc;
  index k = 0;
  topk_rank by = topk_rank::weight;
  char op = '&';
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t next = text.find_first_of("&|", pos);
    const std::string_view item =
        text.substr(pos, next == std::string_view::npos ? next : next - pos);
    const auto colon = item.find(':');
    const std::string_view name = item.substr(0, colon);
    const std::string_view arg = colon == std::string_view::npos ? "" : item.substr(colon + 1);
    auto need_arg = [&] {
      if (arg.empty())
        throw std::invalid_argument(fmt::format("mask '{}' needs a value, e.g. {}:8", name, name));
    };
    std::optional<mask> term;
    if (name == "none") {
      term = mask{};
    } else if (name == "causal") {
      term = mask::causal(arg.empty() ? 0 : parse_index(arg, "causal offset"));
    } else if (name == "window") {
      need_arg();
      const auto comma = arg.find(',');
      if (comma == std::string_view::npos) {
        const index w = parse_index(arg, "window");
        term = mask::window(w, w);
      } else {
        term = mask::window(parse_index(arg.substr(0, comma), "window left"),
                            parse_index(arg.substr(comma + 1), "window right"));
      }
    } else if (name == "padding") {
      need_arg();
      term = mask::key_padding({parse_index(arg, "padding length")});
    } else if (name == "radius") {
      need_arg();
      term = mask::radius(parse_double(arg, "radius"));
    } else if (name == "topk" || name == "knn") {
      need_arg();
      // k and by are applied after the loop, on the combined predicates.
      if (op != '&' || next != std::string_view::npos)
        throw std::invalid_argument("mask: topk/knn must come last, joined with '&'");
      k = parse_index(arg, name);
      if (k < 1) throw std::invalid_argument(fmt::format("mask {}: k = {} must be >= 1", name, k));
      by = name == "topk" ? topk_rank::weight : topk_rank::distance;
    } else {
      throw std::invalid_argument(fmt::format(
          "unknown mask '{}'; known: none, causal[:OFFSET], window:W[,R], padding:LEN, radius:R, "
          "topk:K, knn:K, joined with & or |",
          item));
    }
    if (term) acc = op == '&' ? (acc & *term) : (acc | *term);
    if (next == std::string_view::npos) break;
    op = text[next];
    pos = next + 1;
  }
  return k > 0 ? acc.topk(k, by) : acc;
}

}  // namespace kf
