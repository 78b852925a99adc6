#include "common/slurm_conf.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/units.h"

namespace shoal {
namespace {

using Names = std::vector<std::string>;

// An in-memory file system for Include tests.
struct FakeFs {
  std::map<std::string, std::string> files;
  std::vector<std::string> reads;

  FileReader Reader() {
    return [this](const std::string& path) -> Result<std::string> {
      reads.push_back(path);
      auto it = files.find(path);
      if (it == files.end()) return InvalidArgument("No such file or directory");
      return it->second;
    };
  }
  // Supports a single trailing '*' in the last path component, enough for tests.
  GlobExpander Glob() {
    return [this](const std::string& pattern) {
      std::vector<std::string> out;
      size_t star = pattern.find('*');
      if (star == std::string::npos) return std::vector<std::string>{pattern};
      std::string prefix = pattern.substr(0, star), suffix = pattern.substr(star + 1);
      for (const auto& [path, text] : files) {
        if (path.size() >= prefix.size() + suffix.size() &&
            path.compare(0, prefix.size(), prefix) == 0 &&
            path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0 &&
            path.find('/', prefix.size()) == std::string::npos) {
          out.push_back(path);
        }
      }
      return out;
    };
  }
};

Result<SlurmConf> Parse(const std::string& text, FakeFs* fs = nullptr,
                        const std::string& path = "slurm.conf") {
  FakeFs empty;
  if (fs == nullptr) fs = &empty;
  return ParseSlurmConf(text, path, fs->Reader(), fs->Glob());
}

SlurmConf ParseOk(const std::string& text, FakeFs* fs = nullptr,
                  const std::string& path = "slurm.conf") {
  auto r = Parse(text, fs, path);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? std::move(r).value() : SlurmConf{};
}

std::string ParseErr(const std::string& text, FakeFs* fs = nullptr,
                     const std::string& path = "slurm.conf") {
  auto r = Parse(text, fs, path);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error();
}

Names NodeNames(const SlurmConf& c) {
  Names out;
  for (const auto& n : c.nodes) out.push_back(n.name);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Line syntax

TEST(SplitConfLine, Tokens) {
  auto r = SplitConfLine("NodeName=n1  CPUs=4\tReason=\"two words\" Empty=");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0], (std::pair<std::string, std::string>{"NodeName", "n1"}));
  EXPECT_EQ((*r)[1], (std::pair<std::string, std::string>{"CPUs", "4"}));
  EXPECT_EQ((*r)[2], (std::pair<std::string, std::string>{"Reason", "two words"}));
  EXPECT_EQ((*r)[3], (std::pair<std::string, std::string>{"Empty", ""}));
  // '=' inside a value is kept.
  r = SplitConfLine("AuthInfo=socket=/run/x.sock Reason=\"power,ETA=Dec25\"");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].second, "socket=/run/x.sock");
  EXPECT_EQ((*r)[1].second, "power,ETA=Dec25");
  r = SplitConfLine("");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST(SplitConfLine, Errors) {
  EXPECT_EQ(SplitConfLine("Foo").error(), "expected Key=Value, got 'Foo'");
  EXPECT_EQ(SplitConfLine("A=1 Foo").error(), "expected Key=Value, got 'Foo'");
  EXPECT_EQ(SplitConfLine("=x").error(), "missing key in '=x'");
  EXPECT_EQ(SplitConfLine("Reason=\"abc").error(), "unterminated quote in 'Reason=\"abc'");
}

TEST(SlurmConf, GlobalsCommentsContinuationsAndCase) {
  SlurmConf c = ParseOk(
      "# a comment\n"
      "ClusterName=test   # trailing comment\n"
      "\n"
      "   \t\n"
      "slurmctldport=7002 SlurmdPort=7003\n"
      "StateSaveLocation=\"/var/spool/with space\"\n"
      "SchedulerParameters=a,b,\\\n"
      "c\n"
      "KILLWAIT=10\r\n"
      "Prolog=/bin/prolog\\#1 # real comment\n"
      "Epilog=\"/bin/epi#log\"\n");
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
  EXPECT_EQ(c.ClusterName(), "test");
  EXPECT_EQ(c.ControllerPort(), 7002u);
  EXPECT_EQ(c.SlurmdPort(), 7003u);
  EXPECT_EQ(c.StateSaveLocation(), "/var/spool/with space");
  EXPECT_EQ(c.Get("SchedulerParameters"), "a,b,c");
  EXPECT_EQ(c.KillWait(), 10u);
  EXPECT_EQ(c.Get("prolog"), "/bin/prolog#1");
  EXPECT_EQ(c.Get("Epilog"), "/bin/epi#log");
  // Known keys are stored under their canonical spelling.
  EXPECT_EQ(c.options.count("SlurmctldPort"), 1u);
  EXPECT_EQ(c.options.find("SlurmctldPort")->first, "SlurmctldPort");
  EXPECT_EQ(c.options.find("KillWait")->first, "KillWait");
}

