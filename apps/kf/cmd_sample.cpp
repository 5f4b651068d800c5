// kf sample — text from a trained language model, streamed token by token through the cached
// route; and load_lm (lm_load.hpp), which kf sample, kf attention, kf inspect and kf predict share.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <memory>

#include "common.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/generation.hpp"
#include "lm_load.hpp"

namespace kf::cli {
namespace {

struct sample_options {
  std::string model, prompt = "The ";
  index tokens = 200, top_k = 0;
  double temperature = 0.8;
  std::uint64_t seed = 0;
  bool no_cache = false;
};

void run_sample(const sample_options& o) {
  if (o.tokens < 0) throw user_error("--tokens must be >= 0");
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    throw user_error("--temperature must be >= 0 (0: greedy)");
  if (o.top_k < 0) throw user_error("--top-k must be >= 0 (0: all tokens)");
  loaded_lm lm = load_lm(o.model);
  if (o.prompt.empty()) throw user_error("--prompt is empty");
  index unknown = 0;
  const auto ids = lm.tok.encode(o.prompt, &unknown);
  if (unknown > 0)
    fmt::print(stderr, "kf: warning: {} piece(s) of the prompt are not in the vocabulary (<unk>)\n",
               unknown);
  // Streamed: each token is printed (and flushed) as it is drawn, and nothing accumulates, so
  // --tokens is bounded by time only (memory stays at the model plus its context).
  fmt::print("{}", o.prompt);
  std::fflush(stdout);
  model::token_model_generate_stream<float>(
      *lm.model, ids, o.tokens, o.temperature, o.top_k, o.seed,
      [&](index id) {
        fmt::print("{}", lm.tok.decode({id}));
        std::fflush(stdout);
      },
      !o.no_cache);
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
      "  kf sample --model lm.safetensors --prompt \"Once\" --temperature 0 --no-cache  # same "
      "text");
  sub->callback([o] { run_sample(*o); });
}

}  // namespace kf::cli
