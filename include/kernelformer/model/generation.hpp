// kernelformer/model/generation.hpp — incremental decoding of a decoder-only token model: each
// new token costs one row through every layer instead of a forward over the whole context.
//
// A token at position t (t < context) needs, per layer, its own q, k, v row; its attention row
// against the keys and values of positions 0..t; and LayerNorm / FFN / residuals on its row only
// (earlier rows never change: the mask is causal and positions are absolute). Two routes keep
// what attention needs of the past, chosen from the kernel (generation_route_of):
//   kv-cache   every exact kernel (exp_dot, gaussian, compact kernels, products, …): the keys and
//              values of every layer, (t + 1) × 2C; the head's row is the smoothing primitive with
//              one query against them — O(t·C) per layer and token;
//   recurrent  feature-map kernels (elu1, rff, favor): per layer and head the running sums
//              S = Σ φ(k_j) v_jᵀ and z = Σ φ(k_j) (smooth_recurrent.hpp) — O(r·D) per head,
//              whatever t;
//   recompute  the reference: a full forward over the window for every token (--no-cache, and
//              encoder–decoder models).
// Past the context the window slides by one token per step and every position moves, so no
// cache survives: those steps are recomputes on every route (counted in recomputed()). Tokens,
// at temperature 0, and logits are those of the recompute route (tests/model/test_generation.cpp:
// same tokens, logits to 1e-5 relative in float32).
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "kernelformer/model/token_model.hpp"
#include "kernelformer/smooth_recurrent.hpp"

namespace kf::model {

enum class generation_route { kv_cache, recurrent, recompute };
std::string_view generation_route_name(generation_route r);  // "kv-cache", "recurrent", …

// The route generation takes for a model of this configuration: recompute when no_cache or for
// an encoder–decoder model, recurrent for a feature-map kernel, kv-cache for any other.
generation_route generation_route_of(const token_model_config& cfg, bool no_cache = false);

template <class T>
class generation_cache {
 public:
  // m must outlive the cache and keep its weights while it is used; it is not copied. m's
  // last-forward state (logits(), attention_weights) is overwritten by recompute steps.
  explicit generation_cache(token_model<T>& m, bool no_cache = false);
  generation_route route() const { return route_; }

  // Feeds the tokens (one or more) at the next positions; returns the logits (V) the model gives
  // the last of them, i.e. the next-token logits after everything fed so far — as a forward over
  // the last `context` tokens would. The span stays valid until the next call.
  std::span<const T> append(std::span<const index> tokens);
  std::span<const T> append(index token) { return append(std::span<const index>(&token, 1)); }

  index size() const { return fed_; }               // tokens fed since construction / reset
  index recomputed() const { return recomputed_; }  // appends served by a full forward
  void reset();                                     // forget every token

 private:
  void step(index token);                                            // one cached position
  void attend(index l, matrix_view<T> a1, const_matrix_view<T> in);  // layer l's self-attention
  void recompute();  // a full forward over the window

  token_model<T>& m_;
  generation_route route_;
  index fed_ = 0, pos_ = 0, recomputed_ = 0;  // pos_: positions held by the cache
  std::vector<index> window_;                 // the last ≤ 2·context tokens
  std::vector<matrix<T>> kv_;                 // kv-cache: per layer (context, 2C) [k | v]
  std::vector<smooth_recurrent<T>> states_;   // recurrent: per layer × head
  std::vector<typename nn::transformer_layer<T>::cache> caches_;  // per layer, one row
  matrix<T> x_, y_, qkv_, att_, h_, logits_;                      // one-row buffers
  typename nn::layer_norm<T>::cache ln_;
};

}  // namespace kf::model
