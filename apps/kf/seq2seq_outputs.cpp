// kf train seq2seq's --out folder, checkpoint and closing lines (seq2seq_outputs.hpp).
#include "seq2seq_outputs.hpp"

#include <fmt/format.h>

#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/viz/plot.hpp"

namespace kf::cli {
namespace {

viz::figure loss_figure(const seq2seq_run& r) {
  viz::figure f;
  f.title =
      fmt::format("seq2seq, {} ({} config): cross-entropy per target token", r.data, r.config);
  f.xlabel = std::string("step");
  f.ylabel = std::string("loss (nats/token)");
  // A log axis: the loss falls over decades once the task is learnt.
  f.log_y = true;
  viz::series ls{viz::series::kind::line, {}, r.tr.losses, {}, "train (batch)", viz::kBlue, 1, 0.6};
  for (std::size_t i = 0; i < r.tr.losses.size(); ++i) ls.x.push_back(double(i + 1));
  viz::series vs{viz::series::kind::line, {}, {}, {}, "validation", viz::kRed, 2.5, 1};
  for (const auto& e : r.tr.evals) vs.x.push_back(double(e.step)), vs.y.push_back(e.val_loss);
  f.data = {ls, vs};
  return f;
}

viz::figure accuracy_figure(const seq2seq_run& r) {
  viz::figure f;
  f.title = fmt::format("seq2seq, {}: validation accuracy", r.data);
  f.xlabel = std::string("step");
  f.ylabel = std::string("accuracy");
  viz::series ex{viz::series::kind::line, {}, {}, {}, "exact match (greedy)", viz::kRed, 2.5, 1};
  viz::series tok{viz::series::kind::line,           {},         {}, {},
                  "token accuracy (teacher-forced)", viz::kBlue, 2,  1};
  for (const auto& e : r.tr.evals) {
    ex.x.push_back(double(e.step)), ex.y.push_back(e.exact_match);
    tok.x.push_back(double(e.step)), tok.y.push_back(e.token_accuracy);
  }
  f.data = {ex, tok};
  return f;
}

// Every decoder layer × head's cross-attention on the first validation pair: rows are the
// target characters each decoder position predicts (then </s>), columns the source characters.
void stage_cross_attention(io::atomic_writer& w, const std::string& dir, const seq2seq_run& r,
                           model::token_model<float>& m, const model::seq2seq_vocab& v) {
  const model::seq2seq_pair& p = r.val->front();
  const auto& cfg = m.config();
  std::vector<std::string> xt, yt;
  for (index id : v.encode(p.source)) xt.push_back(v.label(id));
  for (index id : v.encode(p.target)) yt.push_back(v.label(id));
  yt.push_back(v.label(v.eos));
  std::vector<viz::heatmap> panels;
  std::string csv = "layer,head,target_position,source_position,target,source,weight\n";
  for (index l = 0; l < cfg.decoder_layers; ++l)
    for (index h = 0; h < cfg.block.heads; ++h) {
      const matrix<float> a = model::seq2seq_cross_attention(m, v, p, l, h);
      viz::heatmap hm;
      hm.title = fmt::format("layer {}, head {}", l + 1, h + 1);
      if (r.alignment)
        hm.title += fmt::format(" ({:.0f}% aligned)",
                                100 * r.alignment->per_head[std::size_t(l * cfg.block.heads + h)]);
      hm.xlabel = std::string("source character");
      hm.ylabel = std::string("output character");
      hm.rows = static_cast<int>(a.rows());
      hm.cols = static_cast<int>(a.cols());
      hm.values.assign(a.values().begin(), a.values().end());
      hm.xticks = xt;
      hm.yticks = yt;
      hm.width = 520, hm.height = 480;
      for (index i = 0; i < a.rows(); ++i)
        for (index j = 0; j < a.cols(); ++j)
          csv += fmt::format("{},{},{},{},\"{}\",\"{}\",{}\n", l + 1, h + 1, i, j,
                             yt[std::size_t(i)] == "\"" ? "\"\"" : yt[std::size_t(i)],
                             xt[std::size_t(j)] == "\"" ? "\"\"" : xt[std::size_t(j)], a(i, j));
      panels.push_back(std::move(hm));
    }
  // "aligned": the head's weight on the source the character comes from, over the validation
  // pairs (seq2seq_cross_alignment); uniform attention would score the chance figure.
  const std::string title = fmt::format(
      "cross-attention, \"{}\" -> \"{}\"{}", p.source, p.target,
      r.alignment ? fmt::format(" (aligned: chance {:.0f}%)", 100 * r.alignment->chance) : "");
  w.stage(dir + "/cross_attention.png", viz::render_grid(panels, static_cast<int>(cfg.block.heads),
                                                         title, viz::image_format::png));
  w.stage(dir + "/cross_attention.csv", csv);
}

}  // namespace

nlohmann::json seq2seq_summary(const seq2seq_run& r, const model::seq2seq_preset& p,
                               const model::seq2seq_eval& fin, index parameters) {
  const auto& val = *r.val;
  nlohmann::json js = {{"data", r.data},
                       {"train_pairs", r.train_pairs},
                       {"val_pairs", val.size()},
                       {"val_unknown_characters", r.val_unknown},
                       {"config", r.config},
                       {"positions", r.positions},
                       {"parameters", parameters},
                       {"vocab", p.model.vocab},
                       {"context", p.model.context},
                       {"steps", p.steps},
                       {"batch", p.batch},
                       {"lr", p.lr},
                       {"seed", r.seed},
                       {"val_exact_match", fin.exact_match},
                       {"val_token_accuracy", fin.token_accuracy},
                       {"val_loss", fin.val_loss},
                       {"train_loss", r.tr.evals.back().train_loss},
                       {"train_seconds", r.tr.seconds},
                       {"pairs_per_second", r.tr.pairs_per_second}};
  for (const auto& e : r.tr.evals)
    js["evals"].push_back({{"step", e.step},
                           {"train_loss", e.train_loss},
                           {"val_loss", e.val_loss},
                           {"token_accuracy", e.token_accuracy},
                           {"exact_match", e.exact_match},
                           {"seconds", e.seconds}});
  js["example"] = {
      {"source", val[0].source}, {"target", val[0].target}, {"predicted", r.predictions[0]}};
  js["cross_alignment"] = nullptr;
  if (const auto& a = r.alignment)
    js["cross_alignment"] = {
        {"measure", r.task->name == "reverse"
                        ? "mean cross-attention weight on the mirrored source position"
                        : "mean cross-attention weight on the source field of the character"},
        {"best_layer", a->best_layer + 1},
        {"best_head", a->best_head + 1},
        {"best", a->best},
        {"chance", a->chance},
        {"per_head", a->per_head},
        {"characters", a->characters},
        {"pairs", std::min<std::size_t>(kSeq2seqAlignmentPairs, val.size())}};
  return js;
}

void stage_seq2seq_outputs(io::atomic_writer& w, const std::string& dir, const seq2seq_run& r,
                           model::token_model<float>& m, const model::seq2seq_vocab& v) {
  std::string loss = "step,train_loss\n";
  for (std::size_t i = 0; i < r.tr.losses.size(); ++i)
    loss += fmt::format("{},{}\n", i + 1, r.tr.losses[i]);
  w.stage(dir + "/loss.csv", loss);
  std::string ev = "step,train_loss,val_loss,token_accuracy,exact_match,seconds\n";
  for (const auto& e : r.tr.evals)
    ev += fmt::format("{},{},{},{},{},{}\n", e.step, e.train_loss, e.val_loss, e.token_accuracy,
                      e.exact_match, e.seconds);
  w.stage(dir + "/eval.csv", ev);
  const viz::figure lf = loss_figure(r);
  w.stage(dir + "/loss.png", viz::render(lf, viz::image_format::png));
  w.stage(dir + "/loss.svg", viz::render(lf, viz::image_format::svg));
  w.stage(dir + "/accuracy.png", viz::render(accuracy_figure(r), viz::image_format::png));
  // Tabs and line ends cannot occur in a pair (the reader refuses control characters).
  std::string pred = "source\ttarget\tpredicted\tcorrect\n";
  for (std::size_t i = 0; i < r.predictions.size(); ++i) {
    const auto& p = (*r.val)[i];
    pred += fmt::format("{}\t{}\t{}\t{}\n", p.source, p.target, r.predictions[i],
                        p.target == r.predictions[i] ? 1 : 0);
  }
  w.stage(dir + "/predictions.tsv", pred);
  stage_cross_attention(w, dir, r, m, v);
}

void write_seq2seq_outputs(const seq2seq_run& r, model::token_model<float>& m,
                           const model::seq2seq_vocab& v, const train_files& f,
                           const std::map<std::string, std::string>& md, const nlohmann::json& js) {
  io::atomic_writer w{io::staging{.make_folders = true}};  // folders made, or removed on a failure
  if (!f.save.empty()) w.stage(f.save, model::checkpoint_encode(m.params(), md));
  if (!f.summary.empty()) w.stage(f.summary, js.dump(2) + "\n");
  if (!f.out.empty()) {
    w.stage(f.out + "/summary.json", js.dump(2) + "\n");
    stage_seq2seq_outputs(w, f.out, r, m, v);
  }
  w.commit();
}

void print_seq2seq_result(const seq2seq_run& r, const model::seq2seq_eval& fin) {
  const model::seq2seq_pair& first = r.val->front();
  fmt::print("validation: exact match {:.1f}%, token accuracy {:.1f}%, loss {:.3g}; {:.1f} s\n",
             100 * fin.exact_match, 100 * fin.token_accuracy, fin.val_loss, r.tr.seconds);
  fmt::print("example: \"{}\" -> \"{}\" (target \"{}\")\n", first.source, r.predictions[0],
             first.target);
  if (r.alignment)
    fmt::print(
        "cross-attention: layer {} head {} puts {:.1f}% of its weight where the {} says "
        "(chance {:.1f}%)\n",
        r.alignment->best_layer + 1, r.alignment->best_head + 1, 100 * r.alignment->best,
        r.task->name, 100 * r.alignment->chance);
}

}  // namespace kf::cli
