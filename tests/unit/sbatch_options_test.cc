// sbatch's pure option logic: command-line forms, #SBATCH directives, SBATCH_* variables and
// their precedence, --wrap, --export, script checks, error messages.
#include "cli/sbatch_options.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/units.h"

namespace shoal::cli {
namespace {

using Args = std::vector<std::string>;

const char kHelloEnv[] =
    "#!/bin/bash\n"
    "#SBATCH -J hello-env                 # job name\n"
    "#SBATCH -o hello-env-%j.out          # standard output, %j = job id\n"
    "#SBATCH -e hello-env-%j.err          # standard error\n"
    "#SBATCH -t 0-0:05:00                 # 5 minutes\n"
    "#SBATCH --nodes=3                    # three nodes\n"
    "#SBATCH --ntasks-per-node=1          # one task on each\n"
    "\n"
    "echo \"Date start                = $(date)\"\n"
    "echo \"Job Name                  = ${SLURM_JOB_NAME}\"\n";

const char kPlain[] = "#!/bin/sh\necho hi\n";

SbatchContext Ctx(std::vector<std::string> env = {"HOME=/home/u", "PATH=/usr/bin:/bin",
                                                  "SLURM_CONF=/etc/slurm/slurm.conf"}) {
  SbatchContext c;
  c.environment = std::move(env);
  c.cwd = "/home/u/work";
  c.hostname = "login1";
  c.user_name = "u";
  c.uid = 1000;
  c.gid = 100;
  c.now = 1700000000;
  return c;
}

SbatchCommandLine Cl(const Args& args) {
  auto cl = ParseSbatchCommandLine(args);
  EXPECT_TRUE(cl.ok()) << cl.error();
  return cl.ok() ? *cl : SbatchCommandLine{};
}

// Parses, builds and expects success.
SbatchRequest Build(const Args& args, const std::string& script = kPlain,
                    const SbatchContext& ctx = Ctx()) {
  auto cl = Cl(args);
  auto req = BuildSbatchRequest(cl, script, ctx);
  EXPECT_TRUE(req.ok()) << req.error();
  return req.ok() ? *req : SbatchRequest{};
}

// Parses and builds, expects failure, returns the message.
std::string BuildError(const Args& args, const std::string& script = kPlain,
                       const SbatchContext& ctx = Ctx()) {
  auto cl = ParseSbatchCommandLine(args);
  if (!cl.ok()) return cl.error();
  auto req = BuildSbatchRequest(*cl, script, ctx);
  EXPECT_FALSE(req.ok());
  return req.ok() ? std::string() : req.error();
}

bool HasEnv(const pb::JobSpec& spec, const std::string& entry) {
  return std::find(spec.environment().begin(), spec.environment().end(), entry) !=
         spec.environment().end();
}

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

TEST(SbatchCommandLine, TimeInEveryForm) {
  for (const Args& args : {Args{"--time=10", "job.sh"}, Args{"--time", "10", "job.sh"},
                           Args{"-t10", "job.sh"}, Args{"-t", "10", "job.sh"}}) {
    EXPECT_EQ(Build(args).spec.time_limit(), 10u) << args[0];
  }
}

TEST(SbatchCommandLine, LongAndShortForms) {
  auto r = Build({"-J",
                  "name",
                  "-p",
                  "debug",
                  "-A",
                  "acct",
                  "-q",
                  "high",
                  "-o",
                  "out-%j",
                  "-e",
                  "err-%j",
                  "-i",
                  "in.txt",
                  "-N",
                  "2-4",
                  "-n",
                  "8",
                  "-c",
                  "2",
                  "--ntasks-per-node=4",
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
                  "-d",
                  "afterok:5",
                  "-a",
                  "1-3",
                  "-L",
                  "lic:2",
                  "--comment=hi there",
                  "--wckey=wk",
                  "--reservation=r",
                  "--mail-type=END,FAIL",
                  "--mail-user=me@x",
                  "--mincpus=4",
                  "-O",
                  "--exclusive",
                  "-H",
                  "job.sh"});
  const auto& s = r.spec;
  EXPECT_EQ(s.name(), "name");
  EXPECT_EQ(s.partition(), "debug");
  EXPECT_EQ(s.account(), "acct");
  EXPECT_EQ(s.qos(), "high");
  EXPECT_EQ(s.std_out(), "out-%j");
  EXPECT_EQ(s.std_err(), "err-%j");
  EXPECT_EQ(s.std_in(), "in.txt");
  EXPECT_EQ(s.min_nodes(), 2u);
  EXPECT_EQ(s.max_nodes(), 4u);
  EXPECT_EQ(s.num_tasks(), 8u);
  EXPECT_EQ(s.cpus_per_task(), 2u);
  EXPECT_EQ(s.ntasks_per_node(), 4u);
  EXPECT_EQ(s.mem_per_node_mb(), 4096u);
  EXPECT_EQ(s.gres(), "gpu:a100:2");
  EXPECT_EQ(s.gpus(), "1");
  EXPECT_EQ(s.nodelist(), "n[1-2]");
  EXPECT_EQ(s.exclude(), "n3");
  EXPECT_EQ(s.constraint(), "ib");
  EXPECT_EQ(s.dependency(), "afterok:5");
  EXPECT_EQ(s.array(), "1-3");
  EXPECT_EQ(s.licenses(), "lic:2");
  EXPECT_EQ(s.comment(), "hi there");
  EXPECT_EQ(s.wckey(), "wk");
  EXPECT_EQ(s.reservation(), "r");
  EXPECT_EQ(s.mail_type(), "END,FAIL");
  EXPECT_EQ(s.mail_user(), "me@x");
  EXPECT_EQ(s.min_cpus_per_node(), 4u);
  EXPECT_TRUE(s.overcommit());
  EXPECT_TRUE(s.exclusive());
  EXPECT_TRUE(s.hold());
}

TEST(SbatchCommandLine, ClusteredShortFlagsAndAttachedValue) {
  auto r = Build({"-HvWJname", "job.sh"});
  EXPECT_TRUE(r.spec.hold());
  EXPECT_EQ(r.verbose, 1);
  EXPECT_TRUE(r.wait);
  EXPECT_TRUE(r.spec.wait());
  EXPECT_EQ(r.spec.name(), "name");
  EXPECT_EQ(Build({"-vvv", "job.sh"}).verbose, 3);
}

TEST(SbatchCommandLine, OptionsStopAtTheScript) {
  auto cl = Cl({"-J", "x", "dir/job.sh", "-t", "5", "--foo"});
  ASSERT_TRUE(cl.script_path);
  EXPECT_EQ(*cl.script_path, "dir/job.sh");
  EXPECT_EQ(cl.script_args, (Args{"-t", "5", "--foo"}));
  auto r = BuildSbatchRequest(cl, kPlain, Ctx());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->spec.time_limit(), kTimeNoVal);
  EXPECT_EQ(r->spec.argv_size(), 3);
  EXPECT_EQ(r->spec.argv(2), "--foo");
}

TEST(SbatchCommandLine, DoubleDashEndsOptions) {
  auto cl = Cl({"-p", "a", "--", "-weird-name.sh", "x"});
  ASSERT_TRUE(cl.script_path);
  EXPECT_EQ(*cl.script_path, "-weird-name.sh");
  EXPECT_EQ(cl.script_args, (Args{"x"}));
}

TEST(SbatchCommandLine, NoScriptMeansStdin) {
  auto cl = Cl({"-p", "a"});
  EXPECT_FALSE(cl.script_path);
  EXPECT_EQ(BuildSbatchRequest(cl, kPlain, Ctx())->spec.name(), "sbatch");
}

TEST(SbatchCommandLine, UnknownOption) {
  auto cl = ParseSbatchCommandLine({"--foo", "job.sh"});
  ASSERT_FALSE(cl.ok());
  EXPECT_EQ(cl.error(),
            "sbatch: unrecognized option '--foo'\nTry \"sbatch --help\" for more information");
  EXPECT_EQ(ParseSbatchCommandLine({"--foo=1"}).error(),
            "sbatch: unrecognized option '--foo=1'\nTry \"sbatch --help\" for more information");
  EXPECT_EQ(ParseSbatchCommandLine({"-Z"}).error(),
            "sbatch: invalid option -- 'Z'\nTry \"sbatch --help\" for more information");
}

TEST(SbatchCommandLine, ArgumentErrors) {
  EXPECT_EQ(ParseSbatchCommandLine({"--time"}).error(),
            "sbatch: option '--time' requires an argument\n"
            "Try \"sbatch --help\" for more information");
  EXPECT_EQ(ParseSbatchCommandLine({"-t"}).error(),
            "sbatch: option requires an argument -- 't'\n"
            "Try \"sbatch --help\" for more information");
  EXPECT_EQ(ParseSbatchCommandLine({"--hold=yes"}).error(),
            "sbatch: option '--hold' doesn't allow an argument\n"
            "Try \"sbatch --help\" for more information");
  EXPECT_EQ(ParseSbatchCommandLine({"--mem-per", "1"}).error(),
            "sbatch: option '--mem-per' is ambiguous; possibilities: '--mem-per-cpu' "
            "'--mem-per-gpu'\nTry \"sbatch --help\" for more information");
}

TEST(SbatchCommandLine, ExactNameBeatsPrefix) {
  EXPECT_EQ(Build({"--mem=100", "j"}).spec.mem_per_node_mb(), 100u);
  EXPECT_EQ(Build({"--time=3", "j"}).spec.time_limit(), 3u);
  EXPECT_EQ(Build({"--part=p1", "j"}).spec.partition(), "p1");
}

TEST(SbatchCommandLine, HelpUsageVersion) {
  EXPECT_EQ(Cl({"--help"}).action, SbatchAction::kHelp);
  EXPECT_EQ(Cl({"-h", "--foo"}).action, SbatchAction::kHelp);  // stops at -h
  EXPECT_EQ(Cl({"--usage"}).action, SbatchAction::kUsage);
  EXPECT_EQ(Cl({"-V"}).action, SbatchAction::kVersion);
  EXPECT_EQ(Cl({"--version"}).action, SbatchAction::kVersion);
  EXPECT_EQ(Cl({"-vV"}).action, SbatchAction::kVersion);
  EXPECT_EQ(Cl({"job.sh"}).action, SbatchAction::kSubmit);
  EXPECT_NE(SbatchHelpText().find("--wrap"), std::string::npos);
  EXPECT_EQ(SbatchUsageText().rfind("Usage: sbatch", 0), 0u);
}

TEST(SbatchCommandLine, AcceptedForCompatibility) {
  auto r = Build({"--get-user-env", "--propagate", "--propagate=STACK", "-k", "--no-kill",
                  "--get-user-env=10L", "j"});
  EXPECT_TRUE(r.warnings.empty());
}

TEST(SbatchCommandLine, UnsupportedOptionsWarn) {
  auto r = Build({"--tmp=10G", "--hint=nomultithread", "j"});
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0], "sbatch: warning: option --tmp is not supported by Shoal; ignored");
}

