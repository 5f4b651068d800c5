// kf experiment periodic — every function × kernel × seed of seed 003's experiment in one table,
// beside the paper's numbers and the Nadaraya–Watson forecaster (attention with a fixed kernel
// over the training windows).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/lm_train.hpp"
#include "kernelformer/model/periodic_experiment.hpp"
#include "kernelformer/text/tokenizer.hpp"
#include "periodic_outputs.hpp"

namespace kf::cli {
namespace {

struct experiment_options {
  std::string config = "quick", functions = "sin,sin-exp,square", kernels = "exp_dot",
              seeds = "0,1,2", out;
  index epochs = 0, batch = 0;
  double lr = 0;
  bool norm_first = false, scale_inputs = false, cosine_lr = false, quiet = false;
  double dropout = -1;  // < 0: the configuration's (0.1)
};

double paper_mse(model::periodic_function f) {
  return f == model::periodic_function::sin       ? 0.0050
         : f == model::periodic_function::sin_exp ? 0.0085
                                                  : 0.0243;
}

struct cell {
  std::vector<double> rollout, teacher, epoch_s;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void run(const experiment_options& o) {
  std::vector<model::periodic_function> fns;
  std::vector<kernel_spec> kerns;
  std::vector<std::uint64_t> seeds;
  model::regressor_config base;
  try {
    for (const auto& f : split_list(o.functions, "--functions"))
      fns.push_back(model::periodic_function_parse(f));
    for (const auto& k : split_list(o.kernels, "--kernels")) kerns.push_back(kernel_parse(k));
    for (const auto& s : split_list(o.seeds, "--seeds")) seeds.push_back(std::stoull(s));
    base = model::periodic_config(o.config);
    base.block.norm_first = o.norm_first;
    base.scale_inputs = o.scale_inputs;
    if (o.dropout >= 0) base.block.dropout = o.dropout;
  } catch (const std::invalid_argument& e) {
    throw user_error(e.what());
  } catch (const std::out_of_range&) {
    throw user_error("--seeds: a seed is out of range");
  }
  if (o.epochs < 0) throw user_error("--epochs must be positive");
  if (o.batch < 0) throw user_error("--batch must be positive");
  if (o.dropout >= 1 || !std::isfinite(o.dropout))
    throw user_error(fmt::format("--dropout {}: expected a probability in [0, 1)", o.dropout));
  if (o.lr < 0 || !std::isfinite(o.lr)) throw user_error("--lr must be a positive number");
  if (!o.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out, ec);
    if (ec)
      throw user_error(fmt::format("--out {}: cannot create directory ({})", o.out, ec.message()));
  }
  model::train_options to;
  to.epochs = o.epochs > 0 ? o.epochs : (o.config == "quick" ? 20 : 100);
  const index default_batch = o.config == "quick" ? 64 : 512;
  const double default_lr = o.config == "quick" ? 3e-3 : 1e-3;
  to.batch = o.batch > 0 ? o.batch : default_batch;
  to.lr = o.lr > 0 ? o.lr : default_lr;
  to.cosine_lr = o.cosine_lr;

