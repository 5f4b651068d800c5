// libFuzzer target: the safetensors reader together with model construction from its metadata,
// as kf predict and kf sample load a --model: parse, then build the model the metadata names
// (a sequence regressor, or a token model and its tokenizer) and copy the weights in, then run
// one forward pass. A model whose metadata does not fit its tensors must be refused before
// anything large is allocated (run with -rss_limit_mb / -malloc_limit_mb to catch that).
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/sequence_regressor.hpp"
#include "kernelformer/model/token_model.hpp"
#include "kernelformer/text/tokenizer.hpp"

namespace {

void run_regressor(const kf::model::checkpoint& ck) {
  auto m = kf::model::sequence_regressor_load(ck);
  const kf::index t = m->config().seq_len;
  if (t > 4096) return;  // one short window is enough to exercise the loaded weights
  kf::matrix<float> x(1, t);
  for (kf::index j = 0; j < t; ++j) x(0, j) = static_cast<float>(j % 7) * 0.1f;
  float y = 0;
  m->forward(x.cview(), std::span<float>(&y, 1), nullptr);
}

void run_token_model(const kf::model::checkpoint& ck) {
  const auto tok = kf::text::tokenizer::from_metadata(ck.metadata);
  auto m = kf::model::token_model_load(ck);
  if (m->is_encoder_decoder() || tok.size() != m->config().vocab) return;
  const std::vector<kf::index> prompt = tok.encode("The ");
  (void)kf::model::token_model_generate<float>(*m, prompt, 2, 0.8, 0, 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  kf::fuzz::expect_clean([&] {
    const kf::model::checkpoint ck = kf::model::checkpoint_parse(bytes, "fuzz.safetensors");
    const auto kind = ck.metadata.find("kind");
    if (kind == ck.metadata.end()) return;
    if (kind->second == "sequence_regressor") run_regressor(ck);
    if (kind->second == "token_model") run_token_model(ck);
  });
  return 0;
}