TEST(SbatchCommandLine, HeterogeneousRejected) {
  EXPECT_EQ(ParseSbatchCommandLine({"-n1", ":", "-n2", "job.sh"}).error(),
            "sbatch: error: Heterogeneous jobs (\":\") are not supported");
}

// ---------------------------------------------------------------------------------------------
// Defaults and context
// ---------------------------------------------------------------------------------------------

TEST(SbatchBuild, Defaults) {
  auto r = Build({"/x/y/job.sh", "a1"});
  const auto& s = r.spec;
  EXPECT_EQ(s.name(), "job.sh");
  EXPECT_EQ(s.script(), kPlain);
  EXPECT_EQ(s.argv_size(), 1);
  EXPECT_EQ(s.time_limit(), kTimeNoVal);
  EXPECT_EQ(s.requeue(), -1);
  EXPECT_EQ(s.min_nodes(), 0u);
  EXPECT_EQ(s.max_nodes(), 0u);
  EXPECT_EQ(s.work_dir(), "/home/u/work");
  EXPECT_EQ(s.submit_dir(), "/home/u/work");
  EXPECT_EQ(s.submit_host(), "login1");
  EXPECT_EQ(s.user_name(), "u");
  EXPECT_EQ(s.uid(), 1000u);
  EXPECT_EQ(s.gid(), 100u);
  EXPECT_EQ(s.begin_time(), 0);
  EXPECT_EQ(s.std_out(), "");
  EXPECT_FALSE(s.open_mode_append());
  EXPECT_FALSE(r.parsable);
  EXPECT_FALSE(r.quiet);
  EXPECT_FALSE(r.test_only);
  // --export default: the whole environment, unchanged.
  EXPECT_EQ(s.environment_size(), 3);
  EXPECT_TRUE(HasEnv(s, "HOME=/home/u"));
}

