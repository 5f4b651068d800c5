// kernelformer/model/token_model.hpp — Transformers over tokens: a decoder-only language model
// and an encoder–decoder (seed 003 §4), built from the same layers.
//
// Shapes (one legend for the whole model): B batch items, T target positions, S source positions,
// C = d_model, H heads, D = C/H, V vocabulary. Activations are (B·T, C) row-major matrices.
//
// Decoder-only (encoder_layers = 0), GPT-style:
//   h = drop(tok_emb[ids] + pos(t))  →  L layers with causal self-attention
//   (nn.TransformerEncoderLayer
//   + causal mask)  →  norm (pre-LN only)  →  logits = lm_head(h)  (tied to tok_emb by default)
// Encoder–decoder (encoder_layers > 0), nn.Transformer-style:
//   mem = encoder(drop(src_emb[src] + pos(s)))   (key padding per item from src_lengths)
//   h   = decoder(drop(tok_emb[tgt] + pos(t)), mem)  (causal self-attention, cross-attention)
//   logits = lm_head(norm(h))
// pos is a learned embedding (pos_emb, init N(0, 0.02²)) or the sinusoidal table added.
// Parameter names: tok_emb.weight, pos_emb.weight, layers.{i}.… (decoder-only) or
// src_emb.weight, src_pos_emb.weight, encoder.layers.{i}.…, encoder.norm.…, decoder.layers.{i}.…,
// norm.…, lm_head.weight (untied). Every attention head is the smoothing primitive with the
// configured kernel.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernelformer/model/sampling.hpp"
#include "kernelformer/nn/embedding.hpp"
#include "kernelformer/nn/lm_head.hpp"
#include "kernelformer/nn/parameters.hpp"
#include "kernelformer/nn/transformer_layer.hpp"

namespace kf::model {

struct token_model_config {
  index vocab = 0;      // target / language-model vocabulary
  index src_vocab = 0;  // encoder vocabulary (encoder–decoder only; 0: same as vocab)
  index context = 64;   // longest sequence (positions)
  index encoder_layers = 0, decoder_layers = 2;
  nn::block_config block{64, 4, 256, 0.0, nn::activation::gelu, true, kernel_exp_dot{}};
  bool learned_positions = true;
  bool tie_weights = true;
  // Initialization only (not stored in a checkpoint): the token embeddings' N(0, std²). GPT-2's
  // 0.02 beside learned positions of the same scale; beside the sinusoidal table (values in
  // [−1, 1]) such small embeddings leave the tokens drowned by their positions at the start, and
  // a seq2seq model took several times longer to begin learning (model/seq2seq.hpp uses 0.2).
  double embedding_std = 0.02;
  std::map<std::string, std::string> to_metadata() const;
  // Every field checked (ranges, heads dividing d_model, the kernel); throws naming the field.
  static token_model_config from_metadata(const std::map<std::string, std::string>& m);
  std::string describe() const;  // "vocab 65, context 32, …" for messages
};

struct token_input {
  index batch = 1, t = 0;          // target tokens (B·T), row-major
  std::span<const index> tokens;   //
  index s = 0;                     // source tokens (B·S) — encoder–decoder only
  std::span<const index> src;      //
  std::vector<index> src_lengths;  // valid source length per item (empty: all S)
};

enum class attention_site { encoder_self, decoder_self, decoder_cross };

template <class T>
class generation_cache;  // model/generation.hpp: incremental decoding, one row per token

template <class T>
class token_model {
 public:
  // allocate = false: parameters registered (names, shapes), no buffer allocated (see
  // token_model_load).
  explicit token_model(const token_model_config& cfg, std::uint64_t seed = 0, bool allocate = true);
  const token_model_config& config() const { return cfg_; }
  nn::parameters<T>& params() { return p_; }
  const nn::parameters<T>& params() const { return p_; }
  bool is_encoder_decoder() const { return cfg_.encoder_layers > 0; }

