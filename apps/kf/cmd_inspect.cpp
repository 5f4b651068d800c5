// kf inspect — a checkpoint's architecture, parameter count, and every attention head read as a
// kernel smoother (head-as-kernel fit, effective degrees of freedom tr W) on one input. Reads the
// sequence regressors of kf train periodic and kf train series, and the token models of kf train
// lm and kf train seq2seq.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "kernelformer/explore/inspect.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/seq2seq.hpp"
#include "kernelformer/text/tokenizer.hpp"
#include "lm_load.hpp"

namespace kf::cli {
namespace {

struct inspect_options {
  std::string model, data, text, source, summary, csv;
  index row = 1;
  bool quiet = false;
};

// A kf train series model's own last window (its checkpoint keeps it), or empty.
std::vector<float> series_window(const std::map<std::string, std::string>& md, index seq_len) {
  const auto it = md.find("series_last_window");
  if (it == md.end()) return {};
  std::vector<float> w;
  for (const auto& item : split_list(it->second, "series_last_window")) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (*end != '\0' || !std::isfinite(v))
      throw user_error("series_last_window: '" + item.substr(0, 40) + "' is not a finite number");
    w.push_back(static_cast<float>(v));
  }
  if (static_cast<index>(w.size()) != seq_len)
    throw user_error(
        fmt::format("series_last_window holds {} values; the model takes {}", w.size(), seq_len));
  return w;
}

// The regressor's input: row `row` of --data (.npy/.csv, seq_len values per row); else a kf
// train series model's own last window, or the test context of `kf train periodic --function
// sin` (sin(0.1 t) for the last seq_len t < 1000) for a periodic model.
std::vector<float> regressor_input(const inspect_options& o, index seq_len,
                                   const std::map<std::string, std::string>& md,
                                   std::string& what) {
  if (!o.text.empty()) throw user_error("--text applies to language models; use --data");
  if (!o.source.empty()) throw user_error("--source applies to encoder-decoder models");
  std::vector<float> w(static_cast<std::size_t>(seq_len));
  if (o.data.empty() && md.count("series_last_window")) {
    what = fmt::format("the series' last {} values (kept in the checkpoint by kf train series)",
                       seq_len);
    return series_window(md, seq_len);
  }
  if (o.data.empty() && md.count("trained_by") &&
      md.at("trained_by").rfind("kf train series", 0) == 0)
    throw user_error(o.model +
                     ": a kf train series model saved before it kept its last window: give "
                     "--data (a window of the series a row, e.g. OUT/test_windows.csv)");
  if (o.data.empty()) {
    for (index i = 0; i < seq_len; ++i)
      w[static_cast<std::size_t>(i)] =
          static_cast<float>(std::sin(0.1 * double(1000 - seq_len + i)));
    what = fmt::format("sin(0.1 t), t = {}..999 (the sin test context)", 1000 - seq_len);
    return w;
  }
  const loaded_array a = load_array(o.data, "--data");
  if (a.cols() != seq_len)
    throw user_error(
        fmt::format("--data {}: {} columns; the model takes windows of {} values "
                    "(one per row)",
                    o.data, a.cols(), seq_len));
  if (o.row < 1 || o.row > a.rows())
    throw user_error(
        fmt::format("--row {} is outside 1..{} (the rows of {})", o.row, a.rows(), o.data));
  matrix<float> scratch;
  const auto x = a.as<float>(scratch);
  for (index i = 0; i < seq_len; ++i) w[static_cast<std::size_t>(i)] = x(o.row - 1, i);
  what = fmt::format("row {} of {}", o.row, o.data);
  return w;
}

// A token model's input: --text, the --data text file (a language model), or the defaults; an
// encoder-decoder's --source too (lm_input_read: the first context tokens of each).
model_inspection inspect_lm(const inspect_options& o, std::string& what) {
  loaded_lm lm = load_lm(o.model, true);
  std::string text = o.text, text_option = "--text";
  if (!o.data.empty()) {
    if (!o.text.empty()) throw user_error("give --data or --text, not both");
    if (lm.model->is_encoder_decoder())
      throw user_error(
          "--data is a language model's text; an encoder-decoder reads --source "
          "(encoder) and --text (decoder)");
    try {
      text = io::read_file(o.data);
    } catch (const std::exception& e) {
      throw user_error(fmt::format("--data {}: {}", o.data, e.what()));
    }
    text_option = "--data " + o.data;
  }
  const lm_input in = lm_input_read(lm, text, o.source, text_option);
  const std::string text_what = !o.data.empty()  ? fmt::format("the start of {}", o.data)
                                : o.text.empty() ? "the default text"
                                                 : "--text";
  if (in.source.empty())
    what = fmt::format("{} ({} tokens)", text_what, in.ids.size());
  else
    what = fmt::format("source \"{}\" ({} tokens), decoder \"{}\" ({} tokens{})", in.source_text,
                       in.source.size(), in.text, in.ids.size(),
                       model::seq2seq_metadata(lm.metadata) ? ", <s> first" : "");
  progress_bar bar("reading the heads");
  return inspect_token_model(
      *lm.model, in.ids, [&](int done, int total) { bar.update(done, total); }, in.source);
}

// The checkpoint read as its kind says: a sequence regressor (kf train periodic or series) on
// regressor_input, a token model (kf train lm or seq2seq) through inspect_lm; INPUT says what
// it ran on. Every failure is a user_error naming the file.
model_inspection inspect_checkpoint(const inspect_options& o, std::string& input) {
  try {
    const model::checkpoint ck = model::checkpoint_load(o.model);
    const std::string kind = ck.metadata.count("kind") ? ck.metadata.at("kind") : "?";
    if (kind == "sequence_regressor") {
      auto m = model::sequence_regressor_load(ck);
      const auto w = regressor_input(o, m->config().seq_len, ck.metadata, input);
      progress_bar bar("reading the heads");
      return inspect_regressor(*m, w, [&](int done, int total) { bar.update(done, total); });
    }
    if (kind == "token_model") return inspect_lm(o, input);
    throw user_error(
        fmt::format("{}: model kind '{}' is not one kf inspect reads "
                    "(sequence_regressor, token_model)",
                    o.model, model::checkpoint_quote(kind)));
  } catch (const user_error&) {
    throw;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw user_error(what.rfind(o.model + ":", 0) == 0 ? what : o.model + ": " + what);
  }
}

// --summary (everything, every shape's fit per head) and --csv (a row per head), committed
// together.
void write_outputs(const inspect_options& o, const model_inspection& r, const std::string& input) {
  nlohmann::json js;
  js["model"] = o.model;
  js["kind"] = r.kind;
  js["architecture"] = r.architecture;
  js["parameters"] = r.parameters;
  js["input"] = input;
  std::string csv = "site,layer,head,shape,bandwidth,offset,r2,r2_gaussian,df,queries,keys\n";
  for (const auto& h : r.heads) {
    const auto& b = h.fit.shapes[static_cast<std::size_t>(h.fit.best)];
    nlohmann::json shapes;
    for (const auto& s : h.fit.shapes)
      shapes[s.kernel] = {
          {"bandwidth", s.median_bandwidth}, {"offset", s.median_offset}, {"r2", s.r2}};
    js["heads"].push_back({{"site", h.site},
                           {"layer", h.layer + 1},
                           {"head", h.head + 1},
                           {"shape", b.kernel},
                           {"bandwidth", b.median_bandwidth},
                           {"offset", b.median_offset},
                           {"r2", b.r2},
                           {"df", h.df},
                           {"queries", h.queries},
                           {"keys", h.keys},
                           {"shapes", shapes}});
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", h.site, h.layer + 1, h.head + 1,
                       b.kernel, b.median_bandwidth, b.median_offset, b.r2, h.fit.shapes[0].r2,
                       h.df, h.queries, h.keys);
  }
  io::atomic_writer writer;
  if (!o.summary.empty()) writer.stage(o.summary, js.dump(2) + "\n");
  if (!o.csv.empty()) writer.stage(o.csv, csv);
  writer.commit();
}