TEST(SbatchBuild, ChdirResolvesAgainstCwd) {
  EXPECT_EQ(Build({"-D", "out", "j"}).spec.work_dir(), "/home/u/work/out");
  EXPECT_EQ(Build({"-D", "./out/./x/", "j"}).spec.work_dir(), "/home/u/work/out/x");
  EXPECT_EQ(Build({"--chdir=/scratch", "j"}).spec.work_dir(), "/scratch");
  EXPECT_EQ(Build({"-D", ".", "j"}).spec.work_dir(), "/home/u/work");
  EXPECT_EQ(Build({"-D", "/tmp", "j"}).spec.submit_dir(), "/home/u/work");
  auto cl = Cl({"-D", "rel", "job.sh"});
  EXPECT_EQ(cl.chdir.value_or(""), "rel");
}

TEST(SbatchBuild, TimeLimits) {
  EXPECT_EQ(Build({"-t", "0", "j"}).spec.time_limit(), kTimeInfinite);
  EXPECT_EQ(Build({"-t", "UNLIMITED", "j"}).spec.time_limit(), kTimeInfinite);
  EXPECT_EQ(Build({"-t", "1-00:00:00", "j"}).spec.time_limit(), 1440u);
  EXPECT_EQ(Build({"-t", "0:30", "j"}).spec.time_limit(), 1u);
  EXPECT_EQ(Build({"--time-min=10", "j"}).spec.time_limit(), kTimeNoVal);
}

TEST(SbatchBuild, NodeCounts) {
  auto r = Build({"-N", "3", "j"});
  EXPECT_EQ(r.spec.min_nodes(), 3u);
  EXPECT_EQ(r.spec.max_nodes(), 3u);
  r = Build({"-N1-", "j"});
  EXPECT_EQ(r.spec.min_nodes(), 1u);
  EXPECT_EQ(r.spec.max_nodes(), 0u);
  r = Build({"--nodes=1k", "j"});
  EXPECT_EQ(r.spec.min_nodes(), 1024u);
}

TEST(SbatchBuild, RequeueOpenModeNiceSignal) {
  EXPECT_EQ(Build({"--requeue", "j"}).spec.requeue(), 1);
  EXPECT_EQ(Build({"--no-requeue", "j"}).spec.requeue(), 0);
  EXPECT_EQ(Build({"--requeue", "--no-requeue", "j"}).spec.requeue(), 0);
  EXPECT_TRUE(Build({"--open-mode=append", "j"}).spec.open_mode_append());
  EXPECT_FALSE(Build({"--open-mode=truncate", "j"}).spec.open_mode_append());
  EXPECT_EQ(Build({"--nice", "j"}).spec.nice(), 100);
  EXPECT_EQ(Build({"--nice=-5", "j"}).spec.nice(), -5);
  EXPECT_EQ(Build({"--nice=7", "j"}).spec.nice(), 7);

  auto s = Build({"--signal=USR1", "j"}).spec;
  EXPECT_EQ(s.warn_signal(), SIGUSR1);
  EXPECT_EQ(s.warn_time(), 60u);
  EXPECT_FALSE(s.warn_batch_only());
  s = Build({"--signal=B:SIGUSR2@120", "j"}).spec;
  EXPECT_EQ(s.warn_signal(), SIGUSR2);
  EXPECT_EQ(s.warn_time(), 120u);
  EXPECT_TRUE(s.warn_batch_only());
  s = Build({"--signal=R:10@0", "j"}).spec;
  EXPECT_EQ(s.warn_signal(), 10);
  EXPECT_EQ(s.warn_time(), 0u);
  EXPECT_FALSE(s.warn_batch_only());
}

