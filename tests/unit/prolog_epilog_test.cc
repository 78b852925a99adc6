#include "common/prolog_epilog.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace shoal {
namespace {

bool Has(const std::vector<std::string>& env, const std::string& kv) {
  return std::find(env.begin(), env.end(), kv) != env.end();
}

TEST(PrologFlags, ParsesAndImplies) {
  auto f = ParsePrologFlags("Contain,NoHold");
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->contain);
  EXPECT_TRUE(f->alloc);  // Contain implies Alloc
  EXPECT_TRUE(f->nohold);
  EXPECT_FALSE(f->serial);
  auto g = ParsePrologFlags("alloc, serial");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->alloc && g->serial && !g->contain);
  auto x = ParsePrologFlags("X11");
  ASSERT_TRUE(x.ok());
  EXPECT_TRUE(x->x11 && x->contain && x->alloc);
  EXPECT_TRUE(ParsePrologFlags("").ok());
  auto bad = ParsePrologFlags("Alloc,Bogus");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "Invalid PrologFlags: bogus");
}

TEST(HealthCheckNodeState, DecidesWhenToRun) {
  auto any = ParseHealthCheckNodeState("ANY");
  ASSERT_TRUE(any.ok());
  NodeStateForHealth idle{true, false, false, false};
  NodeStateForHealth alloc{false, true, false, false};
  NodeStateForHealth idle_drained{true, false, false, true};
  EXPECT_TRUE(HealthCheckShouldRun(*any, idle, false));
  EXPECT_TRUE(HealthCheckShouldRun(*any, alloc, false));

  auto only_idle = ParseHealthCheckNodeState("IDLE");
  ASSERT_TRUE(only_idle.ok());
  EXPECT_TRUE(HealthCheckShouldRun(*only_idle, idle, false));
  EXPECT_FALSE(HealthCheckShouldRun(*only_idle, alloc, false));
  EXPECT_TRUE(HealthCheckShouldRun(*only_idle, alloc, true));  // always at start

  auto nondrained = ParseHealthCheckNodeState("NONDRAINED_IDLE,CYCLE");
  ASSERT_TRUE(nondrained.ok());
  EXPECT_TRUE(nondrained->cycle);
  EXPECT_TRUE(HealthCheckShouldRun(*nondrained, idle, false));
  EXPECT_FALSE(HealthCheckShouldRun(*nondrained, idle_drained, false));

  auto start = ParseHealthCheckNodeState("START_ONLY");
  ASSERT_TRUE(start.ok());
  EXPECT_FALSE(HealthCheckShouldRun(*start, idle, false));
  EXPECT_TRUE(HealthCheckShouldRun(*start, idle, true));

  auto mixed = ParseHealthCheckNodeState("MIXED,ALLOC");
  ASSERT_TRUE(mixed.ok());
  EXPECT_FALSE(HealthCheckShouldRun(*mixed, idle, false));
  EXPECT_TRUE(HealthCheckShouldRun(*mixed, alloc, false));
  EXPECT_FALSE(ParseHealthCheckNodeState("BUSY").ok());
}

TEST(FirstLineTrimmed, SkipsBlankLines) {
  EXPECT_EQ(FirstLineTrimmed("\n  \n  disk full  \nmore\n", "x"), "disk full");
  EXPECT_EQ(FirstLineTrimmed("", "fallback"), "fallback");
  EXPECT_EQ(FirstLineTrimmed("one", "x"), "one");
}

TEST(TaskProlog, ParsesOutput) {
  auto out = ParseTaskPrologOutput(
      "export A=1\nexport B=x=y\nunset C\nprint hello world\nnoise\nexport =bad\nprint \n");
  ASSERT_EQ(out.exports.size(), 2u);
  EXPECT_EQ(out.exports[0], (std::pair<std::string, std::string>{"A", "1"}));
  EXPECT_EQ(out.exports[1], (std::pair<std::string, std::string>{"B", "x=y"}));
  ASSERT_EQ(out.unsets.size(), 1u);
  EXPECT_EQ(out.unsets[0], "C");
  EXPECT_EQ(out.print, "hello world\n\n");
}