  const int total = int(fns.size() * kerns.size() * seeds.size());
  int done = 0;
  progress_bar bar("experiment");
  std::string setting = "faithful (post-LN, raw windows, constant lr)";
  std::vector<std::string> improvements;
  if (o.norm_first) improvements.emplace_back("pre-LN");
  if (o.scale_inputs) improvements.emplace_back("RMS-scaled windows");
  if (o.cosine_lr) improvements.emplace_back("warmup + cosine lr");
  if (to.batch != default_batch) improvements.emplace_back(fmt::format("batch {}", to.batch));
  if (to.lr != default_lr) improvements.emplace_back(fmt::format("lr {}", to.lr));
  if (o.dropout >= 0 && o.dropout != 0.1)
    improvements.emplace_back(fmt::format("dropout {}", o.dropout));
  if (!improvements.empty()) setting = fmt::format("improved ({})", fmt::join(improvements, ", "));
  std::string md = fmt::format(
      "Transformer: {} config, {}, {} epochs, batch {}, Adam lr {}.\n\n"
      "| function | paper | NW forecaster | NW, scaled windows (improved) | NW, rollout-validated "
      "h "
      "(improved) | kernel | rollout MSE median (min–max, {} seeds) | teacher-forced median | "
      "s/epoch |\n"
      "|---|---|---|---|---|---|---|---|---|\n",
      o.config, setting, to.epochs, to.batch, to.lr, seeds.size());
  io::atomic_writer w;  // table and per-function figures, committed together
  std::string csv =
      "function,paper,nw_rollout,nw_scaled_rollout,nw_rollout_validated_rollout,kernel,seed,"
      "rollout,teacher_forced,epoch_seconds\n";
  for (const auto fn : fns) {
    const auto data = model::periodic_make(fn);
    const auto nw = model::nw_forecaster_fit(data);
    const auto nwfc = model::periodic_forecast(
        data, [&](const std::vector<double>& win) { return nw.predict(win); });
    const auto nws = model::nw_forecaster_fit(data, true);
    const auto nwsfc = model::periodic_forecast(
        data, [&](const std::vector<double>& win) { return nws.predict(win); });
    const auto nwr = model::nw_forecaster_fit(data, false, model::nw_bandwidth_rule::rollout);
    const auto nwrfc = model::periodic_forecast(
        data, [&](const std::vector<double>& win) { return nwr.predict(win); });
    for (const auto& k : kerns) {
      cell c;
      for (const auto seed : seeds) {
        model::regressor_config cfg = base;
        cfg.block.kernel = k;
        model::sequence_regressor<float> m(cfg, seed);
        model::train_options t = to;
        t.seed = seed;
        const auto tr = model::train_regressor(m, data.train_x, data.train_y, t);
        const auto fc = model::periodic_forecast_model(data, m);
        if (!o.out.empty() && &k == &kerns.front() && seed == seeds.front()) {
          const std::string fname = model::periodic_function_name(fn);
          std::error_code ec;
          std::filesystem::create_directories(o.out + "/" + fname, ec);
          if (ec)
            throw user_error(fmt::format("--out {}/{}: cannot create directory ({})", o.out, fname,
                                         ec.message()));
          stage_periodic_outputs(w, o.out + "/" + fname, {fname, o.config, cfg, data, fc, tr}, m);
        }
        c.rollout.push_back(fc.mse_rollout);
        c.teacher.push_back(fc.mse_teacher_forced);
        c.epoch_s.push_back(median(tr.epoch_seconds));
        csv += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", model::periodic_function_name(fn),
                           paper_mse(fn), nwfc.mse_rollout, nwsfc.mse_rollout, nwrfc.mse_rollout,
                           kernel_format(k), seed, fc.mse_rollout, fc.mse_teacher_forced,
                           c.epoch_s.back());
        bar.update(++done, total);
      }
      md += fmt::format(
          "| {} | {} | {:.3g} | {:.3g} | {:.3g} (h {:.3g}) | {} | {:.3g} ({:.3g}–{:.3g}) | {:.3g} "
          "| "
          "{:.2f} |\n",
          model::periodic_function_name(fn), paper_mse(fn), nwfc.mse_rollout, nwsfc.mse_rollout,
          nwrfc.mse_rollout, nwr.bandwidth, kernel_format(k), median(c.rollout),
          *std::min_element(c.rollout.begin(), c.rollout.end()),
          *std::max_element(c.rollout.begin(), c.rollout.end()), median(c.teacher),
          median(c.epoch_s));
    }
  }
  if (!o.out.empty()) {
    w.stage(o.out + "/table.md", md);
    w.stage(o.out + "/table.csv", csv);
    w.commit();
  }
  if (o.quiet) return;
  fmt::print("kf experiment periodic\n\n{}", md);
  if (!o.out.empty())
    fmt::print(
        "\nwrote {0}/table.md and table.csv; per function (first kernel, first seed): "
        "{0}/FUNCTION/prediction.png (Fig. 3), attention.png (Fig. 4), loss.png and their CSV\n",
        o.out);
}

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
    for (const auto& k : split_list(o.kernels, "--kernels")) kerns.push_back(kernel_parse(k));
  } catch (const std::invalid_argument& e) {
    throw user_error(e.what());
  }
  if (o.iters < 0) throw user_error("--iters must be positive");
  if (o.iters > 0) {
    p.iters = o.iters;
    p.warmup = std::min(p.warmup, std::max<index>(1, o.iters / 10));
  }
  p.eval_every = p.iters;
  if (!o.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out, ec);
    if (ec)
      throw user_error(fmt::format("--out {}: cannot create directory ({})", o.out, ec.message()));
  }
  std::string text;
  try {
    text = o.corpus.empty() ? model::lm_default_corpus() : io::read_file(o.corpus);
  } catch (const std::exception& e) {
    throw user_error(e.what());
  }
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
    io::atomic_writer w;
    w.stage(o.out + "/table.md", md);
    w.stage(o.out + "/table.csv", csv);
    w.commit();
  }
  if (o.quiet) return;
  fmt::print("kf experiment lm: {} config, {} tokens, {} iterations, seed {}\n\n{}", o.config,
             o.tokenizer, p.iters, o.seed, md);
  if (!o.out.empty()) fmt::print("\nwrote {}/table.md and table.csv\n", o.out);
}

}  // namespace