// The model, its input and a table of the heads.
void print_inspection(const inspect_options& o, const model_inspection& r,
                      const std::string& input) {
  fmt::print("kf inspect: {} ({})\n{}\n{} parameters; input: {}\n\n", o.model, r.kind,
             r.architecture, r.parameters, input);
  // The site column only when there are several (an encoder-decoder's three).
  const bool sites = !r.heads.empty() && r.heads.front().site != r.heads.back().site;
  fmt::print("{}{:>5} {:>4}  {:<13} {:>9} {:>8} {:>7} {:>9} {:>8}\n",
             sites ? fmt::format("{:<14}", "site") : "", "layer", "head", "best shape", "bandwidth",
             "offset", "R²", "R² gauss", "df=tr W");
  for (const auto& h : r.heads) {
    const auto& b = h.fit.shapes[static_cast<std::size_t>(h.fit.best)];
    fmt::print("{}{:>5} {:>4}  {:<13} {:>9.3g} {:>8.3g} {:>7.4f} {:>9.4f} {:>8.2f}\n",
               sites ? fmt::format("{:<14}", h.site) : "", h.layer + 1, h.head + 1, b.kernel,
               b.median_bandwidth, b.median_offset, b.r2, h.fit.shapes[0].r2, h.df);
  }
  if (sites)
    fmt::print(
        "\nbandwidth and offset in positions (medians over query rows; offset < 0 looks back; "
        "cross-attention: source position minus target position); df = tr W: the query count "
        "copies each position, 1 averages all\n");
  else
    fmt::print(
        "\nbandwidth and offset in positions (medians over query rows; offset < 0 looks back); "
        "df = tr W of {} positions: {} copies each position, 1 averages all\n",
        r.heads.empty() ? 0 : r.heads[0].queries, r.heads.empty() ? 0 : r.heads[0].queries);
}