TEST(SlurmConf, LastValueWins) {
  SlurmConf c = ParseOk("KillWait=10\nKillWait=20\n");
  EXPECT_EQ(c.KillWait(), 20u);
}

TEST(SlurmConf, UnknownKeysWarn) {
  SlurmConf c = ParseOk("ClusterName=x\nFooBar=1 KillWait=5\n", nullptr, "/etc/slurm/slurm.conf");
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0], "/etc/slurm/slurm.conf:2: unknown key 'FooBar' ignored");
  EXPECT_EQ(c.Get("FooBar", "unset"), "unset");
  EXPECT_EQ(c.KillWait(), 5u);
}

TEST(SlurmConf, KnownKeyFamiliesAndCommonKeys) {
  SlurmConf c = ParseOk(
      "ControlMachine=ctl\nControlAddr=10.0.0.1\nAuthType=auth/munge\nCredType=cred/munge\n"
      "SchedulerType=sched/backfill\nSelectType=select/cons_tres\n"
      "SelectTypeParameters=CR_Core_Memory\nPriorityType=priority/multifactor\n"
      "PriorityWeightAge=1000\nPriorityWeightFairshare=10\nPriorityWeightSomethingNew=1\n"
      "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/affinity\n"
      "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
      "AccountingStorageHost=db\nReturnToService=2\nMpiDefault=none\nHealthCheckProgram=/x\n"
      "HealthCheckInterval=60\nSlurmctldLogFile=/l\nSlurmdLogFile=/l\nSlurmctldPidFile=/p\n"
      "SlurmdPidFile=/p\nInactiveLimit=0\nWaittime=0\nMaxArraySize=1001\nDefMemPerCPU=100\n"
      "MaxMemPerCPU=200\nGresTypes=gpu\nTopologyPlugin=topology/flat\nPreemptType=preempt/none\n"
      "PreemptMode=OFF\nMessageTimeout=10\nTmpFS=/tmp\nJobCompType=jobcomp/none\n"
      "SlurmdUser=root\nSlurmctldTimeout=120\nAuthInfo=socket=/s\nSlurmdSpoolDir=/spool/%n\n");
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
  EXPECT_EQ(c.Get("waittime"), "0");
  EXPECT_EQ(c.Get("PriorityWeightSomethingNew"), "1");
  EXPECT_EQ(c.SlurmdSpoolDir(), "/spool/%n");
}

TEST(SlurmConf, MalformedLinesNameFileAndLine) {
  EXPECT_EQ(ParseErr("ClusterName=x\n\n# c\nFoo\n"), "slurm.conf:4: expected Key=Value, got 'Foo'");
  EXPECT_EQ(ParseErr("=x\n", nullptr, "/etc/slurm.conf"), "/etc/slurm.conf:1: missing key in '=x'");
  EXPECT_EQ(ParseErr("A=1\nReason=\"x\n"), "slurm.conf:2: unterminated quote in 'Reason=\"x'");
  // A continued line reports the line it started on.
  EXPECT_EQ(ParseErr("A=1\nNodeName=n1 \\\n  CPUs=x\n"), "slurm.conf:2: invalid CPUs value 'x'");
  EXPECT_EQ(ParseErr("ClusterName=x NodeName=n1\n"),
            "slurm.conf:1: NodeName must be the first key on its line");
}

TEST(SlurmConf, Defaults) {
  SlurmConf c = ParseOk("");
  EXPECT_EQ(c.ClusterName(), "cluster");
  EXPECT_EQ(c.ControllerHost(), "localhost");
  EXPECT_EQ(c.ControllerAddr(), "localhost");
  EXPECT_EQ(c.ControllerPort(), 6817u);
  EXPECT_EQ(c.SlurmdPort(), 6818u);
  EXPECT_EQ(c.StateSaveLocation(), "/var/spool/slurmctld");
  EXPECT_EQ(c.SlurmdSpoolDir(), "/var/spool/slurmd");
  EXPECT_EQ(c.SlurmdTimeout(), 300u);
  EXPECT_EQ(c.KillWait(), 30u);
  EXPECT_EQ(c.FirstJobId(), 1u);
  EXPECT_EQ(c.MaxJobCount(), 10000u);
  EXPECT_EQ(c.MinJobAge(), 300u);
  EXPECT_EQ(c.SlurmUser(), "root");
  EXPECT_EQ(c.Get("Nothing", "dflt"), "dflt");
  EXPECT_EQ(c.FindNode("n1"), nullptr);
  EXPECT_EQ(c.DefaultPartition(), nullptr);
  EXPECT_TRUE(c.nodes.empty());
  EXPECT_TRUE(c.partitions.empty());
}

