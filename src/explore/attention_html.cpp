// A bertviz-style page of a token model's attention (viz/attention_html.hpp). The page's CSS and
// JS are in attention_html_page.cpp; this file gathers the data and assembles the page.
#include "kernelformer/explore/attention_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "explore/attention_html_page.hpp"

namespace kf {
namespace {

// One site of the last forward: every layer and head's weights and their head-as-kernel reading.
attention_site_view collect_site(const model::token_model<float>& m, model::attention_site site,
                                 index layers, const std::vector<std::string>& queries,
                                 const std::vector<std::string>& keys) {
  attention_site_view s;
  s.id = site == model::attention_site::encoder_self   ? "encoder_self"
         : site == model::attention_site::decoder_self ? "decoder_self"
                                                       : "decoder_cross";
  s.title = site == model::attention_site::encoder_self   ? "encoder self-attention"
            : site == model::attention_site::decoder_self ? "decoder self-attention"
                                                          : "decoder cross-attention";
  s.queries = queries;
  s.keys = keys;
  s.layers = layers;
  s.heads = m.config().block.heads;
  for (index l = 0; l < s.layers; ++l)
    for (index h = 0; h < s.heads; ++h) {
      const matrix<float> w = m.attention_weights(site, l, h, 0);  // (queries, keys), item 0
      matrix<double> d(w.rows(), w.cols());
      std::copy(w.values().begin(), w.values().end(), d.values().begin());
      s.heads_as_kernels.push_back(head_inspect(d.cview(), l, h));
      s.heads_as_kernels.back().site = s.id;  // head_inspect leaves "self"
      s.weights.push_back(std::move(d));
    }
  return s;
}

// A view may be built by hand (tests, other callers), so the JSON writer checks what site_json
// indexes: layers · heads weight matrices and readings, each (queries, keys).
void check_site(const attention_site_view& s) {
  const auto n = static_cast<std::size_t>(s.layers * s.heads);
  if (s.layers < 1 || s.heads < 1 || s.weights.size() != n || s.heads_as_kernels.size() != n)
    throw std::invalid_argument(
        fmt::format("attention site '{}': {} layers × {} heads but {} weight matrices and {} "
                    "head readings",
                    s.id, s.layers, s.heads, s.weights.size(), s.heads_as_kernels.size()));
  for (const auto& w : s.weights)
    if (w.rows() != static_cast<index>(s.queries.size()) ||
        w.cols() != static_cast<index>(s.keys.size()))
      throw std::invalid_argument(fmt::format(
          "attention site '{}': a weight matrix is {}×{} for {} query and {} key tokens", s.id,
          w.rows(), w.cols(), s.queries.size(), s.keys.size()));
}

// One site as the page's JSON: weights[layer][head][query][key] and numbers[layer][head], the
// best-fitting shape's median bandwidth and offset, its R², and df = tr W.
nlohmann::json site_json(const attention_site_view& s) {
  nlohmann::json weights = nlohmann::json::array(), numbers = nlohmann::json::array();
  for (index l = 0; l < s.layers; ++l) {
    nlohmann::json wl = nlohmann::json::array(), nl = nlohmann::json::array();
    for (index h = 0; h < s.heads; ++h) {
      const auto k = static_cast<std::size_t>(l * s.heads + h);
      const matrix<double>& w = s.weights[k];
      nlohmann::json rows = nlohmann::json::array();
      for (index i = 0; i < w.rows(); ++i) {
        nlohmann::json row = nlohmann::json::array();
        // The shortest decimal that reads back as the float the model computed (as a double
        // it would print 17 digits): exact for the model's precision and a small page.
        for (index j = 0; j < w.cols(); ++j)
          row.push_back(std::stod(fmt::format("{}", static_cast<float>(w(i, j)))));
        rows.push_back(std::move(row));
      }
      wl.push_back(std::move(rows));
      const head_inspection& hi = s.heads_as_kernels[k];
      const auto& b = hi.fit.shapes.at(static_cast<std::size_t>(hi.fit.best));
      nl.push_back({{"shape", b.kernel},
                    {"bandwidth", b.median_bandwidth},
                    {"offset", b.median_offset},
                    {"r2", b.r2},
                    {"df", hi.df}});
    }
    weights.push_back(std::move(wl));
    numbers.push_back(std::move(nl));
  }
  return {{"id", s.id},         {"title", s.title}, {"queries", s.queries}, {"keys", s.keys},
          {"layers", s.layers}, {"heads", s.heads}, {"weights", weights},   {"numbers", numbers}};
}

// Text for HTML content or a quoted attribute: the five characters with a meaning there.
std::string html_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    switch (c) {
      case '<':
        r += "&lt;";
        break;
      case '>':
        r += "&gt;";
        break;
      case '&':
        r += "&amp;";
        break;
      case '"':
        r += "&quot;";
        break;
      case '\'':
        r += "&#39;";
        break;
      default:
        r += c;
    }
  }
  return r;
}

}  // namespace

