// srun options: see srun_options.h. Pure: no I/O, no clock, no environment reads.
#include "cli/srun_options.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

#include "common/mem_bind.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

using jobopt::AllocationState;
using jobopt::EnvFlagSet;
using jobopt::EnvValue;
using jobopt::EqualsIgnoreCase;
using jobopt::Lower;
using jobopt::OptArg;
using jobopt::OptionDef;
using jobopt::OptionSetting;
using jobopt::OptSource;
using jobopt::ParseUnsigned;
using jobopt::ProgError;
using jobopt::Split;
using jobopt::Trim;

constexpr std::string_view kProg = "srun";

// ---------------------------------------------------------------------------------------------
// Option table (Slurm 22.05's srun, plus the current spellings)
// ---------------------------------------------------------------------------------------------

enum SrunOpt : int {
  kCpuBind = jobopt::kFirstCommandOption,
  kGpuBind,
  kHint,
  kMemBind,
  kDisableStatus,
  kError,
  kExact,
  kExport,
  kHetGroup,
  kInput,
  kJobid,
  kKillOnBadExit,
  kLabel,
  kMpi,
  kContainer,
  kMultiProg,
  kNoAllocate,
  kOpenMode,
  kOutput,
  kOverlap,
  kPreserveEnv,
  kPty,
  kQuitOnInterrupt,
  kRelative,
  kTestOnly,
  kUnbuffered,
  kWait,
};

using namespace jobopt;  // NOLINT: the AllocOpt ids

constexpr OptionDef kOptions[] = {
    {"accel-bind", 0, OptArg::kRequired, kAllocIgnored},
    {"account", 'A', OptArg::kRequired, kAllocAccount},
    {"acctg-freq", 0, OptArg::kRequired, kAllocIgnored},
    {"bb", 0, OptArg::kRequired, kAllocUnsupported},
    {"bbf", 0, OptArg::kRequired, kAllocUnsupported},
    {"bcast", 0, OptArg::kOptional, kAllocUnsupported},
    {"bcast-exclude", 0, OptArg::kRequired, kAllocUnsupported},
    {"begin", 'b', OptArg::kRequired, kAllocBegin},
    {"chdir", 'D', OptArg::kRequired, kAllocChdir},
    {"cluster", 0, OptArg::kRequired, kAllocUnsupported},
    {"cluster-constraint", 0, OptArg::kRequired, kAllocUnsupported},
    {"clusters", 'M', OptArg::kRequired, kAllocUnsupported},
    {"comment", 0, OptArg::kRequired, kAllocComment},
    {"compress", 0, OptArg::kOptional, kAllocUnsupported},
    {"constraint", 'C', OptArg::kRequired, kAllocConstraint},
    {"container", 0, OptArg::kRequired, kContainer},
    {"contiguous", 0, OptArg::kNone, kAllocUnsupported},
    {"core-spec", 'S', OptArg::kRequired, kAllocUnsupported},
    {"cores-per-socket", 0, OptArg::kRequired, kAllocUnsupported},
    {"cpu-bind", 0, OptArg::kRequired, kCpuBind},
    {"cpu-freq", 0, OptArg::kRequired, kAllocIgnored},
    {"cpu_bind", 0, OptArg::kRequired, kCpuBind, true},  // Open MPI before 4.1 spells it so
    {"cpus-per-gpu", 0, OptArg::kRequired, kAllocCpusPerGpu},
    {"cpus-per-task", 'c', OptArg::kRequired, kAllocCpusPerTask},
    {"deadline", 0, OptArg::kRequired, kAllocDeadline},
    {"debugger-test", 0, OptArg::kNone, kAllocIgnored},
    {"delay-boot", 0, OptArg::kRequired, kAllocIgnored},
    {"dependency", 'd', OptArg::kRequired, kAllocDependency},
    {"disable-status", 'X', OptArg::kNone, kDisableStatus},
    {"distribution", 'm', OptArg::kRequired, kAllocDistribution},
    {"epilog", 0, OptArg::kRequired, kAllocUnsupported},
    {"error", 'e', OptArg::kRequired, kError},
    {"exact", 0, OptArg::kNone, kExact},
    {"exclude", 'x', OptArg::kRequired, kAllocExclude},
    {"exclusive", 0, OptArg::kOptional, kAllocExclusive},
    {"export", 0, OptArg::kRequired, kExport},
    {"extra-node-info", 'B', OptArg::kRequired, kAllocUnsupported},
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
    {"het-group", 0, OptArg::kRequired, kHetGroup},
    {"hint", 0, OptArg::kRequired, kHint},
    {"hold", 'H', OptArg::kNone, kAllocHold},
    {"immediate", 'I', OptArg::kOptional, kAllocImmediate},
    {"input", 'i', OptArg::kRequired, kInput},
    {"job-name", 'J', OptArg::kRequired, kAllocJobName},
    {"jobid", 0, OptArg::kRequired, kJobid},
    {"kill-on-bad-exit", 'K', OptArg::kOptional, kKillOnBadExit},
    {"label", 'l', OptArg::kNone, kLabel},
    {"licenses", 'L', OptArg::kRequired, kAllocLicenses},
    {"mail-type", 0, OptArg::kRequired, kAllocMailType},
    {"mail-user", 0, OptArg::kRequired, kAllocMailUser},
    {"mcs-label", 0, OptArg::kRequired, kAllocIgnored},
    {"mem", 0, OptArg::kRequired, kAllocMem},
    {"mem-bind", 0, OptArg::kRequired, kMemBind},
    {"mem-per-cpu", 0, OptArg::kRequired, kAllocMemPerCpu},
    {"mem-per-gpu", 0, OptArg::kRequired, kAllocMemPerGpu},
    {"mincpus", 0, OptArg::kRequired, kAllocMincpus},
    {"mpi", 0, OptArg::kRequired, kMpi},
    {"msg-timeout", 0, OptArg::kRequired, kAllocIgnored},
    {"multi-prog", 0, OptArg::kNone, kMultiProg},
    {"network", 0, OptArg::kRequired, kAllocIgnored},
    {"nice", 0, OptArg::kOptional, kAllocNice},
    {"no-allocate", 'Z', OptArg::kNone, kNoAllocate},
    {"no-kill", 'k', OptArg::kOptional, kAllocNoKill},
    {"nodefile", 'F', OptArg::kRequired, kAllocUnsupported},
    {"nodelist", 'w', OptArg::kRequired, kAllocNodelist},
    {"nodes", 'N', OptArg::kRequired, kAllocNodes},
    {"ntasks", 'n', OptArg::kRequired, kAllocNtasks},
    {"ntasks-per-core", 0, OptArg::kRequired, kAllocUnsupported},
    {"ntasks-per-gpu", 0, OptArg::kRequired, kAllocUnsupported},
    {"ntasks-per-node", 0, OptArg::kRequired, kAllocNtasksPerNode},
    {"ntasks-per-socket", 0, OptArg::kRequired, kAllocUnsupported},
    {"open-mode", 0, OptArg::kRequired, kOpenMode},
    {"output", 'o', OptArg::kRequired, kOutput},
    {"overcommit", 'O', OptArg::kNone, kAllocOvercommit},
    {"overlap", 0, OptArg::kNone, kOverlap},
    {"oversubscribe", 's', OptArg::kNone, kAllocOversubscribe},
    {"pack-group", 0, OptArg::kRequired, kHetGroup, true},  // its name before 20.02
    {"partition", 'p', OptArg::kRequired, kAllocPartition},
    {"power", 0, OptArg::kRequired, kAllocIgnored},
    {"prefer", 0, OptArg::kRequired, kAllocUnsupported},
    {"preserve-env", 'E', OptArg::kNone, kPreserveEnv},
    {"priority", 0, OptArg::kRequired, kAllocUnsupported},
    {"profile", 0, OptArg::kRequired, kAllocIgnored},
    {"prolog", 0, OptArg::kRequired, kAllocUnsupported},
    // Resource limits are not propagated (yet); accepted so that scripts keep working.
    {"propagate", 0, OptArg::kOptional, kAllocIgnored},
    {"pty", 0, OptArg::kNone, kPty},
    {"qos", 'q', OptArg::kRequired, kAllocQos},
    {"quiet", 'Q', OptArg::kNone, kAllocQuiet},
    {"quit-on-interrupt", 0, OptArg::kNone, kQuitOnInterrupt},
    {"reboot", 0, OptArg::kNone, kAllocIgnored},
    {"relative", 'r', OptArg::kRequired, kRelative},
    {"reservation", 0, OptArg::kRequired, kAllocReservation},
    {"resv-ports", 0, OptArg::kOptional, kAllocIgnored},
    {"send-libs", 0, OptArg::kOptional, kAllocUnsupported},
    {"signal", 0, OptArg::kRequired, kAllocSignal},
    {"slurmd-debug", 0, OptArg::kRequired, kAllocIgnored},
    {"sockets-per-node", 0, OptArg::kRequired, kAllocUnsupported},
    {"spread-job", 0, OptArg::kNone, kAllocIgnored},
    {"switches", 0, OptArg::kRequired, kAllocSwitches},
    {"task-epilog", 0, OptArg::kRequired, kAllocUnsupported},
    {"task-prolog", 0, OptArg::kRequired, kAllocUnsupported},
    {"tasks-per-node", 0, OptArg::kRequired, kAllocNtasksPerNode, true},
    {"test-only", 0, OptArg::kNone, kTestOnly},
    {"thread-spec", 0, OptArg::kRequired, kAllocUnsupported},
    {"threads", 'T', OptArg::kRequired, kAllocIgnored},
    {"threads-per-core", 0, OptArg::kRequired, kAllocUnsupported},
    {"time", 't', OptArg::kRequired, kAllocTime},
    {"time-min", 0, OptArg::kRequired, kAllocTimeMin},
    {"tmp", 0, OptArg::kRequired, kAllocUnsupported},
    {"uid", 0, OptArg::kRequired, kAllocUnsupported},
    {"unbuffered", 'u', OptArg::kNone, kUnbuffered},
    {"usage", 0, OptArg::kNone, kAllocUsage},
    {"use-min-nodes", 0, OptArg::kNone, kAllocIgnored},
    {"verbose", 'v', OptArg::kNone, kAllocVerbose},
    {"version", 'V', OptArg::kNone, kAllocVersion},
    {"wait", 'W', OptArg::kRequired, kWait},
    {"wckey", 0, OptArg::kRequired, kAllocWckey},
    {"x11", 0, OptArg::kOptional, kAllocUnsupported},
};