TEST(TaskProlog, AppliesInOrder) {
  std::vector<std::string> env = {"A=old", "C=3", "KEEP=1"};
  ApplyTaskPrologOutput("export A=new\nunset C\nexport D=4\nunset D\n", &env);
  EXPECT_TRUE(Has(env, "A=new"));
  EXPECT_FALSE(Has(env, "A=old"));
  EXPECT_TRUE(Has(env, "KEEP=1"));
  EXPECT_EQ(std::count_if(env.begin(), env.end(),
                          [](const std::string& e) { return e.rfind("C=", 0) == 0; }),
            0);
  EXPECT_EQ(std::count_if(env.begin(), env.end(),
                          [](const std::string& e) { return e.rfind("D=", 0) == 0; }),
            0);
}

TEST(RegistrationReasons, MatchSlurm) {
  EXPECT_EQ(LowMemoryReason(1000, 2000),
            "Low RealMemory (reported:1000 < 100.00% of configured:2000)");
  EXPECT_EQ(LowCpusReason(2, 4), "Low CPUs");
  EXPECT_EQ(LowTmpDiskReason(1, 2), "Low TmpDisk");
  EXPECT_EQ(LowGresReason("gpu", 2, 4), "gres/gpu count reported lower than configured (2 < 4)");
}

TEST(ScriptEnv, NodeAndControllerContexts) {
  pb::JobRecord job;
  job.set_job_id(42);
  job.mutable_spec()->set_uid(1001);
  job.mutable_spec()->set_gid(1002);
  job.mutable_spec()->set_user_name("alice");
  job.mutable_spec()->set_account("physics");
  job.mutable_spec()->set_constraint("fast");
  job.mutable_spec()->set_name("sim");
  job.set_partition("batch");
  job.add_nodes("n1");
  job.add_nodes("n2");
  job.add_nodes("n3");
  job.set_array_task_id(0xfffffffe);
  auto* gpu = job.add_gres_devices();
  gpu->set_node_pos(1);
  gpu->set_name("gpu");
  gpu->add_indexes(0);
  gpu->add_indexes(2);
  auto env = BuildScriptEnv(ScriptInfoFromJob(job, "n2", "alpha"), "prolog_slurmd");
  EXPECT_TRUE(Has(env, "SLURM_SCRIPT_CONTEXT=prolog_slurmd"));
  EXPECT_TRUE(Has(env, "SLURM_JOB_ID=42"));
  EXPECT_TRUE(Has(env, "SLURM_JOB_USER=alice"));
  EXPECT_TRUE(Has(env, "SLURM_JOB_UID=1001"));
  EXPECT_TRUE(Has(env, "SLURM_JOB_GID=1002"));
  EXPECT_TRUE(Has(env, "SLURM_JOB_PARTITION=batch"));
  EXPECT_TRUE(Has(env, "SLURM_JOB_ACCOUNT=physics"));
  EXPECT_TRUE(Has(env, "SLURM_JOB_NODELIST=n[1-3]"));
  EXPECT_TRUE(Has(env, "SLURMD_NODENAME=n2"));
  EXPECT_TRUE(Has(env, "SLURM_CLUSTER_NAME=alpha"));
  EXPECT_TRUE(Has(env, "SLURM_JOB_CONSTRAINTS=fast"));
  EXPECT_TRUE(Has(env, "CUDA_VISIBLE_DEVICES=0,2"));
  EXPECT_TRUE(Has(env, "SLURM_JOB_GPUS=0,2"));
  auto n1 = BuildScriptEnv(ScriptInfoFromJob(job, "n1", "alpha"), "epilog_slurmd");
  EXPECT_TRUE(Has(n1, "SLURM_SCRIPT_CONTEXT=epilog_slurmd"));
  for (const auto& e : n1) EXPECT_NE(e.rfind("CUDA_VISIBLE_DEVICES=", 0), 0u) << e;

  auto ctld = ScriptInfoFromJob(job, "", "alpha");
  ctld.exit_code = 256;
  ctld.derived_ec = "1:0";
  auto cenv = BuildScriptEnv(ctld, "epilog_slurmctld");
  EXPECT_TRUE(Has(cenv, "SLURM_SCRIPT_CONTEXT=epilog_slurmctld"));
  EXPECT_TRUE(Has(cenv, "SLURM_JOB_EXIT_CODE=256"));
  EXPECT_TRUE(Has(cenv, "SLURM_JOB_GPUS=0,2"));
  for (const auto& e : cenv) EXPECT_NE(e.rfind("SLURMD_NODENAME=", 0), 0u) << e;
}

}  // namespace
}  // namespace shoal
