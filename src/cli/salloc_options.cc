// salloc options: see salloc_options.h. Pure: no I/O, no clock, no environment reads.
#include "cli/salloc_options.h"

#include <utility>

#include "common/mem_bind.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

using namespace jobopt;  // NOLINT: the AllocOpt ids and the shared helpers

constexpr std::string_view kProg = "salloc";

enum SallocOpt : int {
  kBell = kFirstCommandOption,
  kContainer,
  kKillCommand,
  kNoBell,
  kNoShell,
  kWaitAllNodes,
  kGpuBind,
  kHint,
  kMemBind,
};

// Slurm 22.05's salloc options.
constexpr OptionDef kOptions[] = {
    {"account", 'A', OptArg::kRequired, kAllocAccount},
    {"acctg-freq", 0, OptArg::kRequired, kAllocIgnored},
    {"bb", 0, OptArg::kRequired, kAllocUnsupported},
    {"bbf", 0, OptArg::kRequired, kAllocUnsupported},
    {"begin", 'b', OptArg::kRequired, kAllocBegin},
    {"bell", 0, OptArg::kNone, kBell},
    {"chdir", 'D', OptArg::kRequired, kAllocChdir},
    {"cluster", 0, OptArg::kRequired, kAllocUnsupported},
    {"cluster-constraint", 0, OptArg::kRequired, kAllocUnsupported},
    {"clusters", 'M', OptArg::kRequired, kAllocUnsupported},
    {"comment", 0, OptArg::kRequired, kAllocComment},
    {"constraint", 'C', OptArg::kRequired, kAllocConstraint},
    {"container", 0, OptArg::kRequired, kContainer},
    {"contiguous", 0, OptArg::kNone, kAllocUnsupported},
    {"core-spec", 'S', OptArg::kRequired, kAllocUnsupported},
    {"cores-per-socket", 0, OptArg::kRequired, kAllocUnsupported},
    {"cpu-freq", 0, OptArg::kRequired, kAllocIgnored},
    {"cpus-per-gpu", 0, OptArg::kRequired, kAllocCpusPerGpu},
    {"cpus-per-task", 'c', OptArg::kRequired, kAllocCpusPerTask},
    {"deadline", 0, OptArg::kRequired, kAllocDeadline},
    {"delay-boot", 0, OptArg::kRequired, kAllocIgnored},
    {"dependency", 'd', OptArg::kRequired, kAllocDependency},
    {"distribution", 'm', OptArg::kRequired, kAllocDistribution},
    {"exclude", 'x', OptArg::kRequired, kAllocExclude},
    {"exclusive", 0, OptArg::kOptional, kAllocExclusive},
    {"extra-node-info", 'B', OptArg::kRequired, kAllocUnsupported},
    {"get-user-env", 0, OptArg::kOptional, kAllocIgnored},
    {"gid", 0, OptArg::kRequired, kAllocUnsupported},
    {"gpu-bind", 0, OptArg::kRequired, kGpuBind},
    {"gpu-freq", 0, OptArg::kRequired, kAllocIgnored},
    {"gpus", 'G', OptArg::kRequired, kAllocGpus},
    {"gpus-per-node", 0, OptArg::kRequired, kAllocGpusPerNode},
    {"gpus-per-socket", 0, OptArg::kRequired, kAllocUnsupported},
    {"gpus-per-task", 0, OptArg::kRequired, kAllocGpusPerTask},
    {"gres", 0, OptArg::kRequired, kAllocGres},
    {"gres-flags", 0, OptArg::kRequired, kAllocIgnored},
    {"help", 'h', OptArg::kNone, kAllocHelp},
    {"hint", 0, OptArg::kRequired, kHint},
    {"hold", 'H', OptArg::kNone, kAllocHold},
    {"immediate", 'I', OptArg::kOptional, kAllocImmediate},
    {"job-name", 'J', OptArg::kRequired, kAllocJobName},
    {"kill-command", 'K', OptArg::kOptional, kKillCommand},
    {"licenses", 'L', OptArg::kRequired, kAllocLicenses},
    {"mail-type", 0, OptArg::kRequired, kAllocMailType},
    {"mail-user", 0, OptArg::kRequired, kAllocMailUser},
    {"mcs-label", 0, OptArg::kRequired, kAllocIgnored},
    {"mem", 0, OptArg::kRequired, kAllocMem},
    {"mem-bind", 0, OptArg::kRequired, kMemBind},
    {"mem-per-cpu", 0, OptArg::kRequired, kAllocMemPerCpu},
    {"mem-per-gpu", 0, OptArg::kRequired, kAllocMemPerGpu},
    {"mincpus", 0, OptArg::kRequired, kAllocMincpus},
    {"network", 0, OptArg::kRequired, kAllocIgnored},
    {"nice", 0, OptArg::kOptional, kAllocNice},
    {"no-bell", 0, OptArg::kNone, kNoBell},
    {"no-kill", 'k', OptArg::kOptional, kAllocNoKill},
    {"no-shell", 0, OptArg::kNone, kNoShell},
    {"nodefile", 'F', OptArg::kRequired, kAllocUnsupported},
    {"nodelist", 'w', OptArg::kRequired, kAllocNodelist},
    {"nodes", 'N', OptArg::kRequired, kAllocNodes},
    {"ntasks", 'n', OptArg::kRequired, kAllocNtasks},
    {"ntasks-per-core", 0, OptArg::kRequired, kAllocUnsupported},
    {"ntasks-per-gpu", 0, OptArg::kRequired, kAllocUnsupported},
    {"ntasks-per-node", 0, OptArg::kRequired, kAllocNtasksPerNode},
    {"ntasks-per-socket", 0, OptArg::kRequired, kAllocUnsupported},
    {"overcommit", 'O', OptArg::kNone, kAllocOvercommit},
    {"oversubscribe", 's', OptArg::kNone, kAllocOversubscribe},
    {"partition", 'p', OptArg::kRequired, kAllocPartition},
    {"power", 0, OptArg::kRequired, kAllocIgnored},
    {"prefer", 0, OptArg::kRequired, kAllocUnsupported},
    {"priority", 0, OptArg::kRequired, kAllocUnsupported},
    {"profile", 0, OptArg::kRequired, kAllocIgnored},
    {"qos", 'q', OptArg::kRequired, kAllocQos},
    {"quiet", 'Q', OptArg::kNone, kAllocQuiet},
    {"reboot", 0, OptArg::kNone, kAllocIgnored},
    {"reservation", 0, OptArg::kRequired, kAllocReservation},
    {"signal", 0, OptArg::kRequired, kAllocSignal},
    {"sockets-per-node", 0, OptArg::kRequired, kAllocUnsupported},
    {"spread-job", 0, OptArg::kNone, kAllocIgnored},
    {"switches", 0, OptArg::kRequired, kAllocSwitches},
    {"thread-spec", 0, OptArg::kRequired, kAllocUnsupported},
    {"threads-per-core", 0, OptArg::kRequired, kAllocUnsupported},
    {"time", 't', OptArg::kRequired, kAllocTime},
    {"time-min", 0, OptArg::kRequired, kAllocTimeMin},
    {"tmp", 0, OptArg::kRequired, kAllocUnsupported},
    {"uid", 0, OptArg::kRequired, kAllocUnsupported},
    {"usage", 0, OptArg::kNone, kAllocUsage},
    {"use-min-nodes", 0, OptArg::kNone, kAllocIgnored},
    {"verbose", 'v', OptArg::kNone, kAllocVerbose},
    {"version", 'V', OptArg::kNone, kAllocVersion},
    {"wait-all-nodes", 0, OptArg::kRequired, kWaitAllNodes},
    {"wckey", 0, OptArg::kRequired, kAllocWckey},
    {"x11", 0, OptArg::kOptional, kAllocUnsupported},
};

