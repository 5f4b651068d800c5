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
                                     const inspect_progress& progress,
                                     std::span<const index> source) {
  const model::token_model_config& cfg = m.config();
  const bool encdec = m.is_encoder_decoder();
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
  model::token_input in;
  in.t = static_cast<index>(ids.size());
  in.tokens = ids;
  if (encdec) {
    in.s = static_cast<index>(source.size());
    in.src = source;
  }
  m.forward(in, {}, nullptr);
  using site = model::attention_site;
  std::vector<std::pair<site, index>> sites;  // (site, layers)
  if (encdec) sites.emplace_back(site::encoder_self, cfg.encoder_layers);
  sites.emplace_back(site::decoder_self, cfg.decoder_layers);
  if (encdec) sites.emplace_back(site::decoder_cross, cfg.decoder_layers);
  int total = 0;
  for (const auto& s : sites) total += int(s.second * cfg.block.heads);
  for (const auto& [where, layers] : sites)
    for (index l = 0; l < layers; ++l)
      for (index h = 0; h < cfg.block.heads; ++h) {
        const matrix<double> w = to_double(m.attention_weights(where, l, h, 0));
        r.heads.push_back(head_inspect(w.cview(), l, h));
        r.heads.back().site = where == site::encoder_self   ? "encoder_self"
                              : where == site::decoder_self ? "decoder_self"
                                                            : "decoder_cross";
        if (progress) progress(static_cast<int>(r.heads.size()), total);
      }
  return r;
}

}  // namespace kf
