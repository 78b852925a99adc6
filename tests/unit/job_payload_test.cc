// The controller's payload store: scripts and environments kept out of job records, interned,
// and spliced back exactly where the whole job is needed.
#include "ctld/job_payload.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace shoal::ctld
