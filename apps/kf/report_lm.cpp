// kf report's language-model section (seed 000's sentence): a word-level decoder's attention on
// "The cat sat on the mat.", every layer × head as a word × word map, the head-as-kernel rows,
// its validation perplexity and a sample. The model is models/lm_word.safetensors, or trained
// now with --full (explore/trained_demos.hpp).
#include <fmt/format.h>

#include <cmath>

#include "kernelformer/explore/trained_demos.hpp"
#include "report_sections.hpp"

namespace kf::cli {
namespace {

struct lm_shown {
  demo::lm_demo lm;
  std::string how;  // where the model came from, as HTML
};

lm_shown lm_trained_now() {
  progress_bar bar("language model (word tokens)");
  lm_shown s{demo::lm_demo_train([&](index it, index total) { bar.update(int(it), int(total)); }),
             ""};
  s.how = fmt::format("trained now: <code>{}</code>", demo::lm_demo_train_command());
  return s;
}

lm_shown lm_from_models(const std::string& dir) {
  const model::checkpoint ck = report_checkpoint(dir + "/lm_word.safetensors");
  lm_shown s;
  try {
    s.lm = demo::lm_demo_load(ck);
  } catch (const std::exception& e) {
    throw user_error(fmt::format("kf report: {}/lm_word.safetensors: {}", dir, e.what()));
  }
  s.how =
      fmt::format("the checkpoint <code>models/lm_word.safetensors</code>, made by <code>{}</code>",
                  esc(metadata_or(ck, "trained_by", "(not recorded)")));
  return s;
}

// One panel per layer × head: rows are queries, columns keys; the causal triangle is blank.
viz::heatmap lm_panel(const demo::sentence_attention& a, index l, index h) {
  const auto& w = a.weights[std::size_t(l * a.heads + h)];
  viz::heatmap hm;
  hm.title = fmt::format("layer {}, head {}", l + 1, h + 1);
  hm.xlabel = "key (attended to)";
  hm.ylabel = "query";
  hm.rows = int(w.rows());
  hm.cols = int(w.cols());
  hm.scale = "attention weight";
  hm.xticks = hm.yticks = a.labels;
  hm.width = 480;
  hm.height = 440;
  // The causal mask: keys after the query are not candidates — left blank (NaN), not 0.
  for (index i = 0; i < w.rows(); ++i)
    for (index j = 0; j < w.cols(); ++j) hm.values.push_back(j > i ? NAN : w(i, j));
  return hm;
}

// The maps' CSV: one row per (layer, head, query, key), the weight as the model's float.
std::string lm_csv(const demo::sentence_attention& a) {
  std::string csv = "layer,head,query,key,query_token,key_token,weight\n";
  for (index l = 0; l < a.layers; ++l)
    for (index h = 0; h < a.heads; ++h) {
      const auto& w = a.weights[std::size_t(l * a.heads + h)];
      for (index i = 0; i < w.rows(); ++i)
        for (index j = 0; j < w.cols(); ++j)
          csv += fmt::format("{},{},{},{},\"{}\",\"{}\",{}\n", l + 1, h + 1, i, j,
                             a.labels[std::size_t(i)], a.labels[std::size_t(j)], float(w(i, j)));
    }
  return csv;
}

// " \"mat\" is outside …" when the sentence has words outside the vocabulary, else "".
std::string unknown_note(const demo::sentence_attention& a) {
  if (a.unknown == 0) return "";
  std::string words;
  for (const auto& w : a.unknown_words)
    words.append(words.empty() ? "\"" : ", \"").append(w) += '"';
  return fmt::format(
      " {} is outside the model's 8,000-piece vocabulary and enters as &lt;unk&gt; (marked "
      "\"(unk)\").",
      esc(words));
}

}  // namespace

void report_language_model(viz::report& rep, report_context& ctx) {
  rep.section("lm", "Seed 000: a language model's attention on \"The cat sat on the mat.\"",
              "A decoder-only Transformer (tiny configuration: 2 layers, 2 heads, width 64, "
              "context 32) trained as a next-word predictor on the English text of Debian's "
              "fortunes package, with word tokens (GPT-2-style pieces, the 8,000 most frequent). "
              "Each head's weights over the sentence are one row of kernel smoothing per query, "
              "with the learned kernel exp(q·k/√D) under a causal mask.");
  lm_shown shown;
  try {
    shown = ctx.full ? lm_trained_now() : lm_from_models(ctx.models);
  } catch (const user_error&) {
    throw;
  } catch (const std::exception& e) {  // the corpus is missing
    rep.paragraph("Skipped: " + esc(e.what()));
    rep.end_section();
    return;
  }
  auto& lm = shown.lm;
  const auto a = demo::lm_sentence_attention(*lm.model, lm.tok, "The cat sat on the mat.");
  const auto t = static_cast<index>(a.labels.size());
  const auto pos = demo::linspace(0, double(t - 1), t);
  std::vector<viz::heatmap> panels;
  for (index l = 0; l < a.layers; ++l)
    for (index h = 0; h < a.heads; ++h) {
      panels.push_back(lm_panel(a, l, h));
      ctx.diag.push_back(demo::head_kernel_summarize(
          fmt::format("language model (word, {}), layer {} head {}", demo::kLmConfig, l + 1, h + 1),
          a.weights[std::size_t(l * a.heads + h)].cview(), pos, pos));
    }
  rep.grid("lm_attention", panels, int(a.heads),
           "attention on \"The cat sat on the mat.\" (word tokens, every layer × head)", lm_csv(a),
           fmt::format("Rows are queries, columns the keys they attend to, one cell per word; the "
                       "causal mask's upper triangle is left blank. Validation loss {} nats/word "
                       "(perplexity {}), {} s of training; the model is {}.{}",
                       num(lm.val_loss, 4), num(std::exp(lm.val_loss), 4), num(lm.seconds, 3),
                       shown.how, unknown_note(a)));
  ctx.summary.push_back(fmt::format(
      "Language model (word tokens) on \"The cat sat on the mat.\": validation perplexity {:.1f} "
      "after {:.0f} s of training",
      std::exp(lm.val_loss), lm.seconds));
  rep.paragraph("A sample (temperature 0.8, seed 0):");
  rep.pre(demo::lm_sample(*lm.model, lm.tok, "The", 60, 0.8, 0));
  rep.end_section();
}

}  // namespace kf::cli