constexpr int kStopIds[] = {kAllocHelp, kAllocUsage, kAllocVersion};

// Input environment variables (man salloc, INPUT ENVIRONMENT VARIABLES) that map to options we
// act on. Flags are set by an empty value, "yes" or a non-zero number; SALLOC_DEBUG by "1".
enum class EnvKind { kValue, kOptional, kFlag, kDebug };
struct EnvDef {
  std::string_view var;
  int id;
  EnvKind kind;
};
constexpr EnvDef kEnvVars[] = {
    {"SALLOC_ACCOUNT", kAllocAccount, EnvKind::kValue},
    {"SALLOC_BELL", kBell, EnvKind::kFlag},
    {"SALLOC_CONSTRAINT", kAllocConstraint, EnvKind::kValue},
    {"SALLOC_CONTAINER", kContainer, EnvKind::kValue},
    {"SALLOC_CPUS_PER_GPU", kAllocCpusPerGpu, EnvKind::kValue},
    {"SALLOC_DEBUG", kAllocVerbose, EnvKind::kDebug},
    {"SALLOC_EXCLUSIVE", kAllocExclusive, EnvKind::kOptional},
    {"SALLOC_GPUS", kAllocGpus, EnvKind::kValue},
    {"SALLOC_GPUS_PER_NODE", kAllocGpusPerNode, EnvKind::kValue},
    {"SALLOC_GPUS_PER_TASK", kAllocGpusPerTask, EnvKind::kValue},
    {"SALLOC_GPU_BIND", kGpuBind, EnvKind::kValue},
    {"SALLOC_GRES", kAllocGres, EnvKind::kValue},
    {"SALLOC_HINT", kHint, EnvKind::kValue},
    {"SLURM_HINT", kHint, EnvKind::kValue},
    {"SALLOC_MEM_BIND", kMemBind, EnvKind::kValue},
    {"SALLOC_IMMEDIATE", kAllocImmediate, EnvKind::kOptional},
    {"SALLOC_KILL_CMD", kKillCommand, EnvKind::kOptional},
    {"SALLOC_MEM_PER_CPU", kAllocMemPerCpu, EnvKind::kValue},
    {"SALLOC_MEM_PER_GPU", kAllocMemPerGpu, EnvKind::kValue},
    {"SALLOC_MEM_PER_NODE", kAllocMem, EnvKind::kValue},
    {"SALLOC_NO_BELL", kNoBell, EnvKind::kFlag},
    {"SALLOC_NO_KILL", kAllocNoKill, EnvKind::kOptional},
    {"SALLOC_OVERCOMMIT", kAllocOvercommit, EnvKind::kFlag},
    {"SALLOC_PARTITION", kAllocPartition, EnvKind::kValue},
    {"SALLOC_QOS", kAllocQos, EnvKind::kValue},
    {"SALLOC_RESERVATION", kAllocReservation, EnvKind::kValue},
    {"SALLOC_SIGNAL", kAllocSignal, EnvKind::kValue},
    {"SALLOC_TIMELIMIT", kAllocTime, EnvKind::kValue},
    {"SALLOC_WAIT_ALL_NODES", kWaitAllNodes, EnvKind::kValue},
    {"SALLOC_WCKEY", kAllocWckey, EnvKind::kValue},
};

