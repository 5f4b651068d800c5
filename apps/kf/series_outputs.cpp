#include "series_outputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "kernelformer/io/csv.hpp"
#include "kernelformer/viz/plot.hpp"

namespace kf::cli {
namespace {

nlohmann::json errors_json(const model::forecast_errors& e) {
  return {{"mse", e.mse}, {"rmse", e.rmse}, {"mae", e.mae}};
}

viz::rgb forecaster_color(const std::string& name) {
  return name == "transformer"    ? viz::kRed
         : name == "nw"           ? viz::kOrange
         : name == "holt_winters" ? viz::kGrey
         : name == "combination"  ? viz::rgb{0.1, 0.1, 0.1}
         : name == "kernel_trend" ? viz::rgb{0.55, 0.34, 0.29}
                                  : viz::kPurple;
}

std::string forecaster_label(const std::string& name) {
  return name == "transformer"    ? "transformer"
         : name == "nw"           ? "NW forecaster"
         : name == "holt_winters" ? "Holt-Winters"
         : name == "combination"  ? "combination"
         : name == "kernel_trend" ? "kernel trend"
                                  : "seasonal naive";
}

// forecast.png: the known series' tail, the truth over the test part and each forecaster's
// rollout (and its future, fainter).
std::string forecast_plot(const series_run& run) {
  const auto& s = run.d.series;
  const index known = run.d.known, n = static_cast<index>(s.values.size());
  viz::figure f;
  const auto& tr = run.r.forecasters.front();
  const auto& rec = run.r.forecasters[std::size_t(run.r.recommended)];
  f.title =
      fmt::format("{}: the last {} values, recommended {} (RMSE {:.4g}; transformer {:.4g})", run.y,
                  run.d.horizon, forecaster_label(rec.name), rec.rollout.rmse, tr.rollout.rmse);
  f.xlabel = run.x.empty() ? std::string("step") : run.x;
  f.ylabel = run.y;
  const index from = std::max<index>(0, known - std::max(3 * run.d.horizon, 2 * run.d.window));
  viz::series hist{viz::series::kind::line, {}, {}, {}, "known", viz::kBlue, 1.5, 1};
  for (index t = from; t < known; ++t)
    hist.x.push_back(s.time[std::size_t(t)]), hist.y.push_back(s.values[std::size_t(t)]);
  viz::series truth{viz::series::kind::line, {}, {}, {}, "truth", viz::kGreen, 2, 1};
  for (index t = known - 1; t < n; ++t)  // joined to the known part
    truth.x.push_back(s.time[std::size_t(t)]), truth.y.push_back(s.values[std::size_t(t)]);
  f.data = {};
  const std::vector<double> test_time(s.time.begin() + known, s.time.end());
  // The recommended forecast's 95% band under everything (test part, then the future).
  const auto& tb = run.r.test_band;
  if (!tb.lo95.empty())
    f.data.push_back(
        {viz::series::kind::band, test_time, tb.lo95, tb.hi95, "95% band", viz::kGrey, 1, 0.25});
  const auto& fb = run.r.future_band;
  if (!fb.lo95.empty())
    f.data.push_back(
        {viz::series::kind::band, run.r.future_time, fb.lo95, fb.hi95, "", viz::kGrey, 1, 0.18});
  f.data.push_back(hist);
  f.data.push_back(truth);
  for (const auto& fc : run.r.forecasters) {
    f.data.push_back({viz::series::kind::line,
                      test_time,
                      fc.test.rollout,
                      {},
                      fmt::format("{} (RMSE {:.4g})", forecaster_label(fc.name), fc.rollout.rmse),
                      forecaster_color(fc.name),
                      1.8,
                      1});
    if (!fc.future.empty())
      f.data.push_back({viz::series::kind::line,
                        run.r.future_time,
                        fc.future,
                        {},
                        "",
                        forecaster_color(fc.name),
                        1.5,
                        0.5});
  }
  return viz::render(f, viz::image_format::png);
}

std::string loss_plot(const model::train_result& tr) {
  viz::figure l;
  auto positive = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return x > 0 && std::isfinite(x); });
  };
  l.log_y = positive(tr.epoch_loss) && positive(tr.validation_loss);
  l.title = fmt::format("loss (MSE of standardized values{}){}", l.log_y ? ", log scale" : "",
                        tr.best_epoch > 0 ? fmt::format(", best epoch {}", tr.best_epoch) : "");
  l.xlabel = "epoch";
  l.ylabel = "loss";
  viz::series t{viz::series::kind::line, {}, tr.epoch_loss, {}, "train", viz::kBlue, 2, 1};
  for (std::size_t e = 0; e < tr.epoch_loss.size(); ++e) t.x.push_back(double(e + 1));
  l.data = {t};
  if (!tr.validation_loss.empty()) {
    viz::series v{
        viz::series::kind::line, t.x, tr.validation_loss, {}, "validation", viz::kOrange, 2, 1};
    const double best = tr.validation_loss[std::size_t(tr.best_epoch - 1)];
    viz::series b{viz::series::kind::points,
                  {double(tr.best_epoch)},
                  {best},
                  {},
                  "kept (best validation)",
                  viz::kRed,
                  5,
                  1};
    l.data.push_back(v);
    l.data.push_back(b);
  }
  return viz::render(l, viz::image_format::png);
}

