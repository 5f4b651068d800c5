// kf train series — seed 003's sequence regressor on any numeric series from a CSV file, beside
// the Nadaraya–Watson forecaster and a seasonal-naive baseline (model/series_experiment.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "kernelformer/dist/mpi.hpp"
#include "kernelformer/io/atomic_file.hpp"
#include "kernelformer/io/csv.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/model/series_experiment.hpp"
#include "series_outputs.hpp"
#include "train_options.hpp"

namespace kf::cli {
namespace {

struct series_options {
  std::string data, y, x, fill = "error", transform = "auto", level = "auto";
  model::series_spec spec;
  bool horizon_given = false;
  index patience = 20, future = 0;
  double resample = 0;
  regressor_flags train;
};

// Early stopping bounds the epochs: the maximum is generous, the validation tail decides.
const regressor_defaults kSeriesDefaults{
    300,
    300,
    32,
    64,
    3e-3,
    1e-3,
    "maximum epochs (default 300; early stopping on the validation tail usually ends sooner)",
    "MODEL.safetensors: the transformer with the series' standardization in its metadata "
    "(kf predict takes raw windows)",
    "SUMMARY.json: every error of every forecaster, the split, the period, …",
    "directory: forecast.csv/png, future.csv, test_windows.csv, loss.csv/png, acf.png, "
    "summary.json"};

// A time cell: a number, or an ISO date — YYYY-MM or YYYY-MM-DD. Dates on the first of each
// month (or without a day) become months as decimal years (1959-02 → 1959.0833…, a regular
// step of 1/12); other dates become days since 1970-01-01. Returns false when the cell is none.
struct date_parts {
  int year = 0, month = 0, day = 0;  // day 0: no day given
};
bool parse_date(const std::string& c, date_parts& d) {
  int y = 0, m = 0, dd = 0;
  char tail = 0;
  const int got = std::sscanf(c.c_str(), "%4d-%2d-%2d%c", &y, &m, &dd, &tail);
  if (got == 3 || got == 2) {
    if (m < 1 || m > 12 || (got == 3 && (dd < 1 || dd > 31))) return false;
    d = {y, m, got == 3 ? dd : 0};
    return c.size() == (got == 3 ? 10u : 7u);
  }
  return false;
}
double days_from_civil(int y, int m, int d) {  // H. Hinnant's algorithm
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return double(era) * 146097 + double(doe) - 719468;
}

std::vector<double> parse_time(const io::csv_table& t, const series_options& o) {
  const auto& cells = t.text[0];
  std::vector<double> time(cells.size());
  std::vector<date_parts> dates(cells.size());
  bool all_numbers = true, monthly = true;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    char* end = nullptr;
    time[i] = std::strtod(cells[i].c_str(), &end);
    if (!cells[i].empty() && end == cells[i].c_str() + cells[i].size() && std::isfinite(time[i]))
      continue;
    all_numbers = false;
    if (!parse_date(cells[i], dates[i]))
      throw user_error(fmt::format(
          "{}: line {}: the time ('{}') is '{}': expected a number or a date (YYYY-MM or "
          "YYYY-MM-DD)",
          o.data, t.lines[i], o.x,
          cells[i].size() > 40 ? cells[i].substr(0, 37) + "..." : cells[i]));
    monthly = monthly && dates[i].day <= 1;
  }
  if (all_numbers) return time;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (dates[i].year == 0 && dates[i].month == 0)
      throw user_error(
          fmt::format("{}: line {}: '{}' mixes numbers and dates", o.data, t.lines[i], o.x));
    time[i] = monthly ? dates[i].year + (dates[i].month - 1) / 12.0
                      : days_from_civil(dates[i].year, dates[i].month, std::max(dates[i].day, 1));
  }
  return time;
}

