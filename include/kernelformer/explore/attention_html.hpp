// kernelformer/explore/attention_html.hpp — a bertviz-style page of a token model's attention.
//
// attention_view_collect runs a token model (model/token_model.hpp) on one input and gathers, for
// every attention site (decoder self-attention; with an encoder also encoder self-attention and
// decoder cross-attention), layer and head, the normalized weights and the head read as a kernel
// smoother (explore/inspect.hpp's head_inspect: best shape, bandwidth, offset, R², df = tr W).
// attention_view_html turns that into one self-contained HTML page (inline CSS and JS, the data
// embedded as JSON, no network): a head view (pick site, layer and head or all heads in colour;
// the tokens in two columns; hovering or clicking a token draws a line to every token it attends
// to, opacity = weight), a model view (every layer × head as a thumbnail heatmap; a click selects
// it in the head view) and the head-as-kernel numbers beside each head.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "kernelformer/explore/inspect.hpp"
#include "kernelformer/model/token_model.hpp"
#include "kernelformer/tensor.hpp"

namespace kf {

// One attention site: query tokens (rows) attend to key tokens (columns).
struct attention_site_view {
  std::string id;                          // "decoder_self", "encoder_self", "decoder_cross"
  std::string title;                       // "decoder self-attention", …
  std::vector<std::string> queries, keys;  // token labels, in position order
  index layers = 0, heads = 0;
  std::vector<matrix<double>> weights;  // layer-major (layers · heads), each (queries, keys)
  std::vector<head_inspection> heads_as_kernels;  // layer-major, head_inspect of each weights[i]
};

struct attention_view {
  std::string title;   // the page's heading (the model file, say)
  std::string detail;  // a line under it (architecture, kernel, the text)
  std::vector<attention_site_view> sites;
};

// Runs M in evaluation mode on the target tokens (and, for an encoder–decoder model, the source
// tokens) and collects every site. LABELS / SOURCE_LABELS: one display string per token. Throws
// std::invalid_argument when the lengths disagree, a sequence is empty or longer than the
// context, or source tokens are given to (or missing from) the wrong kind of model.
attention_view attention_view_collect(model::token_model<float>& m, std::span<const index> tokens,
                                      const std::vector<std::string>& labels,
                                      std::span<const index> source = {},
                                      const std::vector<std::string>& source_labels = {});

// The data the page embeds: {"title", "detail", "sites": [{"id", "title", "queries", "keys",
// "layers", "heads", "weights": [layer][head][query][key], "numbers": [layer][head]{"shape",
// "bandwidth", "offset", "r2", "df"}}]} as compact JSON, with '<', '>' and '&' written as \u
// escapes so that no token can close the <script> element that holds it. Throws
// std::invalid_argument when a site's shapes are inconsistent.
std::string attention_view_json(const attention_view& v);

// The whole page (UTF-8 HTML, no external resources).
std::string attention_view_html(const attention_view& v);

}  // namespace kf