std::string acf_plot(const series_run& run) {
  const auto& p = run.d.period;
  viz::figure f;
  f.title = fmt::format("autocorrelation of the known part (line removed): period {}{}", p.period,
                        run.d.period_given ? " (given)" : "");
  f.xlabel = "lag";
  f.ylabel = "autocorrelation";
  viz::series c{viz::series::kind::line, {}, p.acf_curve, {}, "r_k", viz::kBlue, 2, 1};
  for (std::size_t k = 0; k < p.acf_curve.size(); ++k) c.x.push_back(double(k));
  const double band = 3.0 / std::sqrt(double(run.d.known));
  viz::series noise{viz::series::kind::band,
                    {0, double(p.acf_curve.size() - 1)},
                    {-band, -band},
                    {band, band},
                    "±3/√n (a peak must clear it)",
                    viz::kGrey,
                    1,
                    0.25};
  f.data = {noise, c};
  if (p.period > 1 && std::size_t(p.period) < p.acf_curve.size())
    f.data.push_back({viz::series::kind::points,
                      {double(p.period)},
                      {p.acf_curve[std::size_t(p.period)]},
                      {},
                      fmt::format("period {}", p.period),
                      viz::kRed,
                      5,
                      1});
  return viz::render(f, viz::image_format::png);
}

// forecast (the recommended forecaster's) and its bands, when the backtest made them.
void add_forecast_columns(std::vector<std::string>& names, std::vector<std::vector<double>>& cols,
                          const std::vector<double>& forecast, const model::series_interval& b) {
  names.push_back("forecast");
  cols.push_back(forecast);
  if (b.lo95.empty()) return;
  for (const auto& [name, col] : {std::pair{"lo80", &b.lo80}, std::pair{"hi80", &b.hi80},
                                  std::pair{"lo95", &b.lo95}, std::pair{"hi95", &b.hi95}}) {
    names.push_back(name);
    cols.push_back(*col);
  }
}

}  // namespace

nlohmann::json series_summary(const series_run& run) {
  const auto& d = run.d;
  nlohmann::json js;
  js["data"] = run.data;
  js["y"] = run.y;
  js["x"] = run.x.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.x);
  js["values"] = d.series.values.size();
  js["step"] = d.series.step;
  js["filled"] = d.series.filled;
  js["trimmed"] = d.series.trimmed;
  js["resampled"] = d.series.resampled;
  js["window"] = d.window;
  js["horizon"] = d.horizon;
  js["train_windows"] = d.train.x.rows();
  js["validation_windows"] = d.validation.x.rows();
  js["standardization"] = {{"mean", d.shift}, {"std", d.scale}};
  js["period"] = d.period.period;
  js["period_detected"] = !d.period_given;
  js["period_acf"] = d.period.acf;
  js["config"] = run.config;
  js["kernel"] = kernel_format(run.cfg.block.kernel);
  js["seed"] = run.to.seed;
  js["epochs"] = run.to.epochs;
  js["epochs_run"] = run.tr.epoch_loss.size();
  js["best_epoch"] = run.tr.best_epoch;
  js["stopped_early"] = run.tr.stopped_early;
  js["patience"] = run.to.patience;
  js["batch"] = run.to.batch;
  js["lr"] = run.to.lr;
  js["cosine_lr"] = run.to.cosine_lr;
  js["norm_first"] = run.cfg.block.norm_first;
  js["scale_inputs"] = run.cfg.scale_inputs;
  js["dropout"] = run.cfg.block.dropout;
  js["clip"] = run.to.clip;
  js["parameters"] = run.parameters;
  js["final_train_loss"] = run.tr.epoch_loss.back();
  js["best_validation_loss"] =
      run.tr.best_epoch > 0
          ? nlohmann::json(run.tr.validation_loss[std::size_t(run.tr.best_epoch - 1)])
          : nlohmann::json(nullptr);
  js["train_seconds"] = run.tr.train_seconds;
  js["nw_bandwidth"] = run.r.nw.bandwidth;
  js["transform"] = d.log ? "log" : "none";
  js["transform_why"] = d.log_why;
  js["level"] = d.level ? "window" : "global";
  js["level_why"] = d.level_why;
  js["holt_winters_season"] = run.r.holt_winters_season;
  js["holt_winters"] = run.r.holt_winters;
  js["kernel_trend"] = run.r.kernel_trend;
  js["combination_of"] = run.r.combination_of;
  const auto& rec = run.r.forecasters[std::size_t(run.r.recommended)];
  js["recommended"] = rec.name;
  js["recommended_why"] = run.r.recommended_why;
  nlohmann::json bt;
  for (const auto& f : run.r.forecasters)
    bt[f.name] = {{"origins", f.backtest.origins},
                  {"mean_mse", f.backtest.mean_mse},
                  {"sd_mse", f.backtest.sd_mse}};
  js["backtest"] = bt;
  js["interval_coverage"] = {{"test_95", run.r.test_coverage95},
                             {"test_80", run.r.test_coverage80},
                             {"backtest_95", run.r.backtest_coverage95}};
  nlohmann::json errors;
  for (const auto& f : run.r.forecasters)
    errors[f.name] = {{"rollout", errors_json(f.rollout)},
                      {"teacher_forced", errors_json(f.teacher_forced)}};
  errors["mean"] = errors_json(run.r.mean);
  js["errors"] = errors;
  js["test_mse_rollout"] = run.r.forecasters.front().rollout.mse;
  js["test_mse_teacher_forced"] = run.r.forecasters.front().teacher_forced.mse;
  return js;
}

