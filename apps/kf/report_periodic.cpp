// kf report's periodic section (seed 003 §5): the code configuration's Transformer (improved
// setting, seed 0) beside the paper, the documented 3-seed spreads of both settings and the
// Nadaraya–Watson forecasters (model/periodic_reference.hpp), with Fig. 3 per function and Fig. 4
// (layer 2, head 1) for all three with its autocorrelation at one period and half a period. By
// default it evaluates the checkpoints kept in models/ (each records the kf command that made
// it); --full trains every model now. The computation is explore/trained_demos.hpp's.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernelformer/explore/trained_demos.hpp"
#include "report_sections.hpp"

namespace kf::cli {
namespace {

using model::kPeriodicImproved;

std::string spread_text(const model::mse_spread& s) {
  return fmt::format("{} ({} – {})", num(s.median, 3), num(s.lo, 3), num(s.hi, 3));
}

// One function's row of the periodic table: the shown model and what stands beside it.
struct periodic_shown {
  std::unique_ptr<model::sequence_regressor<float>> model;  // improved setting, seed 0
  model::periodic_documented spreads;                       // documented, or measured with --full
  std::string how;                                          // an <li> saying where it came from
};

std::unique_ptr<model::sequence_regressor<float>> train_now(const model::periodic_data& data,
                                                            const std::string& name,
                                                            const model::periodic_setting& s,
                                                            std::uint64_t seed) {
  progress_bar bar(fmt::format("periodic {} {} seed {}", name, s.name, seed));
  return demo::periodic_train(data, s, seed,
                              [&](index e, index t, double) { bar.update(int(e), int(t)); });
}

// --full: 3 seeds of both settings, trained now; seed 0 of the improved setting is shown.
periodic_shown periodic_train_all(const model::periodic_data& data, model::periodic_function fn) {
  const std::string name = model::periodic_function_name(fn);
  periodic_shown s;
  std::vector<double> imp, fai;
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    auto mi = train_now(data, name, kPeriodicImproved, seed);
    imp.push_back(model::periodic_forecast_model(data, *mi).mse_rollout);
    if (seed == 0) s.model = std::move(mi);
    auto mf = train_now(data, name, model::kPeriodicFaithful, seed);
    fai.push_back(model::periodic_forecast_model(data, *mf).mse_rollout);
  }
  s.spreads = {model::mse_spread_of(imp), model::mse_spread_of(fai)};
  s.how = fmt::format("<li>{}: <code>{}</code> (trained now)</li>", name,
                      esc(model::periodic_train_command(name, kPeriodicImproved, 0)));
  return s;
}

periodic_shown periodic_from_models(const std::string& dir, model::periodic_function fn) {
  const std::string name = model::periodic_function_name(fn);
  const model::checkpoint ck = report_checkpoint(dir + "/periodic_" + name + ".safetensors");
  periodic_shown s;
  s.model = model::sequence_regressor_load(ck);
  s.spreads = model::periodic_documented_results(fn);
  s.how = fmt::format(
      "<li>{}: <code>models/periodic_{}.safetensors</code>, made by <code>{}</code> ({} s of wall "
      "time)</li>",
      name, name, esc(metadata_or(ck, "trained_by", "(not recorded)")),
      esc(metadata_or(ck, "train_seconds", "?")));
  return s;
}

// Seed 003 Fig. 3 for one function: the rollouts over the end of the training series.
void periodic_figure(viz::report& rep, const model::periodic_data& data, const std::string& name,
                     const demo::periodic_evaluation& e, double paper) {
  viz::figure f =
      make_figure(fmt::format("{}: 200-step rollout (improved setting, seed 0)", name), "x", "y");
  std::vector<double> sx, sy;
  for (std::size_t t = 800; t < data.series.size(); ++t)
    sx.push_back(0.1 * double(t)), sy.push_back(data.series[t]);
  // The target is drawn last and thinner, so a forecast on top of it leaves it visible.
  f.data = {line_series(sx, sy, "source (training)", viz::kBlue, 1.5),
            line_series(data.test_x, e.transformer.rollout, "Transformer (rollout)", viz::kRed, 3),
            line_series(data.test_x, e.nw.loo.rollout, "NW forecaster (rollout)", viz::kOrange, 2),
            line_series(data.test_x, data.test_y, "target", viz::kGreen, 1.2)};
  rep.figure("periodic_" + name, f,
             csv_columns({"x", "target", "transformer", "nw"},
                         {&data.test_x, &data.test_y, &e.transformer.rollout, &e.nw.loo.rollout}),
             fmt::format("Seed 003 Fig. 3 for {}: rollout MSE {} (Transformer, improved "
                         "setting, seed 0; the paper: {}), {} (NW forecaster).",
                         name, num(e.transformer.mse_rollout, 3), num(paper, 3),
                         num(e.nw.loo.mse_rollout, 3)));
}

// Layer 2, head 1 of one function's model on the test context.
struct periodic_map {
  std::string name;
  matrix<double> weights;  // (99, 99)
};

// One panel of Fig. 4: the map row-standardized (the raw weights stay near 1/99).
viz::heatmap fig4_panel(const periodic_map& m) {
  viz::heatmap hm;
  hm.title = m.name;
  hm.xlabel = "key position";
  hm.ylabel = "query position";
  hm.rows = int(m.weights.rows());
  hm.cols = int(m.weights.cols());
  hm.values = demo::row_standardized(m.weights);
  hm.scale = "(weight − row mean) / row SD";
  hm.width = 520;
  hm.height = 480;
  return hm;
}

// Seed 003 Fig. 4 for the three functions, its autocorrelation table, and each map's row of the
// head-as-kernel table.
void periodic_attention_figure(viz::report& rep, report_context& ctx,
                               const std::vector<periodic_map>& maps) {
  std::vector<viz::heatmap> panels;
  std::string csv = "function,query,key,weight,row_standardized\n";
  std::vector<std::vector<std::string>> rows;
  std::string numbers;
  const auto pos = demo::linspace(0, 98, 99);
  for (const auto& m : maps) {
    const auto& a = m.weights;
    panels.push_back(fig4_panel(m));
    for (index i = 0; i < a.rows(); ++i)
      for (index j = 0; j < a.cols(); ++j)
        csv += fmt::format("{},{},{},{},{}\n", m.name, i, j, a(i, j),
                           panels.back().values[std::size_t(i * a.cols() + j)]);
    // The period of the data is 2π / 0.1 ≈ 63 positions: +1 at 63, negative at 31.
    const double k63 = demo::map_autocorrelation(a, 63, true),
                 q63 = demo::map_autocorrelation(a, 63, false);
    const double k31 = demo::map_autocorrelation(a, 31, true),
                 q31 = demo::map_autocorrelation(a, 31, false);
    const auto [lo, hi] = std::minmax_element(a.values().begin(), a.values().end());
    rows.push_back({m.name, num(k63, 3), num(q63, 3), num(k31, 3), num(q31, 3),
                    num(*lo, 3) + " – " + num(*hi, 3)});
    numbers += fmt::format("{}{}: lag 63 {} (keys) / {} (queries), lag 31 {} / {}",
                           numbers.empty() ? "" : "; ", m.name, num(k63, 2), num(q63, 2),
                           num(k31, 2), num(q31, 2));
    ctx.diag.push_back(demo::head_kernel_summarize(
        fmt::format("periodic {} (code, improved), layer 2 head 1", m.name), a.cview(), pos, pos));
  }
  rep.grid("periodic_attention", panels, 3, "Seed 003 Fig. 4: layer 2, head 1 on the test context",
           csv,
           fmt::format(
               "Layer 2 (the last), head 1 of the two-layer code-configuration model (improved "
               "setting, seed 0) for each function, on the test context (the last 99 training "
               "values). Colour: each row standardized — (weight − row mean) / row standard "
               "deviation — because the weights stay close to uniform (1/99 ≈ 0.0101; raw range "
               "per function in the table below) and a raw scale would show little. A checkerboard "
               "with the period of the data (2π / 0.1 ≈ 63 positions) in both query and key is "
               "what seed 003 shows. Autocorrelation of the raw map (Pearson, the map against "
               "itself shifted along keys / along queries): {}. Positive at one period (63) and "
               "negative at half a period (31) is the checkerboard.",
               numbers));
  rep.table({"function", "autocorr. lag 63, keys", "lag 63, queries", "lag 31, keys",
             "lag 31, queries", "raw weights min – max"},
            rows, "Fig. 4's structure, measured on the raw weights.", "periodic_attention_table");
}

std::string periodic_intro(bool full) {
  return fmt::format(
      "The encoder of seed 003 (code configuration: post-LN, d 128, 2 heads, 2 layers) "
      "trained on sin, sin(x)·exp(0.01x) and a square wave, forecasting 200 steps by rollout "
      "(protocol: ../shared/docs/periodic-protocol.md), beside the paper's numbers, the "
      "faithful protocol's spread over seeds and the Nadaraya–Watson forecaster (attention "
      "with a fixed Gaussian kernel over the 901 training windows). The Transformer shown is "
      "the <b>improved setting</b> (batch 64 instead of 512, warmup + cosine learning rate, "
      "dropout 0.05; docs/nn.md). {}",
      full ? "Every model here was trained when the page was made (kf report --full): "
             "3 seeds of the improved and of the faithful setting."
           : "By default the page evaluates seed-0 checkpoints kept in the repository "
             "(models/, made by <code>kf train periodic</code>, each with its command "
             "below; ~2 min of training per function would not fit the report's budget); "
             "the 3-seed columns are the documented results (docs/results/), which "
             "<code>kf report --full</code> re-measures.");
}

}  // namespace

