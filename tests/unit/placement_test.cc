#include "sched/placement.h"

#include <gtest/gtest.h>

namespace shoal::sched {
namespace {

std::vector<NodeView> Idle(int n, uint32_t cpus, uint64_t mem = 1000) {
  std::vector<NodeView> v(n);
  for (auto& x : v) {
    x.cpus = cpus;
    x.memory_mb = mem;
    x.available = true;
  }
  return v;
}

JobShape Shape(std::vector<int> allowed) {
  JobShape s;
  s.allowed = std::move(allowed);
  return s;
}

TEST(Placement, SingleTaskTakesOneCpuOnFirstNode) {
  auto nodes = Idle(2, 4);
  auto p = PlaceJob(Shape({0, 1}), nodes);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->nodes, (std::vector<int>{0}));
  EXPECT_EQ(p->cpus, (std::vector<uint32_t>{1}));
}

TEST(Placement, NodesWithTasksPerNode) {
  auto nodes = Idle(4, 2);
  JobShape s = Shape({0, 1, 2, 3});
  s.min_nodes = 3;
  s.ntasks_per_node = 1;
  auto p = PlaceJob(s, nodes);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->nodes, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p->tasks, (std::vector<uint32_t>{1, 1, 1}));
}

TEST(Placement, TwoOneCpuJobsShareATwoCpuNode) {
  auto nodes = Idle(1, 2);
  auto p1 = PlaceJob(Shape({0}), nodes);
  ASSERT_TRUE(p1);
  nodes[0].alloc_cpus += p1->cpus[0];
  auto p2 = PlaceJob(Shape({0}), nodes);
  ASSERT_TRUE(p2);
  nodes[0].alloc_cpus += p2->cpus[0];
  EXPECT_FALSE(PlaceJob(Shape({0}), nodes));
}

TEST(Placement, TasksSpreadWhenOneNodeIsTooSmall) {
  auto nodes = Idle(3, 2);
  JobShape s = Shape({0, 1, 2});
  s.num_tasks = 5;
  auto p = PlaceJob(s, nodes);
  ASSERT_TRUE(p);
  uint32_t total = 0;
  for (auto t : p->tasks) total += t;
  EXPECT_EQ(total, 5u);
  EXPECT_EQ(p->nodes.size(), 3u);
}

TEST(Placement, ExactNodeCountIsRespected) {
  auto nodes = Idle(3, 2);
  JobShape s = Shape({0, 1, 2});
  s.min_nodes = 1;
  s.max_nodes = 1;
  s.num_tasks = 4;
  EXPECT_FALSE(PlaceJob(s, nodes));
  EXPECT_FALSE(CouldEverRun(s, nodes));
}

TEST(Placement, MemoryIsConsumable) {
  auto nodes = Idle(1, 8, 1000);
  JobShape s = Shape({0});
  s.mem_per_node_mb = 600;
  auto p = PlaceJob(s, nodes);
  ASSERT_TRUE(p);
  nodes[0].alloc_cpus += p->cpus[0];
  nodes[0].alloc_memory_mb += p->mem_per_node_mb;
  EXPECT_FALSE(PlaceJob(s, nodes));
  EXPECT_TRUE(CouldEverRun(s, nodes));
  s.mem_per_node_mb = 2000;
  EXPECT_FALSE(CouldEverRun(s, nodes));
}

TEST(Placement, UnavailableNodesAreSkippedAndRequiredNodesHonoured) {
  auto nodes = Idle(3, 2);
  nodes[0].available = false;
  JobShape s = Shape({0, 1, 2});
  auto p = PlaceJob(s, nodes);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->nodes, (std::vector<int>{1}));
  s.required = {0};
  EXPECT_FALSE(PlaceJob(s, nodes));
  s.required = {2};
  p = PlaceJob(s, nodes);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->nodes, (std::vector<int>{2}));
}

TEST(Placement, ExclusiveTakesWholeIdleNodes) {
  auto nodes = Idle(2, 4);
  nodes[0].alloc_cpus = 1;
  JobShape s = Shape({0, 1});
  s.exclusive = true;
  auto p = PlaceJob(s, nodes);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->nodes, (std::vector<int>{1}));
  EXPECT_EQ(p->cpus, (std::vector<uint32_t>{4}));
}

TEST(Placement, CpusPerTaskMultiplies) {
  auto nodes = Idle(1, 4);
  JobShape s = Shape({0});
  s.num_tasks = 2;
  s.cpus_per_task = 2;
  auto p = PlaceJob(s, nodes);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->cpus, (std::vector<uint32_t>{4}));
  s.cpus_per_task = 3;
  EXPECT_FALSE(CouldEverRun(s, nodes));
}

}  // namespace
}  // namespace shoal::sched