constexpr int kStopIds[] = {kAllocHelp, kAllocUsage, kAllocVersion};

// Input environment variables (man srun, INPUT ENVIRONMENT VARIABLES) that map to options we
// act on, in application order: a later variable for the same option overrides an earlier one
// (SLURM_JOB_ID over SLURM_JOBID, SLURM_NTASKS over SLURM_NPROCS, SRUN_EXPORT_ENV over
// SLURM_EXPORT_ENV). SLURM_JOB_NAME, SLURM_STEP_GRES, SLURM_DIST_PLANESIZE and
// SLURM_REQ_SWITCH/SLURM_WAIT4SWITCH are handled apart.
enum class EnvKind {
  kValue,      // the value is the option's argument
  kOptional,   // empty: the option without argument; else the argument
  kFlag,       // set when empty, "yes" or non-zero
  kDebug,      // "1" adds one -v
  kExclusive,  // empty: --exclusive; else --exclusive=<value>
};
struct EnvDef {
  std::string_view var;
  int id;
  EnvKind kind;
};
constexpr EnvDef kEnvVars[] = {
    {"SLURM_ACCOUNT", kAllocAccount, EnvKind::kValue},
    {"SLURM_CONSTRAINT", kAllocConstraint, EnvKind::kValue},
    {"SRUN_CONTAINER", kContainer, EnvKind::kValue},
    {"SLURM_CPU_BIND", kCpuBind, EnvKind::kValue},
    {"SLURM_GPU_BIND", kGpuBind, EnvKind::kValue},
    {"SLURM_HINT", kHint, EnvKind::kValue},
    {"SLURM_MEM_BIND", kMemBind, EnvKind::kValue},
    {"SLURM_CPUS_PER_GPU", kAllocCpusPerGpu, EnvKind::kValue},
    {"SRUN_CPUS_PER_TASK", kAllocCpusPerTask, EnvKind::kValue},
    {"SLURM_DEBUG", kAllocVerbose, EnvKind::kDebug},
    {"SLURM_DEPENDENCY", kAllocDependency, EnvKind::kValue},
    {"SLURM_DISABLE_STATUS", kDisableStatus, EnvKind::kFlag},
    {"SLURM_DISTRIBUTION", kAllocDistribution, EnvKind::kValue},
    {"SLURM_EXACT", kExact, EnvKind::kFlag},
    {"SLURM_EXCLUSIVE", kAllocExclusive, EnvKind::kExclusive},
    {"SLURM_EXPORT_ENV", kExport, EnvKind::kValue},
    {"SRUN_EXPORT_ENV", kExport, EnvKind::kValue},
    {"SLURM_GPUS", kAllocGpus, EnvKind::kValue},
    {"SLURM_GPUS_PER_NODE", kAllocGpusPerNode, EnvKind::kValue},
    {"SLURM_GPUS_PER_TASK", kAllocGpusPerTask, EnvKind::kValue},
    {"SLURM_GRES", kAllocGres, EnvKind::kValue},
    {"SLURM_IMMEDIATE", kAllocImmediate, EnvKind::kOptional},
    {"SLURM_JOBID", kJobid, EnvKind::kValue},
    {"SLURM_JOB_ID", kJobid, EnvKind::kValue},
    {"SLURM_NNODES", kAllocNodes, EnvKind::kValue},
    {"SLURM_JOB_NUM_NODES", kAllocNodes, EnvKind::kValue},
    {"SLURM_KILL_BAD_EXIT", kKillOnBadExit, EnvKind::kOptional},
    {"SLURM_LABELIO", kLabel, EnvKind::kFlag},
    {"SLURM_MEM_PER_CPU", kAllocMemPerCpu, EnvKind::kValue},
    {"SLURM_MEM_PER_GPU", kAllocMemPerGpu, EnvKind::kValue},
    {"SLURM_MEM_PER_NODE", kAllocMem, EnvKind::kValue},
    {"SLURM_MPI_TYPE", kMpi, EnvKind::kValue},
    {"SLURM_NO_KILL", kAllocNoKill, EnvKind::kOptional},
    {"SLURM_NPROCS", kAllocNtasks, EnvKind::kValue},
    {"SLURM_NTASKS", kAllocNtasks, EnvKind::kValue},
    {"SLURM_NTASKS_PER_NODE", kAllocNtasksPerNode, EnvKind::kValue},
    {"SLURM_OPEN_MODE", kOpenMode, EnvKind::kValue},
    {"SLURM_OVERCOMMIT", kAllocOvercommit, EnvKind::kFlag},
    {"SLURM_OVERLAP", kOverlap, EnvKind::kFlag},
    {"SLURM_PARTITION", kAllocPartition, EnvKind::kValue},
    {"SLURM_QOS", kAllocQos, EnvKind::kValue},
    {"SLURM_WORKING_DIR", kAllocChdir, EnvKind::kValue},
    {"SLURM_REMOTE_CWD", kAllocChdir, EnvKind::kValue},
    {"SLURM_RESERVATION", kAllocReservation, EnvKind::kValue},
    {"SLURM_SIGNAL", kAllocSignal, EnvKind::kValue},
    {"SLURM_STDERRMODE", kError, EnvKind::kValue},
    {"SLURM_STDINMODE", kInput, EnvKind::kValue},
    {"SLURM_STDOUTMODE", kOutput, EnvKind::kValue},
    {"SLURM_TIMELIMIT", kAllocTime, EnvKind::kValue},
    {"SLURM_UNBUFFEREDIO", kUnbuffered, EnvKind::kFlag},
    {"SLURM_WAIT", kWait, EnvKind::kValue},
    {"SLURM_WCKEY", kAllocWckey, EnvKind::kValue},
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
      case EnvKind::kExclusive:
        add(d.id, value->empty() ? std::nullopt : std::optional<std::string>(*value));
        break;
    }
  }
  // --switches=count[@max-time] from two variables.
  if (auto count = EnvValue(env, "SLURM_REQ_SWITCH")) {
    std::string v = *count;
    if (auto wait = EnvValue(env, "SLURM_WAIT4SWITCH"); wait && !wait->empty()) v += "@" + *wait;
    add(kAllocSwitches, v);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Value parsers
// ---------------------------------------------------------------------------------------------

Status SrunFatal(const std::string& text) {
  return InvalidArgument(std::string(kProg) + ": fatal: " + text);
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Whether a filename pattern names per-node or per-task files (%t, %n, %N, with an optional
// zero-padding width). A leading backslash turns all substitution off.
bool PatternIsPerNode(std::string_view p) {
  if (!p.empty() && p[0] == '\\') return false;
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    if (p[i] != '%') continue;
    size_t j = i + 1;
    if (p[j] == '%') {
      i = j;  // "%%"
      continue;
    }
    while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) ++j;
    if (j < p.size() && (p[j] == 't' || p[j] == 'n' || p[j] == 'N')) return true;
    i = j - 1;
  }
  return false;
}

SrunIo ParseIo(const std::string& value) {
  SrunIo io;
  io.given = true;
  if (value.empty() || value == "-" || EqualsIgnoreCase(value, "all")) {
    io.mode = SrunIo::Mode::kAll;
  } else if (EqualsIgnoreCase(value, "none")) {
    io.mode = SrunIo::Mode::kNone;
  } else if (auto task = ParseUnsigned(value); task && AllDigits(value)) {
    io.mode = SrunIo::Mode::kTask;
    io.task = static_cast<uint32_t>(*task);
  } else {
    io.mode = SrunIo::Mode::kFile;
    io.pattern = value;
    io.on_node = PatternIsPerNode(value);
  }
  return io;
}

Status CpuBindError(const std::string& line) {
  return InvalidArgument(std::string(kProg) + ": error: " + line + "\n" + std::string(kProg) +
                         ": fatal: Failed to parse --cpu-bind= values.");
}

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool IsDec(char c) { return c >= '0' && c <= '9'; }

// One map_/mask_ list: "<n>[*<count>],..." expanded. Map ids are decimal, masks hexadecimal
// with an optional "0x"; empty items are skipped.
Result<std::vector<std::string>> ParseBindList(std::string_view kind, std::string_view list,
                                               bool mask) {
  std::vector<std::string> out;
  for (std::string_view item : Split(list, ',')) {
    if (item.empty()) continue;
    std::string_view num = item, mult;
    if (size_t star = item.find('*'); star != std::string_view::npos) {
      num = item.substr(0, star);
      mult = item.substr(star);  // with the '*', as Slurm shows it
    }
    std::string_view digits = num;
    if (mask && digits.size() > 1 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
      digits.remove_prefix(2);
    auto valid = mask ? IsHex : IsDec;
    for (char c : digits) {
      if (!valid(c)) {
        return CpuBindError("Failed to validate number: " + std::string(mask ? digits : num) +
                            ", the offending character is " + std::string(1, c));
      }
    }
    if (digits.empty()) {
      return CpuBindError("Failed to validate number: " + std::string(item) +
                          ", the offending character is " +
                          std::string(1, item.empty() ? ' ' : item[0]));
    }
    uint64_t repeat = 1;
    if (!mult.empty()) {
      std::string_view count = mult.substr(1);
      for (char c : count) {
        if (!IsDec(c)) {
          return CpuBindError("Failed to validate number: " + std::string(mult) +
                              ", the offending character is " + std::string(1, c));
        }
      }
      auto r = ParseUnsigned(count, 1u << 20);
      if (!r || *r == 0) {
        return CpuBindError("Invalid " + std::string(kind) + " multiplier: " + std::string(count));
      }
      repeat = *r;
    }
    std::string canonical;
    if (mask) {
      std::string hex = Lower(digits);
      size_t nz = hex.find_first_not_of('0');
      canonical = "0x" + (nz == std::string::npos ? std::string("0") : hex.substr(nz));
    } else {
      size_t nz = digits.find_first_not_of('0');
      canonical = nz == std::string_view::npos ? std::string("0") : std::string(digits.substr(nz));
    }
    for (uint64_t r = 0; r < repeat; ++r) out.push_back(canonical);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Applying settings
// ---------------------------------------------------------------------------------------------

struct SrunState {
  AllocationState alloc = jobopt::NewAllocationState(kProg, 0);
  SrunRequest req;
  std::optional<std::string> export_spec;
  std::optional<std::string> gres_cmdline;  // --gres as given on the command line
  bool mpi_list = false;
  bool cpu_bind_help = false;
  std::string bind_help;  // --hint=help / --mem-bind=help text
  bool name_on_cmdline = false;
  bool no_allocate = false;
};

Status ApplySrunSetting(SrunState& st, const OptionSetting& s, OptSource source) {
  bool handled = false;
  if (Status e = jobopt::ApplyAllocationOption(st.alloc, s, source, &handled); !e.ok()) return e;
  if (s.id == kAllocJobName && source == OptSource::kCmdline) st.name_on_cmdline = true;
  if (s.id == kAllocGres && source == OptSource::kCmdline) st.gres_cmdline = s.value;
  if (handled) return Status::Ok();

  SrunRequest& req = st.req;
  const std::string value = s.value.value_or("");
  switch (s.id) {
    case kCpuBind: {
      if (source == OptSource::kCmdline && EqualsIgnoreCase(value, "help")) {
        st.cpu_bind_help = true;
        break;
      }
      auto cb = ParseCpuBind(value);
      if (!cb.ok()) {
        // An inherited SLURM_CPU_BIND (tasks get one describing their own binding) that does
        // not read as an option is ignored rather than fatal; the command line is strict.
        if (source == OptSource::kEnv) break;
        return cb.status();
      }
      req.cpu_bind = std::move(*cb);
      break;
    }
    case kGpuBind:
      req.gpu_bind = value;
      break;
    case kHint:
      if (source == OptSource::kCmdline && EqualsIgnoreCase(value, "help")) {
        st.bind_help = HintHelpText();
        break;
      }
      if (!ValidHint(value))
        return jobopt::ProgError(kProg,
                                 "unrecognized --hint argument \"" + value + "\", see --hint=help");
      st.alloc.spec.set_hint(value);
      break;
    case kMemBind: {
      if (source == OptSource::kCmdline && EqualsIgnoreCase(value, "help")) {
        st.bind_help = MemBindHelpText();
        break;
      }
      auto mb = ParseMemBind(value);
      if (!mb.ok()) {
        if (source == OptSource::kEnv) break;  // an inherited value that does not parse
        return jobopt::ProgError(kProg, mb.error());
      }
      st.alloc.spec.set_mem_bind(value);
      break;
    }
    case kDisableStatus:
      req.disable_status = true;
      break;
    case kError:
      req.error = ParseIo(value);
      break;
    case kExact:
      req.exact = true;
      break;
    case kExport:
      st.export_spec = value;
      break;
    case kHetGroup:
      if (value.empty()) return ProgError(kProg, "Invalid --het-group specification");
      req.het_group = value;
      break;
    case kInput:
      req.input = ParseIo(value);
      break;
    case kJobid: {
      auto id = ParseUnsigned(Trim(value));
      if (!id || *id == 0) return jobopt::BadNumber(kProg, value, "jobid");
      req.job_id = static_cast<uint32_t>(*id);
      req.jobid_on_cmdline = source == OptSource::kCmdline;
      break;
    }
    case kKillOnBadExit: {
      if (!s.value) {
        req.kill_on_bad_exit = true;
        break;
      }
      auto v = ParseUnsigned(Trim(value));
      if (!v) return jobopt::BadNumber(kProg, value, "kill-on-bad-exit");
      req.kill_on_bad_exit = *v != 0;
      break;
    }
    case kLabel:
      req.label = true;
      break;
    case kContainer:
      req.container = std::string(value);  // an OCI bundle directory (oci.conf on the node)
      break;
    case kMpi: {
      if (source == OptSource::kCmdline && value == "list") {
        st.mpi_list = true;
        break;
      }
      auto mpi = ParseMpiType(value);
      if (!mpi.ok()) return mpi.status();
      req.mpi = *mpi;
      break;
    }
    case kMultiProg:
      req.multi_prog = true;
      break;
    case kNoAllocate:
      st.no_allocate = true;
      break;
    case kOpenMode:
      if (EqualsIgnoreCase(value, "append") || EqualsIgnoreCase(value, "a")) {
        st.alloc.spec.set_open_mode_append(true);
      } else if (EqualsIgnoreCase(value, "truncate") || EqualsIgnoreCase(value, "t")) {
        st.alloc.spec.set_open_mode_append(false);
      } else {
        return ProgError(kProg, "Invalid --open-mode specification");
      }
      req.open_mode_given = true;
      break;
    case kOutput:
      req.output = ParseIo(value);
      break;
    case kOverlap:
      req.overlap = true;
      break;
    case kPreserveEnv:
      req.preserve_env = true;
      break;
    case kPty:
      req.pty = true;
      break;
    case kQuitOnInterrupt:
      req.quit_on_interrupt = true;
      break;
    case kRelative: {
      auto v = ParseUnsigned(Trim(value));
      if (!v) return jobopt::BadNumber(kProg, value, "relative");
      req.relative = static_cast<uint32_t>(*v);
      break;
    }
    case kTestOnly:
      req.test_only = true;
      break;
    case kUnbuffered:
      req.unbuffered = true;
      break;
    case kWait: {
      auto v = ParseUnsigned(Trim(value));
      if (!v) return jobopt::BadNumber(kProg, value, "wait");
      req.wait_s = static_cast<uint32_t>(*v);
      break;
    }
    default:
      break;
  }
  return Status::Ok();
}

// Node and task counts as srun settles them (observed from Slurm 22.05's srun): a task count
// below the node count lowers the node count, and --ntasks-per-node gives way when it
// contradicts known node and task counts.
void SettleCounts(SrunState& st) {
  pb::JobSpec& spec = st.alloc.spec;
  if (!st.alloc.ntasks_given || !st.alloc.nodes_given) return;
  const uint32_t n = spec.num_tasks();
  if (spec.max_nodes() == 0 || spec.max_nodes() > n) spec.set_max_nodes(n);
  if (spec.min_nodes() > n) spec.set_min_nodes(n);
  if (st.alloc.ntasks_per_node_given &&
      uint64_t{spec.ntasks_per_node()} * spec.min_nodes() != uint64_t{n}) {
    spec.set_ntasks_per_node(0);
    st.alloc.ntasks_per_node_given = false;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

Result<SrunCpuBind> ParseCpuBind(std::string_view value) {
  SrunCpuBind cb;
  bool none = false;
  size_t pos = 0;
  while (true) {
    size_t comma = value.find(',', pos);
    std::string_view raw =
        value.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    std::string tok = Lower(raw);
    struct ListType {
      std::string_view name;
      SrunCpuBind::Type type;
      bool mask;
    };
    static constexpr ListType kLists[] = {
        {"map_cpu", SrunCpuBind::Type::kMapCpu, false},
        {"mask_cpu", SrunCpuBind::Type::kMaskCpu, true},
        {"map_ldom", SrunCpuBind::Type::kMapLdom, false},
        {"mask_ldom", SrunCpuBind::Type::kMaskLdom, true},
    };
    const ListType* list_type = nullptr;
    for (const auto& l : kLists) {
      if (tok == l.name || tok.rfind(std::string(l.name) + ":", 0) == 0) list_type = &l;
    }
    if (list_type) {
      // The list runs to the end of the value: its own commas separate its items.
      std::string_view rest = value.substr(pos);
      size_t colon = rest.find(':');
      std::string_view list =
          colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (Trim(list).empty()) {
        return CpuBindError("missing list for \"--cpu-bind=" + std::string(list_type->name) +
                            ":<list>\"");
      }
      auto items = ParseBindList(list_type->name, list, list_type->mask);
      if (!items.ok()) return items.status();
      cb.type = list_type->type;
      cb.list = std::move(*items);
      break;
    }
    using T = SrunCpuBind::Type;
    static const std::map<std::string, T, std::less<>> kTypes = {
        {"no", T::kNone},         {"none", T::kNone},
        {"rank", T::kRank},       {"rank_ldom", T::kRankLdom},
        {"sockets", T::kSockets}, {"socket", T::kSockets},
        {"cores", T::kCores},     {"core", T::kCores},
        {"threads", T::kThreads}, {"thread", T::kThreads},
        {"ldoms", T::kLdoms},     {"ldom", T::kLdoms},
    };
    if (tok.empty() && value.size() > raw.size()) {
      // "quiet," (an empty item next to others) is harmless.
    } else if (tok == "q" || tok == "quiet") {
      cb.verbose = false;
    } else if (tok == "v" || tok == "verbose") {
      cb.verbose = true;
    } else if (auto it = kTypes.find(tok); it != kTypes.end()) {
      // "none" wins over any other type given with it, as in Slurm.
      if (it->second == T::kNone) none = true;
      cb.type = it->second;
    } else {
      return CpuBindError("unrecognized --cpu-bind argument \"" + std::string(raw) + "\"");
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (none) {
    cb.type = SrunCpuBind::Type::kNone;
    cb.list.clear();
  }
  static constexpr std::string_view kNames[] = {
      "",      "none",      "rank",    "cores",    "threads",  "sockets",
      "ldoms", "rank_ldom", "map_cpu", "mask_cpu", "map_ldom", "mask_ldom",
  };
  std::string text = cb.verbose ? "verbose" : "";
  std::string_view type_name = kNames[static_cast<int>(cb.type)];
  if (!type_name.empty()) {
    if (!text.empty()) text += ',';
    text += type_name;
  }
  if (!cb.list.empty()) {
    text += ':';
    for (size_t i = 0; i < cb.list.size(); ++i) text += (i ? "," : "") + cb.list[i];
  }
  cb.text = text;
  return cb;
}

Result<std::string> ParseMpiType(std::string_view value) {
  if (value == "none" || value == "openmpi") return std::string("none");  // Slurm maps openmpi
  if (value == "pmi2") return std::string("pmi2");
  if (value == "pmix" || value == "pmix_v2" || value == "pmix_v3" || value == "pmix_v4" ||
      value == "pmix_v5")
    return std::string("pmix");
  return ProgError(
      kProg, "Invalid MPI type '" + std::string(value) + "', --mpi=list for acceptable types");
}

Result<SrunRequest> ParseSrunCommandLine(const std::vector<std::string>& args,
                                         const SrunContext& ctx) {
  auto parsed = jobopt::ParseOptions(args, kOptions, kStopIds);
  if (!parsed.ok()) return jobopt::UsageError(kProg, parsed.error());

  SrunState st;
  st.alloc.now = ctx.now;
  st.alloc.plane_size_env = EnvValue(ctx.environment, "SLURM_DIST_PLANESIZE");

  if (parsed->stopped_by) {
    // Like srun, options before --help/--usage/--version are still checked.
    for (const auto& s : parsed->settings) {
      if (s.id == parsed->stopped_by) break;
      if (Status e = ApplySrunSetting(st, s, OptSource::kCmdline); !e.ok()) return e;
    }
    SrunRequest req;
    req.action = parsed->stopped_by == kAllocHelp    ? SrunAction::kHelp
                 : parsed->stopped_by == kAllocUsage ? SrunAction::kUsage
                                                     : SrunAction::kVersion;
    return req;
  }

  // Lowest precedence first: the environment, then the command line.
  for (const auto& s : EnvSettings(ctx.environment)) {
    if (Status e = ApplySrunSetting(st, s, OptSource::kEnv); !e.ok()) return e;
  }
  for (const auto& s : parsed->settings) {
    if (Status e = ApplySrunSetting(st, s, OptSource::kCmdline); !e.ok()) return e;
  }
  if (!st.bind_help.empty() && !st.mpi_list && !st.cpu_bind_help) {
    SrunRequest req;
    req.action = SrunAction::kBindHelp;
    req.help_text = st.bind_help;
    return req;
  }
  if (st.mpi_list || st.cpu_bind_help) {
    SrunRequest req;
    req.action = st.mpi_list ? SrunAction::kMpiList : SrunAction::kCpuBindHelp;
    return req;
  }
  if (Status e = jobopt::FinishAllocation(st.alloc); !e.ok()) return e;

  SrunRequest& req = st.req;
  pb::JobSpec& spec = st.alloc.spec;
  req.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(parsed->rest), args.end());

  if (st.no_allocate) {
    return ProgError(kProg, "--no-allocate (-Z) is not supported by Shoal");
  }
  if (req.argv.empty()) return SrunFatal("No command given to execute.");
  if (std::find(req.argv.begin(), req.argv.end(), ":") != req.argv.end()) {
    return ProgError(kProg, "Heterogeneous job steps (\":\") are not supported");
  }
  const bool inside = req.job_id != 0;
  if (req.relative) {
    if (!spec.nodelist().empty() || !spec.exclude().empty()) {
      return ProgError(kProg, "-r,--relative not allowed with -w,--nodelist or -x,--exclude.");
    }
    if (!inside) return SrunFatal("--relative option invalid for job allocation request");
  }
  if (req.pty) {
    if (req.input.given || req.output.given || req.error.given) {
      return ProgError(kProg, "--error/--input/--output are incompatible with --pty");
    }
    req.unbuffered = true;
  }
  if (!req.error.given)
    req.error =
        SrunIo{req.output.mode, req.output.task, req.output.pattern, req.output.on_node, false};

  SettleCounts(st);

  // Step exclusivity (current Slurm): --exclusive on a step is --exact, and so is -c.
  req.exact = req.exact || spec.exclusive() || st.alloc.cpus_per_task_given;

  // Names: the job takes -J, else SLURM_JOB_NAME (outside an allocation only), else the
  // executable's name; a step never takes SLURM_JOB_NAME (it would be the batch job's name).
  const std::string base = jobopt::Basename(req.argv[0]);
  req.step_name = st.name_on_cmdline ? spec.name() : base;
  if (!st.alloc.name_given) {
    auto env_name = EnvValue(ctx.environment, "SLURM_JOB_NAME");
    spec.set_name(!inside && env_name ? *env_name : base);
  }

  // Step GRES: --gres, else SLURM_STEP_GRES, else SLURM_GRES; "" = all of the job's.
  if (st.gres_cmdline) {
    req.step_gres = *st.gres_cmdline;
  } else if (auto g = EnvValue(ctx.environment, "SLURM_STEP_GRES")) {
    req.step_gres = *g;
  } else if (auto g2 = EnvValue(ctx.environment, "SLURM_GRES")) {
    req.step_gres = *g2;
  }

  auto env = jobopt::ApplyExport(kProg, st.export_spec.value_or("ALL"), ctx.environment);
  if (!env.ok()) return env.status();
  req.environment = std::move(*env);

  req.distribution = st.alloc.distribution.value_or("");
  req.no_kill = st.alloc.no_kill;
  req.quiet = st.alloc.quiet;
  req.verbose = st.alloc.verbose;
  req.warnings = std::move(st.alloc.warnings);

  spec.set_work_dir(st.alloc.chdir ? jobopt::ResolvePath(ctx.cwd, *st.alloc.chdir) : ctx.cwd);
  spec.set_submit_dir(ctx.cwd);
  spec.set_submit_host(ctx.hostname);
  spec.set_user_name(ctx.user_name);
  spec.set_uid(ctx.uid);
  spec.set_gid(ctx.gid);
  spec.set_command(req.argv[0]);
  for (size_t i = 1; i < req.argv.size(); ++i) spec.add_argv(req.argv[i]);
  for (const auto& e : req.environment) spec.add_environment(e);
  req.spec = std::move(spec);
  return std::move(st.req);
}

pb::StepCreateRequest MakeStepCreateRequest(const SrunRequest& req) {
  const pb::JobSpec& spec = req.spec;
  pb::StepCreateRequest out;
  out.set_job_id(req.job_id);
  out.set_name(req.step_name);
  out.set_min_nodes(spec.min_nodes());
  out.set_max_nodes(spec.max_nodes());
  out.set_num_tasks(spec.num_tasks());
  out.set_cpus_per_task(spec.cpus_per_task());
  out.set_ntasks_per_node(spec.ntasks_per_node());
  out.set_nodelist(spec.nodelist());
  out.set_exclude(spec.exclude());
  out.set_overlap(req.overlap);
  out.set_exclusive(req.exact);
  out.set_mem_per_node_mb(spec.mem_per_node_mb());
  out.set_time_limit(spec.time_limit());
  for (const auto& a : req.argv) out.add_argv(a);
  out.set_mpi(req.mpi);
  out.set_container(req.container);
  // --hint picks the binding type when --cpu-bind names none (man srun).
  out.set_cpu_bind(EffectiveCpuBind(req.cpu_bind.text, spec.hint()));
  out.set_gpu_bind(req.gpu_bind);
  out.set_mem_bind(spec.mem_bind());
  out.set_hint(spec.hint());
  out.set_work_dir(spec.work_dir());
  out.set_gres(req.step_gres);
  if (req.relative) {
    out.set_relative_given(true);
    out.set_relative(*req.relative);
  }
  return out;
}

std::string SrunIoForTasks(const SrunIo& io, uint32_t ntasks) {
  switch (io.mode) {
    case SrunIo::Mode::kAll:
      return "all";
    case SrunIo::Mode::kNone:
      return "none";
    case SrunIo::Mode::kTask:
      // Past the last task the digits are a file name; "./" keeps the two apart.
      return io.task < ntasks ? std::to_string(io.task) : "./" + std::to_string(io.task);
    case SrunIo::Mode::kFile:
      return io.pattern;
  }
  return "all";
}

// ---------------------------------------------------------------------------------------------
// --multi-prog
// ---------------------------------------------------------------------------------------------

namespace {

struct MultiProgLine {
  int line_no = 0;
  std::string ranks;
  std::string rest;  // program and arguments, unsplit
};

// Logical lines: comments and blank lines dropped, backslash continuations joined.
std::vector<MultiProgLine> MultiProgLines(std::string_view text) {
  std::vector<MultiProgLine> out;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line(
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    const int first = ++line_no;
    while (!line.empty() && line.back() == '\\' && pos < text.size()) {
      line.pop_back();
      size_t nl2 = text.find('\n', pos);
      line += text.substr(pos, nl2 == std::string_view::npos ? std::string_view::npos : nl2 - pos);
      pos = nl2 == std::string_view::npos ? text.size() : nl2 + 1;
      ++line_no;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string_view t = Trim(line);
    if (t.empty() || t[0] == '#') continue;
    MultiProgLine l;
    l.line_no = first;
    size_t sp = 0;
    while (sp < t.size() && !jobopt::IsSpace(t[sp])) ++sp;
    l.ranks = std::string(t.substr(0, sp));
    l.rest = std::string(Trim(t.substr(sp)));
    out.push_back(std::move(l));
  }
  return out;
}

// Splits the program and arguments into words: whitespace separates, single quotes group and
// suppress substitution, double quotes group. %t and %o are substituted outside single quotes.
std::vector<std::string> SplitSubstitute(std::string_view s, uint32_t task, uint32_t offset) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        cur += c;
      }
      continue;
    }
    if (quote == 0 && jobopt::IsSpace(c)) {
      if (in_word) words.push_back(std::move(cur));
      cur.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '"') {
      quote = quote == '"' ? 0 : '"';
    } else if (c == '\'' && quote == 0) {
      quote = '\'';
    } else if (c == '%' && i + 1 < s.size() && (s[i + 1] == 't' || s[i + 1] == 'o')) {
      cur += std::to_string(s[i + 1] == 't' ? task : offset);
      ++i;
    } else {
      cur += c;
    }
  }
  if (in_word) words.push_back(std::move(cur));
  return words;
}

// The explicit ranks of a line, in the order listed; nullopt with the message on error.
Result<std::vector<uint32_t>> ParseRanks(std::string_view ranks) {
  std::vector<uint32_t> out;
  for (std::string_view item : Split(ranks, ',')) {
    if (item.empty()) continue;
    size_t dash = item.find('-');
    auto lo = ParseUnsigned(item.substr(0, dash));
    if (!lo) {
      return ProgError(kProg, "Invalid task range specification (" + std::string(ranks) + ")");
    }
    uint64_t hi = *lo;
    if (dash != std::string_view::npos && dash + 1 < item.size()) {
      auto h = ParseUnsigned(item.substr(dash + 1));
      if (!h) {
        return ProgError(kProg, "Invalid task range specification (" + std::string(ranks) + ")");
      }
      if (*h < *lo) return ProgError(kProg, "Invalid task range, " + std::string(item));
      hi = *h;
    }
    if (hi - *lo > (1u << 24)) {
      return ProgError(kProg, "Invalid task range, " + std::string(item));
    }
    for (uint64_t r = *lo; r <= hi; ++r) out.push_back(static_cast<uint32_t>(r));
  }
  if (out.empty()) {
    return ProgError(kProg, "Invalid task range specification (" + std::string(ranks) + ")");
  }
  return out;
}

}  // namespace

Result<std::vector<std::vector<std::string>>> ParseMultiProgConfig(
    std::string_view text, std::string_view file_name, uint32_t ntasks,
    const std::vector<std::string>& extra_args) {
  const std::string file(file_name);
  auto line_error = [&](int line_no, const Status& why) -> Status {
    std::string msg = why.message().empty() ? "" : why.message() + "\n";
    return InvalidArgument(msg + std::string(kProg) + ": error: Line " + std::to_string(line_no) +
                           " of configuration file " + file + " invalid");
  };
  std::vector<std::optional<std::vector<std::string>>> tasks(ntasks);
  bool star_seen = false;
  for (const auto& l : MultiProgLines(text)) {
    if (star_seen && l.ranks != "*") {
      return line_error(l.line_no,
                        ProgError(kProg, "Task range specification with asterisk must be last"));
    }
    if (l.rest.empty()) return line_error(l.line_no, Status::Ok());
    if (l.ranks == "*") {
      if (star_seen) continue;  // the first '*' already took every remaining task
      star_seen = true;
      uint32_t offset = 0;
      for (uint32_t t = 0; t < ntasks; ++t) {
        if (tasks[t]) continue;
        tasks[t] = SplitSubstitute(l.rest, t, offset++);
      }
      continue;
    }
    auto ranks = ParseRanks(l.ranks);
    if (!ranks.ok()) return line_error(l.line_no, ranks.status());
    uint32_t offset = 0;
    for (uint32_t t : *ranks) {
      if (t >= ntasks) {
        return line_error(l.line_no,
                          ProgError(kProg, "Invalid task id, " + std::to_string(t) + " >= ntasks"));
      }
      if (tasks[t]) {
        return line_error(l.line_no,
                          ProgError(kProg, "Duplicate record for task " + std::to_string(t)));
      }
      tasks[t] = SplitSubstitute(l.rest, t, offset++);
    }
  }
  std::vector<std::vector<std::string>> out;
  out.reserve(ntasks);
  for (uint32_t t = 0; t < ntasks; ++t) {
    if (!tasks[t]) {
      return ProgError(kProg, "Configuration file " + file + " invalid, no record for task id " +
                                  std::to_string(t));
    }
    auto argv = std::move(*tasks[t]);
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    out.push_back(std::move(argv));
  }
  if (out.empty()) {
    return ProgError(kProg, "Configuration file " + file + " invalid, no record for task id 0");
  }
  return out;
}

uint32_t MultiProgTaskCount(std::string_view text) {
  uint32_t count = 0;
  bool star = false;
  for (const auto& l : MultiProgLines(text)) {
    if (l.ranks == "*") {
      star = true;
      continue;
    }
    auto ranks = ParseRanks(l.ranks);
    if (!ranks.ok()) continue;
    for (uint32_t r : *ranks) count = std::max(count, r + 1);
  }
  return count == 0 && star ? 1 : count;
}

// ---------------------------------------------------------------------------------------------
// Texts
// ---------------------------------------------------------------------------------------------

std::string SrunMpiListText() {
  return "MPI plugin types are...\n"
         "\tnone\n"
         "\tpmi2\n"
         "\tpmix\n"
         "specific pmix plugin versions available: pmix_v3,pmix_v4,pmix_v5\n";
}

std::string SrunCpuBindHelpText() {
  return "CPU bind options:\n"
         "    --cpu-bind=         Bind tasks to CPUs\n"
         "        q[uiet]         quietly bind before task runs (default)\n"
         "        v[erbose]       verbosely report binding before task runs\n"
         "        no[ne]          don't bind tasks to CPUs (default)\n"
         "        rank            bind by task rank\n"
         "        map_cpu:<list>  specify a CPU ID binding for each task\n"
         "                        where <list> is <cpuid1>,<cpuid2>,...<cpuidN>\n"
         "        mask_cpu:<list> specify a CPU ID binding mask for each task\n"
         "                        where <list> is <mask1>,<mask2>,...<maskN>\n"
         "        rank_ldom       bind task by rank to CPUs in a NUMA locality domain\n"
         "        map_ldom:<list> specify a NUMA locality domain ID for each task\n"
         "        mask_ldom:<list> specify a NUMA locality domain mask for each task\n"
         "        sockets         auto-generate masks binding tasks to sockets\n"
         "        cores           auto-generate masks binding tasks to cores\n"
         "        threads         auto-generate masks binding tasks to threads\n"
         "        ldoms           auto-generate masks binding tasks to NUMA domains\n"
         "        help            show this help message\n";
}

std::string SrunUsageText() {
  return "Usage: srun [-N nnodes] [-n ntasks] [-i in] [-o out] [-e err]\n"
         "            [-c ncpus] [-r n] [-p partition] [--hold] [-t minutes]\n"
         "            [-D path] [--immediate[=secs]] [--overcommit] [--overlap] [--no-kill]\n"
         "            [--oversubscribe] [--label] [--unbuffered] [-m dist] [-J jobname]\n"
         "            [--jobid=id] [--verbose] [--gres=list] [-W sec] [--qos=qos]\n"
         "            [--time-min=minutes] [--mincpus=n] [--mem=MB] [-C list]\n"
         "            [--mpi=type] [--account=name] [--dependency=type:jobid]\n"
         "            [--kill-on-bad-exit] [--propagate[=rlimits]] [--comment=name]\n"
         "            [--cpu-bind=...] [--ntasks-per-node=n] [--mem-per-cpu=MB]\n"
         "            [--exact] [--exclusive] [--export=spec] [--pty] [--multi-prog]\n"
         "            [-w hosts...] [-x hosts...] [--het-group=value]\n"
         "            [--gpus=n] [--gpus-per-node=n] [--gpus-per-task=n]\n"
         "            executable [args...]\n";
}

std::string SrunHelpText() {
  return "Usage: srun [OPTIONS...] executable [args...]\n"
         "Runs a parallel job step: inside an allocation (SLURM_JOB_ID or --jobid) as a new\n"
         "step of it, otherwise in a new allocation that ends with the step. Options are also\n"
         "read from SLURM_* input environment variables; the command line wins.\n"
         "\n"
         "Parallel run options:\n"
         "  -A, --account=name          charge job to specified account\n"
         "  -b, --begin=time            defer job until HH:MM MM/DD/YY\n"
         "  -c, --cpus-per-task=ncpus   number of cpus required per task (implies --exact)\n"
         "      --comment=name          arbitrary comment\n"
         "      --cpu-bind=type         bind tasks to CPUs (--cpu-bind=help for the types)\n"
         "  -d, --dependency=type:jobid defer job until condition on jobid is satisfied\n"
         "      --deadline=time         remove the job if no ending possible before\n"
         "  -D, --chdir=path            change remote current working directory\n"
         "      --export=env_vars|NONE  environment variables passed to the tasks\n"
         "  -e, --error=err             location of stderr redirection\n"
         "  -E, --preserve-env          keep SLURM_JOB_NUM_NODES and SLURM_NTASKS as they are\n"
         "      --gres=list             required generic resources\n"
         "  -H, --hold                  submit job in held state\n"
         "  -i, --input=in              location of stdin redirection\n"
         "  -I, --immediate[=secs]      exit if resources not available in \"secs\"\n"
         "      --jobid=id              run under already allocated job\n"
         "  -J, --job-name=jobname      name of job (default: the executable's name)\n"
         "  -k, --no-kill               do not kill job on node failure\n"
         "  -K, --kill-on-bad-exit[=0|1] kill the step if any task exits non-zero\n"
         "  -l, --label                 prepend task number to lines of stdout/err\n"
         "  -L, --licenses=names        required license, comma separated\n"
         "  -m, --distribution=type     distribution method for processes to nodes\n"
         "                              (type = block|cyclic|arbitrary|plane=size)\n"
         "      --mail-type=type        notify on state change: BEGIN, END, FAIL or ALL\n"
         "      --mail-user=user        who to send email notification to\n"
         "      --mpi=type              type of MPI being used (none, pmi2, pmix; list)\n"
         "      --multi-prog            the executable is a configuration file giving each\n"
         "                              task its own program and arguments\n"
         "  -n, --ntasks=ntasks         number of tasks to run\n"
         "      --nice[=value]          decrease scheduling priority by value\n"
         "      --ntasks-per-node=n     number of tasks to invoke on each node\n"
         "  -N, --nodes=N               number of nodes on which to run (N = min[-max])\n"
         "  -o, --output=out            location of stdout redirection\n"
         "  -O, --overcommit            overcommit resources\n"
         "      --open-mode=mode        append or truncate output files\n"
         "      --overlap               allow other steps to overlap this step\n"
         "      --het-group=value       hetjob components (not supported by Shoal)\n"
         "  -p, --partition=partition   partition requested\n"
         "      --propagate[=rlimits]   accepted; resource limits are not propagated\n"
         "      --pty                   run task zero in pseudo terminal\n"
         "      --quit-on-interrupt     quit on single Ctrl-C\n"
         "  -q, --qos=qos               quality of service\n"
         "  -Q, --quiet                 quiet mode (suppress informational messages)\n"
         "  -r, --relative=n            run job step relative to node n of allocation\n"
         "  -s, --oversubscribe         over-subscribe resources with other jobs\n"
         "      --signal=[R:]num[@time] send signal when time limit within time seconds\n"
         "      --switches=max-switches{@max-time-to-wait}\n"
         "      --test-only             report when the job would start; run nothing\n"
         "  -t, --time=minutes          time limit\n"
         "      --time-min=minutes      minimum time limit (if distinct)\n"
         "  -u, --unbuffered            do not line-buffer stdout/err\n"
         "  -v, --verbose               verbose mode (multiple -v's increase verbosity)\n"
         "  -W, --wait=sec              seconds to wait after first task exits\n"
         "                              before killing job\n"
         "      --wckey=wckey           wckey to run job under\n"
         "  -X, --disable-status        Disable Ctrl-C status feature\n"
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
         "      --exact                 use only the resources requested for the step\n"
         "      --exclusive[=user|mcs]  for job allocations: whole nodes;\n"
         "                              for job steps: the same as --exact\n"
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
