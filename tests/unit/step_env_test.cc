// The task environment of a step, checked against what Slurm 22.05 gave the same step
// (docs/notes/slurm-steps-observed.md).
#include "noded/step_env.h"

#include <gtest/gtest.h>

#include <map>

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

std::vector<std::string> Keys(const std::vector<std::string>& env) {
  std::vector<std::string> keys;
  for (const auto& e : env) keys.push_back(e.substr(0, e.find('=')));
  return keys;
}

size_t Pos(const std::vector<std::string>& env, const std::string& key) {
  auto keys = Keys(env);
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return i;
  return std::string::npos;
}

// `srun -N2 -n3 env` outside an allocation: job 1 = step 1.0 on n[1-2], tasks 2,1; the job's
// CPUs 2 on n1 and 1 on n2 (CR_Core, one CPU per task).
pb::LaunchTasksRequest StandaloneLaunch(uint32_t node_id) {
  pb::LaunchTasksRequest l;
  pb::StepRecord* s = l.mutable_step();
  s->set_job_id(1);
  s->set_step_id(0);
  s->set_name("env");
  s->set_uid(0);
  s->add_nodes("n1");
  s->add_nodes("n2");
  s->add_tasks_per_node(2);
  s->add_tasks_per_node(1);
  s->add_cpus_per_node(2);
  s->add_cpus_per_node(1);
  s->set_num_tasks(3);
  s->set_cpus_per_task(1);
  s->set_partition("debug");
  s->set_mpi("none");
  pb::StepCredential cred;
  cred.set_job_id(1);
  cred.set_step_id(0);
  cred.set_uid(0);
  cred.set_gid(0);
  cred.set_user_name("root");
  cred.add_nodes("n1");
  cred.add_nodes("n2");
  cred.add_cpus_per_node(2);
  cred.add_cpus_per_node(1);
  l.mutable_cred()->set_body(cred.SerializeAsString());
  l.set_node_id(node_id);
  if (node_id == 0) {
    l.add_global_task_ids(0);
    l.add_global_task_ids(1);
  } else {
    l.add_global_task_ids(2);
  }
  // What srun itself exports (it knows the job it just allocated).
  for (const char* e :
       {"HOME=/root", "PATH=/usr/bin:/bin", "SHELL=/bin/bash", "SLURM_PRIO_PROCESS=0",
        "SRUN_DEBUG=3", "SLURM_UMASK=0022", "SLURM_SUBMIT_DIR=/tmp/w", "SLURM_SUBMIT_HOST=vm",
        "SLURM_JOB_NAME=env", "SLURM_JOB_CPUS_PER_NODE=2,1", "SLURM_JOB_NUM_NODES=2",
        "SLURM_NODELIST=n[1-2]", "SLURM_JOB_PARTITION=debug", "SLURM_JOB_NODELIST=n[1-2]",
        "SLURM_WORKING_CLUSTER=bench:127.0.0.1:25499:9728:109"})
    l.add_environment(e);
  l.set_io_address("127.0.0.1:43297");
  l.set_user_name("root");
  l.set_gid(0);
  return l;
}

TaskEnvInfo StandaloneInfo(uint32_t node_id, uint32_t gtid, uint32_t ltid) {
  TaskEnvInfo i;
  i.node_name = node_id == 0 ? "n1" : "n2";
  i.conf_path = "/tmp/c/etc/slurm.conf";
  i.cluster_name = "bench";
  i.global_task_id = gtid;
  i.local_task_id = ltid;
  i.cpus_on_node = node_id == 0 ? 2 : 1;
  i.task_pid = 19370;
  i.user_name = "root";
  i.home = "/root";
  i.shell = "/bin/bash";
  i.srun_host = "127.0.0.1";
  i.srun_port = 43297;
  return i;
}

