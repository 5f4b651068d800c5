// kernelformer/model/sequence_regressor.hpp — the sequence regressor (seed 003 §5) and the
// checkpoint metadata helpers shared with the token models.
//
// sequence_regressor (seed 003 §5, the periodic-function forecaster):
//   x (B, T) values → embed = Linear(1 → d_value) → [+ or ⧺] sinusoidal PE (T, d_pe) → dropout
//   → L encoder layers (post- or pre-LN, any kernel, optional causal mask)
//   → flatten (B, T·d) → head = Linear(T·d → 1) → ŷ (B);  loss = mean (ŷ − y)²
// With pe "add", d_value = d_pe = d_model; with "concat", d_value = d_model − d_pe.
// scale_inputs (an improvement option, not in seed 003): each window is divided by its RMS
// s = √(mean x² + 1e-12) before the embedding and the prediction is multiplied back by s,
// ŷ = s·f(x/s) — the network sees shapes, not amplitudes, so a growing amplitude (sin·exp)
// beyond the training range is followed instead of clipped.
// input_shift μ, input_scale σ (a series standardized by its training part,
// model/series_experiment.hpp): the model runs on z = (x − μ)/σ and answers ŷ = μ + σ·f(z), so a
// checkpoint takes raw values (kf predict) while the layers see standardized ones. Identity
// (0, 1) by default, and then absent from the metadata. Applied before the RMS scaling.
// level_inputs (kf train series on a trending series): each (standardized) window has its last
// value L subtracted before the RMS scaling and the embedding, and the prediction gets L back,
// ŷ = L + f(z − L): the network sees shapes and answers a change, so a level it never saw in
// training is followed. input_log: the model answers for log x (a series whose seasonal swing
// grows with its level): raw x > 0 → log x before the standardization, ŷ → exp ŷ after; set
// with the normalization after training (the model is trained on the transformed values).
// Parameter names follow PyTorch (embed.*, layers.{i}.self_attn.in_proj_weight, …, head.*).
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernelformer/nn/parameters.hpp"
#include "kernelformer/nn/transformer_layer.hpp"

namespace kf::model {

struct checkpoint;

// Metadata fields shared by the models' from_metadata: the activation (relu | gelu) and the
// attention kernel with its split, checked against the head dimension. Throw naming the field.
nn::activation checkpoint_metadata_activation(const std::map<std::string, std::string>& m);
kernel_spec checkpoint_metadata_kernel(const std::map<std::string, std::string>& m, index head_dim);
// A block's fields as metadata (d_model, heads, d_ff, dropout, activation, norm_first, kernel,
// kernel_split), added to m; and back, every field checked (ranges, heads dividing d_model, the
// kernel against the head dimension), throwing std::runtime_error naming the field.
void block_config_to_metadata(const nn::block_config& b, std::map<std::string, std::string>& m);
nn::block_config block_config_from_metadata(const std::map<std::string, std::string>& m);

struct regressor_config {
  index seq_len = 99;
  index layers = 2;
  nn::block_config block;  // d_model, heads, d_ff, dropout, act, norm_first, kernel
  index pe_dim = 0;        // 0: d_model
  bool pe_concat = false;  // concatenate the PE instead of adding it
  bool causal = false;
  bool scale_inputs = false;
  bool level_inputs = false;
  double input_shift = 0, input_scale = 1;
  bool input_log = false;
  bool normalizes() const { return input_shift != 0 || input_scale != 1 || input_log; }
  std::map<std::string, std::string> to_metadata() const;
  // Every field checked (ranges, heads dividing d_model, the kernel); throws naming the field.
  static regressor_config from_metadata(const std::map<std::string, std::string>& m);
  std::string describe() const;  // "seq_len 99, layers 1, d_model 16, …" for messages
};

template <class T>
class sequence_regressor {
 public:
  // allocate = false: the parameters are registered (names and shapes) but no buffer is
  // allocated — enough to compare a checkpoint's tensor table before trusting its metadata.
  explicit sequence_regressor(const regressor_config& cfg, std::uint64_t seed = 0,
                              bool allocate = true);
  const regressor_config& config() const { return cfg_; }
  // Sets the config's input_shift and input_scale (finite, scale > 0; throws
  // std::invalid_argument): a model trained on standardized windows then takes raw ones.
  void set_input_normalization(double shift, double scale, bool log = false);
  nn::parameters<T>& params() { return p_; }
  const nn::parameters<T>& params() const { return p_; }

  // x: (B, T) → prediction (B). rng = nullptr: evaluation (no dropout).
  void forward(const_matrix_view<T> x, std::span<T> prediction, std::mt19937_64* rng);
  // After forward: accumulates parameter gradients of loss for d loss / d prediction.
  void backward(std::span<const T> dprediction);
  // Mean squared error of the last forward against y; fills dprediction = d MSE / d ŷ.
  static double mse(std::span<const T> prediction, std::span<const T> y, std::span<T> dprediction);
  // Attention weights (T, T) of layer l, head h, batch item b from the last forward.
  matrix<T> attention_weights(index layer, index head, index b) const;

 private:
  regressor_config cfg_;
  nn::parameters<T> p_;
  nn::linear<T> embed_, head_;
  std::vector<nn::transformer_layer<T>> layers_;
  matrix<T> pe_;
  // forward state
  index batch_ = 0;
  matrix<T> x_, e_, h0_;
  matrix<T> dcur_, dprev_, dh0_;  // backward scratch, kept across steps
  std::vector<T> scale_;          // per window: its RMS (scale_inputs), else empty
  std::vector<T> level_;          // per window: its last standardized value (level_inputs)
  std::vector<matrix<T>> acts_;   // layer inputs/outputs: acts_[l] is the input of layer l
  std::vector<typename nn::transformer_layer<T>::cache> caches_;
  nn::dropout::cache drop0_;
  typename nn::multi_head_attention<T>::shape shape_;
};

// A regressor from a checkpoint: the metadata checked (from_metadata), the tensor table compared
// with the shapes the metadata implies before any buffer is allocated, then the weights copied.
// Throws std::runtime_error naming the field or tensor.
std::unique_ptr<sequence_regressor<float>> sequence_regressor_load(const checkpoint& ck);

}  // namespace kf::model
