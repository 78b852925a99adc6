#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/config_files.h"
#include "common/slurm_conf.h"
#include "ctld/reconfigure_plan.h"
#include "noded/shoald.h"

namespace shoal {
namespace {

FileReader MapReader(const std::map<std::string, std::string>& files) {
  return [files](const std::string& path) -> Result<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return Error(ErrorCode::kIoError, "No such file or directory");
    return it->second;
  };
}

SlurmConf Parse(const std::string& text) {
  auto conf = ParseSlurmConf(text, "slurm.conf", MapReader({}),
                             [](const std::string& p) { return std::vector<std::string>{p}; });
  EXPECT_TRUE(conf.ok()) << conf.error();
  return conf.ok() ? std::move(*conf) : SlurmConf();
}

std::vector<std::string> Names(const pb::ConfigFilesResponse& r) {
  std::vector<std::string> out;
  for (const auto& f : r.files()) out.push_back(f.name());
  return out;
}

TEST(ConfigFiles, ServesSlurmConfAdjacentIncludesAndKnownFiles) {
  std::map<std::string, std::string> fs = {
      {"/etc/x/slurm.conf", "Include nodes.conf\nInclude /other/parts.conf\n"},
      {"/etc/x/nodes.conf", "NodeName=a\n"},
      {"/other/parts.conf", "PartitionName=p Nodes=a\n"},
      {"/etc/x/cgroup.conf", "ConstrainCores=yes\n"},
      {"/etc/x/gres.conf", "Name=gpu File=/dev/null\n"},
      {"/etc/x/slurm.key", "secret"},
  };
  auto r = CollectConfigFiles("/etc/x/slurm.conf", {"/etc/x/nodes.conf", "/other/parts.conf"},
                              MapReader(fs));
  ASSERT_TRUE(r.ok()) << r.error();
  // The include outside slurm.conf's directory and the key are never served.
  EXPECT_EQ(Names(*r),
            (std::vector<std::string>{"slurm.conf", "nodes.conf", "cgroup.conf", "gres.conf"}));
  EXPECT_EQ(r->files(0).content(), fs["/etc/x/slurm.conf"]);
  EXPECT_EQ(r->hash().size(), 64u);

  auto again = CollectConfigFiles("/etc/x/slurm.conf", {"/etc/x/nodes.conf"}, MapReader(fs));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->hash(), r->hash());
  fs["/etc/x/cgroup.conf"] = "ConstrainCores=no\n";
  auto changed = CollectConfigFiles("/etc/x/slurm.conf", {"/etc/x/nodes.conf"}, MapReader(fs));
  ASSERT_TRUE(changed.ok());
  EXPECT_NE(changed->hash(), r->hash());
}

TEST(ConfigFiles, MissingSlurmConfIsAnError) {
  auto r = CollectConfigFiles("/nope/slurm.conf", {}, MapReader({}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("/nope/slurm.conf"), std::string::npos);
}

TEST(ConfigFiles, SafeNames) {
  EXPECT_TRUE(SafeConfigFileName("slurm.conf"));
  EXPECT_TRUE(SafeConfigFileName("nodes.conf"));
  EXPECT_FALSE(SafeConfigFileName(""));
  EXPECT_FALSE(SafeConfigFileName(".."));
  EXPECT_FALSE(SafeConfigFileName("../etc/passwd"));
  EXPECT_FALSE(SafeConfigFileName("a/b"));
  EXPECT_FALSE(SafeConfigFileName("slurm.key"));
}

TEST(ConfigFiles, ConfServers) {
  auto r = ParseConfServers("ctl1,ctl2:7000, 10.0.0.1:6817", 6817);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(*r, (std::vector<std::string>{"ctl1:6817", "ctl2:7000", "10.0.0.1:6817"}));
  EXPECT_FALSE(ParseConfServers("", 6817).ok());
  EXPECT_FALSE(ParseConfServers("host:abc", 6817).ok());
  EXPECT_FALSE(ParseConfServers("host:70000", 6817).ok());
  EXPECT_FALSE(ParseConfServers(":6817", 6817).ok());
}

TEST(ConfigFiles, CacheIsWrittenReplacedAndLinksTheKey) {
  char tmpl[] = "/tmp/shoal-cfgcache-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = std::string(tmpl) + "/conf";
  pb::ConfigFilesResponse files;
  auto* a = files.add_files();
  a->set_name("slurm.conf");
  a->set_content("ClusterName=x\n");
  auto* b = files.add_files();
  b->set_name("old.conf");
  b->set_content("1");
  auto* evil = files.add_files();
  evil->set_name("../evil");
  evil->set_content("x");
  ASSERT_TRUE(WriteConfigCache(dir, files, "/etc/slurm/slurm.key").ok());
  auto read = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  EXPECT_EQ(read(dir + "/slurm.conf"), "ClusterName=x\n");
  EXPECT_EQ(read(dir + "/old.conf"), "1");
  EXPECT_NE(::access((std::string(tmpl) + "/evil").c_str(), F_OK), 0);
  char buf[256];
  ssize_t n = ::readlink((dir + "/slurm.key").c_str(), buf, sizeof buf);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), "/etc/slurm/slurm.key");
  struct stat sb;
  ASSERT_EQ(::stat((dir + "/slurm.conf").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0644u);

  // A later set replaces the files and drops the ones no longer served.
  files.mutable_files()->DeleteSubrange(1, 2);
  files.mutable_files(0)->set_content("ClusterName=y\n");
  ASSERT_TRUE(WriteConfigCache(dir, files, "/etc/slurm/slurm.key").ok());
  EXPECT_EQ(read(dir + "/slurm.conf"), "ClusterName=y\n");
  EXPECT_NE(::access((dir + "/old.conf").c_str(), F_OK), 0);

  pb::ConfigFilesResponse none;
  EXPECT_FALSE(WriteConfigCache(dir, none, "").ok());
  std::string cmd = std::string("rm -rf ") + tmpl;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
}

