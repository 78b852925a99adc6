#include "cli/scancel_options.h"

#include <gtest/gtest.h>

#include <csignal>
#include <map>

#include "common/units.h"

namespace shoal::cli {
namespace {

Result<ScancelOptions> Parse(std::vector<std::string> args,
                             std::map<std::string, std::string> env = {}) {
  return ParseScancelArgs(args, [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

TEST(ScancelOptions, JobIds) {
  auto o = Parse({"123", "123_4", "123_[1-3]", "123.0", "7_[1,3-5]"});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->job_ids,
            (std::vector<std::string>{"123", "123_4", "123_[1-3]", "123.0", "7_[1,3-5]"}));
  EXPECT_FALSE(o->signal);
  EXPECT_EQ(StepPart("123.0"), "0");
  EXPECT_EQ(StepPart("123_4"), "");
}

TEST(ScancelOptions, NoJobIdentification) {
  EXPECT_EQ(Parse({}).error(), "scancel: error: No job identification provided");
  EXPECT_EQ(Parse({"-i"}).error(), "scancel: error: No job identification provided");
  EXPECT_EQ(Parse({"-s", "USR1"}).error(), "scancel: error: No job identification provided");
}

TEST(ScancelOptions, InvalidJobIds) {
  EXPECT_EQ(Parse({"abc"}).error(), "scancel: error: Invalid job id abc");
  EXPECT_EQ(Parse({"12x"}).error(), "scancel: error: Invalid job id 12x");
  EXPECT_EQ(Parse({"0"}).error(), "scancel: error: Invalid job id 0");
  EXPECT_EQ(Parse({"12_"}).error(), "scancel: error: Invalid job id 12_");
  EXPECT_EQ(Parse({"12_[1-"}).error(), "scancel: error: Invalid job id 12_[1-");
  EXPECT_TRUE(IsScancelJobId("12+1"));
  EXPECT_TRUE(IsScancelJobId("12_3.batch"));
  EXPECT_FALSE(IsScancelJobId("12.x"));
}

TEST(ScancelOptions, Filters) {
  auto o = Parse({"-u", "alice", "-n", "job", "-t", "PD,r", "-p", "debug", "-w", "n[1-2]", "-A",
                  "acct", "-q", "high"});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_TRUE(o->job_ids.empty());
  EXPECT_EQ(o->user, "alice");
  EXPECT_EQ(o->name, "job");
  EXPECT_EQ(o->states, (std::vector<pb::JobState>{pb::JOB_PENDING, pb::JOB_RUNNING}));
  EXPECT_EQ(o->partition, "debug");
  EXPECT_EQ(o->nodelist, "n[1-2]");
  EXPECT_EQ(o->account, "acct");
  EXPECT_EQ(o->qos, "high");
  EXPECT_TRUE(HasFilters(*o));
}

TEST(ScancelOptions, LongForms) {
  auto o =
      Parse({"--user=bob", "--jobname", "x", "--state=suspended", "--partition=p", "--nodelist=n1",
             "--account=a", "--qos=q", "--signal=SIGUSR1", "--batch", "--full", "--interactive",
             "--quiet", "--verbose", "--me", "--wckey=w", "--reservation=r", "--hurry", "5"});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->user, "bob");
  EXPECT_EQ(o->name, "x");
  EXPECT_EQ(o->states, (std::vector<pb::JobState>{pb::JOB_SUSPENDED}));
  EXPECT_EQ(o->signal, SIGUSR1);
  EXPECT_TRUE(o->batch && o->full && o->interactive && o->quiet && o->me && o->hurry);
  EXPECT_EQ(o->verbose, 1);
  EXPECT_EQ(o->wckey, "w");
  EXPECT_EQ(o->reservation, "r");
  EXPECT_EQ(o->job_ids, (std::vector<std::string>{"5"}));

  auto n = Parse({"--name=foo"});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->name, "foo");
  auto m = Parse({"--me"});
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->me);
  // Unique prefixes work like getopt_long.
  auto p = Parse({"--part=debug"});
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->partition, "debug");
}

