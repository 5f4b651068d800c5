// kf train lm — a small decoder-only language model (seed 000's next-word predictor) on
// Debian's fortunes or any text, checkpoints that resume exactly, data-parallel under mpirun.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <memory>

#include "common.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/lm_train.hpp"
#include "kernelformer/model/train_state.hpp"
#include "kernelformer/text/tokenizer.hpp"
#include "lm_outputs.hpp"
#include "train_options.hpp"

namespace kf::cli {
namespace {

struct lm_options {
  std::string corpus, tokenizer = "char", config = "tiny", kernel = "exp_dot", save, summary, out;
  std::uint64_t seed = 0;
  index iters = 0, batch = 0, vocab = 8000;  // vocab: at most this many pieces, <unk> included
  index eval_iters = 0;                      // 0: the preset's evaluation windows
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
  check_checkpoint_options(o.save_every, o.resume, o.save, "iterations");
  if (!(o.val_fraction >= 0 && o.val_fraction < 0.9))
    throw user_error("--val-fraction must be in [0, 0.9)");
  if (o.iters > 0) {
    p.iters = o.iters;
    p.warmup = std::min(p.warmup, std::max<index>(1, o.iters / 10));
    p.eval_every = std::min(p.eval_every, std::max<index>(1, o.iters));
  }
  if (o.batch > 0) p.batch = o.batch;
  if (o.eval_iters < 0) throw user_error("--eval-iters must be >= 1 (0: the config's)");
  if (o.eval_iters > 0) p.eval_windows = o.eval_iters;
  if (o.lr > 0) p.lr = o.lr, p.min_lr = o.lr / 10;
  check_train_files({o.save, o.summary, o.out});
  return p;
}

// The corpus, split on the text: the last val_fraction is validation; the vocabulary (at most
// --vocab pieces) comes from the training part.
struct lm_corpus {
  std::string text;
  text::tokenizer tok;
  std::vector<index> train, val;
  index val_unknown = 0;  // validation pieces outside the vocabulary
};

lm_corpus tokenize_corpus(const lm_options& o, text::tokenizer_kind kind, index context) {
  lm_corpus c;
  c.text = read_corpus(o.corpus);
  const auto cut = static_cast<std::size_t>(double(c.text.size()) * (1.0 - o.val_fraction));
  const std::string_view train_text(c.text.data(), cut),
      val_text(c.text.data() + cut, c.text.size() - cut);
  c.tok = text::tokenizer::train(kind, train_text, 2, o.vocab);
  c.train = c.tok.encode(train_text);
  c.val = c.tok.encode(val_text, &c.val_unknown);
  if (static_cast<index>(c.train.size()) < context + 2)
    throw user_error(fmt::format("--corpus: {} training tokens are too few for a context of {}",
                                 c.train.size(), context));
  return c;
}

// Every save_every iterations: weights, tokenizer and training state, atomically to --save; the
// last state goes into LAST_STATE. The callback refers to every argument, which must outlive
// training.
void set_checkpointing(model::lm_checkpointing& cp, const lm_options& o, const lm_run& r,
                       model::token_model<float>& m, const std::map<std::string, std::string>& run,
                       lm_final_state& last_state) {
  cp.save_every = o.save_every;
  cp.on_checkpoint = [&o, &r, &m, &run, &last_state](const model::train_state& st) {
    model::train_state s = st;
    s.run = run;
    auto md = r.preset.model.to_metadata();
    r.tok.to_metadata(md);
    md["corpus"] = r.corpus;
    if (st.done == r.preset.iters) {  // rides along with the final --save
      model::train_state_encode(s, last_state.metadata, last_state.tensors);
      return;
    }
    std::vector<model::checkpoint_tensor> extra;
    model::train_state_encode(s, md, extra);
    make_output_parent(o.save, "--save");
    io::write_file_atomic(o.save, model::checkpoint_encode(m.params(), md, extra));
  };
}

model::lm_train_result train_lm(model::token_model<float>& m, const lm_corpus& c,
                                const model::lm_preset& p, std::uint64_t seed,
                                const model::lm_checkpointing& cp) {
  progress_bar bar("training");
  double last_val = NAN;
  return model::lm_train(
      m, c.train, c.val, p, seed,
      [&](index it, index total, double loss, const model::lm_eval_point* ev) {
        if (ev) last_val = ev->val_loss;
        bar.update(int(it), int(total),
                   std::isnan(last_val) ? fmt::format("loss {:.3f}", loss)
                                        : fmt::format("loss {:.3f} val {:.3f}", loss, last_val));
      },
      mpi_data_parallel(), cp);
}

void run_train(const lm_options& o) {
  text::tokenizer_kind kind{};
  model::lm_preset p = lm_preset_of(o, kind);
  const lm_corpus c = tokenize_corpus(o, kind, p.model.context);
  p.model.vocab = c.tok.size();
  model::token_model<float> m(p.model, o.seed);
  const std::string corpus_name = o.corpus.empty() ? "fortunes (Debian package)" : o.corpus;
  const auto run_opts = lm_run_options(o, p, c.text);
  model::train_state resumed;
  model::lm_checkpointing cp;
  if (!o.resume.empty()) {
    resumed = load_resume(o.resume, m.params(), m.config().describe(), run_opts);
    cp.resume = &resumed;
    if (resumed.done >= p.iters && !o.quiet && dist::is_root())
      fmt::print(
          "kf train lm: --resume {}: that run already finished its {} iterations; "
          "nothing to train, its outputs are written again\n",
          o.resume, p.iters);
  }
  model::lm_train_result tr;  // filled by the training below; r refers to it
  const lm_run r{corpus_name, c.text.size(),  o.tokenizer,        o.config,
                 c.tok,       c.train.size(), c.val.size(),       c.val_unknown,
                 p,           o.seed,         m.params().count(), tr};
  lm_final_state last_state;
  set_checkpointing(cp, o, r, m, run_opts, last_state);
  if (!o.quiet && dist::is_root()) print_lm_start(r);
  tr = train_lm(m, c, p, o.seed, cp);
  if (!dist::is_root()) return;  // every rank holds the same model: rank 0 writes
  const std::string sample =
      write_lm_outputs(r, m, {o.save, o.summary, o.out}, run_opts, last_state);
  if (!o.quiet) print_lm_result(r, o.save, o.out, sample);
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
                  "layers, 4 heads, width 128, context 64) | baby (nanoGPT's shakespeare_char: 6 "
                  "layers, 6 heads, width 384, context 256, batch 64, dropout 0.2; slow on a CPU: "
                  "~20 s per step on 2 cores)")
      ->capture_default_str();
  sub->add_option("--kernel", o->kernel,
                  "attention kernel: exp_dot, gaussian:h=…, …; linear time: elu1, "
                  "favor:features=R (redraw=1: fresh features every step)")
      ->capture_default_str();
  sub->add_option("--iters", o->iters, "iterations (default: 400 tiny, 2000 small)");
  sub->add_option("--batch", o->batch, "batch size (default: 16 tiny, 12 small)");
  sub->add_option("--eval-iters", o->eval_iters,
                  "context windows per loss estimate (train and validation, at every evaluation; "
                  "default 64 tiny, 240 small): the evaluation's cost, stated at the start");
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
