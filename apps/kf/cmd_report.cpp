// kf report — the seeds' demonstrations, reproduced and measured, as one self-contained HTML page
// (DIR/index.html, figures beside it in DIR/figures as SVG + PNG + the CSV behind each).
// Sections: seed 000 (bandwidths; the nearly-linear case), seed 001 (KNN vs Gaussian kernel
// regression), seed 004 (kernel shapes; attention pooling's special cases), seed 002 (kernel
// smoothing vs attention on positional encodings; attention trained to mimic the smoother; the
// head-as-kernel diagnostic), seed 003 (the RBF view of attention after LayerNorm; the periodic
// experiment), seed 000 again (a language model's attention on "The cat sat on the mat.").
// This file: the options, the checkpoints' folder, and the sections in order (report_*.cpp draw
// them; explore/demos.hpp and explore/trained_demos.hpp compute them; viz/report.hpp writes).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "report_sections.hpp"

namespace kf::cli {
namespace {

namespace fs = std::filesystem;

struct report_options {
  std::string out = "kf-report", sections = "all", models;
  bool full = false, quiet = false;
};

// The sections in page order: id (for --sections), what the progress line says, the drawing.
struct report_step {
  const char* id;
  const char* what;
  void (*draw)(viz::report&, report_context&);
};
constexpr report_step kSteps[] = {
    {"seed000", "seed 000 (bandwidths)", report_seed000},
    {"seed001", "seed 001 (KNN vs Gaussian)", report_seed001},
    {"seed004", "seed 004 (kernels, pooling)", report_seed004},
    {"seed002", "seed 002 (smoothing vs attention, mimicry)", report_seed002},
    {"seed003", "seed 003 (RBF view, LayerNorm)", report_seed003},
    {"periodic", "periodic experiment", report_periodic},
    {"lm", "language model", report_language_model}};

// The chosen section ids, checked against kSteps.
std::vector<std::string> chosen_sections(const std::string& text) {
  std::vector<std::string> all;
  for (const auto& s : kSteps) all.emplace_back(s.id);
  if (text == "all") return all;
  const auto chosen = split_list(text, "--sections");
  for (const auto& c : chosen)
    if (std::find(all.begin(), all.end(), c) == all.end())
      throw user_error(
          fmt::format("--sections: unknown section '{}' (seed000, seed001, seed004, "
                      "seed002, seed003, periodic, lm, or all)",
                      c));
  return chosen;
}

// The page's heading and the paragraph under it.
viz::report_head page_head() {
  return {"kernelformer report: attention is kernel smoothing",
          "Attention is Nadaraya–Watson kernel smoothing",
          "One primitive, out<sub>i</sub> = Σ<sub>j</sub> K(q<sub>i</sub>, k<sub>j</sub>) "
          "v<sub>j</sub> /\nΣ<sub>j</sub> K(q<sub>i</sub>, k<sub>j</sub>), computes every curve "
          "and every attention head\nbelow. Every number on this page was measured when the page "
          "was made, except the columns marked\n\"documented\", which cite their file in the "
          "repository; each figure links its SVG, PNG and the\nCSV behind it."};
}

// The last section: every head above, read as a kernel (rows collected by the sections).
void diagnostic_section(viz::report& rep, const report_context& ctx) {
  rep.section("diagnostic", "Head-as-kernel diagnostic: every head above, read as a kernel",
              "Best kernel shape per head with its median bandwidth and offset (in the head's "
              "position units: x for seed 002, positions for the periodic and language models) "
              "and R²; the last column is the Gaussian fit's R² for comparison. A causal head "
              "that looks back has a negative offset.");
  std::vector<std::vector<std::string>> rows;
  for (const auto& d : ctx.diag)
    rows.push_back({d.head, d.kernel, num(d.bandwidth, 3), num(d.offset, 3), num(d.r2, 4),
                    num(d.gaussian_r2, 4)});
  rep.table({"head", "best shape", "median bandwidth", "median offset", "R²", "Gaussian R²"}, rows,
            "The head-as-kernel diagnostic.", "head_kernel_table");
  rep.end_section();
}

void run(const report_options& o) {
  report_context ctx;
  ctx.full = o.full;
  ctx.quiet = o.quiet;
  const auto chosen = chosen_sections(o.sections);
  const auto wanted = [&](const std::string& id) {
    return std::find(chosen.begin(), chosen.end(), id) != chosen.end();
  };
  // The checkpoints are found before anything is written, so a missing folder fails at once.
  if ((wanted("periodic") || wanted("lm")) && !o.full) ctx.models = report_models_dir(o.models);
  // The folder is checked now and made at the end, when the page is written: a failed or killed
  // report leaves none. Only --full keeps OUT/trained/ from the start (its runs, for a resume).
  check_output_dir(o.out, "--out");
  if (o.full && wanted("periodic")) {
    ctx.trained = (fs::path(o.out) / "trained").string();
    make_output_dir(ctx.trained, "--out");
  }
  const auto t0 = std::chrono::steady_clock::now();
  viz::report rep(o.out, page_head());
  for (const auto& s : kSteps) {
    if (!wanted(s.id)) continue;
    // Progress on stderr (with the bars); stdout keeps the results: the summary, the page.
    if (!o.quiet) fmt::print(stderr, "kf report: {}\n", s.what);
    s.draw(rep, ctx);
  }
  diagnostic_section(rep, ctx);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.commit(fmt::format("Generated by kf report{} in {:.0f} s.", o.full ? " --full" : "", secs));
  if (o.quiet) return;
  if (!ctx.summary.empty()) {
    fmt::print("\n");
    for (const auto& l : ctx.summary) fmt::print("{}\n", l);
  }
  fmt::print(
      "kf report: done in {:.0f} s. Open {}/index.html in a browser (it works offline). For the "
      "interactive explorer: kf serve --port 8080, then http://127.0.0.1:8080/\n",
      secs, o.out);
}

}  // namespace

std::string metadata_or(const model::checkpoint& ck, const std::string& key,
                        const std::string& fallback) {
  const auto it = ck.metadata.find(key);
  return it == ck.metadata.end() ? fallback : it->second;
}

model::checkpoint report_checkpoint(const std::string& path) {
  try {
    return model::checkpoint_load(path);
  } catch (const std::exception& e) {
    throw user_error(
        fmt::format("kf report: {} (train it with the command in models/README.md, "
                    "or run kf report --full)",
                    e.what()));
  }
}

std::string report_models_dir(const std::string& given) {
  std::vector<fs::path> candidates;
  if (!given.empty()) {
    candidates.emplace_back(given);
  } else {
    if (const char* env = std::getenv("KF_MODELS_DIR")) candidates.emplace_back(env);
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec)
      candidates.push_back(exe.parent_path().parent_path().parent_path() /
                           "share/kernelformer/models");
#ifdef KF_SOURCE_MODELS_DIR
    candidates.emplace_back(KF_SOURCE_MODELS_DIR);
#endif
  }
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::exists(c / "README.md", ec)) return c.string();
  }
  throw user_error(given.empty()
                       ? "kf report: cannot find the report's checkpoints (models/); pass --models "
                         "DIR, or --full to train them now"
                       : fmt::format("--models {}: no README.md there (the folder of the report's "
                                     "checkpoints)",
                                     given));
}