TEST(SbatchBuild, BeginDeadlineKillOnInvalidDep) {
  auto s = Build({"--begin=now+60", "--deadline=now+3600", "j"}).spec;
  EXPECT_EQ(s.begin_time(), 1700000060);
  EXPECT_EQ(s.deadline(), 1700003600);
  EXPECT_EQ(Build({"--kill-on-invalid-dep=yes", "j"}).spec.kill_on_invalid_dep(), 1u);
  EXPECT_EQ(Build({"--kill-on-invalid-dep=no", "j"}).spec.kill_on_invalid_dep(), 2u);
  EXPECT_EQ(Build({"j"}).spec.kill_on_invalid_dep(), 0u);
}

TEST(SbatchBuild, OutputNoneIsDevNull) {
  auto s = Build({"-o", "none", "-e", "NONE", "j"}).spec;
  EXPECT_EQ(s.std_out(), "/dev/null");
  EXPECT_EQ(s.std_err(), "/dev/null");
}

TEST(SbatchBuild, MemoryOptions) {
  EXPECT_EQ(Build({"--mem-per-cpu=2G", "j"}).spec.mem_per_cpu_mb(), 2048u);
  EXPECT_EQ(BuildError({"--mem=1G", "--mem-per-cpu=1G", "j"}),
            "sbatch: error: --mem and --mem-per-cpu are mutually exclusive.");
  // A higher-precedence source replaces the other kind.
  auto s = Build({"--mem-per-cpu=100", "j"}, "#!/bin/sh\n#SBATCH --mem=1G\n").spec;
  EXPECT_EQ(s.mem_per_cpu_mb(), 100u);
  EXPECT_EQ(s.mem_per_node_mb(), 0u);
}

TEST(SbatchBuild, GpusPerNodeBecomesGres) {
  EXPECT_EQ(Build({"--gpus-per-node=2", "j"}).spec.gres(), "gpu:2");
  EXPECT_EQ(Build({"--gpus-per-node=a100:2", "--gres=shard:1", "j"}).spec.gres(),
            "shard:1,gpu:a100:2");
  EXPECT_EQ(Build({"--gpus-per-node=2", "--gres=gpu:1", "j"}).spec.gres(), "gpu:1");
}

// ---------------------------------------------------------------------------------------------
// Bad values: every message names the problem
// ---------------------------------------------------------------------------------------------

TEST(SbatchErrors, BadValues) {
  EXPECT_EQ(BuildError({"--time=abc", "j"}), "sbatch: error: Invalid --time specification");
  EXPECT_EQ(BuildError({"--time-min=x", "j"}), "sbatch: error: Invalid --time-min specification");
  EXPECT_EQ(BuildError({"--mem=4X", "j"}), "sbatch: error: Invalid --mem specification");
  EXPECT_EQ(BuildError({"--mem-per-cpu=lots", "j"}),
            "sbatch: error: Invalid --mem-per-cpu specification");
  EXPECT_EQ(BuildError({"-N", "0", "j"}), "sbatch: error: Invalid node count specification: 0");
  EXPECT_EQ(BuildError({"-N", "4-2", "j"}),
            "sbatch: error: Maximum node count 2 is less than minimum node count 4");
  EXPECT_EQ(BuildError({"-N", "two", "j"}), "sbatch: error: \"two\" is not a valid node count");
  EXPECT_EQ(BuildError({"-n", "x", "j"}),
            "sbatch: error: Invalid numeric value \"x\" for --ntasks.");
  EXPECT_EQ(BuildError({"-n", "0", "j"}),
            "sbatch: error: Invalid numeric value \"0\" for --ntasks.");
  EXPECT_EQ(BuildError({"-c", "-1", "j"}),
            "sbatch: error: Invalid numeric value \"-1\" for --cpus-per-task.");
  EXPECT_EQ(BuildError({"--ntasks-per-node=a", "j"}),
            "sbatch: error: Invalid numeric value \"a\" for --ntasks-per-node.");
  EXPECT_EQ(BuildError({"--mincpus=z", "j"}),
            "sbatch: error: Invalid numeric value \"z\" for --mincpus.");
  EXPECT_EQ(BuildError({"--signal=FOO", "j"}), "sbatch: error: Invalid --signal specification");
  EXPECT_EQ(BuildError({"--signal=USR1@70000", "j"}),
            "sbatch: error: Invalid --signal specification");
  EXPECT_EQ(BuildError({"--signal=X:USR1", "j"}), "sbatch: error: Invalid --signal specification");
  EXPECT_EQ(BuildError({"--open-mode=sideways", "j"}),
            "sbatch: error: Invalid --open-mode specification");
  EXPECT_EQ(BuildError({"--array=5-1", "j"}), "sbatch: error: Invalid --array specification: 5-1");
  EXPECT_EQ(BuildError({"--array=1-5%0", "j"}),
            "sbatch: error: Invalid --array specification: 1-5%0");
  EXPECT_EQ(BuildError({"--array=a", "j"}), "sbatch: error: Invalid --array specification: a");
  EXPECT_EQ(BuildError({"--nice=abc", "j"}),
            "sbatch: error: Invalid --nice value \"abc\": must be between -2147483645 and "
            "2147483645");
  EXPECT_EQ(BuildError({"--kill-on-invalid-dep=maybe", "j"}),
            "sbatch: error: Invalid --kill-on-invalid-dep specification: maybe (expected yes "
            "or no)");
  EXPECT_EQ(BuildError({"--mail-type=SOMETIMES", "j"}),
            "sbatch: error: Invalid --mail-type argument: SOMETIMES");
  EXPECT_EQ(BuildError({"--begin=someday", "j"}),
            "sbatch: error: Invalid --begin specification: someday");
  EXPECT_EQ(BuildError({"--deadline=never", "j"}),
            "sbatch: error: Invalid --deadline specification: never");
  EXPECT_EQ(BuildError({"--exclusive=everyone", "j"}),
            "sbatch: error: Invalid --exclusive specification: everyone");
}

