// The trained-model demonstrations' pieces (explore/trained_demos.hpp) and seed 003's reference
// numbers (model/periodic_reference.hpp): the map statistics against a plain Pearson correlation
// and a checkerboard of known period, row standardization, the sentence's attention maps against
// the model's own weights, labels for unknown words. Training runs are the report's CLI test.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "kernelformer/explore/trained_demos.hpp"

namespace kf::demo {
namespace {

// Pearson correlation of two equally long vectors, in two passes.
double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    mx += x[i] / double(x.size()), my += y[i] / double(x.size());
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx),
        syy += (y[i] - my) * (y[i] - my);
  return sxy / std::sqrt(sxx * syy);
}

// The map and its copy shifted by lag, as two vectors over their overlap.
double shifted_pearson(const matrix<double>& a, index lag, bool along_keys) {
  std::vector<double> x, y;
  for (index i = 0; i < a.rows(); ++i)
    for (index j = 0; j < a.cols(); ++j) {
      const index i2 = along_keys ? i : i + lag, j2 = along_keys ? j + lag : j;
      if (i2 >= a.rows() || j2 >= a.cols()) continue;
      x.push_back(a(i, j)), y.push_back(a(i2, j2));
    }
  return pearson(x, y);
}

TEST(TrainedDemos, MapAutocorrelationIsPearsonOfTheShiftedMap) {
  // A checkerboard of period 20 in both directions, plus a little structure that is not.
  const index n = 99, p = 20;
  matrix<double> a(n, n);
  for (index i = 0; i < n; ++i)
    for (index j = 0; j < n; ++j)
      a(i, j) = 0.01 +
                0.001 * std::cos(2 * std::numbers::pi * double(i) / p) *
                    std::cos(2 * std::numbers::pi * double(j) / p) +
                1e-5 * double((i * 7 + j * 3) % 5);
  for (bool keys : {true, false})
    for (index lag : {1, 10, 20, 31}) {
      EXPECT_NEAR(map_autocorrelation(a, lag, keys), shifted_pearson(a, lag, keys), 1e-9)
          << lag << " " << keys;
    }
  EXPECT_GT(map_autocorrelation(a, p, true), 0.9);
  EXPECT_LT(map_autocorrelation(a, p / 2, true), -0.9);
  EXPECT_TRUE(std::isnan(map_autocorrelation(matrix<double>(5, 5), 1, true)));  // constant
}

TEST(TrainedDemos, RowStandardizedRowsHaveMeanZeroAndUnitSpread) {
  matrix<double> a(3, 4);
  const double v[] = {1, 2, 3, 4, 0.25, 0.25, 0.25, 0.25, -1, 5, 2, 0};
  for (index i = 0; i < 12; ++i) a.data()[i] = v[i];
  const auto z = row_standardized(a);
  ASSERT_EQ(z.size(), 12u);
  for (int r : {0, 2}) {
    double m = 0, s = 0;
    for (int j = 0; j < 4; ++j) m += z[std::size_t(r * 4 + j)] / 4;
    for (int j = 0; j < 4; ++j) s += z[std::size_t(r * 4 + j)] * z[std::size_t(r * 4 + j)] / 4;
    EXPECT_NEAR(m, 0, 1e-15);
    EXPECT_NEAR(s, 1, 1e-14);
  }
  EXPECT_NEAR(z[0], (1 - 2.5) / std::sqrt(1.25), 1e-15);
  for (int j = 4; j < 8; ++j) EXPECT_EQ(z[std::size_t(j)], 0.0);  // a constant row
}

