#include "restd/slurmdb_json.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "common/units.h"

namespace shoal::restd::slurmdb {
namespace {

pb::AcctJob SampleJob() {
  pb::AcctJob j;
  j.set_cluster("c1");
  j.set_job_id(42);
  j.set_submit_time(1000);
  j.set_array_task_id(kNoArrayTask);
  j.set_name("sleeper");
  j.set_uid(1001);
  j.set_user("alice");
  j.set_group("users");
  j.set_account("physics");
  j.set_partition("debug");
  j.set_qos("normal");
  j.set_state(pb::JOB_COMPLETED);
  j.set_exit_status(3 << 8);  // exited 3
  j.set_eligible_time(1000);
  j.set_start_time(1010);
  j.set_end_time(1070);
  j.set_time_limit(30);
  j.set_alloc_cpus(2);
  j.set_alloc_nodes(1);
  j.set_nodelist("n1");
  j.set_req_cpus(2);
  j.set_req_mem_mb(500);
  j.set_tres_alloc("billing=2,cpu=2,mem=1G,node=1");
  j.set_tres_req("cpu=2,mem=500M,node=1,gres/gpu=1");
  j.set_work_dir("/home/alice");
  j.set_requid(kNoUid);
  j.set_priority(4294);
  auto* st = j.add_steps();
  st->set_step_id(kBatchStepId);
  st->set_name("batch");
  st->set_state(pb::JOB_COMPLETED);
  st->set_exit_status(3 << 8);
  st->set_start_time(1010);
  st->set_end_time(1070);
  st->set_nodelist("n[1-2]");
  st->set_nnodes(2);
  st->set_ntasks(1);
  st->set_user_cpu_usec(1'500'000);
  st->set_sys_cpu_usec(250'000);
  st->set_requid(kNoUid);
  return j;
}

TEST(SlurmdbJson, JobFields) {
  json j = JobJson(SampleJob(), 5000, nullptr);
  EXPECT_EQ(j["job_id"], 42);
  EXPECT_EQ(j["name"], "sleeper");
  EXPECT_EQ(j["user"], "alice");
  EXPECT_EQ(j["account"], "physics");
  EXPECT_EQ(j["cluster"], "c1");
  EXPECT_EQ(j["state"]["current"], json::array({"COMPLETED"}));
  EXPECT_EQ(j["time"]["elapsed"], 60);
  EXPECT_EQ(j["time"]["submission"], 1000);
  EXPECT_EQ(j["time"]["limit"]["number"], 30);
  EXPECT_EQ(j["exit_code"]["status"], json::array({"ERROR"}));
  EXPECT_EQ(j["exit_code"]["return_code"]["number"], 3);
  EXPECT_EQ(j["nodes"], "n1");
  EXPECT_EQ(j["required"]["memory_per_node"]["number"], 500);
  EXPECT_FALSE(j["required"]["memory_per_cpu"]["set"]);
  EXPECT_FALSE(j["array"]["task_id"]["set"]);
  EXPECT_EQ(j["kill_request_user"], "");
  ASSERT_EQ(j["steps"].size(), 1u);
  const json& s = j["steps"][0];
  EXPECT_EQ(s["step"]["id"], "42.batch");
  EXPECT_EQ(s["nodes"]["list"], json::array({"n1", "n2"}));
  EXPECT_EQ(s["time"]["user"]["seconds"], 1);
  EXPECT_EQ(s["time"]["user"]["microseconds"], 500000);
  EXPECT_EQ(s["time"]["total"]["seconds"], 1);
  EXPECT_EQ(s["time"]["total"]["microseconds"], 750000);
}

TEST(SlurmdbJson, PendingAndRunningJobs) {
  pb::AcctJob j = SampleJob();
  j.set_state(pb::JOB_PENDING);
  j.set_start_time(0);
  j.set_end_time(0);
  j.set_nodelist("");
  j.clear_steps();
  json p = JobJson(j, 5000, nullptr);
  EXPECT_EQ(p["nodes"], "None assigned");
  EXPECT_EQ(p["time"]["elapsed"], 0);
  EXPECT_EQ(p["exit_code"]["status"], json::array({"PENDING"}));
  j.set_state(pb::JOB_RUNNING);
  j.set_start_time(4000);
  EXPECT_EQ(JobJson(j, 5000, nullptr)["time"]["elapsed"], 1000);
}

TEST(SlurmdbJson, CancelledByUser) {
  pb::AcctJob j = SampleJob();
  j.set_state(pb::JOB_CANCELLED);
  j.set_requid(0);
  j.set_exit_status(SIGTERM);  // killed by a signal
  json c = JobJson(j, 5000, [](uint32_t uid) { return uid == 0 ? "root" : "?"; });
  EXPECT_EQ(c["kill_request_user"], "root");
  EXPECT_EQ(c["exit_code"]["status"], json::array({"SIGNALED"}));
  EXPECT_EQ(c["exit_code"]["signal"]["id"]["number"], SIGTERM);
  EXPECT_EQ(c["exit_code"]["signal"]["name"], "SIGTERM");
}

TEST(SlurmdbJson, TresList) {
  json t = TresList("billing=2,cpu=2,mem=1G,node=1,gres/gpu=1");
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0], (json{{"type", "billing"}, {"name", ""}, {"id", 5}, {"count", 2}}));
  EXPECT_EQ(t[2]["count"], 1024);  // MB
  EXPECT_EQ(t[2]["id"], 2);
  EXPECT_EQ(t[4], (json{{"type", "gres"}, {"name", "gpu"}, {"id", 1001}, {"count", 1}}));
  EXPECT_TRUE(TresList("").empty());
  EXPECT_EQ(TresList("mem=512M")[0]["count"], 512);
}

TEST(SlurmdbJson, AccountUserAssocQos) {
  pb::AcctShowResponse show;
  auto* acct = show.add_accounts();
  acct->set_name("physics");
  acct->set_description("phys");
  acct->set_organization("sci");
  auto* u = show.add_users();
  u->set_name("alice");
  u->set_default_account("physics");
  u->set_admin_level("Operator");
  u->add_coordinator_of("physics");
  auto* a = show.add_assocs();
  a->set_id(7);
  a->set_cluster("c1");
  a->set_account("physics");
  a->set_user("alice");
  a->set_shares(10);
  a->set_priority(-1);
  a->mutable_limits()->set_max_jobs(4);
  a->mutable_limits()->set_grp_tres("cpu=8");
  a->add_qos("normal");

  json aj = AccountJson(*acct, show, true, true);
  EXPECT_EQ(aj["name"], "physics");
  EXPECT_EQ(aj["organization"], "sci");
  EXPECT_EQ(aj["coordinators"], json::array({{{"name", "alice"}, {"direct", true}}}));
  ASSERT_EQ(aj["associations"].size(), 1u);
  EXPECT_EQ(aj["associations"][0]["user"], "alice");
  EXPECT_FALSE(AccountJson(*acct, show, false, false).contains("associations"));

  json uj = UserJson(*u, show, true, true);
  EXPECT_EQ(uj["administrator_level"], json::array({"Operator"}));
  EXPECT_EQ(uj["default"]["account"], "physics");
  EXPECT_EQ(uj["associations"][0]["id"], 7);

  json asj = AssocJson(*a);
  EXPECT_EQ(asj["max"]["jobs"]["per"]["count"]["number"], 4);
  EXPECT_FALSE(asj["max"]["jobs"]["active"]["set"]);
  EXPECT_EQ(asj["max"]["tres"]["total"][0]["count"], 8);
  EXPECT_FALSE(asj["priority"]["set"]);
  EXPECT_EQ(asj["shares_raw"], 10);
  EXPECT_EQ(asj["qos"], json::array({"normal"}));

  pb::AcctQos q;
  q.set_id(1);
  q.set_name("normal");
  q.set_priority(10);
  q.set_usage_factor(1.0);
  q.add_flags("DenyOnLimit");
  q.set_preempt_mode("requeue");
  q.mutable_limits()->set_max_wall_minutes(60);
  json qj = QosJson(q);
  EXPECT_EQ(qj["flags"], json::array({"DENY_LIMIT"}));
  EXPECT_EQ(qj["preempt"]["mode"], json::array({"REQUEUE"}));
  EXPECT_EQ(qj["limits"]["max"]["wall_clock"]["per"]["job"]["number"], 60);
  EXPECT_EQ(qj["priority"]["number"], 10);
}

TEST(SlurmdbJson, JobQueryFromParams) {
  auto q = JobQueryFromParams({{"users", "alice,bob"},
                               {"state", "COMPLETED,pd"},
                               {"start_time", "100"},
                               {"skip_steps", "true"}},
                              "c1");
  ASSERT_TRUE(q.ok()) << q.error();
  EXPECT_EQ(q->users_size(), 2);
  EXPECT_EQ(q->states_size(), 2);
  EXPECT_EQ(q->start(), 100);
  EXPECT_FALSE(q->include_steps());
  ASSERT_EQ(q->clusters_size(), 1);
  EXPECT_EQ(q->clusters(0), "c1");
  EXPECT_FALSE(JobQueryFromParams({{"state", "bogus"}}, "c1").ok());
  EXPECT_FALSE(JobQueryFromParams({{"start_time", "yesterday"}}, "c1").ok());
  auto all = JobQueryFromParams({}, "c1");
  EXPECT_TRUE(all->include_steps());
  EXPECT_EQ(all->start(), 0);
}

TEST(SlurmdbJson, ShowFromParams) {
  auto s = ShowFromParams(
      "association",
      {{"account", "physics"}, {"user", "alice"}, {"Include deleted associations", "true"}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->entity(), "association");
  EXPECT_EQ(s->where_size(), 2);
  EXPECT_TRUE(s->with_deleted());
  EXPECT_TRUE(FlagOn({{"with_assocs", ""}}, "with_assocs"));
  EXPECT_FALSE(FlagOn({{"with_assocs", "false"}}, "with_assocs"));
}

TEST(SlurmdbJson, AddRequestsFromBody) {
  auto r = AddRequestsFromBody(
      "association",
      json::parse(R"({"associations":[{"account":"chem","parent_account":"root","cluster":"c1"},
                                      {"account":"chem","user":"bob"}]})"));
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].entity(), "account");
  EXPECT_EQ((*r)[0].names(0), "chem");
  EXPECT_EQ((*r)[1].entity(), "user");
  EXPECT_EQ((*r)[1].names(0), "bob");
  EXPECT_FALSE(AddRequestsFromBody("account", json::parse(R"({"accounts":[{}]})")).ok());
  EXPECT_FALSE(AddRequestsFromBody("account", json::parse(R"({"accounts":7})")).ok());
  EXPECT_FALSE(AddRequestsFromBody("qos", json::parse(R"({"qos":[{"name":["x"]}]})")).ok());
  auto qos = AddRequestsFromBody("qos", json::parse(R"({"qos":[{"name":"hi","priority":5}]})"));
  ASSERT_TRUE(qos.ok());
  EXPECT_EQ((*qos)[0].set_size(), 1);
}

}  // namespace
}  // namespace shoal::restd::slurmdb