void report_periodic(viz::report& rep, report_context& ctx) {
  rep.section("periodic", "Seed 003 §5: Transformers forecasting periodic functions",
              periodic_intro(ctx.full));
  std::vector<std::vector<std::string>> rows;
  std::vector<periodic_map> maps;
  std::string how;
  ctx.summary.push_back(
      "Seed 003, periodic functions: test MSE of a 200-step rollout (Transformer: code "
      "configuration, improved setting, seed 0)");
  for (const auto fn : {model::periodic_function::sin, model::periodic_function::sin_exp,
                        model::periodic_function::square}) {
    const auto data = model::periodic_make(fn);
    const std::string name = model::periodic_function_name(fn);
    const double paper = model::periodic_paper_mse(fn);
    auto shown = ctx.full ? periodic_train_all(data, fn) : periodic_from_models(ctx.models, fn);
    how += shown.how;
    auto e = demo::periodic_evaluate(data, *shown.model);
    const double mse = e.transformer.mse_rollout;
    // --full: the medians measured now beside the documented ones, so the page (and the
    // terminal summary) says whether the documented results were reproduced.
    const auto doc = model::periodic_documented_results(fn);
    auto cell = [&](const model::mse_spread& now, const model::mse_spread& documented) {
      return spread_text(now) +
             (ctx.full ? fmt::format("; documented {}", num(documented.median, 3)) : "");
    };
    rows.push_back({name, num(paper, 3), num(mse, 3), cell(shown.spreads.improved, doc.improved),
                    cell(shown.spreads.faithful, doc.faithful), num(e.nw.loo.mse_rollout, 3),
                    num(e.nw.scaled.mse_rollout, 3)});
    if (ctx.full)
      ctx.summary.push_back(fmt::format(
          "  {:8} 3-seed medians now: improved {} (documented {}), faithful {} (documented {})",
          name, num(shown.spreads.improved.median, 3), num(doc.improved.median, 3),
          num(shown.spreads.faithful.median, 3), num(doc.faithful.median, 3)));
    ctx.summary.push_back(fmt::format(
        "  {:8} paper {:<7} Transformer {:<9} ({}) NW {:.3g}", name, num(paper, 3), num(mse, 3),
        mse <= paper ? "under the paper" : "ABOVE the paper", e.nw.loo.mse_rollout));
    periodic_figure(rep, data, name, e, paper);
    maps.push_back({name, std::move(e.attention)});
  }
  const std::string three = ctx.full ? "measured now" : "documented";
  rep.table({"function", "paper", "Transformer, improved setting, seed 0",
             "improved, 3 seeds: median (min – max), " + three,
             "faithful protocol, 3 seeds: median (min – max), " + three, "NW forecaster",
             "NW, RMS-scaled windows (improved)"},
            rows,
            "Test MSE over 200 rollout steps. Improved setting: code configuration with batch 64, "
            "warmup + cosine learning rate, dropout 0.05 (docs/results/"
            "periodic_code_improved_dropout005.md); faithful: the protocol's batch 512, constant "
            "learning rate 1e-3, dropout 0.1 (docs/results/periodic_code_faithful.md). The last "
            "column is the NW forecaster with each window divided by its RMS, so the smoother "
            "follows sin·exp's growing amplitude beyond the training range.",
            "periodic_table");
  rep.paragraph("How the Transformers shown were trained (seed 0, 100 epochs each):<ul>" + how +
                "</ul>");
  periodic_attention_figure(rep, ctx, maps);
  rep.end_section();
}

}  // namespace kf::cli
