// Incremental decoding (kernelformer/model/generation.hpp) and the sampling loop built on it.
// Shapes: C = d_model, H heads, D = C/H, V vocabulary, t the new token's position.
#include "kernelformer/model/generation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "detail/blas.hpp"
#include "kernelformer/smooth.hpp"
#include "nn/elementwise.hpp"

namespace kf::model {

std::string_view generation_route_name(generation_route r) {
  switch (r) {
    case generation_route::kv_cache:
      return "kv-cache";
    case generation_route::recurrent:
      return "recurrent";
    case generation_route::recompute:
      return "recompute";
  }
  return "?";
}

generation_route generation_route_of(const token_model_config& cfg, bool no_cache) {
  if (no_cache || cfg.encoder_layers > 0) return generation_route::recompute;
  const kernel_spec& k = cfg.block.kernel;  // products never hold a feature-map factor
  if (!k.is_product() && kernel_is_feature_map(k.first)) return generation_route::recurrent;
  return generation_route::kv_cache;  // the causal mask of an exact kernel: keep the keys
}

template <class T>
generation_cache<T>::generation_cache(token_model<T>& m, bool no_cache)
    : m_(m), route_(generation_route_of(m.config(), no_cache)) {
  if (m.is_encoder_decoder())
    throw std::invalid_argument("generation: needs a decoder-only model (language model)");
  const token_model_config& cfg = m.config();
  const index L = cfg.decoder_layers, C = cfg.block.d_model, H = cfg.block.heads;
  caches_.resize(static_cast<std::size_t>(L));
  if (route_ == generation_route::kv_cache)
    kv_.assign(static_cast<std::size_t>(L), matrix<T>(cfg.context, 2 * C));  // per layer: [k v]
  if (route_ == generation_route::recurrent)
    for (index i = 0; i < L * H; ++i)
      states_.emplace_back(kernel_with_draw(cfg.block.kernel, 0), C / H, C / H);
}

template <class T>
void generation_cache<T>::reset() {
  fed_ = pos_ = recomputed_ = 0;
  window_.clear();
  for (auto& s : states_) s.clear();
}

template <class T>
std::span<const T> generation_cache<T>::append(std::span<const index> tokens) {
  if (tokens.empty()) throw std::invalid_argument("generation: no token to append");
  const index ctx = m_.config().context, V = m_.config().vocab;
  for (index id : tokens)  // all checked first: a bad id throws with the cache unchanged
    if (id < 0 || id >= V)
      throw std::out_of_range(fmt::format("generation: token {} is outside 0..{}", id, V - 1));
  window_.insert(window_.end(), tokens.begin(), tokens.end());
  // The model sees the last ctx tokens: keeping at most 2·ctx bounds memory however many come.
  if (static_cast<index>(window_.size()) > 2 * ctx)
    window_.erase(window_.begin(), window_.end() - ctx);
  fed_ += static_cast<index>(tokens.size());
  if (route_ == generation_route::recompute || fed_ > ctx) {
    recompute();  // past the context every position moves: nothing cached still holds
    ++recomputed_;
  } else {
    for (index id : tokens) step(id);
  }
  return {logits_.data(), static_cast<std::size_t>(V)};
}

template <class T>
void generation_cache<T>::recompute() {
  const index ctx = m_.config().context, V = m_.config().vocab;
  const index t = std::min<index>(ctx, static_cast<index>(window_.size()));  // the last t tokens
  token_input in;
  in.batch = 1;
  in.t = t;
  in.tokens = std::span<const index>(window_).subspan(window_.size() - static_cast<std::size_t>(t));
  m_.forward(in, {}, nullptr);
  logits_.resize(1, V);
  std::copy_n(m_.logits().data() + (t - 1) * V, V, logits_.data());  // logits (t, V): last row
}

// The token at position pos_: embedding, every layer on its one row, final norm, head.
template <class T>
void generation_cache<T>::step(index token) {
  token_model<T>& m = m_;
  const token_model_config& cfg = m.config();
  const index C = cfg.block.d_model, t = pos_;
  x_.resize(1, C);
  m.tok_emb_.forward(m.p_, x_.view(), std::span<const index>(&token, 1));  // x = tok[id]
  const T* pw = cfg.learned_positions ? m.p_.value(m.pos_emb_.w) : m.pe_.data();
  for (index i = 0; i < C; ++i) x_(0, i) += pw[t * C + i];  // x += pos[t]
  for (std::size_t l = 0; l < m.dec_layers_.size(); ++l) {
    y_.resize(1, C);
    m.dec_layers_[l].forward_with(
        m.p_, y_.view(), x_.cview(), {}, {}, caches_[l], nullptr,
        [&](matrix_view<T> a1, const_matrix_view<T> in) { attend(static_cast<index>(l), a1, in); });
    std::swap(x_, y_);  // x = layer_l(x)
  }
  ++pos_;
  const matrix<T>* h = &x_;
  if (m.final_norm_) {
    h_.resize(1, C);
    m.norm_.forward(m.p_, h_.view(), x_.cview(), ln_);  // h = norm(x)
    h = &h_;
  }
  logits_.resize(1, cfg.vocab);
  m.head_.forward(m.p_, logits_.view(), h->cview());  // logits = lm_head(h)
}

// a1 (1, C) = out_proj(heads of the new row's query against positions 0..t) for layer l.
template <class T>
void generation_cache<T>::attend(index l, matrix_view<T> a1, const_matrix_view<T> in) {
  const auto& att = m_.dec_layers_[static_cast<std::size_t>(l)].self_attn;
  const index C = att.c, H = att.heads, D = C / H, t = pos_;
  qkv_.resize(1, 3 * C);
  att_.resize(1, C);
  // [q k v] = in W_inᵀ + b_in   (1, 3C)
  detail::fill_rows(qkv_.view(), m_.p_.value(att.in_b));
  detail::gemm(false, true, 1, 3 * C, C, T(1), in.data, in.ld, m_.p_.value(att.in_w), C, T(1),
               qkv_.data(), 3 * C);
  const T* q = qkv_.data();
  const T* kv = qkv_.data() + C;
  if (route_ == generation_route::kv_cache) {
    matrix<T>& cache = kv_[static_cast<std::size_t>(l)];
    std::copy_n(kv, 2 * C, cache.data() + t * 2 * C);  // cache[t] = [k v]
    smooth_options opt;
    opt.threads = 1;
    opt.check_finite = false;  // finite by construction, as in the layers
    const const_matrix_view<T> keys = cache.cview().block(0, 0, t + 1, 2 * C);
    for (index h = 0; h < H; ++h)  // causal: the new row sees every cached position
      smooth_forward<T>(att_.view().block(0, h * D, 1, D), {}, qkv_.cview().block(0, h * D, 1, D),
                        keys.block(0, h * D, t + 1, D), keys.block(0, C + h * D, t + 1, D),
                        kernel_with_draw(att.kernel, 0), mask::none(), opt);
  } else {
    for (index h = 0; h < H; ++h) {
      smooth_recurrent<T>& s = states_[static_cast<std::size_t>(l * H + h)];
      const auto sd = static_cast<std::size_t>(D);
      s.append({kv + h * D, sd}, {kv + C + h * D, sd});  // S += φ(k) vᵀ, z += φ(k)
      s.query({att_.data() + h * D, sd}, {q + h * D, sd});
    }
  }
  att.out_proj.forward(m_.p_, a1, att_.cview());  // a1 = att W_oᵀ + b_o
}

// The context the repetition penalty looks at is the model's: history keeps the last `context`
// tokens (trimmed in blocks, so memory stays bounded whatever n_tokens is).
template <class T>
void token_model_generate_stream(token_model<T>& m, std::span<const index> prompt, index n_tokens,
                                 const sampling& rule, std::uint64_t seed,
                                 const std::function<bool(index)>& emit, bool use_cache) {
  if (m.is_encoder_decoder()) throw std::invalid_argument("generate: needs a decoder-only model");
  if (prompt.empty()) throw std::invalid_argument("generate: the prompt is empty");
  rule.validate();
  if (n_tokens <= 0) return;
  const index V = m.config().vocab, C = m.config().context;
  generation_cache<T> gen(m, !use_cache);
  token_sampler sampler(V, rule, seed);
  std::vector<index> history(prompt.begin(), prompt.end());
  std::span<const T> z = gen.append(prompt);
  for (index step = 0; step < n_tokens; ++step) {
    const auto n = static_cast<index>(history.size());
    const std::span<const index> recent(history.data() + std::max<index>(0, n - C),
                                        static_cast<std::size_t>(std::min(n, C)));
    const index next = sampler.pick(z, recent);
    if (!emit(next)) return;
    history.push_back(next);
    if (static_cast<index>(history.size()) > 2 * C)
      history.erase(history.begin(), history.end() - C);
    if (step + 1 < n_tokens) z = gen.append(next);  // the last token needs no forward
  }
}

template <class T>
void token_model_generate_stream(token_model<T>& m, std::span<const index> prompt, index n_tokens,
                                 double temperature, index top_k, std::uint64_t seed,
                                 const std::function<void(index)>& emit, bool use_cache) {
  sampling rule;
  rule.temperature = temperature;
  rule.top_k = top_k;
  token_model_generate_stream<T>(
      m, prompt, n_tokens, rule, seed,
      [&](index id) {
        emit(id);
        return true;
      },
      use_cache);
}

template <class T>
std::vector<index> token_model_generate(token_model<T>& m, std::span<const index> prompt,
                                        index n_tokens, double temperature, index top_k,
                                        std::uint64_t seed, bool use_cache) {
  std::vector<index> out;
  token_model_generate_stream<T>(
      m, prompt, n_tokens, temperature, top_k, seed, [&](index id) { out.push_back(id); },
      use_cache);
  return out;
}

template class generation_cache<float>;
template class generation_cache<double>;
template std::vector<index> token_model_generate<float>(token_model<float>&, std::span<const index>,
                                                        index, double, index, std::uint64_t, bool);
template std::vector<index> token_model_generate<double>(token_model<double>&,
                                                         std::span<const index>, index, double,
                                                         index, std::uint64_t, bool);
template void token_model_generate_stream<float>(token_model<float>&, std::span<const index>, index,
                                                 double, index, std::uint64_t,
                                                 const std::function<void(index)>&, bool);
template void token_model_generate_stream<double>(token_model<double>&, std::span<const index>,
                                                  index, double, index, std::uint64_t,
                                                  const std::function<void(index)>&, bool);
template void token_model_generate_stream<float>(token_model<float>&, std::span<const index>, index,
                                                 const sampling&, std::uint64_t,
                                                 const std::function<bool(index)>&, bool);
template void token_model_generate_stream<double>(token_model<double>&, std::span<const index>,
                                                  index, const sampling&, std::uint64_t,
                                                  const std::function<bool(index)>&, bool);

}  // namespace kf::model
