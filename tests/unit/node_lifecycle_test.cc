// Node lifecycle rendering (reboot, power saving) and oci.conf parsing/patterns.
#include <gtest/gtest.h>

#include "common/states.h"
#include "noded/oci_conf.h"

namespace shoal {
namespace {

pb::NodeRecord Node(pb::NodeBaseState base, bool responding = true) {
  pb::NodeRecord n;
  n.set_name("n1");
  n.set_cpus(4);
  n.set_base_state(base);
  n.set_responding(responding);
  return n;
}

TEST(NodeLifecycleStates, RebootRequested) {
  auto n = Node(pb::NODE_IDLE);
  n.set_reboot_requested(true);
  EXPECT_EQ(NodeStateLong(n), "IDLE+REBOOT_REQUESTED");
  EXPECT_EQ(NodeStateCompact(n), "idle@");
  EXPECT_EQ(NodeStateLongLower(n), "idle@");
  n.set_base_state(pb::NODE_MIXED);
  n.set_alloc_cpus(2);
  n.set_drain(true);  // ASAP
  EXPECT_EQ(NodeStateLong(n), "MIXED+DRAIN+REBOOT_REQUESTED");
  EXPECT_EQ(NodeStateCompact(n), "drng@");
  EXPECT_EQ(NodeStateLongLower(n), "draining@");
}

TEST(NodeLifecycleStates, RebootIssuedIsSilentByDesign) {
  auto n = Node(pb::NODE_DOWN, /*responding=*/false);
  n.set_reboot_issued(true);
  EXPECT_EQ(NodeStateLong(n), "DOWN+REBOOT_ISSUED");
  EXPECT_EQ(NodeStateCompact(n), "boot^");
  EXPECT_EQ(NodeStateLongLower(n), "reboot^");
  n.set_drain(true);
  EXPECT_EQ(NodeStateCompact(n), "drain^");
}

TEST(NodeLifecycleStates, PowerSaving) {
  auto n = Node(pb::NODE_IDLE, /*responding=*/false);
  n.set_powered_down(true);
  EXPECT_EQ(NodeStateLong(n), "IDLE+POWERED_DOWN");
  EXPECT_EQ(NodeStateCompact(n), "idle~");
  n.set_cloud(true);
  EXPECT_EQ(NodeStateLong(n), "IDLE+CLOUD+POWERED_DOWN");
  n.set_powered_down(false);
  n.set_powering_up(true);
  n.set_base_state(pb::NODE_ALLOCATED);
  n.set_alloc_cpus(4);
  EXPECT_EQ(NodeStateLong(n), "ALLOCATED+CLOUD+POWERING_UP");
  EXPECT_EQ(NodeStateCompact(n), "alloc#");
  n = Node(pb::NODE_IDLE);
  n.set_powering_down(true);
  EXPECT_EQ(NodeStateCompact(n), "idle%");
  EXPECT_EQ(NodeStateLong(n), "IDLE+POWERING_DOWN");
}

TEST(NodeLifecycleStates, DrainingThenDrained) {
  auto n = Node(pb::NODE_MIXED);
  n.set_alloc_cpus(1);
  n.set_drain(true);
  EXPECT_EQ(NodeStateCompact(n), "drng");
  EXPECT_EQ(NodeStateLongLower(n), "draining");
  n.set_alloc_cpus(0);
  n.set_base_state(pb::NODE_IDLE);
  EXPECT_EQ(NodeStateCompact(n), "drain");
  EXPECT_EQ(NodeStateLongLower(n), "drained");
  EXPECT_EQ(NodeStateLong(n), "IDLE+DRAIN");
}

TEST(OciConf, ParsesKeysCommentsAndQuotes) {
  auto c = noded::ParseOciConf(
      "# runc, rootless\n"
      "RunTimeQuery=\"runc --rootless=true --root=/run/user/%U/ state %n.%u.%j.%s.%t\"\n"
      "RunTimeKill=runc kill -a %n.%u.%j.%s.%t\n"
      "RunTimeDelete=\"runc delete --force %n.%u.%j.%s.%t\"\n"
      "RunTimeRun=\"runc run %n.%u.%j.%s.%t -b %b\"  # run\n"
      "EnvExclude=\"^(SLURM_CONF|SLURM_CONF_SERVER)=\"\n"
      "CreateEnvFile=newline\nDisableCleanup=true\nIgnoreFileConfigJson=true\n"
      "MountSpoolDir=/var/run/shoal\nDebug=debug\n");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->runtime_run, "runc run %n.%u.%j.%s.%t -b %b");
  EXPECT_EQ(c->runtime_kill, "runc kill -a %n.%u.%j.%s.%t");
  EXPECT_EQ(c->env_exclude, "^(SLURM_CONF|SLURM_CONF_SERVER)=");
  EXPECT_TRUE(c->create_env_file);
  EXPECT_EQ(c->create_env_file_mode, "newline");
  EXPECT_TRUE(c->disable_cleanup);
  EXPECT_TRUE(c->ignore_file_config_json);
  EXPECT_EQ(c->mount_spool_dir, "/var/run/shoal");
}

TEST(OciConf, Errors) {
  auto bad = noded::ParseOciConf("RunTimeRun=x\nBogus=1\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "oci.conf:2: unknown key Bogus");
  EXPECT_FALSE(noded::ParseOciConf("RunTimeRun=x\nRunTimeCreate=y\n").ok());
  EXPECT_FALSE(noded::ParseOciConf("RunTimeQuery=x\n").ok());
  auto ok = noded::ParseOciConf("RunTimeCreate=a %b\nRunTimeStart=b\n");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->mount_spool_dir, "/var/run/slurm/");
}

TEST(OciConf, Patterns) {
  noded::OciPatternContext ctx;
  ctx.argv = {"echo", "it's"};
  ctx.bundle = "/b";
  ctx.env_file = "/b/env";
  ctx.spool_dir = "/s";
  ctx.node_name = "n1";
  ctx.rootfs = "/b/rootfs";
  ctx.user_name = "alice";
  ctx.job_id = 7;
  ctx.step_id = 2;
  ctx.task_id = 3;
  ctx.uid = 1001;
  EXPECT_EQ(noded::ExpandOciPattern("%n.%u.%j.%s.%t -b %b %e %m %r %U 100%% %x", ctx),
            "n1.alice.7.2.3 -b /b /b/env /s /b/rootfs 1001 100% %x");
  EXPECT_EQ(noded::ExpandOciPattern("run %@", ctx), "run 'echo' 'it'\\''s'");
}

TEST(OciConf, GeneratedConfigCarriesTask) {
  noded::OciProcessSpec s;
  s.rootfs = "/b/rootfs";
  s.argv = {"/bin/sh", "-c", "echo \"hi\""};
  s.env = {"A=1"};
  s.uid = 1001;
  s.gid = 1002;
  std::string j = noded::GenerateOciConfig(s);
  EXPECT_NE(j.find("\"args\": [\"/bin/sh\", \"-c\", \"echo \\\"hi\\\"\"]"), std::string::npos);
  EXPECT_NE(j.find("\"hostID\": 1001"), std::string::npos);
  EXPECT_NE(j.find("\"hostID\": 1002"), std::string::npos);
  EXPECT_NE(j.find("\"path\": \"/b/rootfs\""), std::string::npos);
  EXPECT_EQ(j.find("network"), std::string::npos);  // host network
}

}  // namespace
}  // namespace shoal