TEST(SlurmConf, TypedAccessors) {
  SlurmConf c = ParseOk(
      "SlurmctldPort=6900-6903\nSlurmdTimeout=60\nFirstJobId=1000\nMaxJobCount=50\n"
      "MinJobAge=5\nSlurmUser=slurm\nKillWait=abc\nMaxArraySize=-5\n");
  EXPECT_EQ(c.ControllerPort(), 6900u);
  EXPECT_EQ(c.SlurmdTimeout(), 60u);
  EXPECT_EQ(c.FirstJobId(), 1000u);
  EXPECT_EQ(c.MaxJobCount(), 50u);
  EXPECT_EQ(c.MinJobAge(), 5u);
  EXPECT_EQ(c.SlurmUser(), "slurm");
  EXPECT_EQ(c.KillWait(), 30u);  // unparsable: default
  EXPECT_EQ(*c.GetInt("MaxArraySize", 1001), -5);
  EXPECT_EQ(*c.GetInt("Missing", 7), 7);
  EXPECT_EQ(*c.GetInt("firstjobid", 7), 1000);
  EXPECT_FALSE(c.GetInt("KillWait", 7).ok());
  EXPECT_EQ(c.GetInt("KillWait", 7).error(), "invalid KillWait value 'abc'");
}

TEST(SlurmConf, ControllerHosts) {
  SlurmConf c = ParseOk("SlurmctldHost=dev0(12.34.56.78)\nSlurmctldHost=dev1(12.34.56.79)\n");
  EXPECT_EQ(c.controller_hosts, (Names{"dev0(12.34.56.78)", "dev1(12.34.56.79)"}));
  EXPECT_EQ(c.ControllerHost(), "dev0");
  EXPECT_EQ(c.ControllerAddr(), "12.34.56.78");

  c = ParseOk("SlurmctldHost=head\n");
  EXPECT_EQ(c.ControllerHost(), "head");
  EXPECT_EQ(c.ControllerAddr(), "head");

  c = ParseOk("ControlMachine=old\nControlAddr=10.1.1.1\n");
  EXPECT_EQ(c.ControllerHost(), "old");
  EXPECT_EQ(c.ControllerAddr(), "10.1.1.1");

  c = ParseOk("ControlMachine=old\n");
  EXPECT_EQ(c.ControllerAddr(), "old");
}

// ---------------------------------------------------------------------------------------------
// Nodes

TEST(SlurmConfNodes, HostlistNamesAndFields) {
  SlurmConf c = ParseOk(
      "NodeName=n[1-3] CPUs=8 RealMemory=16000 TmpDisk=1000 Weight=5 Gres=gpu:2 "
      "Features=a,b State=idle Reason=\"being set up\" CoreSpecCount=1\n"
      "nodename=gpu01 Feature=fast\n");
  ASSERT_EQ(NodeNames(c), (Names{"n1", "n2", "n3", "gpu01"}));
  const NodeConf& n = c.nodes[1];
  EXPECT_EQ(n.addr, "n2");
  EXPECT_EQ(n.hostname, "n2");
  EXPECT_EQ(n.port, 0u);
  EXPECT_EQ(n.cpus, 8u);
  EXPECT_EQ(n.sockets, 8u);
  EXPECT_EQ(n.cores_per_socket, 1u);
  EXPECT_EQ(n.threads_per_core, 1u);
  EXPECT_EQ(n.real_memory_mb, 16000u);
  EXPECT_EQ(n.tmp_disk_mb, 1000u);
  EXPECT_EQ(n.weight, 5u);
  EXPECT_EQ(n.gres, "gpu:2");
  EXPECT_EQ(n.features, (Names{"a", "b"}));
  EXPECT_EQ(n.state, "IDLE");
  EXPECT_EQ(n.reason, "being set up");
  EXPECT_EQ(n.extra.at("corespeccount"), "1");
  const NodeConf& g = c.nodes[3];
  EXPECT_EQ(g.features, (Names{"fast"}));
  EXPECT_EQ(g.cpus, 1u);
  EXPECT_EQ(g.real_memory_mb, 1u);
  EXPECT_EQ(g.weight, 1u);
  EXPECT_EQ(g.state, "UNKNOWN");
  ASSERT_NE(c.FindNode("gpu01"), nullptr);
  EXPECT_EQ(c.FindNode("gpu01")->name, "gpu01");
  EXPECT_EQ(c.FindNode("n4"), nullptr);
}

TEST(SlurmConfNodes, CpusDerivedFromTopology) {
  SlurmConf c = ParseOk(
      "NodeName=a Sockets=2 CoresPerSocket=4 ThreadsPerCore=2\n"
      "NodeName=b Boards=2 SocketsPerBoard=2 CoresPerSocket=3\n"
      "NodeName=c CPUs=16 CoresPerSocket=4\n"
      "NodeName=d\n"
      "NodeName=e CPUs=4 Sockets=1 CoresPerSocket=2 ThreadsPerCore=2\n");
  EXPECT_EQ(c.nodes[0].cpus, 16u);
  EXPECT_EQ(c.nodes[1].sockets, 4u);
  EXPECT_EQ(c.nodes[1].cpus, 12u);
  EXPECT_EQ(c.nodes[1].boards, 2u);
  EXPECT_EQ(c.nodes[2].cpus, 16u);
  EXPECT_EQ(c.nodes[2].sockets, 4u);
  EXPECT_EQ(c.nodes[3].cpus, 1u);
  EXPECT_EQ(c.nodes[3].sockets, 1u);
  EXPECT_EQ(c.nodes[4].cpus, 4u);
}

