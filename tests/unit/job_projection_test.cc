#include "ctld/job_projection.h"

#include <gtest/gtest.h>

#include "ctld/job_payload.h"

namespace shoal::ctld {
namespace {

using R = pb::JobRecord;
using S = pb::JobSpec;

pb::JobRecord Full() {
  pb::JobRecord j;
  j.set_job_id(77);
  j.set_state(pb::JOB_RUNNING);
  j.set_completing(true);
  j.set_reason("None");
  j.set_submit_time(1700000000);
  j.set_eligible_time(1700000001);
  j.set_start_time(1700000002);
  j.set_end_time(1700000003);
  j.set_suspend_time(1700000004);
  j.add_nodes("n1");
  j.add_nodes("n2");
  j.add_cpus_per_node(2);
  j.add_cpus_per_node(300);  // a two-byte varint inside the packed run
  j.set_mem_per_node_mb(1ull << 40);
  j.set_batch_host("n1");
  j.set_exit_status(-1);  // sign-extended to ten bytes
  j.set_derived_exit_status(256);
  j.set_priority(0xfffffff0u);
  j.set_restart_count(2);
  j.set_held_by_admin(true);
  j.set_held(true);
  j.set_partition("batch");
  j.set_time_limit(0xffffffffu);
  j.set_num_tasks(4);
  j.set_num_cpus(8);
  j.set_num_nodes(2);
  j.set_state_desc("desc");
  j.set_preempt_time(-5);
  j.set_requeue(true);
  j.set_array_job_id(70);
  j.set_array_task_id(7);
  j.set_last_sched_eval(1700000009);
  j.set_accrue_time(1700000010);
  j.set_expected_start(1700000011);
  j.set_sched_nodes("n[3-4]");
  j.set_reservation("r1");
  j.add_prolog_pending_nodes("n2");
  j.add_epilog_pending_nodes("n1");
  j.add_gres_alloc("gpu:0");  // no hand-written encoder
  j.add_steps()->set_step_id(3);
  pb::JobSpec* s = j.mutable_spec();
  s->set_name("name");
  s->add_argv("arg");  // no hand-written encoder
  s->set_work_dir("/w");
  s->set_std_out("o");
  s->set_std_err("e");
  s->set_std_in("i");
  s->set_partition("batch,debug");
  s->set_time_limit(10);
  s->set_min_nodes(1);
  s->set_max_nodes(2);
  s->set_num_tasks(3);
  s->set_cpus_per_task(4);
  s->set_ntasks_per_node(5);
  s->set_mem_per_node_mb(6);
  s->set_mem_per_cpu_mb(7);
  s->set_gres("gpu:1");
  s->set_gpus("1");
  s->set_account("acct");
  s->set_qos("q");
  s->set_hold(true);
  s->set_comment("c");
  s->set_nice(-3);
  s->set_dependency("afterok:1");
  s->set_array("0-9%2");
  s->set_exclusive(true);
  s->set_nodelist("n1");
  s->set_exclude("n9");
  s->set_constraint("f");
  s->set_submit_host("h");
  s->set_submit_dir("/d");
  s->set_uid(1000);
  s->set_gid(1001);
  s->set_user_name("u");
  s->set_deadline(1800000000);
  s->set_wckey("wk");
  s->set_reservation("r1");
  s->set_licenses("l:1");
  s->set_min_cpus_per_node(2);
  s->set_cluster_features("cf");
  s->set_time_min(5);
  s->set_exclusive_mode("user");
  s->set_command("/c");
  s->set_alloc_sid(99);
  s->set_container("/b");
  return j;
}

const std::string& Payload() {
  static const std::string bytes = [] {
    pb::JobSpec p;
    p.set_script("#!/bin/sh\n");
    p.add_environment("X=1");
    return p.SerializeAsString();
  }();
  return bytes;
}

pb::JobRecord Decode(const std::string& wrapped) {
  pb::JobQueryResponse r;
  EXPECT_TRUE(r.ParseFromString(wrapped));
  EXPECT_EQ(r.jobs_size(), 1);
  return r.jobs_size() ? r.jobs(0) : pb::JobRecord();
}

pb::JobRecord Project(const JobProjection& p, const pb::JobRecord& j, JobShownValues shown = {}) {
  std::string out;
  p.Append(out, 1, j, Payload(), shown);
  return Decode(out);
}

TEST(JobProjection, NoFieldsIsTheWholeRecordByteForByte) {
  pb::JobRecord j = Full();
  JobProjection p = JobProjection::From(pb::JobQueryRequest());
  EXPECT_TRUE(p.whole());
  std::string got, want;
  p.Append(got, 1, j, Payload(), {});
  AppendJobField(want, 1, j, Payload());
  EXPECT_EQ(got, want);
  pb::JobRecord back = Decode(got);
  EXPECT_EQ(back.spec().script(), "#!/bin/sh\n");
  EXPECT_EQ(back.gres_alloc_size(), 1);
}

TEST(JobProjection, ProjectedFieldsEqualTheFullRecordsAndOthersAreAbsent) {
  pb::JobRecord j = Full();
  JobProjection p = JobProjection::Of(
      {R::kJobIdFieldNumber, R::kStateFieldNumber, R::kNodesFieldNumber, R::kCpusPerNodeFieldNumber,
       R::kExitStatusFieldNumber, R::kPartitionFieldNumber},
      {S::kNameFieldNumber, S::kUidFieldNumber, S::kNiceFieldNumber});
  EXPECT_TRUE(p.fast());
  pb::JobRecord got = Project(p, j);
  EXPECT_EQ(got.job_id(), 77u);
  EXPECT_EQ(got.state(), pb::JOB_RUNNING);
  EXPECT_EQ(std::vector<std::string>(got.nodes().begin(), got.nodes().end()),
            (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(std::vector<uint32_t>(got.cpus_per_node().begin(), got.cpus_per_node().end()),
            (std::vector<uint32_t>{2, 300}));
  EXPECT_EQ(got.exit_status(), -1);
  EXPECT_EQ(got.partition(), "batch");
  EXPECT_EQ(got.spec().name(), "name");
  EXPECT_EQ(got.spec().uid(), 1000u);
  EXPECT_EQ(got.spec().nice(), -3);
  // Not asked for.
  EXPECT_EQ(got.reason(), "");
  EXPECT_EQ(got.start_time(), 0);
  EXPECT_EQ(got.priority(), 0u);
  EXPECT_EQ(got.steps_size(), 0);
  EXPECT_EQ(got.spec().script(), "");
  EXPECT_EQ(got.spec().environment_size(), 0);
  EXPECT_EQ(got.spec().account(), "");
  EXPECT_EQ(got.spec().gid(), 0u);
}

// Each hand-written field alone, against the general path (whole record serialized by protobuf,
// then filtered): the same message, so the encoders agree with protobuf's own.
TEST(JobProjection, EachFastFieldMatchesProtobufsEncoding) {
  pb::JobRecord j = Full();
  int fast_fields = 0;
  for (uint32_t f = 1; f < 64; ++f) {
    if (f == R::kSpecFieldNumber) continue;
    JobProjection p = JobProjection::Of({f});
    if (!p.fast()) continue;
    ++fast_fields;
    for (JobShownValues shown : {JobShownValues{}, JobShownValues{1700009999, true, {}}}) {
      std::string a, b;
      p.Append(a, 1, j, Payload(), shown);
      p.AppendFiltered(b, 1, j, Payload(), shown);
      EXPECT_EQ(Decode(a).SerializeAsString(), Decode(b).SerializeAsString()) << "field " << f;
      EXPECT_NE(Decode(a).SerializeAsString(), "") << "field " << f << " is set in Full()";
    }
  }
  EXPECT_GE(fast_fields, 35);
  int fast_spec = 0;
  for (uint32_t f = 1; f < 72; ++f) {
    JobProjection p = JobProjection::Of({}, {f});
    if (!p.fast()) continue;
    ++fast_spec;
    std::string a, b;
    p.Append(a, 1, j, Payload(), {});
    p.AppendFiltered(b, 1, j, Payload(), {});
    pb::JobRecord x = Decode(a);
    EXPECT_EQ(x.SerializeAsString(), Decode(b).SerializeAsString()) << "spec field " << f;
    EXPECT_GT(x.spec().ByteSizeLong(), 0u) << "spec field " << f << " is set in Full()";
  }
  EXPECT_GE(fast_spec, 40);
}

TEST(JobProjection, ShownValuesReplaceStoredOnes) {
  pb::JobRecord j = Full();
  JobShownValues shown{1700005555, true, {}};
  for (bool fast : {true, false}) {
    // A field without an encoder (steps) sends the projection down the general path.
    JobProjection p = fast
                          ? JobProjection::Of({R::kStartTimeFieldNumber, R::kCompletingFieldNumber})
                          : JobProjection::Of({R::kStartTimeFieldNumber, R::kCompletingFieldNumber,
                                               R::kStepsFieldNumber});
    EXPECT_EQ(p.fast(), fast);
    pb::JobRecord got = Project(p, j, shown);
    EXPECT_EQ(got.start_time(), 1700005555);
    EXPECT_TRUE(got.completing());
    EXPECT_EQ(got.steps_size(), fast ? 0 : 1);
    EXPECT_EQ(got.job_id(), 0u);
  }
  // Not projected: not sent, shown or not.
  pb::JobRecord got = Project(JobProjection::Of({R::kJobIdFieldNumber}), j, shown);
  EXPECT_EQ(got.start_time(), 0);
  EXPECT_FALSE(got.completing());
}

TEST(JobProjection, ScriptAndEnvironmentOnlyWhenAskedFor) {
  pb::JobRecord j = Full();
  j.mutable_spec()->clear_argv();
  pb::JobRecord got = Project(JobProjection::Of({}, {S::kNameFieldNumber}), j);
  EXPECT_EQ(got.spec().script(), "");
  got = Project(JobProjection::Of({}, {S::kScriptFieldNumber}), j);
  EXPECT_EQ(got.spec().script(), "#!/bin/sh\n");
  EXPECT_EQ(got.spec().environment_size(), 0);
  EXPECT_EQ(got.spec().name(), "");
  // The whole spec (field 2 without spec_fields): payload included, other fields not.
  got = Project(JobProjection::Of({R::kSpecFieldNumber}), j);
  EXPECT_EQ(got.spec().environment_size(), 1);
  EXPECT_EQ(got.spec().name(), "name");
  EXPECT_EQ(got.job_id(), 0u);
}

// A packed job's bytes give the answer its parsed record gives: whole, projected on the fast
// fields, projected with a field only the general path has, and with the script asked for.
TEST(JobProjection, SerializedRecordAnswersAsTheParsedOne) {
  pb::JobRecord j = Full();
  const std::string bytes = j.SerializeAsString();
  std::vector<JobProjection> projections = {
      JobProjection::From(pb::JobQueryRequest()),
      JobProjection::Of({R::kJobIdFieldNumber, R::kStateFieldNumber, R::kStartTimeFieldNumber,
                         R::kSpecFieldNumber},
                        {S::kNameFieldNumber, S::kUidFieldNumber}),
      JobProjection::Of({R::kJobIdFieldNumber, R::kStepsFieldNumber, R::kCompletingFieldNumber}),
      JobProjection::Of({R::kSpecFieldNumber}, {S::kScriptFieldNumber, S::kWorkDirFieldNumber}),
      JobProjection::Of({R::kSpecFieldNumber})};
  for (size_t i = 0; i < projections.size(); ++i) {
    for (JobShownValues shown : {JobShownValues{}, JobShownValues{1700009999, true, {}}}) {
      std::string parsed, packed;
      projections[i].Append(parsed, 1, j, Payload(), shown);
      projections[i].AppendSerialized(packed, 1, bytes, Payload(), shown);
      EXPECT_EQ(Decode(packed).SerializeAsString(), Decode(parsed).SerializeAsString())
          << "projection " << i;
      EXPECT_GT(Decode(packed).ByteSizeLong(), 0u);
    }
  }
  // Whole records: the very bytes AppendJobField writes.
  std::string a, b;
  AppendJobField(a, 1, j, Payload(), "\x40\x01");
  AppendJobBytes(b, 1, bytes, Payload(), "\x40\x01");
  EXPECT_EQ(a, b);
}

TEST(JobProjection, UnknownFieldNumbersAreIgnored) {
  JobProjection p = JobProjection::Of({R::kJobIdFieldNumber, 99, 100000});
  EXPECT_FALSE(p.whole());
  pb::JobRecord got = Project(p, Full());
  EXPECT_EQ(got.SerializeAsString(), [] {
    pb::JobRecord r;
    r.set_job_id(77);
    return r.SerializeAsString();
  }());
}

TEST(FilterWireFields, RejectsMalformedInput) {
  std::bitset<JobProjection::kMaxField> keep;
  keep.set(1);
  std::string out;
  EXPECT_FALSE(FilterWireFields(std::string("\x0a\x05"
                                            "ab",
                                            4),
                                keep, 0, {}, out));
  EXPECT_FALSE(FilterWireFields(std::string("\x08\x80", 2), keep, 0, {}, out));
  EXPECT_FALSE(FilterWireFields(std::string("\x0b", 1), keep, 0, {}, out));  // group
  out.clear();
  EXPECT_TRUE(FilterWireFields(std::string("\x08\x01\x10\x02", 4), keep, 0, {}, out));
  EXPECT_EQ(out, std::string("\x08\x01", 2));
}

}  // namespace
}  // namespace shoal::ctld
