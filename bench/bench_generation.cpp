// Token generation speed: tokens/s of kf sample's loop with the cache (model/generation.hpp:
// kv-cache for exact kernels, recurrent state for feature-map kernels) beside full recompute (a
// forward over the whole window per token, the reference), in the same run.
// Model: the `small` LM preset (4 layers, 4 heads, width 128, FFN 512, pre-LN) with a context of
// 256 and a 65-token vocabulary (a character model), weights as initialized. One iteration
// generates 255 tokens greedily from a 1-token prompt: every position of the 256-token context,
// so recompute's per-token cost grows with the position and the cache's stays nearly flat.
// items_per_second = tokens/s.
//   build/release/bench/bench_generation
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "kernelformer/model/generation.hpp"
#include "kernelformer/model/lm_train.hpp"

namespace {

using kf::index;
constexpr index kContext = 256, kVocab = 65;

const char* kernel_text(int64_t k) {
  switch (k) {
    case 0:
      return "exp_dot";
    case 1:
      return "elu1";
    default:
      return "favor:features=128";
  }
}

void generation(benchmark::State& state) {
  auto cfg = kf::model::lm_preset_get("small").model;
  cfg.vocab = kVocab;
  cfg.context = kContext;
  cfg.block.kernel = kf::kernel_parse(kernel_text(state.range(0)));
  const bool cached = state.range(1) != 0;
  kf::model::token_model<float> m(cfg, 1);
  const std::vector<index> prompt = {1};
  const index n = kContext - 1;
  state.SetLabel(
      std::string(kernel_text(state.range(0))) + ", " +
      std::string(kf::model::generation_route_name(kf::model::generation_route_of(cfg, !cached))) +
      ", context 256");
  for (auto _ : state) {
    auto out = kf::model::token_model_generate(m, prompt, n, 0.0, 0, 1, cached);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
// Args: kernel (0 exp_dot, 1 elu1, 2 favor:features=128), cached (1) or recompute (0).
BENCHMARK(generation)
    ->ArgNames({"kernel", "cached"})
    ->ArgsProduct({{0, 1, 2}, {1, 0}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
