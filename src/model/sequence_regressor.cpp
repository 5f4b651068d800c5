// The sequence regressor (model/sequence_regressor.hpp) and the block-config metadata shared with
// the token model. Shapes: B windows (b in code), T = seq_len (t), C = d_model (d), dv the
// embedding's width (C, or C − pe_dim when the positional encoding is concatenated).
#include "kernelformer/model/sequence_regressor.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <utility>

#include "kernelformer/model/checkpoint.hpp"
#include "nn/elementwise.hpp"

#include "kernelformer/nn/embedding.hpp"

namespace kf::model {
namespace {

constexpr auto get = &checkpoint_metadata_get;

}  // namespace

nn::activation checkpoint_metadata_activation(const std::map<std::string, std::string>& m) {
  const std::string a = get(m, "activation");
  if (a != "relu" && a != "gelu")
    throw std::runtime_error(fmt::format(
        "checkpoint metadata 'activation' = '{}' is not relu or gelu", checkpoint_quote(a)));
  return nn::activation_parse(a);
}

kernel_spec checkpoint_metadata_kernel(const std::map<std::string, std::string>& m,
                                       index head_dim) {
  const std::string text = get(m, "kernel");
  kernel_spec k;
  try {
    if (text.size() > 200) throw std::invalid_argument("longer than 200 characters");
    k = kernel_parse(text);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("checkpoint metadata 'kernel' = '{}': {}",
                                         checkpoint_quote(text), checkpoint_quote(e.what())));
  }
  k.split = checkpoint_metadata_index(m, "kernel_split", 0, head_dim);
  if (k.is_product() != (k.split > 0) || (k.is_product() && k.split >= head_dim))
    throw std::runtime_error(
        fmt::format("checkpoint metadata 'kernel_split' = {} does not fit the kernel '{}' and head "
                    "dimension {}",
                    k.split, checkpoint_quote(text), head_dim));
  return k;
}

void block_config_to_metadata(const nn::block_config& b, std::map<std::string, std::string>& m) {
  m["d_model"] = std::to_string(b.d_model);
  m["heads"] = std::to_string(b.heads);
  m["d_ff"] = std::to_string(b.d_ff);
  m["dropout"] = fmt::format("{:.17g}", b.dropout);
  m["activation"] = b.act == nn::activation::relu ? "relu" : "gelu";
  m["norm_first"] = b.norm_first ? "true" : "false";
  m["kernel"] = kernel_format(b.kernel);
  m["kernel_split"] = std::to_string(b.kernel.split);
}

nn::block_config block_config_from_metadata(const std::map<std::string, std::string>& m) {
  nn::block_config b;
  b.d_model = checkpoint_metadata_index(m, "d_model", 1, index(1) << 16);
  b.heads = checkpoint_metadata_index(m, "heads", 1, b.d_model);
  if (b.d_model % b.heads != 0)
    throw std::runtime_error(fmt::format(
        "checkpoint metadata 'heads' = {} does not divide 'd_model' = {}", b.heads, b.d_model));
  b.d_ff = checkpoint_metadata_index(m, "d_ff", 1, index(1) << 20);
  b.dropout = checkpoint_metadata_double(m, "dropout", 0, 1, true);
  b.act = checkpoint_metadata_activation(m);
  b.norm_first = checkpoint_metadata_bool(m, "norm_first");
  b.kernel = checkpoint_metadata_kernel(m, b.d_model / b.heads);
  return b;
}

std::map<std::string, std::string> regressor_config::to_metadata() const {
  std::map<std::string, std::string> m = {{"kind", "sequence_regressor"},
                                          {"seq_len", std::to_string(seq_len)},
                                          {"layers", std::to_string(layers)},
                                          {"pe_dim", std::to_string(pe_dim)},
                                          {"pe_concat", pe_concat ? "true" : "false"},
                                          {"causal", causal ? "true" : "false"},
                                          {"scale_inputs", scale_inputs ? "true" : "false"}};
  block_config_to_metadata(block, m);
  if (normalizes()) {  // absent: identity (every checkpoint from before the option)
    m["input_shift"] = fmt::format("{:.17g}", input_shift);
    m["input_scale"] = fmt::format("{:.17g}", input_scale);
  }
  if (level_inputs) m["level_inputs"] = "true";  // absent: false (checkpoints before the option)
  if (input_log) m["input_log"] = "true";
  return m;
}

