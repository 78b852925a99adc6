#include <gtest/gtest.h>

#include "noded/node_resources.h"
#include "noded/shoald.h"
#include "noded/stepd.h"
#include "noded/user_groups.h"
#include "noded/util.h"

namespace shoal::noded {
namespace {

TEST(NodeResources, ParsesDynamicConf) {
  std::vector<std::string> warnings;
  auto r = ParseNodeConfParams("CPUs=4 RealMemory=2000 Features=a,b Gres=gpu:2 Bogus=1", &warnings);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->cpus, 4u);
  EXPECT_EQ(r->real_memory_mb, 2000u);
  EXPECT_EQ(r->features, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r->gres, "gpu:2");
  ASSERT_EQ(warnings.size(), 1u);
  CompleteResources(*r, 16, 64000);
  EXPECT_EQ(r->cpus, 4u);
  EXPECT_EQ(r->sockets, 4u);
  EXPECT_EQ(r->cores_per_socket, 1u);
  EXPECT_EQ(r->threads_per_core, 1u);
  EXPECT_EQ(r->real_memory_mb, 2000u);
}

TEST(NodeResources, CaseInsensitiveAndFeatureAlias) {
  auto r = ParseNodeConfParams("cpus=2 feature=x");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->cpus, 2u);
  EXPECT_EQ(r->features, std::vector<std::string>{"x"});
}

TEST(NodeResources, RejectsBadNumbers) {
  EXPECT_FALSE(ParseNodeConfParams("CPUs=four").ok());
  EXPECT_FALSE(ParseNodeConfParams("RealMemory=-5").ok());
}

TEST(NodeResources, TopologyDerivesCpus) {
  auto r = ParseNodeConfParams("Sockets=2 CoresPerSocket=8 ThreadsPerCore=2");
  ASSERT_TRUE(r.ok());
  CompleteResources(*r, 1, 1);
  EXPECT_EQ(r->cpus, 32u);
  EXPECT_EQ(r->sockets, 2u);
}

TEST(NodeResources, DetectedFallbacks) {
  auto r = ParseNodeConfParams("");
  ASSERT_TRUE(r.ok());
  CompleteResources(*r, 8, 4096);
  EXPECT_EQ(r->cpus, 8u);
  EXPECT_EQ(r->real_memory_mb, 4096u);
}

