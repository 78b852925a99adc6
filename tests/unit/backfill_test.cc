#include "sched/backfill.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace shoal::sched {
namespace {

constexpr int64_t kNow = 1000;

std::vector<NodeView> Idle(int n, uint32_t cpus) {
  std::vector<NodeView> v(n);
  for (auto& x : v) {
    x.cpus = cpus;
    x.memory_mb = 1000;
    x.available = true;
  }
  return v;
}

JobShape WholeNodes(uint32_t nodes, uint32_t cpus_per_node) {
  JobShape s;
  s.min_nodes = s.max_nodes = nodes;
  s.ntasks_per_node = cpus_per_node;
  return s;
}

// A cluster of 4 nodes x 4 CPUs where a running job holds nodes 0-1 until kNow + 100.
PlanInput Busy() {
  PlanInput in;
  in.now = kNow;
  in.nodes = Idle(4, 4);
  in.partition_nodes = {{0, 1, 2, 3}};
  in.params.resolution_s = 10;
  RunningJob r;
  r.job_id = 1;
  r.shape = WholeNodes(2, 4);
  r.shape.allowed = {0, 1, 2, 3};
  r.placement = *PlaceJob(r.shape, in.nodes);
  r.end_time = kNow + 100;
  Allocate(in.nodes, r.shape, r.placement);
  in.running.push_back(r);
  return in;
}

PendingJob Job(uint32_t id, JobShape shape, int64_t limit, uint32_t partition = 0) {
  PendingJob j;
  j.job_id = id;
  j.shape = std::move(shape);
  j.time_limit_s = limit;
  j.partition = partition;
  return j;
}

const PendingDecision* Find(const CyclePlan& p, uint32_t id) {
  for (const auto& d : p.pending)
    if (d.job_id == id) return &d;
  return nullptr;
}

bool Started(const CyclePlan& p, uint32_t id) {
  return std::any_of(p.starts.begin(), p.starts.end(),
                     [&](const JobStart& s) { return s.job_id == id; });
}

TEST(Backfill, ShortJobBackfillsAroundBlockedWideJobWithoutMovingItsReservation) {
  PlanInput alone = Busy();
  alone.pending = {Job(10, WholeNodes(4, 4), 1000)};
  CyclePlan before = PlanCycle(alone);
  const PendingDecision* wide = Find(before, 10);
  ASSERT_NE(wide, nullptr);
  ASSERT_TRUE(wide->start_time);
  EXPECT_EQ(*wide->start_time, kNow + 100);
  EXPECT_EQ(wide->planned_nodes, (std::vector<int>{0, 1, 2, 3}));

  PlanInput in = Busy();
  in.pending = {Job(10, WholeNodes(4, 4), 1000), Job(11, WholeNodes(1, 4), 50)};
  CyclePlan plan = PlanCycle(in);
  ASSERT_TRUE(Started(plan, 11));
  EXPECT_TRUE(plan.starts[0].backfilled);
  EXPECT_EQ(plan.starts[0].placement.nodes, (std::vector<int>{2}));
  wide = Find(plan, 10);
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(wide->reason, PendingReason::kResources);
  EXPECT_EQ(wide->start_time, before.pending[0].start_time);
}

TEST(Backfill, LongJobThatWouldDelayTheReservationWaits) {
  PlanInput in = Busy();
  in.pending = {Job(10, WholeNodes(4, 4), 1000), Job(11, WholeNodes(1, 4), 500)};
  CyclePlan plan = PlanCycle(in);
  EXPECT_TRUE(plan.starts.empty());
  const PendingDecision* wide = Find(plan, 10);
  const PendingDecision* lng = Find(plan, 11);
  ASSERT_TRUE(wide && lng);
  EXPECT_EQ(wide->start_time, kNow + 100);
  EXPECT_EQ(lng->reason, PendingReason::kPriority);
  // It runs after the wide job: that ends at kNow + 100 + 1000.
  EXPECT_EQ(lng->start_time, kNow + 1100);
}

TEST(Backfill, WithoutBackfillLaterJobsOnlyWait) {
  PlanInput in = Busy();
  in.params.enabled = false;
  in.pending = {Job(10, WholeNodes(4, 4), 1000), Job(11, WholeNodes(1, 4), 50)};
  CyclePlan plan = PlanCycle(in);
  EXPECT_TRUE(plan.starts.empty());
  EXPECT_EQ(Find(plan, 10)->reason, PendingReason::kResources);
  EXPECT_EQ(Find(plan, 11)->reason, PendingReason::kPriority);
  EXPECT_FALSE(Find(plan, 10)->start_time);
}

TEST(Backfill, MainPassStartsWhatFitsAndBlocksEachPartitionSeparately) {
  PlanInput in = Busy();
  in.partition_nodes = {{0, 1, 2}, {3}};
  in.pending = {Job(20, WholeNodes(1, 4), 100, 0), Job(21, WholeNodes(2, 4), 100, 0),
                Job(22, WholeNodes(1, 4), 100, 0), Job(23, WholeNodes(1, 4), 100, 1)};
  in.params.enabled = false;
  CyclePlan plan = PlanCycle(in);
  EXPECT_TRUE(Started(plan, 20));  // node 2
  EXPECT_TRUE(Started(plan, 23));  // node 3, other partition, not blocked by 21
  EXPECT_EQ(Find(plan, 21)->reason, PendingReason::kResources);
  EXPECT_EQ(Find(plan, 22)->reason, PendingReason::kPriority);
  EXPECT_EQ(plan.stats.main_tested, 3u);  // 22 is never tried: its partition is blocked
}

TEST(Backfill, ExpectedStartTimesFollowTheProfile) {
  PlanInput in = Busy();
  // Job 2 holds node 2 until kNow + 300; node 3 is free.
  RunningJob r;
  r.job_id = 2;
  r.shape = WholeNodes(1, 4);
  r.shape.allowed = {2};
  r.placement = *PlaceJob(r.shape, in.nodes);
  r.end_time = kNow + 300;
  Allocate(in.nodes, r.shape, r.placement);
  in.running.push_back(r);
  in.pending = {Job(30, WholeNodes(3, 4), 600), Job(31, WholeNodes(4, 4), 60),
                Job(32, WholeNodes(1, 4), 200), Job(33, WholeNodes(1, 4), 100)};
  CyclePlan plan = PlanCycle(in);
  EXPECT_EQ(Find(plan, 30)->start_time, kNow + 100);  // nodes 0,1,3 free at +100
  EXPECT_EQ(Find(plan, 30)->planned_nodes, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(Find(plan, 31)->start_time, kNow + 700);  // after 30 ends
  // 32 (200 s) would run into 30's reservation on node 3: waits for node 2 at +300.
  EXPECT_EQ(Find(plan, 32)->start_time, kNow + 300);
  EXPECT_EQ(Find(plan, 32)->planned_nodes, (std::vector<int>{2}));
  // 33 (100 s) fits on node 3 before 30 needs it.
  EXPECT_TRUE(Started(plan, 33));
}

TEST(Backfill, UnlimitedJobsAndWindow) {
  PlanInput in = Busy();
  in.params.window_min = 1;  // 60 s: the running job's end at +100 is beyond it
  in.pending = {Job(40, WholeNodes(4, 4), 0), Job(41, WholeNodes(1, 4), 0)};
  CyclePlan plan = PlanCycle(in);
  EXPECT_FALSE(Find(plan, 40)->start_time);
  // An unlimited job can start now when no reservation stands in its way.
  EXPECT_TRUE(Started(plan, 41));
}

TEST(Backfill, MaxJobTestBoundsTheJobsExamined) {
  PlanInput in = Busy();
  in.params.max_job_test = 1;
  in.pending = {Job(10, WholeNodes(4, 4), 1000), Job(11, WholeNodes(1, 4), 50)};
  CyclePlan plan = PlanCycle(in);
  EXPECT_TRUE(plan.starts.empty());
  EXPECT_EQ(plan.stats.backfill_tested, 1u);
  EXPECT_TRUE(Find(plan, 10)->start_time);
  EXPECT_FALSE(Find(plan, 11)->start_time);
}

TEST(Backfill, IdenticalShapesReuseTheEarlierSearch) {
  PlanInput in = Busy();
  for (uint32_t id = 50; id < 60; ++id) {
    in.pending.push_back(Job(id, WholeNodes(4, 4), 100));
    in.pending.back().shape_key = 7;
  }
  CyclePlan plan = PlanCycle(in);
  for (uint32_t id = 50; id < 60; ++id)
    EXPECT_EQ(Find(plan, id)->start_time, kNow + 100 + int64_t{id - 50} * 100) << id;
}

TEST(Backfill, OverdueRunningJobIsExpectedAtTheNextStep) {
  PlanInput in = Busy();
  in.running[0].end_time = kNow - 5;
  in.pending = {Job(10, WholeNodes(4, 4), 100)};
  CyclePlan plan = PlanCycle(in);
  EXPECT_EQ(Find(plan, 10)->start_time, kNow + 10);
}

// PlanInput::previous: a job the previous plan knew is planned around a promise; a job it
// did not know (just arrived, higher priority) may take the promised resources first.
TEST(Backfill, PromisesBindKnownJobsButNotNewArrivals) {
  PlanInput first = Busy();
  first.pending = {Job(10, WholeNodes(4, 4), 1000)};
  CyclePlan plan = PlanCycle(first);
  ASSERT_EQ(Find(plan, 10)->start_time, kNow + 100);

  PlanInput in = Busy();
  in.now = kNow + 10;
  in.pending = {Job(12, WholeNodes(2, 4), 500), Job(10, WholeNodes(4, 4), 1000)};
  // Job 12 just arrived: it starts now on nodes 2-3 and job 10 loses its promise.
  in.previous = std::make_shared<const PreviousPlan>(plan.pending);
  CyclePlan fresh = PlanCycle(in);
  EXPECT_TRUE(Started(fresh, 12));
  EXPECT_EQ(Find(fresh, 10)->start_time, kNow + 10 + 500);
  // Job 12 was already waiting last cycle: it must not delay job 10's promise.
  std::vector<PendingDecision> known = plan.pending;
  known.push_back({12, PendingReason::kPriority, std::nullopt, {}});
  in.previous = std::make_shared<const PreviousPlan>(std::move(known));
  CyclePlan kept = PlanCycle(in);
  EXPECT_FALSE(Started(kept, 12));
  EXPECT_EQ(Find(kept, 10)->start_time, kNow + 100);
  EXPECT_EQ(Find(kept, 10)->planned_nodes, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(Find(kept, 12)->start_time, kNow + 1100);
}

TEST(Backfill, PromiseOnANodeThatWentDownIsDropped) {
  PlanInput first = Busy();
  first.pending = {Job(10, WholeNodes(2, 4), 1000)};
  first.nodes[2].available = false;
  first.nodes[3].available = false;
  CyclePlan plan = PlanCycle(first);
  ASSERT_EQ(Find(plan, 10)->start_time, kNow + 100);
  ASSERT_EQ(Find(plan, 10)->planned_nodes, (std::vector<int>{0, 1}));
  // Node 1 went down; 2 and 3 came back: the job starts now elsewhere.
  PlanInput in = Busy();
  in.nodes[1].available = false;
  in.pending = {Job(10, WholeNodes(2, 4), 1000)};
  in.previous = std::make_shared<const PreviousPlan>(plan.pending);
  CyclePlan next = PlanCycle(in);
  ASSERT_TRUE(Started(next, 10));
  EXPECT_EQ(next.starts[0].placement.nodes, (std::vector<int>{2, 3}));
  // A promise beyond what bf_max_job_test lets backfill examine is still reported.
  in.nodes[1].available = true;
  in.nodes[2].available = in.nodes[3].available = false;
  in.pending = {Job(11, WholeNodes(1, 4), 50), Job(10, WholeNodes(2, 4), 1000)};
  in.params.max_job_test = 1;
  CyclePlan capped = PlanCycle(in);
  EXPECT_EQ(capped.stats.backfill_tested, 1u);
  EXPECT_EQ(Find(capped, 10)->start_time, kNow + 100);
  EXPECT_EQ(Find(capped, 10)->planned_nodes, (std::vector<int>{0, 1}));
}

TEST(Backfill, PlanSingle) {
  auto nodes = Idle(4, 4);
  PendingJob j = Job(1, WholeNodes(2, 4), 60);
  auto d = PlanSingle(nodes, j, {0, 1, 2, 3}, false);
  ASSERT_TRUE(d.placement);
  EXPECT_EQ(d.placement->nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(PlanSingle(nodes, j, {0, 1, 2, 3}, true).reason, PendingReason::kPriority);
  EXPECT_EQ(PlanSingle(nodes, Job(2, WholeNodes(5, 4), 60), {0, 1, 2, 3}, false).reason,
            PendingReason::kResources);
}

TEST(Backfill, ParseSchedulerParameters) {
  auto p = ParseSchedulerParameters(
      "bf_window=2880,bf_resolution=120,bf_continue,"
      "default_queue_depth=100,bf_max_job_test=1000,bf_max_time=60");
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p->window_min, 2880u);
  EXPECT_EQ(p->resolution_s, 120u);
  EXPECT_EQ(p->max_job_test, 1000u);
  EXPECT_TRUE(p->bf_continue);
  EXPECT_EQ(p->max_time_s, 60);
  EXPECT_FALSE(ParseSchedulerParameters("bf_window=abc"));
  EXPECT_FALSE(ParseSchedulerParameters("bf_resolution=0"));
  EXPECT_EQ(ReasonName(PendingReason::kResources), "Resources");
}

TEST(Backfill, ParseMainSchedulerParameters) {
  auto d = ParseMainSchedulerParameters("bf_window=2880");
  ASSERT_TRUE(d) << d.error();
  EXPECT_EQ(d->queue_depth, 100u);  // Slurm's defaults
  EXPECT_EQ(d->interval_s, 60);
  EXPECT_EQ(d->partition_depth, 0u);
  EXPECT_FALSE(d->defer);
  auto p = ParseMainSchedulerParameters(
      "bf_continue,default_queue_depth=500,sched_interval=15,defer,partition_job_depth=7");
  ASSERT_TRUE(p) << p.error();
  EXPECT_EQ(p->queue_depth, 500u);
  EXPECT_EQ(p->interval_s, 15);
  EXPECT_EQ(p->partition_depth, 7u);
  EXPECT_TRUE(p->defer);
  EXPECT_FALSE(ParseMainSchedulerParameters("partition_job_depth=-1"));
  auto off = ParseMainSchedulerParameters("sched_interval=-1,default_queue_depth=0");
  ASSERT_TRUE(off) << off.error();
  EXPECT_EQ(off->interval_s, -1);
  EXPECT_EQ(off->queue_depth, 0u);
  auto bad = ParseMainSchedulerParameters("default_queue_depth=many");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("default_queue_depth=many"), std::string::npos) << bad.error();
  EXPECT_FALSE(ParseMainSchedulerParameters("sched_interval=-5"));
}

}  // namespace
}  // namespace shoal::sched