regressor_config regressor_config::from_metadata(const std::map<std::string, std::string>& m) {
  if (get(m, "kind") != "sequence_regressor")
    throw std::runtime_error("checkpoint holds a '" + checkpoint_quote(get(m, "kind")) +
                             "', not a sequence_regressor");
  regressor_config c;
  c.seq_len = checkpoint_metadata_index(m, "seq_len", 1, index(1) << 20);
  c.layers = checkpoint_metadata_index(m, "layers", 0, 1024);
  c.block = block_config_from_metadata(m);
  c.pe_dim = checkpoint_metadata_index(m, "pe_dim", 0, c.block.d_model);
  c.pe_concat = checkpoint_metadata_bool(m, "pe_concat");
  c.causal = checkpoint_metadata_bool(m, "causal");
  // Absent in checkpoints from before the option: raw windows.
  c.scale_inputs = m.count("scale_inputs") && checkpoint_metadata_bool(m, "scale_inputs");
  if (m.count("input_shift") || m.count("input_scale")) {
    c.input_shift = checkpoint_metadata_double(m, "input_shift", -1e300, 1e300);
    c.input_scale = checkpoint_metadata_double(m, "input_scale", 1e-300, 1e300);
  }
  c.level_inputs = m.count("level_inputs") && checkpoint_metadata_bool(m, "level_inputs");
  c.input_log = m.count("input_log") && checkpoint_metadata_bool(m, "input_log");
  return c;
}

std::string regressor_config::describe() const {
  return fmt::format("seq_len {}, layers {}, d_model {}, heads {}, d_ff {}, pe_dim {}", seq_len,
                     layers, block.d_model, block.heads, block.d_ff, pe_dim);
}

std::unique_ptr<sequence_regressor<float>> sequence_regressor_load(const checkpoint& ck) {
  const regressor_config cfg = regressor_config::from_metadata(ck.metadata);
  try {
    // Names and shapes first (nothing allocated), so a metadata that does not fit the tensors
    // costs nothing; then the model, whose size the tensors present now bound.
    checkpoint_check_shapes(ck, sequence_regressor<float>(cfg, 0, false).params(), cfg.describe());
    auto m = std::make_unique<sequence_regressor<float>>(cfg, 0);
    checkpoint_apply(ck, m->params());
    return m;
  } catch (const std::invalid_argument& e) {  // the layers' own checks
    throw std::runtime_error(fmt::format("checkpoint metadata ({}): {}", cfg.describe(), e.what()));
  }
}

template <class T>
sequence_regressor<T>::sequence_regressor(const regressor_config& cfg, std::uint64_t seed,
                                          bool allocate)
    : cfg_(cfg) {
  const index d = cfg.block.d_model;
  const index pe_dim = cfg.pe_dim > 0 ? cfg.pe_dim : d;  // 0 in the config: the full width
  if (!cfg.pe_concat && pe_dim != d)
    throw std::invalid_argument(fmt::format(
        "positional encoding of dimension {} cannot be added to width {}: use concatenation",
        pe_dim, d));
  if (cfg.pe_concat && pe_dim >= d)
    throw std::invalid_argument("a concatenated positional encoding must be narrower than d_model");
  if (cfg.seq_len < 1 || cfg.layers < 0)
    throw std::invalid_argument("bad sequence length or depth");
  cfg_.pe_dim = pe_dim;
  embed_ = nn::linear<T>(p_, "embed", 1, cfg.pe_concat ? d - pe_dim : d);  // (1 → dv)
  for (index l = 0; l < cfg.layers; ++l)
    layers_.emplace_back(p_, fmt::format("layers.{}", l), cfg.block, false, cfg.causal);
  head_ = nn::linear<T>(p_, "head", cfg.seq_len * d, 1);  // (T·C → 1): the flattened window
  if (!allocate) return;
  p_.finalize(seed);
  pe_ = nn::positional_sinusoidal<T>(cfg.seq_len, pe_dim);  // (T, pe_dim)
}

