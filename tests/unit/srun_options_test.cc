// srun's pure option logic: command-line forms, SLURM_* input variables and their precedence,
// what an allocation's inherited environment does, step fields, -i/-o/-e modes, --cpu-bind,
// --mpi, --multi-prog, the argv MPI launchers pass, and Slurm's error texts.
#include "cli/srun_options.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/units.h"

namespace shoal::cli {
namespace {

using Args = std::vector<std::string>;
using Env = std::vector<std::string>;

SrunContext Ctx(Env env = {"HOME=/home/u", "PATH=/usr/bin:/bin"}) {
  SrunContext c;
  c.environment = std::move(env);
  c.cwd = "/home/u/work";
  c.hostname = "login1";
  c.user_name = "u";
  c.uid = 1000;
  c.gid = 100;
  c.now = 1700000000;
  return c;
}

// A batch job's environment as the node daemon gives it: 3 nodes, one task each.
Env JobEnv() {
  return {"HOME=/home/u",
          "PATH=/usr/bin:/bin",
          "SLURM_JOB_ID=42",
          "SLURM_JOBID=42",
          "SLURM_JOB_NAME=mpi-ping-pong",
          "SLURM_JOB_NUM_NODES=3",
          "SLURM_NNODES=3",
          "SLURM_NTASKS=3",
          "SLURM_NPROCS=3",
          "SLURM_NTASKS_PER_NODE=1",
          "SLURM_CPUS_PER_TASK=2",
          "SLURM_JOB_NODELIST=n[1-3]",
          "SLURM_NODELIST=n[1-3]",
          "SLURM_SUBMIT_DIR=/home/u/work"};
}

SrunRequest Parse(const Args& args, const SrunContext& ctx = Ctx()) {
  auto r = ParseSrunCommandLine(args, ctx);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? *r : SrunRequest{};
}

std::string Error(const Args& args, const SrunContext& ctx = Ctx()) {
  auto r = ParseSrunCommandLine(args, ctx);
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.error();
}

bool HasEnv(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

// ---------------------------------------------------------------------------------------------
// Command line forms
// ---------------------------------------------------------------------------------------------

TEST(SrunCommandLine, FormsOfOneOption) {
  for (const Args& args : {Args{"--ntasks=4", "a"}, Args{"--ntasks", "4", "a"}, Args{"-n4", "a"},
                           Args{"-n", "4", "a"}}) {
    EXPECT_EQ(Parse(args).spec.num_tasks(), 4u) << args[0];
  }
  // An unambiguous prefix of a long option is the option.
  EXPECT_EQ(Parse({"--parti=debug", "--lab", "a"}).spec.partition(), "debug");
  EXPECT_TRUE(Parse({"--parti=debug", "--lab", "a"}).label);
}

TEST(SrunCommandLine, OptionsEndAtTheExecutable) {
  auto r = Parse({"-N2", "-l", "printenv", "-n", "5", "--label"});
  EXPECT_EQ(r.argv, (Args{"printenv", "-n", "5", "--label"}));
  EXPECT_EQ(r.spec.min_nodes(), 2u);
  EXPECT_EQ(r.spec.num_tasks(), 0u);
  EXPECT_TRUE(r.label);
  auto dd = Parse({"-n1", "--", "-weird-name", "x"});
  EXPECT_EQ(dd.argv, (Args{"-weird-name", "x"}));
}

TEST(SrunCommandLine, ClusteredFlags) {
  auto r = Parse({"-luQ", "-K", "-Xn2", "hostname"});
  EXPECT_TRUE(r.label);
  EXPECT_TRUE(r.unbuffered);
  EXPECT_TRUE(r.quiet);
  EXPECT_TRUE(r.disable_status);
  EXPECT_EQ(r.kill_on_bad_exit, true);
  EXPECT_EQ(r.spec.num_tasks(), 2u);
}

TEST(SrunCommandLine, JobFields) {
  auto r = Parse({"-J",
                  "name",
                  "-p",
                  "debug",
                  "-A",
                  "acct",
                  "-q",
                  "high",
                  "-t",
                  "1:30:00",
                  "-N",
                  "2-4",
                  "-n",
                  "8",
                  "-c",
                  "2",
                  "--mem=4G",
                  "--gres=gpu:a100:2",
                  "-G",
                  "1",
                  "-w",
                  "n[1-2]",
                  "-x",
                  "n3",
                  "-C",
                  "ib",
                  "--exclusive",
                  "--reservation=maint",
                  "-d",
                  "afterok:5",
                  "--begin=now+60",
                  "-I30",
                  "-D",
                  "sub",
                  "-O",
                  "--signal=USR1@30",
                  "app",
                  "x",
                  "y"});
  const pb::JobSpec& s = r.spec;
  EXPECT_TRUE(s.interactive());
  EXPECT_EQ(s.name(), "name");
  EXPECT_EQ(r.step_name, "name");
  EXPECT_EQ(s.partition(), "debug");
  EXPECT_EQ(s.account(), "acct");
  EXPECT_EQ(s.qos(), "high");
  EXPECT_EQ(s.time_limit(), 90u);
  EXPECT_EQ(s.min_nodes(), 2u);
  EXPECT_EQ(s.max_nodes(), 4u);
  EXPECT_EQ(s.num_tasks(), 8u);
  EXPECT_EQ(s.cpus_per_task(), 2u);
  EXPECT_EQ(s.mem_per_node_mb(), 4096u);
  EXPECT_EQ(s.gres(), "gpu:a100:2");
  EXPECT_EQ(s.gpus(), "1");
  EXPECT_EQ(s.nodelist(), "n[1-2]");
  EXPECT_EQ(s.exclude(), "n3");
  EXPECT_EQ(s.constraint(), "ib");
  EXPECT_TRUE(s.exclusive());
  EXPECT_EQ(s.reservation(), "maint");
  EXPECT_EQ(s.dependency(), "afterok:5");
  EXPECT_EQ(s.begin_time(), 1700000060);
  EXPECT_EQ(s.immediate_s(), 30u);
  EXPECT_EQ(s.work_dir(), "/home/u/work/sub");
  EXPECT_EQ(s.submit_dir(), "/home/u/work");
  EXPECT_EQ(s.submit_host(), "login1");
  EXPECT_EQ(s.user_name(), "u");
  EXPECT_EQ(s.uid(), 1000u);
  EXPECT_TRUE(s.overcommit());
  EXPECT_EQ(s.warn_signal(), 10);
  EXPECT_EQ(s.warn_time(), 30u);
  EXPECT_EQ(s.command(), "app");
  EXPECT_EQ(std::vector<std::string>(s.argv().begin(), s.argv().end()), (Args{"x", "y"}));
  EXPECT_EQ(r.job_id, 0u);
  // -c and --exclusive both make the step take only what it asks for.
  EXPECT_TRUE(r.exact);
}

TEST(SrunCommandLine, Defaults) {
  auto r = Parse({"/usr/bin/hostname"});
  EXPECT_EQ(r.spec.name(), "hostname");
  EXPECT_EQ(r.step_name, "hostname");
  EXPECT_EQ(r.spec.time_limit(), kTimeNoVal);
  EXPECT_EQ(r.spec.work_dir(), "/home/u/work");
  EXPECT_EQ(r.mpi, "");
  EXPECT_EQ(r.cpu_bind.text, "");
  EXPECT_FALSE(r.kill_on_bad_exit.has_value());
  EXPECT_FALSE(r.wait_s.has_value());
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.input.mode, SrunIo::Mode::kAll);
  EXPECT_EQ(r.output.mode, SrunIo::Mode::kAll);
  EXPECT_EQ(r.error.mode, SrunIo::Mode::kAll);
  EXPECT_TRUE(HasEnv(r.environment, "HOME=/home/u"));
  EXPECT_TRUE(
      HasEnv(std::vector<std::string>(r.spec.environment().begin(), r.spec.environment().end()),
             "PATH=/usr/bin:/bin"));
}

TEST(SrunCommandLine, ZeroTimeMeansNoLimit) {
  EXPECT_EQ(Parse({"-t", "0", "a"}).spec.time_limit(), kTimeInfinite);
  EXPECT_EQ(Parse({"-t", "UNLIMITED", "a"}).spec.time_limit(), kTimeInfinite);
  EXPECT_EQ(Parse({"-t", "1-0", "a"}).spec.time_limit(), 1440u);
}

TEST(SrunCommandLine, StepFlags) {
  auto r = Parse({"--overlap",
                  "--exact",
                  "--mpi=pmi2",
                  "--cpu-bind=cores",
                  "-m",
                  "cyclic",
                  "--kill-on-bad-exit=0",
                  "-W",
                  "30",
                  "--jobid=77",
                  "-r",
                  "1",
                  "-k",
                  "--het-group=0",
                  "--open-mode=append",
                  "-E",
                  "--quit-on-interrupt",
                  "--test-only",
                  "-vv",
                  "prog"});
  EXPECT_TRUE(r.overlap);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.mpi, "pmi2");
  EXPECT_EQ(r.cpu_bind.text, "cores");
  EXPECT_EQ(r.distribution, "cyclic");
  EXPECT_EQ(r.kill_on_bad_exit, false);
  EXPECT_EQ(r.wait_s, 30u);
  EXPECT_EQ(r.job_id, 77u);
  EXPECT_TRUE(r.jobid_on_cmdline);
  EXPECT_EQ(r.relative, 1u);
  EXPECT_TRUE(r.no_kill);
  EXPECT_EQ(r.het_group, "0");
  EXPECT_TRUE(r.open_mode_given);
  EXPECT_TRUE(r.spec.open_mode_append());
  EXPECT_TRUE(r.preserve_env);
  EXPECT_TRUE(r.quit_on_interrupt);
  EXPECT_TRUE(r.test_only);
  EXPECT_EQ(r.verbose, 2);
}

TEST(SrunCommandLine, KillOnBadExitForms) {
  EXPECT_EQ(Parse({"-K", "a"}).kill_on_bad_exit, true);
  EXPECT_EQ(Parse({"-K1", "a"}).kill_on_bad_exit, true);
  EXPECT_EQ(Parse({"-K0", "a"}).kill_on_bad_exit, false);
  EXPECT_EQ(Parse({"--kill-on-bad-exit", "a"}).kill_on_bad_exit, true);
  // The argument is optional, so "-K 1" runs the program "1".
  EXPECT_EQ(Parse({"-K", "1"}).argv, (Args{"1"}));
}

TEST(SrunCommandLine, ImmediateForms) {
  EXPECT_EQ(Parse({"-I", "a"}).spec.immediate_s(), 1u);
  EXPECT_EQ(Parse({"-I5", "a"}).spec.immediate_s(), 5u);
  EXPECT_EQ(Parse({"--immediate=0", "a"}).spec.immediate_s(), 0u);
  EXPECT_EQ(Error({"-Iabc", "a"}), "srun: error: Invalid numeric value \"abc\" for immediate.");
}

TEST(SrunCommandLine, Actions) {
  EXPECT_EQ(Parse({"--help"}).action, SrunAction::kHelp);
  EXPECT_EQ(Parse({"-h", "-n", "abc"}).action, SrunAction::kHelp);
  EXPECT_EQ(Parse({"--usage"}).action, SrunAction::kUsage);
  EXPECT_EQ(Parse({"-V"}).action, SrunAction::kVersion);
  EXPECT_EQ(Parse({"--version"}).action, SrunAction::kVersion);
  EXPECT_EQ(Parse({"--mpi=list"}).action, SrunAction::kMpiList);
  EXPECT_EQ(Parse({"--mpi=list", "true"}).action, SrunAction::kMpiList);
  EXPECT_EQ(Parse({"--cpu-bind=help"}).action, SrunAction::kCpuBindHelp);
  // Options before the action are still checked.
  EXPECT_EQ(Error({"-n", "abc", "--version"}),
            "srun: error: Invalid numeric value \"abc\" for --ntasks.");
  EXPECT_NE(SrunHelpText().find("--multi-prog"), std::string::npos);
  EXPECT_NE(SrunUsageText().find("Usage: srun"), std::string::npos);
  EXPECT_EQ(SrunMpiListText().substr(0, 23), "MPI plugin types are...");
  EXPECT_NE(SrunCpuBindHelpText().find("map_cpu"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Errors, in Slurm's words (checked against Slurm 22.05's srun)
// ---------------------------------------------------------------------------------------------

TEST(SrunErrors, GetoptMessages) {
  EXPECT_EQ(Error({"--badopt"}),
            "srun: unrecognized option '--badopt'\nTry \"srun --help\" for more information");
  EXPECT_EQ(Error({"--badopt=3"}),
            "srun: unrecognized option '--badopt=3'\nTry \"srun --help\" for more information");
  EXPECT_EQ(Error({"-y"}), "srun: invalid option -- 'y'\nTry \"srun --help\" for more information");
  EXPECT_EQ(Error({"-n"}),
            "srun: option requires an argument -- 'n'\nTry \"srun --help\" for more information");
  EXPECT_EQ(Error({"--ntasks"}),
            "srun: option '--ntasks' requires an argument\nTry \"srun --help\" for more "
            "information");
  EXPECT_EQ(Error({"--label=1", "a"}),
            "srun: option '--label' doesn't allow an argument\nTry \"srun --help\" for more "
            "information");
  EXPECT_EQ(Error({"--cpu=1", "a"}),
            "srun: option '--cpu=1' is ambiguous; possibilities: '--cpu-bind' '--cpu-freq' "
            "'--cpus-per-gpu' '--cpus-per-task'\nTry \"srun --help\" for more information");
  EXPECT_EQ(Error({"--gpus-per", "a"}),
            "srun: option '--gpus-per' is ambiguous; possibilities: '--gpus-per-node' "
            "'--gpus-per-socket' '--gpus-per-task'\nTry \"srun --help\" for more information");
  EXPECT_EQ(Error({"--het"}),
            "srun: option '--het-group' requires an argument\nTry \"srun --help\" for more "
            "information");
}

TEST(SrunErrors, BadValues) {
  EXPECT_EQ(Error({"-N", "abc", "true"}), "srun: error: \"abc\" is not a valid node count");
  EXPECT_EQ(Error({"-N", "2-1", "true"}),
            "srun: error: Maximum node count 1 is less than minimum node count 2");
  EXPECT_EQ(Error({"-t", "xyz", "true"}), "srun: error: Invalid --time specification");
  EXPECT_EQ(Error({"-n", "abc", "true"}),
            "srun: error: Invalid numeric value \"abc\" for --ntasks.");
  EXPECT_EQ(Error({"-n", "0", "true"}), "srun: error: Invalid numeric value \"0\" for --ntasks.");
  EXPECT_EQ(Error({"-c", "0", "true"}),
            "srun: error: Invalid numeric value \"0\" for --cpus-per-task.");
  EXPECT_EQ(Error({"--ntasks-per-node=0", "true"}),
            "srun: error: Invalid numeric value \"0\" for --ntasks-per-node.");
  EXPECT_EQ(Error({"--mem=abc", "true"}), "srun: error: Invalid --mem specification");
  EXPECT_EQ(Error({"--kill-on-bad-exit=abc", "true"}),
            "srun: error: Invalid numeric value \"abc\" for --kill-on-bad-exit.");
  EXPECT_EQ(Error({"--kill-on-bad-exit=-1", "true"}),
            "srun: error: Invalid numeric value \"-1\" for --kill-on-bad-exit.");
  EXPECT_EQ(Error({"-W", "abc", "true"}), "srun: error: Invalid numeric value \"abc\" for --wait.");
  EXPECT_EQ(Error({"-W", "-1", "true"}), "srun: error: Invalid numeric value \"-1\" for --wait.");
  EXPECT_EQ(Error({"-r", "abc", "true"}),
            "srun: error: Invalid numeric value \"abc\" for --relative.");
  EXPECT_EQ(Error({"--jobid=abc", "true"}),
            "srun: error: Invalid numeric value \"abc\" for --jobid.");
  EXPECT_EQ(Error({"--jobid=12.3", "true"}),
            "srun: error: Invalid numeric value \"12.3\" for --jobid.");
  EXPECT_EQ(Error({"--jobid=0", "true"}), "srun: error: Invalid numeric value \"0\" for --jobid.");
  EXPECT_EQ(Error({"--open-mode=x", "true"}), "srun: error: Invalid --open-mode specification");
  EXPECT_EQ(Error({"-m", "foo", "true"}), "srun: error: Invalid --distribution specification");
  EXPECT_EQ(Error({"-m", "plane", "true"}),
            "srun: error: Invalid plane size or size not specified\n"
            "srun: error: Invalid --distribution specification");
  EXPECT_EQ(Error({"--begin=garbage", "true"}), "srun: error: Invalid --begin specification");
  EXPECT_EQ(Error({"--exclusive=foo", "true"}), "srun: error: Invalid --exclusive specification");
  EXPECT_EQ(Error({"--no-kill=yes2", "true"}), "srun: error: Invalid --no-kill specification");
  EXPECT_EQ(Error({"--signal=foo", "true"}), "srun: error: Invalid --signal specification");
  EXPECT_EQ(Error({"--mpi=foo", "true"}),
            "srun: error: Invalid MPI type 'foo', --mpi=list for acceptable types");
  EXPECT_EQ(Error({"--mpi=PMI2", "true"}),
            "srun: error: Invalid MPI type 'PMI2', --mpi=list for acceptable types");
}

TEST(SrunErrors, Combinations) {
  EXPECT_EQ(Error({}), "srun: fatal: No command given to execute.");
  EXPECT_EQ(Error({"-l"}), "srun: fatal: No command given to execute.");
  EXPECT_EQ(Error({"--multi-prog"}), "srun: fatal: No command given to execute.");
  EXPECT_EQ(Error({"--mem=1", "--mem-per-cpu=1", "true"}),
            "srun: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.");
  EXPECT_EQ(Error({"true"}, Ctx({"SLURM_MEM_PER_NODE=5", "SLURM_MEM_PER_CPU=3"})),
            "srun: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are "
            "mutually exclusive.");
  EXPECT_EQ(Error({"-v", "-Q", "true"}),
            "srun: error: don't specify both --verbose (-v) and --quiet (-Q)");
  EXPECT_EQ(Error({"-r", "0", "true"}),
            "srun: fatal: --relative option invalid for job allocation request");
  EXPECT_EQ(Error({"-r", "1", "-w", "n1", "true"}, Ctx({"SLURM_JOB_ID=4"})),
            "srun: error: -r,--relative not allowed with -w,--nodelist or -x,--exclude.");
  EXPECT_EQ(Error({"--pty", "-i", "none", "bash"}),
            "srun: error: --error/--input/--output are incompatible with --pty");
  EXPECT_EQ(Error({"-n1", "a", ":", "-n2", "b"}),
            "srun: error: Heterogeneous job steps (\":\") are not supported");
  EXPECT_EQ(Error({"-Z", "-w", "n1", "a"}),
            "srun: error: --no-allocate (-Z) is not supported by Shoal");
}

// ---------------------------------------------------------------------------------------------
// Environment
// ---------------------------------------------------------------------------------------------

TEST(SrunEnvironment, VariablesAndPrecedence) {
  Env env = {"SLURM_ACCOUNT=envacct",
             "SLURM_PARTITION=envpart",
             "SLURM_TIMELIMIT=7",
             "SLURM_MPI_TYPE=pmix_v4",
             "SLURM_CPU_BIND=verbose,cores",
             "SLURM_LABELIO=1",
             "SLURM_UNBUFFEREDIO=",
             "SLURM_OVERLAP=yes",
             "SLURM_EXACT=1",
             "SLURM_WAIT=5",
             "SLURM_KILL_BAD_EXIT=1",
             "SLURM_DISTRIBUTION=cyclic",
             "SLURM_STDOUTMODE=out",
             "SLURM_STDINMODE=none",
             "SRUN_CPUS_PER_TASK=3",
             "SLURM_REMOTE_CWD=/tmp/x",
             "SLURM_IMMEDIATE=5",
             "SLURM_QOS=q",
             "SLURM_DEBUG=1",
             "SLURM_DISABLE_STATUS=0"};
  auto r = Parse({"hostname"}, Ctx(env));
  EXPECT_EQ(r.spec.account(), "envacct");
  EXPECT_EQ(r.spec.partition(), "envpart");
  EXPECT_EQ(r.spec.time_limit(), 7u);
  EXPECT_EQ(r.mpi, "pmix");
  EXPECT_EQ(r.cpu_bind.text, "verbose,cores");
  EXPECT_TRUE(r.label);
  EXPECT_TRUE(r.unbuffered);
  EXPECT_TRUE(r.overlap);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.wait_s, 5u);
  EXPECT_EQ(r.kill_on_bad_exit, true);
  EXPECT_EQ(r.distribution, "cyclic");
  EXPECT_EQ(r.output.mode, SrunIo::Mode::kFile);
  EXPECT_EQ(r.output.pattern, "out");
  EXPECT_EQ(r.input.mode, SrunIo::Mode::kNone);
  EXPECT_EQ(r.spec.cpus_per_task(), 3u);
  EXPECT_EQ(r.spec.work_dir(), "/tmp/x");
  EXPECT_EQ(r.spec.immediate_s(), 5u);
  EXPECT_EQ(r.spec.qos(), "q");
  EXPECT_EQ(r.verbose, 1);
  EXPECT_FALSE(r.disable_status);  // a flag variable set to 0 leaves the option unset

  // The command line wins.
  auto c = Parse({"-A", "cli", "-p", "clipart", "-t", "9", "--mpi=none", "--cpu-bind=none", "-o",
                  "all", "-c", "1", "hostname"},
                 Ctx(env));
  EXPECT_EQ(c.spec.account(), "cli");
  EXPECT_EQ(c.spec.partition(), "clipart");
  EXPECT_EQ(c.spec.time_limit(), 9u);
  EXPECT_EQ(c.mpi, "none");
  EXPECT_EQ(c.cpu_bind.text, "none");
  EXPECT_EQ(c.output.mode, SrunIo::Mode::kAll);
  EXPECT_EQ(c.spec.cpus_per_task(), 1u);
}

TEST(SrunEnvironment, CommandLineMemoryReplacesInheritedMemory) {
  auto r = Parse({"--mem-per-cpu=1", "a"}, Ctx({"SLURM_MEM_PER_NODE=5"}));
  EXPECT_EQ(r.spec.mem_per_cpu_mb(), 1u);
  EXPECT_EQ(r.spec.mem_per_node_mb(), 0u);
  auto e = Parse({"a"}, Ctx({"SLURM_MEM_PER_NODE=5"}));
  EXPECT_EQ(e.spec.mem_per_node_mb(), 5u);
  auto z = Parse({"--mem=0", "a"});
  EXPECT_TRUE(z.spec.mem_whole_node());
}

TEST(SrunEnvironment, ExclusiveAndNoKillVariables) {
  EXPECT_TRUE(Parse({"a"}, Ctx({"SLURM_EXCLUSIVE="})).spec.exclusive());
  EXPECT_EQ(Parse({"a"}, Ctx({"SLURM_EXCLUSIVE=user"})).spec.exclusive_mode(), "user");
  EXPECT_EQ(Error({"a"}, Ctx({"SLURM_EXCLUSIVE=1"})),
            "srun: error: Invalid --exclusive specification");
  EXPECT_TRUE(Parse({"a"}, Ctx({"SLURM_NO_KILL="})).no_kill);
  EXPECT_TRUE(Parse({"a"}, Ctx({"SLURM_NO_KILL=set"})).no_kill);
  EXPECT_FALSE(Parse({"a"}, Ctx({"SLURM_NO_KILL=off"})).no_kill);
  EXPECT_FALSE(Parse({"--no-kill=off", "a"}, Ctx({"SLURM_NO_KILL="})).no_kill);
}

TEST(SrunEnvironment, ExportVariables) {
  Env env = {"HOME=/h", "EDITOR=vi", "SLURM_JOB_ID=9", "SLURM_EXPORT_ENV=NONE"};
  auto none = Parse({"a"}, Ctx(env));
  EXPECT_FALSE(HasEnv(none.environment, "HOME=/h"));
  EXPECT_TRUE(HasEnv(none.environment, "SLURM_JOB_ID=9"));
  // SRUN_EXPORT_ENV overrides SLURM_EXPORT_ENV; the command line overrides both.
  env.push_back("SRUN_EXPORT_ENV=EDITOR");
  auto srun_env = Parse({"a"}, Ctx(env));
  EXPECT_TRUE(HasEnv(srun_env.environment, "EDITOR=vi"));
  EXPECT_FALSE(HasEnv(srun_env.environment, "HOME=/h"));
  auto all = Parse({"--export=ALL,X=1", "a"}, Ctx(env));
  EXPECT_TRUE(HasEnv(all.environment, "HOME=/h"));
  EXPECT_TRUE(HasEnv(all.environment, "X=1"));
  EXPECT_EQ(Error({"--export=1BAD", "a"}),
            "srun: error: Invalid --export specification: '1BAD' is not a variable name");
}

TEST(SrunEnvironment, InheritedCpuBindThatDoesNotParseIsIgnored) {
  auto r = Parse({"a"}, Ctx({"SLURM_CPU_BIND=quiet,corescores"}));
  EXPECT_EQ(r.cpu_bind.text, "");
  EXPECT_EQ(Parse({"a"}, Ctx({"SLURM_CPU_BIND=quiet,"})).cpu_bind.text, "");
  EXPECT_EQ(Parse({"a"}, Ctx({"SLURM_CPU_BIND=quiet,mask_cpu:0x1,0x2"})).cpu_bind.text,
            "mask_cpu:0x1,0x2");
}

// ---------------------------------------------------------------------------------------------
// Inside an allocation (behaviour observed with Slurm 22.05's srun)
// ---------------------------------------------------------------------------------------------

TEST(SrunAllocation, JobIdFromEnvironmentOrCommandLine) {
  auto r = Parse({"hostname"}, Ctx(JobEnv()));
  EXPECT_EQ(r.job_id, 42u);
  EXPECT_FALSE(r.jobid_on_cmdline);
  EXPECT_EQ(Parse({"hostname"}, Ctx({"SLURM_JOBID=7"})).job_id, 7u);
  auto cmd = Parse({"--jobid=43", "hostname"}, Ctx(JobEnv()));
  EXPECT_EQ(cmd.job_id, 43u);
  EXPECT_TRUE(cmd.jobid_on_cmdline);
  EXPECT_EQ(Parse({"hostname"}).job_id, 0u);
}

TEST(SrunAllocation, InheritsCountsButNotTheJobName) {
  auto r = Parse({"hostname"}, Ctx(JobEnv()));
  EXPECT_EQ(r.spec.num_tasks(), 3u);
  EXPECT_EQ(r.spec.min_nodes(), 3u);
  EXPECT_EQ(r.spec.ntasks_per_node(), 1u);
  EXPECT_EQ(r.spec.cpus_per_task(), 0u);  // SLURM_CPUS_PER_TASK is not an input variable
  EXPECT_EQ(r.step_name, "hostname");
  EXPECT_EQ(r.spec.name(), "hostname");
  // Outside an allocation SLURM_JOB_NAME names the job.
  EXPECT_EQ(Parse({"hostname"}, Ctx({"SLURM_JOB_NAME=mine"})).spec.name(), "mine");
  EXPECT_EQ(Parse({"hostname"}, Ctx({"SLURM_JOB_NAME=mine"})).step_name, "hostname");
}

TEST(SrunAllocation, FewerTasksThanNodesLowersTheNodeCount) {
  // srun -n1 in a three-node job of one task per node: one node.
  auto r = Parse({"-n1", "hostname"}, Ctx(JobEnv()));
  EXPECT_EQ(r.spec.num_tasks(), 1u);
  EXPECT_EQ(r.spec.min_nodes(), 1u);
  EXPECT_EQ(r.spec.max_nodes(), 1u);
  EXPECT_EQ(r.spec.ntasks_per_node(), 1u);
  // -n2 in a job of two tasks per node: two nodes, and 2 per node x 2 nodes != 2 drops it.
  auto two = Parse({"-n", "2", "a"},
                   Ctx({"SLURM_JOB_ID=5", "SLURM_JOB_NUM_NODES=3", "SLURM_NTASKS_PER_NODE=2"}));
  EXPECT_EQ(two.spec.min_nodes(), 2u);
  EXPECT_EQ(two.spec.ntasks_per_node(), 0u);
  // Same on the command line: -N3 -n1 is one node, -N2-5 -n3 is 2-3.
  auto c = Parse({"-N3", "-n1", "a"});
  EXPECT_EQ(c.spec.min_nodes(), 1u);
  EXPECT_EQ(c.spec.max_nodes(), 1u);
  auto range = Parse({"-N2-5", "-n3", "a"});
  EXPECT_EQ(range.spec.min_nodes(), 2u);
  EXPECT_EQ(range.spec.max_nodes(), 3u);
  // More tasks than nodes: nothing changes.
  auto more = Parse({"-N1", "hostname"}, Ctx({"SLURM_NTASKS=6", "SLURM_JOB_ID=5"}));
  EXPECT_EQ(more.spec.min_nodes(), 1u);
  EXPECT_EQ(more.spec.num_tasks(), 6u);
}

TEST(SrunAllocation, NtasksPerNodeGivesWayWhenItDisagrees) {
  EXPECT_EQ(Parse({"-N2", "-n3", "--ntasks-per-node=2", "a"}).spec.ntasks_per_node(), 0u);
  EXPECT_EQ(Parse({"-N2", "-n4", "--ntasks-per-node=2", "a"}).spec.ntasks_per_node(), 2u);
  EXPECT_EQ(Parse({"-N2-3", "-n4", "--ntasks-per-node=2", "a"}).spec.ntasks_per_node(), 2u);
  EXPECT_EQ(Parse({"-n5", "--ntasks-per-node=2", "a"}).spec.ntasks_per_node(), 2u);
  EXPECT_EQ(Parse({"-N2", "--ntasks-per-node=2", "a"}).spec.ntasks_per_node(), 2u);
}

TEST(SrunAllocation, StepCreateRequest) {
  auto r = Parse({"-N2", "-n4", "--overlap", "--mpi=pmix", "--cpu-bind=map_cpu:0*2,3", "-t", "5",
                  "--mem=1G", "-D", "/scratch", "-r", "1", "--gres=gpu:1", "app", "x"},
                 Ctx(JobEnv()));
  pb::StepCreateRequest s = MakeStepCreateRequest(r);
  EXPECT_EQ(s.job_id(), 42u);
  EXPECT_EQ(s.name(), "app");
  EXPECT_EQ(s.min_nodes(), 2u);
  EXPECT_EQ(s.max_nodes(), 2u);
  EXPECT_EQ(s.num_tasks(), 4u);
  EXPECT_EQ(s.ntasks_per_node(), 0u);  // inherited 1 x 2 nodes != 4 tasks
  EXPECT_TRUE(s.overlap());
  EXPECT_EQ(s.mpi(), "pmix");
  EXPECT_EQ(s.cpu_bind(), "map_cpu:0,0,3");
  EXPECT_EQ(s.time_limit(), 5u);
  EXPECT_EQ(s.mem_per_node_mb(), 1024u);
  EXPECT_EQ(s.work_dir(), "/scratch");
  EXPECT_TRUE(s.relative_given());
  EXPECT_EQ(s.relative(), 1u);
  EXPECT_EQ(s.gres(), "gpu:1");
  EXPECT_EQ(std::vector<std::string>(s.argv().begin(), s.argv().end()), (Args{"app", "x"}));
  // Not given: the job's time limit and all of its GRES.
  auto d = MakeStepCreateRequest(Parse({"a"}, Ctx(JobEnv())));
  EXPECT_EQ(d.time_limit(), kTimeNoVal);
  EXPECT_EQ(d.gres(), "");
  EXPECT_FALSE(d.relative_given());
  EXPECT_EQ(
      Parse({"a"}, Ctx({"SLURM_JOB_ID=1", "SLURM_GRES=gpu:2", "SLURM_STEP_GRES=none"})).step_gres,
      "none");
}

// ---------------------------------------------------------------------------------------------
// MPI launchers: every option they pass must parse
// ---------------------------------------------------------------------------------------------

TEST(SrunLaunchers, OpenMpi41MpirunDaemons) {
  // Open MPI 4.1's plm/slurm, from a batch job of three nodes (the mpirun host is one of them):
  // srun --ntasks-per-node=1 --kill-on-bad-exit --mpi=none --nodes=2 --nodelist=... --ntasks=2
  // orted <orted args>, with SLURM_CPU_BIND=none put in srun's environment.
  Env env = JobEnv();
  env.push_back("SLURM_CPU_BIND=none");
  Args argv = {"--ntasks-per-node=1",
               "--kill-on-bad-exit",
               "--mpi=none",
               "--nodes=2",
               "--nodelist=n2,n3",
               "--ntasks=2",
               "orted",
               "-mca",
               "ess",
               "\"slurm\"",
               "-mca",
               "ess_base_jobid",
               "\"2752970752\"",
               "-mca",
               "ess_base_vpid",
               "\"1\"",
               "-mca",
               "ess_base_num_procs",
               "\"3\"",
               "-mca",
               "orte_node_regex",
               "\"n[1:1-3]@0(3)\"",
               "-mca",
               "orte_hnp_uri",
               "\"2752970752.0;tcp://10.0.0.1:41231\""};
  auto r = Parse(argv, Ctx(env));
  EXPECT_EQ(r.job_id, 42u);
  EXPECT_EQ(r.spec.ntasks_per_node(), 1u);
  EXPECT_EQ(r.kill_on_bad_exit, true);
  EXPECT_EQ(r.mpi, "none");
  EXPECT_EQ(r.spec.min_nodes(), 2u);
  EXPECT_EQ(r.spec.max_nodes(), 2u);
  EXPECT_EQ(r.spec.nodelist(), "n2,n3");
  EXPECT_EQ(r.spec.num_tasks(), 2u);
  EXPECT_EQ(r.cpu_bind.type, SrunCpuBind::Type::kNone);
  EXPECT_EQ(r.step_name, "orted");
  EXPECT_EQ(r.argv.size(), 19u);
  EXPECT_EQ(r.argv[0], "orted");
  EXPECT_EQ(r.argv[1], "-mca");
  // When it uses every allocated node it leaves --nodes/--nodelist out.
  auto all = Parse({"--ntasks-per-node=1", "--kill-on-bad-exit", "--mpi=none", "--ntasks=3",
                    "orted", "-mca", "ess", "\"slurm\""},
                   Ctx(env));
  EXPECT_EQ(all.spec.num_tasks(), 3u);
  EXPECT_EQ(all.spec.min_nodes(), 3u);
  EXPECT_EQ(all.spec.ntasks_per_node(), 1u);
}

TEST(SrunLaunchers, OlderAndNewerOpenMpi) {
  // Open MPI up to 4.0 passed --cpu_bind=none (and --resv-ports=1 when asked); PRRTE (Open MPI
  // 5) passes --cpu-bind=none.
  auto old = Parse({"--resv-ports=1", "--ntasks-per-node=1", "--kill-on-bad-exit",
                    "--cpu_bind=none", "--nodes=2", "--nodelist=n2,n3", "--ntasks=2", "orted"},
                   Ctx(JobEnv()));
  EXPECT_EQ(old.cpu_bind.text, "none");
  auto prrte = Parse({"--ntasks-per-node=1", "--kill-on-bad-exit", "--mpi=none", "--cpu-bind=none",
                      "--nodes=2", "--nodelist=n2,n3", "--ntasks=2", "prted"},
                     Ctx(JobEnv()));
  EXPECT_EQ(prrte.cpu_bind.text, "none");
  EXPECT_EQ(prrte.mpi, "none");
  EXPECT_EQ(Parse({"--cpu_b=cores", "a"}).cpu_bind.text, "cores");
}

TEST(SrunLaunchers, MpichHydra) {
  // MPICH's hydra (bootstrap slurm): srun -N n -n n --nodelist list --input none proxy ...
  auto r = Parse({"--nodelist",
                  "n1,n2",
                  "-N",
                  "2",
                  "-n",
                  "2",
                  "--input",
                  "none",
                  "/usr/bin/hydra_pmi_proxy",
                  "--control-port",
                  "n1:33445",
                  "--rmk",
                  "slurm",
                  "--launcher",
                  "slurm",
                  "--demux",
                  "poll",
                  "--pgid",
                  "0",
                  "--retries",
                  "10",
                  "--usize",
                  "-2",
                  "--proxy-id",
                  "-1"},
                 Ctx(JobEnv()));
  EXPECT_EQ(r.spec.min_nodes(), 2u);
  EXPECT_EQ(r.spec.num_tasks(), 2u);
  EXPECT_EQ(r.input.mode, SrunIo::Mode::kNone);
  EXPECT_EQ(r.argv[0], "/usr/bin/hydra_pmi_proxy");
  EXPECT_EQ(r.step_name, "hydra_pmi_proxy");
}

// ---------------------------------------------------------------------------------------------
// -i/-o/-e, --pty
// ---------------------------------------------------------------------------------------------

TEST(SrunIoModes, Forms) {
  auto r = Parse({"-i", "3", "-o", "job-%j-%2t.out", "-e", "none", "a"});
  EXPECT_EQ(r.input.mode, SrunIo::Mode::kTask);
  EXPECT_EQ(r.input.task, 3u);
  EXPECT_EQ(r.output.mode, SrunIo::Mode::kFile);
  EXPECT_TRUE(r.output.on_node);
  EXPECT_EQ(r.error.mode, SrunIo::Mode::kNone);
  auto f = Parse({"-o", "job%J.out", "-i", "ALL", "a"});
  EXPECT_FALSE(f.output.on_node);  // srun writes the one file
  EXPECT_EQ(f.input.mode, SrunIo::Mode::kAll);
  EXPECT_TRUE(Parse({"-o", "%N.log", "a"}).output.on_node);
  EXPECT_TRUE(Parse({"-o", "%n.log", "a"}).output.on_node);
  EXPECT_FALSE(Parse({"-o", "%%t.log", "a"}).output.on_node);
  EXPECT_FALSE(Parse({"-o", "\\%t.log", "a"}).output.on_node);
}

TEST(SrunIoModes, ErrorFollowsOutput) {
  auto r = Parse({"-o", "out.txt", "a"});
  EXPECT_EQ(r.error.mode, SrunIo::Mode::kFile);
  EXPECT_EQ(r.error.pattern, "out.txt");
  EXPECT_FALSE(r.error.given);
  auto t = Parse({"-o", "0", "a"});
  EXPECT_EQ(t.error.mode, SrunIo::Mode::kTask);
}

TEST(SrunIoModes, ForTasks) {
  SrunIo all, none, task, file;
  none.mode = SrunIo::Mode::kNone;
  task.mode = SrunIo::Mode::kTask;
  task.task = 5;
  file.mode = SrunIo::Mode::kFile;
  file.pattern = "in-%t";
  EXPECT_EQ(SrunIoForTasks(all, 4), "all");
  EXPECT_EQ(SrunIoForTasks(none, 4), "none");
  EXPECT_EQ(SrunIoForTasks(task, 8), "5");
  EXPECT_EQ(SrunIoForTasks(task, 4), "./5");  // past the last task: a file named 5
  EXPECT_EQ(SrunIoForTasks(file, 4), "in-%t");
}

TEST(SrunIoModes, Pty) {
  auto r = Parse({"--pty", "bash"});
  EXPECT_TRUE(r.pty);
  EXPECT_TRUE(r.unbuffered);
  EXPECT_EQ(r.argv, (Args{"bash"}));
}

// ---------------------------------------------------------------------------------------------
// --cpu-bind and --mpi values
// ---------------------------------------------------------------------------------------------

TEST(SrunCpuBindValues, Accepted) {
  auto text = [](const std::string& v) {
    auto r = ParseCpuBind(v);
    EXPECT_TRUE(r.ok()) << v << ": " << r.error();
    return r.ok() ? r->text : std::string("?");
  };
  EXPECT_EQ(text("none"), "none");
  EXPECT_EQ(text("no"), "none");
  EXPECT_EQ(text("NONE"), "none");
  EXPECT_EQ(text("rank"), "rank");
  EXPECT_EQ(text("cores"), "cores");
  EXPECT_EQ(text("core"), "cores");
  EXPECT_EQ(text("Threads"), "threads");
  EXPECT_EQ(text("socket"), "sockets");
  EXPECT_EQ(text("ldoms"), "ldoms");
  EXPECT_EQ(text("rank_ldom"), "rank_ldom");
  EXPECT_EQ(text("verbose"), "verbose");
  EXPECT_EQ(text("q"), "");
  EXPECT_EQ(text("v,cores"), "verbose,cores");
  EXPECT_EQ(text("cores,verbose"), "verbose,cores");
  EXPECT_EQ(text("cores,none"), "none");
  EXPECT_EQ(text("none,cores"), "none");
  EXPECT_EQ(text("map_cpu:0,1"), "map_cpu:0,1");
  EXPECT_EQ(text("map_cpu:0*4,3*2"), "map_cpu:0,0,0,0,3,3");
  EXPECT_EQ(text("map_cpu:1,,2"), "map_cpu:1,2");
  EXPECT_EQ(text("mask_cpu:0x3,f"), "mask_cpu:0x3,0xf");
  EXPECT_EQ(text("mask_cpu:0x0F*2"), "mask_cpu:0xf,0xf");
  EXPECT_EQ(text("verbose,mask_cpu:0xffffffffffffffffff"), "verbose,mask_cpu:0xffffffffffffffffff");
  EXPECT_EQ(text("map_ldom:0,1"), "map_ldom:0,1");
  EXPECT_EQ(text("mask_ldom:0x1"), "mask_ldom:0x1");
  auto list = ParseCpuBind("map_cpu:2*2");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->type, SrunCpuBind::Type::kMapCpu);
  EXPECT_EQ(list->list, (std::vector<std::string>{"2", "2"}));
}

TEST(SrunCpuBindValues, Rejected) {
  const std::string fatal = "\nsrun: fatal: Failed to parse --cpu-bind= values.";
  EXPECT_EQ(ParseCpuBind("foo").error(),
            "srun: error: unrecognized --cpu-bind argument \"foo\"" + fatal);
  EXPECT_EQ(ParseCpuBind("boards").error(),
            "srun: error: unrecognized --cpu-bind argument \"boards\"" + fatal);
  EXPECT_EQ(ParseCpuBind("").error(), "srun: error: unrecognized --cpu-bind argument \"\"" + fatal);
  EXPECT_EQ(ParseCpuBind("map_cpu").error(),
            "srun: error: missing list for \"--cpu-bind=map_cpu:<list>\"" + fatal);
  EXPECT_EQ(ParseCpuBind("map_cpu:").error(),
            "srun: error: missing list for \"--cpu-bind=map_cpu:<list>\"" + fatal);
  EXPECT_EQ(ParseCpuBind("map_cpu:0x3,7").error(),
            "srun: error: Failed to validate number: 0x3, the offending character is x" + fatal);
  EXPECT_EQ(ParseCpuBind("map_cpu:1*x").error(),
            "srun: error: Failed to validate number: *x, the offending character is x" + fatal);
  EXPECT_EQ(ParseCpuBind("map_cpu:1*0").error(),
            "srun: error: Invalid map_cpu multiplier: 0" + fatal);
  EXPECT_EQ(ParseCpuBind("mask_cpu:0xZ").error(),
            "srun: error: Failed to validate number: Z, the offending character is Z" + fatal);
  EXPECT_EQ(Error({"--cpu-bind=off", "a"}),
            "srun: error: unrecognized --cpu-bind argument \"off\"" + fatal);
}

TEST(SrunMpiValues, SlurmSpellings) {
  EXPECT_EQ(*ParseMpiType("none"), "none");
  EXPECT_EQ(*ParseMpiType("openmpi"), "none");
  EXPECT_EQ(*ParseMpiType("pmi2"), "pmi2");
  EXPECT_EQ(*ParseMpiType("pmix"), "pmix");
  EXPECT_EQ(*ParseMpiType("pmix_v3"), "pmix");
  EXPECT_EQ(*ParseMpiType("pmix_v4"), "pmix");
  EXPECT_EQ(*ParseMpiType("pmix_v5"), "pmix");
  EXPECT_FALSE(ParseMpiType("cray_shasta").ok());
  EXPECT_FALSE(ParseMpiType("list").ok());
}

TEST(SrunDistribution, Forms) {
  auto d = [](const std::string& v) { return Parse({"-m", v, "a"}).distribution; };
  EXPECT_EQ(d("block"), "block");
  EXPECT_EQ(d("BLOCK"), "block");
  EXPECT_EQ(d("*"), "block");
  EXPECT_EQ(d("*:*:*"), "block:cyclic:cyclic");
  EXPECT_EQ(d("block:block:fcyclic"), "block:block:fcyclic");
  EXPECT_EQ(d("cyclic:cyclic,Pack"), "cyclic:cyclic,pack");
  EXPECT_EQ(d("block,nopack"), "block,nopack");
  EXPECT_EQ(d("plane=4"), "plane=4");
  EXPECT_EQ(d("arbitrary"), "arbitrary");
  EXPECT_EQ(Parse({"-m", "plane", "a"}, Ctx({"SLURM_DIST_PLANESIZE=2"})).distribution, "plane=2");
}

// ---------------------------------------------------------------------------------------------
// Unsupported and ignored options
// ---------------------------------------------------------------------------------------------

TEST(SrunCompat, AcceptedWithOrWithoutAWarning) {
  auto r = Parse({"--propagate", "--propagate=CORE", "--cpu-freq=high", "--hint=nomultithread",
                  "-T2", "--slurmd-debug=1", "--mem-bind=none", "--gpu-bind=none", "a"});
  EXPECT_TRUE(r.warnings.empty());
  auto w = Parse({"--bcast", "--prolog=x", "-M", "c1", "--uid=0", "a"});
  ASSERT_EQ(w.warnings.size(), 4u);
  EXPECT_EQ(w.warnings[0], "srun: warning: option --bcast is not supported by Shoal; ignored");
  EXPECT_EQ(w.warnings[2], "srun: warning: option --clusters is not supported by Shoal; ignored");
  // Aliases of one option do not make a prefix ambiguous, and read under the main name.
  EXPECT_EQ(Parse({"--tasks-per-node=2", "a"}).spec.ntasks_per_node(), 2u);
  EXPECT_EQ(Parse({"--pack-group=1", "a"}).het_group, "1");
}

// ---------------------------------------------------------------------------------------------
// --multi-prog
// ---------------------------------------------------------------------------------------------

const char kSilly[] =
    "###################################################################\n"
    "# srun multiple program configuration file\n"
    "#\n"
    "# srun -n8 -l --multi-prog silly.conf\n"
    "###################################################################\n"
    "4-6       hostname\n"
    "1,7       echo  task:%t\n"
    "0,2-3     echo  offset:%o\n";

TEST(SrunMultiProg, ManPageExample) {
  auto r = Parse({"-n8", "-l", "--multi-prog", "silly.conf"});
  EXPECT_TRUE(r.multi_prog);
  EXPECT_EQ(r.argv, (Args{"silly.conf"}));
  auto tasks = ParseMultiProgConfig(kSilly, "silly.conf", 8);
  ASSERT_TRUE(tasks.ok()) << tasks.error();
  ASSERT_EQ(tasks->size(), 8u);
  EXPECT_EQ((*tasks)[0], (Args{"echo", "offset:0"}));
  EXPECT_EQ((*tasks)[1], (Args{"echo", "task:1"}));
  EXPECT_EQ((*tasks)[2], (Args{"echo", "offset:1"}));
  EXPECT_EQ((*tasks)[3], (Args{"echo", "offset:2"}));
  EXPECT_EQ((*tasks)[4], (Args{"hostname"}));
  EXPECT_EQ((*tasks)[6], (Args{"hostname"}));
  EXPECT_EQ((*tasks)[7], (Args{"echo", "task:7"}));
  EXPECT_EQ(MultiProgTaskCount(kSilly), 8u);
}

TEST(SrunMultiProg, StarQuotesContinuationsAndExtraArgs) {
  const char conf[] =
      "  0   master 'literal %t' \"rank %t\"\n"
      "   # an indented comment\n"
      "\n"
      "1 worker a \\\n"
      "   b\n"
      "*   helper %o\n";
  auto tasks = ParseMultiProgConfig(conf, "x.conf", 5, {"--extra"});
  ASSERT_TRUE(tasks.ok()) << tasks.error();
  EXPECT_EQ((*tasks)[0], (Args{"master", "literal %t", "rank 0", "--extra"}));
  EXPECT_EQ((*tasks)[1], (Args{"worker", "a", "b", "--extra"}));
  EXPECT_EQ((*tasks)[2], (Args{"helper", "0", "--extra"}));
  EXPECT_EQ((*tasks)[4], (Args{"helper", "2", "--extra"}));
  EXPECT_EQ(MultiProgTaskCount(conf), 2u);
  EXPECT_EQ(MultiProgTaskCount("* a\n"), 1u);
  auto lenient = ParseMultiProgConfig("00 a\n0-,,1 b\n* c\n* d\n", "y", 3);
  ASSERT_FALSE(lenient.ok());  // "0-" is 0 again: a duplicate
  auto ok = ParseMultiProgConfig("00 a\n1-,,2 b\n* c\n* d\n", "y", 4);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ((*ok)[3], (Args{"c"}));
}

TEST(SrunMultiProg, Errors) {
  auto err = [](const std::string& text, uint32_t n) {
    auto r = ParseMultiProgConfig(text, "/tmp/mp.conf", n);
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.error();
  };
  EXPECT_EQ(err("0 true\n", 2),
            "srun: error: Configuration file /tmp/mp.conf invalid, no record for task id 1");
  EXPECT_EQ(err("0-1 true\n1 false\n", 2),
            "srun: error: Duplicate record for task 1\n"
            "srun: error: Line 2 of configuration file /tmp/mp.conf invalid");
  EXPECT_EQ(err("x true\n", 2),
            "srun: error: Invalid task range specification (x)\n"
            "srun: error: Line 1 of configuration file /tmp/mp.conf invalid");
  EXPECT_EQ(err("-1 true\n", 2),
            "srun: error: Invalid task range specification (-1)\n"
            "srun: error: Line 1 of configuration file /tmp/mp.conf invalid");
  EXPECT_EQ(err("3-1 true\n", 4),
            "srun: error: Invalid task range, 3-1\n"
            "srun: error: Line 1 of configuration file /tmp/mp.conf invalid");
  EXPECT_EQ(err("0-9 true\n", 8),
            "srun: error: Invalid task id, 8 >= ntasks\n"
            "srun: error: Line 1 of configuration file /tmp/mp.conf invalid");
  EXPECT_EQ(err("* true\n0 false\n", 2),
            "srun: error: Task range specification with asterisk must be last\n"
            "srun: error: Line 2 of configuration file /tmp/mp.conf invalid");
  EXPECT_EQ(err("0\n1 true\n", 2),
            "srun: error: Line 1 of configuration file /tmp/mp.conf invalid");
  EXPECT_EQ(err("", 1),
            "srun: error: Configuration file /tmp/mp.conf invalid, no record for task id 0");
}

TEST(SrunAllocation, HintAndMemBind) {
  // --hint chooses the binding type when --cpu-bind names none; verbose is kept.
  auto s = MakeStepCreateRequest(Parse({"--hint=compute_bound", "--cpu-bind=verbose", "a"}));
  EXPECT_EQ(s.cpu_bind(), "verbose,cores");
  EXPECT_EQ(s.hint(), "compute_bound");
  EXPECT_EQ(MakeStepCreateRequest(Parse({"--hint=multithread", "a"})).cpu_bind(), "threads");
  EXPECT_EQ(
      MakeStepCreateRequest(Parse({"--hint=multithread", "--cpu-bind=map_cpu:1", "a"})).cpu_bind(),
      "map_cpu:1");
  s = MakeStepCreateRequest(Parse({"--mem-bind=v,map_mem:0", "a"}));
  EXPECT_EQ(s.mem_bind(), "v,map_mem:0");
  EXPECT_EQ(
      MakeStepCreateRequest(Parse({"a"}, Ctx({"SLURM_MEM_BIND=local", "SLURM_HINT=nomultithread"})))
          .mem_bind(),
      "local");
  auto help = Parse({"--mem-bind=help"});
  EXPECT_EQ(help.action, SrunAction::kBindHelp);
  EXPECT_EQ(help.help_text.rfind("Memory bind options:\n", 0), 0u);
  EXPECT_EQ(Parse({"--hint=help"}).help_text.rfind("Application hint options:\n", 0), 0u);
  EXPECT_EQ(Error({"--hint=fast", "a"}),
            "srun: error: unrecognized --hint argument \"fast\", see --hint=help");
  EXPECT_EQ(Error({"--mem-bind=map_mem:x", "a"}),
            "srun: error: Failed to validate number: x, the offending character is x");
}

}  // namespace
}  // namespace shoal::cli
