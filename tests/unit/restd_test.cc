// shoalrestd's pure parts: routing, limits, auth headers and the v0.0.44 JSON mappings.
#include <gtest/gtest.h>

#include "common/units.h"
#include "restd/auth_headers.h"
#include "restd/json_jobs.h"
#include "restd/json_misc.h"
#include "restd/json_nodes.h"
#include "restd/limits.h"
#include "restd/router.h"

namespace shoal::restd {
namespace {

HttpResponse Tag(const char* tag) {
  HttpResponse r;
  r.body = tag;
  return r;
}

TEST(Router, MatchesLiteralsBeforeParameters) {
  Router r;
  r.Add(Method::kGet, "/slurm/v0.0.44/job/{job_id}",
        [](const HttpRequest&, Backend&) { return Tag("get"); });
  r.Add(Method::kPost, "/slurm/v0.0.44/job/{job_id}",
        [](const HttpRequest&, Backend&) { return Tag("update"); });
  r.Add(Method::kPost, "/slurm/v0.0.44/job/submit",
        [](const HttpRequest&, Backend&) { return Tag("submit"); });
  auto m = r.Find(Method::kPost, "/slurm/v0.0.44/job/submit");
  ASSERT_NE(m.handler, nullptr);
  EXPECT_TRUE(m.params.empty());
  m = r.Find(Method::kGet, "/slurm/v0.0.44/job/42/");
  ASSERT_NE(m.handler, nullptr);
  EXPECT_EQ(m.params["job_id"], "42");
  m = r.Find(Method::kPost, "/slurm/v0.0.44/job/42");
  ASSERT_NE(m.handler, nullptr);
  EXPECT_EQ(m.params["job_id"], "42");
}

TEST(Router, UnknownPathIs404AndWrongMethod405) {
  Router r;
  r.Add(Method::kGet, "/slurm/v0.0.44/ping/",
        [](const HttpRequest&, Backend&) { return Tag("ping"); });
  EXPECT_EQ(r.Find(Method::kGet, "/slurm/v0.0.44/pong").status, 404);
  EXPECT_EQ(r.Find(Method::kGet, "/").status, 404);
  EXPECT_EQ(r.Find(Method::kDelete, "/slurm/v0.0.44/ping").status, 405);
  EXPECT_EQ(r.Find(Method::kGet, "/slurm/v0.0.44/ping").status, 200);
  EXPECT_NE(r.Find(Method::kHead, "/slurm/v0.0.44/ping").handler, nullptr);
}

TEST(Router, DecodesParameters) {
  Router r;
  r.Add(Method::kGet, "/x/{name}", [](const HttpRequest&, Backend&) { return Tag("x"); });
  auto m = r.Find(Method::kGet, "/x/a%20b");
  EXPECT_EQ(m.params["name"], "a b");
}

TEST(RateLimiter, TokenBucketRefills) {
  RateLimiter lim(10, 5);  // 10/s, burst 5
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(lim.Allow("alice", 100.0));
  EXPECT_FALSE(lim.Allow("alice", 100.0));
  EXPECT_TRUE(lim.Allow("bob", 100.0));     // buckets are per user
  EXPECT_TRUE(lim.Allow("alice", 100.15));  // 1.5 tokens back after 0.15 s
  EXPECT_FALSE(lim.Allow("alice", 100.15));
  EXPECT_TRUE(lim.Allow("alice", 200.0));
}

TEST(RateLimiter, ZeroRateIsUnlimited) {
  RateLimiter lim(0, 0);
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(lim.Allow("x", 1.0));
  EXPECT_EQ(lim.tracked(), 0u);
}

TEST(Limits, ParseByteSize) {
  EXPECT_EQ(ParseByteSize("1048576"), 1048576u);
  EXPECT_EQ(ParseByteSize("512K"), 512u * 1024);
  EXPECT_EQ(ParseByteSize("1M"), 1u << 20);
  EXPECT_EQ(ParseByteSize("2MiB"), 0u);
  EXPECT_EQ(ParseByteSize("2Mi"), 2u << 20);
  EXPECT_EQ(ParseByteSize("x"), 0u);
  EXPECT_EQ(ParseByteSize(""), 0u);
}

TEST(AuthHeaders, TokenSources) {
  auto t = TokenFromHeaders("abc", "alice", nullptr);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->token, "abc");
  EXPECT_EQ(t->user_name, "alice");
  t = TokenFromHeaders(nullptr, nullptr, "Bearer  xyz ");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->token, "xyz");
  EXPECT_FALSE(TokenFromHeaders(nullptr, "alice", "Basic Zm9v"));
  EXPECT_FALSE(TokenFromHeaders("", nullptr, nullptr));
}

