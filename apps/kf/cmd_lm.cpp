// kf train lm — a small decoder-only language model (seed 000's next-word predictor) on
// Debian's fortunes or any text, checkpoints that resume exactly, data-parallel under mpirun.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/generation.hpp"
#include "kernelformer/model/lm_train.hpp"
#include "kernelformer/model/train_state.hpp"
#include "kernelformer/text/tokenizer.hpp"
#include "kernelformer/viz/plot.hpp"
#include "lm_load.hpp"
#include "lm_outputs.hpp"

namespace kf::cli {
namespace {

struct lm_options {
  std::string corpus, tokenizer = "char", config = "tiny", kernel = "exp_dot", save, summary, out;
  std::uint64_t seed = 0;
  index iters = 0, batch = 0, vocab = 8000;  // vocab: at most this many pieces, <unk> included
  double lr = 0, val_fraction = 0.1;
  bool quiet = false;
  std::string resume;  // a checkpoint written by --save-every
  index save_every = 0;
};

std::string read_corpus(const std::string& path) {
  std::string text;
  try {
    text = path.empty() ? model::lm_default_corpus() : io::read_file(path);
  } catch (const std::exception& e) {
    throw user_error(e.what());
  }
  if (text.empty()) throw user_error(fmt::format("--corpus {}: the file is empty", path));
  if (text.find('\0') != std::string::npos)
    throw user_error(fmt::format("--corpus {}: a NUL byte — this is not a text file", path));
  return text;
}

// The options that define a run (a resume must repeat them); the corpus by its size and an
// FNV-1a hash of its bytes, so a changed file is refused too.
std::map<std::string, std::string> lm_run_options(const lm_options& o, const model::lm_preset& p,
                                                  const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  std::map<std::string, std::string> run{
      {"--corpus", o.corpus.empty() ? "(fortunes)" : o.corpus},
      {"corpus bytes", std::to_string(text.size())},
      {"corpus hash", fmt::format("{:016x}", h)},
      {"--tokenizer", o.tokenizer},
      {"--config", o.config},
      {"--kernel", kernel_format(p.model.block.kernel)},
      {"--seed", std::to_string(o.seed)},
      {"--iters", std::to_string(p.iters)},
      {"--batch", std::to_string(p.batch)},
      {"--lr", fmt::format("{:.17g}", p.lr)},
      {"--val-fraction", fmt::format("{:.17g}", o.val_fraction)}};
  // --vocab only when not the default, so checkpoints from before the option still resume.
  if (o.vocab != 8000) run["--vocab"] = std::to_string(o.vocab);
  return run;
}

// --resume: the checkpoint's weights into m, its training state out.
model::train_state load_lm_resume(const std::string& path, model::token_model<float>& m,
                                  const std::map<std::string, std::string>& run) {
  require_extension(path, "--resume", {".safetensors"});
  try {
    const model::checkpoint ck = model::checkpoint_load(path);
    auto st = model::train_state_decode(ck, m.params().count());
    if (!st)
      throw std::runtime_error(
          "holds no training state (a final model: the checkpoints --save-every writes carry it)");
    model::train_state_check_run(*st, run);
    model::checkpoint_check_shapes(ck, m.params(), m.config().describe());
    model::checkpoint_apply(ck, m.params());
    return *st;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw user_error(what.rfind(path + ":", 0) == 0 ? "--resume " + what
                                                    : fmt::format("--resume {}: {}", path, what));
  }
}

// Every option checked (and every output path) before the corpus is read; the preset with the
// options that override it.
model::lm_preset lm_preset_of(const lm_options& o, text::tokenizer_kind& kind) {
  model::lm_preset p;
  try {
    p = model::lm_preset_get(o.config);
    p.model.block.kernel = kernel_parse(o.kernel);
    kind = text::tokenizer_kind_parse(o.tokenizer);
  } catch (const std::invalid_argument& e) {
    throw user_error(e.what());
  }
  if (o.iters < 0) throw user_error("--iters must be positive");
  if (o.batch < 0) throw user_error("--batch must be at least 1");
  if (o.lr < 0) throw user_error("--lr must be positive");
  if (o.vocab < 2 || o.vocab > 1000000)
    throw user_error(
        fmt::format("--vocab {}: expected 2 to 1,000,000 pieces (<unk> included)", o.vocab));
  if (o.save_every < 0) throw user_error("--save-every must be >= 1 (iterations)");
  if (o.save_every > 0 && o.save.empty())
    throw user_error("--save-every needs --save (the checkpoints are written there)");
  if ((o.save_every > 0 || !o.resume.empty()) && dist::size() > 1)
    throw user_error("--resume and --save-every run in one process, not under mpirun");
  if (!(o.val_fraction >= 0 && o.val_fraction < 0.9))
    throw user_error("--val-fraction must be in [0, 0.9)");
  if (o.iters > 0) {
    p.iters = o.iters;
    p.warmup = std::min(p.warmup, std::max<index>(1, o.iters / 10));
    p.eval_every = std::min(p.eval_every, std::max<index>(1, o.iters));
  }
  if (o.batch > 0) p.batch = o.batch;
  if (o.lr > 0) p.lr = o.lr, p.min_lr = o.lr / 10;
  if (!o.save.empty()) require_output_under(o.save, "--save", {".safetensors"}, o.out);
  if (!o.summary.empty()) require_output_under(o.summary, "--summary", {".json"}, o.out);
  // Checked now, created only when the outputs are staged (no empty folder after a failure).
  if (!o.out.empty()) check_output_dir(o.out, "--out");
  return p;
}

void run_train(const lm_options& o) {
  text::tokenizer_kind kind{};
  model::lm_preset p = lm_preset_of(o, kind);
  const std::string text = read_corpus(o.corpus);
  // Split on the text: the last val_fraction is validation; the vocabulary comes from training.
  const auto cut = static_cast<std::size_t>(double(text.size()) * (1.0 - o.val_fraction));
  const std::string_view train_text(text.data(), cut),
      val_text(text.data() + cut, text.size() - cut);
  const text::tokenizer tok = text::tokenizer::train(kind, train_text, 2, o.vocab);
  const std::vector<index> train = tok.encode(train_text);
  index val_unknown = 0;
  const std::vector<index> val = tok.encode(val_text, &val_unknown);
  p.model.vocab = tok.size();
  if (static_cast<index>(train.size()) < p.model.context + 2)
    throw user_error(fmt::format("--corpus: {} training tokens are too few for a context of {}",
                                 train.size(), p.model.context));
  model::token_model<float> m(p.model, o.seed);
  const std::string corpus_name = o.corpus.empty() ? "fortunes (Debian package)" : o.corpus;
  const auto run_opts = lm_run_options(o, p, text);
  model::train_state resumed;
  model::lm_checkpointing cp;
  std::vector<model::checkpoint_tensor> final_state;
  std::map<std::string, std::string> final_state_md;
  if (!o.resume.empty()) {
    resumed = load_lm_resume(o.resume, m, run_opts);
    cp.resume = &resumed;
  }
  cp.save_every = o.save_every;
  // Every save_every iterations: weights, tokenizer and training state, atomically to --save.
  cp.on_checkpoint = [&](const model::train_state& st) {
    model::train_state s = st;
    s.run = run_opts;
    auto md = p.model.to_metadata();
    tok.to_metadata(md);
    md["corpus"] = corpus_name;
    if (st.done == p.iters) {  // rides along with the final --save
      model::train_state_encode(s, final_state_md, final_state);
      return;
    }
    std::vector<model::checkpoint_tensor> extra;
    model::train_state_encode(s, md, extra);
    make_output_parent(o.save, "--save");
    io::write_file_atomic(o.save, model::checkpoint_encode(m.params(), md, extra));
  };
  if (!o.quiet && dist::is_root())
    fmt::print(
        "kf train lm: {} ({} bytes; {} train / {} validation tokens, {} tokenizer, vocabulary {})\n"
        "  {} config: {} layers, {} heads, width {}, context {}, {} parameters, kernel {}; "
        "{} iterations of batch {}{}\n",
        corpus_name, text.size(), train.size(), val.size(), o.tokenizer, tok.size(), o.config,
        p.model.decoder_layers, p.model.block.heads, p.model.block.d_model, p.model.context,
        m.params().count(), kernel_describe(p.model.block.kernel), p.iters, p.batch,
        dist::size() > 1 ? fmt::format(", data-parallel over {} MPI ranks", dist::size()) : "");
  model::lm_train_result tr;
  {
    progress_bar bar("training");
    double last_val = NAN;
    tr = model::lm_train(
        m, train, val, p, o.seed,
        [&](index it, index total, double loss, const model::lm_eval_point* ev) {
          if (ev) last_val = ev->val_loss;
          bar.update(int(it), int(total),
                     std::isnan(last_val) ? fmt::format("loss {:.3f}", loss)
                                          : fmt::format("loss {:.3f} val {:.3f}", loss, last_val));
        },
        mpi_data_parallel(), cp);
  }
  if (!dist::is_root()) return;  // every rank holds the same model: rank 0 writes
  const model::lm_eval_point& last = tr.evals.back();
  const lm_run run{corpus_name, text.size(),  o.tokenizer,        o.config,
                   tok,         train.size(), val.size(),         val_unknown,
                   p,           o.seed,       m.params().count(), tr};
  const nlohmann::json js = lm_summary(run);
  auto md = p.model.to_metadata();
  tok.to_metadata(md);
  md["corpus"] = corpus_name;
  md["val_loss"] = fmt::format("{:.6g}", last.val_loss);
  md["trained_by"] = run_command("kf train lm", run_opts);
  md["train_seconds"] = fmt::format("{:.1f}", tr.seconds);

  io::atomic_writer w;
  if (!o.out.empty()) make_output_dir(o.out, "--out");
  if (!o.save.empty()) make_output_parent(o.save, "--save");
  if (!o.summary.empty()) make_output_parent(o.summary, "--summary");
  md.insert(final_state_md.begin(), final_state_md.end());
  if (!o.save.empty()) w.stage(o.save, model::checkpoint_encode(m.params(), md, final_state));
  if (!o.summary.empty()) w.stage(o.summary, js.dump(2) + "\n");
  std::string sample;
  if (!o.out.empty()) {
    const std::string prompt = tok.kind() == text::tokenizer_kind::character ? "The " : "The";
    const auto gen = model::token_model_generate(m, tok.encode(prompt), 300, 0.8, 0, o.seed);
    sample = prompt + tok.decode(gen);
    stage_lm_outputs(w, o.out, run, js, sample);
  }
  w.commit();
  if (o.quiet) return;
  if (std::isnan(last.val_loss))
    fmt::print("train loss {:.4f} (no validation text); {:.1f} s, {:.0f} tokens/s\n",
               last.train_loss, tr.seconds, tr.tokens_per_second);
  else
    fmt::print(
        "validation loss {:.4f} (perplexity {:.2f}), train loss {:.4f}; {:.1f} s, {:.0f} "
        "tokens/s\n",
        last.val_loss, std::exp(last.val_loss), last.train_loss, tr.seconds, tr.tokens_per_second);
  if (!o.save.empty()) fmt::print("saved {}\n", o.save);
  if (!o.out.empty())
    fmt::print("wrote {}/ (loss.csv/png/svg, eval.csv, sample.txt, summary.json)\nsample:\n{}\n",
               o.out, sample);
}

}  // namespace

void add_train_lm(CLI::App* train) {
  auto o = std::make_shared<lm_options>();
  CLI::App* sub = train->add_subcommand(
      "lm", "Train a small decoder-only language model (character or word tokens)");
  sub->add_option("--corpus", o->corpus,
                  "text FILE (default: the English text of Debian's 'fortunes' package)");
  sub->add_option("--tokenizer", o->tokenizer, "char | word")->capture_default_str();
  sub->add_option("--vocab", o->vocab,
                  "the word tokenizer's largest vocabulary, <unk> included: the most frequent "
                  "pieces seen at least twice (char keeps every byte seen)")
      ->capture_default_str();
  sub->add_option("--config", o->config,
                  "tiny (2 layers, width 64, context 32) | small (nanoGPT's CPU Shakespeare: 4 "
                  "layers, 4 heads, width 128, context 64)")
      ->capture_default_str();
  sub->add_option("--kernel", o->kernel, "attention kernel: exp_dot, gaussian:h=…, …")
      ->capture_default_str();
  sub->add_option("--iters", o->iters, "iterations (default: 400 tiny, 2000 small)");
  sub->add_option("--batch", o->batch, "batch size (default: 16 tiny, 12 small)");
  sub->add_option("--lr", o->lr, "peak learning rate (default: 2e-3 tiny, 1e-3 small)");
  sub->add_option("--val-fraction", o->val_fraction, "the end of the text held out")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "seed for initialization and batches")->capture_default_str();
  sub->add_option("--save", o->save, "MODEL.safetensors (config and tokenizer in the metadata)");
  sub->add_option("--summary", o->summary, "SUMMARY.json: val_loss, val_perplexity, tokens/s, …");
  sub->add_option("--out", o->out,
                  "directory: loss.csv/png/svg, eval.csv, sample.txt, summary.json");
  sub->add_option("--save-every", o->save_every,
                  "every N iterations, write --save with the training state (optimizer, "
                  "generators), atomically");
  sub->add_option("--resume", o->resume,
                  "CHECKPOINT.safetensors written by --save-every: continue that run (same "
                  "options) exactly where it stopped");
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->footer(
      "Examples:\n"
      "  kf train lm --config tiny --save lm.safetensors --out runs/lm\n"
      "  kf train lm --config small --save lm.safetensors --save-every 200 --resume "
      "lm.safetensors\n"
      "  kf train lm --corpus input.txt --config small --tokenizer char --save "
      "shakespeare.safetensors\n"
      "  kf train lm --tokenizer word --vocab 2000 --save words.safetensors   # 1,999 words + "
      "<unk>");
  sub->callback([o] { run_train(*o); });
}

}  // namespace kf::cli
