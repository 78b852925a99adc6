#include "sched/step_layout.h"

#include <gtest/gtest.h>

namespace shoal::sched {
namespace {

StepJobNodes Job(std::vector<uint32_t> cpus) {
  StepJobNodes j;
  for (size_t i = 0; i < cpus.size(); ++i) j.names.push_back("n" + std::to_string(i + 1));
  j.cpus = cpus;
  j.cpus_in_use.assign(cpus.size(), 0);
  return j;
}

TEST(StepLayout, DefaultIsOneTaskPerJobNode) {
  auto l = LayoutStep(Job({2, 2, 2}), {});
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_EQ(l->node_index, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(l->tasks, (std::vector<uint32_t>{1, 1, 1}));
  EXPECT_EQ(l->cpus, (std::vector<uint32_t>{2, 2, 2}));  // whole job share without --exact
}

TEST(StepLayout, TasksSpreadEvenlyFirstNodesTakeRemainder) {
  StepRequest r;
  r.min_nodes = 2;
  r.num_tasks = 3;
  auto l = LayoutStep(Job({4, 4, 4}), r);
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_EQ(l->tasks, (std::vector<uint32_t>{2, 1}));
  r.min_nodes = 0;
  r.num_tasks = 2;  // without -N: min(tasks, nodes) nodes
  l = LayoutStep(Job({4, 4, 4}), r);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->node_index.size(), 2u);
}

TEST(StepLayout, BlockFillMovesTasksToNodesWithRoom) {
  StepRequest r;
  r.min_nodes = 2;
  r.num_tasks = 4;
  auto l = LayoutStep(Job({1, 3}), r);
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_EQ(l->tasks, (std::vector<uint32_t>{1, 3}));
}

TEST(StepLayout, TooManyTasksIsInvalidUnlessOvercommit) {
  StepRequest r;
  r.num_tasks = 64;
  auto l = LayoutStep(Job({2, 2, 2, 2}), r);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), ErrorCode::kInvalidStep);
  EXPECT_EQ(l.error(), "More processors requested than permitted");
  r.overcommit = true;
  r.min_nodes = 4;
  l = LayoutStep(Job({2, 2, 2, 2}), r);
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_EQ(l->tasks, (std::vector<uint32_t>{16, 16, 16, 16}));
}

TEST(StepLayout, BusyUntilOtherStepsEndUnlessOverlap) {
  auto job = Job({2, 2});
  job.cpus_in_use = {2, 0};
  StepRequest r;
  r.min_nodes = 2;
  auto l = LayoutStep(job, r);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), ErrorCode::kStepBusy);
  r.overlap = true;
  l = LayoutStep(job, r);
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_EQ(l->cpus, (std::vector<uint32_t>{0, 0}));
  // One node free: a one-node step goes there.
  StepRequest one;
  one.min_nodes = 1;
  l = LayoutStep(job, one);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->node_index, (std::vector<uint32_t>{1}));
}

TEST(StepLayout, ExactHoldsOnlyWhatTasksNeed) {
  auto job = Job({4});
  StepRequest r;
  r.num_tasks = 1;
  r.exact = true;
  auto l = LayoutStep(job, r);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->cpus, (std::vector<uint32_t>{1}));
  job.cpus_in_use = {3};
  l = LayoutStep(job, r);
  ASSERT_TRUE(l.ok()) << l.error();
  job.cpus_in_use = {4};
  EXPECT_EQ(LayoutStep(job, r).status().code(), ErrorCode::kStepBusy);
}

TEST(StepLayout, NodelistExcludeAndRelative) {
  StepRequest r;
  r.nodelist = {"n3"};
  auto l = LayoutStep(Job({1, 1, 1}), r);
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_EQ(l->node_index, (std::vector<uint32_t>{2}));
  r.nodelist = {"n9"};
  EXPECT_EQ(LayoutStep(Job({1, 1, 1}), r).status().code(), ErrorCode::kInvalidStep);
  StepRequest x;
  x.exclude = {"n1"};
  l = LayoutStep(Job({1, 1, 1}), x);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->node_index, (std::vector<uint32_t>{1, 2}));
  StepRequest rel;
  rel.relative_given = true;
  rel.relative = 1;
  rel.min_nodes = 1;
  l = LayoutStep(Job({1, 1, 1}), rel);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->node_index, (std::vector<uint32_t>{1}));
  StepRequest big;
  big.min_nodes = 5;
  EXPECT_EQ(LayoutStep(Job({1, 1, 1}), big).error(),
            "Requested node configuration is not available");
}

TEST(StepLayout, TasksPerNode) {
  StepRequest r;
  r.ntasks_per_node = 1;
  r.num_tasks = 3;
  auto l = LayoutStep(Job({2, 2, 2}), r);
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_EQ(l->tasks, (std::vector<uint32_t>{1, 1, 1}));
}

}  // namespace
}  // namespace shoal::sched
