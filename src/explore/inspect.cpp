// A model's heads read as smoothers (explore/inspect.hpp).
#include "kernelformer/explore/inspect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace kf {
namespace {

// The models run in float; the head-kernel fit and the trace take double weights.
matrix<double> to_double(const matrix<float>& w) {
  matrix<double> d(w.rows(), w.cols());
  std::copy(w.values().begin(), w.values().end(), d.values().begin());
  return d;
}

}  // namespace

double weights_trace(const_matrix_view<double> w) {
  double t = 0;
  for (index i = 0; i < std::min(w.rows, w.cols); ++i) t += w(i, i);  // W_ii: weight on itself
  return t;
}

// w: (T, S) normalized weights. Positions are the smoother's coordinates: query i sits at x = i,
// key j at x = j, so the fitted bandwidth and offset are in positions. site stays "self"; the
// token-model caller overwrites it.
head_inspection head_inspect(const_matrix_view<double> w, index layer, index head) {
  head_inspection h;
  h.layer = layer;
  h.head = head;
  h.queries = w.rows;
  h.keys = w.cols;
  std::vector<double> qx(static_cast<std::size_t>(w.rows)), kx(static_cast<std::size_t>(w.cols));
  std::iota(qx.begin(), qx.end(), 0.0);  // 0, 1, …, T − 1
  std::iota(kx.begin(), kx.end(), 0.0);  // 0, 1, …, S − 1
  h.fit = head_kernel_fit(w, qx, kx);
  h.df = weights_trace(w);
  return h;
}

// Throws std::invalid_argument, before running anything, when the window is not seq_len long.
model_inspection inspect_regressor(model::sequence_regressor<float>& m,
                                   std::span<const float> window,
                                   const inspect_progress& progress) {
  const model::regressor_config& cfg = m.config();
  if (static_cast<index>(window.size()) != cfg.seq_len)
    throw std::invalid_argument(fmt::format(
        "the input has {} values; the model takes windows of {}", window.size(), cfg.seq_len));
  model_inspection r;
  r.kind = "sequence_regressor";
  // Everything that changes what the weights mean: kernel, norm placement, how positions enter,
  // the mask, and the input scaling.
  r.architecture =
      fmt::format("{}, kernel {}, {}, pe {}{}{}{}", cfg.describe(),
                  kernel_describe(cfg.block.kernel), cfg.block.norm_first ? "pre-LN" : "post-LN",
                  cfg.pe_concat ? "concat" : "add", cfg.causal ? ", causal" : "",
                  cfg.normalizes() ? fmt::format(", inputs standardized (mean {:.6g}, std {:.6g})",
                                                 cfg.input_shift, cfg.input_scale)
                                   : "",
                  cfg.scale_inputs ? ", RMS-scaled inputs" : "");
  r.parameters = m.params().count();
  float prediction = 0;  // unused: the forward is run for the weights it leaves behind
  m.forward(const_matrix_view<float>(window.data(), 1, cfg.seq_len),  // x: (B = 1, T)
            std::span<float>(&prediction, 1), nullptr);               // nullptr: no dropout
  for (index l = 0; l < cfg.layers; ++l)
    for (index h = 0; h < cfg.block.heads; ++h) {
      const matrix<double> w = to_double(m.attention_weights(l, h, 0));  // (T, T), batch item 0
      r.heads.push_back(head_inspect(w.cview(), l, h));
      if (progress) progress(static_cast<int>(r.heads.size()), int(cfg.layers * cfg.block.heads));
    }
  return r;
}

model_inspection inspect_token_model(model::token_model<float>& m, std::span<const index> ids,
                                     const inspect_progress& progress,
                                     std::span<const index> source) {
  const model::token_model_config& cfg = m.config();
  const bool encdec = m.is_encoder_decoder();
  // Both sequences are checked before the forward, so a bad input throws with the model untouched.
  const auto check = [&](std::size_t n, const char* what) {
    if (n == 0 || static_cast<index>(n) > cfg.context)
      throw std::invalid_argument(
          fmt::format("the {} has {} tokens; the model takes 1..{}", what, n, cfg.context));
  };
  check(ids.size(), "input");
  if (encdec)
    check(source.size(), "source");
  else if (!source.empty())
    throw std::invalid_argument("a decoder-only model takes no source tokens");
  model_inspection r;
  r.kind = "token_model";
  r.architecture = fmt::format("{}, kernel {}", cfg.describe(), kernel_describe(cfg.block.kernel));
  r.parameters = m.params().count();
  model::token_input in;  // one batch item: tokens (T), and src (S) for an encoder–decoder
  in.t = static_cast<index>(ids.size());
  in.tokens = ids;
  if (encdec) {
    in.s = static_cast<index>(source.size());
    in.src = source;
  }
  m.forward(in, {}, nullptr);  // no targets (no loss), nullptr: evaluation mode
  using site = model::attention_site;
  std::vector<std::pair<site, index>> sites;  // (site, layers)
  if (encdec) sites.emplace_back(site::encoder_self, cfg.encoder_layers);
  sites.emplace_back(site::decoder_self, cfg.decoder_layers);
  if (encdec) sites.emplace_back(site::decoder_cross, cfg.decoder_layers);
  int total = 0;  // heads over every site, for the progress count
  for (const auto& s : sites) total += int(s.second * cfg.block.heads);
  for (const auto& [where, layers] : sites)
    for (index l = 0; l < layers; ++l)
      for (index h = 0; h < cfg.block.heads; ++h) {
        const matrix<double> w = to_double(m.attention_weights(where, l, h, 0));  // (T, S)
        r.heads.push_back(head_inspect(w.cview(), l, h));
        r.heads.back().site = where == site::encoder_self   ? "encoder_self"
                              : where == site::decoder_self ? "decoder_self"
                                                            : "decoder_cross";
        if (progress) progress(static_cast<int>(r.heads.size()), total);
      }
  return r;
}

}  // namespace kf