TEST(ReconfigurePlan, AddedChangedRemoved) {
  SlurmConf before = Parse(
      "NodeName=a,b CPUs=2 RealMemory=100\nNodeName=c CPUs=4 Feature=x\n"
      "PartitionName=p Nodes=ALL\n");
  SlurmConf after = Parse(
      "NodeName=a CPUs=2 RealMemory=100\nNodeName=b CPUs=8 RealMemory=100\n"
      "NodeName=d CPUs=1\nPartitionName=p Nodes=ALL\nPartitionName=q Nodes=d\n");
  ctld::NodeChangePlan plan = ctld::PlanNodeChanges(before, after);
  ASSERT_EQ(plan.added.size(), 1u);
  EXPECT_EQ(after.nodes[plan.added[0]].name, "d");
  ASSERT_EQ(plan.changed.size(), 1u);
  EXPECT_EQ(after.nodes[plan.changed[0]].name, "b");
  EXPECT_EQ(plan.removed, (std::vector<std::string>{"c"}));

  SlurmConf features = Parse("NodeName=a,b CPUs=2 RealMemory=100 Feature=gpu\n");
  ctld::NodeChangePlan f = ctld::PlanNodeChanges(before, features);
  EXPECT_EQ(f.changed.size(), 2u);
  EXPECT_TRUE(f.added.empty());
  EXPECT_EQ(f.removed, (std::vector<std::string>{"c"}));

  ctld::NodeChangePlan same = ctld::PlanNodeChanges(before, before);
  EXPECT_TRUE(same.added.empty() && same.changed.empty() && same.removed.empty());
}

TEST(ReconfigurePlan, ApplyKeepsRuntimeState) {
  SlurmConf conf = Parse("NodeName=a CPUs=8 RealMemory=500 Feature=big Weight=5 Port=7001\n");
  pb::NodeRecord live;
  live.set_name("a");
  live.set_cpus(2);
  live.set_drain(true);
  live.set_reason("maint");
  live.set_alloc_cpus(2);
  live.add_features("small");
  ctld::ApplyNodeConfig(ctld::NodeRecordFromConf(conf.nodes[0], conf), &live);
  EXPECT_EQ(live.cpus(), 8u);
  EXPECT_EQ(live.real_memory_mb(), 500u);
  EXPECT_EQ(live.weight(), 5u);
  EXPECT_EQ(live.port(), 7001u);
  ASSERT_EQ(live.features_size(), 1);
  EXPECT_EQ(live.features(0), "big");
  EXPECT_TRUE(live.drain());
  EXPECT_EQ(live.reason(), "maint");
  EXPECT_EQ(live.alloc_cpus(), 2u);
}

TEST(ReconfigurePlan, PartitionRecordAndParameters) {
  SlurmConf conf = Parse(
      "SlurmctldParameters=idle_on_node_suspend,Enable_Configless\nPreemptMode=REQUEUE\n"
      "NodeName=a\nPartitionName=p Nodes=a Default=YES MaxTime=10 State=DOWN\n");
  pb::PartitionRecord p = ctld::PartitionRecordFromConf(conf.partitions[0], conf);
  EXPECT_EQ(p.name(), "p");
  EXPECT_TRUE(p.is_default());
  EXPECT_EQ(p.max_time(), 10u);
  EXPECT_EQ(p.state(), "DOWN");
  EXPECT_EQ(p.preempt_mode(), "REQUEUE");
  ASSERT_EQ(p.nodes_size(), 1);
  EXPECT_TRUE(ctld::HasCtldParameter(conf, "enable_configless"));
  EXPECT_FALSE(ctld::HasCtldParameter(conf, "shoal_watch_config"));
  EXPECT_FALSE(ctld::HasCtldParameter(conf, "enable"));
}

TEST(ShoaldArgs, ConfiglessOptions) {
  auto o = noded::ParseShoaldArgs({"-D", "--conf-server", "ctl:7000,ctl2", "--key=/k/slurm.key",
                                   "--conf-cache", "/c", "-N", "n1", "--agent-socket=/run/a.sock"});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->agent_socket, "/run/a.sock");
  EXPECT_EQ(o->conf_server, "ctl:7000,ctl2");
  EXPECT_EQ(o->key_file, "/k/slurm.key");
  EXPECT_EQ(o->conf_cache, "/c");
  EXPECT_EQ(o->node_name, "n1");
  EXPECT_TRUE(o->dyn_conf.empty());  // --conf-server is not --conf
  EXPECT_FALSE(noded::ParseShoaldArgs({"--conf-server"}).ok());
  auto dyn = noded::ParseShoaldArgs({"-Z", "--conf", "CPUs=2"});
  ASSERT_TRUE(dyn.ok());
  EXPECT_EQ(dyn->dyn_conf, "CPUs=2");
  EXPECT_TRUE(dyn->conf_server.empty());
}

}  // namespace
}  // namespace shoal
