#include "ctld/packed_job.h"

#include <gtest/gtest.h>

#include "common/units.h"
#include "ctld/job_payload.h"
#include "ctld/job_projection.h"

namespace shoal::ctld {
namespace {

constexpr int64_t kNow = 1700000100;

// A trivial batch job waiting for resources, as `sbatch -t 5 --wrap true` queues it.
pb::JobRecord Queued() {
  pb::JobRecord j;
  j.set_job_id(42);
  j.set_state(pb::JOB_PENDING);
  j.set_reason("Priority");
  j.set_submit_time(kNow - 10);
  j.set_eligible_time(kNow - 10);
  j.set_priority(4294901758u);
  j.set_partition("batch");
  j.set_time_limit(5);
  j.set_array_task_id(kNoArrayTask);
  j.set_last_sched_eval(kNow - 5);
  j.set_expected_start(kNow + 300);
  j.set_sched_nodes("n[1-2]");
  pb::JobSpec* s = j.mutable_spec();
  s->set_name("wrap");
  s->set_uid(1000);
  s->set_gid(1000);
  s->set_user_name("alice");
  s->set_work_dir("/home/alice");
  s->set_std_out("/dev/null");
  s->set_time_limit(5);
  s->set_min_nodes(1);
  return j;
}

TEST(PackedJob, HeldJobsAtPriorityZeroQualify) {
  pb::JobRecord j = Queued();
  j.set_held(true);
  j.set_priority(0);
  EXPECT_TRUE(Packable(j, kNow));
  EXPECT_TRUE(PackableHeld(j));
  j.set_priority(7);  // held with a priority still left: neither held at 0 nor runnable
  EXPECT_FALSE(Packable(j, kNow));
  j.set_priority(0);
  j.set_held(false);  // pending at priority 0 but not held
  EXPECT_FALSE(Packable(j, kNow));
  j.set_held(true);
  j.set_state(pb::JOB_RUNNING);
  EXPECT_FALSE(Packable(j, kNow));
  j.set_state(pb::JOB_PENDING);
  j.add_epilog_pending_nodes("n1");  // requeued held while its epilog runs
  EXPECT_FALSE(Packable(j, kNow));
}

TEST(PackedJob, RunnableJobsQualifyOnlyWhenThePassCanWeighThemFromTheView) {
  pb::JobRecord j = Queued();
  EXPECT_TRUE(Packable(j, kNow));
  EXPECT_FALSE(PackableHeld(j));
  // Each of these needs the record in the pass (or at its end): not packed.
  auto with = [](auto change) {
    pb::JobRecord x = Queued();
    change(x);
    return Packable(x, kNow);
  };
  EXPECT_FALSE(with([](pb::JobRecord& x) { x.set_eligible_time(kNow + 1); }));  // --begin
  EXPECT_FALSE(with([](pb::JobRecord& x) { x.mutable_spec()->set_dependency("afterok:3"); }));
  EXPECT_FALSE(with([](pb::JobRecord& x) { x.mutable_spec()->set_deadline(kNow + 3600); }));
  EXPECT_FALSE(with([](pb::JobRecord& x) { x.set_partition("batch,debug"); }));
  EXPECT_FALSE(with([](pb::JobRecord& x) { x.set_partition(""); }));
  EXPECT_FALSE(with([](pb::JobRecord& x) { x.mutable_spec()->set_nodelist("n1"); }));
  EXPECT_FALSE(with([](pb::JobRecord& x) { x.mutable_spec()->set_exclude("n2"); }));
  EXPECT_FALSE(with([](pb::JobRecord& x) { x.set_reservation("maint"); }));
  EXPECT_FALSE(with([](pb::JobRecord& x) { x.mutable_spec()->set_interactive(true); }));
  EXPECT_FALSE(with([](pb::JobRecord& x) {
    x.set_array_job_id(40);
    x.set_array_task_id(2);
    x.mutable_spec()->set_array("0-9%2");  // throttled: the pass counts the running tasks
  }));
  EXPECT_TRUE(with([](pb::JobRecord& x) {
    x.set_array_job_id(40);
    x.set_array_task_id(2);
    x.mutable_spec()->set_array("0-9");
  }));
  EXPECT_FALSE(with([](pb::JobRecord& x) { x.set_completing(true); }));
  EXPECT_FALSE(with([](pb::JobRecord& x) { x.set_state(pb::JOB_RUNNING); }));
}

TEST(PackedJob, RoundTripKeepsEveryFieldAndTheHeader) {
  pb::JobRecord j = Queued();
  SchedView view;
  view.time_limit = 5;
  view.partition = 3;
  view.partitions_version = 9;
  PackedJob p = Pack(j, view);
  EXPECT_TRUE(p.runnable);
  EXPECT_EQ(p.uid, 1000u);
  EXPECT_EQ(p.expected_start, kNow + 300);
  EXPECT_EQ(p.sched_nodes, "n[1-2]");
  EXPECT_EQ(p.last_sched_eval, kNow - 5);
  EXPECT_EQ(p.reason, PackedReason::kAsRecorded);
  EXPECT_EQ(p.view.partition, 3);
  EXPECT_EQ(p.view.partitions_version, 9u);
  EXPECT_EQ(p.record.capacity(), p.record.size());
  pb::JobRecord back;
  ASSERT_TRUE(Unpack(p, &back));
  EXPECT_EQ(back.SerializeAsString(), j.SerializeAsString());
  // Smaller than the parsed record by far (the point of packing).
  EXPECT_LT(p.record.size() + sizeof(PackedJob), sizeof(pb::JobRecord) + sizeof(pb::JobSpec));
  p.record = "\xff\xff";
  EXPECT_FALSE(Unpack(p, &back));
  j.set_held(true);
  j.set_priority(0);
  EXPECT_FALSE(Pack(j, view).runnable);
}

// A finished job is packed once nothing can happen to it on a node: ended, its epilogs (and a
// requeued job's prologs) reported.
TEST(PackedJob, FinishedJobsQualifyOnceTheirEpilogsReported) {
  pb::JobRecord j = Queued();
  j.set_state(pb::JOB_COMPLETED);
  j.set_start_time(kNow - 4);
  j.set_end_time(kNow - 1);
  j.add_nodes("n1");
  EXPECT_TRUE(PackableFinished(j));
  EXPECT_FALSE(Packable(j, kNow));  // not as a queued job
  j.add_epilog_pending_nodes("n1");
  EXPECT_FALSE(PackableFinished(j));
  j.clear_epilog_pending_nodes();
  j.set_completing(true);
  EXPECT_FALSE(PackableFinished(j));
  j.set_completing(false);
  for (pb::JobState state : {pb::JOB_CANCELLED, pb::JOB_FAILED, pb::JOB_TIMEOUT, pb::JOB_NODE_FAIL,
                             pb::JOB_OUT_OF_MEMORY}) {
    j.set_state(state);
    EXPECT_TRUE(PackableFinished(j)) << state;
  }
  for (pb::JobState state : {pb::JOB_PENDING, pb::JOB_RUNNING, pb::JOB_SUSPENDED}) {
    j.set_state(state);
    EXPECT_FALSE(PackableFinished(j)) << state;
  }
}

TEST(PackedJob, FinishedRoundTripKeepsEveryFieldAndTheHeader) {
  pb::JobRecord j = Queued();
  j.set_state(pb::JOB_FAILED);
  j.set_exit_status(3 << 8);
  j.set_start_time(kNow - 4);
  j.set_end_time(kNow - 1);
  PackedFinishedJob p = PackFinished(j);
  EXPECT_EQ(p.uid, 1000u);
  EXPECT_EQ(p.state, pb::JOB_FAILED);
  EXPECT_EQ(p.end_time, kNow - 1);
  EXPECT_EQ(p.record.capacity(), p.record.size());
  pb::JobRecord back;
  ASSERT_TRUE(UnpackFinished(p, &back));
  EXPECT_EQ(back.SerializeAsString(), j.SerializeAsString());
  // From bytes already at hand (a restart), the same.
  PackedFinishedJob again = PackFinished(j.SerializeAsString(), j);
  EXPECT_EQ(again.record, p.record);
  EXPECT_EQ(again.state, p.state);
  EXPECT_LT(p.record.size() + sizeof(PackedFinishedJob),
            sizeof(pb::JobRecord) + sizeof(pb::JobSpec));
  p.record = "\xff\xff";
  EXPECT_FALSE(UnpackFinished(p, &back));
}

// What a pass concluded lives in the overlay: unpacked, listed from the bytes, or written to a
// snapshot, the job shows it and not what the record said when it was packed.
TEST(PackedJob, OverlayWinsOverTheRecordEverywhere) {
  pb::JobRecord j = Queued();
  PackedJob p = Pack(j);
  p.reason = PackedReason::kResources;
  p.expected_start = 0;  // no longer planned
  p.sched_nodes.clear();
  p.last_sched_eval = kNow;

  pb::JobRecord want = j;
  want.set_reason("Resources");
  want.set_expected_start(0);
  want.set_sched_nodes("");
  want.set_last_sched_eval(kNow);
  pb::JobRecord back;
  ASSERT_TRUE(Unpack(p, &back));
  EXPECT_EQ(back.SerializeAsString(), want.SerializeAsString());

  // The bytes and the overlay's fields, parsed as one message (a snapshot's job).
  std::string overlay;
  AppendOverlay(p, overlay);
  pb::JobRecord merged;
  ASSERT_TRUE(merged.ParseFromString(p.record + overlay));
  EXPECT_EQ(merged.SerializeAsString(), want.SerializeAsString());

  // A listing from the bytes answers as one from the unpacked record, whole or projected.
  using R = pb::JobRecord;
  for (const JobProjection& projection :
       {JobProjection::From(pb::JobQueryRequest()),
        JobProjection::Of({R::kJobIdFieldNumber, R::kReasonFieldNumber, R::kSchedNodesFieldNumber,
                           R::kExpectedStartFieldNumber, R::kStepsFieldNumber})}) {
    JobShownValues shown;
    shown.overlay = overlay;
    std::string from_bytes, from_record;
    projection.AppendSerialized(from_bytes, 1, p.record, kNoPayload, shown);
    projection.Append(from_record, 1, want, kNoPayload, {});
    pb::JobQueryResponse a, b;
    ASSERT_TRUE(a.ParseFromString(from_bytes));
    ASSERT_TRUE(b.ParseFromString(from_record));
    ASSERT_EQ(a.jobs_size(), 1);
    EXPECT_EQ(a.jobs(0).reason(), "Resources");
    EXPECT_EQ(a.jobs(0).sched_nodes(), "");
    EXPECT_EQ(a.jobs(0).SerializeAsString(), b.jobs(0).SerializeAsString());
  }

  // A held job's overlay is its record's: nothing to append.
  j.set_held(true);
  j.set_priority(0);
  overlay.clear();
  AppendOverlay(Pack(j), overlay);
  EXPECT_EQ(overlay, "");
}

TEST(PackedJob, ReasonCodesNameSlurmsReasons) {
  for (auto r : {PackedReason::kNone, PackedReason::kPriority, PackedReason::kResources,
                 PackedReason::kPartitionDown, PackedReason::kPartitionTimeLimit,
                 PackedReason::kPartitionNodeLimit})
    EXPECT_EQ(PackedReasonOf(PackedReasonName(r)), r) << PackedReasonName(r);
  EXPECT_EQ(PackedReasonName(PackedReason::kResources), "Resources");
  EXPECT_EQ(PackedReasonOf("Dependency"), PackedReason::kAsRecorded);  // not one a view gives
  EXPECT_EQ(PackedReasonName(PackedReason::kAsRecorded), "");
}

}  // namespace
}  // namespace shoal::ctld
