// salloc's pure option logic: command-line forms, SALLOC_* input variables and their
// precedence, the allocation's JobSpec, the command, and Slurm's error texts.
#include "cli/salloc_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/units.h"

namespace shoal::cli {
namespace {

using Args = std::vector<std::string>;
using Env = std::vector<std::string>;

SallocContext Ctx(Env env = {"HOME=/home/u", "SHELL=/bin/bash"}) {
  SallocContext c;
  c.environment = std::move(env);
  c.cwd = "/home/u/work";
  c.hostname = "login1";
  c.user_name = "u";
  c.uid = 1000;
  c.gid = 100;
  c.now = 1700000000;
  return c;
}

SallocRequest Parse(const Args& args, const SallocContext& ctx = Ctx()) {
  auto r = ParseSallocCommandLine(args, ctx);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? *r : SallocRequest{};
}

std::string Error(const Args& args, const SallocContext& ctx = Ctx()) {
  auto r = ParseSallocCommandLine(args, ctx);
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.error();
}

TEST(SallocCommandLine, AllocationFields) {
  auto r = Parse({"-J",
                  "x",
                  "-t",
                  "10",
                  "-N",
                  "2",
                  "-n",
                  "4",
                  "--gres=gpu:1",
                  "-p",
                  "debug",
                  "-w",
                  "n[1-2]",
                  "-x",
                  "n3",
                  "--exclusive",
                  "-c",
                  "2",
                  "--mem-per-cpu=1G",
                  "-A",
                  "a",
                  "-q",
                  "q",
                  "--begin=now+60",
                  "-D",
                  "/tmp",
                  "-Q",
                  "--deadline=now+3600",
                  "--reservation=r",
                  "-C",
                  "ib"});
  const pb::JobSpec& s = r.spec;
  EXPECT_EQ(r.action, SallocAction::kAllocate);
  EXPECT_TRUE(s.interactive());
  EXPECT_EQ(s.name(), "x");
  EXPECT_EQ(s.time_limit(), 10u);
  EXPECT_EQ(s.min_nodes(), 2u);
  EXPECT_EQ(s.max_nodes(), 2u);
  EXPECT_EQ(s.num_tasks(), 4u);
  EXPECT_EQ(s.gres(), "gpu:1");
  EXPECT_EQ(s.partition(), "debug");
  EXPECT_EQ(s.nodelist(), "n[1-2]");
  EXPECT_EQ(s.exclude(), "n3");
  EXPECT_TRUE(s.exclusive());
  EXPECT_EQ(s.cpus_per_task(), 2u);
  EXPECT_EQ(s.mem_per_cpu_mb(), 1024u);
  EXPECT_EQ(s.account(), "a");
  EXPECT_EQ(s.qos(), "q");
  EXPECT_EQ(s.begin_time(), 1700000060);
  EXPECT_EQ(s.deadline(), 1700003600);
  EXPECT_EQ(s.reservation(), "r");
  EXPECT_EQ(s.constraint(), "ib");
  EXPECT_EQ(s.work_dir(), "/tmp");
  EXPECT_EQ(s.submit_dir(), "/home/u/work");
  EXPECT_EQ(s.submit_host(), "login1");
  EXPECT_EQ(s.user_name(), "u");
  EXPECT_TRUE(r.quiet);
  EXPECT_TRUE(r.argv.empty());
  // salloc has no --export: the whole environment goes with the job.
  ASSERT_EQ(s.environment_size(), 2);
  EXPECT_EQ(s.environment(0), "HOME=/home/u");
}

TEST(SallocCommandLine, CommandAndName) {
  auto shell = Parse({"-N2"});
  EXPECT_TRUE(shell.argv.empty());
  EXPECT_EQ(shell.spec.name(), "interactive");
  EXPECT_EQ(shell.spec.command(), "");
  auto cmd = Parse({"-N5", "srun", "-n10", "/opt/bin/myprogram"});
  EXPECT_EQ(cmd.argv, (Args{"srun", "-n10", "/opt/bin/myprogram"}));
  EXPECT_EQ(cmd.spec.name(), "srun");
  EXPECT_EQ(cmd.spec.command(), "srun");
  EXPECT_EQ(cmd.spec.num_tasks(), 0u);  // -n10 belongs to srun
  EXPECT_EQ(Parse({"/usr/bin/xterm"}).spec.name(), "xterm");
  EXPECT_EQ(Parse({"--", "-x"}).argv, (Args{"-x"}));
}

TEST(SallocCommandLine, Flags) {
  auto r = Parse({"--no-shell", "-I", "--bell", "-k", "--wait-all-nodes=1", "-K", "-vv", "-m",
                  "cyclic", "--time-min=5"});
  EXPECT_TRUE(r.no_shell);
  EXPECT_EQ(r.spec.immediate_s(), 1u);
  EXPECT_EQ(r.bell, SallocBell::kAlways);
  EXPECT_TRUE(r.no_kill);
  EXPECT_EQ(r.wait_all_nodes, true);
  EXPECT_TRUE(r.kill_command);
  EXPECT_EQ(r.kill_command_signal, 0);
  EXPECT_EQ(r.verbose, 2);
  EXPECT_EQ(r.distribution, "cyclic");
  EXPECT_EQ(r.spec.time_min(), 5u);
  EXPECT_EQ(Parse({"-I60"}).spec.immediate_s(), 60u);
  EXPECT_EQ(Parse({"--immediate=0"}).spec.immediate_s(), 0u);
  EXPECT_EQ(Parse({"--no-bell"}).bell, SallocBell::kNever);
  EXPECT_EQ(Parse({"--bell", "--no-bell"}).bell, SallocBell::kNever);
  EXPECT_EQ(Parse({}).bell, SallocBell::kAuto);
  EXPECT_EQ(Parse({"-KUSR1"}).kill_command_signal, 10);
  EXPECT_EQ(Parse({"--kill-command=SIGTERM"}).kill_command_signal, 15);
  EXPECT_EQ(Parse({"-K9"}).kill_command_signal, 9);
  EXPECT_EQ(Parse({"--wait-all-nodes=0"}).wait_all_nodes, false);
  EXPECT_EQ(Parse({"--wait=1"}).wait_all_nodes, true);  // an unambiguous prefix
  EXPECT_EQ(Parse({"-t", "0"}).spec.time_limit(), kTimeInfinite);
  EXPECT_EQ(Parse({}).spec.time_limit(), kTimeNoVal);
  EXPECT_TRUE(Parse({"--mem=0"}).spec.mem_whole_node());
  EXPECT_EQ(Parse({"--gpus-per-node=2"}).spec.gres(), "gpu:2");
}

TEST(SallocCommandLine, Actions) {
  EXPECT_EQ(Parse({"--help"}).action, SallocAction::kHelp);
  EXPECT_EQ(Parse({"-h"}).action, SallocAction::kHelp);
  EXPECT_EQ(Parse({"--usage"}).action, SallocAction::kUsage);
  EXPECT_EQ(Parse({"-V"}).action, SallocAction::kVersion);
  EXPECT_NE(SallocHelpText().find("--no-shell"), std::string::npos);
  EXPECT_NE(SallocUsageText().find("Usage: salloc"), std::string::npos);
}

TEST(SallocErrors, InSlurmsWords) {
  EXPECT_EQ(Error({"--badopt"}),
            "salloc: unrecognized option '--badopt'\nTry \"salloc --help\" for more information");
  EXPECT_EQ(Error({"--export=NONE"}),
            "salloc: unrecognized option '--export=NONE'\nTry \"salloc --help\" for more "
            "information");
  EXPECT_EQ(Error({"-W", "5"}),
            "salloc: invalid option -- 'W'\nTry \"salloc --help\" for more information");
  EXPECT_EQ(Error({"-N", "abc"}), "salloc: error: \"abc\" is not a valid node count");
  EXPECT_EQ(Error({"-n", "0"}), "salloc: error: Invalid numeric value \"0\" for --ntasks.");
  EXPECT_EQ(Error({"-t", "foo"}), "salloc: error: Invalid --time specification");
  EXPECT_EQ(Error({"--immediate=abc"}),
            "salloc: error: Invalid numeric value \"abc\" for immediate.");
  EXPECT_EQ(Error({"-Kfoo"}), "salloc: error: Invalid --kill-command specification");
  EXPECT_EQ(Error({"-K0"}), "salloc: error: Invalid --kill-command specification");
  EXPECT_EQ(Error({"--wait-all-nodes=2"}), "salloc: error: Invalid --wait-all-nodes specification");
  EXPECT_EQ(Error({"--mem=1", "--mem-per-cpu=1"}),
            "salloc: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.");
  EXPECT_EQ(Error({"-v", "-Q"}),
            "salloc: error: don't specify both --verbose (-v) and --quiet (-Q)");
  EXPECT_EQ(Error({"-w", "a", ":", "-w", "b", "bash"}),
            "salloc: error: Heterogeneous jobs (\":\") are not supported");
}

TEST(SallocEnvironment, VariablesAndPrecedence) {
  Env env = {"SALLOC_ACCOUNT=a",        "SALLOC_PARTITION=p",    "SALLOC_TIMELIMIT=7",
             "SALLOC_IMMEDIATE=5",      "SALLOC_BELL=1",         "SALLOC_NO_KILL=",
             "SALLOC_WAIT_ALL_NODES=1", "SALLOC_KILL_CMD=TERM",  "SALLOC_EXCLUSIVE=",
             "SALLOC_GRES=gpu:2",       "SALLOC_QOS=q",          "SALLOC_DEBUG=1",
             "SALLOC_MEM_PER_NODE=2G",  "SALLOC_OVERCOMMIT=yes", "SALLOC_RESERVATION=r",
             "SALLOC_REQ_SWITCH=2",     "SALLOC_WAIT4SWITCH=5"};
  auto r = Parse({}, Ctx(env));
  EXPECT_EQ(r.spec.account(), "a");
  EXPECT_EQ(r.spec.partition(), "p");
  EXPECT_EQ(r.spec.time_limit(), 7u);
  EXPECT_EQ(r.spec.immediate_s(), 5u);
  EXPECT_EQ(r.bell, SallocBell::kAlways);
  EXPECT_TRUE(r.no_kill);
  EXPECT_EQ(r.wait_all_nodes, true);
  EXPECT_TRUE(r.kill_command);
  EXPECT_EQ(r.kill_command_signal, 15);
  EXPECT_TRUE(r.spec.exclusive());
  EXPECT_EQ(r.spec.gres(), "gpu:2");
  EXPECT_EQ(r.spec.qos(), "q");
  EXPECT_EQ(r.verbose, 1);
  EXPECT_EQ(r.spec.mem_per_node_mb(), 2048u);
  EXPECT_TRUE(r.spec.overcommit());
  EXPECT_EQ(r.spec.reservation(), "r");
  EXPECT_EQ(r.spec.switches(), 2u);
  EXPECT_EQ(r.spec.switches_wait_s(), 5u * 60 + 1);  // a bare number is minutes

  auto c =
      Parse({"-A", "cli", "-t", "9", "--no-bell", "--mem-per-cpu=1", "--no-kill=off"}, Ctx(env));
  EXPECT_EQ(c.spec.account(), "cli");
  EXPECT_EQ(c.spec.time_limit(), 9u);
  EXPECT_EQ(c.bell, SallocBell::kNever);
  EXPECT_EQ(c.spec.mem_per_cpu_mb(), 1u);
  EXPECT_EQ(c.spec.mem_per_node_mb(), 0u);
  EXPECT_FALSE(c.no_kill);

  EXPECT_EQ(Error({}, Ctx({"SALLOC_WAIT_ALL_NODES=yes"})),
            "salloc: error: Invalid numeric value \"yes\" for --wait-all-nodes.");
  EXPECT_EQ(Error({}, Ctx({"SALLOC_MEM_PER_NODE=1", "SALLOC_MEM_PER_CPU=1"})),
            "salloc: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are "
            "mutually exclusive.");
  // SLURM_* variables are not salloc's input (SLURM_JOB_NAME, SLURM_NTASKS, ...).
  auto s = Parse({}, Ctx({"SLURM_NTASKS=4", "SLURM_JOB_NAME=x", "SALLOC_DEBUG=0"}));
  EXPECT_EQ(s.spec.num_tasks(), 0u);
  EXPECT_EQ(s.spec.name(), "interactive");
  EXPECT_EQ(s.verbose, 0);
}

TEST(SallocCommandLine, BindingOptionsGoToTheJob) {
  auto r = Parse({"--hint=memory_bound", "--mem-bind=rank", "--gpu-bind=closest"});
  EXPECT_EQ(r.spec.hint(), "memory_bound");
  EXPECT_EQ(r.spec.mem_bind(), "rank");
  EXPECT_EQ(r.spec.gpu_bind(), "closest");
  EXPECT_EQ(Error({"--gpu-bind=single"}), "salloc: error: Invalid --gpu-bind argument: gpu:single");
}

}  // namespace
}  // namespace shoal::cli