attention_view attention_view_collect(model::token_model<float>& m, std::span<const index> tokens,
                                      const std::vector<std::string>& labels,
                                      std::span<const index> source,
                                      const std::vector<std::string>& source_labels) {
  const model::token_model_config& cfg = m.config();
  const auto check_len = [&](std::size_t n, std::size_t nl, const char* what) {
    if (n == 0 || static_cast<index>(n) > cfg.context)
      throw std::invalid_argument(
          fmt::format("the {} has {} tokens; the model takes 1..{}", what, n, cfg.context));
    if (nl != n)
      throw std::invalid_argument(fmt::format("the {} has {} tokens but {} labels", what, n, nl));
  };
  // Every input is checked before the forward: a bad call throws with the model untouched.
  check_len(tokens.size(), labels.size(), "text");
  if (m.is_encoder_decoder())
    check_len(source.size(), source_labels.size(), "source");
  else if (!source.empty())
    throw std::invalid_argument("a decoder-only model takes no source tokens");
  model::token_input in;  // one batch item
  in.t = static_cast<index>(tokens.size());
  in.tokens = tokens;
  if (m.is_encoder_decoder()) {
    in.s = static_cast<index>(source.size());
    in.src = source;
  }
  m.forward(in, {}, nullptr);  // no targets; nullptr: evaluation mode, no dropout
  // Sites in the page's order: encoder self (keys = source), decoder self, cross (T × S).
  attention_view v;
  if (m.is_encoder_decoder())
    v.sites.push_back(collect_site(m, model::attention_site::encoder_self, cfg.encoder_layers,
                                   source_labels, source_labels));
  v.sites.push_back(
      collect_site(m, model::attention_site::decoder_self, cfg.decoder_layers, labels, labels));
  if (m.is_encoder_decoder())
    v.sites.push_back(collect_site(m, model::attention_site::decoder_cross, cfg.decoder_layers,
                                   labels, source_labels));
  return v;
}

std::string attention_view_json(const attention_view& v) {
  if (v.sites.empty()) throw std::invalid_argument("an attention view needs at least one site");
  nlohmann::json js = {
      {"title", v.title}, {"detail", v.detail}, {"sites", nlohmann::json::array()}};
  for (const auto& s : v.sites) {
    check_site(s);
    js["sites"].push_back(site_json(s));
  }
  // Token text may hold anything, including bytes that are not UTF-8 on their own (a character
  // tokenizer cuts multi-byte characters): those become U+FFFD.
  const std::string raw = js.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // '<', '>' and '&' occur only inside JSON strings, where \u escapes mean the same.
  std::string out;
  out.reserve(raw.size());
  for (char c : raw) {
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else
      out += c;
  }
  return out;
}

// Layout: head (title, inline CSS), the static body, the data as a JSON <script> (inert: the
// browser does not run type application/json), then the script that reads it and draws.
std::string attention_view_html(const attention_view& v) {
  const std::string data = attention_view_json(v);
  std::string page;
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<title>" + html_escape(v.title.empty() ? "attention" : v.title) + "</title>\n";
  page += "<style>\n" + std::string(detail::attention_page_css) + "</style>\n</head>\n<body>\n";
  page += detail::attention_page_body;
  page += "<script type=\"application/json\" id=\"attention-data\">" + data + "</script>\n";
  page += "<script>\n" + std::string(detail::attention_page_js) + "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace kf
