// The controller's payload store: scripts and environments kept out of job records, interned,
// and spliced back exactly where the whole job is needed.
#include "ctld/job_payload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace shoal::ctld {
namespace {

pb::JobSpec SpecWith(const std::string& script, std::vector<std::string> env) {
  pb::JobSpec spec;
  spec.set_name("job");
  spec.set_script(script);
  for (auto& e : env) spec.add_environment(e);
  return spec;
}

TEST(JobPayloads, TakeStripsAndRestoreGivesBack) {
  JobPayloads store;
  pb::JobSpec spec = SpecWith("#!/bin/sh\ntrue\n", {"A=1", "B=2"});
  pb::JobSpec original = spec;
  store.Set(7, store.Take(&spec));
  EXPECT_TRUE(spec.script().empty());
  EXPECT_EQ(spec.environment_size(), 0);
  EXPECT_EQ(spec.name(), "job");
  store.Restore(7, &spec);
  EXPECT_EQ(spec.SerializeAsString(), original.SerializeAsString());
}

TEST(JobPayloads, EqualPayloadsAreSharedAndFreedWithTheirLastJob) {
  JobPayloads store;
  for (uint32_t id = 1; id <= 3; ++id) {
    pb::JobSpec spec = SpecWith("#!/bin/sh\n", {"HOME=/home/u"});
    store.Set(id, store.Take(&spec));
  }
  pb::JobSpec other = SpecWith("#!/bin/sh\n", {"HOME=/home/v"});
  store.Set(4, store.Take(&other));
  EXPECT_EQ(store.jobs(), 4u);
  EXPECT_EQ(store.distinct(), 2u);
  store.Drop(1);
  store.Drop(2);
  EXPECT_EQ(store.distinct(), 2u);
  store.Drop(3);
  EXPECT_EQ(store.distinct(), 1u);
  // A new job with the first payload again interns a fresh copy.
  pb::JobSpec again = SpecWith("#!/bin/sh\n", {"HOME=/home/u"});
  store.Set(5, store.Take(&again));
  EXPECT_EQ(store.distinct(), 2u);
  EXPECT_EQ(store.Bytes(5), store.Bytes(5));
  EXPECT_NE(store.Bytes(5), store.Bytes(4));
}

TEST(JobPayloads, NoPayloadMeansNothingStored) {
  JobPayloads store;
  pb::JobSpec spec;
  spec.set_interactive(true);
  store.Set(9, store.Take(&spec));
  EXPECT_EQ(store.jobs(), 0u);
  EXPECT_EQ(store.Bytes(9), "");
  store.Restore(9, &spec);
  EXPECT_TRUE(spec.script().empty());
}

TEST(JobPayloads, SplicedRecordParsesAsTheWholeJob) {
  JobPayloads store;
  pb::JobRecord job;
  job.set_job_id(42);
  job.set_state(pb::JOB_RUNNING);
  job.add_nodes("n1");
  *job.mutable_spec() = SpecWith("#!/bin/bash\necho hi\n", {"X=1", "Y=2", "Z=3"});
  pb::JobRecord whole = job;
  store.Set(42, store.Take(job.mutable_spec()));

  // As a journal record (JournalRecord.job = 1) and as a snapshot entry (Snapshot.jobs = 2).
  std::string rec;
  AppendJobField(rec, 1, job, store.Bytes(42));
  pb::JournalRecord parsed;
  ASSERT_TRUE(parsed.ParseFromString(rec));
  EXPECT_EQ(parsed.job().SerializeAsString(), whole.SerializeAsString());

  std::string snap;
  AppendJobField(snap, 2, job, store.Bytes(42));
  AppendJobField(snap, 2, job, "");  // a job without payload stays without
  pb::Snapshot s;
  ASSERT_TRUE(s.ParseFromString(snap));
  ASSERT_EQ(s.jobs_size(), 2);
  EXPECT_EQ(s.jobs(0).spec().environment_size(), 3);
  EXPECT_EQ(s.jobs(0).spec().script(), "#!/bin/bash\necho hi\n");
  EXPECT_TRUE(s.jobs(1).spec().script().empty());
}

// Frames as the journal's reader sees them: one JournalRecord per appended body.
std::vector<pb::JournalRecord> Parse(const std::vector<std::string>& bodies) {
  std::vector<pb::JournalRecord> out;
  for (const auto& b : bodies) {
    pb::JournalRecord r;
    EXPECT_TRUE(r.ParseFromString(b));
    out.push_back(std::move(r));
  }
  return out;
}

TEST(JobPayloads, StoredOnceAndNamedByIdAfterwards) {
  JobPayloads store;
  for (uint32_t id = 1; id <= 3; ++id) {
    pb::JobSpec spec = SpecWith("#!/bin/sh\ntrue\n", {"A=1"});
    store.Set(id, store.Take(&spec));
  }
  std::string first, second;
  uint64_t ref1 = store.StoreRef(1, &first);
  uint64_t ref2 = store.StoreRef(2, &second);
  EXPECT_NE(ref1, 0u);
  EXPECT_EQ(ref1, ref2);
  EXPECT_TRUE(second.empty()) << "written once, then named";
  auto recs = Parse({first});
  ASSERT_TRUE(recs[0].has_payload());
  EXPECT_EQ(recs[0].payload().id(), ref1);
  EXPECT_EQ(recs[0].payload().spec(), store.Bytes(1));
  std::string none;
  EXPECT_EQ(store.StoreRef(99, &none), 0u);  // a job without payload names none
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(PayloadIdField(0), "");

  // A job record naming its payload parses with payload_id set and no script inline.
  pb::JobRecord job;
  job.set_job_id(2);
  std::string rec;
  AppendJobField(rec, 1, job, kNoPayload, PayloadIdField(ref2));
  pb::JournalRecord parsed;
  ASSERT_TRUE(parsed.ParseFromString(rec));
  EXPECT_EQ(parsed.job().payload_id(), ref2);
  EXPECT_TRUE(parsed.job().spec().script().empty());
}

TEST(JobPayloads, WrittenAgainWithANewIdAfterItsLastJobWent) {
  JobPayloads store;
  pb::JobSpec spec = SpecWith("s", {"E=1"});
  store.Set(1, store.Take(&spec));
  std::string rec;
  uint64_t ref1 = store.StoreRef(1, &rec);
  store.Drop(1);
  pb::JobSpec again = SpecWith("s", {"E=1"});
  store.Set(2, store.Take(&again));
  std::string rec2;
  uint64_t ref2 = store.StoreRef(2, &rec2);
  EXPECT_FALSE(rec2.empty());
  EXPECT_GT(ref2, ref1);
}

TEST(JobPayloads, ReplayResolvesIdsAndForgetsUnheldPayloads) {
  // Before: two payloads written, jobs 1-2 on the first and 3 on the second.
  JobPayloads before;
  pb::JobSpec a1 = SpecWith("a", {"X=1"}), a2 = a1, b = SpecWith("b", {"X=2"});
  before.Set(1, before.Take(&a1));
  before.Set(2, before.Take(&a2));
  before.Set(3, before.Take(&b));
  std::string snap;
  before.AppendAll(snap, 6);
  pb::Snapshot s;
  ASSERT_TRUE(s.ParseFromString(snap));
  ASSERT_EQ(s.payloads_size(), 2);
  std::string ignored;
  uint64_t ref_a = before.StoreRef(1, &ignored), ref_b = before.StoreRef(3, &ignored);
  EXPECT_TRUE(ignored.empty()) << "AppendAll wrote them all";

  // After a restart: the definitions come first, then job records naming them; job 3 was
  // purged, so its payload is forgotten at the end of the replay.
  JobPayloads after;
  for (auto& p : *s.mutable_payloads()) after.Define(p.id(), std::move(*p.mutable_spec()));
  after.Set(1, after.Replayed(ref_a));
  after.Set(2, after.Replayed(ref_a));
  after.Set(3, after.Replayed(ref_b));
  after.Drop(3);
  EXPECT_EQ(after.Replayed(12345), nullptr);
  after.EndReplay();
  EXPECT_EQ(after.distinct(), 1u);
  EXPECT_EQ(after.Bytes(1), before.Bytes(1));
  EXPECT_EQ(after.Bytes(2), before.Bytes(1));
  // Already in the state files: named, not written again; a new payload gets a fresh id.
  std::string rec;
  EXPECT_EQ(after.StoreRef(1, &rec), ref_a);
  EXPECT_TRUE(rec.empty());
  pb::JobSpec c = SpecWith("c", {});
  after.Set(4, after.Take(&c));
  uint64_t ref_c = after.StoreRef(4, &rec);
  EXPECT_GT(ref_c, std::max(ref_a, ref_b));
  EXPECT_FALSE(rec.empty());
}

}  // namespace
}  // namespace shoal::ctld
