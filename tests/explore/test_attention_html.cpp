// The attention page (viz/attention_html.hpp): what attention_view_collect gathers from decoder-
// only and encoder–decoder models (every site, the head-as-kernel numbers equal to
// explore/inspect's), the embedded JSON's shapes, and a page that stays one valid, self-contained
// document whatever the token text holds ("</script>", '<', '&', quotes, bytes that are not UTF-8).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "kernelformer/explore/attention_html.hpp"
#include "kernelformer/explore/inspect.hpp"

namespace kf {
namespace {

model::token_model_config tiny_config(index encoder_layers) {
  model::token_model_config c;
  c.vocab = 11;
  c.context = 16;
  c.encoder_layers = encoder_layers;
  c.decoder_layers = 2;
  c.block = {16, 2, 32, 0.0, nn::activation::gelu, true, kernel_exp_dot{}};
  if (encoder_layers > 0) c.tie_weights = false;
  return c;
}

std::vector<index> ids_of(index n) {
  std::vector<index> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  for (auto& id : ids) id %= 11;
  return ids;
}

// Labels that would break a page written naively.
const std::vector<std::string> kNasty = {"</script>", "<b>",           "a&b",  "\"q\"",
                                         "it's",      "\xE2\x90\xA3x", "<!--", "x"};

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(AttentionHtml, CollectsTheDecoderHeadsAndTheirInspection) {
  model::token_model<float> m(tiny_config(0), 3);
  const auto ids = ids_of(8);
  const attention_view v = attention_view_collect(m, ids, kNasty);
  ASSERT_EQ(v.sites.size(), 1u);
  const attention_site_view& s = v.sites[0];
  EXPECT_EQ(s.id, "decoder_self");
  EXPECT_EQ(s.layers, 2);
  EXPECT_EQ(s.heads, 2);
  ASSERT_EQ(s.weights.size(), 4u);
  const model_inspection ref = inspect_token_model(m, ids);  // the library's own reading
  ASSERT_EQ(ref.heads.size(), 4u);
  for (std::size_t k = 0; k < 4; ++k) {
    ASSERT_EQ(s.weights[k].rows(), 8);
    ASSERT_EQ(s.weights[k].cols(), 8);
    for (index i = 0; i < 8; ++i) {
      double row = 0;
      for (index j = 0; j < 8; ++j) row += s.weights[k](i, j);
      EXPECT_NEAR(row, 1.0, 1e-5);
      EXPECT_EQ(s.weights[k](0, 7), 0.0);  // causal: the first query sees only itself
    }
    const head_inspection& a = s.heads_as_kernels[k];
    const head_inspection& b = ref.heads[k];
    EXPECT_EQ(a.layer, b.layer);
    EXPECT_EQ(a.head, b.head);
    EXPECT_EQ(a.df, b.df);
    EXPECT_EQ(a.fit.best, b.fit.best);
    const auto best = static_cast<std::size_t>(a.fit.best);
    EXPECT_EQ(a.fit.shapes[best].median_bandwidth, b.fit.shapes[best].median_bandwidth);
    EXPECT_EQ(a.fit.shapes[best].r2, b.fit.shapes[best].r2);
  }
}

TEST(AttentionHtml, JsonHasTheShapesAndNoMarkup) {
  model::token_model<float> m(tiny_config(0), 3);
  attention_view v = attention_view_collect(m, ids_of(8), kNasty);
  v.title = "t</script><script>alert(1)</script>";
  v.detail = "d & <i>";
  const std::string text = attention_view_json(v);
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(text.find('>'), std::string::npos);
  EXPECT_EQ(text.find('&'), std::string::npos);
  const auto js = nlohmann::json::parse(text);
  EXPECT_EQ(js["title"], v.title);
  EXPECT_EQ(js["detail"], v.detail);
  ASSERT_EQ(js["sites"].size(), 1u);
  const auto& s = js["sites"][0];
  EXPECT_EQ(s["queries"].get<std::vector<std::string>>(), kNasty);
  EXPECT_EQ(s["keys"].get<std::vector<std::string>>(), kNasty);
  ASSERT_EQ(s["weights"].size(), 2u);
  ASSERT_EQ(s["numbers"].size(), 2u);
  const attention_site_view& sv = v.sites[0];
  for (std::size_t l = 0; l < 2; ++l) {
    ASSERT_EQ(s["weights"][l].size(), 2u);
    ASSERT_EQ(s["numbers"][l].size(), 2u);
    for (std::size_t h = 0; h < 2; ++h) {
      const auto k = l * 2 + h;
      const auto& w = s["weights"][l][h];
      ASSERT_EQ(w.size(), 8u);
      for (std::size_t i = 0; i < 8; ++i) {
        ASSERT_EQ(w[i].size(), 8u);
        for (std::size_t j = 0; j < 8; ++j)
          EXPECT_EQ(w[i][j].get<float>(), static_cast<float>(sv.weights[k](index(i), index(j))));
      }
      const auto& n = s["numbers"][l][h];
      const head_inspection& hi = sv.heads_as_kernels[k];
      const auto& b = hi.fit.shapes[static_cast<std::size_t>(hi.fit.best)];
      EXPECT_EQ(n["shape"], b.kernel);
      EXPECT_EQ(n["bandwidth"].get<double>(), b.median_bandwidth);
      EXPECT_EQ(n["offset"].get<double>(), b.median_offset);
      EXPECT_EQ(n["r2"].get<double>(), b.r2);
      EXPECT_EQ(n["df"].get<double>(), hi.df);
    }
  }
}

TEST(AttentionHtml, PageIsOneSelfContainedDocument) {
  model::token_model<float> m(tiny_config(0), 3);
  attention_view v = attention_view_collect(m, ids_of(8), kNasty);
  v.title = "</title><script>alert(1)</script>";
  const std::string page = attention_view_html(v);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("</html>"), std::string::npos);
  // Exactly two scripts (the data and the code) and one style, whatever the tokens hold.
  EXPECT_EQ(count(page, "<script"), 2u);
  EXPECT_EQ(count(page, "</script>"), 2u);
  EXPECT_EQ(count(page, "<title>"), 1u);
  EXPECT_EQ(count(page, "</title>"), 1u);
  EXPECT_NE(page.find("&lt;/title&gt;&lt;script&gt;"), std::string::npos);
  // Nothing is fetched: no external scripts, styles, images, fonts or requests.
  for (const char* ref : {" src=", "href=", "<link", "@import", "url(", "fetch(", "XMLHttpRequest",
                          "<iframe", "<img"})
    EXPECT_EQ(page.find(ref), std::string::npos) << ref;
  // The embedded data is attention_view_json's, byte for byte.
  const std::string open = "<script type=\"application/json\" id=\"attention-data\">";
  const auto p = page.find(open);
  ASSERT_NE(p, std::string::npos);
  const auto q = page.find("</script>", p);
  EXPECT_EQ(page.substr(p + open.size(), q - p - open.size()), attention_view_json(v));
}

TEST(AttentionHtml, EncoderDecoderHasThreeSites) {
  model::token_model<float> m(tiny_config(1), 5);
  const auto tgt = ids_of(3), src = ids_of(5);
  const std::vector<std::string> tl = {"a", "b", "c"}, sl = {"v", "w", "x", "y", "z"};
  const attention_view v = attention_view_collect(m, tgt, tl, src, sl);
  ASSERT_EQ(v.sites.size(), 3u);
  const std::vector<std::string> ids = {"encoder_self", "decoder_self", "decoder_cross"};
  const std::vector<std::pair<index, index>> shapes = {{5, 5}, {3, 3}, {3, 5}};
  const std::vector<index> layers = {1, 2, 2};
  for (std::size_t k = 0; k < 3; ++k) {
    const auto& s = v.sites[k];
    EXPECT_EQ(s.id, ids[k]);
    EXPECT_EQ(s.layers, layers[k]);
    ASSERT_EQ(s.weights.size(), static_cast<std::size_t>(layers[k] * 2));
    EXPECT_EQ(s.weights[0].rows(), shapes[k].first);
    EXPECT_EQ(s.weights[0].cols(), shapes[k].second);
    EXPECT_EQ(s.queries.size(), static_cast<std::size_t>(shapes[k].first));
    EXPECT_EQ(s.keys.size(), static_cast<std::size_t>(shapes[k].second));
  }
  EXPECT_GT(v.sites[0].weights[0](0, 4), 0.0);  // the encoder is not causal
  const auto js = nlohmann::json::parse(attention_view_json(v));
  EXPECT_EQ(js["sites"][2]["weights"][1][0][2].size(), 5u);
  // Every site's numbers are inspect_token_model's, site by site and in the same order.
  const model_inspection ref = inspect_token_model(m, tgt, {}, src);
  std::size_t k = 0;
  for (const auto& s : v.sites)
    for (const auto& h : s.heads_as_kernels) {
      ASSERT_LT(k, ref.heads.size());
      EXPECT_EQ(h.site, s.id);
      EXPECT_EQ(ref.heads[k].site, s.id);
      EXPECT_EQ(ref.heads[k].df, h.df) << s.id;
      EXPECT_EQ(ref.heads[k].fit.best, h.fit.best) << s.id;
      ++k;
    }
  EXPECT_EQ(k, ref.heads.size());
  // The page has the per-row scaling toggle.
  EXPECT_NE(attention_view_html(v).find("id=\"row-scale\""), std::string::npos);
  // A source is required.
  EXPECT_THROW(attention_view_collect(m, tgt, tl), std::invalid_argument);
}

TEST(AttentionHtml, RefusesInconsistentInput) {
  model::token_model<float> m(tiny_config(0), 3);
  const auto ids = ids_of(4);
  const std::vector<std::string> four = {"a", "b", "c", "d"};
  EXPECT_THROW(attention_view_collect(m, ids, {"a", "b"}), std::invalid_argument);
  EXPECT_THROW(attention_view_collect(m, ids, four, ids, four), std::invalid_argument);
  EXPECT_THROW(attention_view_collect(m, ids_of(17), std::vector<std::string>(17, "x")),
               std::invalid_argument);
  EXPECT_THROW(attention_view_collect(m, {}, {}), std::invalid_argument);
  attention_view v = attention_view_collect(m, ids, four);
  v.sites[0].weights.pop_back();
  EXPECT_THROW(attention_view_json(v), std::invalid_argument);
  EXPECT_THROW(attention_view_json(attention_view{}), std::invalid_argument);
}

TEST(AttentionHtml, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  model::token_model<float> m(tiny_config(0), 3);
  const attention_view v = attention_view_collect(m, ids_of(2), {"\xC3", "ok"});
  const auto js = nlohmann::json::parse(attention_view_json(v));
  EXPECT_EQ(js["sites"][0]["queries"][0], "\xEF\xBF\xBD");
  EXPECT_EQ(js["sites"][0]["queries"][1], "ok");
}

}  // namespace
}  // namespace kf