TEST(AuthHeaders, UnverifiedUser) {
  // {"alg":"HS256","typ":"JWT"}.{"exp":1,"iat":0,"sun":"alice"}.sig
  std::string token =
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjEsImlhdCI6MCwic3VuIjoiYWxpY2UifQ.c2ln";
  EXPECT_EQ(UnverifiedJwtUser(token), "alice");
  EXPECT_EQ(UnverifiedJwtUser("garbage"), "");
  EXPECT_EQ(UnverifiedJwtUser("a.b.c"), "");
}

TEST(JsonCommon, NoValStructs) {
  EXPECT_EQ(NoValU32(kTimeInfinite)["infinite"], true);
  EXPECT_EQ(NoValU32(kTimeNoVal)["set"], false);
  EXPECT_EQ(NoValU32(30)["number"], 30);
  bool bad = false;
  json j = {{"a", 5},
            {"b", {{"set", true}, {"number", 7}}},
            {"c", {{"infinite", true}}},
            {"d", "x"},
            {"e", {{"set", false}, {"number", 9}}}};
  EXPECT_EQ(ReadInt(j, "a", &bad), 5);
  EXPECT_EQ(ReadInt(j, "b", &bad), 7);
  EXPECT_EQ(ReadInt(j, "c", &bad, 99), 99);
  EXPECT_EQ(ReadInt(j, "e", &bad), std::nullopt);
  EXPECT_EQ(ReadInt(j, "missing", &bad), std::nullopt);
  EXPECT_FALSE(bad);
  EXPECT_EQ(ReadInt(j, "d", &bad), std::nullopt);
  EXPECT_TRUE(bad);
}

TEST(JsonCommon, ErrorsAreNever200) {
  HttpRequest req;
  for (int c = 1; c <= 31; ++c) {
    HttpResponse r = ErrorReply(req, Error(static_cast<ErrorCode>(c), "x"), "t");
    EXPECT_GE(r.status, 400) << c;
    json body = json::parse(r.body);
    ASSERT_EQ(body["errors"].size(), 1u);
    EXPECT_EQ(body["errors"][0]["description"], "x");
    EXPECT_TRUE(body.contains("meta"));
    EXPECT_TRUE(body["warnings"].is_array());
  }
  EXPECT_EQ(HttpStatusFor(ErrorCode::kAuthFailure), 401);
  EXPECT_EQ(HttpStatusFor(ErrorCode::kAccessDenied), 403);
  EXPECT_EQ(HttpStatusFor(ErrorCode::kInvalidJobId), 404);
  EXPECT_EQ(SlurmErrnoFor(ErrorCode::kInvalidJobId), 2017);
}

TEST(JsonCommon, ParseJsonBodyRejectsMalformed) {
  HttpRequest req;
  req.body = "{\"job\": ";
  HttpResponse err;
  EXPECT_FALSE(ParseJsonBody(req, &err));
  EXPECT_EQ(err.status, 400);
  req.body = "[1,2]";
  EXPECT_FALSE(ParseJsonBody(req, &err));
  req.body = "{\"a\":1}";
  EXPECT_TRUE(ParseJsonBody(req, &err));
}

