#include "cli/sacct_options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <initializer_list>
#include <string>
#include <vector>

#include "common/units.h"

namespace shoal::cli {
namespace {

const bool kUtc = [] {
  setenv("TZ", "UTC", 1);
  tzset();
  return true;
}();

constexpr int64_t kNow = 1795353240;       // 2026-11-22T13:14:00Z
constexpr int64_t kMidnight = 1795305600;  // 2026-11-22T00:00:00Z

SacctEnv Env(uint32_t uid = 1003) {
  SacctEnv e;
  e.uid = uid;
  e.user_name = uid == 0 ? "root" : "acctuser1";
  e.now = kNow;
  e.cluster = "obs";
  e.resolve_user = [](const std::string& t, std::string* name) {
    if (t == "acctuser2" || t == "1004") {
      *name = "acctuser2";
      return true;
    }
    return false;
  };
  return e;
}

Result<SacctOptions> Parse(std::initializer_list<const char*> args, const SacctEnv& env = Env()) {
  std::vector<std::string> store{"sacct"};
  for (const char* a : args) store.emplace_back(a);
  std::vector<char*> argv;
  for (std::string& s : store) argv.push_back(s.data());
  return ParseSacctArgs(static_cast<int>(argv.size()), argv.data(), env);
}

TEST(SacctOptions, DefaultsForAUser) {
  auto o = Parse({});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->fields, kSacctDefaultFields);
  EXPECT_EQ(o->query.start(), kMidnight);
  EXPECT_EQ(o->query.end(), 0);
  ASSERT_EQ(o->query.users_size(), 1);
  EXPECT_EQ(o->query.users(0), "acctuser1");
  ASSERT_EQ(o->query.clusters_size(), 1);
  EXPECT_EQ(o->query.clusters(0), "obs");
  EXPECT_TRUE(o->query.include_steps());
  EXPECT_FALSE(o->query.by_state_window());
}

TEST(SacctOptions, RootAndAllUsersSeeEverybody) {
  auto root = Parse({}, Env(0));
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->query.users_size(), 0);
  auto all = Parse({"-a"});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->query.users_size(), 0);
  auto minus1 = Parse({"-u", "-1"});
  ASSERT_TRUE(minus1.ok());
  EXPECT_EQ(minus1->query.users_size(), 0);
  auto other = Parse({"-u", "1004"});
  ASSERT_TRUE(other.ok());
  ASSERT_EQ(other->query.users_size(), 1);
  EXPECT_EQ(other->query.users(0), "acctuser2");
  auto bad = Parse({"--user=nosuch"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "Invalid user id: nosuch");
}

TEST(SacctOptions, JobsMeanNoWindowAndAllUsers) {
  auto o = Parse({"-j", "123,123_4,124.batch,125.0"});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->query.start(), 0);
  EXPECT_EQ(o->query.users_size(), 0);
  ASSERT_EQ(o->jobs.size(), 4u);
  EXPECT_EQ(o->jobs[1].task, 4u);
  EXPECT_EQ(o->jobs[2].step, kBatchStepId);
  EXPECT_EQ(o->jobs[3].step, 0u);
  ASSERT_EQ(o->query.job_id_texts_size(), 4);
  EXPECT_EQ(o->query.job_id_texts(1), "123_4");
  EXPECT_EQ(o->query.job_ids(3), 125u);
  auto bad = Parse({"-j", "abc"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "sacct: fatal: Bad job/step specified: abc");
}