void run(const inspect_options& o) {
  require_extension(o.model, "model", {".safetensors"});
  if (!o.summary.empty()) require_output(o.summary, "--summary", {".json"});
  if (!o.csv.empty()) require_output(o.csv, "--csv", {".csv"});
  std::string input;
  const model_inspection r = inspect_checkpoint(o, input);
  write_outputs(o, r, input);
  if (!o.quiet) print_inspection(o, r, input);
}

}  // namespace

void add_inspect(CLI::App& app) {
  auto o = std::make_shared<inspect_options>();
  CLI::App* sub = app.add_subcommand(
      "inspect",
      "A checkpoint's architecture, parameter count and every attention head read as a kernel "
      "smoother (best kernel shape, bandwidth, offset, R², effective degrees of freedom tr W); "
      "reads the checkpoints of kf train periodic, series, lm and seq2seq");
  sub->add_option("model", o->model,
                  "MODEL.safetensors: a sequence regressor (kf train periodic or kf train series) "
                  "or a token model (kf train lm or kf train seq2seq)")
      ->required();
  sub->add_option("--data", o->data,
                  "sequence regressor: X.npy|X.csv, one window of raw values per row (a series "
                  "model standardizes them itself, as kf predict; default: the sin test context); "
                  "language model: a text file, its first context tokens");
  sub->add_option("--row", o->row, "regressor: the row of --data to run (1-based)")
      ->capture_default_str();
  sub->add_option("--text", o->text,
                  "language model: the input text (default: a sentence); encoder-decoder: the "
                  "decoder's text (seq2seq default: the model's greedy output for --source); the "
                  "first context tokens, as kf attention keeps");
  sub->add_option("--source", o->source,
                  "encoder-decoder: the encoder's text (seq2seq default: the validation example "
                  "the checkpoint keeps)");
  sub->add_option("--summary", o->summary, "SUMMARY.json: everything, every shape's fit per head");
  sub->add_option("--csv", o->csv, "HEADS.csv: one row per site, layer and head");
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->footer(
      "Examples:\n"
      "  kf train periodic --function sin --config quick --save sin.safetensors\n"
      "  kf inspect sin.safetensors                      # on the sin test context\n"
      "  kf inspect sin.safetensors --data windows.npy --row 3 --csv heads.csv\n"
      "  kf inspect sales.safetensors --data runs/sales/test_windows.csv   # kf train series\n"
      "  kf inspect lm.safetensors --text \"To be, or not to be\" --summary heads.json\n"
      "  kf inspect s2s.safetensors --source \"abc123\" --csv heads.csv   # encoder, decoder, "
      "cross");
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
