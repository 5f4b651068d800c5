// kf experiment periodic — every function × kernel × seed of seed 003's experiment in one table,
// beside the paper's numbers (model/periodic_reference.hpp) and the Nadaraya–Watson forecaster
// (attention with a fixed kernel over the training windows). kf experiment lm:
// cmd_experiment_lm.cpp.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "kernelformer/explore/trained_demos.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/model/periodic_experiment.hpp"
#include "kernelformer/model/periodic_reference.hpp"
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

struct cell {
  std::vector<double> rollout, teacher, epoch_s;  // one per seed
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The grid the options ask for: functions × kernels × seeds on one base configuration.
struct grid {
  std::vector<model::periodic_function> fns;
  std::vector<kernel_spec> kerns;
  std::vector<std::uint64_t> seeds;
  model::regressor_config base;
  model::train_options train;
  std::string setting;  // "faithful (…)" or "improved (what differs)"
};

// One seed of --seeds: the whole text a non-negative integer below 2^64.
std::uint64_t parse_seed(const std::string& s) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    throw user_error(fmt::format("--seeds '{}': expected non-negative integers, e.g. 0,1,2",
                                 s.size() > 40 ? s.substr(0, 37) + "..." : s));
  return v;
}

grid parse_grid(const experiment_options& o) {
  grid g;
  try {
    for (const auto& f : split_list(o.functions, "--functions"))
      g.fns.push_back(model::periodic_function_parse(f));
    g.kerns = kernel_parse_list(o.kernels);  // "favor:features=128,seed=3,elu1": two kernels
    for (const auto& s : split_list(o.seeds, "--seeds")) g.seeds.push_back(parse_seed(s));
    g.base = model::periodic_config(o.config);
    g.base.block.norm_first = o.norm_first;
    g.base.scale_inputs = o.scale_inputs;
    if (o.dropout >= 0) g.base.block.dropout = o.dropout;
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
  return g;
}

// The training options (the configuration's defaults unless given) and the setting's name: any
// departure from the protocol is an improvement option, named in the table's first line.
void set_training(grid& g, const experiment_options& o) {
  auto& to = g.train;
  to.epochs = o.epochs > 0 ? o.epochs : (o.config == "quick" ? 20 : 100);
  const index default_batch = o.config == "quick" ? 64 : 512;
  const double default_lr = o.config == "quick" ? 3e-3 : 1e-3;
  to.batch = o.batch > 0 ? o.batch : default_batch;
  to.lr = o.lr > 0 ? o.lr : default_lr;
  to.cosine_lr = o.cosine_lr;
  g.setting = "faithful (post-LN, raw windows, constant lr)";
  std::vector<std::string> improvements;
  if (o.norm_first) improvements.emplace_back("pre-LN");
  if (o.scale_inputs) improvements.emplace_back("RMS-scaled windows");
  if (o.cosine_lr) improvements.emplace_back("warmup + cosine lr");
  if (to.batch != default_batch) improvements.emplace_back(fmt::format("batch {}", to.batch));
  if (to.lr != default_lr) improvements.emplace_back(fmt::format("lr {}", to.lr));
  if (o.dropout >= 0 && o.dropout != 0.1)
    improvements.emplace_back(fmt::format("dropout {}", o.dropout));
  if (!improvements.empty())
    g.setting = fmt::format("improved ({})", fmt::join(improvements, ", "));
}

// Everything the grid writes: the markdown table, the CSV (one row per run), the figures.
struct grid_outputs {
  std::string md, csv;
  // The table and the per-function figures, held in memory and committed together at the end
  // (the folders made then): a failed or killed grid leaves no file and no folder.
  io::atomic_writer w{io::staging{.in_memory = true, .make_folders = true}};
  progress_bar bar{"experiment"};
  int done = 0, total = 0, reused = 0;  // runs
  bool announced = false;  // the planned cost, printed once the first epoch has timed the pace
};

// After the first epoch of the grid: the plan (runs × epochs) and its cost at that pace, on
// stderr, so a long grid says what it will take from its first seconds.
void announce_plan(grid_outputs& out, index epochs, double first_epoch_seconds, bool quiet) {
  out.announced = true;
  if (quiet) return;
  const double total = first_epoch_seconds * double(epochs) * double(out.total);
  fmt::print(stderr,
             "kf experiment periodic: {} runs of {} epochs; about {} at the first epoch's pace "
             "({:.2f} s)\n",
             out.total, epochs,
             total < 120 ? fmt::format("{:.0f} s", total) : fmt::format("{:.0f} min", total / 60),
             first_epoch_seconds);
}

// A finished run, kept in OUT/runs/ as soon as it ends so an interrupted grid loses nothing: a
// later grid with the same --out reuses every run whose key (what decides its numbers: the
// configuration, the setting, epochs, batch, lr, function, kernel, seed) matches.
struct run_record {
  std::string path, key;
  double rollout = 0, teacher = 0, epoch_seconds = 0;
};

run_record record_for(const experiment_options& o, const grid& g, const std::string& fname,
                      const kernel_spec& k, std::uint64_t seed) {
  std::string kname = kernel_format(k);
  for (char& c : kname)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  run_record r;
  r.path = fmt::format("{}/runs/{}_{}_s{}.json", o.out, fname, kname, seed);
  r.key = fmt::format("periodic {} | {} | epochs {} batch {} lr {} | {} | {} | seed {}", o.config,
                      g.setting, g.train.epochs, g.train.batch, g.train.lr, fname, kernel_format(k),
                      seed);
  return r;
}

// The kept run for R's key, if there is one (a file that does not parse or whose key differs is
// not reused: the run trains again and replaces it).
bool reuse(run_record& r) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(r.path, ec)) return false;
  try {
    const auto js = nlohmann::json::parse(io::read_file(r.path));
    if (js.at("key").get<std::string>() != r.key) return false;
    r.rollout = js.at("rollout").get<double>();
    r.teacher = js.at("teacher_forced").get<double>();
    r.epoch_seconds = js.at("epoch_seconds").get<double>();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// The NW forecasters' rollout MSEs beside the Transformer's (what the table shows of them).
struct nw_numbers {
  double loo = 0, scaled = 0, validated = 0, validated_bandwidth = 0;
  std::string unsaved_path, unsaved_json;  // computed now: kept with the function's first run
};

// The function's NW baselines: kept in OUT/runs/FUNCTION_nw.json beside the runs (they depend on
// the function only, and their bandwidth searches cost more than a short run), reused when kept.
nw_numbers nw_baselines_kept(const experiment_options& o, const model::periodic_data& data,
                             const std::string& fname) {
  const std::string path = fmt::format("{}/runs/{}_nw.json", o.out, fname);
  const std::string key = "periodic nw baselines (LOO, scaled, rollout-validated) | " + fname;
  std::error_code ec;
  if (!o.out.empty() && std::filesystem::is_regular_file(path, ec)) {
    try {
      const auto js = nlohmann::json::parse(io::read_file(path));
      if (js.at("key").get<std::string>() == key)
        return {js.at("loo").get<double>(),
                js.at("scaled").get<double>(),
                js.at("validated").get<double>(),
                js.at("validated_bandwidth").get<double>(),
                "",
                ""};
    } catch (const std::exception&) {  // not ours or damaged: computed again and replaced
    }
  }
  const auto b = demo::periodic_nw_baselines(data, true);
  const nw_numbers r{b.loo.mse_rollout,
                     b.scaled.mse_rollout,
                     b.validated.mse_rollout,
                     b.validated_bandwidth,
                     "",
                     ""};
  nw_numbers kept = r;
  if (!o.out.empty()) {
    const nlohmann::json js{{"key", key},
                            {"loo", r.loo},
                            {"scaled", r.scaled},
                            {"validated", r.validated},
                            {"validated_bandwidth", r.validated_bandwidth}};
    kept.unsaved_path = path;
    kept.unsaved_json = js.dump(2) + "\n";
  }
  return kept;
}

struct run_id {
  model::periodic_function fn;
  const model::periodic_data& data;
  const std::string& fname;
  const kernel_spec& kernel;
  std::uint64_t seed;
};

// Trains and forecasts one run; with --out keeps its record (and, for the first kernel's first
// seed, its figures) at once.
run_record train_run(const experiment_options& o, const grid& g, const run_id& id, run_record rec,
                     nw_numbers& nw, grid_outputs& out) {
  model::regressor_config cfg = g.base;
  cfg.block.kernel = id.kernel;
  model::sequence_regressor<float> m(cfg, id.seed);
  model::train_options t = g.train;
  t.seed = id.seed;
  // The bar counts epochs over the whole grid, so it moves (with its ETA) from the first one.
  const auto t0 = std::chrono::steady_clock::now();
  const auto tr = model::train_regressor(
      m, id.data.train_x, id.data.train_y, t, [&](index e, index epochs, double) {
        if (!out.announced)
          announce_plan(
              out, epochs,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
              o.quiet);
        out.bar.update(int(index(out.done) * epochs + e), int(index(out.total) * epochs));
      });
  const auto fc = model::periodic_forecast_model(id.data, m);
  rec.rollout = fc.mse_rollout;
  rec.teacher = fc.mse_teacher_forced;
  rec.epoch_seconds = median(tr.epoch_seconds);
  if (o.out.empty()) return rec;
  io::atomic_writer w{io::staging{.in_memory = false, .make_folders = true}};
  nlohmann::json js{{"key", rec.key},
                    {"rollout", rec.rollout},
                    {"teacher_forced", rec.teacher},
                    {"epoch_seconds", rec.epoch_seconds}};
  w.stage(rec.path, js.dump(2) + "\n");
  if (!nw.unsaved_path.empty()) w.stage(nw.unsaved_path, nw.unsaved_json);  // with this run
  if (&id.kernel == &g.kerns.front() && id.seed == g.seeds.front())
    stage_periodic_outputs(w, o.out + "/" + id.fname, {id.fname, o.config, cfg, id.data, fc, tr},
                           m);
  w.commit();
  nw.unsaved_path.clear();
  return rec;
}

// One function: every kernel × seed trained and forecast (or reused from OUT/runs); a
// markdown row per kernel, a CSV row per run; with --out, the first kernel's first seed's figures
// (periodic_outputs.hpp).
void run_function(const experiment_options& o, const grid& g, model::periodic_function fn,
                  grid_outputs& out) {
  const auto data = model::periodic_make(fn);
  const std::string fname = model::periodic_function_name(fn);
  const double paper = model::periodic_paper_mse(fn);
  nw_numbers nw = nw_baselines_kept(o, data, fname);
  for (const auto& k : g.kerns) {
    cell c;
    for (const auto seed : g.seeds) {
      run_record rec = record_for(o, g, fname, k, seed);
      if (o.out.empty() || !reuse(rec))
        rec = train_run(o, g, {fn, data, fname, k, seed}, rec, nw, out);
      else
        ++out.reused;
      c.rollout.push_back(rec.rollout);
      c.teacher.push_back(rec.teacher);
      c.epoch_s.push_back(rec.epoch_seconds);
      out.csv += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", fname, paper, nw.loo, nw.scaled,
                             nw.validated, kernel_format(k), seed, rec.rollout, rec.teacher,
                             rec.epoch_seconds);
      ++out.done;
    }
    out.md += fmt::format(
        "| {} | {} | {:.3g} | {:.3g} | {:.3g} (h {:.3g}) | {} | {:.3g} ({:.3g}–{:.3g}) | {:.3g} "
        "| {:.2f} |\n",
        fname, paper, nw.loo, nw.scaled, nw.validated, nw.validated_bandwidth, kernel_format(k),
        median(c.rollout), *std::min_element(c.rollout.begin(), c.rollout.end()),
        *std::max_element(c.rollout.begin(), c.rollout.end()), median(c.teacher),
        median(c.epoch_s));
  }
  if (!nw.unsaved_path.empty()) out.w.stage(nw.unsaved_path, nw.unsaved_json);  // all reused
}