TEST(StepEnv, MatchesSlurmForTaskTwoOfStandaloneSrun) {
  auto env = BuildTaskEnvironment(StandaloneLaunch(1), StandaloneInfo(1, 2, 0));
  auto m = AsMap(env);
  // Exactly Slurm's values for task 2 of `srun -N2 -n3` (the SLURM* variables it had).
  std::map<std::string, std::string> want = {
      {"SLURMD_NODENAME", "n2"},
      {"SLURM_CLUSTER_NAME", "bench"},
      {"SLURM_CONF", "/tmp/c/etc/slurm.conf"},
      {"SLURM_CPUS_ON_NODE", "1"},
      {"SLURM_GTIDS", "2"},
      {"SLURM_JOBID", "1"},
      {"SLURM_JOB_CPUS_PER_NODE", "2,1"},
      {"SLURM_JOB_GID", "0"},
      {"SLURM_JOB_ID", "1"},
      {"SLURM_JOB_NAME", "env"},
      {"SLURM_JOB_NODELIST", "n[1-2]"},
      {"SLURM_JOB_NUM_NODES", "2"},
      {"SLURM_JOB_PARTITION", "debug"},
      {"SLURM_JOB_UID", "0"},
      {"SLURM_JOB_USER", "root"},
      {"SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1"},
      {"SLURM_LOCALID", "0"},
      {"SLURM_NNODES", "2"},
      {"SLURM_NODEID", "1"},
      {"SLURM_NODELIST", "n[1-2]"},
      {"SLURM_NPROCS", "3"},
      {"SLURM_NTASKS", "3"},
      {"SLURM_PRIO_PROCESS", "0"},
      {"SLURM_PROCID", "2"},
      {"SLURM_SRUN_COMM_HOST", "127.0.0.1"},
      {"SLURM_SRUN_COMM_PORT", "43297"},
      {"SLURM_STEPID", "0"},
      {"SLURM_STEP_ID", "0"},
      {"SLURM_STEP_LAUNCHER_PORT", "43297"},
      {"SLURM_STEP_NODELIST", "n[1-2]"},
      {"SLURM_STEP_NUM_NODES", "2"},
      {"SLURM_STEP_NUM_TASKS", "3"},
      {"SLURM_STEP_TASKS_PER_NODE", "2,1"},
      {"SLURM_SUBMIT_DIR", "/tmp/w"},
      {"SLURM_SUBMIT_HOST", "vm"},
      {"SLURM_TASKS_PER_NODE", "2,1"},
      {"SLURM_TASK_PID", "19370"},
      {"SLURM_TOPOLOGY_ADDR", "n2"},
      {"SLURM_TOPOLOGY_ADDR_PATTERN", "node"},
      {"SLURM_UMASK", "0022"},
      {"SLURM_WORKING_CLUSTER", "bench:127.0.0.1:25499:9728:109"},
  };
  std::map<std::string, std::string> got;
  for (const auto& [k, v] : m)
    if (k.rfind("SLURM", 0) == 0) got[k] = v;
  EXPECT_EQ(got, want);
  EXPECT_EQ(m["TMPDIR"], "/tmp");
  EXPECT_EQ(m.count("SLURM_DISTRIBUTION"), 0u);   // not for a standalone srun without -m
  EXPECT_EQ(m.count("SLURM_CPUS_PER_TASK"), 0u);  // only with -c
  EXPECT_EQ(m.count("SLURM_MPI_TYPE"), 0u);       // --mpi=none
  EXPECT_EQ(m.count("SLURM_CPU_BIND"), 0u);
}

TEST(StepEnv, PerTaskValuesOnTheFirstNode) {
  auto m = AsMap(BuildTaskEnvironment(StandaloneLaunch(0), StandaloneInfo(0, 1, 1)));
  EXPECT_EQ(m["SLURMD_NODENAME"], "n1");
  EXPECT_EQ(m["SLURM_TOPOLOGY_ADDR"], "n1");
  EXPECT_EQ(m["SLURM_CPUS_ON_NODE"], "2");
  EXPECT_EQ(m["SLURM_GTIDS"], "0,1");
  EXPECT_EQ(m["SLURM_NODEID"], "0");
  EXPECT_EQ(m["SLURM_PROCID"], "1");
  EXPECT_EQ(m["SLURM_LOCALID"], "1");
}