TEST(SlurmConfNodes, DefaultEntries) {
  SlurmConf c = ParseOk(
      "NodeName=DEFAULT CPUs=2 RealMemory=2000 TmpDisk=64000\n"
      "NodeName=DEFAULT State=UNKNOWN\n"
      "NodeName=dev[0-1] Weight=16\n"
      "NodeName=DEFAULT CPUs=4\n"
      "NodeName=big RealMemory=9000\n");
  ASSERT_EQ(c.nodes.size(), 3u);
  EXPECT_EQ(c.nodes[0].cpus, 2u);
  EXPECT_EQ(c.nodes[0].real_memory_mb, 2000u);
  EXPECT_EQ(c.nodes[0].tmp_disk_mb, 64000u);
  EXPECT_EQ(c.nodes[0].weight, 16u);
  // The later DEFAULT adds to the earlier one rather than resetting it.
  EXPECT_EQ(c.nodes[2].cpus, 4u);
  EXPECT_EQ(c.nodes[2].real_memory_mb, 9000u);
  EXPECT_EQ(c.nodes[2].tmp_disk_mb, 64000u);
  EXPECT_EQ(c.nodes[2].weight, 1u);
}

TEST(SlurmConfNodes, AddrHostnameAndPortPairing) {
  SlurmConf c = ParseOk(
      "NodeName=dev[0-2] NodeAddr=edev[0-2] NodeHostname=host[0-2] Port=[17001-17003]\n"
      "NodeName=x[1-2] NodeHostname=h[1-2] Port=7000\n"
      "NodeName=y[1-2] NodeAddr=localhost,localhost Port=9001-9002\n");
  ASSERT_EQ(c.nodes.size(), 7u);
  EXPECT_EQ(c.nodes[1].addr, "edev1");
  EXPECT_EQ(c.nodes[1].hostname, "host1");
  EXPECT_EQ(c.nodes[1].port, 17002u);
  EXPECT_EQ(c.nodes[2].port, 17003u);
  // NodeAddr defaults to NodeHostname.
  EXPECT_EQ(c.nodes[4].hostname, "h2");
  EXPECT_EQ(c.nodes[4].addr, "h2");
  EXPECT_EQ(c.nodes[3].port, 7000u);
  EXPECT_EQ(c.nodes[4].port, 7000u);
  EXPECT_EQ(c.nodes[5].addr, "localhost");
  EXPECT_EQ(c.nodes[6].addr, "localhost");
  EXPECT_EQ(c.nodes[5].port, 9001u);
  EXPECT_EQ(c.nodes[6].port, 9002u);
}

TEST(SlurmConfNodes, Errors) {
  EXPECT_EQ(ParseErr("NodeName=n1 CPUs=four\n"), "slurm.conf:1: invalid CPUs value 'four'");
  EXPECT_EQ(ParseErr("NodeName=n1 CPUs=-1\n"), "slurm.conf:1: invalid CPUs value '-1'");
  EXPECT_EQ(ParseErr("NodeName=n1 RealMemory=lots\n"),
            "slurm.conf:1: invalid RealMemory value 'lots'");
  EXPECT_EQ(ParseErr("NodeName=DEFAULT Sockets=x\n"), "slurm.conf:1: invalid Sockets value 'x'");
  EXPECT_EQ(ParseErr("NodeName=n[3-1]\n"),
            "slurm.conf:1: invalid hostlist: n[3-1] (descending range)");
  EXPECT_EQ(ParseErr("NodeName=n[1-3\n").rfind("slurm.conf:1: invalid hostlist", 0), 0u);
  EXPECT_EQ(ParseErr("NodeName=n[1-3]\nNodeName=n2\n"), "slurm.conf:2: duplicate node name 'n2'");
  EXPECT_EQ(ParseErr("NodeName=n1,n1\n"), "slurm.conf:1: duplicate node name 'n1'");
  EXPECT_EQ(ParseErr("NodeName=n[1-3] NodeAddr=a[1-2]\n"),
            "slurm.conf:1: NodeAddr count (2) does not match NodeName count (3)");
  EXPECT_EQ(ParseErr("NodeName=n[1-3] Port=[1-2]\n"),
            "slurm.conf:1: Port count (2) does not match NodeName count (3)");
  EXPECT_EQ(ParseErr("NodeName=n1 Port=http\n"), "slurm.conf:1: invalid Port value 'http'");
  EXPECT_EQ(ParseErr("NodeName=n1 Port=70000\n"), "slurm.conf:1: invalid Port value '70000'");
  EXPECT_EQ(ParseErr("NodeName=n1 State=SLEEPY\n"), "slurm.conf:1: invalid node state 'SLEEPY'");
  EXPECT_EQ(ParseErr("NodeName=ALL\n"), "slurm.conf:1: node name 'ALL' is reserved");
  EXPECT_EQ(ParseErr("NodeName=\n").rfind("slurm.conf:1: invalid hostlist", 0), 0u);
}

