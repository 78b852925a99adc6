#include "sched/gres.h"

#include <gtest/gtest.h>

namespace shoal::sched {
namespace {

NodeGres Node(std::string_view text) {
  auto g = ParseNodeGres(text);
  EXPECT_TRUE(g.ok()) << text;
  return g.ok() ? *g : NodeGres{};
}

TEST(GresParse, NodeForms) {
  NodeGres g = Node("gpu:4");
  ASSERT_EQ(g.slots.size(), 1u);
  EXPECT_EQ(g.slots[0].name, "gpu");
  EXPECT_EQ(g.slots[0].type, "");
  EXPECT_EQ(g.slots[0].count, 4u);

  g = Node("gpu:a100:2,gpu:v100:2,nic:1");
  ASSERT_EQ(g.slots.size(), 3u);
  EXPECT_EQ(g.slots[1].type, "v100");
  EXPECT_EQ(g.slots[1].first_index, 2u);  // numbered per name across types
  EXPECT_EQ(g.slots[2].first_index, 0u);
  EXPECT_EQ(FormatNodeGres(g), "gpu:a100:2,gpu:v100:2,nic:1");

  g = Node("gpu:a100:4(S:0-1)");
  EXPECT_EQ(FormatNodeGres(g), "gpu:a100:4");
  g = Node("shard:1K,bandwidth:2M,gpu");
  EXPECT_EQ(g.slots[0].count, 1024u);
  EXPECT_EQ(g.slots[1].count, 2u << 20);
  EXPECT_FALSE(g.slots[1].indexed());
  EXPECT_EQ(g.slots[2].count, 1u);
  g = Node("gpu:a100:2(S:0),gpu:a100:2(S:1)");  // repeated name:type merge
  ASSERT_EQ(g.slots.size(), 1u);
  EXPECT_EQ(g.slots[0].count, 4u);
  EXPECT_TRUE(Node("").empty());
  EXPECT_TRUE(Node("(null)").empty());
}

TEST(GresParse, BadStringsGiveSlurmsError) {
  for (const char* bad : {"gpu:", ":2", "gpu:a100:x", "gpu:a:b:2", "gpu,,nic", "gpu:2(S:0",
                          "g pu:2", "gpu:a100:2X"}) {
    auto g = ParseNodeGres(bad);
    ASSERT_FALSE(g.ok()) << bad;
    EXPECT_EQ(g.status().code(), ErrorCode::kInvalidGres);
    EXPECT_EQ(g.error(), "Invalid generic resource (gres) specification");
  }
  for (const char* bad : {"gpu:0", "gpu:", "gpu:a100:", ",", "gpu:-1"})
    EXPECT_FALSE(ParseGresRequest(bad).ok()) << bad;
  for (const char* bad : {"", "a100:", "x", "0", "a:b:1", "a100:2,"})
    EXPECT_FALSE(ParseGpuRequest(bad).ok()) << bad;
}

TEST(GresParse, JobRequests) {
  auto r = ParseGresRequest("gpu:a100:2,shard:1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<GresRequest>{{"gpu", "a100", 2}, {"shard", "", 1}}));
  r = ParseGresRequest("gres/gpu:2");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<GresRequest>{{"gpu", "", 2}}));
  r = ParseGresRequest("gpu");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].count, 1u);
  r = ParseGresRequest("gpu:a100");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<GresRequest>{{"gpu", "a100", 1}}));
  EXPECT_TRUE(ParseGresRequest("none")->empty());
  auto g = ParseGpuRequest("a100:2");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, (std::vector<GresRequest>{{"gpu", "a100", 2}}));

  GresOptions o;
  o.gres = "gpu:1";
  o.gpus_per_node = "a100:1";
  o.gpus_per_task = "2";
  o.gpus = "8";
  o.cpus_per_gpu = "4";
  o.mem_per_gpu = "8G";
  auto j = ParseJobGres(o);
  ASSERT_TRUE(j.ok()) << j.error();
  EXPECT_EQ(j->per_node, (std::vector<GresRequest>{{"gpu", "", 1}, {"gpu", "a100", 1}}));
  EXPECT_EQ(j->per_task, (std::vector<GresRequest>{{"gpu", "", 2}}));
  EXPECT_EQ(j->per_job, (std::vector<GresRequest>{{"gpu", "", 8}}));
  EXPECT_EQ(j->cpus_per_gpu, 4u);
  EXPECT_EQ(j->mem_per_gpu_mb, 8192u);
  GresOptions bad;
  bad.cpus_per_gpu = "x";
  EXPECT_FALSE(ParseJobGres(bad).ok());
  EXPECT_TRUE(ParseJobGres({}).ok());
  EXPECT_TRUE(ParseJobGres({})->empty());
}

