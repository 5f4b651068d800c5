// kf experiment lm — the same language model, budget and batches with each attention kernel:
// validation loss, perplexity, training loss and speed in one table.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "common.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/lm_train.hpp"
#include "kernelformer/text/tokenizer.hpp"

namespace kf::cli {
namespace {

struct lm_experiment_options {
  std::string corpus, config = "tiny", tokenizer = "char",
                      kernels = "exp_dot,gaussian,laplacian,epanechnikov,linear", out;
  index iters = 0;
  std::uint64_t seed = 0;
  bool quiet = false;
};

// The same language model, budget and batches with each attention kernel: validation loss.
void run_lm(const lm_experiment_options& o) {
  model::lm_preset p;
  text::tokenizer_kind kind;
  std::vector<kernel_spec> kerns;
  try {
    p = model::lm_preset_get(o.config);
    kind = text::tokenizer_kind_parse(o.tokenizer);
    kerns = kernel_parse_list(o.kernels);  // "favor:features=128,seed=3,elu1": two kernels
  } catch (const std::invalid_argument& e) {
    throw user_error(e.what());
  }
  if (o.iters < 0) throw user_error("--iters must be positive");
  if (o.iters > 0) {
    p.iters = o.iters;
    p.warmup = std::min(p.warmup, std::max<index>(1, o.iters / 10));
  }
  p.eval_every = p.iters;  // one evaluation, at the end: the table compares final losses
  if (!o.out.empty()) check_output_dir(o.out, "--out");  // made when the table is written
  std::string text;
  try {
    text = o.corpus.empty() ? model::lm_default_corpus() : io::read_file(o.corpus);
  } catch (const std::exception& e) {
    throw user_error(e.what());
  }
  // The first 90% trains the tokenizer and the model, the rest gives the validation loss.
  const auto cut = text.size() * 9 / 10;
  const auto tok = text::tokenizer::train(kind, std::string_view(text).substr(0, cut));
  const auto train = tok.encode(std::string_view(text).substr(0, cut));
  const auto val = tok.encode(std::string_view(text).substr(cut));
  p.model.vocab = tok.size();
  if (static_cast<index>(train.size()) < p.model.context + 2)
    throw user_error("--corpus: too little text for the context");
  std::string md = fmt::format(
      "| kernel | validation loss | perplexity | train loss | tokens/s |\n|---|---|---|---|---|\n");
  std::string csv = "kernel,val_loss,val_perplexity,train_loss,tokens_per_second,seconds\n";
  progress_bar bar("experiment lm");
  int done = 0;
  const int total = int(kerns.size()) * int(p.iters);
  // Every kernel starts from the same seed: the same initialization and the same batches, so
  // the kernel is the only difference between the rows.
  for (const auto& k : kerns) {
    p.model.block.kernel = k;
    model::token_model<float> m(p.model, o.seed);
    const auto r = model::lm_train(m, train, val, p, o.seed,
                                   [&](index it, index, double, const model::lm_eval_point*) {
                                     bar.update(done + int(it), total);
                                   });
    done += int(p.iters);
    const auto& ev = r.evals.back();
    md += fmt::format("| {} | {:.4f} | {:.2f} | {:.4f} | {:.0f} |\n", kernel_format(k), ev.val_loss,
                      std::exp(ev.val_loss), ev.train_loss, r.tokens_per_second);
    csv += fmt::format("{},{},{},{},{},{}\n", kernel_format(k), ev.val_loss, std::exp(ev.val_loss),
                       ev.train_loss, r.tokens_per_second, r.seconds);
  }
  if (!o.out.empty()) {
    io::atomic_writer w{io::staging{.make_folders = true}};
    w.stage(o.out + "/table.md", md);
    w.stage(o.out + "/table.csv", csv);
    w.commit();
  }
  if (o.quiet) return;
  fmt::print("kf experiment lm: {} config, {} tokens, {} iterations, seed {}\n\n{}", o.config,
             o.tokenizer, p.iters, o.seed, md);
}

}  // namespace

void add_experiment_lm(CLI::App* ex) {
  auto lo = std::make_shared<lm_experiment_options>();
  CLI::App* lm = ex->add_subcommand(
      "lm", "The language model with each attention kernel on the same budget: validation loss");
  lm->add_option("--corpus", lo->corpus, "text FILE (default: Debian's fortunes)");
  lm->add_option("--config", lo->config, "tiny | small")->capture_default_str();
  lm->add_option("--tokenizer", lo->tokenizer, "char | word")->capture_default_str();
  lm->add_option("--kernels", lo->kernels,
                 "comma-separated attention kernels; an item key=value continues the kernel "
                 "before it: exp_dot,favor:features=128,seed=3,elu1")
      ->capture_default_str();
  lm->add_option("--iters", lo->iters, "iterations per kernel (default: the configuration's)");
  lm->add_option("--seed", lo->seed, "seed (same initialization and batches for every kernel)")
      ->capture_default_str();
  lm->add_option("--out", lo->out, "directory for table.md and table.csv");
  lm->add_flag("--quiet", lo->quiet, "print nothing on success");
  lm->footer(
      "Examples:\n"
      "  kf experiment lm --config tiny --kernels exp_dot,gaussian --out exp_lm\n"
      "  kf experiment lm --corpus book.txt --tokenizer word --iters 500 --out exp_book");
  lm->callback([lo] { run_lm(*lo); });
}

}  // namespace kf::cli