TEST(SlurmConfNodes, DownNodes) {
  SlurmConf c = ParseOk(
      "NodeName=dev[0-25]\n"
      "DownNodes=dev20 State=DOWN Reason=\"power,ETA=Dec25\"\n"
      "DownNodes=dev[21-22] State=drain\n");
  EXPECT_EQ(c.FindNode("dev20")->state, "DOWN");
  EXPECT_EQ(c.FindNode("dev20")->reason, "power,ETA=Dec25");
  EXPECT_EQ(c.FindNode("dev22")->state, "DRAIN");
  EXPECT_EQ(c.FindNode("dev19")->state, "UNKNOWN");
  EXPECT_EQ(ParseErr("NodeName=a\nDownNodes=b\n"), "slurm.conf:2: DownNodes: unknown node 'b'");
}

TEST(SlurmConfNodes, FindNodeSurvivesEdits) {
  SlurmConf c = ParseOk("NodeName=n[1-3]\n");
  c.nodes.erase(c.nodes.begin());
  ASSERT_NE(c.FindNode("n3"), nullptr);
  EXPECT_EQ(c.FindNode("n3")->name, "n3");
  EXPECT_EQ(c.FindNode("n1"), nullptr);
  c.nodes.push_back(NodeConf{});
  c.nodes.back().name = "added";
  ASSERT_NE(c.FindNode("added"), nullptr);
}

TEST(ParseNodeConf, DynamicNodeKeys) {
  auto r = ParseNodeConf("dyn1", "CPUs=4 RealMemory=2000 Feature=x,y Gres=gpu:1");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->name, "dyn1");
  EXPECT_EQ(r->addr, "dyn1");
  EXPECT_EQ(r->cpus, 4u);
  EXPECT_EQ(r->real_memory_mb, 2000u);
  EXPECT_EQ(r->features, (Names{"x", "y"}));
  EXPECT_EQ(r->gres, "gpu:1");
  EXPECT_EQ(r->state, "UNKNOWN");
  EXPECT_EQ(ParseNodeConf("d", "CPUs=x").error(), "invalid CPUs value 'x'");
  EXPECT_EQ(ParseNodeConf("d", "CPUs").error(), "expected Key=Value, got 'CPUs'");
  r = ParseNodeConf("d", "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cpus, 1u);
}

// ---------------------------------------------------------------------------------------------
// Partitions and NodeSets

TEST(SlurmConfPartitions, Fields) {
  SlurmConf c = ParseOk(
      "NodeName=dev[0-25]\n"
      "PartitionName=DEFAULT MaxTime=30 MaxNodes=10 State=UP\n"
      "PartitionName=debug Nodes=dev[0-8,18-25] Default=YES\n"
      "PartitionName=batch Nodes=dev[9-17]  MinNodes=4 DefaultTime=1:00:00 State=drain "
      "PriorityTier=3 PriorityJobFactor=7 AllowAccounts=a,b DenyAccounts=c AllowGroups=admin "
      "AllowQos=normal OverSubscribe=force:4 Hidden=YES RootOnly=yes DefMemPerCPU=1G "
      "MaxMemPerCPU=4096 GraceTime=30\n"
      "PartitionName=long Nodes=ALL MaxTime=UNLIMITED MaxNodes=INFINITE\n");
  ASSERT_EQ(c.partitions.size(), 3u);
  const PartitionConf& debug = c.partitions[0];
  EXPECT_EQ(debug.name, "debug");
  EXPECT_TRUE(debug.is_default);
  EXPECT_EQ(debug.nodes_expr, "dev[0-8,18-25]");
  EXPECT_EQ(debug.nodes.size(), 17u);
  EXPECT_EQ(debug.nodes.front(), "dev0");
  EXPECT_EQ(debug.nodes.back(), "dev25");
  EXPECT_EQ(debug.max_time, 30u);
  EXPECT_EQ(debug.max_nodes, 10u);
  EXPECT_EQ(debug.default_time, kTimeNoVal);
  EXPECT_EQ(debug.state, "UP");
  EXPECT_EQ(debug.allow_accounts, "ALL");
  EXPECT_EQ(debug.over_subscribe, "NO");

  const PartitionConf& batch = c.partitions[1];
  EXPECT_FALSE(batch.is_default);
  EXPECT_EQ(batch.nodes.size(), 9u);
  EXPECT_EQ(batch.min_nodes, 4u);
  EXPECT_EQ(batch.max_time, 30u);
  EXPECT_EQ(batch.default_time, 60u);
  EXPECT_EQ(batch.state, "DRAIN");
  EXPECT_EQ(batch.priority_tier, 3u);
  EXPECT_EQ(batch.priority_job_factor, 7u);
  EXPECT_EQ(batch.allow_accounts, "a,b");
  EXPECT_EQ(batch.deny_accounts, "c");
  EXPECT_EQ(batch.allow_groups, "admin");
  EXPECT_EQ(batch.allow_qos, "normal");
  EXPECT_EQ(batch.over_subscribe, "FORCE:4");
  EXPECT_TRUE(batch.hidden);
  EXPECT_TRUE(batch.root_only);
  EXPECT_EQ(batch.def_mem_per_cpu_mb, 1024u);
  EXPECT_EQ(batch.max_mem_per_cpu_mb, 4096u);
  EXPECT_EQ(batch.grace_time_s, 30u);

  const PartitionConf& lng = c.partitions[2];
  EXPECT_EQ(lng.nodes.size(), 26u);
  EXPECT_EQ(lng.max_time, kTimeInfinite);
  EXPECT_EQ(lng.max_nodes, 0xffffffffu);
  EXPECT_EQ(c.DefaultPartition(), &c.partitions[0]);
}