TEST(StepEnv, OrderFollowsSlurm) {
  auto env = BuildTaskEnvironment(StandaloneLaunch(0), StandaloneInfo(0, 0, 0));
  // srun's own variables first, in their order; then the step's; then the node's and task's.
  EXPECT_EQ(env[0], "HOME=/root");
  EXPECT_LT(Pos(env, "SLURM_UMASK"), Pos(env, "SLURM_NTASKS"));
  EXPECT_LT(Pos(env, "SLURM_NTASKS"), Pos(env, "SLURM_STEP_ID"));
  EXPECT_LT(Pos(env, "SLURM_STEP_ID"), Pos(env, "SLURM_STEP_NODELIST"));
  EXPECT_LT(Pos(env, "SLURM_STEP_NODELIST"), Pos(env, "SLURM_SRUN_COMM_HOST"));
  EXPECT_LT(Pos(env, "SLURM_SRUN_COMM_HOST"), Pos(env, "SLURM_TOPOLOGY_ADDR"));
  EXPECT_LT(Pos(env, "SLURM_TOPOLOGY_ADDR"), Pos(env, "SLURM_PROCID"));
  EXPECT_LT(Pos(env, "SLURM_PROCID"), Pos(env, "SLURMD_NODENAME"));
  EXPECT_LT(Pos(env, "SLURMD_NODENAME"), Pos(env, "TMPDIR"));
}

// `sbatch -N2 -n4` (n[1-2], 2 CPUs each) running `srun -N1 -n1 -w n2 env`: the step-level
// variables change, the job's stay, stale per-task values of the batch script are replaced in
// place.
TEST(StepEnv, StepOnPartOfTheAllocation) {
  pb::LaunchTasksRequest l;
  pb::StepRecord* s = l.mutable_step();
  s->set_job_id(136);
  s->set_step_id(0);
  s->set_name("env");
  s->add_nodes("n2");
  s->add_tasks_per_node(1);
  s->add_cpus_per_node(2);
  s->set_num_tasks(1);
  s->set_cpus_per_task(1);
  pb::StepCredential cred;
  cred.set_job_id(136);
  cred.set_uid(1000);
  cred.set_gid(1000);
  cred.set_user_name("alice");
  cred.add_nodes("n2");
  cred.add_cpus_per_node(2);
  l.mutable_cred()->set_body(cred.SerializeAsString());
  l.set_node_id(0);
  l.add_global_task_ids(0);
  for (const char* e : {"SLURM_JOB_USER=alice",
                        "SLURM_TASKS_PER_NODE=2(x2)",
                        "SLURM_JOB_UID=1000",
                        "SLURM_TASK_PID=22162",
                        "SLURM_LOCALID=0",
                        "SLURMD_NODENAME=n1",
                        "SLURM_CPUS_ON_NODE=2",
                        "SLURM_JOB_CPUS_PER_NODE=2(x2)",
                        "SLURM_GTIDS=0",
                        "SLURM_JOB_NUM_NODES=2",
                        "SLURM_JOBID=136",
                        "SLURM_PROCID=0",
                        "SLURM_NTASKS=4",
                        "SLURM_NODELIST=n[1-2]",
                        "SLURM_NPROCS=4",
                        "SLURM_NNODES=2",
                        "SLURM_JOB_ID=136",
                        "SLURM_NODEID=0",
                        "SLURM_JOB_NAME=subset.sh",
                        "SLURM_JOB_NODELIST=n[1-2]",
                        "SLURM_DISTRIBUTION=cyclic",
                        "SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0=2(x2)",
                        "garbage",
                        "=nokey"})
    l.add_environment(e);
  l.set_io_address("10.0.0.5:40001");
  TaskEnvInfo info;
  info.node_name = "n2";
  info.cpus_on_node = 2;
  info.task_pid = 99;
  auto env = BuildTaskEnvironment(l, info);
  auto m = AsMap(env);
  EXPECT_EQ(m["SLURM_TASKS_PER_NODE"], "1");
  EXPECT_EQ(m["SLURMD_NODENAME"], "n2");
  EXPECT_EQ(m["SLURM_CPUS_ON_NODE"], "2");  // the job's, not the step's 1
  EXPECT_EQ(m["SLURM_JOB_CPUS_PER_NODE"], "2(x2)");
  EXPECT_EQ(m["SLURM_JOB_NUM_NODES"], "2");
  EXPECT_EQ(m["SLURM_NTASKS"], "1");
  EXPECT_EQ(m["SLURM_NODELIST"], "n[1-2]");  // stays the job's
  EXPECT_EQ(m["SLURM_NPROCS"], "1");
  EXPECT_EQ(m["SLURM_NNODES"], "1");
  EXPECT_EQ(m["SLURM_NODEID"], "0");
  EXPECT_EQ(m["SLURM_JOB_NODELIST"], "n[1-2]");
  EXPECT_EQ(m["SLURM_JOB_NAME"], "subset.sh");
  EXPECT_EQ(m["SLURM_DISTRIBUTION"], "cyclic");
  EXPECT_EQ(m["SLURM_STEP_NODELIST"], "n2");
  EXPECT_EQ(m["SLURM_STEP_NUM_NODES"], "1");
  EXPECT_EQ(m["SLURM_STEP_TASKS_PER_NODE"], "1");
  EXPECT_EQ(m["SLURM_TASK_PID"], "99");
  EXPECT_EQ(m["SLURM_GTIDS"], "0");
  EXPECT_EQ(m["SLURM_JOB_UID"], "1000");
  EXPECT_EQ(m["SLURM_JOB_GID"], "1000");
  EXPECT_EQ(m["SLURM_JOB_USER"], "alice");
  // From io_address when the supervisor gave no srun address.
  EXPECT_EQ(m["SLURM_SRUN_COMM_HOST"], "10.0.0.5");
  EXPECT_EQ(m["SLURM_LAUNCH_NODE_IPADDR"], "10.0.0.5");
  EXPECT_EQ(m["SLURM_SRUN_COMM_PORT"], "40001");
  EXPECT_EQ(m["SLURM_STEP_LAUNCHER_PORT"], "40001");
  EXPECT_EQ(m.count("garbage"), 0u);
  // Overridden in place: the batch script's order is kept.
  EXPECT_EQ(env[0], "SLURM_JOB_USER=alice");
  EXPECT_EQ(env[1], "SLURM_TASKS_PER_NODE=1");
  EXPECT_EQ(env[3], "SLURM_TASK_PID=99");
  EXPECT_EQ(env[5], "SLURMD_NODENAME=n2");
  // No login variables invented without a user name/home/shell to give.
  EXPECT_EQ(m.count("HOME"), 0u);
}