TEST(JsonJobs, SubmitRequestToSpec) {
  json body = json::parse(R"({
    "script": "#!/bin/sh\nhostname\n",
    "job": {"name": "t1", "partition": "debug", "current_working_directory": "/tmp",
            "environment": ["PATH=/bin", "A=1"], "time_limit": {"set": true, "number": 5},
            "tasks": 2, "cpus_per_task": 1, "memory_per_node": {"set": true, "number": 100},
            "nodes": "1-2", "hold": true, "tres_per_node": "gres/gpu:1",
            "shared": ["user"], "argv": ["script", "a1"]}
  })");
  std::vector<std::string> warnings;
  auto spec = SubmitRequestToSpec(body, Submitter{1000, 1000, "alice"}, &warnings);
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec->name(), "t1");
  EXPECT_EQ(spec->partition(), "debug");
  EXPECT_EQ(spec->work_dir(), "/tmp");
  EXPECT_EQ(spec->time_limit(), 5u);
  EXPECT_EQ(spec->num_tasks(), 2u);
  EXPECT_EQ(spec->mem_per_node_mb(), 100u);
  EXPECT_EQ(spec->min_nodes(), 1u);
  EXPECT_EQ(spec->max_nodes(), 2u);
  EXPECT_TRUE(spec->hold());
  EXPECT_EQ(spec->gres(), "gpu:1");
  EXPECT_TRUE(spec->exclusive());
  EXPECT_EQ(spec->exclusive_mode(), "user");
  EXPECT_EQ(spec->environment_size(), 2);
  ASSERT_EQ(spec->argv_size(), 1);
  EXPECT_EQ(spec->argv(0), "a1");
  EXPECT_EQ(spec->uid(), 1000u);
  EXPECT_EQ(spec->user_name(), "alice");
  EXPECT_EQ(spec->script(), "#!/bin/sh\nhostname\n");
  EXPECT_EQ(spec->requeue(), -1);
}