TEST(TrainedDemos, PeriodicReferenceIsThePapersTable) {
  using model::periodic_function;
  EXPECT_EQ(model::periodic_paper_mse(periodic_function::sin), 0.0050);
  EXPECT_EQ(model::periodic_paper_mse(periodic_function::sin_exp), 0.0085);
  EXPECT_EQ(model::periodic_paper_mse(periodic_function::square), 0.0243);
  // The documented improved setting is under the paper everywhere; its spread is ordered.
  for (auto f : {periodic_function::sin, periodic_function::sin_exp, periodic_function::square}) {
    const auto d = model::periodic_documented_results(f);
    EXPECT_LT(d.improved.median, model::periodic_paper_mse(f));
    for (const auto& s : {d.improved, d.faithful}) {
      EXPECT_LE(s.lo, s.median);
      EXPECT_LE(s.median, s.hi);
    }
  }
  const auto s = model::mse_spread_of({3, 1, 2});
  EXPECT_EQ(s.median, 2);
  EXPECT_EQ(s.lo, 1);
  EXPECT_EQ(s.hi, 3);
  EXPECT_THROW(model::mse_spread_of({}), std::invalid_argument);
  EXPECT_EQ(model::periodic_train_command("sin", model::kPeriodicImproved, 0),
            "kf train periodic --function sin --config code --batch 64 --cosine-lr --dropout "
            "0.05 --seed 0");
  const auto to = model::periodic_setting_options(model::kPeriodicFaithful, 2);
  EXPECT_EQ(to.batch, 512);
  EXPECT_FALSE(to.cosine_lr);
  EXPECT_EQ(to.epochs, 100);
  EXPECT_EQ(to.seed, 2u);
  EXPECT_EQ(model::periodic_setting_config(model::kPeriodicImproved).block.dropout, 0.05);
}

TEST(TrainedDemos, WordLabels) {
  EXPECT_EQ(word_label(" cat"), "cat");
  EXPECT_EQ(word_label("The"), "The");
  EXPECT_EQ(word_label(" "), "\xE2\x90\xA3");  // a lone space stays visible
  EXPECT_EQ(word_label("\n"), "\\n");
}

TEST(TrainedDemos, SentenceAttentionIsTheModelsWeightsWithWordLabels) {
  const auto tok = text::tokenizer::train(text::tokenizer_kind::word,
                                          "The cat sat on the rug.\nThe cat sat on the rug.\n"
                                          "A dog sat.\nA dog sat.",
                                          2);
  model::token_model_config c;
  c.vocab = tok.size();
  c.context = 16;
  c.decoder_layers = 2;
  c.block = {16, 2, 32, 0.0, nn::activation::gelu, true, kernel_exp_dot{}};
  model::token_model<float> m(c, 1);
  const auto a = lm_sentence_attention(m, tok, "The cat sat on the mat.");
  // "mat" is not in the vocabulary: it keeps its text, marked.
  const std::vector<std::string> labels = {"The", "cat", "sat", "on", "the", "mat (unk)", "."};
  EXPECT_EQ(a.labels, labels);
  EXPECT_EQ(a.unknown, 1);
  EXPECT_EQ(a.unknown_words, std::vector<std::string>{"mat"});
  ASSERT_EQ(a.layers, 2);
  ASSERT_EQ(a.heads, 2);
  ASSERT_EQ(a.weights.size(), 4u);
  for (index l = 0; l < 2; ++l)
    for (index h = 0; h < 2; ++h) {
      const auto& w = a.weights[std::size_t(l * 2 + h)];
      const auto ref = m.attention_weights(model::attention_site::decoder_self, l, h, 0);
      ASSERT_EQ(w.rows(), 7);
      ASSERT_EQ(w.cols(), 7);
      for (index i = 0; i < 7; ++i) {
        double row = 0;
        for (index j = 0; j < 7; ++j) {
          EXPECT_EQ(float(w(i, j)), ref(i, j));  // widened exactly
          if (j > i) {
            EXPECT_EQ(w(i, j), 0.0);  // causal
          }
          row += w(i, j);
        }
        EXPECT_NEAR(row, 1.0, 1e-6);
      }
    }
  const std::string sample = lm_sample(m, tok, "The", 5, 0.8, 0);
  EXPECT_EQ(sample.rfind("The", 0), 0u);
  EXPECT_EQ(sample, lm_sample(m, tok, "The", 5, 0.8, 0));  // seeded
}

}  // namespace
}  // namespace kf::demo