TEST(SbatchErrors, ValidArrays) {
  for (const char* a : {"0-15", "0,6,16-32", "0-15:4", "0-15%4", "1-7:2%3", "3", "0-7%3"}) {
    EXPECT_EQ(Build({std::string("--array=") + a, "j"}).spec.array(), a);
  }
}

// ---------------------------------------------------------------------------------------------
// Scripts and directives
// ---------------------------------------------------------------------------------------------

TEST(SbatchScript, Checks) {
  EXPECT_TRUE(CheckBatchScript(kPlain).ok());
  EXPECT_EQ(CheckBatchScript("").message(), "sbatch: error: Batch script is empty!");
  EXPECT_EQ(CheckBatchScript("  \n\n").message(),
            "sbatch: error: Batch script contains only whitespace!");
  EXPECT_EQ(CheckBatchScript("echo hi\n").message(),
            "sbatch: error: This does not look like a batch script.  The first\n"
            "sbatch: error: line must start with #! followed by the path to an interpreter.\n"
            "sbatch: error: For instance: #!/bin/sh");
  EXPECT_EQ(CheckBatchScript("#!/bin/sh\r\necho hi\r\n").message(),
            "sbatch: error: Batch script contains DOS line breaks (\\r\\n)\n"
            "sbatch: error: instead of expected UNIX line breaks (\\n).");
  EXPECT_EQ(CheckBatchScript(std::string("#!/bin/sh\necho\0x\n", 17)).message(),
            "sbatch: error: The batch script contains a NUL character, which is not allowed.");
  // BuildSbatchRequest checks too.
  EXPECT_EQ(BuildError({"j"}, "echo hi\n").substr(0, 54),
            "sbatch: error: This does not look like a batch script.");
}

TEST(SbatchScript, HelloEnvExample) {
  auto r = Build({"hello-env.sbatch"}, kHelloEnv);
  const auto& s = r.spec;
  EXPECT_EQ(s.name(), "hello-env");
  EXPECT_EQ(s.std_out(), "hello-env-%j.out");
  EXPECT_EQ(s.std_err(), "hello-env-%j.err");
  EXPECT_EQ(s.time_limit(), 5u);
  EXPECT_EQ(s.min_nodes(), 3u);
  EXPECT_EQ(s.max_nodes(), 3u);
  EXPECT_EQ(s.ntasks_per_node(), 1u);
  EXPECT_EQ(s.script(), kHelloEnv);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(SbatchScript, DirectiveWords) {
  EXPECT_EQ(SplitDirectiveWords(" -J hello-env    # job name"), (Args{"-J", "hello-env"}));
  EXPECT_EQ(SplitDirectiveWords(" --comment=\"two words\" # c"), (Args{"--comment=two words"}));
  EXPECT_EQ(SplitDirectiveWords(" --comment='a # b'"), (Args{"--comment=a # b"}));
  EXPECT_EQ(SplitDirectiveWords(" -J a#b"), (Args{"-J", "a#b"}));
  EXPECT_EQ(SplitDirectiveWords(" -J a\\ b"), (Args{"-J", "a b"}));
  EXPECT_EQ(SplitDirectiveWords(" --comment=\"say \\\"hi\\\"\""), (Args{"--comment=say \"hi\""}));
  EXPECT_EQ(SplitDirectiveWords(" --comment=it's"), (Args{"--comment=its"}));  // lenient
  EXPECT_EQ(SplitDirectiveWords("\t-t\t5\t"), (Args{"-t", "5"}));
  EXPECT_TRUE(SplitDirectiveWords("   # only a comment").empty());
}

TEST(SbatchScript, DirectivesStopAtFirstCommand) {
  const std::string script =
      "#!/bin/bash\n"
      "\n"
      "# a comment\n"
      "   # an indented comment\n"
      "#SBATCH -J first\n"
      "#SBATCH\n"
      "#SBATCHX -J not-a-directive\n"
      " #SBATCH -J indented-is-a-comment\n"
      "#SBATCH -p p1 -t 7\n"
      "echo start\n"
      "#SBATCH -J too-late\n";
  std::vector<int> lines;
  auto d = ExtractDirectives(script, &lines);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0], (Args{"-J", "first"}));
  EXPECT_EQ((*d)[1], (Args{"-p", "p1", "-t", "7"}));
  EXPECT_EQ(lines, (std::vector<int>{5, 9}));
  auto s = Build({"j"}, script).spec;
  EXPECT_EQ(s.name(), "first");
  EXPECT_EQ(s.partition(), "p1");
  EXPECT_EQ(s.time_limit(), 7u);
}