std::vector<OptionSetting> EnvSettings(const std::vector<std::string>& env) {
  std::vector<OptionSetting> out;
  auto add = [&](int id, std::optional<std::string> value) {
    const OptionDef* def = FindOptionById(kOptions, id);
    out.push_back(OptionSetting{id, std::string(def->name), std::move(value)});
  };
  for (const EnvDef& d : kEnvVars) {
    auto value = EnvValue(env, d.var);
    if (!value) continue;
    switch (d.kind) {
      case EnvKind::kValue:
        add(d.id, *value);
        break;
      case EnvKind::kOptional:
        add(d.id, value->empty() ? std::nullopt : std::optional<std::string>(*value));
        break;
      case EnvKind::kFlag:
        if (EnvFlagSet(*value)) add(d.id, std::nullopt);
        break;
      case EnvKind::kDebug:
        if (*value == "1") add(d.id, std::nullopt);
        break;
    }
  }
  if (auto count = EnvValue(env, "SALLOC_REQ_SWITCH")) {
    std::string v = *count;
    if (auto wait = EnvValue(env, "SALLOC_WAIT4SWITCH"); wait && !wait->empty()) v += "@" + *wait;
    add(kAllocSwitches, v);
  }
  return out;
}

struct SallocState {
  AllocationState alloc = NewAllocationState(kProg, 0);
  SallocRequest req;
};

Status ApplySallocSetting(SallocState& st, const OptionSetting& s, OptSource source) {
  bool handled = false;
  if (Status e = ApplyAllocationOption(st.alloc, s, source, &handled); !e.ok()) return e;
  if (handled) return Status::Ok();
  SallocRequest& req = st.req;
  const std::string value = s.value.value_or("");
  switch (s.id) {
    case kBell:
      req.bell = SallocBell::kAlways;
      break;
    case kNoBell:
      req.bell = SallocBell::kNever;
      break;
    case kContainer:  // an OCI bundle for the job's steps (oci.conf on the nodes)
      st.alloc.spec.set_container(value);
      break;
    // Binding options: kept in the job, applied to its steps (the controller hands them on).
    case kGpuBind:
      if (!ValidGpuBind(value))
        return ProgError(kProg, "Invalid --gpu-bind argument: gpu:" + value);
      st.alloc.spec.set_gpu_bind(value);
      break;
    case kHint:
      if (!shoal::ValidHint(value))
        return ProgError(kProg, "unrecognized --hint argument \"" + value + "\", see --hint=help");
      st.alloc.spec.set_hint(value);
      break;
    case kMemBind: {
      auto mb = ParseMemBind(value);
      if (!mb.ok()) return ProgError(kProg, mb.error());
      st.alloc.spec.set_mem_bind(value);
      break;
    }
    case kKillCommand: {
      int sig = 0;
      if (s.value) {
        auto parsed = ParseSignal(Trim(value));
        if (!parsed.ok() || *parsed <= 0) {
          return ProgError(kProg, "Invalid --kill-command specification");
        }
        sig = *parsed;
      }
      req.kill_command = true;
      req.kill_command_signal = sig;
      break;
    }
    case kNoShell:
      req.no_shell = true;
      break;
    case kWaitAllNodes: {
      auto v = ParseUnsigned(Trim(value));
      if (!v) return BadNumber(kProg, value, "wait-all-nodes");
      if (*v > 1) return ProgError(kProg, "Invalid --wait-all-nodes specification");
      req.wait_all_nodes = *v == 1;
      break;
    }
    default:
      break;
  }
  return Status::Ok();
}

}  // namespace

