// The token model (model/token_model.hpp): configuration ↔ checkpoint metadata, construction,
// and the forward/backward pass of the decoder-only and the encoder–decoder Transformer.
// Shape legend as in the header: B batch, T target positions (Tn in code: T is the scalar type),
// S source positions, C = d_model, V vocabulary; activations are (B·T, C) row-major matrices.
#include "kernelformer/model/token_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/sequence_regressor.hpp"

namespace kf::model {
namespace {

constexpr auto get = &checkpoint_metadata_get;

}  // namespace

// Every field a checkpoint needs to rebuild the model (embedding_std, an initialization choice,
// is not among them); from_metadata reads them back.
std::map<std::string, std::string> token_model_config::to_metadata() const {
  std::map<std::string, std::string> m = {
      {"kind", "token_model"},
      {"vocab", std::to_string(vocab)},
      {"src_vocab", std::to_string(src_vocab)},
      {"context", std::to_string(context)},
      {"encoder_layers", std::to_string(encoder_layers)},
      {"decoder_layers", std::to_string(decoder_layers)},
      {"learned_positions", learned_positions ? "true" : "false"},
      {"tie_weights", tie_weights ? "true" : "false"}};
  block_config_to_metadata(block, m);
  return m;
}

// Each field checked against its range before the model is built from it (a checkpoint is
// untrusted input); the bounds keep a corrupt file from asking for absurd allocations.
token_model_config token_model_config::from_metadata(const std::map<std::string, std::string>& m) {
  if (get(m, "kind") != "token_model")
    throw std::runtime_error("checkpoint holds a '" + checkpoint_quote(get(m, "kind")) +
                             "', not a token model (language model)");
  token_model_config c;
  c.vocab = checkpoint_metadata_index(m, "vocab", 1, index(1) << 24);
  c.src_vocab = checkpoint_metadata_index(m, "src_vocab", 0, index(1) << 24);
  c.context = checkpoint_metadata_index(m, "context", 1, index(1) << 15);
  c.encoder_layers = checkpoint_metadata_index(m, "encoder_layers", 0, 1024);
  c.decoder_layers = checkpoint_metadata_index(m, "decoder_layers", 0, 1024);
  c.block = block_config_from_metadata(m);
  c.learned_positions = checkpoint_metadata_bool(m, "learned_positions");
  c.tie_weights = checkpoint_metadata_bool(m, "tie_weights");
  return c;
}

std::string token_model_config::describe() const {
  return fmt::format(
      "vocab {}, context {}, encoder_layers {}, decoder_layers {}, d_model {}, heads {}, d_ff {}",
      vocab, context, encoder_layers, decoder_layers, block.d_model, block.heads, block.d_ff);
}

std::unique_ptr<token_model<float>> token_model_load(const checkpoint& ck) {
  const token_model_config cfg = token_model_config::from_metadata(ck.metadata);
  try {
    // Names and shapes first (nothing allocated); the tensors present then bound the model.
    const token_model<float> shapes(cfg, 0, false);
    checkpoint_check_shapes(ck, shapes.params(), cfg.describe());
    // The sinusoidal table (context × d_model) is the one buffer the tensors do not bound.
    if (!cfg.learned_positions &&
        cfg.context * cfg.block.d_model > 16 * shapes.params().count() + (index(1) << 20))
      throw std::runtime_error(fmt::format(
          "checkpoint metadata 'context' = {} makes a positional table of {} x {} values, far "
          "larger than the model",
          cfg.context, cfg.context, cfg.block.d_model));
    auto m = std::make_unique<token_model<float>>(cfg, 0);
    checkpoint_apply(ck, m->params());
    return m;
  } catch (const std::invalid_argument& e) {  // the layers' own checks
    throw std::runtime_error(fmt::format("checkpoint metadata ({}): {}", cfg.describe(), e.what()));
  }
}

template <class T>
token_model<T>::token_model(const token_model_config& cfg, std::uint64_t seed, bool allocate)
    : cfg_(cfg) {
  // Registers the parameters in PyTorch's order and names (the header lists them); with
  // allocate = false no buffer is made, so a checkpoint's table can be checked first.
  const index C = cfg.block.d_model;
  if (cfg.vocab < 1) throw std::invalid_argument("token model: the vocabulary is empty");
  if (cfg.context < 1) throw std::invalid_argument("token model: context must be at least 1");
  if (!(cfg.embedding_std > 0))
    throw std::invalid_argument("token model: embedding_std must be positive");
  if (cfg.encoder_layers < 0 || cfg.decoder_layers < 0)
    throw std::invalid_argument("token model: negative number of layers");
  if (cfg_.src_vocab == 0) cfg_.src_vocab = cfg.vocab;
  const bool encdec = cfg.encoder_layers > 0;
  final_norm_ = cfg.block.norm_first || encdec;  // pre-LN stacks end in a norm; nn.Transformer too
  if (encdec) {
    src_emb_ = nn::token_embedding<T>(p_, "src_emb", cfg_.src_vocab, C, cfg.embedding_std);
    if (cfg.learned_positions)
      src_pos_emb_ = nn::token_embedding<T>(p_, "src_pos_emb", cfg.context, C, 0.02);
    for (index l = 0; l < cfg.encoder_layers; ++l)
      enc_layers_.emplace_back(p_, fmt::format("encoder.layers.{}", l), cfg.block, false, false);
    enc_norm_ = nn::layer_norm<T>(p_, "encoder.norm", C);  // over the memory (B·S, C)
  }
  tok_emb_ = nn::token_embedding<T>(p_, "tok_emb", cfg.vocab, C, cfg.embedding_std);
  if (cfg.learned_positions) pos_emb_ = nn::token_embedding<T>(p_, "pos_emb", cfg.context, C, 0.02);
  // Decoder-only: encoder layers with a causal mask (GPT); encoder–decoder: decoder layers
  // (causal self-attention + cross-attention over the memory).
  for (index l = 0; l < cfg.decoder_layers; ++l) {
    if (encdec)
      dec_layers_.emplace_back(p_, fmt::format("decoder.layers.{}", l), cfg.block, true, true);
    else
      dec_layers_.emplace_back(p_, fmt::format("layers.{}", l), cfg.block, false, true);
  }
  if (final_norm_) norm_ = nn::layer_norm<T>(p_, "norm", C);
  // (C → V); tied: logits = h · tok_emb.weightᵀ, no weight of its own.
  head_ = cfg.tie_weights ? nn::lm_head<T>::tied(tok_emb_.w, cfg.vocab, C)
                          : nn::lm_head<T>(p_, "lm_head", C, cfg.vocab, false);
  if (!allocate) return;
  p_.finalize(seed);
  if (!cfg.learned_positions) pe_ = nn::positional_sinusoidal<T>(cfg.context, C);  // (context, C)
}

// acts[0] = drop(tok[ids] + pos[t]) for ids (batch·len) in row-major (item, position) order; the
// sum before dropout stays in st.emb and the mask in st.drop for embed_backward.
template <class T>
void token_model<T>::embed(stack_state& st, const nn::token_embedding<T>& tok,
                           const nn::token_embedding<T>& pos, std::span<const index> ids,
                           index batch, index len, std::mt19937_64* rng) {
  const index C = cfg_.block.d_model, n = batch * len;
  st.emb.resize(n, C);                  // (B·len, C); buffers keep their allocation across steps
  tok.forward(p_, st.emb.view(), ids);  // emb = tok[ids]
  const T* pw = cfg_.learned_positions ? p_.value(pos.w) : pe_.data();  // (context, C)
  for (index r = 0; r < n; ++r) {
    const T* pr = pw + (r % len) * C;
    for (index i = 0; i < C; ++i) st.emb(r, i) += pr[i];  // emb += pos[t]
  }
  if (st.acts.empty()) st.acts.emplace_back();  // the layers' outputs follow (layer by layer)
  st.acts[0].resize(n, C);                      // (B·len, C)
  nn::dropout{cfg_.block.dropout}.forward(st.acts[0].view(), st.emb.cview(), st.drop, rng);
}

// The gradient dh (B·len, C) of acts[0] back through the dropout into the token table (scattered
// by id) and the learned position table (summed over items); the sinusoidal table has none.
template <class T>
void token_model<T>::embed_backward(const stack_state& st, const nn::token_embedding<T>& tok,
                                    const nn::token_embedding<T>& pos, const_matrix_view<T> dh,
                                    std::span<const index> ids, index batch, index len) {
  const index C = cfg_.block.d_model, n = batch * len;
  matrix<T> demb(n, C);  // (B·len, C): dh ⊙ mask / (1 − rate)
  nn::dropout{cfg_.block.dropout}.backward(demb.view(), dh, st.drop);
  tok.backward(p_, demb.cview(), ids);  // dtok[ids] += demb
  if (cfg_.learned_positions) {
    T* dpw = p_.grad(pos.w);
    for (index r = 0; r < n; ++r)
      for (index i = 0; i < C; ++i) dpw[(r % len) * C + i] += demb(r, i);  // dpos[t] += demb
  }
}

// tokens (B·T) [and src (B·S)] → logits (B·T, V), kept with every layer's cache for backward;
// with targets (B·T, −1 ignored) also the mean cross-entropy and dlogits. Input sizes are checked
// here (std::invalid_argument): the layers below trust them.
template <class T>
double token_model<T>::forward(const token_input& in, std::span<const index> targets,
                               std::mt19937_64* rng) {
  const index B = in.batch, Tn = in.t, C = cfg_.block.d_model, V = cfg_.vocab;
  if (B < 1 || Tn < 1) throw std::invalid_argument("token model: empty batch");
  if (Tn > cfg_.context)
    throw std::invalid_argument(
        fmt::format("token model: {} positions exceed the context of {}", Tn, cfg_.context));
  if (static_cast<index>(in.tokens.size()) != B * Tn)
    throw std::invalid_argument("token model: tokens.size() != batch * t");
  if (!targets.empty() && static_cast<index>(targets.size()) != B * Tn)
    throw std::invalid_argument("token model: targets.size() != batch * t");
  const bool encdec = is_encoder_decoder();
  tokens_.assign(in.tokens.begin(), in.tokens.end());
  dec_sh_ = {B, Tn, Tn, {}};
  const_matrix_view<T> memory;
  if (encdec) {
    const index S = in.s;
    if (S < 1 || S > cfg_.context || static_cast<index>(in.src.size()) != B * S)
      throw std::invalid_argument(fmt::format(
          "token model: the source must hold batch x s tokens with 1 <= s <= {}", cfg_.context));
    if (!in.src_lengths.empty()) {
      if (static_cast<index>(in.src_lengths.size()) != B)
        throw std::invalid_argument("token model: one source length per batch item");
      for (index L : in.src_lengths)
        if (L < 1 || L > S)
          throw std::invalid_argument(
              fmt::format("token model: source length {} outside 1..{}", L, S));
    }
    src_.assign(in.src.begin(), in.src.end());
    enc_sh_ = {B, S, S, in.src_lengths};     // encoder self-attention: keys padded per item
    cross_sh_ = {B, Tn, S, in.src_lengths};  // decoder queries over the padded memory
    embed(enc_, src_emb_, src_pos_emb_, src_, B, S, rng);  // enc_.acts[0]: (B·S, C)
    enc_.caches.resize(enc_layers_.size());
    for (std::size_t l = 0; l < enc_layers_.size(); ++l) {
      if (enc_.acts.size() < l + 2) enc_.acts.emplace_back();
      enc_.acts[l + 1].resize(B * S, C);  // x = layer(x)  (B·S, C)
      enc_layers_[l].forward(p_, enc_.acts[l + 1].view(), enc_.acts[l].cview(), {}, enc_sh_,
                             enc_sh_, enc_.caches[l], rng);
    }
    enc_.out.resize(B * S, C);
    enc_norm_.forward(p_, enc_.out.view(), enc_.acts.back().cview(), enc_.ln);
    memory = enc_.out.cview();  // mem = encoder.norm(x)  (B·S, C)
  }
  embed(dec_, tok_emb_, pos_emb_, tokens_, B, Tn, rng);  // dec_.acts[0]: (B·T, C)
  dec_.caches.resize(dec_layers_.size());
  for (std::size_t l = 0; l < dec_layers_.size(); ++l) {
    if (dec_.acts.size() < l + 2) dec_.acts.emplace_back();
    dec_.acts[l + 1].resize(B * Tn, C);  // x = layer(x[, mem])  (B·T, C)
    dec_layers_[l].forward(p_, dec_.acts[l + 1].view(), dec_.acts[l].cview(), memory, dec_sh_,
                           cross_sh_, dec_.caches[l], rng);
  }
  const matrix<T>* h = &dec_.acts.back();
  if (final_norm_) {
    dec_.out.resize(B * Tn, C);
    norm_.forward(p_, dec_.out.view(), dec_.acts.back().cview(), dec_.ln);
    h = &dec_.out;  // h = norm(x)  (B·T, C)
  }
  logits_.resize(B * Tn, V);
  head_.forward(p_, logits_.view(), h->cview());  // logits = lm_head(h)  (B·T, V)
  have_loss_ = !targets.empty();
  if (!have_loss_) return 0.0;
  dlogits_.resize(B * Tn, V);  // d mean CE / d logits, saved for backward
  return nn::cross_entropy<T>(logits_.cview(), targets, dlogits_.view());
}

// The forward in reverse, accumulating (+=) into every parameter's gradient: head, final norm,
// decoder layers (each also adds its cross-attention's share to dmem), embeddings; then the
// encoder from dmem. The caller zeroes the gradients between steps.
template <class T>
void token_model<T>::backward() {
  if (!have_loss_) throw std::logic_error("token model: backward() needs a forward with targets");
  const index B = dec_sh_.batch, Tn = dec_sh_.t, C = cfg_.block.d_model;
  const bool encdec = is_encoder_decoder();
  const matrix<T>& h = final_norm_ ? dec_.out : dec_.acts.back();
  matrix<T> dh(B * Tn, C);
  head_.backward(p_, dh.view(), dlogits_.cview(), h.cview());  // logits = lm_head(h): dh (B·T, C)
  matrix<T> dcur;
  if (final_norm_) {
    dcur = matrix<T>(B * Tn, C);
    norm_.backward(p_, dcur.view(), dh.cview(), dec_.acts.back().cview(), dec_.ln);  // h = norm(x)
  } else {
    dcur = std::move(dh);
  }
  matrix<T> dmem;
  if (encdec) dmem = matrix<T>(enc_sh_.batch * enc_sh_.t, C);  // (B·S, C), summed over layers
  for (std::size_t l = dec_layers_.size(); l-- > 0;) {
    matrix<T> dprev(B * Tn, C);  // x = layer(x[, mem]): dx (B·T, C), dmem += (B·S, C)
    dec_layers_[l].backward(p_, dprev.view(), encdec ? dmem.view() : matrix_view<T>{}, dcur.cview(),
                            encdec ? enc_.out.cview() : const_matrix_view<T>{}, dec_sh_, cross_sh_,
                            dec_.caches[l]);
    dcur = std::move(dprev);
  }
  embed_backward(dec_, tok_emb_, pos_emb_, dcur.cview(), tokens_, B, Tn);  // tied: dtok += here too
  if (!encdec) return;
  const index S = enc_sh_.t;
  matrix<T> de(B * S, C);  // mem = encoder.norm(x): dx (B·S, C)
  enc_norm_.backward(p_, de.view(), dmem.cview(), enc_.acts.back().cview(), enc_.ln);
  for (std::size_t l = enc_layers_.size(); l-- > 0;) {
    matrix<T> dprev(B * S, C);  // x = layer(x): dx (B·S, C)
    enc_layers_[l].backward(p_, dprev.view(), {}, de.cview(), {}, enc_sh_, enc_sh_, enc_.caches[l]);
    de = std::move(dprev);
  }
  embed_backward(enc_, src_emb_, src_pos_emb_, de.cview(), src_, B, S);
}

// The normalized weights (T, T) or (T, S) of one head for item b, recomputed from the last
// forward's cache (nothing is stored per head during training).
template <class T>
matrix<T> token_model<T>::attention_weights(attention_site site, index layer, index head,
                                            index b) const {
  const bool enc = site == attention_site::encoder_self;
  const auto& layers = enc ? enc_layers_ : dec_layers_;
  const auto& st = enc ? enc_ : dec_;
  if (layer < 0 || layer >= static_cast<index>(layers.size()) ||
      static_cast<std::size_t>(layer) >= st.caches.size())
    throw std::out_of_range(fmt::format("layer {} is outside 0..{} (or no forward was run)", layer,
                                        static_cast<index>(layers.size()) - 1));
  const auto lu = static_cast<std::size_t>(layer);
  if (site == attention_site::decoder_cross) {
    if (!is_encoder_decoder())
      throw std::out_of_range("a decoder-only model has no cross-attention");
    return layers[lu].cross_attn.capture_weights(st.caches[lu].att2, cross_sh_, b, head);
  }
  return layers[lu].self_attn.capture_weights(st.caches[lu].att1, enc ? enc_sh_ : dec_sh_, b, head);
}

template class token_model<float>;
template class token_model<double>;

}  // namespace kf::model