TEST(SbatchScript, DirectiveErrorsNameTheLine) {
  EXPECT_EQ(BuildError({"j"}, "#!/bin/sh\n#SBATCH --foo\n"),
            "sbatch: error: Invalid directive in batch script (line 2): unrecognized option "
            "'--foo'");
  EXPECT_EQ(BuildError({"j"}, "#!/bin/sh\n\n#SBATCH -t\n"),
            "sbatch: error: Invalid directive in batch script (line 3): option requires an "
            "argument -- 't'");
  EXPECT_EQ(BuildError({"j"}, "#!/bin/sh\n#SBATCH -t soon\n"),
            "sbatch: error: Invalid --time specification (#SBATCH directive, line 2)");
  EXPECT_EQ(BuildError({"j"}, "#!/bin/sh\n#SBATCH hetjob\n"),
            "sbatch: error: Invalid directive in batch script (line 2): heterogeneous jobs are "
            "not supported");
}

TEST(SbatchScript, DirectiveExtraWordsWarn) {
  auto r = Build({"j"}, "#!/bin/sh\n#SBATCH -J x stray words\n");
  EXPECT_EQ(r.spec.name(), "x");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0],
            "sbatch: warning: ignoring \"stray\" and what follows in #SBATCH directive (line 2)");
}

TEST(SbatchScript, HelpInDirectiveIsIgnored) {
  auto r = Build({"j"}, "#!/bin/sh\n#SBATCH --help\n#SBATCH -J x\n");
  EXPECT_EQ(r.spec.name(), "x");
}

// ---------------------------------------------------------------------------------------------
// Precedence: command line > SBATCH_* > #SBATCH
// ---------------------------------------------------------------------------------------------

TEST(SbatchPrecedence, CommandLineOverEnvOverScript) {
  const std::string script =
      "#!/bin/sh\n#SBATCH -J from-script\n#SBATCH -p script-p\n#SBATCH -t 3\n#SBATCH -A sa\n";
  auto env = Ctx({"SBATCH_JOB_NAME=from-env", "SBATCH_PARTITION=env-p", "PATH=/bin"});
  auto s = Build({"-J", "from-cmdline", "j"}, script, env).spec;
  EXPECT_EQ(s.name(), "from-cmdline");
  EXPECT_EQ(s.partition(), "env-p");
  EXPECT_EQ(s.time_limit(), 3u);
  EXPECT_EQ(s.account(), "sa");
}

TEST(SbatchPrecedence, RequeueFlagsAcrossSources) {
  const std::string script = "#!/bin/sh\n#SBATCH --requeue\n";
  EXPECT_EQ(Build({"j"}, script).spec.requeue(), 1);
  EXPECT_EQ(Build({"j"}, script, Ctx({"SBATCH_NO_REQUEUE="})).spec.requeue(), 0);
  EXPECT_EQ(Build({"--requeue", "j"}, script, Ctx({"SBATCH_NO_REQUEUE=1"})).spec.requeue(), 1);
}

TEST(SbatchEnvVars, ValuesAndFlags) {
  auto ctx =
      Ctx({"SBATCH_ACCOUNT=a", "SBATCH_QOS=q", "SBATCH_TIMELIMIT=1:00:00", "SBATCH_OUTPUT=o.txt",
           "SBATCH_ERROR=e.txt", "SBATCH_INPUT=i.txt", "SBATCH_GRES=gpu:1", "SBATCH_GPUS=2",
           "SBATCH_MEM_PER_CPU=500", "SBATCH_ARRAY_INX=1-4", "SBATCH_OPEN_MODE=append",
           "SBATCH_WAIT=yes", "SBATCH_EXCLUSIVE=", "SBATCH_CONSTRAINT=ib", "SBATCH_RESERVATION=res",
           "SBATCH_WCKEY=wk", "SBATCH_SIGNAL=B:USR1@30", "SBATCH_OVERCOMMIT=1", "SBATCH_DEBUG=1"});
  auto r = Build({"j"}, kPlain, ctx);
  const auto& s = r.spec;
  EXPECT_EQ(s.account(), "a");
  EXPECT_EQ(s.qos(), "q");
  EXPECT_EQ(s.time_limit(), 60u);
  EXPECT_EQ(s.std_out(), "o.txt");
  EXPECT_EQ(s.std_err(), "e.txt");
  EXPECT_EQ(s.std_in(), "i.txt");
  EXPECT_EQ(s.gres(), "gpu:1");
  EXPECT_EQ(s.gpus(), "2");
  EXPECT_EQ(s.mem_per_cpu_mb(), 500u);
  EXPECT_EQ(s.array(), "1-4");
  EXPECT_TRUE(s.open_mode_append());
  EXPECT_TRUE(r.wait);
  EXPECT_TRUE(s.exclusive());
  EXPECT_EQ(s.constraint(), "ib");
  EXPECT_EQ(s.reservation(), "res");
  EXPECT_EQ(s.wckey(), "wk");
  EXPECT_EQ(s.warn_signal(), SIGUSR1);
  EXPECT_EQ(s.warn_time(), 30u);
  EXPECT_TRUE(s.warn_batch_only());
  EXPECT_TRUE(s.overcommit());
  EXPECT_EQ(r.verbose, 1);
}