TEST(NodeResources, ProcParsers) {
  EXPECT_EQ(ParseMeminfoMB("MemTotal:       16384000 kB\nMemFree: 1024 kB\n", "MemTotal"), 16000u);
  EXPECT_EQ(ParseMeminfoMB("MemTotal: 2048 kB\nMemAvailable: 1048576 kB\n", "MemAvailable"), 1024u);
  EXPECT_EQ(ParseMeminfoMB("MemTotal: 2048 kB\n", "MemAvailable"), 0u);
  EXPECT_EQ(ParseBootTime("cpu 1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), 1700000000);
  EXPECT_EQ(ParseBootTime("cpu 1\n"), 0);
}

TEST(NodeUtil, ExpandNodePath) {
  EXPECT_EQ(ExpandNodePath("/var/spool/slurmd/%n", "n1", "host"), "/var/spool/slurmd/n1");
  EXPECT_EQ(ExpandNodePath("/var/log/%h-%n.log", "n1", "host"), "/var/log/host-n1.log");
  EXPECT_EQ(ExpandNodePath("/a/%x%", "n1", "host"), "/a/%x%");
  EXPECT_EQ(JobDir("/s", 12), "/s/job12");
}

TEST(ShoaldArgs, Flags) {
  auto o = ParseShoaldArgs({"-D", "-f", "/etc/x.conf", "-N", "n3", "-Z", "--conf",
                            "CPUs=4 RealMemory=2000", "-vv", "-L/tmp/l"});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_TRUE(o->foreground);
  EXPECT_EQ(o->conf_path, "/etc/x.conf");
  EXPECT_EQ(o->node_name, "n3");
  EXPECT_TRUE(o->dynamic);
  EXPECT_EQ(o->dyn_conf, "CPUs=4 RealMemory=2000");
  EXPECT_EQ(o->verbose, 2);
  EXPECT_EQ(o->log_file, "/tmp/l");
  auto b = ParseShoaldArgs({"-DNn4", "--conf=CPUs=1"});
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_TRUE(b->foreground);
  EXPECT_EQ(b->node_name, "n4");
  EXPECT_EQ(b->dyn_conf, "CPUs=1");
  EXPECT_FALSE(ParseShoaldArgs({"-q"}).ok());
  EXPECT_FALSE(ParseShoaldArgs({"-N"}).ok());
  EXPECT_TRUE(ParseShoaldArgs({"-V"})->version);
}

TEST(StepdArgs, Parse) {
  auto o = ParseStepdArgs({"--spool", "/s", "--job", "17", "--node", "n1"});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->spool, "/s");
  EXPECT_EQ(o->job_id, 17u);
  EXPECT_EQ(o->node_name, "n1");
  EXPECT_FALSE(ParseStepdArgs({"--spool", "/s"}).ok());
  EXPECT_FALSE(ParseStepdArgs({"--spool", "/s", "--job", "x"}).ok());
  EXPECT_FALSE(ParseStepdArgs({"--spool", "/s", "--job", "1", "--what"}).ok());
  // The identity shoald hands over: both or neither, and a valid group list.
  auto who = ParseStepdArgs({"--spool", "/s", "--job", "1", "--user", "ann", "--groups", "7,8"});
  ASSERT_TRUE(who.ok()) << who.error();
  EXPECT_EQ(who->user_name, "ann");
  EXPECT_EQ(who->groups, (std::vector<gid_t>{7, 8}));
  EXPECT_FALSE(ParseStepdArgs({"--spool", "/s", "--job", "1", "--user", "ann"}).ok());
  EXPECT_FALSE(ParseStepdArgs({"--spool", "/s", "--job", "1", "--groups", "7"}).ok());
  EXPECT_FALSE(
      ParseStepdArgs({"--spool", "/s", "--job", "1", "--user", "a", "--groups", "7,x"}).ok());
}

TEST(GroupList, FormatsAndParsesBack) {
  std::vector<gid_t> groups = {1000, 27, 0, 4294967294u};
  EXPECT_EQ(FormatGroupList(groups), "1000,27,0,4294967294");
  auto parsed = ParseGroupList(FormatGroupList(groups));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(*parsed, groups);
  EXPECT_EQ(*ParseGroupList("5"), std::vector<gid_t>{5});
}

TEST(GroupList, RejectsWhatIsNotAListOfIds) {
  for (const char* bad : {"", ",", "1,", ",1", "1,,2", "a", "1;2", "-1", "4294967295",
                          "99999999999999999999", "1 ,2"}) {
    auto parsed = ParseGroupList(bad);
    EXPECT_FALSE(parsed.ok()) << "'" << bad << "'";
    if (!parsed.ok()) {
      EXPECT_NE(parsed.error().find("invalid group list"), std::string::npos);
    }
  }
}

TEST(UserIdentityCache, ResolvesOncePerMinuteAndDoesNotKeepUnknownUsers) {
  int calls = 0;
  bool known = true;
  UserIdentityCache cache([&](uid_t uid, gid_t gid) -> std::optional<UserIdentity> {
    ++calls;
    if (!known) return std::nullopt;
    return UserIdentity{"u" + std::to_string(uid), "/home/u", "/bin/sh", {gid, 100}};
  });
  auto a = cache.Get(1000, 1000, 50);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->user, "u1000");
  EXPECT_EQ(a->groups, (std::vector<gid_t>{1000, 100}));
  EXPECT_TRUE(cache.Get(1000, 1000, 50 + UserIdentityCache::kTtlSeconds - 1));
  EXPECT_EQ(calls, 1);
  // Another primary group is another entry (the list starts with it).
  EXPECT_EQ(cache.Get(1000, 5, 60)->groups.front(), 5u);
  EXPECT_EQ(calls, 2);
  // After the minute the system is asked again; a user gone is no longer answered for.
  known = false;
  EXPECT_FALSE(cache.Get(1000, 1000, 50 + UserIdentityCache::kTtlSeconds));
  EXPECT_EQ(calls, 3);
  EXPECT_FALSE(cache.Get(1000, 1000, 50 + UserIdentityCache::kTtlSeconds));
  EXPECT_EQ(calls, 4);
  // A clock that went back does not keep an entry forever.
  known = true;
  ASSERT_TRUE(cache.Get(7, 7, 1000));
  EXPECT_TRUE(cache.Get(7, 7, 10));
  EXPECT_EQ(calls, 6);
}

TEST(ResolveUserIdentity, MatchesTheSystemForRoot) {
  auto root = ResolveUserIdentity(0, 0);
  ASSERT_TRUE(root);
  EXPECT_EQ(root->user, "root");
  EXPECT_EQ(root->home, "/root");
  ASSERT_FALSE(root->groups.empty());
  EXPECT_EQ(root->groups.front(), 0u);
  EXPECT_FALSE(ResolveUserIdentity(4000000000u, 1));
}

}  // namespace
}  // namespace shoal::noded