TEST(StepEnv, LoginVariablesOnlyWhenMissing) {
  pb::LaunchTasksRequest l = StandaloneLaunch(0);
  l.clear_environment();  // --export=NONE
  TaskEnvInfo info = StandaloneInfo(0, 0, 0);
  info.user_name = "alice";
  info.home = "/home/alice";
  info.shell = "/bin/zsh";
  l.set_user_name("");
  auto m = AsMap(BuildTaskEnvironment(l, info));
  EXPECT_EQ(m["USER"], "root");  // the credential's user comes before info.user_name
  EXPECT_EQ(m["LOGNAME"], "root");
  EXPECT_EQ(m["HOME"], "/home/alice");
  EXPECT_EQ(m["SHELL"], "/bin/zsh");
  // Filled from the step when srun sent nothing.
  EXPECT_EQ(m["SLURM_JOB_NODELIST"], "n[1-2]");
  EXPECT_EQ(m["SLURM_NODELIST"], "n[1-2]");
  EXPECT_EQ(m["SLURM_JOB_NUM_NODES"], "2");
  EXPECT_EQ(m["SLURM_JOB_CPUS_PER_NODE"], "2,1");
  EXPECT_EQ(m["SLURM_JOB_PARTITION"], "debug");
  EXPECT_EQ(m["SLURM_JOB_NAME"], "env");

  l = StandaloneLaunch(0);  // HOME=/root and SHELL=/bin/bash given: kept
  m = AsMap(BuildTaskEnvironment(l, info));
  EXPECT_EQ(m["HOME"], "/root");
  EXPECT_EQ(m["SHELL"], "/bin/bash");
}

TEST(StepEnv, TmpdirKeptWhenSet) {
  pb::LaunchTasksRequest l = StandaloneLaunch(0);
  l.add_environment("TMPDIR=/scratch");
  auto m = AsMap(BuildTaskEnvironment(l, StandaloneInfo(0, 0, 0)));
  EXPECT_EQ(m["TMPDIR"], "/scratch");
}

TEST(StepEnv, ExtraComesLastAndWins) {
  TaskEnvInfo info = StandaloneInfo(0, 0, 0);
  info.extra = {"PMI_FD=11", "PMI_JOBID=1.0", "PMI_RANK=0", "PMI_SIZE=3", "SLURM_CONF=/x"};
  pb::LaunchTasksRequest l = StandaloneLaunch(0);
  l.mutable_step()->set_mpi("pmi2");
  auto env = BuildTaskEnvironment(l, info);
  auto m = AsMap(env);
  EXPECT_EQ(m["SLURM_MPI_TYPE"], "pmi2");
  EXPECT_EQ(m["PMI_RANK"], "0");
  EXPECT_EQ(m["SLURM_CONF"], "/x");
  EXPECT_EQ(env.back(), "PMI_SIZE=3");
}