TEST(SbatchEnvVars, FlagNotSetByOtherValues) {
  auto r = Build({"j"}, kPlain, Ctx({"SBATCH_WAIT=no", "SBATCH_REQUEUE=0", "SBATCH_DEBUG=0"}));
  EXPECT_FALSE(r.wait);
  EXPECT_EQ(r.spec.requeue(), -1);
  EXPECT_EQ(r.verbose, 0);
  EXPECT_TRUE(Build({"j"}, kPlain, Ctx({"SBATCH_WAIT=2"})).wait);
}

TEST(SbatchEnvVars, BadValueNamesTheVariable) {
  EXPECT_EQ(BuildError({"j"}, kPlain, Ctx({"SBATCH_TIMELIMIT=forever"})),
            "sbatch: error: Invalid --time specification (from SBATCH_TIMELIMIT)");
}

TEST(SbatchEnvVars, UnlistedVariablesAreIgnored) {
  // SBATCH_HOLD is not an input variable of sbatch (man sbatch).
  EXPECT_FALSE(Build({"j"}, kPlain, Ctx({"SBATCH_HOLD=1"})).spec.hold());
}

// ---------------------------------------------------------------------------------------------
// --wrap
// ---------------------------------------------------------------------------------------------

TEST(SbatchWrap, GeneratedScript) {
  EXPECT_EQ(WrapScript("echo hi"),
            "#!/bin/sh\n# This script was created by sbatch --wrap.\n\necho hi\n");
  auto cl = Cl({"--wrap", "echo hi"});
  ASSERT_TRUE(cl.wrap);
  auto r = BuildSbatchRequest(cl, WrapScript(*cl.wrap), Ctx());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->spec.name(), "wrap");
  EXPECT_EQ(r->spec.script(), WrapScript("echo hi"));
  EXPECT_EQ(r->spec.argv_size(), 0);
}

TEST(SbatchWrap, NoScriptArguments) {
  EXPECT_EQ(ParseSbatchCommandLine({"--wrap=true", "job.sh"}).error(),
            "sbatch: error: Script arguments not permitted with --wrap option");
}

TEST(SbatchWrap, PipelineExample) {
  auto cl =
      Cl({"--parsable", "-J", "pre", "--array=0-7%3", "-t", "2", "-o", "pre-%A_%a.out", "--wrap",
          "echo \"task ${SLURM_ARRAY_TASK_ID} of ${SLURM_ARRAY_TASK_COUNT}\" > "
          "part-${SLURM_ARRAY_TASK_ID}.txt"});
  auto r = BuildSbatchRequest(cl, WrapScript(*cl.wrap), Ctx());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->parsable);
  EXPECT_EQ(r->spec.name(), "pre");
  EXPECT_EQ(r->spec.array(), "0-7%3");
  EXPECT_EQ(r->spec.time_limit(), 2u);
  EXPECT_EQ(r->spec.std_out(), "pre-%A_%a.out");

  cl = Cl({"--parsable", "-J", "reduce", "--dependency=afterok:17", "-t", "2", "-o",
           "reduce-%j.out", "--wrap", "cat part-*.txt | sort > all.txt; wc -l < all.txt"});
  r = BuildSbatchRequest(cl, WrapScript(*cl.wrap), Ctx());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->spec.dependency(), "afterok:17");
  EXPECT_EQ(r->spec.name(), "reduce");
}

// ---------------------------------------------------------------------------------------------
// --export
// ---------------------------------------------------------------------------------------------

const std::vector<std::string> kEnv = {"HOME=/home/u", "EDITOR=vi", "SLURM_CONF=/etc/s.conf",
                                       "PATH=/bin"};

TEST(SbatchExport, All) {
  EXPECT_EQ(*ApplyExport("ALL", kEnv), kEnv);
  EXPECT_EQ(*ApplyExport("all", kEnv), kEnv);
}

TEST(SbatchExport, None) {
  EXPECT_EQ(*ApplyExport("NONE", kEnv), (Args{"SLURM_CONF=/etc/s.conf"}));
}

TEST(SbatchExport, List) {
  EXPECT_EQ(*ApplyExport("EDITOR,ARG1=test,MISSING", kEnv),
            (Args{"SLURM_CONF=/etc/s.conf", "EDITOR=vi", "ARG1=test"}));
  EXPECT_EQ(*ApplyExport("EDITOR=/bin/emacs", kEnv),
            (Args{"SLURM_CONF=/etc/s.conf", "EDITOR=/bin/emacs"}));
  EXPECT_EQ(*ApplyExport("P=/a,/b,Q=1", kEnv), (Args{"SLURM_CONF=/etc/s.conf", "P=/a,/b", "Q=1"}));
  EXPECT_EQ(*ApplyExport("SLURM_CONF=/x", kEnv), (Args{"SLURM_CONF=/x"}));
}

TEST(SbatchExport, AllPlusList) {
  // man sbatch: with ALL the caller's environment wins over explicit values.
  auto env = *ApplyExport("ALL,EDITOR=/bin/emacs,NEW=1", kEnv);
  EXPECT_EQ(env.size(), kEnv.size() + 1);
  EXPECT_NE(std::find(env.begin(), env.end(), "EDITOR=vi"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "NEW=1"), env.end());
}

TEST(SbatchExport, Errors) {
  EXPECT_EQ(ApplyExport("ALL,NONE", kEnv).error(),
            "sbatch: error: Invalid --export specification: ALL and NONE are exclusive");
  EXPECT_EQ(ApplyExport("1BAD", kEnv).error(),
            "sbatch: error: Invalid --export specification: '1BAD' is not a variable name");
  EXPECT_EQ(ApplyExport("", kEnv).error(), "sbatch: error: Invalid --export specification: \"\"");
}

