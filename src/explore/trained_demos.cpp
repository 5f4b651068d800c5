#include "kernelformer/explore/trained_demos.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string_view>

#include "kernelformer/model/lm_train.hpp"

namespace kf::demo {
namespace {

// A checkpoint metadata entry, or the fallback when it is absent.
std::string metadata_or(const model::checkpoint& ck, const std::string& key,
                        const std::string& fallback) {
  const auto it = ck.metadata.find(key);
  return it == ck.metadata.end() ? fallback : it->second;
}

// Layer L, head 1 (seed 003 Fig. 4) on the test context (the last 99 training values).
matrix<double> last_layer_head1(model::sequence_regressor<float>& m,
                                const model::periodic_data& data) {
  matrix<float> ctx(1, model::periodic_data::kWindow);  // x: (B = 1, T = 99)
  for (index i = 0; i < ctx.cols(); ++i) ctx(0, i) = float(data.context[std::size_t(i)]);
  float p = 0;
  m.forward(ctx.cview(), std::span<float>(&p, 1), nullptr);  // evaluation: run for the weights
  const matrix<float> att = m.attention_weights(m.config().layers - 1, 0, 0);  // (T, T)
  matrix<double> a(att.rows(), att.cols());
  for (index i = 0; i < a.size(); ++i) a.data()[i] = att.data()[i];
  return a;
}

}  // namespace

std::unique_ptr<model::sequence_regressor<float>> periodic_train(
    const model::periodic_data& data, const model::periodic_setting& s, std::uint64_t seed,
    const model::epoch_callback& on_epoch) {
  auto m =
      std::make_unique<model::sequence_regressor<float>>(model::periodic_setting_config(s), seed);
  model::train_regressor(*m, data.train_x, data.train_y, model::periodic_setting_options(s, seed),
                         on_epoch);
  return m;
}

nw_baselines periodic_nw_baselines(const model::periodic_data& data, bool rollout_validated) {
  nw_baselines b;
  // Each forecaster is fitted once (its bandwidth search), then rolled out by periodic_forecast.
  const auto nw = model::nw_forecaster_fit(data);
  b.loo =
      model::periodic_forecast(data, [&](const std::vector<double>& w) { return nw.predict(w); });
  const auto nws = model::nw_forecaster_fit(data, true);  // scaled = true: RMS-scaled windows
  b.scaled =
      model::periodic_forecast(data, [&](const std::vector<double>& w) { return nws.predict(w); });
  if (!rollout_validated) return b;
  const auto nwr = model::nw_forecaster_fit(data, false, model::nw_bandwidth_rule::rollout);
  b.validated =
      model::periodic_forecast(data, [&](const std::vector<double>& w) { return nwr.predict(w); });
  b.validated_bandwidth = nwr.bandwidth;
  return b;
}

periodic_evaluation periodic_evaluate(const model::periodic_data& data,
                                      model::sequence_regressor<float>& m) {
  periodic_evaluation e;
  e.transformer = model::periodic_forecast_model(data, m);
  e.nw = periodic_nw_baselines(data, false);
  e.attention = last_layer_head1(m, data);
  return e;
}

double map_autocorrelation(const matrix<double>& a, index lag, bool along_keys) {
  // Sums over the overlap of the map and its shifted copy: x = a(i, j), y = a(i, j + lag) (keys)
  // or a(i + lag, j) (queries).
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, n = 0;
  for (index i = 0; i + (along_keys ? 0 : lag) < a.rows(); ++i)
    for (index j = 0; j + (along_keys ? lag : 0) < a.cols(); ++j) {
      const double x = a(i, j), y = along_keys ? a(i, j + lag) : a(i + lag, j);
      sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y, n += 1;
    }
  // One-pass moments: fine here, the weights are O(1) and the overlap at most 99 × 99.
  const double cov = sxy / n - sx / n * sy / n;
  const double vx = sxx / n - sx / n * sx / n, vy = syy / n - sy / n * sy / n;
  return vx > 0 && vy > 0 ? cov / std::sqrt(vx * vy) : NAN;
}

// Population standard deviation (divided by cols, not cols − 1).
std::vector<double> row_standardized(const matrix<double>& a) {
  std::vector<double> z(static_cast<std::size_t>(a.size()));
  for (index i = 0; i < a.rows(); ++i) {
    double m = 0, v = 0;
    for (index j = 0; j < a.cols(); ++j) m += a(i, j);
    m /= double(a.cols());
    for (index j = 0; j < a.cols(); ++j) v += (a(i, j) - m) * (a(i, j) - m);
    const double sd = std::sqrt(v / double(a.cols()));
    for (index j = 0; j < a.cols(); ++j)
      z[static_cast<std::size_t>(i * a.cols() + j)] = sd > 0 ? (a(i, j) - m) / sd : 0.0;
  }
  return z;
}

// The corpus split 90/10 by characters: the tokenizer and the training tokens from the first
// part, the validation loss from the rest.
lm_demo lm_demo_train(const std::function<void(index, index)>& progress) {
  const std::string text = model::lm_default_corpus();
  const auto cut = static_cast<std::size_t>(double(text.size()) * 0.9);
  lm_demo r;
  r.tok = text::tokenizer::train(text::tokenizer_kind::word, std::string_view(text).substr(0, cut));
  const auto train = r.tok.encode(std::string_view(text).substr(0, cut));
  const auto val = r.tok.encode(std::string_view(text).substr(cut));
  auto p = model::lm_preset_get(kLmConfig);
  // The iteration budget as kf train lm --iters sets it: warmup and evaluation scaled to it.
  p.iters = kLmIters;
  p.warmup = std::min(p.warmup, std::max<index>(1, kLmIters / 10));
  p.eval_every = std::min(p.eval_every, kLmIters);
  p.model.vocab = r.tok.size();
  r.model = std::make_unique<model::token_model<float>>(p.model, 0);  // seed 0, as the command
  const auto tr = model::lm_train(*r.model, train, val, p, 0,
                                  [&](index it, index total, double, const model::lm_eval_point*) {
                                    if (progress) progress(it, total);
                                  });
  r.val_loss = tr.evals.back().val_loss;  // the last evaluation, at the end of training
  r.seconds = tr.seconds;
  return r;
}

// Loss and time come from the metadata written at training; absent entries read as NaN.
lm_demo lm_demo_load(const model::checkpoint& ck) {
  lm_demo r;
  r.tok = text::tokenizer::from_metadata(ck.metadata);
  r.model = model::token_model_load(ck);
  r.val_loss = std::stod(metadata_or(ck, "val_loss", "nan"));
  r.seconds = std::stod(metadata_or(ck, "train_seconds", "nan"));
  return r;
}

std::string lm_demo_train_command() {
  return fmt::format("kf train lm --tokenizer word --config {} --iters {} --seed 0", kLmConfig,
                     kLmIters);
}

// "\xE2\x90\xA3" is U+2423 OPEN BOX (␣) in UTF-8. A piece that is one space stays " " → "␣".
std::string word_label(const std::string& piece) {
  std::string s = piece.starts_with(' ') && piece.size() > 1 ? piece.substr(1) : piece;
  std::string r;
  for (char c : s)
    r += c == ' ' ? std::string("\xE2\x90\xA3") : c == '\n' ? "\\n" : std::string(1, c);
  return r;
}

sentence_attention lm_sentence_attention(model::token_model<float>& m, const text::tokenizer& tok,
                                         const std::string& sentence) {
  sentence_attention r;
  const auto ids = tok.encode(sentence, &r.unknown);
  model::token_input in;
  in.t = static_cast<index>(ids.size());
  in.tokens = ids;
  m.forward(in, {}, nullptr);
  // Labels from the sentence's own pieces: a word outside the vocabulary keeps its text, marked,
  // instead of showing as <unk>.
  const auto pieces = tok.split(sentence);
  for (std::size_t k = 0; k < ids.size(); ++k) {
    // encode() gives one id per split() piece, so pieces[k] is token k's text; the size check
    // guards that pairing rather than assuming it.
    const bool unk = ids[k] == text::tokenizer::unk && pieces.size() == ids.size();
    r.labels.push_back(unk ? word_label(pieces[k]) + " (unk)" : word_label(tok.decode({ids[k]})));
    if (unk) r.unknown_words.push_back(word_label(pieces[k]));
  }
  const auto& cfg = m.config();
  r.layers = cfg.decoder_layers;
  r.heads = cfg.block.heads;
  // Every decoder self-attention head of the forward above: (T, T), rows summing to 1.
  for (index l = 0; l < r.layers; ++l)
    for (index h = 0; h < r.heads; ++h) {
      const auto w = m.attention_weights(model::attention_site::decoder_self, l, h, 0);
      matrix<double> wd(w.rows(), w.cols());
      for (index i = 0; i < w.size(); ++i) wd.data()[i] = w.data()[i];
      r.weights.push_back(std::move(wd));
    }
  return r;
}

std::string lm_sample(model::token_model<float>& m, const text::tokenizer& tok,
                      const std::string& prompt, index n, double temperature, std::uint64_t seed) {
  // top_k = 0: sample from the whole vocabulary. Returns only the new tokens, hence prompt +.
  const auto gen = model::token_model_generate(m, tok.encode(prompt), n, temperature, 0, seed);
  return prompt + tok.decode(gen);
}

}  // namespace kf::demo
