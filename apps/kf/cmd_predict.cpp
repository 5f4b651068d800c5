// kf predict — run a saved model (safetensors + its config in the metadata) on a batch.
#include <fmt/format.h>

#include <memory>

#include "common.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/sequence_regressor.hpp"

namespace kf::cli {
namespace {

struct predict_options {
  std::string model, input, out;
  index batch = 256;
  bool quiet = false;
};

void run(const predict_options& o) {
  require_extension(o.model, "--model", {".safetensors"});
  require_output(o.out, "--out", {".npy", ".csv"});
  if (o.batch < 1) throw user_error("--batch must be at least 1");
  // The file, its metadata and the tensor table are checked before anything is allocated.
  std::unique_ptr<model::sequence_regressor<float>> mp;
  try {
    const model::checkpoint ck = model::checkpoint_load(o.model);
    const auto kind = ck.metadata.count("kind") ? ck.metadata.at("kind") : std::string("?");
    if (kind != "sequence_regressor")
      throw std::runtime_error(
          fmt::format("model kind '{}' is not supported by kf predict (sequence_regressor)",
                      model::checkpoint_quote(kind)));
    mp = model::sequence_regressor_load(ck);
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    // checkpoint_parse names the file itself; metadata errors do not.
    throw user_error(what.rfind(o.model + ":", 0) == 0 ? what : o.model + ": " + what);
  }
  model::sequence_regressor<float>& m = *mp;
  const model::regressor_config& cfg = m.config();
  const loaded_array input = load_array(o.input, "--input");
  matrix<float> scratch;
  const const_matrix_view<float> x = input.as<float>(scratch);
  if (x.cols != cfg.seq_len)
    throw user_error(
        fmt::format("{} has {} columns; the model takes sequences of {} values (one "
                    "sequence per row)",
                    input.path, x.cols, cfg.seq_len));
  const index n = x.rows;
  matrix<float> y(n, 1);
  for (index i0 = 0; i0 < n; i0 += o.batch) {
    const index b = std::min(o.batch, n - i0);
    m.forward(x.block(i0, 0, b, cfg.seq_len),
              std::span<float>(y.data() + i0, static_cast<std::size_t>(b)), nullptr);
  }
  io::write_file_atomic(o.out, encode_output<float>(o.out, y.cview()));
  if (!o.quiet)
    fmt::print("kf predict: {} sequences of {} values -> wrote {}\n", n, cfg.seq_len, o.out);
}

}  // namespace

void add_predict(CLI::App& app) {
  auto o = std::make_shared<predict_options>();
  CLI::App* sub =
      app.add_subcommand("predict", "Run a saved model (.safetensors) on a batch of inputs");
  sub->add_option("--model", o->model, "MODEL.safetensors written by kf train")->required();
  sub->add_option("--input", o->input, "X.npy or X.csv: one input sequence per row")->required();
  sub->add_option("--out", o->out, "Y.npy or Y.csv: one prediction per row")->required();
  sub->add_option("--batch", o->batch, "sequences per forward pass")->capture_default_str();
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->footer("Example:\n  kf predict --model sin.safetensors --input windows.npy --out next.npy");
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
