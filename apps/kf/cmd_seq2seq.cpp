// kf train seq2seq — an encoder-decoder over characters (model/seq2seq.hpp) on a built-in task
// or a user's pairs; and kf predict's route for its checkpoints (greedy decoding).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "common.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/model/seq2seq.hpp"
#include "lm_load.hpp"
#include "seq2seq_outputs.hpp"
#include "train_options.hpp"

namespace kf::cli {
namespace {

struct seq2seq_options {
  std::string task = "reverse", pairs, config = "tiny", positions = "sinusoidal", save, summary,
              out;
  std::uint64_t seed = 0;
  index steps = 0, epochs = 0, batch = 0, examples = 10000, max_length = 10, validation = 500;
  double lr = 0;
  bool quiet = false;
};

struct seq2seq_data {
  std::vector<model::seq2seq_pair> train, val;
  std::optional<model::seq2seq_task> task;  // built-in tasks
  std::string name;                         // for messages and the summary
};

// --pairs FILE (every 10th pair held out) or --task (EXAMPLES training pairs, then VALIDATION).
seq2seq_data read_data(const seq2seq_options& o) {
  seq2seq_data d;
  try {
    if (!o.pairs.empty()) {
      const auto all = model::seq2seq_pairs_read(o.pairs);
      if (all.size() < 10)
        throw std::invalid_argument(fmt::format(
            "{}: {} pairs; at least 10 are needed (every 10th is held out for validation)", o.pairs,
            all.size()));
      for (std::size_t i = 0; i < all.size(); ++i)
        (i % 10 == 9 ? d.val : d.train).push_back(all[i]);
      d.name = o.pairs;
      return d;
    }
    model::seq2seq_task t = model::seq2seq_task_get(o.task);
    if (t.name == "reverse") t.max_length = o.max_length;
    auto all = model::seq2seq_task_pairs(t, o.examples + o.validation, o.seed);
    d.val.assign(all.begin() + o.examples, all.end());
    all.resize(static_cast<std::size_t>(o.examples));
    d.train = std::move(all);
    d.name = t.name == "reverse"
                 ? fmt::format("reverse (lengths {}..{})", t.min_length, t.max_length)
                 : "dates (YYYY-MM-DD -> D Month YYYY)";
    d.task = t;
  } catch (const std::invalid_argument& e) {
    throw user_error(o.pairs.empty() ? fmt::format("--task: {}", e.what())
                                     : fmt::format("--pairs {}", e.what()));
  }
  return d;
}

// The preset with the options' overrides; --epochs becomes steps over the training pairs.
model::seq2seq_preset make_preset(const seq2seq_options& o, index n_train) {
  model::seq2seq_preset p;
  try {
    p = model::seq2seq_preset_get(o.config);
  } catch (const std::invalid_argument& e) {
    throw user_error(fmt::format("--config: {}", e.what()));
  }
  if (o.batch > 0) p.batch = o.batch;
  if (o.steps > 0) p.steps = o.steps;
  const index per_step = std::min(p.batch, n_train);
  if (o.epochs > 0) p.steps = (o.epochs * n_train + per_step - 1) / per_step;
  if (o.lr > 0) p.lr = o.lr, p.min_lr = o.lr / 10;
  if (o.positions != "sinusoidal" && o.positions != "learned")
    throw user_error(
        fmt::format("--positions '{}': expected sinusoidal or learned", o.positions.substr(0, 40)));
  if (o.positions == "learned") p.model.learned_positions = true, p.model.embedding_std = 0.02;
  p.eval_every = std::min(p.eval_every, p.steps);
  p.eval_pairs = o.validation;
  return p;
}

void check_options(const seq2seq_options& o) {
  if (o.steps < 0 || o.epochs < 0 || o.batch < 0 || !(o.lr >= 0))
    throw user_error("--steps, --epochs, --batch and --lr must be positive");
  if (o.steps > 0 && o.epochs > 0) throw user_error("give --steps or --epochs, not both");
  if (o.examples < 1 || o.validation < 1)
    throw user_error("--examples and --validation must be at least 1");
  if (o.max_length < 3 || o.max_length > 64)
    throw user_error("--max-length must be in 3..64 (reverse: strings of 3 to max-length)");
  check_train_files({o.save, o.summary, o.out});
}

// Validation characters the training pairs never showed (<unk>); a warning says how many.
index count_unknown(const model::seq2seq_vocab& v, const std::vector<model::seq2seq_pair>& val) {
  index unknown = 0;
  for (const auto& q : val) {
    index us = 0, ut = 0;
    v.encode(q.source, &us), v.encode(q.target, &ut);
    unknown += us + ut;
  }
  if (unknown > 0)
    fmt::print(stderr,
               "kf: warning: {} character(s) of the validation pairs never occur in the training "
               "pairs (<unk>)\n",
               unknown);
  return unknown;
}

model::seq2seq_train_result train_seq2seq(model::token_model<float>& m,
                                          const model::seq2seq_vocab& v, const seq2seq_data& d,
                                          const model::seq2seq_preset& p, std::uint64_t seed) {
  progress_bar bar("training");
  double exact = NAN;
  return model::seq2seq_train(
      m, v, d.train, d.val, p, seed,
      [&](index step, index total, double loss, const model::seq2seq_eval* e) {
        if (e) exact = e->exact_match;
        bar.update(int(step), int(total),
                   std::isnan(exact) ? fmt::format("loss {:.3f}", loss)
                                     : fmt::format("loss {:.3f} exact {:.1f}%", loss, 100 * exact));
      });
}

// The checkpoint's metadata: the model, its characters, the data, the validation example kf
// inspect and kf attention default to, the final score and how the weights were made.
std::map<std::string, std::string> checkpoint_metadata(
    const seq2seq_options& o, const seq2seq_data& d, const model::seq2seq_preset& p,
    const model::seq2seq_vocab& v, const model::seq2seq_eval& fin, double train_seconds) {
  auto md = p.model.to_metadata();
  v.tok.to_metadata(md);
  md["seq2seq"] = "true";
  md["seq2seq_data"] = d.name;
  md["seq2seq_example"] = d.val[0].source;
  md["val_exact_match"] = fmt::format("{:.4f}", fin.exact_match);
  md["train_seconds"] = fmt::format("{:.1f}", train_seconds);
  md["trained_by"] =
      run_command("kf train seq2seq",
                  {{o.pairs.empty() ? "--task" : "--pairs", o.pairs.empty() ? o.task : o.pairs},
                   {"--config", o.config},
                   {"--steps", std::to_string(p.steps)},
                   {"--batch", std::to_string(p.batch)},
                   {"--lr", fmt::format("{:.17g}", p.lr)},
                   {"--seed", std::to_string(o.seed)}});
  return md;
}

void run_train(const seq2seq_options& o) {
  if (dist::size() > 1)
    throw mpi_refusal("kf train seq2seq runs in one process, not under mpirun (docs/scale-out.md)");
  check_options(o);
  const seq2seq_data d = read_data(o);
  model::seq2seq_preset p = make_preset(o, static_cast<index>(d.train.size()));
  const model::seq2seq_vocab v = model::seq2seq_vocab::build(d.train);
  std::vector<model::seq2seq_pair> all = d.train;
  all.insert(all.end(), d.val.begin(), d.val.end());
  model::seq2seq_configure(p, v, all);
  model::token_model<float> m(p.model, o.seed);
  const index unknown = count_unknown(v, d.val);
  if (!o.quiet)
    fmt::print(
        "kf train seq2seq: {} — {} train / {} validation pairs, vocabulary {}, context {}\n"
        "  {} config: {} + {} layers, {} heads, width {}, {} parameters; {} steps of batch {}\n",
        d.name, d.train.size(), d.val.size(), v.size(), p.model.context, o.config,
        p.model.encoder_layers, p.model.decoder_layers, p.model.block.heads, p.model.block.d_model,
        m.params().count(), p.steps, p.batch);
  seq2seq_run run;
  run.config = o.config, run.positions = o.positions, run.data = d.name, run.seed = o.seed;
  run.task = d.task, run.train_pairs = static_cast<index>(d.train.size()), run.val = &d.val;
  run.val_unknown = unknown;
  run.tr = train_seq2seq(m, v, d, p, o.seed);
  const model::seq2seq_eval fin = model::seq2seq_evaluate(m, v, d.val, &run.predictions);
  if (d.task)
    run.alignment = model::seq2seq_cross_alignment(
        m, v, *d.task,
        std::span(d.val).first(std::min<std::size_t>(kSeq2seqAlignmentPairs, d.val.size())));
  const nlohmann::json js = seq2seq_summary(run, p, fin, m.params().count());
  write_seq2seq_outputs(run, m, v, {o.save, o.summary, o.out},
                        checkpoint_metadata(o, d, p, v, fin, run.tr.seconds), js);
  if (!o.quiet) print_seq2seq_result(run, fin);
}

}  // namespace

void add_train_seq2seq(CLI::App* train) {
  auto o = std::make_shared<seq2seq_options>();
  CLI::App* sub = train->add_subcommand(
      "seq2seq", "Train an encoder-decoder over characters: reverse, dates, or your pairs");
  sub->add_option("--task", o->task,
                  "reverse (a string of 0-9a-z backwards) | dates (2024-03-07 -> 7 March 2024)")
      ->capture_default_str();
  sub->add_option("--pairs", o->pairs,
                  "PAIRS.tsv (source<TAB>target) or PAIRS.csv (source,target), one pair a line, "
                  "instead of --task; every 10th pair is held out for validation");
  sub->add_option("--config", o->config,
                  "tiny (2 + 2 layers, width 64) | small (3 + 3 layers, 4 heads, width 128)")
      ->capture_default_str();
  sub->add_option("--positions", o->positions,
                  "sinusoidal (seed 003's; reverse's cross-attention is the anti-diagonal) | "
                  "learned (GPT-style; as accurate, but the cross-attention aligns by content, not "
                  "position)")
      ->capture_default_str();
  sub->add_option("--steps", o->steps, "training steps (default: 1000 tiny, 3000 small)");
  sub->add_option("--epochs", o->epochs, "passes over the training pairs (instead of --steps)");
  sub->add_option("--batch", o->batch, "pairs per step (default 64)");
  sub->add_option("--lr", o->lr, "peak learning rate (default: 2e-3 tiny, 1e-3 small)");
  sub->add_option("--seed", o->seed, "seed for the task's pairs, initialization and batches")
      ->capture_default_str();
  sub->add_option("--examples", o->examples, "--task: training pairs generated")
      ->capture_default_str();
  sub->add_option("--validation", o->validation,
                  "--task: validation pairs generated (distinct from the training ones); the "
                  "evaluations during training read at most this many")
      ->capture_default_str();
  sub->add_option("--max-length", o->max_length, "reverse: the longest string (3..64)")
      ->capture_default_str();
  sub->add_option("--save", o->save, "MODEL.safetensors (config and characters in the metadata)");
  sub->add_option("--summary", o->summary, "SUMMARY.json: accuracy, loss, alignment, timing");
  sub->add_option("--out", o->out,
                  "directory: loss.csv/png/svg, eval.csv, accuracy.png, cross_attention.png/csv, "
                  "predictions.tsv, summary.json");
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->footer(
      "Examples:\n"
      "  kf train seq2seq --task reverse --save rev.safetensors --out runs/rev\n"
      "  kf train seq2seq --task dates --config small --save dates.safetensors\n"
      "  kf train seq2seq --pairs pairs.tsv --epochs 30 --save mine.safetensors\n"
      "  kf predict --model rev.safetensors --text \"hello42\"");
  sub->callback([o] { run_train(*o); });
}

}  // namespace kf::cli
