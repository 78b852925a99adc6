#include "sched/preempt.h"

#include <gtest/gtest.h>

namespace shoal::sched {
namespace {

TEST(PreemptTest, ParsesTypeAndMode) {
  EXPECT_EQ(*ParsePreemptType("preempt/partition_prio"), PreemptType::kPartitionPrio);
  EXPECT_EQ(*ParsePreemptType("preempt/qos"), PreemptType::kQos);
  EXPECT_EQ(*ParsePreemptType("preempt/none"), PreemptType::kNone);
  EXPECT_FALSE(ParsePreemptType("preempt/x").ok());
  auto m = ParsePreemptMode("suspend,gang");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->action, PreemptAction::kSuspend);
  EXPECT_TRUE(m->gang);
  EXPECT_EQ(FormatPreemptMode(*m), "SUSPEND,GANG");
  EXPECT_EQ(FormatPreemptMode(*ParsePreemptMode("OFF")), "OFF");
  EXPECT_EQ(FormatPreemptMode(*ParsePreemptMode("GANG")), "GANG");
  EXPECT_EQ(ParsePreemptMode("REQUEUE")->action, PreemptAction::kRequeue);
  EXPECT_FALSE(ParsePreemptMode("CANCEL,REQUEUE").ok());
  EXPECT_FALSE(ParsePreemptMode("bogus").ok());
}

PreemptibleJob Job(uint32_t id, uint32_t tier, int64_t start, uint32_t nodes = 1) {
  PreemptibleJob j;
  j.job_id = id;
  j.partition_tier = tier;
  j.start_time = start;
  j.num_nodes = nodes;
  return j;
}

TEST(PreemptTest, PartitionPrioCandidatesAndOrder) {
  PreemptConfig cfg;
  cfg.type = PreemptType::kPartitionPrio;
  cfg.cluster_mode.action = PreemptAction::kRequeue;
  PreemptorJob hi{100, 10, "", {}, false};
  std::vector<PreemptibleJob> run = {Job(1, 1, 100), Job(2, 1, 200), Job(3, 5, 300),
                                     Job(4, 10, 400), Job(5, 1, 150, 4)};
  run[2].partition_mode = PreemptMode{PreemptAction::kOff, false, false};
  auto c = PreemptionCandidates(cfg, hi, run, 1000);
  std::vector<uint32_t> ids;
  for (auto* j : c) ids.push_back(j->job_id);
  // Tier 1 before tier 5; job 3's partition has PreemptMode=OFF; same tier (4) never.
  // Smaller first, then youngest.
  EXPECT_EQ(ids, (std::vector<uint32_t>{2, 1, 5}));
  cfg.youngest_first = true;
  ids.clear();
  for (auto* j : PreemptionCandidates(cfg, hi, run, 1000)) ids.push_back(j->job_id);
  EXPECT_EQ(ids, (std::vector<uint32_t>{2, 5, 1}));
  // PreemptExemptTime keeps young CANCEL/REQUEUE jobs.
  cfg.preempt_exempt_time = 850;
  ids.clear();
  for (auto* j : PreemptionCandidates(cfg, hi, run, 1000)) ids.push_back(j->job_id);
  EXPECT_EQ(ids, (std::vector<uint32_t>{5, 1}));
  cfg.type = PreemptType::kNone;
  EXPECT_TRUE(PreemptionCandidates(cfg, hi, run, 1000).empty());
}

TEST(PreemptTest, QosPreemptList) {
  PreemptConfig cfg;
  cfg.type = PreemptType::kQos;
  cfg.cluster_mode.action = PreemptAction::kCancel;
  PreemptorJob job{100, 1, "high", {"low", "scavenger"}, false};
  PreemptibleJob a = Job(1, 1, 10);
  a.qos = "low";
  a.qos_priority = 10;
  PreemptibleJob b = Job(2, 1, 20);
  b.qos = "scavenger";
  b.qos_priority = 0;
  PreemptibleJob c = Job(3, 1, 30);
  c.qos = "normal";
  PreemptibleJob d = Job(4, 1, 40);
  d.qos = "high";
  d.qos_priority = 100;
  std::vector<PreemptibleJob> run = {a, b, c, d};
  std::vector<uint32_t> ids;
  for (auto* j : PreemptionCandidates(cfg, job, run, 100)) ids.push_back(j->job_id);
  EXPECT_EQ(ids, (std::vector<uint32_t>{2, 1}));
  job.qos_within = true;
  ids.clear();
  for (auto* j : PreemptionCandidates(cfg, job, run, 100)) ids.push_back(j->job_id);
  EXPECT_EQ(ids, (std::vector<uint32_t>{2, 1, 4}));
}

TEST(PreemptTest, PlansMinimalVictimSetWithCapacityModel) {
  PreemptConfig cfg;
  cfg.type = PreemptType::kPartitionPrio;
  cfg.cluster_mode.action = PreemptAction::kRequeue;
  PreemptorJob hi{100, 10, "", {}, false};
  // 2 nodes, 4 CPUs each, full. Job 1 (1 CPU on node 0) and job 2 (2 CPUs on node 0) are small
  // and young; job 3 holds all of node 1. The pending job needs one node with 4 CPUs.
  std::vector<PreemptibleJob> run = {Job(1, 1, 500), Job(2, 1, 400), Job(3, 1, 100, 1)};
  run[0].requeue = true;
  run[1].requeue = true;
  run[2].requeue = false;  // cannot be requeued: cancelled instead
  run[2].grace_time = 60;
  std::vector<JobHolding> hold = {{1, 0, 1, 0, 0}, {2, 0, 2, 0, 0}, {3, 1, 4, 0, 0}};
  std::vector<NodeCapacity> free = {{1, 0, 0}, {0, 0, 0}};
  auto fits = CapacityFits(free, hold, PerNodeNeed{1, 4, 0, 0, false});
  auto plan = PlanPreemption(cfg, hi, run, 1000, fits);
  ASSERT_TRUE(plan.has_value());
  // Order is 1 (youngest), 2, 3: after 1 and 2 node 0 has 4 free CPUs.
  ASSERT_EQ(plan->victims.size(), 2u);
  EXPECT_EQ(plan->victims[0].job_id, 2u);  // the one that made it fit comes first
  EXPECT_EQ(plan->victims[1].job_id, 1u);
  EXPECT_EQ(plan->victims[0].action, PreemptAction::kRequeue);
  EXPECT_EQ(plan->victims[0].state, "PENDING");
  EXPECT_EQ(plan->victims[0].reason, "BeginTime");

  // Needing 2 CPUs on two nodes: 1 then 2 alone do not give node 1 anything; job 3 is needed,
  // and then only one of the small jobs is: the reorder drops the others.
  fits = CapacityFits(free, hold, PerNodeNeed{2, 2, 0, 0, false});
  plan = PlanPreemption(cfg, hi, run, 1000, fits);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->victims.size(), 2u);
  EXPECT_EQ(plan->victims[0].job_id, 3u);
  EXPECT_EQ(plan->victims[0].action, PreemptAction::kCancel);
  EXPECT_EQ(plan->victims[0].state, "PREEMPTED");
  EXPECT_EQ(plan->victims[0].sigterm_time, 1000);
  EXPECT_EQ(plan->victims[0].sigkill_time, 1060);
  EXPECT_EQ(plan->victims[1].job_id, 1u);