  // Runs the model; returns the mean cross-entropy against targets (B·T, −1 = ignore) or 0 when
  // targets is empty. rng = nullptr: evaluation (no dropout). Logits stay available.
  double forward(const token_input& in, std::span<const index> targets, std::mt19937_64* rng);
  // After a forward with targets: accumulates every parameter's gradient of that loss.
  void backward();
  // Logits (B·T, V) of the last forward.
  const matrix<T>& logits() const { return logits_; }
  // Normalized weights (T, S) of one head from the last forward.
  matrix<T> attention_weights(attention_site site, index layer, index head, index b) const;

 private:
  struct stack_state {
    matrix<T> emb;                // token + position, before dropout
    nn::dropout::cache drop;      //
    std::vector<matrix<T>> acts;  // acts[l]: input of layer l; acts[L]: last layer's output
    std::vector<typename nn::transformer_layer<T>::cache> caches;
    matrix<T> out;  // after the final norm (or = acts[L])
    typename nn::layer_norm<T>::cache ln;
  };
  void embed(stack_state& st, const nn::token_embedding<T>& tok, const nn::token_embedding<T>& pos,
             std::span<const index> ids, index batch, index len, std::mt19937_64* rng);
  void embed_backward(const stack_state& st, const nn::token_embedding<T>& tok,
                      const nn::token_embedding<T>& pos, const_matrix_view<T> dh,
                      std::span<const index> ids, index batch, index len);

  token_model_config cfg_;
  nn::parameters<T> p_;
  nn::token_embedding<T> tok_emb_, pos_emb_, src_emb_, src_pos_emb_;
  std::vector<nn::transformer_layer<T>> enc_layers_, dec_layers_;
  nn::layer_norm<T> enc_norm_, norm_;
  bool final_norm_ = false;
  nn::lm_head<T> head_;
  matrix<T> pe_;
  // forward state
  stack_state enc_, dec_;
  typename nn::multi_head_attention<T>::shape enc_sh_, dec_sh_, cross_sh_;
  std::vector<index> tokens_, src_;
  matrix<T> logits_, dlogits_;
  bool have_loss_ = false;
  friend class generation_cache<T>;  // runs the layers on one new row at a time
};

struct checkpoint;
// A token model from a checkpoint: the metadata checked, the tensor table compared with the
// shapes it implies before any buffer is allocated, then the weights copied. Throws
// std::runtime_error naming the field or tensor.
std::unique_ptr<token_model<float>> token_model_load(const checkpoint& ck);

// Next-token sampling from a decoder-only model: the next-token logits after the last `context`
// tokens, divided by temperature (0: greedy), the top_k most likely kept (0: all), drawn with the
// seeded generator. use_cache: each token costs one row through the layers (generation_cache,
// model/generation.hpp: kv-cache or recurrent route by the kernel); false: a full forward over
// the window per token (the reference; the same tokens). Returns the generated tokens only.
// Defined in src/model/generation.cpp.
template <class T>
std::vector<index> token_model_generate(token_model<T>& m, std::span<const index> prompt,
                                        index n_tokens, double temperature, index top_k,
                                        std::uint64_t seed, bool use_cache = true);
// The same draws, each handed to emit(id) as soon as it is drawn (kf sample prints them as they
// come); memory stays bounded by the context whatever n_tokens is.
template <class T>
void token_model_generate_stream(token_model<T>& m, std::span<const index> prompt, index n_tokens,
                                 double temperature, index top_k, std::uint64_t seed,
                                 const std::function<void(index)>& emit, bool use_cache = true);
// The same with the whole sampling rule (model/sampling.hpp: top-p, a repetition penalty over the
// last `context` tokens); emit returns false to stop (kf sample's --stop strings).
template <class T>
void token_model_generate_stream(token_model<T>& m, std::span<const index> prompt, index n_tokens,
                                 const sampling& rule, std::uint64_t seed,
                                 const std::function<bool(index)>& emit, bool use_cache = true);

}  // namespace kf::model
