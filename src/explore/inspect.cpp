// A model's heads read as smoothers (explore/inspect.hpp).
#include "kernelformer/explore/inspect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace kf {
namespace {

matrix<double> to_double(const matrix<float>& w) {
  matrix<double> d(w.rows(), w.cols());
  std::copy(w.values().begin(), w.values().end(), d.values().begin());
  return d;
}

}  // namespace

double weights_trace(const_matrix_view<double> w) {
  double t = 0;
  for (index i = 0; i < std::min(w.rows, w.cols); ++i) t += w(i, i);
  return t;
}

head_inspection head_inspect(const_matrix_view<double> w, index layer, index head) {
  head_inspection h;
  h.layer = layer;
  h.head = head;
  h.queries = w.rows;
  h.keys = w.cols;
  std::vector<double> qx(static_cast<std::size_t>(w.rows)), kx(static_cast<std::size_t>(w.cols));
  std::iota(qx.begin(), qx.end(), 0.0);
  std::iota(kx.begin(), kx.end(), 0.0);
  h.fit = head_kernel_fit(w, qx, kx);
  h.df = weights_trace(w);
  return h;
}

model_inspection inspect_regressor(model::sequence_regressor<float>& m,
                                   std::span<const float> window,
                                   const inspect_progress& progress) {
  const model::regressor_config& cfg = m.config();
  if (static_cast<index>(window.size()) != cfg.seq_len)
    throw std::invalid_argument(fmt::format(
        "the input has {} values; the model takes windows of {}", window.size(), cfg.seq_len));
  model_inspection r;
  r.kind = "sequence_regressor";
  r.architecture =
      fmt::format("{}, kernel {}, {}, pe {}{}{}{}", cfg.describe(),
                  kernel_describe(cfg.block.kernel), cfg.block.norm_first ? "pre-LN" : "post-LN",
                  cfg.pe_concat ? "concat" : "add", cfg.causal ? ", causal" : "",
                  cfg.normalizes() ? fmt::format(", inputs standardized (mean {:.6g}, std {:.6g})",
                                                 cfg.input_shift, cfg.input_scale)
                                   : "",
                  cfg.scale_inputs ? ", RMS-scaled inputs" : "");
  r.parameters = m.params().count();
  float prediction = 0;
  m.forward(const_matrix_view<float>(window.data(), 1, cfg.seq_len),
            std::span<float>(&prediction, 1), nullptr);
  for (index l = 0; l < cfg.layers; ++l)
    for (index h = 0; h < cfg.block.heads; ++h) {
      const matrix<double> w = to_double(m.attention_weights(l, h, 0));
      r.heads.push_back(head_inspect(w.cview(), l, h));
      if (progress) progress(static_cast<int>(r.heads.size()), int(cfg.layers * cfg.block.heads));
    }
  return r;
}

model_inspection inspect_token_model(model::token_model<float>& m, std::span<const index> ids,
                                     const inspect_progress& progress) {
  const model::token_model_config& cfg = m.config();
  if (cfg.encoder_layers > 0)
    throw std::invalid_argument(
        "an encoder-decoder model: inspect reads decoder-only language models and regressors");
  if (ids.empty() || static_cast<index>(ids.size()) > cfg.context)
    throw std::invalid_argument(
        fmt::format("the input has {} tokens; the model takes 1..{}", ids.size(), cfg.context));
  model_inspection r;
  r.kind = "token_model";
  r.architecture = fmt::format("{}, kernel {}", cfg.describe(), kernel_describe(cfg.block.kernel));
  r.parameters = m.params().count();
  model::token_input in;
  in.t = static_cast<index>(ids.size());
  in.tokens = ids;
  m.forward(in, {}, nullptr);
  for (index l = 0; l < cfg.decoder_layers; ++l)
    for (index h = 0; h < cfg.block.heads; ++h) {
      const matrix<double> w =
          to_double(m.attention_weights(model::attention_site::decoder_self, l, h, 0));
      r.heads.push_back(head_inspect(w.cview(), l, h));
      if (progress)
        progress(static_cast<int>(r.heads.size()), int(cfg.decoder_layers * cfg.block.heads));
    }
  return r;
}

}  // namespace kf
