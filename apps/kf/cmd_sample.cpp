// kf sample — text from a trained language model, streamed token by token through the cached
// route; and load_lm (lm_load.hpp), which kf sample, kf attention, kf inspect and kf predict share.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/generation.hpp"
#include "kernelformer/model/sampling.hpp"
#include "lm_load.hpp"

namespace kf::cli {
namespace {

struct sample_options {
  std::string model, prompt = "The ";
  index tokens = 200, top_k = 0;
  double temperature = 0.8, top_p = 1.0, repetition_penalty = 1.0;
  std::vector<std::string> stop;
  std::uint64_t seed = 0;
  bool no_cache = false;
};

// The generated text on its way to stdout, held back by the longest --stop string less one
// character so that a stop string is never printed: push() returns false once the text ends with
// one (the text before it printed, the stop string dropped).
class stop_filter {
 public:
  explicit stop_filter(std::vector<std::string> stops) : stops_(std::move(stops)) {
    for (const auto& s : stops_) hold_ = std::max(hold_, s.size());
  }
  bool push(const std::string& piece) {
    pending_ += piece;
    for (const auto& s : stops_) {
      const auto at = pending_.find(s);
      if (at != std::string::npos) {
        emit(pending_.substr(0, at));
        pending_.clear();
        return false;
      }
    }
    if (pending_.size() >= hold_) {  // all but the last hold_ − 1 bytes cannot start a stop
      const std::size_t keep = hold_ == 0 ? 0 : hold_ - 1;
      emit(pending_.substr(0, pending_.size() - keep));
      pending_.erase(0, pending_.size() - keep);
    }
    return true;
  }
  void finish() { emit(pending_), pending_.clear(); }