void add_experiment(CLI::App& app) {
  CLI::App* ex = app.add_subcommand(
      "experiment",
      "Run an experiment grid: periodic (seed 003) or lm (kernels on a language model)");
  ex->require_subcommand(1);
  auto o = std::make_shared<experiment_options>();
  CLI::App* sub = ex->add_subcommand(
      "periodic",
      "Every function x kernel x seed, one table beside the paper and the NW forecaster");
  sub->add_option("--config", o->config, "quick | code | paper")->capture_default_str();
  sub->add_option("--functions", o->functions, "comma-separated: sin, sin-exp, square")
      ->capture_default_str();
  sub->add_option("--kernels", o->kernels,
                  "comma-separated attention kernels, e.g. exp_dot,gaussian:h=2,periodic,linear")
      ->capture_default_str();
  sub->add_option("--seeds", o->seeds, "comma-separated seeds")->capture_default_str();
  sub->add_option("--epochs", o->epochs, "epochs per run (default: 20 quick, 100 otherwise)");
  sub->add_option("--batch", o->batch,
                  "batch size (default: 64 quick, 512 otherwise; another size is an improvement "
                  "option: more, smaller steps per epoch)");
  sub->add_option("--lr", o->lr,
                  "Adam learning rate (default: 3e-3 quick, 1e-3 otherwise; another rate is an "
                  "improvement option)");
  sub->add_flag("--pre-ln", o->norm_first, "pre-LN blocks (an improvement option)");
  sub->add_flag("--scale-inputs", o->scale_inputs,
                "RMS-scaled windows, prediction scaled back (an improvement option)");
  sub->add_flag("--cosine-lr", o->cosine_lr,
                "warmup over 5% of the steps, then cosine decay to 0 (an improvement option)");
  sub->add_option("--dropout", o->dropout,
                  "dropout probability (default: 0.1, as seed 003's code; another value is an "
                  "improvement option)")
      ->check(CLI::Range(0.0, 0.999));
  sub->add_option("--out", o->out,
                  "directory: table.md, table.csv, FUNCTION/{prediction,attention,loss}.png|csv");
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->footer(
      "Example:\n"
      "  kf experiment periodic --config quick --kernels exp_dot,gaussian:h=2 --seeds 0,1,2 --out "
      "exp");
  sub->callback([o] { run(*o); });

  auto lo = std::make_shared<lm_experiment_options>();
  CLI::App* lm = ex->add_subcommand(
      "lm", "The language model with each attention kernel on the same budget: validation loss");
  lm->add_option("--corpus", lo->corpus, "text FILE (default: Debian's fortunes)");
  lm->add_option("--config", lo->config, "tiny | small")->capture_default_str();
  lm->add_option("--tokenizer", lo->tokenizer, "char | word")->capture_default_str();
  lm->add_option("--kernels", lo->kernels, "comma-separated attention kernels")
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