TEST(SacctOptions, StatesWindow) {
  auto now_only = Parse({"-s", "CD,f,Cancelled,TO,R,PD,OOM,NF,PR"});
  ASSERT_TRUE(now_only.ok()) << now_only.error();
  EXPECT_EQ(now_only->query.states_size(), 9);
  EXPECT_EQ(now_only->query.start(), kNow);
  EXPECT_EQ(now_only->query.end(), 0);
  EXPECT_TRUE(now_only->query.by_state_window());
  auto with_start = Parse({"-s", "R", "-S", "2026-11-20"});
  ASSERT_TRUE(with_start.ok());
  EXPECT_EQ(with_start->query.start(), kMidnight - 2 * 86400);
  EXPECT_EQ(with_start->query.end(), kMidnight - 2 * 86400);
  auto bad = Parse({"-s", "XX"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "sacct: fatal: unrecognized job state value 'XX'");
  auto backwards = Parse({"-S", "2026-11-21", "-E", "2026-11-20"});
  ASSERT_FALSE(backwards.ok());
  EXPECT_EQ(backwards.error(),
            "sacct: error: Start time (2026-11-21T00:00:00) requested is after end time "
            "(2026-11-20T00:00:00).");
}

TEST(SacctOptions, FieldListsAndFlags) {
  auto o = Parse({"-o", "jobid%20,state", "-b", "-X", "-n", "-P", "-T", "-D", "--units=g"});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->fields, "jobid%20,state,jobid,state,exitcode,");
  EXPECT_TRUE(o->allocations);
  EXPECT_FALSE(o->query.include_steps());
  EXPECT_TRUE(o->no_header);
  EXPECT_EQ(o->parsable, 2);
  EXPECT_TRUE(o->truncate);
  EXPECT_TRUE(o->query.duplicates());
  EXPECT_EQ(o->units, 'G');
  SacctEnv env = Env();
  env.sacct_format = "jobid,user";
  auto f = Parse({}, env);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->fields, "jobid,user");
  auto l = Parse({"-l"});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->fields, std::string(kSacctLongFields) + ",");
  auto filters = Parse(
      {"-A", "chem,bio", "-r", "debug", "--name=x", "-N", "n1", "-q", "normal", "-M", "c1,c2"});
  ASSERT_TRUE(filters.ok());
  EXPECT_EQ(filters->query.accounts_size(), 2);
  EXPECT_EQ(filters->query.partitions(0), "debug");
  EXPECT_EQ(filters->query.names(0), "x");
  EXPECT_EQ(filters->query.nodes(0), "n1");
  EXPECT_EQ(filters->query.users_size(), 0);  // -N means all users
  EXPECT_EQ(filters->query.qos(0), "normal");
  ASSERT_EQ(filters->query.clusters_size(), 2);
  auto all_clusters = Parse({"-L"});
  ASSERT_TRUE(all_clusters.ok());
  EXPECT_EQ(all_clusters->query.clusters_size(), 0);
}

TEST(SacctOptions, Actions) {
  EXPECT_EQ(Parse({"-e"})->action, SacctAction::kHelpFormat);
  EXPECT_EQ(Parse({"-h"})->action, SacctAction::kHelp);
  EXPECT_EQ(Parse({"--usage"})->action, SacctAction::kUsage);
  EXPECT_EQ(Parse({"-V"})->action, SacctAction::kVersion);
  EXPECT_TRUE(Parse({"--json"})->json);
}

TEST(SacctOptions, TimeForms) {
  EXPECT_EQ(*ParseSacctTime("now", kNow), kNow);
  EXPECT_EQ(*ParseSacctTime("now-1hour", kNow), kNow - 3600);
  EXPECT_EQ(*ParseSacctTime("now-2days", kNow), kNow - 2 * 86400);
  EXPECT_EQ(*ParseSacctTime("midnight", kNow), kMidnight);
  EXPECT_EQ(*ParseSacctTime("today", kNow), kMidnight);
  EXPECT_EQ(*ParseSacctTime("2026-11-21T10:30", kNow), kMidnight - 86400 + 10 * 3600 + 1800);
  EXPECT_EQ(*ParseSacctTime("10:00", kNow), kMidnight + 36000);
  EXPECT_EQ(*ParseSacctTime("11/20", kNow), kMidnight - 2 * 86400);
  EXPECT_EQ(*ParseSacctTime("11/20/26", kNow), kMidnight - 2 * 86400);
  // A date later in the year than today means last year.
  EXPECT_EQ(FormatTimestamp(*ParseSacctTime("12/25", kNow)), "2025-12-25T00:00:00");
  auto bad = ParseSacctTime("garbage", kNow);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "Invalid time specification (pos=0): garbage");
}

}  // namespace
}  // namespace shoal::cli