  // Already fits: nothing to preempt. Impossible: nullopt.
  EXPECT_TRUE(PlanPreemption(cfg, hi, run, 1000, [](auto&) { return true; })->victims.empty());
  EXPECT_FALSE(PlanPreemption(cfg, hi, run, 1000, [](auto&) { return false; }).has_value());
  // Same tier: no preemption.
  PreemptorJob same{100, 1, "", {}, false};
  EXPECT_FALSE(PlanPreemption(cfg, same, run, 1000, CapacityFits(free, hold, {1, 4, 0, 0, false}))
                   .has_value());
}

TEST(PreemptTest, SuspendKeepsMemoryAndGpus) {
  PreemptConfig cfg;
  cfg.type = PreemptType::kPartitionPrio;
  cfg.cluster_mode = {PreemptAction::kSuspend, true, false};
  PreemptorJob hi{100, 10, "", {}, false};
  std::vector<PreemptibleJob> run = {Job(1, 1, 500)};
  std::vector<JobHolding> hold = {{1, 0, 4, 1000, 1}};
  std::vector<NodeCapacity> free = {{0, 1000, 0}};
  // CPUs come back on suspension, memory and GPUs do not.
  auto plan =
      PlanPreemption(cfg, hi, run, 1000, CapacityFits(free, hold, PerNodeNeed{1, 4, 500, 0, true}));
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims[0].action, PreemptAction::kSuspend);
  EXPECT_EQ(plan->victims[0].state, "SUSPENDED");
  EXPECT_FALSE(
      PlanPreemption(cfg, hi, run, 1000, CapacityFits(free, hold, PerNodeNeed{1, 4, 500, 1, true}))
          .has_value());
}

}  // namespace
}  // namespace shoal::sched
