#include "sched/topology.h"

#include <gtest/gtest.h>

namespace shoal::sched {
namespace {

std::vector<std::string> Names(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

std::vector<int> Range(int a, int b) {  // [a, b)
  std::vector<int> out;
  for (int i = a; i < b; ++i) out.push_back(i);
  return out;
}

// s0 -> s1 (n1-n4), s2 (n5-n8); s3 -> s4 (n9-n12)
const char* kTree =
    "# tree\n"
    "SwitchName=s1 Nodes=n[1-4] LinkSpeed=100\n"
    "SwitchName=s2 Nodes=n[5-8]\n"
    "SwitchName=s0 Switches=s[1-2]\n"
    "SwitchName=s4 Nodes=n[9-12]\n"
    "switchname=s3 switches=s4\n";

TEST(TopologyTest, ParsesTree) {
  auto t = ParseTopologyConf(kTree, Names("n", 12));
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->kind, Topology::Kind::kTree);
  ASSERT_EQ(t->switches.size(), 5u);
  EXPECT_EQ(t->switches[0].level, 0);
  EXPECT_EQ(t->switches[0].link_speed, "100");
  EXPECT_EQ(t->switches[2].name, "s0");
  EXPECT_EQ(t->switches[2].level, 1);
  EXPECT_EQ(t->switches[2].subtree, Range(0, 8));
  EXPECT_EQ(t->node_leaf[4], 1);
  EXPECT_TRUE(t->warnings.empty());
  auto loose = ParseTopologyConf("SwitchName=s1 Nodes=n[1-2]\n", Names("n", 3));
  ASSERT_TRUE(loose.ok());
  EXPECT_EQ(loose->warnings,
            std::vector<std::string>{"topology.conf: nodes n3 are not connected to any switch"});
}

TEST(TopologyTest, TreeErrorsNameLines) {
  auto e = [](const char* text) {
    auto t = ParseTopologyConf(text, Names("n", 4));
    return t.ok() ? std::string("OK") : t.error();
  };
  EXPECT_EQ(e("SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=x9\n"),
            "topology.conf:2: unknown node 'x9'");
  EXPECT_EQ(e("SwitchName=s1 Nodes=n1\nSwitchName=s0 Switches=s[1-2]\n"),
            "topology.conf:2: switch 's2' is not defined");
  EXPECT_EQ(e("SwitchName=a Switches=b\nSwitchName=b Switches=a\n"),
            "topology.conf:1: switch loop through 'a'");
  EXPECT_EQ(e("SwitchName=a Switches=a\n"), "topology.conf:1: switch loop through 'a'");
  EXPECT_EQ(e("SwitchName=s1 Nodes=n1\nSwitchName=s1 Nodes=n2\n"),
            "topology.conf:2: duplicate switch 's1'");
  EXPECT_EQ(e("SwitchName=s1\n"), "topology.conf:1: switch 's1' needs Nodes= or Switches=");
  EXPECT_EQ(e("SwitchName=s1 Nodes=n1\nSwitchName=s2 Nodes=n1\n"),
            "topology.conf:2: node 'n1' is in two leaf switches");
  EXPECT_EQ(e("\n\nSwitchName=s1 Nodes=n1 Color=red\n"), "topology.conf:3: unknown key 'Color'");
  EXPECT_EQ(e("SwitchName=s1 Nodes=n1\nBlockName=b1 Nodes=n2\n"),
            "topology.conf:2: BlockName cannot be mixed with SwitchName");
}

TEST(TopologyTest, TreeSelectsLowestSwitchBestFitFewestLeaves) {
  auto t = *ParseTopologyConf(kTree, Names("n", 12));
  // 3 nodes fit under one leaf: the leaf with the fewest spare candidates (s2 has 3 free).
  std::vector<int> cands = {0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11};
  auto c = SelectTree(t, cands, 3);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->nodes, (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(c->leaf_switches, 1u);
  EXPECT_EQ(t.switches[static_cast<size_t>(c->top_switch)].name, "s2");
  // 6 nodes: no leaf holds them; s0 (level 1) does: 4 from s1 + 2 from s2 -> 2 leaves.
  c = SelectTree(t, cands, 6);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->leaf_switches, 2u);
  EXPECT_EQ(c->nodes, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  // Best fit among level-1 switches: s3 (4 free) beats s0 (7 free) for a 4-node job... but a
  // leaf is lower still: s1 and s4 hold 4 each; s1 is first on a tie.
  c = SelectTree(t, cands, 4);
  EXPECT_EQ(c->nodes, (std::vector<int>{0, 1, 2, 3}));
  // Fabrics are never spanned: 9 nodes exceed s0 (7) and s3 (4).
  EXPECT_FALSE(SelectTree(t, cands, 9).has_value());
  // Fragmented candidates: prefer the fuller leaf so fewer leaves are used.
  c = SelectTree(t, {0, 4, 5, 6}, 3);
  EXPECT_EQ(c->nodes, (std::vector<int>{4, 5, 6}));
  c = SelectTree(t, {0, 1, 4, 5, 6}, 4);
  EXPECT_EQ(c->leaf_switches, 2u);
  EXPECT_EQ(c->nodes, (std::vector<int>{0, 4, 5, 6}));
  // OrderCandidates: the choice first, the rest after in their order.
  EXPECT_EQ(OrderCandidates(t, {0, 1, 4, 5, 6}, 3), (std::vector<int>{4, 5, 6, 0, 1}));
  Topology none;
  EXPECT_EQ(OrderCandidates(none, {3, 1}, 1), (std::vector<int>{3, 1}));
}

TEST(TopologyTest, SwitchesOption) {
  auto r = ParseSwitches("2@10:00");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_switches, 2u);
  EXPECT_EQ(r->max_wait_s, 600);
  EXPECT_EQ(ParseSwitches("1")->max_wait_s, -1);
  EXPECT_FALSE(ParseSwitches("x").ok());
  SwitchRequest one{1, 120};
  EXPECT_TRUE(SwitchLimitAllowsStart(one, 1, 1000, 1000));
  EXPECT_FALSE(SwitchLimitAllowsStart(one, 2, 1000, 1100));
  EXPECT_TRUE(SwitchLimitAllowsStart(one, 2, 1000, 1120));
  SwitchRequest long_wait{1, 3600};  // capped by max_switch_wait (300)
  EXPECT_TRUE(SwitchLimitAllowsStart(long_wait, 2, 1000, 1300));
  SwitchRequest cap{1, -1};
  EXPECT_FALSE(SwitchLimitAllowsStart(cap, 2, 1000, 1299));
  EXPECT_TRUE(SwitchLimitAllowsStart(SwitchRequest{}, 5, 1000, 1000));
}

const char* kBlocks =
    "BlockName=b1 Nodes=n[1-4]\n"
    "BlockName=b2 Nodes=n[5-8]\n"
    "BlockName=b3 Nodes=n[9-12]\n"
    "BlockName=b4 Nodes=n[13-16]\n"
    "BlockSizes=4,8,16\n";

TEST(TopologyTest, ParsesBlocks) {
  auto t = ParseTopologyConf(kBlocks, Names("n", 16));
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->kind, Topology::Kind::kBlock);
  EXPECT_EQ(t->block_sizes, (std::vector<uint32_t>{4, 8, 16}));
  EXPECT_EQ(t->node_block[9], 2);
  auto dflt =
      ParseTopologyConf("BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\n", Names("n", 4));
  ASSERT_TRUE(dflt.ok());
  EXPECT_EQ(dflt->block_sizes, (std::vector<uint32_t>{2, 4}));
  auto e = [](const char* text) {
    auto t = ParseTopologyConf(text, Names("n", 8));
    return t.ok() ? std::string("OK") : t.error();
  };
  EXPECT_EQ(e("BlockName=b1 Nodes=n[1-4]\nBlockSizes=4,12\n"),
            "topology.conf:2: BlockSizes value 12 is not a power-of-two multiple of the base "
            "block size 4");
  EXPECT_EQ(e("BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-7]\n"),
            "topology.conf:2: block 'b2' has 3 nodes, the base block size is 4");
  EXPECT_EQ(e("BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[4-7]\n"),
            "topology.conf:2: node 'n4' is in two blocks");
  EXPECT_EQ(e("BlockName=b1 Nodes=n[1-4]\nBlockSizes=4,x\n"),
            "topology.conf:2: invalid BlockSizes value 'x'");
}

TEST(TopologyTest, BlockSelectionIsAligned) {
  auto t = *ParseTopologyConf(kBlocks, Names("n", 16));
  // 3 nodes: within one block, the fullest-fitting (best fit) one: b2 has exactly 3 free.
  std::vector<int> cands = {0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15};
  auto c = SelectBlock(t, cands, 3);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->nodes, (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(c->level_size, 4u);
  EXPECT_EQ(c->leaf_switches, 1u);
  // 6 nodes: level 8, aligned pairs (b1,b2) or (b3,b4); b1+b2 have 7 free (best fit).
  c = SelectBlock(t, cands, 6);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->level_size, 8u);
  EXPECT_EQ(c->nodes, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  // b2 and b3 have room but are not an aligned pair: with b1 and b4 busy, 6 nodes go to level 16.
  c = SelectBlock(t, {4, 5, 6, 7, 8, 9, 10, 11}, 6);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->level_size, 16u);
  EXPECT_EQ(c->leaf_switches, 2u);
  EXPECT_FALSE(SelectBlock(t, {0, 1}, 3).has_value());
  EXPECT_EQ(OrderCandidates(t, cands, 3).front(), 4);
}

TEST(TopologyTest, UnknownNodesAllowedForDynamicNodes) {
  TopoParseOptions lenient;
  lenient.allow_unknown_nodes = true;
  // w-1 and w-3 have not registered (or are gone); a deleted node's slot has an empty name.
  std::vector<std::string> names = {"w-0", "", "w-2"};
  auto t = ParseTopologyConf(
      "SwitchName=k1 Nodes=w-[0-1]\nSwitchName=k2 Nodes=w-[2-3]\n"
      "SwitchName=top Switches=k[1-2]\n",
      names, "topology.conf", lenient);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->unknown_nodes, (std::vector<std::string>{"w-1", "w-3"}));
  EXPECT_EQ(t->switches[0].nodes, std::vector<int>{0});
  EXPECT_EQ(t->switches[2].subtree, (std::vector<int>{0, 2}));
  EXPECT_EQ(t->node_leaf, (std::vector<int>{0, -1, 1}));
  EXPECT_TRUE(t->warnings.empty());  // the empty slot is not "not connected"
  // Strict parsing (static nodes only) still refuses them.
  EXPECT_FALSE(ParseTopologyConf("SwitchName=k1 Nodes=w-[0-1]\n", names).ok());
  // Blocks are sized by the names written, so a half-registered block is valid.
  auto b = ParseTopologyConf("BlockName=b1 Nodes=w-[0-1]\nBlockName=b2 Nodes=w-[2-3]\n", names,
                             "topology.conf", lenient);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->block_sizes, (std::vector<uint32_t>{2, 4}));
  EXPECT_EQ(b->blocks[0].nodes, std::vector<int>{0});
  auto bad = ParseTopologyConf("BlockName=b1 Nodes=w-[0-1]\nBlockName=b2 Nodes=w-[2-4]\n", names,
                               "topology.conf", lenient);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "topology.conf:2: block 'b2' has 3 nodes, the base block size is 2");
}

}  // namespace
}  // namespace shoal::sched