TEST(StepEnv, CpusPerTaskOnlyWhenAsked) {
  pb::LaunchTasksRequest l = StandaloneLaunch(0);
  l.set_cpus_per_task(2);  // srun -c2
  EXPECT_EQ(AsMap(BuildTaskEnvironment(l, StandaloneInfo(0, 0, 0)))["SLURM_CPUS_PER_TASK"], "2");
  l.set_cpus_per_task(0);
  l.mutable_step()->set_cpus_per_task(4);
  EXPECT_EQ(AsMap(BuildTaskEnvironment(l, StandaloneInfo(0, 0, 0)))["SLURM_CPUS_PER_TASK"], "4");
  // sbatch -c1 exported SLURM_CPUS_PER_TASK=1 to the script; a step without -c keeps it.
  l.mutable_step()->set_cpus_per_task(1);
  l.add_environment("SLURM_CPUS_PER_TASK=1");
  EXPECT_EQ(AsMap(BuildTaskEnvironment(l, StandaloneInfo(0, 0, 0)))["SLURM_CPUS_PER_TASK"], "1");
}

TEST(StepEnv, GtidsFromTheLayoutWhenNotGiven) {
  pb::LaunchTasksRequest l = StandaloneLaunch(1);
  l.clear_global_task_ids();
  auto m = AsMap(BuildTaskEnvironment(l, StandaloneInfo(1, 2, 0)));
  EXPECT_EQ(m["SLURM_GTIDS"], "2");
  l = StandaloneLaunch(0);
  l.clear_global_task_ids();
  EXPECT_EQ(AsMap(BuildTaskEnvironment(l, StandaloneInfo(0, 0, 0)))["SLURM_GTIDS"], "0,1");
}

TEST(StepEnv, CpusOnNodeFromTheCredential) {
  TaskEnvInfo info = StandaloneInfo(1, 2, 0);
  info.cpus_on_node = 0;
  auto m = AsMap(BuildTaskEnvironment(StandaloneLaunch(1), info));
  EXPECT_EQ(m["SLURM_CPUS_ON_NODE"], "1");
}

TEST(StepEnv, CpuBindInTheTaskEnvironment) {
  pb::LaunchTasksRequest l = StandaloneLaunch(0);
  l.set_cpu_bind("cores");
  TaskEnvInfo info = StandaloneInfo(0, 0, 0);
  auto m = AsMap(BuildTaskEnvironment(l, info));
  EXPECT_EQ(m["SLURM_CPU_BIND"], "quiet,corescores");
  info.cpu_masks = {"0x1", "0x2"};
  m = AsMap(BuildTaskEnvironment(l, info));
  EXPECT_EQ(m["SLURM_CPU_BIND"], "quiet,mask_cpu:0x1,0x2");
  EXPECT_EQ(m["SLURM_CPU_BIND_LIST"], "0x1,0x2");
}

using Env = std::vector<std::string>;

