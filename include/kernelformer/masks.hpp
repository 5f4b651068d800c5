// kernelformer/masks.hpp — the set filter M(i): which keys j query i may see.
//
// A mask is data: predicates on (i, j) and on the distance |q_i − k_j| composed with & and |,
// then an optional top-k stage that keeps, among the keys the predicates allow, the k with the
// largest kernel value (or the k nearest: KNN). Predicates:
//   none (all keys)          causal(offset):  j ≤ i + offset
//   window(left, right):     i − left ≤ j ≤ i + right   (a band; window(w, w) is |i − j| ≤ w;
//                            window(−1, m) is j > i, so causal(−1) | window(−1, m) is j ≠ i)
//   key_padding(lengths):    j < lengths[i] (one length for all rows, or one per row)
//   radius(r):               |q_i − k_j| ≤ r           matrix(n, m, allowed): a user boolean matrix
// Tiles that a predicate rules out entirely are skipped by the fast path (classify()).
// Top-k ties break toward the smaller distance, then the smaller key index (deterministic).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernelformer/tensor.hpp"

namespace kf {

enum class topk_rank { weight, distance };
enum class tile_class { out, partial, in };  // no key allowed / some / every key allowed

class mask {
 public:
  mask();  // none
  static mask none();
  static mask causal(index offset = 0);
  static mask window(index left, index right);
  static mask key_padding(std::vector<index> lengths);
  static mask radius(double r);
  static mask matrix(index n, index m, std::vector<std::uint8_t> allowed);

  friend mask operator&(const mask& a, const mask& b);
  friend mask operator|(const mask& a, const mask& b);
  // The same predicates followed by a top-k stage (k ≥ 1).
  mask topk(index k, topk_rank by = topk_rank::weight) const;

  // Per element: may query i see key j at squared distance r2? (r2 used by radius only.)
  bool allows(index i, index j, double r2) const;
  // Rows [i0, i1) × keys [j0, j1): ruled out, partial, or fully allowed. min_r2 is a lower bound
  // of the squared distance between the two tiles' points (0 if unknown).
  tile_class classify(index i0, index i1, index j0, index j1, double min_r2) const;
  bool needs_distance() const;  // has a radius predicate
  // True, with its offset, when the mask is exactly causal(offset) (no other predicate, no
  // top-k): the tiles then test j ≤ i + offset inline instead of calling allows().
  bool is_causal_only(index& offset) const;
  bool is_none() const;  // no predicate and no top-k
  // True when every row's allowed keys are a prefix [0, L_i) — none, causal(offset), key padding
  // and their & / | combinations, no top-k — with L_i (clamped to 0..m) in len (n entries).
  // The feature-map route of the primitive serves exactly these masks (prefix sums).
  bool prefix_lengths(index n, index m, std::vector<index>& len) const;
  index topk_k() const { return topk_k_; }
  topk_rank topk_by() const { return topk_by_; }

  // The mask as keys [j0, j1) of the full key set see it, renumbered from 0: key j of the chunk
  // is key j0 + j of the whole (causal and window offsets shift, padding lengths are clipped to
  // the chunk, a user matrix keeps its columns j0..j1). What a chunk of keys needs for a partial
  // result (smooth_partial.hpp). Throws std::invalid_argument for a top-k stage, which ranks all
  // keys of a row at once and cannot be split.
  mask key_range(index j0, index j1) const;

  // Throws std::invalid_argument if the mask cannot apply to an n × m problem.
  void validate(index n, index m) const;
  std::string describe() const;

  // "none", "causal", "causal:OFFSET", "window:W", "window:L,R", "padding:LEN", "radius:R",
  // "topk:K", "knn:K" (top-k by distance), joined with '&' or '|' (left to right), e.g.
  // "causal&window:16" or "radius:2&topk:8". Throws std::invalid_argument.
  static mask parse(std::string_view text);

  struct node;

 private:
  explicit mask(std::shared_ptr<const node> root) : root_(std::move(root)) {}
  static mask combine(const mask& a, const mask& b, bool is_and);

  std::shared_ptr<const node> root_;  // null = all keys
  index topk_k_ = 0;
  topk_rank topk_by_ = topk_rank::weight;
};

}  // namespace kf