void run(const experiment_options& o) {
  grid g = parse_grid(o);
  if (!o.out.empty()) check_output_dir(o.out, "--out");
  set_training(g, o);
  grid_outputs out;
  out.total = int(g.fns.size() * g.kerns.size() * g.seeds.size());
  out.md = fmt::format(
      "Transformer: {} config, {}, {} epochs, batch {}, Adam lr {}.\n\n"
      "| function | paper | NW forecaster | NW, scaled windows (improved) | NW, rollout-validated "
      "h (improved) | kernel | rollout MSE median (min–max, {} seeds) | teacher-forced median | "
      "s/epoch |\n"
      "|---|---|---|---|---|---|---|---|---|\n",
      o.config, g.setting, g.train.epochs, g.train.batch, g.train.lr, g.seeds.size());
  out.csv =
      "function,paper,nw_rollout,nw_scaled_rollout,nw_rollout_validated_rollout,kernel,seed,"
      "rollout,teacher_forced,epoch_seconds\n";
  for (const auto fn : g.fns) run_function(o, g, fn, out);
  if (out.reused > 0 && !o.quiet)
    fmt::print(stderr,
               "kf experiment periodic: {} of {} runs reused from {}/runs (same "
               "settings); delete that folder to train them again\n",
               out.reused, out.total, o.out);
  if (!o.out.empty()) {
    out.w.stage(o.out + "/table.md", out.md);
    out.w.stage(o.out + "/table.csv", out.csv);
    out.w.commit();
  }
  if (o.quiet) return;
  fmt::print("kf experiment periodic\n\n{}", out.md);
  if (!o.out.empty())
    fmt::print(
        "\nper function (first kernel, first seed): {0}/FUNCTION/prediction.png (Fig. 3), "
        "attention.png (Fig. 4), loss.png and their CSV\n",
        o.out);
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
                  "comma-separated attention kernels, e.g. exp_dot,gaussian:h=2,periodic,linear; "
                  "an item key=value continues the kernel before it: favor:features=128,redraw=1")
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
                  "directory: table.md, table.csv, FUNCTION/{prediction,attention,loss}.png|csv, "
                  "and runs/ (each finished run, kept at once: a grid run again with the same "
                  "--out reuses the runs whose settings match, so an interrupted one resumes)");
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->footer(
      "Example:\n"
      "  kf experiment periodic --config quick --kernels exp_dot,gaussian:h=2 --seeds 0,1,2 --out "
      "exp");
  sub->callback([o] { run(*o); });

  add_experiment_lm(ex);
}

}  // namespace kf::cli