Result<SallocRequest> ParseSallocCommandLine(const std::vector<std::string>& args,
                                             const SallocContext& ctx) {
  auto parsed = ParseOptions(args, kOptions, kStopIds);
  if (!parsed.ok()) return UsageError(kProg, parsed.error());

  SallocState st;
  st.alloc.now = ctx.now;
  st.alloc.plane_size_env = EnvValue(ctx.environment, "SLURM_DIST_PLANESIZE");

  if (parsed->stopped_by) {
    // Options before --help/--usage/--version are still checked, as salloc does.
    for (const auto& s : parsed->settings) {
      if (s.id == parsed->stopped_by) break;
      if (Status e = ApplySallocSetting(st, s, OptSource::kCmdline); !e.ok()) return e;
    }
    SallocRequest req;
    req.action = parsed->stopped_by == kAllocHelp    ? SallocAction::kHelp
                 : parsed->stopped_by == kAllocUsage ? SallocAction::kUsage
                                                     : SallocAction::kVersion;
    return req;
  }

  for (const auto& s : EnvSettings(ctx.environment)) {
    if (Status e = ApplySallocSetting(st, s, OptSource::kEnv); !e.ok()) return e;
  }
  for (const auto& s : parsed->settings) {
    if (Status e = ApplySallocSetting(st, s, OptSource::kCmdline); !e.ok()) return e;
  }
  if (Status e = FinishAllocation(st.alloc); !e.ok()) return e;

  SallocRequest& req = st.req;
  pb::JobSpec& spec = st.alloc.spec;
  req.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(parsed->rest), args.end());
  if (!req.argv.empty() && req.argv[0] == ":") {
    return ProgError(kProg, "Heterogeneous jobs (\":\") are not supported");
  }
  if (!st.alloc.name_given) {
    spec.set_name(req.argv.empty() ? std::string("interactive") : Basename(req.argv[0]));
  }
  req.distribution = st.alloc.distribution.value_or("");
  req.no_kill = st.alloc.no_kill;
  req.quiet = st.alloc.quiet;
  req.verbose = st.alloc.verbose;
  req.warnings = std::move(st.alloc.warnings);

  spec.set_work_dir(st.alloc.chdir ? ResolvePath(ctx.cwd, *st.alloc.chdir) : ctx.cwd);
  spec.set_submit_dir(ctx.cwd);
  spec.set_submit_host(ctx.hostname);
  spec.set_user_name(ctx.user_name);
  spec.set_uid(ctx.uid);
  spec.set_gid(ctx.gid);
  if (!req.argv.empty()) {
    spec.set_command(req.argv[0]);
    for (size_t i = 1; i < req.argv.size(); ++i) spec.add_argv(req.argv[i]);
  }
  for (const auto& e : ctx.environment) spec.add_environment(e);
  req.spec = std::move(spec);
  return std::move(st.req);
}

std::string SallocUsageText() {
  return "Usage: salloc [-N numnodes|[min nodes]-[max nodes]] [-n num-processors]\n"
         "              [-c cpus-per-node] [-p partition] [--hold] [-t minutes]\n"
         "              [--immediate[=secs]] [--no-kill] [--overcommit] [-D path]\n"
         "              [--oversubscribe] [-J jobname] [--verbose] [--licenses=names]\n"
         "              [--mincpus=n] [--mem=MB] [-C list] [--account=name]\n"
         "              [--dependency=type:jobid] [--comment=name] [--mail-type=type]\n"
         "              [--mail-user=user] [--nice[=value]] [--bell] [--no-bell]\n"
         "              [--kill-command[=signal]] [--nodelist=hosts] [--exclude=hosts]\n"
         "              [--mem-per-cpu=MB] [--qos=qos] [--reservation=name]\n"
         "              [--time-min=minutes] [--gres=list] [--no-shell]\n"
         "              [--switches=max-switches[@max-time-to-wait]]\n"
         "              [--cpus-per-gpu=n] [--gpus=n] [--gpus-per-node=n] [--gpus-per-task=n]\n"
         "              [--mem-per-gpu=MB] [--wait-all-nodes=0|1]\n"
         "              [command [args...]]\n";
}