TEST(SbatchExport, ThroughBuild) {
  auto s = Build({"--export=NONE", "j"}, kPlain, Ctx(kEnv)).spec;
  EXPECT_EQ(s.environment_size(), 2);
  EXPECT_TRUE(HasEnv(s, "SLURM_CONF=/etc/s.conf"));
  EXPECT_TRUE(HasEnv(s, "SLURM_EXPORT_ENV=NONE"));

  s = Build({"--export=EDITOR", "j"}, kPlain, Ctx(kEnv)).spec;
  EXPECT_TRUE(HasEnv(s, "EDITOR=vi"));
  EXPECT_FALSE(HasEnv(s, "HOME=/home/u"));

  // SBATCH_EXPORT, overridden by the command line.
  auto ctx = Ctx(kEnv);
  ctx.environment.push_back("SBATCH_EXPORT=NONE");
  EXPECT_FALSE(HasEnv(Build({"j"}, kPlain, ctx).spec, "HOME=/home/u"));
  EXPECT_TRUE(HasEnv(Build({"--export=ALL", "j"}, kPlain, ctx).spec, "HOME=/home/u"));

  EXPECT_EQ(BuildError({"--export=ALL,NONE", "j"}),
            "sbatch: error: Invalid --export specification: ALL and NONE are exclusive");
}

// ---------------------------------------------------------------------------------------------
// --wait, --test-only, exit codes
// ---------------------------------------------------------------------------------------------

pb::JobRecord Job(pb::JobState state, int status) {
  pb::JobRecord j;
  j.set_state(state);
  j.set_exit_status(status);
  return j;
}

TEST(SbatchWait, ExitCodes) {
  EXPECT_EQ(WaitExitCode({Job(pb::JOB_COMPLETED, 0)}), 0);
  EXPECT_EQ(WaitExitCode({Job(pb::JOB_FAILED, 3 << 8)}), 3);
  EXPECT_EQ(WaitExitCode({Job(pb::JOB_CANCELLED, SIGTERM)}), 1);  // signalled
  EXPECT_EQ(WaitExitCode({Job(pb::JOB_TIMEOUT, SIGKILL)}), 1);
  EXPECT_EQ(WaitExitCode({Job(pb::JOB_FAILED, 0)}), 1);  // failed to launch
  EXPECT_EQ(WaitExitCode({Job(pb::JOB_COMPLETED, 0), Job(pb::JOB_FAILED, 7 << 8),
                          Job(pb::JOB_FAILED, 2 << 8)}),
            7);  // arrays: the highest
  EXPECT_EQ(WaitExitCode({}), 1);
}

TEST(SbatchTestOnly, Message) {
  EXPECT_EQ(TestOnlyMessage(12, "2026-01-02T03:04:05", 4, "n[1-2]", "debug"),
            "sbatch: Job 12 to start at 2026-01-02T03:04:05 using 4 processors on nodes n[1-2] "
            "in partition debug");
  pb::JobSpec s;
  EXPECT_EQ(RequestedCpus(s), 1u);
  s.set_num_tasks(4);
  s.set_cpus_per_task(2);
  EXPECT_EQ(RequestedCpus(s), 8u);
  s.clear_num_tasks();
  s.set_min_nodes(3);
  s.set_ntasks_per_node(2);
  EXPECT_EQ(RequestedCpus(s), 12u);
  auto r = Build({"--test-only", "--parsable", "-Q", "j"});
  EXPECT_TRUE(r.test_only);
  EXPECT_TRUE(r.parsable);
  EXPECT_TRUE(r.quiet);
}

TEST(SbatchExit, ErrorExitCode) {
  EXPECT_EQ(ErrorExitCode({}), 1);
  EXPECT_EQ(ErrorExitCode({"SLURM_EXIT_ERROR=42"}), 42);
  EXPECT_EQ(ErrorExitCode({"SLURM_EXIT_ERROR=x"}), 1);
}

TEST(SbatchCommandLine, BindingOptions) {
  auto r = Build({"--cpu-bind=verbose,map_cpu:0", "--hint=nomultithread",
                  "--mem-bind=verbose,local", "--gpu-bind=map_gpu:1,0", "j"});
  EXPECT_EQ(r.spec.cpu_bind(), "verbose,map_cpu:0");
  EXPECT_EQ(r.spec.hint(), "nomultithread");
  EXPECT_EQ(r.spec.mem_bind(), "verbose,local");
  EXPECT_EQ(r.spec.gpu_bind(), "map_gpu:1,0");
  EXPECT_EQ(BuildError({"--hint=fast", "j"}),
            "sbatch: error: unrecognized --hint argument \"fast\", see --hint=help");
  EXPECT_EQ(BuildError({"--mem-bind=sideways", "j"}),
            "sbatch: error: unrecognized --mem-bind argument \"sideways\"");
  EXPECT_EQ(BuildError({"--mem-bind=map_mem", "j"}),
            "sbatch: error: missing list for \"--mem-bind=map_mem:<list>\"");
  EXPECT_EQ(BuildError({"--gpu-bind=nearest", "j"}),
            "sbatch: error: Invalid --gpu-bind argument: gpu:nearest");
  EXPECT_NE(BuildError({"--cpu-bind=bogus", "j"}).find("sbatch: error: "), std::string::npos);
}

}  // namespace
}  // namespace shoal::cli