// The series from the CSV file, made regular; errors name the file and line. The time column
// is read as text: numbers or ISO dates (parse_time).
model::regular_series read_series(const series_options& o) {
  io::csv_options copt;
  copt.columns = {o.y};
  if (!o.x.empty()) copt.text_columns = {o.x};
  copt.missing_as_nan = true;
  copt.record_lines = true;
  const io::csv_table t = io::csv_read(o.data, copt);
  std::vector<double> values = t.columns[t.column(o.y)], time;
  if (!o.x.empty()) {
    for (std::size_t i = 0; i < t.text[0].size(); ++i)
      if (t.text[0][i].empty())
        throw user_error(
            fmt::format("{}: line {}: the time ('{}') is missing", o.data, t.lines[i], o.x));
    time = parse_time(t, o);
  }
  model::series_regular_options ro;
  try {
    ro.fill = model::series_fill_parse(o.fill);
  } catch (const std::invalid_argument& e) {
    throw user_error(fmt::format("--fill: {}", e.what()));
  }
  ro.resample = o.resample;
  ro.row_name = [&](index i) {
    return fmt::format("{}: line {}", o.data, t.lines[static_cast<std::size_t>(i)]);
  };
  ro.hint_missing = " (--fill linear or --fill previous fills gaps)";
  ro.hint_irregular = " (--resample STEP interpolates onto a regular grid)";
  try {
    return model::series_regularize(std::move(time), std::move(values), ro);
  } catch (const std::invalid_argument& e) {
    throw user_error(e.what());
  }
}

// Every option, and every output path, checked before the data is read; the optimizer's
// settings.
// --transform and --level as the spec's -1 (auto), 0 or 1.
int choice_flag(const std::string& value, const char* option, const char* yes, const char* no) {
  if (value == "auto") return -1;
  if (value == yes) return 1;
  if (value == no) return 0;
  throw user_error(fmt::format("{} {}: expected auto, {} or {}", option,
                               value.size() > 40 ? value.substr(0, 37) + "..." : value, yes, no));
}

model::train_options check_options(series_options& o) {
  o.spec.log = choice_flag(o.transform, "--transform", "log", "none");
  o.spec.level = choice_flag(o.level, "--level", "window", "global");
  const regressor_flags& f = o.train;
  if (dist::size() > 1)
    throw mpi_refusal("kf train series runs in one process (a series trains in seconds)");
  regressor_flags_config(f, 1);  // the names and numbers, before any file is read
  model::train_options to = regressor_flags_train(f, kSeriesDefaults);
  if (o.spec.horizon > 0 && o.spec.test_fraction > 0)
    throw user_error("--horizon and --test-fraction both set the test part: give one");
  if (!(o.spec.test_fraction >= 0 && o.spec.test_fraction < 1))
    throw user_error(
        fmt::format("--test-fraction {}: expected a number in (0, 1)", o.spec.test_fraction));
  if (!(o.spec.validation_fraction >= 0 && o.spec.validation_fraction < 1))
    throw user_error(fmt::format("--validation-fraction {}: expected a number in [0, 1)",
                                 o.spec.validation_fraction));
  if (o.spec.window < 0 || o.spec.horizon < 0 || o.spec.period < 0)
    throw user_error("--window, --horizon and --period must be positive");
  if (o.horizon_given && o.spec.horizon == 0)
    throw user_error(
        "--horizon 0: the test part needs at least one value (omit --horizon for "
        "the default, 20% of the series)");
  if (o.spec.backtest < 0) throw user_error("--backtest must be >= 0 (0: no backtest)");
  if (o.patience < 0) throw user_error("--patience must be >= 0 (0: no early stopping)");
  if (o.future < 0) throw user_error("--future must be >= 0");
  regressor_flags_check_outputs(f);
  return to;
}

model::train_result train_series(const model::series_data& d, model::sequence_regressor<float>& m,
                                 model::train_options& to) {
  progress_bar bar("training");
  std::string note;
  to.on_validation = [&](index, double loss, index best) {
    note = fmt::format("val {:.4g}, best epoch {}", loss, best);
  };
  return model::series_train(
      d, m, to, [&](index e, index total, double) { bar.update(int(e), int(total), note); });
}