TEST(SlurmConfPartitions, NodesFollowNodeTableOrderAndDedupe) {
  SlurmConf c = ParseOk(
      "NodeName=b1,a1,c1\n"
      "PartitionName=p Nodes=c1,a1,b1,a1\n");
  EXPECT_EQ(c.partitions[0].nodes, (Names{"b1", "a1", "c1"}));
}

TEST(SlurmConfPartitions, NodesMayBeDefinedLater) {
  SlurmConf c = ParseOk("PartitionName=p Nodes=n[1-2]\nNodeName=n[1-2]\n");
  EXPECT_EQ(c.partitions[0].nodes, (Names{"n1", "n2"}));
}

TEST(SlurmConfPartitions, LastDefaultWins) {
  SlurmConf c = ParseOk(
      "NodeName=n1\nPartitionName=a Nodes=n1 Default=YES\nPartitionName=b Nodes=n1 Default=YES\n"
      "PartitionName=c Nodes=n1 Default=NO\n");
  ASSERT_NE(c.DefaultPartition(), nullptr);
  EXPECT_EQ(c.DefaultPartition()->name, "b");
  EXPECT_FALSE(c.partitions[0].is_default);
}

TEST(SlurmConfPartitions, EmptyPartition) {
  SlurmConf c = ParseOk("PartitionName=empty\n");
  ASSERT_EQ(c.partitions.size(), 1u);
  EXPECT_TRUE(c.partitions[0].nodes.empty());
}

TEST(SlurmConfPartitions, Errors) {
  EXPECT_EQ(ParseErr("NodeName=n[1-2]\nPartitionName=p Nodes=n[1-3]\n"),
            "slurm.conf:2: partition p: unknown node 'n3'");
  EXPECT_EQ(ParseErr("PartitionName=p MaxTime=forever\n"),
            "slurm.conf:1: invalid MaxTime value 'forever'");
  EXPECT_EQ(ParseErr("PartitionName=p DefaultTime=1:2:3:4\n"),
            "slurm.conf:1: invalid DefaultTime value '1:2:3:4'");
  EXPECT_EQ(ParseErr("PartitionName=p State=SIDEWAYS\n"),
            "slurm.conf:1: invalid partition state 'SIDEWAYS'");
  EXPECT_EQ(ParseErr("PartitionName=p Default=maybe\n"),
            "slurm.conf:1: invalid Default value 'maybe'");
  EXPECT_EQ(ParseErr("PartitionName=p MinNodes=x\n"), "slurm.conf:1: invalid MinNodes value 'x'");
  EXPECT_EQ(ParseErr("PartitionName=p OverSubscribe=sometimes\n"),
            "slurm.conf:1: invalid OverSubscribe value 'sometimes'");
  EXPECT_EQ(ParseErr("PartitionName=p\nPartitionName=p\n"),
            "slurm.conf:2: duplicate partition name 'p'");
  EXPECT_EQ(ParseErr("NodeName=n1\nPartitionName=p Nodes=n[2-1]\n"),
            "slurm.conf:2: partition p: invalid hostlist: n[2-1] (descending range)");
}

TEST(SlurmConfPartitions, NodeSets) {
  SlurmConf c = ParseOk(
      "NodeName=n[1-4] Features=cpu\n"
      "NodeName=g[1-2] Features=gpu,fast\n"
      "NodeSet=gpus Feature=gpu\n"
      "NodeSet=some Nodes=n[1-2]\n"
      "NodeSet=mixed Nodes=n4,some Feature=fast\n"
      "PartitionName=gpu Nodes=gpus\n"
      "PartitionName=mix Nodes=some,g1\n"
      "PartitionName=m2 Nodes=mixed\n");
  ASSERT_EQ(c.nodesets.size(), 3u);
  EXPECT_EQ(c.nodesets[0].nodes, (Names{"g1", "g2"}));
  EXPECT_EQ(c.nodesets[2].nodes, (Names{"n1", "n2", "n4", "g1", "g2"}));
  EXPECT_EQ(c.partitions[0].nodes, (Names{"g1", "g2"}));
  EXPECT_EQ(c.partitions[1].nodes, (Names{"n1", "n2", "g1"}));
  EXPECT_EQ(c.partitions[2].nodes, (Names{"n1", "n2", "n4", "g1", "g2"}));

  EXPECT_EQ(ParseErr("NodeName=n1\nNodeSet=n1 Nodes=n1\n"),
            "slurm.conf:2: NodeSet 'n1' clashes with a node name");
  EXPECT_EQ(ParseErr("NodeName=n1\nNodeSet=s Nodes=n2\n"),
            "slurm.conf:2: nodeset s: unknown node 'n2'");
  EXPECT_EQ(ParseErr("NodeName=n1\nNodeSet=s Nodes=s\n"),
            "slurm.conf:2: nodeset s: unknown node 's'");
}