TEST(ScancelOptions, Signals) {
  auto a = Parse({"-s", "9", "1"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->signal, 9);
  auto b = Parse({"-sUSR2", "1"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->signal, SIGUSR2);
  auto c = Parse({"--signal", "KILL", "1"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->signal, SIGKILL);
  EXPECT_EQ(Parse({"--signal=FOO", "1"}).error(), "Unknown job signal: FOO");
}

TEST(ScancelOptions, ClusteredShortFlags) {
  auto o = Parse({"-bfv", "-vQ", "12"});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_TRUE(o->batch);
  EXPECT_TRUE(o->full);
  EXPECT_TRUE(o->quiet);
  EXPECT_EQ(o->verbose, 2);
}

TEST(ScancelOptions, BadStates) {
  EXPECT_EQ(Parse({"-t", "foo", "1"}).error(),
            "Invalid job state specified: foo\nValid job states are PENDING, RUNNING, and "
            "SUSPENDED");
  EXPECT_EQ(Parse({"-t", "COMPLETED", "1"}).error(),
            "Invalid job state specified: COMPLETED\nValid job states are PENDING, RUNNING, and "
            "SUSPENDED");
}

TEST(ScancelOptions, BadOptions) {
  EXPECT_EQ(Parse({"-Z"}).error(),
            "scancel: invalid option -- 'Z'\nTry \"scancel --help\" for more information");
  EXPECT_EQ(Parse({"--bogus"}).error(),
            "scancel: unrecognized option '--bogus'\nTry \"scancel --help\" for more "
            "information");
  EXPECT_EQ(Parse({"-s"}).error(),
            "scancel: option requires an argument -- 's'\nTry \"scancel --help\" for more "
            "information");
  EXPECT_EQ(Parse({"--signal"}).error(),
            "scancel: option '--signal' requires an argument\nTry \"scancel --help\" for more "
            "information");
  EXPECT_EQ(Parse({"--batch=1", "3"}).error(),
            "scancel: option '--batch' doesn't allow an argument\nTry \"scancel --help\" for "
            "more information");
}

TEST(ScancelOptions, HelpUsageVersionNeedNoJob) {
  auto h = Parse({"--help"});
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->help);
  auto u = Parse({"--usage"});
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->usage);
  auto v = Parse({"-V"});
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->version);
  EXPECT_EQ(ScancelUsage().rfind("Usage: scancel [-A account] [--batch]", 0), 0u);
  EXPECT_EQ(ScancelHelp().rfind("Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]\n", 0), 0u);
}

TEST(ScancelOptions, EnvironmentDefaultsAndOverrides) {
  auto o = Parse({"-p", "cli"}, {{"SCANCEL_PARTITION", "env"},
                                 {"SCANCEL_USER", "carol"},
                                 {"SCANCEL_BATCH", "1"},
                                 {"SCANCEL_STATE", "PENDING"}});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->partition, "cli");
  EXPECT_EQ(o->user, "carol");
  EXPECT_TRUE(o->batch);
  EXPECT_EQ(o->states, (std::vector<pb::JobState>{pb::JOB_PENDING}));
}

TEST(ScancelOptions, BuildRequest) {
  auto o = Parse({"-s", "TERM", "-b", "-n", "x", "-t", "R", "-p", "debug", "-A", "a", "-q", "q",
                  "12", "13_[1-2]"});
  ASSERT_TRUE(o.ok());
  pb::CancelJobRequest r = BuildCancelRequest(*o, 1000u, {"n1", "n2"});
  EXPECT_EQ(r.job_ids_size(), 2);
  EXPECT_EQ(r.job_ids(1), "13_[1-2]");
  EXPECT_EQ(r.signal(), SIGTERM);
  EXPECT_TRUE(r.batch_only());
  EXPECT_FALSE(r.full());
  EXPECT_TRUE(r.has_filter_uid());
  EXPECT_EQ(r.filter_uid(), 1000u);
  EXPECT_EQ(r.filter_name(), "x");
  ASSERT_EQ(r.filter_states_size(), 1);
  EXPECT_EQ(r.filter_states(0), pb::JOB_RUNNING);
  EXPECT_EQ(r.filter_partition(), "debug");
  EXPECT_EQ(r.filter_nodes_size(), 2);
  EXPECT_EQ(r.filter_account(), "a");
  EXPECT_EQ(r.filter_qos(), "q");

  // -f wins over -b; no signal means terminate (0).
  auto f = Parse({"-b", "-f", "1"});
  ASSERT_TRUE(f.ok());
  pb::CancelJobRequest rf = BuildCancelRequest(*f, std::nullopt, {});
  EXPECT_FALSE(rf.batch_only());
  EXPECT_TRUE(rf.full());
  EXPECT_EQ(rf.signal(), 0);
  EXPECT_FALSE(rf.has_filter_uid());
}

TEST(ScancelOptions, Prompt) {
  pb::JobRecord j;
  j.set_job_id(42);
  j.mutable_spec()->set_name("sleepy");
  j.set_partition("debug");
  j.set_array_task_id(kNoArrayTask);
  EXPECT_EQ(CancelPrompt(j), "Cancel job_id=42 name=sleepy partition=debug [y/n]? ");
  j.set_array_job_id(40);
  j.set_array_task_id(2);
  EXPECT_EQ(CancelPrompt(j), "Cancel job_id=40_2 name=sleepy partition=debug [y/n]? ");
}

}  // namespace
}  // namespace shoal::cli