 private:
  static void emit(const std::string& text) {
    if (text.empty()) return;
    fmt::print("{}", text);
    std::fflush(stdout);
  }
  std::vector<std::string> stops_;
  std::string pending_;
  std::size_t hold_ = 0;
};

// A --stop string as typed: \n, \t and \\ read as a newline, a tab and a backslash.
std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() &&
        (s[i + 1] == 'n' || s[i + 1] == 't' || s[i + 1] == '\\')) {
      out += s[i + 1] == 'n' ? '\n' : s[i + 1] == 't' ? '\t' : '\\';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

model::sampling sampling_of(const sample_options& o) {
  model::sampling rule;
  rule.temperature = o.temperature;
  rule.top_k = o.top_k;
  rule.top_p = o.top_p;
  rule.repetition_penalty = o.repetition_penalty;
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    throw user_error("--temperature must be >= 0 (0: greedy)");
  if (o.top_k < 0) throw user_error("--top-k must be >= 0 (0: all tokens)");
  if (!(o.top_p > 0 && o.top_p <= 1)) throw user_error("--top-p must be in (0, 1] (1: all)");
  if (!(o.repetition_penalty >= 1) || !std::isfinite(o.repetition_penalty))
    throw user_error("--repetition-penalty must be >= 1 (1: none)");
  for (const auto& s : o.stop)
    if (s.empty()) throw user_error("--stop: an empty stop string would stop at once");
  return rule;
}

void run_sample(const sample_options& o) {
  if (o.tokens < 0) throw user_error("--tokens must be >= 0");
  const model::sampling rule = sampling_of(o);
  loaded_lm lm = load_lm(o.model);
  if (o.prompt.empty()) throw user_error("--prompt is empty");
  index unknown = 0;
  const auto ids = lm.tok.encode(o.prompt, &unknown);
  if (unknown > 0)
    fmt::print(stderr, "kf: warning: {} piece(s) of the prompt are not in the vocabulary (<unk>)\n",
               unknown);
  // Streamed: each token is printed (and flushed) as it is drawn — held back only by the longest
  // --stop string — and nothing accumulates, so --tokens is bounded by time only (memory stays
  // at the model plus its context).
  fmt::print("{}", o.prompt);
  std::fflush(stdout);
  std::vector<std::string> stops;
  for (const auto& st : o.stop) stops.push_back(unescape(st));
  stop_filter out(stops);
  bool stopped = false;
  model::token_model_generate_stream<float>(
      *lm.model, ids, o.tokens, rule, o.seed,
      [&](index id) { return !(stopped = !out.push(lm.tok.decode({id}))); }, !o.no_cache);
  out.finish();
  if (stopped) fmt::print(stderr, "kf sample: stopped at a --stop string\n");
  fmt::print("\n");
  std::fflush(stdout);
  // The route on stderr, after the text (stdout stays the text alone).
  const auto& cfg = lm.model->config();
  const auto route = model::generation_route_of(cfg, o.no_cache);
  std::string how = route == model::generation_route::kv_cache ? "one row per token, keys cached"
                    : route == model::generation_route::recurrent
                        ? "one row per token, running sums"
                        : "a full forward per token";
  if (route != model::generation_route::recompute &&
      static_cast<index>(ids.size()) + o.tokens > cfg.context + 1)
    how += fmt::format("; past the context of {} every token is recomputed", cfg.context);
  fmt::print(stderr, "generation: {} ({}, {})\n", model::generation_route_name(route),
             kernel_describe(cfg.block.kernel), how);
}

}  // namespace

loaded_lm load_lm(const std::string& path, bool encoder_decoder) {
  require_extension(path, "--model", {".safetensors"});
  loaded_lm r;
  try {
    // The file, its metadata and the tensor table are checked before anything is allocated.
    const model::checkpoint ck = model::checkpoint_load(path);
    const auto cfg = model::token_model_config::from_metadata(ck.metadata);
    if (cfg.encoder_layers > 0 && !encoder_decoder)
      throw std::runtime_error(
          "this is an encoder-decoder model; sampling needs a language model (kf predict decodes "
          "kf train seq2seq models)");
    r.tok = text::tokenizer::from_metadata(ck.metadata);
    if (r.tok.size() != cfg.vocab)
      throw std::runtime_error(fmt::format(
          "the tokenizer has {} pieces but the metadata's 'vocab' is {}", r.tok.size(), cfg.vocab));
    r.model = model::token_model_load(ck);
    r.metadata = ck.metadata;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw user_error(what.rfind(path + ":", 0) == 0 ? "--model " + what
                                                    : fmt::format("--model {}: {}", path, what));
  }
  return r;
}

void add_sample(CLI::App& app) {
  auto o = std::make_shared<sample_options>();
  CLI::App* sub = app.add_subcommand("sample", "Generate text from a trained language model");
  sub->add_option("--model", o->model, "MODEL.safetensors from kf train lm")->required();
  sub->add_option("--prompt", o->prompt, "text to continue")->capture_default_str();
  sub->add_option("--tokens", o->tokens,
                  "tokens to generate (printed as they are drawn; memory does not grow with it)")
      ->capture_default_str();
  sub->add_option("--temperature", o->temperature, "softmax temperature (0: greedy)")
      ->capture_default_str();
  sub->add_option("--top-k", o->top_k, "sample among the k most likely (0: all)")
      ->capture_default_str();
  sub->add_option("--top-p", o->top_p,
                  "nucleus sampling: among the fewest most likely tokens holding this share of "
                  "the probability (1: all)")
      ->capture_default_str();
  sub->add_option("--repetition-penalty", o->repetition_penalty,
                  "divide the logits of tokens already in the context by this (CTRL's penalty; "
                  "1: none, 1.1–1.3 typical)")
      ->capture_default_str();
  sub->add_option(
      "--stop", o->stop,
      "stop when the text reaches this string (not printed; \\n and \\t read as a newline "
      "and a tab); repeat for several");
  sub->add_option("--seed", o->seed, "sampling seed (same seed, same text)")->capture_default_str();
  sub->add_flag(
      "--no-cache", o->no_cache,
      "recompute the whole context for every token (the reference; same tokens, slower) "
      "instead of the cache: a KV cache for exact kernels, running sums for elu1/rff/favor");
  sub->footer(
      "Generation is cached: each token runs one row through the layers (kv-cache for exact\n"
      "kernels, recurrent state for feature-map kernels); past the context the window slides and\n"
      "every token is a full recompute. The route is printed on stderr after the text.\n"
      "Examples:\n"
      "  kf sample --model lm.safetensors --prompt \"The \" --tokens 200 --temperature 0.8\n"
      "  kf sample --model lm.safetensors --prompt \"Once\" --temperature 0     # greedy\n"
      "  kf sample --model lm.safetensors --top-p 0.9 --repetition-penalty 1.2 --stop \"\\n\\n\"\n"
      "  kf sample --model lm.safetensors --prompt \"Once\" --temperature 0 --no-cache  # same "
      "text");
  sub->callback([o] { run_sample(*o); });
}

}  // namespace kf::cli