// ---------------------------------------------------------------------------------------------
// Include

TEST(SlurmConfInclude, RelativeToIncludingFile) {
  FakeFs fs;
  fs.files["/etc/slurm/nodes.conf"] = "NodeName=n[1-2] CPUs=4\n";
  fs.files["/etc/slurm/parts/p.conf"] =
      "PartitionName=p Nodes=ALL Default=YES\nInclude more.conf\n";
  fs.files["/etc/slurm/parts/more.conf"] = "KillWait=9\n";
  SlurmConf c = ParseOk(
      "ClusterName=c\n"
      "Include nodes.conf\n"
      "include /etc/slurm/parts/p.conf\n",
      &fs, "/etc/slurm/slurm.conf");
  EXPECT_EQ(NodeNames(c), (Names{"n1", "n2"}));
  ASSERT_NE(c.DefaultPartition(), nullptr);
  EXPECT_EQ(c.DefaultPartition()->nodes.size(), 2u);
  EXPECT_EQ(c.KillWait(), 9u);
  EXPECT_EQ(fs.reads, (Names{"/etc/slurm/nodes.conf", "/etc/slurm/parts/p.conf",
                             "/etc/slurm/parts/more.conf"}));
}

TEST(SlurmConfInclude, GlobQuotesAndClusterName) {
  FakeFs fs;
  fs.files["/c/conf.d/a.conf"] = "NodeName=a1\n";
  fs.files["/c/conf.d/b.conf"] = "NodeName=b1\n";
  fs.files["/c/conf.d/b.txt"] = "Garbage\n";
  fs.files["/c/linux_extra"] = "MinJobAge=7\n";
  SlurmConf c = ParseOk(
      "ClusterName=linux\n"
      "Include \"conf.d/*.conf\"\n"
      "Include %c_extra\n"
      "Include conf.d/none*.conf\n",  // no match: nothing included
      &fs, "/c/slurm.conf");
  EXPECT_EQ(NodeNames(c), (Names{"a1", "b1"}));
  EXPECT_EQ(c.MinJobAge(), 7u);
}

TEST(SlurmConfInclude, ErrorsNameTheIncludedFile) {
  FakeFs fs;
  fs.files["/c/nodes.conf"] = "# nodes\nNodeName=n1 CPUs=bad\n";
  EXPECT_EQ(ParseErr("Include nodes.conf\n", &fs, "/c/slurm.conf"),
            "/c/nodes.conf:2: invalid CPUs value 'bad'");
  fs.files["/c/dup.conf"] = "NodeName=n1\n";
  EXPECT_EQ(ParseErr("NodeName=n1\nInclude dup.conf\n", &fs, "/c/slurm.conf"),
            "/c/dup.conf:1: duplicate node name 'n1'");
  EXPECT_EQ(
      ParseErr("\nInclude missing.conf\n", &fs, "/c/slurm.conf"),
      "/c/slurm.conf:2: Include: could not read '/c/missing.conf': No such file or directory");
  fs.files["/c/warn.conf"] = "Bogus=1\n";
  SlurmConf c = ParseOk("Include warn.conf\n", &fs, "/c/slurm.conf");
  EXPECT_EQ(c.warnings, (Names{"/c/warn.conf:1: unknown key 'Bogus' ignored"}));
}

TEST(SlurmConfInclude, RecursionIsBounded) {
  FakeFs fs;
  fs.files["/c/loop.conf"] = "Include loop.conf\n";
  std::string err = ParseErr("Include loop.conf\n", &fs, "/c/slurm.conf");
  EXPECT_EQ(err, "/c/loop.conf:1: Include nesting too deep");
}

// ---------------------------------------------------------------------------------------------
// Disk and environment

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/slurm_conf_test.XXXXXX";
    char* d = mkdtemp(tmpl);
    if (d != nullptr) path_ = d;
  }
  ~TempDir() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ + "/" + name) << text;
  }

 private:
  std::string path_;
};

TEST(LoadSlurmConf, ReadsFilesAndGlobs) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  ASSERT_EQ(mkdir((dir.path() + "/conf.d").c_str(), 0755), 0);
  dir.Write("slurm.conf", "ClusterName=disk\nInclude conf.d/*.conf\nPartitionName=p Nodes=ALL\n");
  dir.Write("conf.d/2.conf", "NodeName=n2\n");
  dir.Write("conf.d/1.conf", "NodeName=n1\n");
  auto r = LoadSlurmConf(dir.path() + "/slurm.conf");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->ClusterName(), "disk");
  EXPECT_EQ(NodeNames(*r), (Names{"n1", "n2"}));
  EXPECT_EQ(r->partitions[0].nodes, (Names{"n1", "n2"}));

  auto missing = LoadSlurmConf(dir.path() + "/nope.conf");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("No such file or directory"), std::string::npos);
  EXPECT_EQ(ReadFileToString(dir.path()).ok(), false);
  EXPECT_EQ(GlobPaths("/plain/path"), (Names{"/plain/path"}));
  EXPECT_TRUE(GlobPaths(dir.path() + "/none*.conf").empty());
}

