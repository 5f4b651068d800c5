// kf attention — a language model's (or an encoder-decoder's) attention on a sentence: heatmaps
// of the decoder's self-attention (--out, --csv) or one bertviz-style HTML page of every site,
// layer and head (--html, viz/attention_html.hpp).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>
#include <stdexcept>

#include "common.hpp"
#include "kernelformer/explore/attention_html.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/kernels.hpp"
#include "kernelformer/viz/plot.hpp"
#include "lm_load.hpp"

namespace kf::cli {
namespace {

struct attention_options {
  std::string model, text, source, out, csv, html;  // text empty: lm_input_read's default
  index layer = 0, head = 0;                        // 1-based; 0: all
};

// --out (and --csv): the decoder's self-attention heatmaps, one panel per selected layer × head.
index stage_attention_heatmaps(io::atomic_writer& wr, const attention_options& o, loaded_lm& lm,
                               const lm_input& input) {
  const std::vector<index>& ids = input.ids;
  const std::vector<std::string>& labels = input.labels;
  const auto& cfg = lm.model->config();
  model::token_input in;
  in.t = static_cast<index>(ids.size());
  in.tokens = ids;
  lm.model->forward(in, {}, nullptr);
  std::vector<viz::heatmap> panels;
  std::string csv = "layer,head,query,key,query_token,key_token,weight\n";
  for (index l = 1; l <= cfg.decoder_layers; ++l)
    for (index h = 1; h <= cfg.block.heads; ++h) {
      if ((o.layer && l != o.layer) || (o.head && h != o.head)) continue;
      const matrix<float> w =
          lm.model->attention_weights(model::attention_site::decoder_self, l - 1, h - 1, 0);
      viz::heatmap hm;
      hm.title = fmt::format("layer {}, head {}", l, h);
      hm.xlabel = "key (attended to)";
      hm.ylabel = "query";
      hm.rows = static_cast<int>(w.rows());
      hm.cols = static_cast<int>(w.cols());
      hm.values.assign(w.values().begin(), w.values().end());
      hm.xticks = hm.yticks = labels;
      for (index i = 0; i < w.rows(); ++i)
        for (index j = 0; j < w.cols(); ++j)
          csv += fmt::format("{},{},{},{},\"{}\",\"{}\",{}\n", l, h, i, j, labels[std::size_t(i)],
                             labels[std::size_t(j)], w(i, j));
      panels.push_back(std::move(hm));
    }
  const std::string title =
      fmt::format("attention on \"{}\" ({})", input.text, kernel_describe(cfg.block.kernel));
  if (panels.size() == 1) {
    panels[0].title = title + ", " + panels[0].title;
    wr.stage(o.out, viz::render_for_path(panels[0], o.out));
  } else {
    for (auto& p : panels) p.width = 520, p.height = 480;
    wr.stage(o.out,
             viz::render_grid_for_path(panels, static_cast<int>(cfg.block.heads), title, o.out));
  }
  if (!o.csv.empty()) wr.stage(o.csv, csv);
  return static_cast<index>(panels.size());
}

// --html: the bertviz-style page (viz/attention_html.hpp) of every site, layer and head.
index stage_attention_html(io::atomic_writer& wr, const attention_options& o, loaded_lm& lm,
                           const lm_input& in) {
  const auto& cfg = lm.model->config();
  attention_view v;
  try {
    v = attention_view_collect(*lm.model, in.ids, in.labels, in.source, in.source_labels);
  } catch (const std::invalid_argument& e) {
    throw user_error(e.what());
  }
  v.title = fmt::format("attention of {}", std::filesystem::path(o.model).filename().string());
  v.detail = fmt::format("{}, kernel {}; text \"{}\" ({} tokens{})", cfg.describe(),
                         kernel_describe(cfg.block.kernel), in.text, in.ids.size(),
                         in.source.empty() ? "" : fmt::format("; source \"{}\"", in.source_text));
  wr.stage(o.html, attention_view_html(v));
  return static_cast<index>(v.sites.size());
}

void run_attention(const attention_options& o) {
  if (o.out.empty() && o.html.empty())
    throw user_error("--out (heatmap.png or heatmap.svg) or --html (view.html) is required");
  if (!o.out.empty()) require_output(o.out, "--out", {".png", ".svg"});
  if (!o.csv.empty()) {
    if (o.out.empty()) throw user_error("--csv goes with --out (the heatmaps' weights)");
    require_output(o.csv, "--csv", {".csv"});
  }
  if (!o.html.empty()) require_output(o.html, "--html", {".html"});
  loaded_lm lm = load_lm(o.model, true);  // encoder-decoder models: --html only
  const auto& cfg = lm.model->config();
  if (lm.model->is_encoder_decoder() && !o.out.empty())
    throw user_error(
        "--out draws a language model's heatmaps; for an encoder-decoder model use --html alone");
  if (o.layer < 0 || o.layer > cfg.decoder_layers)
    throw user_error(fmt::format("--layer {} is outside 1..{}", o.layer, cfg.decoder_layers));
  if (o.head < 0 || o.head > cfg.block.heads)
    throw user_error(fmt::format("--head {} is outside 1..{}", o.head, cfg.block.heads));
  lm_input in;
  try {
    in = lm_input_read(lm, o.text, o.source);
  } catch (const user_error& e) {
    throw user_error(fmt::format("--model {}: {}", o.model, e.what()));
  }
  io::atomic_writer wr;
  const index panels = o.out.empty() ? 0 : stage_attention_heatmaps(wr, o, lm, in);
  const index sites = o.html.empty() ? 0 : stage_attention_html(wr, o, lm, in);
  wr.commit();
  if (!o.out.empty())
    fmt::print("heatmaps: {} panel{}, {} tokens\n", panels, panels == 1 ? "" : "s", in.ids.size());
  if (!o.html.empty())
    fmt::print("attention page: {} attention site{} × {} layers × {} heads, {} tokens\n", sites,
               sites == 1 ? "" : "s", cfg.decoder_layers, cfg.block.heads, in.ids.size());
}

}  // namespace

void add_attention(CLI::App& app) {
  auto o = std::make_shared<attention_options>();
  CLI::App* sub = app.add_subcommand(
      "attention",
      "A language model's (or seq2seq model's) attention on a sentence: heatmaps, or a "
      "bertviz-style HTML page");
  sub->add_option("--model", o->model, "MODEL.safetensors from kf train lm or kf train seq2seq")
      ->required();
  sub->add_option("--text", o->text,
                  "the sentence (default: \"The cat sat on the mat.\"; a seq2seq model's decoder "
                  "text, default: its greedy output for --source); its first context tokens");
  sub->add_option("--layer", o->layer, "layer, from 1 (default: all layers)");
  sub->add_option("--head", o->head, "head, from 1 (default: all heads)");
  sub->add_option("--out", o->out, "heatmap.png | heatmap.svg");
  sub->add_option("--csv", o->csv, "also write every weight of --out as CSV");
  sub->add_option("--html", o->html,
                  "view.html: one self-contained page (no network) with a head view (hover a "
                  "token: lines to the tokens it attends to), a model view (every layer x head) "
                  "and each head read as a kernel (shape, bandwidth, offset, R², df = tr W)");
  sub->add_option("--source", o->source,
                  "encoder-decoder models (--html): the encoder's text (--text is the decoder's; "
                  "default for kf train seq2seq models: the validation example they keep)");
  sub->footer(
      "--out or --html is required (or both); --layer/--head select --out's panels, the page "
      "holds them all.\nA text longer than the model's context keeps its first context tokens "
      "(as kf inspect does).\n"
      "Examples:\n"
      "  kf attention --model lm.safetensors --out cat.png                 # all layers x heads\n"
      "  kf attention --model lm.safetensors --layer 2 --head 1 --out l2h1.svg\n"
      "  kf attention --model models/lm_word.safetensors --text \"The cat sat on the mat.\" "
      "--html view.html\n"
      "  kf attention --model s2s.safetensors --source \"abc123\" --html s2s.html   # 3 sites");
  sub->callback([o] { run_attention(*o); });
}

}  // namespace kf::cli
