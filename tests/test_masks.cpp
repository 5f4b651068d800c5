// Masks: predicates, composition, parsing, and tile classification consistent with the
// per-element predicate on every tile of a grid (what lets the fast path skip tiles safely).
#include <gtest/gtest.h>

#include <random>

#include "kernelformer/masks.hpp"

namespace kf {
namespace {

TEST(Masks, Predicates) {
  EXPECT_TRUE(mask::none().allows(0, 100, 0));
  EXPECT_TRUE(mask::causal().allows(3, 3, 0));
  EXPECT_FALSE(mask::causal().allows(3, 4, 0));
  EXPECT_TRUE(mask::causal(2).allows(3, 5, 0));
  EXPECT_TRUE(mask::window(1, 2).allows(5, 4, 0));
  EXPECT_FALSE(mask::window(1, 2).allows(5, 3, 0));
  EXPECT_TRUE(mask::window(1, 2).allows(5, 7, 0));
  EXPECT_FALSE(mask::window(1, 2).allows(5, 8, 0));
  EXPECT_TRUE(mask::key_padding({3}).allows(9, 2, 0));
  EXPECT_FALSE(mask::key_padding({3}).allows(9, 3, 0));
  EXPECT_TRUE(mask::radius(2).allows(0, 0, 4.0));
  EXPECT_FALSE(mask::radius(2).allows(0, 0, 4.01));
  const mask both = mask::causal() & mask::window(2, 0);
  EXPECT_TRUE(both.allows(5, 3, 0));
  EXPECT_FALSE(both.allows(5, 2, 0));
  const mask not_self = mask::causal(-1) | mask::window(-1, 100);
  EXPECT_FALSE(not_self.allows(4, 4, 0));
  EXPECT_TRUE(not_self.allows(4, 3, 0));
  EXPECT_TRUE(not_self.allows(4, 5, 0));
  const mask either = mask::causal() | mask::radius(1);
  EXPECT_TRUE(either.allows(0, 9, 0.5));
  EXPECT_FALSE(either.allows(0, 9, 2));
}

TEST(Masks, ParseAndDescribe) {
  EXPECT_EQ(mask::parse("none").describe(), "none");
  EXPECT_EQ(mask::parse("causal").describe(), "causal");
  EXPECT_EQ(mask::parse("window:4").describe(), "window:4");
  EXPECT_EQ(mask::parse("window:1,3").describe(), "window:1,3");
  EXPECT_EQ(mask::parse("causal&window:16").describe(), "causal&window:16");
  EXPECT_EQ(mask::parse("topk:8").topk_k(), 8);
  EXPECT_EQ(mask::parse("knn:5").topk_by(), topk_rank::distance);
  EXPECT_EQ(mask::parse("radius:2.5&topk:3").describe(), "radius:2.5&topk:3");
  for (const char* bad : {"", "causl", "window", "window:x", "topk:0", "topk:3&causal", "radius:-1",
                          "window:-2", "knn:3|causal"})
    EXPECT_THROW(mask::parse(bad), std::invalid_argument) << bad;
}

TEST(Masks, ValidateAgainstProblemSize) {
  EXPECT_THROW(mask::key_padding({5}).validate(3, 4), std::invalid_argument);
  EXPECT_THROW(mask::key_padding({1, 2}).validate(3, 4), std::invalid_argument);
  EXPECT_NO_THROW(mask::key_padding({1, 2, 4}).validate(3, 4));
  EXPECT_THROW(mask::matrix(2, 2, {1, 0, 1, 1}).validate(2, 3), std::invalid_argument);
  EXPECT_THROW(mask::matrix(2, 2, {1, 0, 1}), std::invalid_argument);
  EXPECT_THROW(mask::none().topk(0), std::invalid_argument);
  EXPECT_THROW(mask::none().topk(2) & mask::causal(), std::invalid_argument);
}

TEST(Masks, ClassifyAgreesWithPredicate) {
  std::vector<index> lens(40);
  for (index i = 0; i < 40; ++i) lens[static_cast<std::size_t>(i)] = (i * 5) % 37;
  const std::vector<mask> masks = {mask::causal(),
                                   mask::causal(-4),
                                   mask::window(3, 1),
                                   mask::key_padding({17}),
                                   mask::key_padding(lens),
                                   mask::causal() & mask::window(5, 0),
                                   mask::causal(3) | mask::window(0, 2),
                                   mask::causal(-1) | mask::window(-1, 40)};
  for (const auto& mk : masks) {
    SCOPED_TRACE(mk.describe());
    for (index i0 = 0; i0 < 40; i0 += 7)
      for (index j0 = 0; j0 < 36; j0 += 5) {
        const index i1 = std::min<index>(i0 + 7, 40), j1 = std::min<index>(j0 + 5, 36);
        const tile_class c = mk.classify(i0, i1, j0, j1, 0);
        index allowed = 0, total = 0;
        for (index i = i0; i < i1; ++i)
          for (index j = j0; j < j1; ++j) {
            allowed += mk.allows(i, j, 0);
            ++total;
          }
        if (c == tile_class::out) {
          EXPECT_EQ(allowed, 0);
        }
        if (c == tile_class::in) {
          EXPECT_EQ(allowed, total);
        }
      }
  }
  EXPECT_EQ(mask::radius(1).classify(0, 4, 0, 4, 1.5), tile_class::out);
  EXPECT_EQ(mask::radius(1).classify(0, 4, 0, 4, 0.5), tile_class::partial);
}

}  // namespace
}  // namespace kf
