// squeue's projection end to end, without daemons: the fields squeue asks for (SqueueQueryFields)
// are encoded by the controller's JobProjection, parsed back and formatted; the text must be
// exactly what whole records give, for every -o letter, every -O field, every sort key and
// every client-side filter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "cli/squeue_format.h"
#include "common/states.h"
#include "common/units.h"
#include "ctld/job_projection.h"

namespace shoal::cli {
namespace {

const bool kUtc = [] {
  setenv("TZ", "UTC", 1);
  tzset();
  return true;
}();

constexpr int64_t kNow = 1700000000;

// Every field squeue can print set to something other than its default.
pb::JobRecord Rich(uint32_t id, pb::JobState state) {
  pb::JobRecord j;
  j.set_job_id(id);
  j.set_state(state);
  j.set_array_task_id(kNoArrayTask);
  j.set_partition(id % 2 ? "batch" : "debug");
  j.set_reason(state == pb::JOB_PENDING ? "Priority" : "None");
  j.set_submit_time(kNow - 5000 + id);
  j.set_eligible_time(kNow - 4000 + id);
  j.set_accrue_time(kNow - 3900 + id);
  j.set_last_sched_eval(kNow - 10);
  j.set_priority(4000 - id * 7);
  j.set_time_limit(60 + id);
  j.set_num_tasks(2 + id % 3);
  j.set_num_cpus(4 + id % 5);
  j.set_num_nodes(1 + id % 2);
  j.set_mem_per_node_mb(2048);
  j.set_requeue(id % 2 == 0);
  j.set_restart_count(id % 3);
  j.set_preempt_time(id % 4 ? 0 : kNow - 77);
  j.set_exit_status(id % 3 ? 256 : 9);
  j.set_derived_exit_status(id % 2 ? 512 : 0);
  j.set_sched_nodes(state == pb::JOB_PENDING ? "n[1-2]" : "");
  j.set_expected_start(state == pb::JOB_PENDING ? kNow + 600 + id : 0);
  pb::JobSpec* s = j.mutable_spec();
  s->set_name("job" + std::to_string(id % 4));
  s->set_script("#!/bin/sh\ntrue\n");
  s->add_environment("A=B");
  s->set_work_dir("/home/u" + std::to_string(id % 3));
  s->set_std_out(id % 2 ? "out-%j-%u.txt" : "");
  s->set_std_err(id % 3 ? "err-%A_%a.txt" : "");
  s->set_std_in(id % 2 ? "" : "/etc/hostname");
  s->set_partition(id % 2 ? "batch,debug" : "debug");
  s->set_max_nodes(3);
  s->set_cpus_per_task(id % 3);
  s->set_ntasks_per_node(id % 2 + 1);
  s->set_min_cpus_per_node(id % 4 == 0 ? 3 : 0);
  s->set_mem_per_node_mb(id % 2 ? 0 : 1024);
  s->set_mem_per_cpu_mb(id % 3 == 0 ? 512 : 0);
  s->set_gres(id % 2 ? "gpu:1" : "");
  s->set_account(id % 2 ? "physics" : "chem");
  s->set_qos(id % 3 ? "normal" : "high");
  s->set_comment(id % 2 ? "a comment" : "");
  s->set_nice(id % 2 ? -5 : 10);
  s->set_dependency(id % 3 ? "" : "afterok:1");
  s->set_exclusive(id % 4 == 1);
  s->set_exclusive_mode(id % 8 == 1 ? "user" : "");
  s->set_nodelist(id % 2 ? "n1" : "");
  s->set_exclude(id % 3 ? "n4" : "");
  s->set_constraint(id % 2 ? "fast" : "");
  s->set_submit_host("login" + std::to_string(id % 2));
  s->set_uid(1000 + id % 3);
  s->set_gid(2000 + id % 2);
  s->set_user_name(id % 3 == 2 ? "" : "user" + std::to_string(id % 3));
  s->set_deadline(id % 2 ? kNow + 9999 : 0);
  s->set_wckey(id % 2 ? "wk" : "");
  s->set_reservation(id % 2 ? "maint" : "");
  s->set_licenses(id % 2 ? "lic:1" : "");
  s->set_cluster_features(id % 2 ? "cf" : "");
  s->set_time_min(id % 2 ? 30 : 0);
  s->set_command(id % 2 ? "/home/u/run.sh" : "");
  s->set_alloc_sid(4242 + id);
  s->set_container(id % 2 ? "/bundles/x" : "");
  return j;
}

pb::JobRecord Started(uint32_t id, pb::JobState state, std::vector<std::string> nodes) {
  pb::JobRecord j = Rich(id, state);
  j.set_start_time(kNow - 300 - id);
  for (const auto& n : nodes) {
    j.add_nodes(n);
    j.add_cpus_per_node(2);
  }
  j.set_batch_host(nodes.empty() ? "" : nodes[0]);
  if (state == pb::JOB_SUSPENDED) j.set_suspend_time(kNow - 100);
  if (IsFinished(state)) j.set_end_time(kNow - 20);
  return j;
}

std::vector<pb::JobRecord> Jobs() {
  std::vector<pb::JobRecord> jobs;
  jobs.push_back(Rich(11, pb::JOB_PENDING));
  jobs.push_back(Rich(12, pb::JOB_PENDING));
  jobs.back().set_state_desc("ReqNodeNotAvail, UnavailableNodes:n3");
  jobs.push_back(Started(13, pb::JOB_RUNNING, {"n1"}));
  jobs.push_back(Started(14, pb::JOB_RUNNING, {"n1", "n2", "n3"}));
  jobs.back().add_prolog_pending_nodes("n2");
  jobs.push_back(Started(15, pb::JOB_SUSPENDED, {"n2"}));
  jobs.push_back(Started(16, pb::JOB_COMPLETED, {"n3"}));
  jobs.back().add_epilog_pending_nodes("n3");  // shown as COMPLETING
  jobs.push_back(Started(17, pb::JOB_FAILED, {"n4"}));
  jobs.back().set_reason("NonZeroExitCode");
  jobs.back().set_completing(true);
  jobs.push_back(Started(18, pb::JOB_TIMEOUT, {"n1", "n2"}));
  jobs.back().set_reason("TimeLimit");
  // A pending array: tasks 0-3 are grouped into one line, task 5 has another reason.
  for (uint32_t t : {0u, 1u, 2u, 3u, 5u}) {
    pb::JobRecord j = Rich(20 + t, pb::JOB_PENDING);
    j.set_array_job_id(20);
    j.set_array_task_id(t);
    j.set_partition("batch");
    j.mutable_spec()->set_array("0-5%2");
    if (t == 5) j.set_reason("Dependency");
    jobs.push_back(j);
  }
  pb::JobRecord running_task = Started(26, pb::JOB_RUNNING, {"n4"});
  running_task.set_array_job_id(20);
  running_task.set_array_task_id(4);
  running_task.mutable_spec()->set_array("0-5%2");
  jobs.push_back(running_task);
  jobs.push_back(Rich(30, pb::JOB_PENDING));
  jobs.back().set_time_limit(kTimeInfinite);
  return jobs;
}

// The controller's answer for `jobs` under `req`'s projection, parsed as squeue parses it.
pb::JobQueryResponse Answer(const std::vector<pb::JobRecord>& jobs,
                            const pb::JobQueryRequest& req) {
  ctld::JobProjection p = ctld::JobProjection::From(req);
  std::string bytes;
  for (const pb::JobRecord& j : jobs) {
    // The script and environment travel apart from the record (see job_payload.h).
    pb::JobRecord stored = j;
    pb::JobSpec payload;
    payload.set_script(stored.spec().script());
    *payload.mutable_environment() = stored.spec().environment();
    stored.mutable_spec()->clear_script();
    stored.mutable_spec()->clear_environment();
    ctld::JobShownValues shown;
    if (j.state() == pb::JOB_PENDING && j.expected_start() > 0)
      shown.start_time = j.expected_start();
    shown.completing = j.epilog_pending_nodes_size() > 0 && j.state() != pb::JOB_PENDING;
    p.Append(bytes, 1, stored, req.omit_script() ? std::string() : payload.SerializeAsString(),
             shown);
  }
  pb::JobQueryResponse resp;
  EXPECT_TRUE(resp.ParseFromString(bytes));
  return resp;
}

std::string Print(const pb::JobQueryResponse& resp, const SqueueFormatOptions& o,
                  const SqueueFilter& f) {
  std::vector<const pb::JobRecord*> shown;
  for (const pb::JobRecord& j : resp.jobs())
    if (JobMatches(j, f)) shown.push_back(&j);
  auto text = FormatSqueue(shown, o, kNow);
  EXPECT_TRUE(text.ok()) << text.error();
  return text.ok() ? *text : std::string();
}

SqueueFormatOptions Options() {
  SqueueFormatOptions o;
  o.user_name = [](uint32_t uid) { return uid == 1002 ? std::string("carol") : std::string(); };
  o.group_name = [](uint32_t gid) { return gid == 2001 ? std::string("staff") : std::string(); };
  return o;
}

// Formats `jobs` from whole records and from the projected answer; returns both texts.
std::pair<std::string, std::string> Both(const SqueueFormatOptions& o, const SqueueFilter& f,
                                         bool* projected = nullptr) {
  std::vector<pb::JobRecord> jobs = Jobs();
  pb::JobQueryRequest full = BuildJobQuery(f);
  pb::JobQueryRequest proj = full;
  auto needs = SqueueQueryFields(o, f);
  EXPECT_TRUE(needs.ok());
  for (uint32_t x : needs->fields) proj.add_fields(x);
  for (uint32_t x : needs->spec_fields) proj.add_spec_fields(x);
  if (projected) *projected = proj.fields_size() > 0;
  return {Print(Answer(jobs, full), o, f), Print(Answer(jobs, proj), o, f)};
}

constexpr char kLetters[] = "aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ";

TEST(SqueueProjection, EveryLetterPrintsAsWithWholeRecords) {
  for (const char* c = kLetters; *c; ++c) {
    SqueueFormatOptions o = Options();
    o.format = std::string("%.30") + *c + " %i";
    o.sort = "A";  // reads nothing beyond the job id (always sent)
    for (bool one_per_line : {false, true}) {
      o.array_one_per_line = one_per_line;
      auto [full, proj] = Both(o, {});
      EXPECT_EQ(full, proj) << "-o %" << *c;
    }
  }
}

TEST(SqueueProjection, EverySortKeyOrdersAsWithWholeRecords) {
  for (const char* c = kLetters; *c; ++c) {
    SqueueFormatOptions o = Options();
    o.format = "%A";
    o.sort = std::string("-") + *c;
    auto [full, proj] = Both(o, {});
    EXPECT_EQ(full, proj) << "-S -" << *c;
  }
}

TEST(SqueueProjection, EveryLongFieldPrintsAsWithWholeRecords) {
  const char* kNames[] = {"account",     "accruetime",  "admin_comment", "allocnodes",
                          "allocsid",    "arrayjobid",  "arraytaskid",   "associd",
                          "batchflag",   "batchhost",   "cluster",       "clusterfeature",
                          "command",     "comment",     "container",     "contiguous",
                          "cores",       "corespec",    "cpus-per-task", "deadline",
                          "dependency",  "derivedec",   "eligibletime",  "endtime",
                          "exit_code",   "feature",     "groupid",       "groupname",
                          "jobarrayid",  "jobid",       "lastschedeval", "licenses",
                          "maxcpus",     "maxnodes",    "mcslabel",      "mincpus",
                          "minmemory",   "mintime",     "mintmpdisk",    "name",
                          "network",     "nice",        "nodelist",      "numcpus",
                          "numnodes",    "numtasks",    "oversubscribe", "partition",
                          "pendingtime", "preempttime", "priority",      "prioritylong",
                          "qos",         "reason",      "reasonlist",    "reboot",
                          "reqnodes",    "requeue",     "reservation",   "restartcnt",
                          "schednodes",  "sct",         "selectjobinfo", "sockets",
                          "starttime",   "state",       "statecompact",  "stderr",
                          "stdin",       "stdout",      "submittime",    "threads",
                          "timeleft",    "timelimit",   "timeused",      "tres-per-node",
                          "userid",      "username",    "wckey",         "workdir"};
  for (const char* name : kNames) {
    SqueueFormatOptions o = Options();
    o.long_format = std::string(name) + ":40,JobID";
    o.sort = "A";
    auto [full, proj] = Both(o, {});
    EXPECT_EQ(full, proj) << "-O " << name;
  }
}

TEST(SqueueProjection, UsualLayoutsPrintAsWithWholeRecordsAndAreProjected) {
  struct Case {
    const char* format;
    bool long_output;
    const char* sort;
  } cases[] = {{"", false, ""},
               {"", true, ""},
               {kSqueueStartFormat, false, "S"},
               {"%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", false, "-t,p"},
               {"%.10i %T %r %S %e %L %C %m", false, "-e"}};
  for (const Case& c : cases) {
    SqueueFormatOptions o = Options();
    o.format = c.format;
    o.long_output = c.long_output;
    o.sort = c.sort;
    bool projected = false;
    auto [full, proj] = Both(o, {}, &projected);
    EXPECT_EQ(full, proj) << "-o '" << c.format << "'";
    EXPECT_TRUE(projected);
    EXPECT_NE(full.find('\n'), full.size() - 1) << "the case prints jobs";
  }
}

TEST(SqueueProjection, ClientSideFiltersSeeTheFieldsTheyRead) {
  std::vector<SqueueFilter> filters(7);
  filters[0].accounts = {"physics"};
  filters[1].qos = {"HIGH"};
  filters[2].names = {"job1"};
  filters[3].uids = {1001};
  filters[4].nodes = {"n2"};
  filters[5].partitions = {"debug"};
  filters[6].jobs = {{20, std::nullopt}, {13, std::nullopt}};
  filters[6].states = SqueueStateFilter{};
  filters[6].states->all = true;
  for (size_t i = 0; i < filters.size(); ++i) {
    SqueueFormatOptions o = Options();
    o.format = "%i";
    auto [full, proj] = Both(o, filters[i]);
    EXPECT_EQ(full, proj) << "filter " << i;
    EXPECT_GT(full.size(), 6u) << "filter " << i << " shows something";
  }
}

TEST(SqueueQueryFields, DefaultFormatAsksForAFewFields) {
  auto needs = SqueueQueryFields(Options(), {});
  ASSERT_TRUE(needs.ok());
  std::vector<uint32_t> want = {1, 2, 3, 4, 5, 8, 9, 10, 11, 17, 21, 25, 26, 29, 30, 62};
  EXPECT_EQ(needs->fields, want);
  std::vector<uint32_t> want_spec = {1, 10, 32, 39, 41};  // name partition array uid user_name
  EXPECT_EQ(needs->spec_fields, want_spec);
}

TEST(SqueueQueryFields, SortKeysAndFiltersAddTheirFields) {
  SqueueFormatOptions o = Options();
  o.format = "%i";
  o.sort = "V";
  SqueueFilter f;
  f.accounts = {"x"};
  auto needs = SqueueQueryFields(o, f);
  ASSERT_TRUE(needs.ok());
  auto has = [](const std::vector<uint32_t>& v, int x) {
    return std::find(v.begin(), v.end(), static_cast<uint32_t>(x)) != v.end();
  };
  EXPECT_TRUE(has(needs->fields, pb::JobRecord::kSubmitTimeFieldNumber));
  EXPECT_TRUE(has(needs->spec_fields, pb::JobSpec::kAccountFieldNumber));
  EXPECT_FALSE(has(needs->fields, pb::JobRecord::kPriorityFieldNumber));
  EXPECT_FALSE(has(needs->spec_fields, pb::JobSpec::kScriptFieldNumber));
}

TEST(SqueueQueryFields, StdPathsAskForWholeRecordsAndBadFieldsFail) {
  SqueueFormatOptions o = Options();
  o.long_format = "JobID,StdOut";
  auto needs = SqueueQueryFields(o, {});
  ASSERT_TRUE(needs.ok());
  EXPECT_TRUE(needs->fields.empty());
  EXPECT_TRUE(needs->spec_fields.empty());
  o.long_format = "JobID,Bogus";
  needs = SqueueQueryFields(o, {});
  ASSERT_FALSE(needs.ok());
  EXPECT_EQ(needs.error(), "Invalid job format specification: Bogus");
}

}  // namespace
}  // namespace shoal::cli
