// kf predict — run a saved model (safetensors + its config in the metadata): a periodic
// regressor on a batch of windows, or a seq2seq model (kf train seq2seq) decoding sources
// greedily.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "common.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/saved_density.hpp"
#include "kernelformer/model/saved_smoother.hpp"
#include "kernelformer/model/seq2seq.hpp"
#include "kernelformer/model/sequence_regressor.hpp"
#include "lm_load.hpp"

namespace kf::cli {
namespace {

struct predict_options {
  std::string model, input, out, text;
  index batch = 256;
  bool quiet = false;
};

void run_regressor(const predict_options& o, const model::checkpoint& ck) {
  if (!o.text.empty()) throw user_error("--text is for seq2seq models; a regressor reads --input");
  if (o.input.empty() || o.out.empty())
    throw user_error("a regressor needs --input (X.npy or X.csv) and --out (Y.npy or Y.csv)");
  require_output(o.out, "--out", {".npy", ".csv"});
  std::unique_ptr<model::sequence_regressor<float>> mp;
  try {
    mp = model::sequence_regressor_load(ck);
  } catch (const std::runtime_error& e) {
    throw user_error(o.model + ": " + e.what());
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
  if (!o.quiet) fmt::print("kf predict: {} sequences of {} values\n", n, cfg.seq_len);
}

// --input's points for a model over the columns `names`: a CSV with those columns (others
// ignored) or an n x d .npy.
matrix<double> model_points(const predict_options& o, const std::vector<std::string>& names,
                            const char* what) {
  if (!o.input.ends_with(".npy")) return read_points(o.input, names);
  const loaded_array input = load_array(o.input, "--input");
  matrix<double> scratch;
  const const_matrix_view<double> v = input.as<double>(scratch);
  if (v.cols != static_cast<index>(names.size()))
    throw user_error(fmt::format("{} has {} columns; the {} takes {} ({})", input.path, v.cols,
                                 what, names.size(), fmt::join(names, ", ")));
  matrix<double> at(v.rows, v.cols);
  for (index r = 0; r < v.rows; ++r)
    for (index c = 0; c < v.cols; ++c) at(r, c) = v(r, c);
  return at;
}

// A saved smoother (kf smooth --save): fitted again with its bandwidth (no search), then the fit
// and its standard error at --input's points — a CSV with the smoother's x columns (other
// columns ignored) or an n x d .npy; --out a CSV (x columns, fit, se) or an n x 2 .npy (fit, se).
void run_smoother(const predict_options& o, const model::checkpoint& ck) {
  if (!o.text.empty()) throw user_error("--text is for seq2seq models; a smoother reads --input");
  if (o.input.empty() || o.out.empty())
    throw user_error("a smoother needs --input (POINTS.csv or .npy) and --out (FIT.csv or .npy)");
  require_output(o.out, "--out", {".npy", ".csv"});
  model::saved_smoother s;
  try {
    s = model::saved_smoother_read(ck, o.model);
  } catch (const std::runtime_error& e) {
    throw user_error(e.what());
  }
  const matrix<double> at = model_points(o, s.x_names, "smoother");
  const std::vector<std::string> names = s.x_names;
  regression_prediction p;
  try {
    const regression_fit fit = model::saved_smoother_fit(std::move(s));
    p = regression_predict(fit, at.cview());
  } catch (const std::invalid_argument& e) {
    throw user_error(fmt::format("{}: {}", o.model, e.what()));
  }
  if (o.out.ends_with(".npy")) {
    matrix<double> y(at.rows(), 2);
    for (index i = 0; i < at.rows(); ++i) {
      y(i, 0) = p.fit[static_cast<std::size_t>(i)];
      y(i, 1) = p.se[static_cast<std::size_t>(i)];
    }
    io::write_file_atomic(o.out, encode_output<double>(o.out, y.cview()));
  } else {
    std::string text = fmt::format("{},fit,se\n", fmt::join(names, ","));
    for (index i = 0; i < at.rows(); ++i) {
      for (index c = 0; c < at.cols(); ++c) text += fmt::format("{},", at(i, c));
      text += fmt::format("{},{}\n", p.fit[static_cast<std::size_t>(i)],
                          p.se[static_cast<std::size_t>(i)]);
    }
    io::write_file_atomic(o.out, text);
  }
  if (!o.quiet)
    fmt::print("kf predict: the smoother at {} points{}\n", at.rows(),
               p.undefined > 0 ? fmt::format(" ({} undefined: no data within the kernel's reach, "
                                             "fit and se 0 there)",
                                             p.undefined)
                               : "");
}

// A saved density (kf kde --save): fitted again with its bandwidths (no search), then the
// density at --input's points; --out a CSV (x columns, density) or an n x 1 .npy.
void run_density(const predict_options& o, const model::checkpoint& ck) {
  if (!o.text.empty()) throw user_error("--text is for seq2seq models; a density reads --input");
  if (o.input.empty() || o.out.empty())
    throw user_error(
        "a density needs --input (POINTS.csv or .npy) and --out (DENSITY.csv or .npy)");
  require_output(o.out, "--out", {".npy", ".csv"});
  model::saved_density s;
  try {
    s = model::saved_density_read(ck, o.model);
  } catch (const std::runtime_error& e) {
    throw user_error(e.what());
  }
  const matrix<double> at = model_points(o, s.x_names, "density");
  std::vector<double> f;
  try {
    f = kde_evaluate(model::saved_density_fit(s), at.cview());
  } catch (const std::invalid_argument& e) {
    throw user_error(fmt::format("{}: {}", o.model, e.what()));
  }
  if (o.out.ends_with(".npy")) {
    const matrix<double> y(at.rows(), 1, f);
    io::write_file_atomic(o.out, encode_output<double>(o.out, y.cview()));
  } else {
    std::string text = fmt::format("{},density\n", fmt::join(s.x_names, ","));
    for (index i = 0; i < at.rows(); ++i) {
      for (index c = 0; c < at.cols(); ++c) text += fmt::format("{},", at(i, c));
      text += fmt::format("{}\n", f[static_cast<std::size_t>(i)]);
    }
    io::write_file_atomic(o.out, text);
  }
  if (!o.quiet) fmt::print("kf predict: the density at {} points\n", at.rows());
}

// The sources: --text, or --input's lines (one source a line; each checked against the context).
std::vector<std::string> seq2seq_sources(const predict_options& o, index context) {
  if (o.text.empty() == o.input.empty())
    throw user_error("give --text \"SOURCE\" or --input SOURCES.txt (one source a line)");
  std::vector<std::string> src;
  if (!o.text.empty()) {
    if (static_cast<index>(o.text.size()) > context)
      throw user_error(fmt::format("--text has {} characters; the model reads at most {}",
                                   o.text.size(), context));
    return {o.text};
  }
  std::string text;
  try {
    text = io::read_file(o.input);
  } catch (const std::exception& e) {
    throw user_error(fmt::format("--input {}: {}", o.input, e.what()));
  }
  std::size_t pos = 0;
  for (index line = 1; pos < text.size(); ++line) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string s = text.substr(pos, end - pos);
    pos = end + 1;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    if (s.empty())
      throw user_error(fmt::format("{}:{}: an empty line (one source a line)", o.input, line));
    if (static_cast<index>(s.size()) > context)
      throw user_error(fmt::format("{}:{}: {} characters; the model reads at most {}", o.input,
                                   line, s.size(), context));
    src.push_back(std::move(s));
  }
  if (src.empty()) throw user_error(fmt::format("--input {}: no sources", o.input));
  return src;
}

void run_seq2seq(const predict_options& o) {
  loaded_lm lm = load_lm(o.model, true);
  if (!model::seq2seq_metadata(lm.metadata))
    throw user_error(fmt::format(
        "--model {}: a token_model that kf train seq2seq did not write; kf predict reads "
        "seq2seq models and periodic regressors (kf sample continues a language model)",
        o.model));
  if (!o.out.empty()) require_output(o.out, "--out", {".txt", ".tsv"});
  const model::seq2seq_vocab v = model::seq2seq_vocab::from_tokenizer(lm.tok);
  const std::vector<std::string> src = seq2seq_sources(o, lm.model->config().context);
  index unknown = 0;
  for (const auto& s : src) {
    index u = 0;
    v.encode(s, &u);
    unknown += u;
  }
  if (unknown > 0)
    fmt::print(stderr, "kf: warning: {} character(s) of the sources are not in the vocabulary\n",
               unknown);
  std::vector<std::string> out;
  {
    progress_bar bar("decoding");
    out = model::seq2seq_translate(*lm.model, v, src, o.batch, [&](index done, index total) {
      bar.update(int(done), int(total));
    });
  }
  if (o.out.empty()) {
    for (const auto& s : out) fmt::print("{}\n", s);
    return;
  }
  const bool tsv = o.out.ends_with(".tsv");
  std::string text = tsv ? "source\toutput\n" : "";
  for (std::size_t i = 0; i < out.size(); ++i)
    text += tsv ? fmt::format("{}\t{}\n", src[i], out[i]) : out[i] + "\n";
  io::write_file_atomic(o.out, text);
  if (!o.quiet) fmt::print("kf predict: {} sources decoded\n", out.size());
}

void run(const predict_options& o) {
  require_extension(o.model, "--model", {".safetensors"});
  if (o.batch < 1) throw user_error("--batch must be at least 1");
  if (!o.out.empty()) check_output_path(o.out, "--out");
  // The file, its metadata and the tensor table are checked before anything is allocated.
  model::checkpoint ck;
  try {
    ck = model::checkpoint_load(o.model);
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    // checkpoint_parse names the file itself; other errors do not.
    throw user_error(what.rfind(o.model + ":", 0) == 0 ? what : o.model + ": " + what);
  }
  const std::string kind = ck.metadata.count("kind") ? ck.metadata.at("kind") : std::string("?");
  if (kind == "sequence_regressor") return run_regressor(o, ck);
  if (kind == "smoother") return run_smoother(o, ck);
  if (kind == "density") return run_density(o, ck);
  if (kind != "token_model")
    throw user_error(fmt::format(
        "{}: model kind '{}' is not supported by kf predict (sequence_regressor, smoother, "
        "density, or a seq2seq token_model)",
        o.model, model::checkpoint_quote(kind)));
  run_seq2seq(o);
}

}  // namespace

void add_predict(CLI::App& app) {
  auto o = std::make_shared<predict_options>();
  CLI::App* sub = app.add_subcommand(
      "predict",
      "Run a saved model: a periodic or series regressor on windows, a smoother (kf smooth "
      "--save) or a density (kf kde --save) at new points, or a seq2seq model on sources");
  sub->add_option("--model", o->model,
                  "MODEL.safetensors written by kf train periodic|series|seq2seq, kf smooth "
                  "--save or kf kde --save")
      ->required();
  sub->add_option(
      "--input", o->input,
      "regressor: X.npy or X.csv, one input sequence per row; smoother, density: "
      "POINTS.csv (its x columns) or POINTS.npy (n x d); seq2seq: SOURCES.txt, one source a "
      "line");
  sub->add_option("--text", o->text, "seq2seq: one source (the output is printed)");
  sub->add_option("--out", o->out,
                  "regressor: Y.npy or Y.csv, one prediction per row; smoother: FIT.csv (x, "
                  "fit, se) or FIT.npy (fit, se); density: DENSITY.csv (x, density) or .npy (n x "
                  "1); seq2seq: OUT.txt (one output a line) or OUT.tsv "
                  "(source, output); default: print");
  sub->add_option("--batch", o->batch, "sequences per forward pass")->capture_default_str();
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->footer(
      "A seq2seq model decodes greedily: from <s>, the most likely character at every step, "
      "until </s>.\n"
      "Examples:\n"
      "  kf predict --model sin.safetensors --input windows.npy --out next.npy\n"
      "  kf predict --model fit.safetensors --input points.csv --out fit.csv   # kf smooth --save\n"
      "  kf predict --model kde.safetensors --input points.csv --out f.csv   # kf kde --save\n"
      "  kf predict --model rev.safetensors --text \"hello42\"\n"
      "  kf predict --model dates.safetensors --input dates.txt --out long.tsv");
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