TEST(DefaultSlurmConfPath, Env) {
  const char* old = std::getenv("SLURM_CONF");
  std::string saved = old ? old : "";
  setenv("SLURM_CONF", "/tmp/x/slurm.conf", 1);
  EXPECT_EQ(DefaultSlurmConfPath(), "/tmp/x/slurm.conf");
  unsetenv("SLURM_CONF");
  EXPECT_EQ(DefaultSlurmConfPath(), "/etc/slurm/slurm.conf");
  setenv("SLURM_CONF", "", 1);
  EXPECT_EQ(DefaultSlurmConfPath(), "/etc/slurm/slurm.conf");
  if (old) {
    setenv("SLURM_CONF", saved.c_str(), 1);
  } else {
    unsetenv("SLURM_CONF");
  }
}

// ---------------------------------------------------------------------------------------------
// A realistic file, and scale

TEST(SlurmConf, ManPageExample) {
  SlurmConf c = ParseOk(R"(#
# Sample /etc/slurm.conf for dev[0-25].llnl.gov
#
SlurmctldHost=dev0(12.34.56.78)  # Primary server
SlurmctldHost=dev1(12.34.56.79)  # Backup server
#
AuthType=auth/munge
Epilog=/usr/local/slurm/epilog
Prolog=/usr/local/slurm/prolog
FirstJobId=65536
InactiveLimit=120
JobCompType=jobcomp/filetxt
JobCompLoc=/var/log/slurm/jobcomp
KillWait=30
MaxJobCount=10000
MinJobAge=3600
PluginDir=/usr/local/lib:/usr/local/slurm/lib
ReturnToService=0
SchedulerType=sched/backfill
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldPort=7002
SlurmdPort=7003
SlurmdSpoolDir=/var/spool/slurmd.spool
StateSaveLocation=/var/spool/slurm.state
SwitchType=switch/none
TmpFS=/tmp
WaitTime=30
#
# Node Configurations
#
NodeName=DEFAULT CPUs=2 RealMemory=2000 TmpDisk=64000
NodeName=DEFAULT State=UNKNOWN
NodeName=dev[0-25] NodeAddr=edev[0-25] Weight=16
# Update records for specific DOWN nodes
DownNodes=dev20 State=DOWN Reason="power,ETA=Dec25"
#
# Partition Configurations
#
PartitionName=DEFAULT MaxTime=30 MaxNodes=10 State=UP
PartitionName=debug Nodes=dev[0-8,18-25] Default=YES
PartitionName=batch Nodes=dev[9-17]  MinNodes=4
PartitionName=long Nodes=dev[9-17] MaxTime=120 AllowGroups=admin
)");
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
  EXPECT_EQ(c.ControllerHost(), "dev0");
  EXPECT_EQ(c.ControllerAddr(), "12.34.56.78");
  EXPECT_EQ(c.ControllerPort(), 7002u);
  EXPECT_EQ(c.FirstJobId(), 65536u);
  EXPECT_EQ(c.MinJobAge(), 3600u);
  EXPECT_EQ(c.nodes.size(), 26u);
  EXPECT_EQ(c.FindNode("dev5")->addr, "edev5");
  EXPECT_EQ(c.FindNode("dev20")->state, "DOWN");
  EXPECT_EQ(c.DefaultPartition()->name, "debug");
  EXPECT_EQ(c.partitions[2].max_time, 120u);
  EXPECT_EQ(c.partitions[2].max_nodes, 10u);
}

TEST(SlurmConf, LargeClusterParsesQuickly) {
  std::string text = "ClusterName=big\nSlurmctldHost=head\n";
  for (int rack = 0; rack < 100; ++rack) {
    text += "NodeName=r" + std::to_string(rack) +
            "n[0001-1000] CPUs=64 RealMemory=256000 "
            "Features=rack" +
            std::to_string(rack) + " Gres=gpu:4\n";
  }
  text += "PartitionName=all Nodes=ALL Default=YES MaxTime=1-00:00:00\n";
  text += "PartitionName=first Nodes=r0n[0001-1000],r1n[0001-1000]\n";
  auto start = std::chrono::steady_clock::now();
  SlurmConf c = ParseOk(text);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(c.nodes.size(), 100000u);
  EXPECT_EQ(c.partitions[0].nodes.size(), 100000u);
  EXPECT_EQ(c.partitions[1].nodes.size(), 2000u);
  EXPECT_EQ(c.FindNode("r99n1000")->features, (Names{"rack99"}));
  // Generous bound (sanitizer builds are slow); the point is "linear", not a benchmark.
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), 5000);
}

}  // namespace
}  // namespace shoal
