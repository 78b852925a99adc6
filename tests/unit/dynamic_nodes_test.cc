#include "ctld/dynamic_nodes.h"

#include <gtest/gtest.h>

namespace shoal::ctld {
namespace {

TEST(ParseCreateNodeSpec, OneNodeWithKeys) {
  auto r = ParseCreateNodeSpec("NodeName=d1 CPUs=4 RealMemory=2000 Features=a,b State=FUTURE");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 1u);
  const NodeConf& n = (*r)[0];
  EXPECT_EQ(n.name, "d1");
  EXPECT_EQ(n.cpus, 4u);
  EXPECT_EQ(n.real_memory_mb, 2000u);
  EXPECT_EQ(n.features, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(n.state, "FUTURE");
}

TEST(ParseCreateNodeSpec, HostlistExpandsAndDefaultsApply) {
  auto r = ParseCreateNodeSpec("nodename=d[1-3]");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[2].name, "d3");
  EXPECT_EQ((*r)[0].cpus, 1u);
  EXPECT_EQ((*r)[0].real_memory_mb, 1u);
  EXPECT_EQ((*r)[0].state, "UNKNOWN");
}

TEST(ParseCreateNodeSpec, Refusals) {
  EXPECT_FALSE(ParseCreateNodeSpec("").ok());
  EXPECT_FALSE(ParseCreateNodeSpec("CPUs=4 NodeName=d1").ok());
  EXPECT_FALSE(ParseCreateNodeSpec("PartitionName=p Nodes=ALL").ok());
  EXPECT_FALSE(ParseCreateNodeSpec("NodeName=DEFAULT CPUs=2").ok());
  EXPECT_FALSE(ParseCreateNodeSpec("NodeName=d1\nNodeName=d2").ok());
  auto bad = ParseCreateNodeSpec("NodeName=d1 CPUs=x");
  ASSERT_FALSE(bad.ok());
  // The spec is not a file: no "create_node:1:" position in the message.
  EXPECT_EQ(bad.error().find("create_node"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("CPUs"), std::string::npos) << bad.error();
  EXPECT_FALSE(ParseCreateNodeSpec("NodeName=d1 State=BOGUS").ok());
}

}  // namespace
}  // namespace shoal::ctld

TEST(DynamicNodeInPartition, AllAndNodeSetFeatures) {
  std::vector<shoal::NodeSetConf> sets(2);
  sets[0].name = "gpu";
  sets[0].feature = "gpu";
  sets[1].name = "static";  // Nodes= only: takes no dynamic node
  using shoal::ctld::DynamicNodeInPartition;
  EXPECT_TRUE(DynamicNodeInPartition("ALL", sets, {}));
  EXPECT_TRUE(DynamicNodeInPartition("all", sets, {"x"}));
  EXPECT_TRUE(DynamicNodeInPartition("n[1-2],gpu", sets, {"a", "gpu"}));
  EXPECT_FALSE(DynamicNodeInPartition("n[1-2],gpu", sets, {"a"}));
  EXPECT_FALSE(DynamicNodeInPartition("static", sets, {"static"}));
  EXPECT_FALSE(DynamicNodeInPartition("n[gpu,3]", sets, {"gpu"}));  // a hostlist, not the set
  EXPECT_FALSE(DynamicNodeInPartition("cpu", sets, {"gpu"}));
}