TEST(JsonJobs, SubmitRequestErrors) {
  std::vector<std::string> w;
  Submitter who{0, 0, "root"};
  EXPECT_FALSE(SubmitRequestToSpec(json::parse(R"({"script": "#!/bin/sh"})"), who, &w));
  EXPECT_FALSE(SubmitRequestToSpec(json::parse(R"({"job": {"current_working_directory": "/tmp"}})"),
                                   who, &w));
  EXPECT_FALSE(SubmitRequestToSpec(
      json::parse(R"({"script": "echo", "job": {"current_working_directory": "/tmp"}})"), who, &w));
  auto bad_type = SubmitRequestToSpec(
      json::parse(R"({"script": "#!/bin/sh", "job": {"current_working_directory": "/tmp",
                       "tasks": "many"}})"),
      who, &w);
  ASSERT_FALSE(bad_type);
  EXPECT_NE(bad_type.error().find("tasks"), std::string::npos);
  // The script may live in the job description instead.
  auto ok = SubmitRequestToSpec(
      json::parse(R"({"job": {"script": "#!/bin/sh\n", "current_working_directory": "/"}})"), who,
      &w);
  EXPECT_TRUE(ok) << ok.error();
}

TEST(JsonJobs, JobToJson) {
  pb::JobRecord job;
  job.set_job_id(7);
  job.set_state(pb::JOB_RUNNING);
  job.set_completing(false);
  job.mutable_spec()->set_name("x");
  job.mutable_spec()->set_uid(1000);
  job.mutable_spec()->set_user_name("alice");
  job.mutable_spec()->set_mail_type("ALL");
  job.set_time_limit(kTimeInfinite);
  job.set_array_task_id(kNoArrayTask);
  job.add_nodes("n1");
  job.add_nodes("n2");
  job.add_cpus_per_node(2);
  job.add_cpus_per_node(2);
  job.set_num_cpus(4);
  job.set_num_nodes(2);
  job.set_start_time(1000);
  job.set_exit_status(0);
  json j = JobToJson(job, "c1");
  EXPECT_EQ(j["job_id"], 7);
  EXPECT_EQ(j["job_state"], json::array({"RUNNING"}));
  EXPECT_EQ(j["nodes"], "n[1-2]");
  EXPECT_EQ(j["time_limit"]["infinite"], true);
  EXPECT_EQ(j["start_time"]["number"], 1000);
  EXPECT_EQ(j["user_name"], "alice");
  EXPECT_EQ(j["cluster"], "c1");
  EXPECT_EQ(j["exit_code"]["status"], json::array({"SUCCESS"}));
  EXPECT_EQ(j["job_resources"]["nodes"]["count"], 2);
  EXPECT_EQ(j["job_resources"]["cpus"], 4);
  EXPECT_EQ(j["mail_type"].size(), 5u);
  job.set_state(pb::JOB_COMPLETED);
  job.set_completing(true);
  job.set_exit_status(9);  // killed by SIGKILL
  j = JobToJson(job, "c1");
  EXPECT_EQ(j["job_state"], json::array({"COMPLETED", "COMPLETING"}));
  EXPECT_EQ(j["exit_code"]["status"], json::array({"SIGNALED"}));
  EXPECT_EQ(j["exit_code"]["signal"]["name"], "KILL");
}

TEST(JsonJobs, JobTextEscapesStrings) {
  pb::JobRecord job;
  job.set_job_id(1);
  job.mutable_spec()->set_name("a\"b\\c\n\xff");
  job.mutable_spec()->set_comment("plain");
  json j = json::parse(JobJsonText(job, "c"));    // throws if the text is not valid JSON
  EXPECT_EQ(j["name"], "a\"b\\c\n\xef\xbf\xbd");  // invalid UTF-8 replaced by U+FFFD
  EXPECT_EQ(j["comment"], "plain");
  EXPECT_EQ(j["billable_tres"]["set"], true);
  EXPECT_EQ(j["accrue_time"], json::parse(R"({"set":false,"infinite":false,"number":0})"));
}

TEST(JsonJobs, JobDescToUpdate) {
  std::vector<std::string> w;
  auto u = JobDescToUpdate(
      json::parse(R"({"time_limit": {"set": true, "number": 30}, "comment": "c", "hold": false,
                      "nice": 10, "account": "x"})"),
      &w);
  ASSERT_TRUE(u) << u.error();
  EXPECT_EQ(u->fields["TimeLimit"], "30");
  EXPECT_EQ(u->fields["Comment"], "c");
  EXPECT_EQ(u->fields["Nice"], "10");
  ASSERT_TRUE(u->hold);
  EXPECT_FALSE(*u->hold);
  EXPECT_EQ(w.size(), 1u);  // account cannot be updated
  EXPECT_FALSE(JobDescToUpdate(json::parse(R"({"time_limit": "soon"})"), &w));
  u = JobDescToUpdate(json::parse(R"({"time_limit": {"infinite": true}})"), &w);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->fields["TimeLimit"], "UNLIMITED");
}

TEST(JsonJobs, KillJobs) {
  auto r = KillJobsToRequest(json::parse(R"({"jobs": ["12", 13], "signal": "USR1"})"));
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->job_ids_size(), 2);
  EXPECT_EQ(r->job_ids(1), "13");
  EXPECT_EQ(r->signal(), 10);
  EXPECT_FALSE(KillJobsToRequest(json::parse("{}")));  // nothing selected
  EXPECT_FALSE(KillJobsToRequest(json::parse(R"({"jobs": [1], "signal": "NOPE"})")));
  r = KillJobsToRequest(json::parse(R"({"job_state": ["PENDING"], "user_id": "1000"})"));
  ASSERT_TRUE(r) << r.error();
  EXPECT_TRUE(r->has_filter_uid());
  EXPECT_EQ(r->filter_uid(), 1000u);
  EXPECT_EQ(r->filter_states(0), pb::JOB_PENDING);
}