TEST(GresPick, DistinctIndexesAndRelease) {
  NodeGres g = Node("gpu:4");
  std::vector<GresAlloc> a, b;
  ASSERT_TRUE(PickGres(g, {{"gpu", "", 2}}, &a));
  BookGres(g, a);
  ASSERT_TRUE(PickGres(g, {{"gpu", "", 2}}, &b));
  BookGres(g, b);
  EXPECT_EQ(FormatIndexList(a, "gpu"), "0,1");
  EXPECT_EQ(FormatIndexList(b, "gpu"), "2,3");
  EXPECT_EQ(FormatAllocIndexes(b), "gpu:2,3");
  EXPECT_EQ(FormatGresUsed(g), "gpu:4(IDX:0-3)");
  std::vector<GresAlloc> c;
  EXPECT_FALSE(PickGres(g, {{"gpu", "", 1}}, &c));
  ReleaseGres(g, a);
  EXPECT_EQ(FormatGresUsed(g), "gpu:2(IDX:2-3)");
  ASSERT_TRUE(PickGres(g, {{"gpu", "", 1}}, &c));
  EXPECT_EQ(FormatIndexList(c, "gpu"), "0");
  ReleaseGres(g, b);
  EXPECT_EQ(FormatGresUsed(g), "gpu:0(IDX:N/A)");
}

TEST(GresPick, TypedAndUntyped) {
  NodeGres g = Node("gpu:a100:2,gpu:v100:2");
  EXPECT_TRUE(GresFits(g, {{"gpu", "v100", 2}}, false));
  EXPECT_FALSE(GresFits(g, {{"gpu", "v100", 3}}, false));
  EXPECT_FALSE(GresFits(g, {{"gpu", "h100", 1}}, false));
  EXPECT_TRUE(GresFits(g, {{"gpu", "", 4}}, false));
  // Typed first: the untyped need gets what the typed one leaves.
  EXPECT_TRUE(GresFits(g, {{"gpu", "", 2}, {"gpu", "v100", 2}}, false));
  EXPECT_FALSE(GresFits(g, {{"gpu", "", 3}, {"gpu", "v100", 2}}, false));
  std::vector<GresAlloc> a;
  ASSERT_TRUE(PickGres(g, {{"gpu", "", 3}, {"gpu", "v100", 1}}, &a));
  BookGres(g, a);
  EXPECT_EQ(FormatIndexList(a, "gpu"), "0,1,2,3");
  EXPECT_EQ(FormatGresAllocDetail(a), "gpu:v100:2(IDX:2-3),gpu:a100:2(IDX:0-1)");
  EXPECT_EQ(GresFree(g, "gpu", ""), 0u);
  ReleaseGres(g, a);
  EXPECT_EQ(GresFree(g, "gpu", ""), 4u);
  EXPECT_EQ(GresFree(g, "gpu", "a100"), 2u);
  EXPECT_EQ(FormatGresUsed(g), "gpu:a100:0(IDX:N/A),gpu:v100:0(IDX:N/A)");
}

TEST(GresPick, CountOnlySlotsAndIgnoreAlloc) {
  NodeGres g = Node("bandwidth:1G");
  std::vector<GresAlloc> a;
  ASSERT_TRUE(PickGres(g, {{"bandwidth", "", 1000}}, &a));
  EXPECT_TRUE(a[0].indexes.empty());
  BookGres(g, a);
  EXPECT_EQ(GresFree(g, "bandwidth", ""), (1ull << 30) - 1000);
  EXPECT_TRUE(GresFits(g, {{"bandwidth", "", 1ull << 30}}, true));
  EXPECT_FALSE(GresFits(g, {{"bandwidth", "", 1ull << 30}}, false));
  EXPECT_EQ(FormatGresUsed(g), "bandwidth:1000");
}

TEST(GresFormat, Tres) {
  EXPECT_EQ(FormatTres({{"gpu", "", 2}}), "gres/gpu:2");
  EXPECT_EQ(FormatTres({{"gpu", "a100", 2}, {"shard", "", 1}}), "gres/gpu:a100:2,gres/shard:1");
  EXPECT_EQ(FormatIndexRanges({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(FormatNodeGres({}), "(null)");
}

}  // namespace
}  // namespace shoal::sched
