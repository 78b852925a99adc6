#include <gtest/gtest.h>

#include <map>

#include "noded/job_env.h"

namespace shoal::noded {
namespace {

std::map<std::string, std::string> AsMap(const std::vector<std::string>& env) {
  std::map<std::string, std::string> m;
  for (const auto& e : env) {
    auto eq = e.find('=');
    EXPECT_NE(eq, std::string::npos) << e;
    EXPECT_EQ(m.count(e.substr(0, eq)), 0u) << "duplicate " << e;
    m[e.substr(0, eq)] = e.substr(eq + 1);
  }
  return m;
}

pb::LaunchBatchRequest Launch() {
  pb::LaunchBatchRequest l;
  pb::JobRecord* job = l.mutable_job();
  job->set_job_id(42);
  job->add_nodes("n1");
  job->add_nodes("n2");
  job->add_nodes("n3");
  job->add_cpus_per_node(4);
  job->add_cpus_per_node(4);
  job->add_cpus_per_node(2);
  job->set_partition("debug");
  job->set_array_task_id(0xfffffffe);
  pb::JobSpec* spec = job->mutable_spec();
  spec->set_name("myjob");
  spec->set_uid(1000);
  spec->set_gid(1000);
  spec->set_user_name("alice");
  spec->set_submit_dir("/home/alice");
  spec->set_submit_host("login1");
  spec->add_environment("PATH=/usr/bin:/bin");
  spec->add_environment("SLURM_JOB_ID=7");  // stale, from an enclosing allocation
  spec->add_environment("FOO=bar=baz");
  spec->add_environment("garbage");
  return l;
}

NodeEnvInfo Info() {
  NodeEnvInfo i;
  i.node_name = "n2";
  i.conf_path = "/etc/slurm/slurm.conf";
  i.task_pid = 4321;
  i.user_name = "alice";
  i.home = "/home/alice";
  i.shell = "/bin/bash";
  return i;
}

TEST(JobEnv, CompressCounts) {
  EXPECT_EQ(CompressCounts({}), "");
  EXPECT_EQ(CompressCounts({4}), "4");
  EXPECT_EQ(CompressCounts({72, 72, 36}), "72(x2),36");
  EXPECT_EQ(CompressCounts({1, 2, 2, 2, 1}), "1,2(x3),1");
}

TEST(JobEnv, JobAndNodeVariables) {
  auto env = AsMap(BuildJobEnvironment(Launch(), Info()));
  EXPECT_EQ(env["PATH"], "/usr/bin:/bin");
  EXPECT_EQ(env["FOO"], "bar=baz");
  EXPECT_EQ(env.count("garbage"), 0u);
  EXPECT_EQ(env["SLURM_JOB_ID"], "42");
  EXPECT_EQ(env["SLURM_JOBID"], "42");
  EXPECT_EQ(env["SLURM_JOB_NAME"], "myjob");
  EXPECT_EQ(env["SLURM_JOB_NODELIST"], "n[1-3]");
  EXPECT_EQ(env["SLURM_NODELIST"], "n[1-3]");
  EXPECT_EQ(env["SLURM_JOB_NUM_NODES"], "3");
  EXPECT_EQ(env["SLURM_NNODES"], "3");
  EXPECT_EQ(env["SLURM_JOB_CPUS_PER_NODE"], "4(x2),2");
  EXPECT_EQ(env["SLURM_JOB_PARTITION"], "debug");
  EXPECT_EQ(env["SLURM_JOB_UID"], "1000");
  EXPECT_EQ(env["SLURM_JOB_USER"], "alice");
  EXPECT_EQ(env["SLURM_SUBMIT_DIR"], "/home/alice");
  EXPECT_EQ(env["SLURM_SUBMIT_HOST"], "login1");
  EXPECT_EQ(env["SLURMD_NODENAME"], "n2");
  EXPECT_EQ(env["SLURM_NODEID"], "1");
  EXPECT_EQ(env["SLURM_CPUS_ON_NODE"], "4");
  EXPECT_EQ(env["SLURM_TASK_PID"], "4321");
  EXPECT_EQ(env["SLURM_PROCID"], "0");
  EXPECT_EQ(env["SLURM_LOCALID"], "0");
  EXPECT_EQ(env["SLURM_GTIDS"], "0");
  EXPECT_EQ(env["SLURM_TOPOLOGY_ADDR"], "n2");
  EXPECT_EQ(env["SLURM_TOPOLOGY_ADDR_PATTERN"], "node");
  EXPECT_EQ(env["SLURM_CONF"], "/etc/slurm/slurm.conf");
  EXPECT_EQ(env["ENVIRONMENT"], "BATCH");
  EXPECT_EQ(env["USER"], "alice");
  EXPECT_EQ(env["LOGNAME"], "alice");
  EXPECT_EQ(env["HOME"], "/home/alice");
  EXPECT_EQ(env["SHELL"], "/bin/bash");
  EXPECT_EQ(env.count("SLURM_ARRAY_JOB_ID"), 0u);
  EXPECT_EQ(env.count("SLURM_NTASKS"), 0u);
}

TEST(JobEnv, SubmittedLoginVariablesWin) {
  pb::LaunchBatchRequest l = Launch();
  l.mutable_job()->mutable_spec()->add_environment("HOME=/scratch/alice");
  l.mutable_job()->mutable_spec()->add_environment("USER=someone");
  auto env = AsMap(BuildJobEnvironment(l, Info()));
  EXPECT_EQ(env["HOME"], "/scratch/alice");
  EXPECT_EQ(env["USER"], "someone");
}

TEST(JobEnv, ControllerExtraEnvOverridesDerivedButNotNodeVariables) {
  pb::LaunchBatchRequest l = Launch();
  l.add_extra_env("SLURM_JOB_NODELIST=n[1-3]");
  l.add_extra_env("SLURM_CLUSTER_NAME=alpha");
  l.add_extra_env("SLURM_JOB_PARTITION=other");
  l.add_extra_env("SLURMD_NODENAME=wrong");
  auto env = AsMap(BuildJobEnvironment(l, Info()));
  EXPECT_EQ(env["SLURM_CLUSTER_NAME"], "alpha");
  EXPECT_EQ(env["SLURM_JOB_PARTITION"], "other");
  EXPECT_EQ(env["SLURMD_NODENAME"], "n2");
}

TEST(JobEnv, ArrayAndOptionalVariables) {
  pb::LaunchBatchRequest l = Launch();
  pb::JobRecord* job = l.mutable_job();
  job->set_array_job_id(40);
  job->set_array_task_id(2);
  job->set_start_time(1000);
  job->set_time_limit(10);
  job->set_restart_count(1);
  pb::JobSpec* spec = job->mutable_spec();
  spec->set_num_tasks(8);
  spec->set_cpus_per_task(2);
  spec->set_mem_per_node_mb(2048);
  spec->set_account("proj");
  NodeEnvInfo info = Info();
  info.cluster_name = "c1";
  auto env = AsMap(BuildJobEnvironment(l, info));
  EXPECT_EQ(env["SLURM_ARRAY_JOB_ID"], "40");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_ID"], "2");
  EXPECT_EQ(env["SLURM_NTASKS"], "8");
  EXPECT_EQ(env["SLURM_NPROCS"], "8");
  EXPECT_EQ(env["SLURM_CPUS_PER_TASK"], "2");
  EXPECT_EQ(env["SLURM_MEM_PER_NODE"], "2048");
  EXPECT_EQ(env["SLURM_JOB_ACCOUNT"], "proj");
  EXPECT_EQ(env["SLURM_RESTART_COUNT"], "1");
  EXPECT_EQ(env["SLURM_JOB_START_TIME"], "1000");
  EXPECT_EQ(env["SLURM_JOB_END_TIME"], "1600");
  EXPECT_EQ(env["SLURM_CLUSTER_NAME"], "c1");
}

TEST(JobEnv, SingleNodeWithoutNodeList) {
  pb::LaunchBatchRequest l;
  l.mutable_job()->set_job_id(5);
  l.mutable_job()->mutable_spec()->set_uid(0);
  NodeEnvInfo info = Info();
  info.node_name = "solo";
  auto env = AsMap(BuildJobEnvironment(l, info));
  EXPECT_EQ(env["SLURM_JOB_NODELIST"], "solo");
  EXPECT_EQ(env["SLURM_NODEID"], "0");
  EXPECT_EQ(env.count("SLURM_CPUS_ON_NODE"), 0u);
}

}  // namespace
}  // namespace shoal::noded