void stage_series_outputs(io::atomic_writer& w, const std::string& dir, const series_run& run,
                          const std::string& summary) {
  const auto& d = run.d;
  const auto& s = d.series;
  // forecast.csv: the test part, each forecaster by rollout and teacher-forced.
  std::vector<std::string> names = {run.x.empty() ? "step" : run.x, "truth"};
  std::vector<std::vector<double>> cols = {
      std::vector<double>(s.time.begin() + d.known, s.time.end()),
      std::vector<double>(s.values.begin() + d.known, s.values.end())};
  const auto& rec = run.r.forecasters[std::size_t(run.r.recommended)];
  add_forecast_columns(names, cols, rec.test.rollout, run.r.test_band);
  for (const auto& f : run.r.forecasters) names.push_back(f.name), cols.push_back(f.test.rollout);
  for (const auto& f : run.r.forecasters)
    names.push_back(f.name + "_teacher_forced"), cols.push_back(f.test.teacher_forced);
  w.stage(dir + "/forecast.csv", io::csv_encode(names, cols));
  w.stage(dir + "/forecast.png", forecast_plot(run));
  if (!run.r.future_time.empty()) {
    std::vector<std::string> fn = {names[0]};
    std::vector<std::vector<double>> fc = {run.r.future_time};
    add_forecast_columns(fn, fc, rec.future, run.r.future_band);
    for (const auto& f : run.r.forecasters) fn.push_back(f.name), fc.push_back(f.future);
    w.stage(dir + "/future.csv", io::csv_encode(fn, fc));
  }
  // test_windows.csv: row s is the window before test step s (kf predict's input: its output is
  // the transformer_teacher_forced column).
  std::vector<std::string> wn;
  std::vector<std::vector<double>> wc(static_cast<std::size_t>(d.window));
  for (index j = 0; j < d.window; ++j) {
    wn.push_back(fmt::format("lag{}", d.window - j));
    for (index t = d.known; t < d.known + d.horizon; ++t)
      wc[std::size_t(j)].push_back(s.values[std::size_t(t - d.window + j)]);
  }
  w.stage(dir + "/test_windows.csv", io::csv_encode(wn, wc));
  const bool val = !run.tr.validation_loss.empty();
  std::string loss =
      val ? "epoch,train_loss,validation_loss,seconds\n" : "epoch,train_loss,seconds\n";
  for (std::size_t e = 0; e < run.tr.epoch_loss.size(); ++e)
    loss += fmt::format("{},{},{}{}\n", e + 1, run.tr.epoch_loss[e],
                        val ? fmt::format("{},", run.tr.validation_loss[e]) : std::string(),
                        run.tr.epoch_seconds[e]);
  w.stage(dir + "/loss.csv", loss);
  w.stage(dir + "/loss.png", loss_plot(run.tr));
  if (!d.period.acf_curve.empty()) w.stage(dir + "/acf.png", acf_plot(run));
  w.stage(dir + "/summary.json", summary);
}

}  // namespace kf::cli
