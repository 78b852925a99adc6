#include "sched/constraint.h"

#include <gtest/gtest.h>

namespace shoal::sched {
namespace {

class ConstraintTest : public ::testing::Test {
 protected:
  FeatureSet Features(std::string_view csv) {
    auto s = ParseFeatures(csv, index_);
    EXPECT_TRUE(s.ok());
    return s.ok() ? *s : FeatureSet{};
  }
  Constraint Parse(std::string_view text) {
    auto c = ParseConstraint(text, index_);
    EXPECT_TRUE(c.ok()) << text;
    return c.ok() ? *c : Constraint{};
  }
  // Every node must match `all`: the plain-expression case.
  bool Matches(std::string_view text, std::string_view csv) {
    FeatureSet node = Features(csv);
    Constraint c = Parse(text);
    EXPECT_TRUE(c.one_of.empty() && c.counts.empty()) << text;
    return c.NodeMatches(node, -1);
  }
  FeatureIndex index_;
};

TEST_F(ConstraintTest, FeaturesInternOnce) {
  FeatureSet a = Features("intel,ib");
  FeatureSet b = Features("amd,ib,,");
  EXPECT_EQ(index_.size(), 3u);
  EXPECT_EQ(index_.Find("ib"), 1);
  EXPECT_EQ(index_.Find("nope"), -1);
  EXPECT_EQ(FormatFeatures(b, index_), "ib,amd");
  EXPECT_TRUE(Features("(null)").empty());
  EXPECT_FALSE(ParseFeatures("a|b", index_).ok());
}

TEST_F(ConstraintTest, ManyFeaturesBeyondOneWord) {
  std::string csv;
  for (int i = 0; i < 150; ++i) csv += "f" + std::to_string(i) + ",";
  Features(csv);
  FeatureSet n = Features("f3,f140");
  EXPECT_TRUE(Parse("f140&f3").NodeMatches(n, -1));
  EXPECT_FALSE(Parse("f139").NodeMatches(n, -1));
}

TEST_F(ConstraintTest, AndOrNotParentheses) {
  Features("a,b,c,d");
  EXPECT_TRUE(Matches("a", "a"));
  EXPECT_FALSE(Matches("a", "b"));
  EXPECT_TRUE(Matches("a&b", "a,b"));
  EXPECT_FALSE(Matches("a&b", "a"));
  EXPECT_TRUE(Matches("a|b", "b"));
  EXPECT_FALSE(Matches("a|b", "c"));
  EXPECT_TRUE(Matches("a&(b|c)", "a,c"));
  EXPECT_FALSE(Matches("a&(b|c)", "b,c"));
  // & binds tighter than |.
  EXPECT_TRUE(Matches("a|b&c", "a"));
  EXPECT_FALSE(Matches("(a|b)&c", "a"));
  EXPECT_TRUE(Matches("!a", "b"));
  EXPECT_FALSE(Matches("!a&b", "a,b"));
  EXPECT_TRUE(Matches("((a))", "a"));
  EXPECT_TRUE(Matches("", ""));
  EXPECT_TRUE(Matches("[a]", "a"));  // a lone bracketed name is just the name
}

TEST_F(ConstraintTest, UnknownFeatureNeverMatchesAndIsReported) {
  Features("a");
  Constraint c = Parse("a&zz|yy");
  EXPECT_FALSE(c.NodeMatches(Features("a"), -1));
  EXPECT_EQ(UnknownFeatures(c, index_), (std::vector<std::string>{"zz", "yy"}));
  EXPECT_TRUE(UnknownFeatures(Parse("a"), index_).empty());
  // Once a node brings the feature, rebinding makes it match.
  auto late = ParseConstraint("zz");
  ASSERT_TRUE(late.ok());
  Features("zz");
  BindConstraint(*late, index_);
  EXPECT_TRUE(late->NodeMatches(Features("zz"), -1));
}

TEST_F(ConstraintTest, MatchingOrAlternatives) {
  Features("r1,r2,r3,ib");
  Constraint c = Parse("[r1|r2|r3]&ib");
  ASSERT_EQ(c.one_of.size(), 3u);
  FeatureSet n = Features("r2,ib");
  EXPECT_FALSE(c.NodeMatches(n, 0));
  EXPECT_TRUE(c.NodeMatches(n, 1));
  EXPECT_FALSE(c.NodeMatches(Features("r2"), 1));  // ib is required on every node
  c = Parse("[r1&ib|r2]");
  ASSERT_EQ(c.one_of.size(), 2u);
  EXPECT_TRUE(c.NodeMatches(Features("r1,ib"), 0));
}

TEST_F(ConstraintTest, Counts) {
  Features("a,b,c");
  Constraint c = Parse("a*2");
  ASSERT_EQ(c.counts.size(), 1u);
  EXPECT_EQ(c.counts[0].count, 2u);
  EXPECT_TRUE(c.all.empty());
  c = Parse("[a*2&b*1]");
  ASSERT_EQ(c.counts.size(), 2u);
  EXPECT_EQ(c.counted_nodes(), 3u);
  c = Parse("[(a|b)*1&c*2]");
  ASSERT_EQ(c.counts.size(), 2u);
  EXPECT_TRUE(c.counts[0].expr.Eval(Features("b")));
  c = Parse("c&a*2");
  EXPECT_EQ(c.counts.size(), 1u);
  EXPECT_FALSE(c.all.empty());
}

TEST_F(ConstraintTest, BadSyntax) {
  for (const char* bad :
       {"a&",   "&a",        "a||b",    "(a",  "a)",    "[a|b",    "a]",          "a*",
        "a*0",  "a*x",       "a,b",     "a b", "[a&b]", "[a|b]|c", "[a|b]&[c|d]", "(a*2)|b",
        "!a*2", "[a*2|b*1]", "[a|b]*2", "()",  "[]",    "!",       "a**2",        "a*2*3"}) {
    auto c = ParseConstraint(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.error(), "Invalid feature specification") << bad;
  }
  std::string deep(40, '(');
  deep += "a" + std::string(40, ')');
  EXPECT_FALSE(ParseConstraint(deep).ok());
}

}  // namespace
}  // namespace shoal::sched
