// kf report's sections: each draws one part of the page from the library's demonstrations
// (explore/demos.hpp: the seeds; explore/trained_demos.hpp: the trained models) onto the page
// builder (viz/report.hpp). report_seeds.cpp: seeds 000, 001 and 004; report_attention.cpp: seed
// 002 and seed 003's RBF identity; report_periodic.cpp: the periodic experiment; report_lm.cpp:
// the language model; cmd_report.cpp: the options, the checkpoints and the order of the sections.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "kernelformer/explore/demos.hpp"
#include "kernelformer/model/checkpoint.hpp"
#include "kernelformer/viz/report.hpp"

namespace kf::cli {

// Short names for the page's formatting, as the sections use them on every line.
inline std::string num(double v, int digits = 4) { return viz::format_number(v, digits); }
inline std::string esc(const std::string& s) { return viz::html_escape(s); }
using viz::csv_columns;
using viz::line_series;
using viz::point_series;

inline viz::figure make_figure(std::string title, std::string xlabel, std::string ylabel) {
  viz::figure f;
  f.title = std::move(title);
  f.xlabel = std::move(xlabel);
  f.ylabel = std::move(ylabel);
  return f;
}

// What the sections share: kf report's options, and what they collect for the end of the page.
struct report_context {
  bool full = false, quiet = false;
  std::string models;   // the folder of the report's checkpoints
  std::string trained;  // --full: where each trained run is kept (OUT/trained), and reused from
  std::vector<demo::head_kernel_summary> diag;  // the head-as-kernel table, one row per head
  std::vector<std::string> summary;             // lines printed when the page is written
};

// The seeds' demonstrations (built-in data; seed 002 trains a small head for a second or two).
void report_seed000(viz::report& rep, report_context& ctx);
void report_seed001(viz::report& rep, report_context& ctx);
void report_seed004(viz::report& rep, report_context& ctx);
void report_seed002(viz::report& rep, report_context& ctx);
void report_seed003(viz::report& rep, report_context& ctx);

// Seed 003 §5 (the periodic experiment) and seed 000's language model on "The cat sat on the
// mat.": checkpoints from ctx.models by default, trained now with --full.
void report_periodic(viz::report& rep, report_context& ctx);
void report_language_model(viz::report& rep, report_context& ctx);

// A checkpoint's metadata value, or FALLBACK when it has none (older checkpoints lack some).
std::string metadata_or(const model::checkpoint& ck, const std::string& key,
                        const std::string& fallback);
// Loads one of the report's checkpoints; throws user_error saying how to make a missing one.
model::checkpoint report_checkpoint(const std::string& path);

// The folder of the report's checkpoints: given, else $KF_MODELS_DIR, the installed
// share/kernelformer/models, the source tree's models/. Throws user_error when none has a
// README.md.
std::string report_models_dir(const std::string& given);

}  // namespace kf::cli