TEST(JsonNodes, StateAndUpdate) {
  pb::NodeRecord n;
  n.set_name("n1");
  n.set_base_state(pb::NODE_IDLE);
  n.set_drain(true);
  n.set_responding(true);
  n.set_cpus(4);
  EXPECT_EQ(NodeStateArray(n), json::array({"IDLE", "DRAIN"}));
  json j = NodeToJson(n, "c");
  EXPECT_EQ(j["name"], "n1");
  EXPECT_EQ(j["cpus"], 4);
  n.set_responding(false);
  n.set_drain(false);
  n.set_base_state(pb::NODE_DOWN);
  EXPECT_EQ(NodeStateArray(n), json::array({"DOWN", "NOT_RESPONDING"}));

  std::vector<std::string> w;
  auto u = NodeUpdateToRequest(
      json::parse(R"({"state": ["DRAIN"], "reason": "maint", "features": ["a", "b"],
                      "comment": "x", "gres": "g"})"),
      "n1", &w);
  ASSERT_TRUE(u) << u.error();
  EXPECT_EQ(u->node_names(), "n1");
  EXPECT_EQ(u->state(), "DRAIN");
  EXPECT_EQ(u->reason(), "maint");
  EXPECT_EQ(u->fields().at("Features"), "a,b");
  EXPECT_EQ(u->fields().at("Comment"), "x");  // applied; gres is the one ignored (warning)
  EXPECT_EQ(w.size(), 1u);
  u = NodeUpdateToRequest(json::parse(R"({"state": ["RESUME"], "name": ["n1", "n2"]})"), "", &w);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->node_names(), "n1,n2");
  EXPECT_EQ(u->state(), "RESUME");
  EXPECT_FALSE(NodeUpdateToRequest(json::parse(R"({"state": ["BOGUS"]})"), "n1", &w));
  EXPECT_FALSE(NodeUpdateToRequest(json::parse(R"({"state": ["DRAIN"]})"), "", &w));
}

TEST(JsonNodes, PartitionAndReservation) {
  pb::PartitionRecord p;
  p.set_name("debug");
  p.add_nodes("n1");
  p.set_max_time(kTimeInfinite);
  p.set_default_time(kTimeNoVal);
  p.set_state("UP");
  p.set_max_nodes(0xffffffff);
  json j = PartitionToJson(p, "c");
  EXPECT_EQ(j["name"], "debug");
  EXPECT_EQ(j["nodes"]["total"], 1);
  EXPECT_EQ(j["maximums"]["time"]["infinite"], true);
  EXPECT_EQ(j["defaults"]["time"]["set"], false);
  EXPECT_EQ(j["partition"]["state"], json::array({"UP"}));

  pb::ReservationRecord r;
  r.set_name("r1");
  r.add_nodes("n1");
  r.add_nodes("n2");
  r.add_flags("MAINT");
  r.add_flags("SOMETHING_ELSE");
  r.set_start_time(100);
  j = ReservationToJson(r);
  EXPECT_EQ(j["node_list"], "n[1-2]");
  EXPECT_EQ(j["flags"], json::array({"MAINT"}));

  auto args = ReservationDescToArgs(json::parse(
      R"({"name": "r2", "users": ["root"], "node_list": ["n1"], "duration": {"set": true,
          "number": 60}, "start_time": {"set": true, "number": 0}, "flags": ["MAINT"]})"));
  ASSERT_TRUE(args) << args.error();
  std::vector<std::string> want_prefixes = {"ReservationName=r2", "Users=root",  "Nodes=n1",
                                            "StartTime=",         "Duration=60", "Flags=MAINT"};
  for (const auto& w : want_prefixes) {
    bool found = false;
    for (const auto& a : *args) found = found || a.rfind(w, 0) == 0;
    EXPECT_TRUE(found) << w;
  }
}

TEST(JsonMisc, Licenses) {
  pb::JobRecord job;
  job.set_state(pb::JOB_RUNNING);
  job.mutable_spec()->set_licenses("foo:2");
  json l = LicensesToJson("foo:4,bar", {job});
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0]["LicenseName"], "foo");
  EXPECT_EQ(l[0]["Total"], 4);
  EXPECT_EQ(l[0]["Used"], 2);
  EXPECT_EQ(l[0]["Free"], 2);
  EXPECT_EQ(l[1]["Total"], 1);
}

TEST(OpenApi, DocumentIsEmbedded) {
  json doc = json::parse(OpenApiDocument(), nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_TRUE(doc["paths"].contains("/slurm/v0.0.44/jobs/"));
}

}  // namespace
}  // namespace shoal::restd
