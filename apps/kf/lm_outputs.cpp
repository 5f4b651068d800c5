// kf train lm's outputs (lm_outputs.hpp).
#include "lm_outputs.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common.hpp"
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

}  // namespace kf::cli