// --save (the weights, how they were made, the period and the test error), --summary and the
// --out folder, staged and committed together.
void write_outputs(const series_options& o, const series_run& sr,
                   model::sequence_regressor<float>& m, const std::string& summary) {
  const regressor_flags& f = o.train;
  io::atomic_writer w{io::staging{.make_folders = true}};  // folders made, or removed on a failure
  if (!f.save.empty()) {
    auto md = m.config().to_metadata();
    auto run_opts = regressor_flags_run(f, m.config(), sr.to);
    run_opts["--y"] = o.y;
    if (!o.x.empty()) run_opts["--x"] = o.x;
    run_opts["--window"] = std::to_string(sr.d.window);
    run_opts["--horizon"] = std::to_string(sr.d.horizon);
    md["trained_by"] = run_command("kf train series " + o.data, run_opts);
    md["train_seconds"] = fmt::format("{:.1f}", sr.tr.train_seconds);
    md["series_period"] = std::to_string(sr.d.period.period);
    md["test_mse_rollout"] = fmt::format("{:.6g}", sr.r.forecasters.front().rollout.mse);
    // The series' last window (raw values): what kf inspect reads the heads on when no --data
    // is given, so a series model is diagnosed on its own data.
    const auto& v = sr.d.series.values;
    const auto from = v.size() - static_cast<std::size_t>(sr.d.window);
    std::string last;
    for (std::size_t i = from; i < v.size(); ++i)
      last += fmt::format("{}{:.17g}", i > from ? "," : "", v[i]);
    md["series_last_window"] = last;
    w.stage(f.save, model::checkpoint_encode(m.params(), md));
  }
  if (!f.summary.empty()) w.stage(f.summary, summary);
  if (!f.out.empty()) stage_series_outputs(w, f.out, sr, summary);
  w.commit();
}

void run(series_options& o) {
  const regressor_flags& f = o.train;
  model::train_options to = check_options(o);
  step_progress steps;  // a bar per long library step (reading, the NW bandwidth, forecasts)
  model::series_data d;
  try {
    d = model::series_make(read_series(o), o.spec);
  } catch (const std::invalid_argument& e) {
    throw user_error(fmt::format("{}: {}", o.data, e.what()));
  }
  model::regressor_config cfg = regressor_flags_config(f, d.window);
  cfg.level_inputs = d.level;  // chosen on the validation tail (series_make)
  model::sequence_regressor<float> m(cfg, f.seed);
  to.patience = o.patience;
  if (!f.quiet)
    fmt::print(
        "kf train series: {} values of '{}', window {}, horizon {}, {} training and {} "
        "validation windows, period {} ({}); {} config, {} parameters, up to {} epochs\n",
        d.series.values.size(), o.y, d.window, d.horizon, d.train.x.rows(), d.validation.x.rows(),
        d.period.period, d.period_given ? "given" : "detected", f.config, m.params().count(),
        to.epochs);
  if (!f.quiet) fmt::print("transform: {}\nlevel: {}\n", d.log_why, d.level_why);
  const model::train_result tr = train_series(d, m, to);
  const model::series_result r = model::series_evaluate(d, m, o.future, o.spec.backtest);
  const series_run sr{o.data, o.y, o.x, f.config, d, r, tr, m.config(), to, m.params().count()};
  const std::string summary = series_summary(sr).dump(2) + "\n";
  write_outputs(o, sr, m, summary);
  if (f.quiet) return;
  fmt::print("epochs {} ({}); test RMSE, rollout / teacher-forced:\n", tr.epoch_loss.size(),
             tr.best_epoch == 0 ? "no validation tail"
             : tr.stopped_early ? fmt::format("best {}, stopped early", tr.best_epoch)
                                : fmt::format("best {}", tr.best_epoch));
  for (const auto& fc : r.forecasters)
    fmt::print("  {:<15} {:>11.5g} / {:<11.5g}  backtest MSE {}\n", fc.name, fc.rollout.rmse,
               fc.teacher_forced.rmse,
               fc.backtest.origins > 0
                   ? fmt::format("{:.4g} ± {:.4g}", fc.backtest.mean_mse, fc.backtest.sd_mse)
                   : std::string("-"));
  fmt::print("  {:<15} {:>11.5g}   (the known part's mean)\n", "mean", r.mean.rmse);
  fmt::print("holt_winters: {}\nkernel_trend: {}\n", r.holt_winters, r.kernel_trend);
  if (!r.combination_of.empty())
    fmt::print("combination: the mean of {}\n", fmt::join(r.combination_of, ", "));
  const auto& rec = r.forecasters[std::size_t(r.recommended)];
  fmt::print("recommended: {} — {}\n", rec.name, r.recommended_why);
  if (!r.test_band.lo95.empty())
    fmt::print("95% band covers {:.0f}% of the test part (80% band: {:.0f}%)\n",
               100 * r.test_coverage95, 100 * r.test_coverage80);
  if (o.future > 0)
    fmt::print(
        "future: Holt-Winters is refitted on the whole series; the transformer and the NW "
        "forecaster are the models fitted without the test part\n");
}

}  // namespace