template <class T>
void sequence_regressor<T>::set_input_normalization(double shift, double scale, bool log) {
  if (!std::isfinite(shift) || !std::isfinite(scale) || !(scale > 0))
    throw std::invalid_argument(fmt::format(
        "input normalization: shift {} and scale {} (finite, scale > 0)", shift, scale));
  cfg_.input_shift = shift;
  cfg_.input_scale = scale;
  cfg_.input_log = log;
}

// x (B, T) → prediction (B); every intermediate is kept for backward (x_ after normalization and
// scaling, e_, h0_, each layer's input and cache, the dropout mask).
template <class T>
void sequence_regressor<T>::forward(const_matrix_view<T> x, std::span<T> prediction,
                                    std::mt19937_64* rng) {
  const index b = x.rows, t = cfg_.seq_len, d = cfg_.block.d_model, dv = embed_.out;
  if (x.cols != t)
    throw std::invalid_argument(
        fmt::format("model expects sequences of length {}, got {}", t, x.cols));
  if (static_cast<index>(prediction.size()) != b)
    throw std::invalid_argument("prediction size != batch");
  batch_ = b;
  shape_ = {b, t, t, {}};
  // Buffers keep their allocation across steps (the last batch of an epoch is smaller).
  x_.resize(b * t, 1);  // (B·T, 1): one scalar per position, the embedding's input
  scale_.assign(cfg_.scale_inputs ? static_cast<std::size_t>(b) : 0, T(1));
  level_.assign(cfg_.level_inputs ? static_cast<std::size_t>(b) : 0, T(0));
  const bool norm = cfg_.normalizes();
  const double mu = cfg_.input_shift, inv_sigma = 1.0 / cfg_.input_scale;
  for (index i = 0; i < b; ++i) {
    T* z = &x_(i * t, 0);  // the window, standardized when the model normalizes
    for (index j = 0; j < t; ++j) {
      const double v = cfg_.input_log ? std::log(double(x(i, j))) : double(x(i, j));
      z[j] = norm ? static_cast<T>((v - mu) * inv_sigma) : x(i, j);
    }
    if (cfg_.level_inputs) {  // z − L: the window's shape relative to its last value
      const T level = z[t - 1];
      level_[static_cast<std::size_t>(i)] = level;
      for (index j = 0; j < t; ++j) z[j] -= level;
    }
    if (!cfg_.scale_inputs) continue;
    double ss = 0;
    for (index j = 0; j < t; ++j) ss += double(z[j]) * double(z[j]);
    const double s = std::sqrt(ss / double(t) + 1e-12);
    scale_[static_cast<std::size_t>(i)] = static_cast<T>(s);
    const T inv = static_cast<T>(1.0 / s);
    for (index j = 0; j < t; ++j) z[j] *= inv;
  }
  e_.resize(b * t, dv);
  embed_.forward(p_, e_.view(), x_.cview());  // e = embed(x)  (B·T, dv)
  h0_.resize(b * t, d);                       // (B·T, C)
#pragma omp parallel for schedule(static) if (b * t * d >= (1 << 15))
  for (index r = 0; r < b * t; ++r) {
    const index pos = r % t;
    for (index i = 0; i < dv; ++i) h0_(r, i) = e_(r, i);
    for (index i = 0; i < cfg_.pe_dim; ++i) {
      if (cfg_.pe_concat)
        h0_(r, dv + i) = pe_(pos, i);  // h0 = [e, pe]
      else
        h0_(r, i) += pe_(pos, i);  // h0 = e + pe
    }
  }
  acts_.resize(static_cast<std::size_t>(cfg_.layers + 1));
  acts_[0].resize(b * t, d);
  nn::dropout{cfg_.block.dropout}.forward(acts_[0].view(), h0_.cview(), drop0_,
                                          rng);  // x = drop(h0)
  caches_.resize(static_cast<std::size_t>(cfg_.layers));
  for (index l = 0; l < cfg_.layers; ++l) {
    const auto lu = static_cast<std::size_t>(l);
    acts_[lu + 1].resize(b * t, d);  // x = layer(x)  (B·T, C)
    layers_[lu].forward(p_, acts_[lu + 1].view(), acts_[lu].cview(), {}, shape_, shape_,
                        caches_[lu], rng);
  }
  const matrix<T>& last = acts_.back();
  matrix_view<T> out(prediction.data(), b, 1);  // (B, 1); the last layer read as (B, T·C)
  head_.forward(p_, out, const_matrix_view<T>(last.data(), b, t * d));         // ŷ = head(flatten)
  for (std::size_t i = 0; i < scale_.size(); ++i) prediction[i] *= scale_[i];  // ŷ = s·f(x/s)
  for (std::size_t i = 0; i < level_.size(); ++i) prediction[i] += level_[i];  // ŷ = L + …
  if (norm)                                                                    // ŷ = μ + σ·f(z)
    for (T& p : prediction) p = static_cast<T>(mu + cfg_.input_scale * double(p));
  if (cfg_.input_log)
    for (T& p : prediction) p = static_cast<T>(std::exp(double(p)));
}

