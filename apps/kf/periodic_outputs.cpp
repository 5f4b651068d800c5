#include "periodic_outputs.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kernelformer/viz/plot.hpp"

namespace kf::cli {

void stage_periodic_outputs(io::atomic_writer& w, const std::string& dir, const periodic_run& r,
                            model::sequence_regressor<float>& m) {
  std::string loss = "epoch,train_loss,seconds\n";
  for (std::size_t e = 0; e < r.tr.epoch_loss.size(); ++e)
    loss += fmt::format("{},{},{}\n", e + 1, r.tr.epoch_loss[e], r.tr.epoch_seconds[e]);
  w.stage(dir + "/loss.csv", loss);
  std::string pred = "x,target,rollout,teacher_forced\n";
  for (std::size_t s = 0; s < r.data.test_x.size(); ++s)
    pred += fmt::format("{},{},{},{}\n", r.data.test_x[s], r.data.test_y[s], r.fc.rollout[s],
                        r.fc.teacher_forced[s]);
  w.stage(dir + "/prediction.csv", pred);
  viz::figure f;  // seed 003 Fig. 3: source, target, prediction
  f.title = fmt::format("{}: rollout MSE {:.3g} ({} config, {})", r.function, r.fc.mse_rollout,
                        r.config, kernel_name(r.cfg.block.kernel.first));
  // Move-assigned temporaries: GCC 12 at -O3 flags assigning a literal here with a false
  // -Wrestrict inside libstdc++ (GCC bug 105651).
  f.xlabel = std::string("x");
  f.ylabel = std::string("y");
  viz::series src{viz::series::kind::line, {}, {}, {}, "source (training)", viz::kBlue, 1.5, 1};
  for (std::size_t t = 800; t < r.data.series.size(); ++t)
    src.x.push_back(0.1 * double(t)), src.y.push_back(r.data.series[t]);
  viz::series tgt{
      viz::series::kind::line, r.data.test_x, r.data.test_y, {}, "target", viz::kGreen, 2, 1};
  viz::series prd{viz::series::kind::line,
                  r.data.test_x,
                  r.fc.rollout,
                  {},
                  "prediction (rollout)",
                  viz::kRed,
                  2,
                  1};
  f.data = {src, tgt, prd};
  w.stage(dir + "/prediction.png", viz::render(f, viz::image_format::png));
  // Seed 003 Fig. 4: the attention map of the last layer's first head on the test context.
  {
    matrix<float> ctx(1, static_cast<index>(r.data.context.size()));
    for (std::size_t i = 0; i < r.data.context.size(); ++i)
      ctx(0, static_cast<index>(i)) = static_cast<float>(r.data.context[i]);
    float p = 0;
    m.forward(ctx.cview(), std::span<float>(&p, 1), nullptr);
    const index layer = r.cfg.layers - 1;
    const matrix<float> att = m.attention_weights(layer, 0, 0);
    viz::heatmap hm;
    hm.title = fmt::format("attention, layer {} head 1, test context ({})", layer + 1, r.function);
    hm.xlabel = "key position";
    hm.ylabel = "query position";
    hm.rows = static_cast<int>(att.rows());
    hm.cols = static_cast<int>(att.cols());
    hm.values.assign(att.values().begin(), att.values().end());
    w.stage(dir + "/attention.png", viz::render(hm, viz::image_format::png));
    std::string csv;
    for (index i = 0; i < att.rows(); ++i) {
      for (index j = 0; j < att.cols(); ++j) csv += fmt::format("{}{}", j ? "," : "", att(i, j));
      csv += "\n";
    }
    w.stage(dir + "/attention.csv", csv);
  }
  viz::figure l;
  // A log axis when it can have one: the loss falls over decades, and a linear axis shows
  // only the first epochs' drop.
  l.log_y = std::all_of(r.tr.epoch_loss.begin(), r.tr.epoch_loss.end(),
                        [](double v) { return v > 0 && std::isfinite(v); });
  l.title = l.log_y ? "training loss (MSE, log scale)" : "training loss (MSE)";
  l.xlabel = "epoch";
  l.ylabel = "loss";
  viz::series ls{viz::series::kind::line, {}, r.tr.epoch_loss, {}, "train", viz::kBlue, 2, 1};
  for (std::size_t e = 0; e < r.tr.epoch_loss.size(); ++e) ls.x.push_back(double(e + 1));
  l.data = {ls};
  w.stage(dir + "/loss.png", viz::render(l, viz::image_format::png));
}

}  // namespace kf::cli