void add_report(CLI::App& app) {
  auto o = std::make_shared<report_options>();
  CLI::App* sub = app.add_subcommand(
      "report", "Write the HTML report: the seeds' demonstrations, measured, with figures");
  sub->add_option("--out", o->out, "output directory (index.html + figures/)")
      ->capture_default_str();
  sub->add_flag(
      "--full", o->full,
      "train the models instead of evaluating models/: the periodic code configuration x 3 "
      "seeds in the improved and the faithful setting (18 runs, as many at a time as there are "
      "cores, one thread each; each run is kept in OUT/trained/ and reused by the next --full "
      "with the same --out, so an interrupted --full resumes), the word-level language model. "
      "About 270 core-minutes on a Zen 1 EPYC (2¼ hours on its 2 cores), less than half that on "
      "newer cores");
  sub->add_option("--sections", o->sections,
                  "comma list of seed000, seed001, seed004, seed002, seed003, periodic, lm")
      ->capture_default_str();
  sub->add_option("--models", o->models,
                  "folder of the checkpoints the periodic and language-model sections evaluate "
                  "(default: the repository's models/, see models/README.md)");
  sub->add_flag("--quiet", o->quiet, "print nothing on success");
  sub->footer(
      "Examples:\n"
      "  kf report --out report                          # about a minute on 2 cores\n"
      "  kf report --out report --sections seed001,seed002\n"
      "  kf report --out report --full                   # the real experiments: hours\n"
      "  kf report --out report --full                   # again: reuses report/trained/*");
  sub->callback([o] { run(*o); });
}

}  // namespace kf::cli
