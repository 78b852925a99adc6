#include "common/hostlist.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace shoal {
namespace {

using Names = std::vector<std::string>;

Names Expand(const std::string& expr) {
  auto r = ExpandHostlist(expr);
  EXPECT_TRUE(r.ok()) << expr << ": " << r.error();
  return r.ok() ? r.value() : Names{};
}

std::string ExpandError(const std::string& expr) {
  auto r = ExpandHostlist(expr);
  EXPECT_FALSE(r.ok()) << expr << " unexpectedly expanded to " << r->size() << " names";
  return r.ok() ? "" : r.error();
}

TEST(ExpandHostlist, PlainNames) {
  EXPECT_EQ(Expand("n1"), (Names{"n1"}));
  EXPECT_EQ(Expand("alpha,beta,gamma"), (Names{"alpha", "beta", "gamma"}));
  EXPECT_EQ(Expand("foo1.bar.com"), (Names{"foo1.bar.com"}));
}

TEST(ExpandHostlist, SimpleRanges) {
  EXPECT_EQ(Expand("n[1-3,5]"), (Names{"n1", "n2", "n3", "n5"}));
  EXPECT_EQ(Expand("n[1-3]"), (Names{"n1", "n2", "n3"}));
  EXPECT_EQ(Expand("n[7]"), (Names{"n7"}));
  EXPECT_EQ(Expand("lx[15,18,32-33]"), (Names{"lx15", "lx18", "lx32", "lx33"}));
  EXPECT_EQ(Expand("n[9-11]"), (Names{"n9", "n10", "n11"}));
}

TEST(ExpandHostlist, ZeroPadding) {
  EXPECT_EQ(Expand("n[08-11]"), (Names{"n08", "n09", "n10", "n11"}));
  EXPECT_EQ(Expand("n[01-03]"), (Names{"n01", "n02", "n03"}));
  EXPECT_EQ(Expand("linux[0000-0002]"), (Names{"linux0000", "linux0001", "linux0002"}));
  EXPECT_EQ(Expand("n[98-101]"), (Names{"n98", "n99", "n100", "n101"}));
  EXPECT_EQ(Expand("n[098-101]"), (Names{"n098", "n099", "n100", "n101"}));
  // Each range keeps its own width.
  EXPECT_EQ(Expand("n[1-2,05]"), (Names{"n1", "n2", "n05"}));
}

TEST(ExpandHostlist, SeveralGroupsAndTerms) {
  EXPECT_EQ(Expand("gpu[01-04,07],cpu-[1-3]"),
            (Names{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07", "cpu-1", "cpu-2", "cpu-3"}));
  EXPECT_EQ(Expand("a1,b[2-3],c"), (Names{"a1", "b2", "b3", "c"}));
}

TEST(ExpandHostlist, CartesianProduct) {
  EXPECT_EQ(Expand("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(Expand("n[1-2]-ib[0-1]"), (Names{"n1-ib0", "n1-ib1", "n2-ib0", "n2-ib1"}));
  EXPECT_EQ(Expand("rack[0-1]_blade[0-2]").size(), 6u);
  EXPECT_EQ(Expand("n[1-2]-ib"), (Names{"n1-ib", "n2-ib"}));
  EXPECT_EQ(Expand("[1-3]"), (Names{"1", "2", "3"}));
}

TEST(ExpandHostlist, WhitespaceAndCommaSeparators) {
  EXPECT_EQ(Expand("n1 n2\tn3"), (Names{"n1", "n2", "n3"}));
  EXPECT_EQ(Expand("  n1 ,  n2 ,"), (Names{"n1", "n2"}));
  EXPECT_EQ(Expand("n1,,n2"), (Names{"n1", "n2"}));
  EXPECT_EQ(Expand("n[1-2] m[3-4]"), (Names{"n1", "n2", "m3", "m4"}));
}

TEST(ExpandHostlist, KeepsDuplicatesAsWritten) {
  EXPECT_EQ(Expand("n1,n1,n[1-2]"), (Names{"n1", "n1", "n1", "n2"}));
}

TEST(ExpandHostlist, Errors) {
  EXPECT_EQ(ExpandError("n[3-1]"), "invalid hostlist: n[3-1] (descending range)");
  EXPECT_NE(ExpandError("n[1-3").find("invalid hostlist"), std::string::npos);
  EXPECT_NE(ExpandError("n1-3]").find("unbalanced"), std::string::npos);
  EXPECT_NE(ExpandError("n[[1-3]]").find("invalid hostlist"), std::string::npos);
  EXPECT_NE(ExpandError("n[]").find("empty"), std::string::npos);
  EXPECT_NE(ExpandError("n[a-c]").find("invalid hostlist"), std::string::npos);
  EXPECT_NE(ExpandError("n[1-]").find("invalid hostlist"), std::string::npos);
  EXPECT_NE(ExpandError("n[-1]").find("invalid hostlist"), std::string::npos);
  EXPECT_NE(ExpandError("n[1,,2]").find("invalid hostlist"), std::string::npos);
  EXPECT_EQ(ExpandError(""), "invalid hostlist: empty");
  EXPECT_EQ(ExpandError("  , "), "invalid hostlist: empty");
  EXPECT_NE(ExpandError("n[1-99999999999999999999]").find("invalid hostlist"), std::string::npos);
}

TEST(ExpandHostlist, RefusesAbsurdExpansions) {
  EXPECT_NE(ExpandError("n[0-999999999]").find("too many hosts"), std::string::npos);
  EXPECT_NE(ExpandError("a[1-1000]b[1-1000]c[1-2]").find("too many hosts"), std::string::npos);
  // A product of exactly the cap is fine.
  auto r = ExpandHostlist("a[1-1000]b[1-1000]");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->size(), 1000000u);
  EXPECT_EQ(r->back(), "a1000b1000");
  // The cap applies to the whole expression, not each term.
  EXPECT_FALSE(ExpandHostlist("a[1-600000],b[1-600000]").ok());
}

TEST(CompressHostlist, Basic) {
  EXPECT_EQ(CompressHostlist({"n1", "n2", "n3"}), "n[1-3]");
  EXPECT_EQ(CompressHostlist({"n1", "n2", "n3", "n5"}), "n[1-3,5]");
  EXPECT_EQ(CompressHostlist({"n1"}), "n1");
  EXPECT_EQ(CompressHostlist({}), "");
  EXPECT_EQ(CompressHostlist({"a1", "b2", "b3"}), "a1,b[2-3]");
  EXPECT_EQ(CompressHostlist({"n1", "n3"}), "n[1,3]");
}

TEST(CompressHostlist, SortsAndDedupes) {
  EXPECT_EQ(CompressHostlist({"n3", "n1", "n2", "n2"}), "n[1-3]");
  EXPECT_EQ(CompressHostlist({"n10", "n9", "n2", "n1"}), "n[1-2,9-10]");
  EXPECT_EQ(CompressHostlist({"b1", "a2", "a1"}), "a[1-2],b1");
  EXPECT_EQ(CompressHostlist({"n1", "n1"}), "n1");
}

TEST(CompressHostlist, ZeroPadding) {
  EXPECT_EQ(CompressHostlist({"n01", "n02", "n03"}), "n[01-03]");
  EXPECT_EQ(CompressHostlist({"n08", "n09", "n10", "n11"}), "n[08-11]");
  EXPECT_EQ(CompressHostlist({"gpu01", "gpu02", "gpu03", "gpu04", "gpu07"}), "gpu[01-04,07]");
  // Different widths never merge into one range.
  EXPECT_EQ(CompressHostlist({"n1", "n02"}), "n[1,02]");
  EXPECT_EQ(CompressHostlist({"n01", "n1"}), "n[01,1]");
  EXPECT_EQ(CompressHostlist({"n9", "n010"}), "n[9,010]");
  EXPECT_EQ(CompressHostlist({"n9", "n10"}), "n[9-10]");
}

TEST(CompressHostlist, SuffixesAndNonNumeric) {
  EXPECT_EQ(CompressHostlist({"n1-ib", "n2-ib"}), "n[1-2]-ib");
  EXPECT_EQ(CompressHostlist({"login", "n1", "n2"}), "login,n[1-2]");
  EXPECT_EQ(CompressHostlist({"alpha", "beta"}), "alpha,beta");
  EXPECT_EQ(CompressHostlist({"cpu-1", "cpu-2", "gpu01"}), "cpu-[1-2],gpu01");
  // Only the last number varies.
  EXPECT_EQ(CompressHostlist({"r1n1", "r1n2", "r2n1"}), "r1n[1-2],r2n1");
}

TEST(Hostlist, RoundTrip) {
  const char* exprs[] = {"n[1-3,5]",
                         "gpu[01-04,07],cpu-[1-3]",
                         "a1,b[2-3]",
                         "n[08-11]",
                         "n[1-2]-ib",
                         "login,n[1-100]",
                         "x",
                         "n[098-101]",
                         "r1n[1-2],r2n[1-2]",
                         "n[1,02]"};
  for (const char* e : exprs) {
    Names names = Expand(e);
    std::string compressed = CompressHostlist(names);
    Names again = Expand(compressed);
    Names sorted_names = names;
    EXPECT_EQ(CompressHostlist(again), compressed) << e;
    std::sort(sorted_names.begin(), sorted_names.end());
    std::sort(again.begin(), again.end());
    EXPECT_EQ(again, sorted_names) << e << " -> " << compressed;
  }
}

TEST(Hostlist, LargeRoundTrip) {
  Names names = Expand("n[00001-50000]");
  ASSERT_EQ(names.size(), 50000u);
  EXPECT_EQ(names[0], "n00001");
  EXPECT_EQ(CompressHostlist(names), "n[00001-50000]");
}

}  // namespace
}  // namespace shoal