std::string SallocHelpText() {
  return "Usage: salloc [OPTIONS(0)...] [command(0) [args(0)...]]\n"
         "Obtains a job allocation, runs the command in it (default: your shell) and releases\n"
         "the allocation when the command exits. Options are also read from SALLOC_* input\n"
         "environment variables; the command line wins.\n"
         "\n"
         "Parallel run options:\n"
         "  -A, --account=name          charge job to specified account\n"
         "  -b, --begin=time            defer job until HH:MM MM/DD/YY\n"
         "      --bell                  ring the terminal bell when the job is allocated\n"
         "  -c, --cpus-per-task=ncpus   number of cpus required per task\n"
         "      --comment=name          arbitrary comment\n"
         "  -d, --dependency=type:jobid defer job until condition on jobid is satisfied\n"
         "      --deadline=time         remove the job if no ending possible before\n"
         "                              this deadline\n"
         "  -D, --chdir=path            change working directory\n"
         "      --gres=list             required generic resources\n"
         "  -H, --hold                  submit job in held state\n"
         "  -I, --immediate[=secs]      exit if resources not available in \"secs\"\n"
         "  -J, --job-name=jobname      name of job\n"
         "  -k, --no-kill               do not kill job on node failure\n"
         "  -K, --kill-command[=signal] signal to send terminating job\n"
         "  -L, --licenses=names        required license, comma separated\n"
         "  -m, --distribution=type     distribution method for processes to nodes\n"
         "                              (type = block|cyclic|arbitrary|plane=size)\n"
         "      --mail-type=type        notify on state change: BEGIN, END, FAIL or ALL\n"
         "      --mail-user=user        who to send email notification to\n"
         "  -n, --ntasks=N              number of processors required\n"
         "      --nice[=value]          decrease scheduling priority by value\n"
         "      --no-bell               do NOT ring the terminal bell\n"
         "      --no-shell              exit once allocated, without running a command\n"
         "      --ntasks-per-node=n     number of tasks to invoke on each node\n"
         "  -N, --nodes=N               number of nodes on which to run (N = min[-max])\n"
         "  -O, --overcommit            overcommit resources\n"
         "  -p, --partition=partition   partition requested\n"
         "  -q, --qos=qos               quality of service\n"
         "  -Q, --quiet                 quiet mode (suppress informational messages)\n"
         "  -s, --oversubscribe         oversubscribe resources with other jobs\n"
         "      --signal=[R:]num[@time] send signal when time limit within time seconds\n"
         "      --switches=max-switches{@max-time-to-wait}\n"
         "  -t, --time=minutes          time limit\n"
         "      --time-min=minutes      minimum time limit (if distinct)\n"
         "  -v, --verbose               verbose mode (multiple -v's increase verbosity)\n"
         "      --wait-all-nodes=0|1    wait for all nodes to be ready before the command\n"
         "      --wckey=wckey           wckey to run job under\n"
         "\n"
         "Constraint options:\n"
         "  -C, --constraint=list       specify a list of constraints\n"
         "      --mem=MB                minimum amount of real memory\n"
         "      --mincpus=n             minimum number of logical processors per node\n"
         "      --reservation=name      allocate resources from named reservation\n"
         "  -w, --nodelist=hosts...     request a specific list of hosts\n"
         "  -x, --exclude=hosts...      exclude a specific list of hosts\n"
         "\n"
         "Consumable resources related options:\n"
         "      --exclusive[=user|mcs]  allocate nodes in exclusive mode\n"
         "      --mem-per-cpu=MB        real memory per allocated cpu\n"
         "\n"
         "GPU scheduling options:\n"
         "      --cpus-per-gpu=n        number of CPUs required per allocated GPU\n"
         "  -G, --gpus=n                count of GPUs required for the job\n"
         "      --gpus-per-node=n       number of GPUs required per allocated node\n"
         "      --gpus-per-task=n       number of GPUs required per spawned task\n"
         "      --mem-per-gpu=n         real memory required per allocated GPU\n"
         "\n"
         "Help options:\n"
         "  -h, --help                  show this help message\n"
         "      --usage                 display brief usage message\n"
         "\n"
         "Other options:\n"
         "  -V, --version               output version information and exit\n";
}

}  // namespace shoal::cli