void add_train_series(CLI::App* train) {
  auto o = std::make_shared<series_options>();
  CLI::App* sub = train->add_subcommand(
      "series",
      "Train the encoder on your own series (CSV) and forecast its last part, beside "
      "the NW forecaster, Holt-Winters, their combination and a seasonal-naive baseline; "
      "recommends one by a rolling-origin backtest and gives its 80%/95% bands");
  sub->add_option("data", o->data, "DATA.csv with a header row")->required();
  sub->add_option("--y", o->y, "the column to forecast")->required();
  sub->add_option("--x", o->x,
                  "the time column (numbers, regular steps); without it the rows are the steps");
  sub->add_option("--window", o->spec.window,
                  "values per input window (default: min(99, a quarter of the known part))");
  sub->add_option("--horizon", o->spec.horizon,
                  "the test part: the last N values, forecast by rollout (default: 20% of the "
                  "series, at most 200)")
      ->each([o](const std::string&) { o->horizon_given = true; });
  sub->add_option("--transform", o->transform,
                  "auto (log when the series is positive and its seasonal swing grows with its "
                  "level) | log | none")
      ->capture_default_str();
  sub->add_option("--level", o->level,
                  "auto (per window when that forecasts the validation tail better) | window "
                  "(each window relative to its last value: trends) | global")
      ->capture_default_str();
  sub->add_option("--backtest", o->spec.backtest,
                  "rolling origins in the validation tail: each forecaster's mean error there "
                  "picks the recommended one (the simplest within one standard error of the "
                  "lowest) and sizes its 80%/95% bands (0: none)")
      ->capture_default_str();
  sub->add_option("--test-fraction", o->spec.test_fraction,
                  "the test part as a fraction of the series (instead of --horizon)");
  sub->add_option("--validation-fraction", o->spec.validation_fraction,
                  "the validation tail, a fraction of the known windows (0: no early stopping)")
      ->capture_default_str();
  sub->add_option("--patience", o->patience,
                  "stop after N epochs without a better validation loss (0: run every epoch); "
                  "the best epoch's weights are kept either way")
      ->capture_default_str();
  sub->add_option("--period", o->spec.period,
                  "the seasonal-naive period in steps (default: detected by autocorrelation)");
  sub->add_option("--future", o->future, "also forecast N steps beyond the last value")
      ->capture_default_str();
  sub->add_option("--fill", o->fill,
                  "missing values (blank, NA, NaN): error | linear (interpolate) | previous "
                  "(carry the last value)")
      ->capture_default_str();
  sub->add_option("--resample", o->resample,
                  "with --x: interpolate linearly onto a grid of this step (irregular times)");
  add_regressor_flags(sub, o->train, kSeriesDefaults);
  sub->footer(
      "Examples:\n"
      "  kf train series sales.csv --y sales --out runs/sales\n"
      "  kf train series co2.csv --y co2 --x month --horizon 24 --backtest 12 --out runs/co2\n"
      "  kf train series sales.csv --y sales --x month --period 12 --future 24 --out runs/sales "
      "--save sales.safetensors\n"
      "  kf train series log.csv --y temp --x t --resample 60 --fill linear --window 48 "
      "--horizon 96\n"
      "  kf predict --model sales.safetensors --input runs/sales/test_windows.csv --out next.csv");
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