// The forward in reverse for d loss / d prediction (B), accumulating (+=) into the parameters'
// gradients (zeroed by the caller between steps). No gradient flows to the input x.
template <class T>
void sequence_regressor<T>::backward(std::span<const T> dprediction) {
  const index b = batch_, t = cfg_.seq_len, d = cfg_.block.d_model, dv = embed_.out;
  // Scratch kept across steps (dcur_ is overwritten by the head, the others accumulated into).
  kf::detail::workspace(dcur_, b * t, d, false);
  if (cfg_.input_log)
    throw std::logic_error("sequence_regressor: train on the log values; input_log is set after");
  std::vector<T> dscaled;  // d loss / d f = σ · s · d loss / d ŷ (the level L is data: no term)
  if (!scale_.empty() || cfg_.normalizes()) {
    dscaled.assign(dprediction.begin(), dprediction.end());
    for (std::size_t i = 0; i < dscaled.size(); ++i)
      dscaled[i] = static_cast<T>(double(dscaled[i]) * cfg_.input_scale *
                                  (scale_.empty() ? 1.0 : double(scale_[i])));
    dprediction = dscaled;
  }
  // ŷ = head(flatten): d flatten (B, T·C), the same buffer as (B·T, C)
  head_.backward(p_, matrix_view<T>(dcur_.data(), b, t * d),
                 const_matrix_view<T>(dprediction.data(), b, 1),
                 const_matrix_view<T>(acts_.back().data(), b, t * d), true);
  for (index l = cfg_.layers - 1; l >= 0; --l) {  // x = layer(x): dx (B·T, C), last layer first
    const auto lu = static_cast<std::size_t>(l);
    const matrix_view<T> dprev = kf::detail::workspace(dprev_, b * t, d, true);
    layers_[lu].backward(p_, dprev, {}, dcur_.cview(), {}, shape_, shape_, caches_[lu]);
    std::swap(dcur_, dprev_);
  }
  const matrix_view<T> dh0 = kf::detail::workspace(dh0_, b * t, d, true);
  nn::dropout{cfg_.block.dropout}.backward(dh0, dcur_.cview(), drop0_);  // x = drop(h0): dh0
  // h0 = [e, pe] or e + pe: de is dh0's first dv columns (pe has no parameters)
  embed_.backward(p_, {}, const_matrix_view<T>(dh0).block(0, 0, b * t, dv), x_.cview());
}

// mean (ŷ − y)² over the batch; dprediction (when not empty) = 2 (ŷ − y) / B.
template <class T>
double sequence_regressor<T>::mse(std::span<const T> prediction, std::span<const T> y,
                                  std::span<T> dprediction) {
  double s = 0;
  const double n = double(prediction.size());
  for (std::size_t i = 0; i < prediction.size(); ++i) {
    const double r = double(prediction[i]) - double(y[i]);
    s += r * r;
    if (!dprediction.empty()) dprediction[i] = static_cast<T>(2 * r / n);
  }
  return s / n;
}

template <class T>
matrix<T> sequence_regressor<T>::attention_weights(index layer, index head, index b) const {
  if (layer < 0 || layer >= cfg_.layers)
    throw std::out_of_range(fmt::format("layer {} is outside 0..{}", layer, cfg_.layers - 1));
  const auto lu = static_cast<std::size_t>(layer);
  return layers_[lu].self_attn.capture_weights(caches_[lu].att1, shape_, b, head);
}

template class sequence_regressor<float>;
template class sequence_regressor<double>;

}  // namespace kf::model
