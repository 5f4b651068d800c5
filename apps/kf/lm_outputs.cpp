// kf train lm's outputs (lm_outputs.hpp).
#include "lm_outputs.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/model/generation.hpp"
#include "kernelformer/viz/plot.hpp"

namespace kf::cli {

nlohmann::json lm_summary(const lm_run& r) {
  const model::lm_eval_point& last = r.tr.evals.back();
  nlohmann::json js;
  js["corpus"] = r.corpus;
  js["corpus_bytes"] = r.corpus_bytes;
  js["tokenizer"] = r.tokenizer;
  js["vocab"] = r.tok.size();
  js["train_tokens"] = r.train_tokens;
  js["val_tokens"] = r.val_tokens;
  js["val_unknown_tokens"] = r.val_unknown;
  js["config"] = r.config;
  js["kernel"] = kernel_format(r.preset.model.block.kernel);
  js["seed"] = r.seed;
  js["iters"] = r.preset.iters;
  js["batch"] = r.preset.batch;
  js["context"] = r.preset.model.context;
  js["parameters"] = r.parameters;
  js["final_train_loss"] = last.train_loss;
  js["val_loss"] = last.val_loss;
  js["val_perplexity"] = std::exp(last.val_loss);
  js["train_seconds"] = r.tr.seconds;
  js["tokens_per_second"] = r.tr.tokens_per_second;
  // What this rank handed to MPI (its gradient all-reduces) and the wall time inside MPI.
  add_mpi_summary(js);
  for (const auto& ev : r.tr.evals)
    js["evals"].push_back({{"iter", ev.iter},
                           {"train_loss", ev.train_loss},
                           {"val_loss", ev.val_loss},
                           {"seconds", ev.seconds}});
  return js;
}

void stage_lm_outputs(io::atomic_writer& w, const std::string& dir, const lm_run& r,
                      const nlohmann::json& summary, const std::string& sample) {
  const model::lm_train_result& tr = r.tr;
  std::string csv = "iter,train_loss\n";
  for (std::size_t i = 0; i < tr.losses.size(); ++i)
    csv += fmt::format("{},{}\n", i + 1, tr.losses[i]);
  w.stage(dir + "/loss.csv", csv);
  std::string ecsv = "iter,train_loss,val_loss,seconds\n";
  for (const auto& ev : tr.evals)
    ecsv += fmt::format("{},{},{},{}\n", ev.iter, ev.train_loss, ev.val_loss, ev.seconds);
  w.stage(dir + "/eval.csv", ecsv);
  viz::figure f;
  f.title =
      fmt::format("language model ({} config, {} tokens): cross-entropy", r.config, r.tokenizer);
  f.xlabel = "iteration";
  f.ylabel = "loss (nats/token)";
  viz::series ls{viz::series::kind::line, {}, tr.losses, {}, "train (batch)", viz::kBlue, 1, 0.6};
  for (std::size_t i = 0; i < tr.losses.size(); ++i) ls.x.push_back(double(i + 1));
  viz::series vs{viz::series::kind::line, {}, {}, {}, "validation", viz::kRed, 2.5, 1};
  viz::series vp{viz::series::kind::points, {}, {}, {}, "", viz::kRed, 4, 1};
  for (const auto& ev : tr.evals) {
    vs.x.push_back(double(ev.iter)), vs.y.push_back(ev.val_loss);
    vp.x.push_back(double(ev.iter)), vp.y.push_back(ev.val_loss);
  }
  f.data = {ls, vs, vp};
  w.stage(dir + "/loss.png", viz::render(f, viz::image_format::png));
  w.stage(dir + "/loss.svg", viz::render(f, viz::image_format::svg));
  w.stage(dir + "/summary.json", summary.dump(2) + "\n");
  w.stage(dir + "/sample.txt", sample + "\n");
}

std::string write_lm_outputs(const lm_run& r, model::token_model<float>& m, const train_files& f,
                             const std::map<std::string, std::string>& run,
                             const lm_final_state& last) {
  const nlohmann::json js = lm_summary(r);
  auto md = r.preset.model.to_metadata();
  r.tok.to_metadata(md);
  md["corpus"] = r.corpus;
  md["val_loss"] = fmt::format("{:.6g}", r.tr.evals.back().val_loss);
  md["trained_by"] = run_command("kf train lm", run);
  md["train_seconds"] = fmt::format("{:.1f}", r.tr.seconds);

  io::atomic_writer w{io::staging{.make_folders = true}};  // folders made, or removed on a failure
  md.insert(last.metadata.begin(), last.metadata.end());
  if (!f.save.empty()) w.stage(f.save, model::checkpoint_encode(m.params(), md, last.tensors));
  if (!f.summary.empty()) w.stage(f.summary, js.dump(2) + "\n");
  std::string sample;
  if (!f.out.empty()) {
    const std::string prompt = r.tok.kind() == text::tokenizer_kind::character ? "The " : "The";
    const auto gen = model::token_model_generate(m, r.tok.encode(prompt), 300, 0.8, 0, r.seed);
    sample = prompt + r.tok.decode(gen);
    stage_lm_outputs(w, f.out, r, js, sample);
  }
  w.commit();
  return sample;
}

void print_lm_start(const lm_run& r) {
  const model::lm_preset& p = r.preset;
  fmt::print(
      "kf train lm: {} ({} bytes; {} train / {} validation tokens, {} tokenizer, vocabulary {})\n"
      "  {} config: {} layers, {} heads, width {}, context {}, {} parameters, kernel {}; "
      "{} iterations of batch {}{}\n"
      "  evaluation every {} iterations: {} windows of {} tokens each for the train and the "
      "validation loss (--eval-iters; {:.1f}x a training step's tokens, forward only)\n",
      r.corpus, r.corpus_bytes, r.train_tokens, r.val_tokens, r.tokenizer, r.tok.size(), r.config,
      p.model.decoder_layers, p.model.block.heads, p.model.block.d_model, p.model.context,
      r.parameters, kernel_describe(p.model.block.kernel), p.iters, p.batch,
      dist::size() > 1 ? fmt::format(", data-parallel over {} MPI ranks", dist::size()) : "",
      p.eval_every, p.eval_windows, p.model.context,
      2.0 * double(p.eval_windows) / double(std::max<index>(1, p.batch)));
}

void print_lm_result(const lm_run& r, const std::string& save, const std::string& out,
                     const std::string& sample) {
  const model::lm_eval_point& last = r.tr.evals.back();
  if (std::isnan(last.val_loss))
    fmt::print("train loss {:.4f} (no validation text); {:.1f} s, {:.0f} tokens/s\n",
               last.train_loss, r.tr.seconds, r.tr.tokens_per_second);
  else
    fmt::print(
        "validation loss {:.4f} (perplexity {:.2f}), train loss {:.4f}; {:.1f} s, {:.0f} "
        "tokens/s\n",
        last.val_loss, std::exp(last.val_loss), last.train_loss, r.tr.seconds,
        r.tr.tokens_per_second);

  if (save.empty() && out.empty())
    fmt::print(
        "nothing was kept: add --save MODEL.safetensors for the model (then kf sample), --out "
        "DIR for its curves and a sample\n");
  if (!out.empty()) fmt::print("sample:\n{}\n", sample);
}

}  // namespace kf::cli