// Every expectation below is what a Slurm 22.05 task saw (TaskPlugin=task/none without masks,
// task/affinity with them).
TEST(CpuBindEnv, TaskNoneEchoesTheOption) {
  EXPECT_EQ(CpuBindEnvironment("", {}), Env{});
  EXPECT_EQ(CpuBindEnvironment("none", {}),
            (Env{"SLURM_CPU_BIND=quiet,none", "SLURM_CPU_BIND_LIST=", "SLURM_CPU_BIND_TYPE=none",
                 "SLURM_CPU_BIND_VERBOSE=quiet"}));
  EXPECT_EQ(CpuBindEnvironment("verbose,none", {}),
            (Env{"SLURM_CPU_BIND=verbose,none", "SLURM_CPU_BIND_LIST=", "SLURM_CPU_BIND_TYPE=none",
                 "SLURM_CPU_BIND_VERBOSE=verbose"}));
  EXPECT_EQ(CpuBindEnvironment("cores", {}),
            (Env{"SLURM_CPU_BIND=quiet,corescores", "SLURM_CPU_BIND_LIST=cores",
                 "SLURM_CPU_BIND_TYPE=cores", "SLURM_CPU_BIND_VERBOSE=quiet"}));
  EXPECT_EQ(CpuBindEnvironment("verbose,cores", {}),
            (Env{"SLURM_CPU_BIND=verbose,coresverbose,cores", "SLURM_CPU_BIND_LIST=verbose,cores",
                 "SLURM_CPU_BIND_TYPE=cores", "SLURM_CPU_BIND_VERBOSE=verbose"}));
  EXPECT_EQ(CpuBindEnvironment("cores,verbose", {}),
            (Env{"SLURM_CPU_BIND=verbose,corescores,verbose", "SLURM_CPU_BIND_LIST=cores,verbose",
                 "SLURM_CPU_BIND_TYPE=cores", "SLURM_CPU_BIND_VERBOSE=verbose"}));
  EXPECT_EQ(CpuBindEnvironment("threads", {})[0], "SLURM_CPU_BIND=quiet,threadsthreads");
  EXPECT_EQ(CpuBindEnvironment("ldoms", {})[0], "SLURM_CPU_BIND=quiet,ldomsldoms");
  EXPECT_EQ(CpuBindEnvironment("rank", {}),
            (Env{"SLURM_CPU_BIND=quiet,rank", "SLURM_CPU_BIND_LIST=", "SLURM_CPU_BIND_TYPE=rank",
                 "SLURM_CPU_BIND_VERBOSE=quiet"}));
  EXPECT_EQ(CpuBindEnvironment("verbose,map_cpu:0,1", {}),
            (Env{"SLURM_CPU_BIND=verbose,map_cpu:0,1", "SLURM_CPU_BIND_LIST=0,1",
                 "SLURM_CPU_BIND_TYPE=map_cpu:", "SLURM_CPU_BIND_VERBOSE=verbose"}));
  EXPECT_EQ(CpuBindEnvironment("mask_cpu:0x1,0x2", {}),
            (Env{"SLURM_CPU_BIND=quiet,mask_cpu:1,2", "SLURM_CPU_BIND_LIST=1,2",
                 "SLURM_CPU_BIND_TYPE=mask_cpu:", "SLURM_CPU_BIND_VERBOSE=quiet"}));
  EXPECT_EQ(CpuBindEnvironment("map_ldom:0", {}),
            (Env{"SLURM_CPU_BIND=quiet,map_ldom:0", "SLURM_CPU_BIND_LIST=0",
                 "SLURM_CPU_BIND_TYPE=map_ldom:", "SLURM_CPU_BIND_VERBOSE=quiet"}));
}

TEST(CpuBindEnv, PinnedTasksShowTheirMasks) {
  Env masks = {"SLURM_CPU_BIND=quiet,mask_cpu:0x1,0x2", "SLURM_CPU_BIND_LIST=0x1,0x2",
               "SLURM_CPU_BIND_TYPE=mask_cpu:", "SLURM_CPU_BIND_VERBOSE=quiet"};
  EXPECT_EQ(CpuBindEnvironment("", {"0x1", "0x2"}), masks);
  EXPECT_EQ(CpuBindEnvironment("cores", {"0x1", "0x2"}), masks);
  EXPECT_EQ(CpuBindEnvironment("threads", {"0x1", "0x2"}), masks);
  EXPECT_EQ(CpuBindEnvironment("verbose,cores", {"0x1", "0x2"})[0],
            "SLURM_CPU_BIND=verbose,mask_cpu:0x1,0x2");
  // Explicit none, rank, maps and masks are shown as given.
  EXPECT_EQ(CpuBindEnvironment("none", {"0x1", "0x2"})[0], "SLURM_CPU_BIND=quiet,none");
  EXPECT_EQ(CpuBindEnvironment("rank", {"0x1", "0x2"})[0], "SLURM_CPU_BIND=quiet,rank");
  EXPECT_EQ(CpuBindEnvironment("map_cpu:0,1", {"0x1", "0x2"})[0],
            "SLURM_CPU_BIND=quiet,map_cpu:0,1");
  EXPECT_EQ(CpuBindEnvironment("mask_cpu:0x1,0x2", {"0x1", "0x2"})[0],
            "SLURM_CPU_BIND=quiet,mask_cpu:1,2");
}

}  // namespace
}  // namespace shoal::noded
