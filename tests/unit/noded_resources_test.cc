#include <gtest/gtest.h>

#include "noded/node_resources.h"
#include "noded/shoald.h"
#include "noded/stepd.h"
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
}

}  // namespace
}  // namespace shoal::noded
