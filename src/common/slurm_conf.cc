#include "common/slurm_conf.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/hostlist.h"
#include "common/units.h"

namespace shoal {
namespace {

// ---------------------------------------------------------------------------------------------
// Small string helpers

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
char Upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

bool IStartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && IEquals(s.substr(0, prefix.size()), prefix);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Upper(c);
  return out;
}

bool ParseU64(std::string_view s, uint64_t max, uint64_t* out) {
  s = Trim(s);
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (max - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool ParseU32(std::string_view s, uint32_t* out) {
  uint64_t v = 0;
  if (!ParseU64(s, 0xffffffffu, &v)) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

bool IsUnlimited(std::string_view s) { return IEquals(s, "UNLIMITED") || IEquals(s, "INFINITE"); }

bool ParseYesNo(std::string_view s, bool* out) {
  if (IEquals(s, "YES") || IEquals(s, "TRUE") || s == "1") {
    *out = true;
    return true;
  }
  if (IEquals(s, "NO") || IEquals(s, "FALSE") || s == "0") {
    *out = false;
    return true;
  }
  return false;
}

std::string Located(const std::string& path, int line, std::string_view what) {
  std::string msg = path;
  msg.push_back(':');
  msg.append(std::to_string(line));
  msg.append(": ");
  msg.append(what);
  return msg;
}

Status LineError(const std::string& path, int line, std::string_view what) {
  return InvalidArgument(Located(path, line, what));
}

std::string Quoted(std::string_view what, std::string_view value) {
  std::string msg(what);
  msg.append(" '");
  msg.append(value);
  msg.push_back('\'');
  return msg;
}

std::string BadValue(std::string_view key, std::string_view value) {
  std::string msg = "invalid ";
  msg.append(key);
  msg.append(" value");
  return Quoted(msg, value);
}

// ---------------------------------------------------------------------------------------------
// Known global keys (man slurm.conf, plus legacy names). Canonical spelling is kept in options.

constexpr std::string_view kGlobalKeys[] = {
    "AccountingStorageBackupHost",
    "AccountingStorageEnforce",
    "AccountingStorageExternalHost",
    "AccountingStorageHost",
    "AccountingStorageLoc",
    "AccountingStorageParameters",
    "AccountingStoragePass",
    "AccountingStoragePort",
    "AccountingStorageTRES",
    "AccountingStorageType",
    "AccountingStorageUser",
    "AccountingStoreFlags",
    "AccountingStoreJobComment",
    "AcctGatherEnergyType",
    "AcctGatherFilesystemType",
    "AcctGatherInterconnectType",
    "AcctGatherNodeFreq",
    "AcctGatherProfileType",
    "AllowSpecResourcesUsage",
    "AuthAltParameters",
    "AuthAltTypes",
    "AuthInfo",
    "AuthType",
    "BackupAddr",
    "BackupController",
    "BatchStartTimeout",
    "BcastExclude",
    "BcastParameters",
    "BurstBufferType",
    "CacheGroups",
    "CheckpointType",
    "CliFilterPlugins",
    "ClusterName",
    "CommunicationParameters",
    "CompleteWait",
    "ControlAddr",
    "ControlMachine",
    "CoreSpecPlugin",
    "CpuFreqDef",
    "CpuFreqGovernors",
    "CredType",
    "CryptoType",
    "DebugFlags",
    "DefCpuPerGPU",
    "DefMemPerCPU",
    "DefMemPerGPU",
    "DefMemPerNode",
    "DependencyParameters",
    "DisableRootJobs",
    "EioTimeout",
    "EnforcePartLimits",
    "Epilog",
    "EpilogMsgTime",
    "EpilogSlurmctld",
    "ExtSensorsFreq",
    "ExtSensorsType",
    "FairShareDampeningFactor",
    "FastSchedule",
    "FederationParameters",
    "FirstJobId",
    "GetEnvTimeout",
    "GresTypes",
    "GroupUpdateForce",
    "GroupUpdateTime",
    "HashPlugin",
    "HealthCheckInterval",
    "HealthCheckNodeState",
    "HealthCheckProgram",
    "InactiveLimit",
    "InteractiveStepOptions",
    "JobAcctGatherFrequency",
    "JobAcctGatherParams",
    "JobAcctGatherType",
    "JobCompHost",
    "JobCompLoc",
    "JobCompParams",
    "JobCompPass",
    "JobCompPort",
    "JobCompType",
    "JobCompUser",
    "JobContainerType",
    "JobCredentialPrivateKey",
    "JobCredentialPublicCertificate",
    "JobFileAppend",
    "JobRequeue",
    "JobSubmitPlugins",
    "KeepAliveTime",
    "KillOnBadExit",
    "KillWait",
    "LaunchParameters",
    "LaunchType",
    "Licenses",
    "LogTimeFormat",
    "MailDomain",
    "MailProg",
    "MaxArraySize",
    "MaxBatchRequeue",
    "MaxDBDMsgs",
    "MaxJobCount",
    "MaxJobId",
    "MaxMemPerCPU",
    "MaxMemPerNode",
    "MaxNodeCount",
    "MaxStepCount",
    "MaxTasksPerNode",
    "MCSParameters",
    "MCSPlugin",
    "MemLimitEnforce",
    "MessageTimeout",
    "MetricsAuthUsers",
    "MetricsParameters",
    "MetricsType",
    "MinJobAge",
    "MpiDefault",
    "MpiParams",
    "NodeFeaturesPlugins",
    "OverTimeLimit",
    "PluginDir",
    "PlugStackConfig",
    "PowerParameters",
    "PowerPlugin",
    "PreemptExemptTime",
    "PreemptMode",
    "PreemptParameters",
    "PreemptType",
    "PrEpParameters",
    "PrEpPlugins",
    "PriorityCalcPeriod",
    "PriorityDecayHalfLife",
    "PriorityFavorSmall",
    "PriorityFlags",
    "PriorityMaxAge",
    "PriorityParameters",
    "PrioritySiteFactorParameters",
    "PrioritySiteFactorPlugin",
    "PriorityType",
    "PriorityUsageResetPeriod",
    "PriorityWeightAge",
    "PriorityWeightAssoc",
    "PriorityWeightFairshare",
    "PriorityWeightJobSize",
    "PriorityWeightPartition",
    "PriorityWeightQOS",
    "PriorityWeightTRES",
    "PrivateData",
    "ProctrackType",
    "Prolog",
    "PrologEpilogTimeout",
    "PrologFlags",
    "PrologSlurmctld",
    "PropagatePrioProcess",
    "PropagateResourceLimits",
    "PropagateResourceLimitsExcept",
    "RebootProgram",
    "ReconfigFlags",
    "RequeueExit",
    "RequeueExitHold",
    "ResumeFailProgram",
    "ResumeProgram",
    "ResumeRate",
    "ResumeTimeout",
    "ResvEpilog",
    "ResvOverRun",
    "ResvProlog",
    "ReturnToService",
    "RoutePlugin",
    "SallocDefaultCommand",
    "SbcastParameters",
    "SchedulerParameters",
    "SchedulerPort",
    "SchedulerRootFilter",
    "SchedulerTimeSlice",
    "SchedulerType",
    "ScronParameters",
    "SelectType",
    "SelectTypeParameters",
    "SlurmctldAddr",
    "SlurmctldDebug",
    "SlurmctldHost",
    "SlurmctldLogFile",
    "SlurmctldParameters",
    "SlurmctldPidFile",
    "SlurmctldPlugstack",
    "SlurmctldPort",
    "SlurmctldPrimaryOffProg",
    "SlurmctldPrimaryOnProg",
    "SlurmctldSyslogDebug",
    "SlurmctldTimeout",
    "SlurmdDebug",
    "SlurmdLogFile",
    "SlurmdParameters",
    "SlurmdPidFile",
    "SlurmdPort",
    "SlurmdSpoolDir",
    "SlurmdSyslogDebug",
    "SlurmdTimeout",
    "SlurmdUser",
    "SlurmSchedLogFile",
    "SlurmSchedLogLevel",
    "SlurmUser",
    "SrunEpilog",
    "SrunPortRange",
    "SrunProlog",
    "StateSaveLocation",
    "SuspendExcNodes",
    "SuspendExcParts",
    "SuspendExcStates",
    "SuspendProgram",
    "SuspendRate",
    "SuspendTime",
    "SuspendTimeout",
    "SwitchParameters",
    "SwitchType",
    "TaskEpilog",
    "TaskPlugin",
    "TaskPluginParam",
    "TaskProlog",
    "TCPTimeout",
    "TmpFS",
    "TopologyParam",
    "TopologyPlugin",
    "TrackWCKey",
    "TreeWidth",
    "UnkillableStepProgram",
    "UnkillableStepTimeout",
    "UsePAM",
    "VSizeFactor",
    "WaitTime",
    "X11Parameters",
};

// Families whose every member is accepted as written.
constexpr std::string_view kGlobalPrefixes[] = {
    "AccountingStorage", "AcctGather", "HealthCheck", "JobAcctGather", "JobComp", "PriorityWeight",
};

// Returns the canonical spelling, or empty when the key is unknown.
std::string_view CanonicalGlobalKey(std::string_view key) {
  for (std::string_view k : kGlobalKeys) {
    if (IEquals(k, key)) return k;
  }
  for (std::string_view p : kGlobalPrefixes) {
    if (key.size() > p.size() && IStartsWith(key, p)) return key;
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Line splitting

using Pairs = std::vector<std::pair<std::string, std::string>>;

// Appends Key=Value tokens of `line` to `out`; the error has no location.
Status SplitInto(std::string_view line, Pairs* out) {
  size_t pos = 0;
  const size_t n = line.size();
  while (true) {
    while (pos < n && IsSpace(line[pos])) ++pos;
    if (pos >= n) break;
    size_t start = pos;
    size_t eq = std::string_view::npos;
    bool quoted = false;
    while (pos < n) {
      char c = line[pos];
      if (c == '"') {
        quoted = !quoted;
      } else if (!quoted) {
        if (IsSpace(c)) break;
        if (c == '=' && eq == std::string_view::npos) eq = pos;
      }
      ++pos;
    }
    std::string_view token = line.substr(start, pos - start);
    if (quoted) return InvalidArgument(Quoted("unterminated quote in", token));
    if (eq == std::string_view::npos)
      return InvalidArgument(Quoted("expected Key=Value, got", token));
    if (eq == start) return InvalidArgument(Quoted("missing key in", token));
    std::string_view raw = line.substr(eq + 1, pos - eq - 1);
    std::string value;
    value.reserve(raw.size());
    for (char c : raw) {
      if (c != '"') value.push_back(c);
    }
    out->emplace_back(std::string(line.substr(start, eq - start)), std::move(value));
  }
  return Status::Ok();
}

std::vector<std::string> SplitList(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t at = s.find(sep, pos);
    if (at == std::string_view::npos) at = s.size();
    std::string_view part = Trim(s.substr(pos, at - pos));
    if (!part.empty()) out.emplace_back(part);
    pos = at + 1;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Node lines

// A NodeName line's keys before names are applied: also the NodeName=DEFAULT template.
struct NodeTemplate {
  NodeConf base;
  uint32_t sockets_per_board = 0;
  std::string addr_expr, hostname_expr, port_expr;
};

bool ValidNodeState(std::string_view upper) {
  // "DOWN", "DRAIN", "IDLE+DRAIN", ...: each '+' part must be a known state or flag.
  static constexpr std::string_view kStates[] = {
      "UNKNOWN", "IDLE",      "DOWN",  "DRAIN",  "FAIL",       "FAILING",      "FUTURE",    "CLOUD",
      "ALLOC",   "ALLOCATED", "MIXED", "RESUME", "POWER_DOWN", "POWERED_DOWN", "NO_RESPOND"};
  size_t pos = 0;
  while (pos <= upper.size()) {
    size_t at = upper.find('+', pos);
    if (at == std::string_view::npos) at = upper.size();
    std::string_view part = upper.substr(pos, at - pos);
    bool ok = false;
    for (std::string_view s : kStates) ok = ok || s == part;
    if (!ok) return false;
    pos = at + 1;
  }
  return true;
}

// Applies one key of a NodeName line (not NodeName itself); errors have no location.
Status ApplyNodeKey(std::string_view key, std::string_view value, NodeTemplate* t) {
  NodeConf& n = t->base;
  auto u32 = [&](uint32_t* field, std::string_view name) -> Status {
    if (!ParseU32(value, field)) return InvalidArgument(BadValue(name, value));
    return Status::Ok();
  };
  auto mem = [&](uint64_t* field, std::string_view name) -> Status {
    Result<uint64_t> r = ParseMemoryMB(value);
    if (!r.ok()) return InvalidArgument(BadValue(name, value));
    *field = *r;
    return Status::Ok();
  };
  if (IEquals(key, "CPUs") || IEquals(key, "Procs")) return u32(&n.cpus, "CPUs");
  if (IEquals(key, "Boards")) {
    Status st = u32(&n.boards, "Boards");
    if (st.ok() && n.boards == 0) return InvalidArgument(BadValue("Boards", value));
    return st;
  }
  if (IEquals(key, "Sockets")) return u32(&n.sockets, "Sockets");
  if (IEquals(key, "SocketsPerBoard")) return u32(&t->sockets_per_board, "SocketsPerBoard");
  if (IEquals(key, "CoresPerSocket")) return u32(&n.cores_per_socket, "CoresPerSocket");
  if (IEquals(key, "ThreadsPerCore")) return u32(&n.threads_per_core, "ThreadsPerCore");
  if (IEquals(key, "RealMemory")) return mem(&n.real_memory_mb, "RealMemory");
  if (IEquals(key, "TmpDisk")) return mem(&n.tmp_disk_mb, "TmpDisk");
  if (IEquals(key, "Weight")) {
    if (IsUnlimited(value)) {
      n.weight = 0xffffffffu;
      return Status::Ok();
    }
    return u32(&n.weight, "Weight");
  }
  if (IEquals(key, "Gres")) {
    n.gres = std::string(value);
    return Status::Ok();
  }
  if (IEquals(key, "Features") || IEquals(key, "Feature") || IEquals(key, "AvailableFeatures")) {
    n.features = SplitList(value, ',');
    return Status::Ok();
  }
  if (IEquals(key, "State")) {
    std::string up = ToUpper(Trim(value));
    if (!ValidNodeState(up)) return InvalidArgument(Quoted("invalid node state", value));
    n.state = std::move(up);
    return Status::Ok();
  }
  if (IEquals(key, "Reason")) {
    n.reason = std::string(value);
    return Status::Ok();
  }
  if (IEquals(key, "NodeAddr")) {
    t->addr_expr = std::string(value);
    return Status::Ok();
  }
  if (IEquals(key, "NodeHostname")) {
    t->hostname_expr = std::string(value);
    return Status::Ok();
  }
  if (IEquals(key, "Port")) {
    t->port_expr = std::string(value);
    return Status::Ok();
  }
  n.extra[std::string(key)] = std::string(value);
  return Status::Ok();
}

// Fills CPUs and topology the way Slurm derives them.
void DeriveTopology(NodeTemplate* t) {
  NodeConf& n = t->base;
  if (n.threads_per_core == 0) n.threads_per_core = 1;
  if (n.cores_per_socket == 0) n.cores_per_socket = 1;
  if (t->sockets_per_board != 0) {
    n.sockets = t->sockets_per_board * n.boards;
  } else if (n.sockets == 0) {
    uint32_t per_socket = n.cores_per_socket * n.threads_per_core;
    n.sockets = n.cpus != 0 && n.cpus / per_socket > 0 ? n.cpus / per_socket : 1;
  }
  if (n.cpus == 0) n.cpus = n.sockets * n.cores_per_socket * n.threads_per_core;
  if (n.state.empty()) n.state = "UNKNOWN";
}

Result<std::vector<uint32_t>> ExpandPorts(std::string_view expr) {
  std::vector<uint32_t> ports;
  expr = Trim(expr);
  auto bad = [&] { return InvalidArgument(BadValue("Port", expr)); };
  size_t dash = expr.find('-');
  if (expr.find_first_of("[,") == std::string_view::npos && dash != std::string_view::npos) {
    uint64_t lo = 0, hi = 0;
    if (!ParseU64(expr.substr(0, dash), 65535, &lo) ||
        !ParseU64(expr.substr(dash + 1), 65535, &hi) || lo == 0 || hi < lo) {
      return bad();
    }
    for (uint64_t p = lo; p <= hi; ++p) ports.push_back(static_cast<uint32_t>(p));
    return ports;
  }
  Result<std::vector<std::string>> list = ExpandHostlist(expr);
  if (!list.ok()) return bad();
  ports.reserve(list->size());
  for (const std::string& s : *list) {
    uint64_t p = 0;
    if (!ParseU64(s, 65535, &p) || p == 0) return bad();
    ports.push_back(static_cast<uint32_t>(p));
  }
  return ports;
}

// ---------------------------------------------------------------------------------------------
// Partition lines

Status ApplyPartitionKey(std::string_view key, std::string_view value, PartitionConf* p) {
  auto u32 = [&](uint32_t* field, std::string_view name, bool allow_unlimited) -> Status {
    if (allow_unlimited && IsUnlimited(value)) {
      *field = 0xffffffffu;
      return Status::Ok();
    }
    if (!ParseU32(value, field)) return InvalidArgument(BadValue(name, value));
    return Status::Ok();
  };
  auto yesno = [&](bool* field, std::string_view name) -> Status {
    if (!ParseYesNo(value, field)) return InvalidArgument(BadValue(name, value));
    return Status::Ok();
  };
  auto time = [&](uint32_t* field, std::string_view name) -> Status {
    if (IEquals(value, "NONE")) {
      *field = kTimeNoVal;
      return Status::Ok();
    }
    Result<uint32_t> r = ParseTimeLimit(value);
    if (!r.ok()) return InvalidArgument(BadValue(name, value));
    *field = *r;
    return Status::Ok();
  };
  auto mem = [&](uint64_t* field, std::string_view name) -> Status {
    if (IsUnlimited(value)) {
      *field = 0;
      return Status::Ok();
    }
    Result<uint64_t> r = ParseMemoryMB(value);
    if (!r.ok()) return InvalidArgument(BadValue(name, value));
    *field = *r;
    return Status::Ok();
  };
  if (IEquals(key, "Nodes")) {
    p->nodes_expr = std::string(Trim(value));
    return Status::Ok();
  }
  if (IEquals(key, "Default")) return yesno(&p->is_default, "Default");
  if (IEquals(key, "MaxTime")) return time(&p->max_time, "MaxTime");
  if (IEquals(key, "DefaultTime")) return time(&p->default_time, "DefaultTime");
  if (IEquals(key, "State")) {
    std::string up = ToUpper(Trim(value));
    if (up != "UP" && up != "DOWN" && up != "DRAIN" && up != "INACTIVE") {
      return InvalidArgument(Quoted("invalid partition state", value));
    }
    p->state = std::move(up);
    return Status::Ok();
  }
  if (IEquals(key, "MinNodes")) return u32(&p->min_nodes, "MinNodes", false);
  if (IEquals(key, "MaxNodes")) return u32(&p->max_nodes, "MaxNodes", true);
  if (IEquals(key, "PriorityTier")) return u32(&p->priority_tier, "PriorityTier", false);
  if (IEquals(key, "PriorityJobFactor")) {
    return u32(&p->priority_job_factor, "PriorityJobFactor", false);
  }
  if (IEquals(key, "Priority")) {  // legacy: sets both
    Status st = u32(&p->priority_tier, "Priority", false);
    p->priority_job_factor = p->priority_tier;
    return st;
  }
  if (IEquals(key, "AllowAccounts")) {
    p->allow_accounts = std::string(value);
    return Status::Ok();
  }
  if (IEquals(key, "DenyAccounts")) {
    p->deny_accounts = std::string(value);
    return Status::Ok();
  }
  if (IEquals(key, "AllowGroups")) {
    p->allow_groups = std::string(value);
    return Status::Ok();
  }
  if (IEquals(key, "AllowQos")) {
    p->allow_qos = std::string(value);
    return Status::Ok();
  }
  if (IEquals(key, "OverSubscribe") || IEquals(key, "Shared")) {
    std::string up = ToUpper(Trim(value));
    std::string_view base = std::string_view(up).substr(0, up.find(':'));
    if (base != "NO" && base != "YES" && base != "EXCLUSIVE" && base != "FORCE") {
      return InvalidArgument(BadValue("OverSubscribe", value));
    }
    p->over_subscribe = std::move(up);
    return Status::Ok();
  }
  if (IEquals(key, "Hidden")) return yesno(&p->hidden, "Hidden");
  if (IEquals(key, "RootOnly")) return yesno(&p->root_only, "RootOnly");
  if (IEquals(key, "ExclusiveUser")) return yesno(&p->exclusive_user, "ExclusiveUser");
  if (IEquals(key, "PreemptMode")) {
    p->preempt_mode = ToUpper(Trim(value));
    return Status::Ok();
  }
  if (IEquals(key, "GraceTime")) return u32(&p->grace_time_s, "GraceTime", false);
  if (IEquals(key, "DefMemPerCPU")) return mem(&p->def_mem_per_cpu_mb, "DefMemPerCPU");
  if (IEquals(key, "MaxMemPerCPU")) return mem(&p->max_mem_per_cpu_mb, "MaxMemPerCPU");
  p->extra[std::string(key)] = std::string(value);
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// The parser

constexpr int kMaxIncludeDepth = 16;

struct Origin {
  std::string path;
  int line = 0;
};

class Parser {
 public:
  Parser(const FileReader& reader, const GlobExpander& glob) : reader_(reader), glob_(glob) {}

  Status ParseText(std::string_view text, const std::string& path, int depth);
  Status Finish();
  SlurmConf TakeConf() { return std::move(conf_); }

 private:
  Status HandleLine(std::string_view line, const std::string& path, int lineno, int depth);
  Status Include(std::string_view arg, const std::string& path, int lineno, int depth);
  Status NodeLine(const Pairs& pairs, const std::string& path, int lineno);
  Status PartitionLine(const Pairs& pairs, const std::string& path, int lineno);
  Status ResolveNodes(std::string_view expr, const Origin& origin, std::string_view what,
                      size_t visible_sets, std::vector<char>* marks);

  const FileReader& reader_;
  const GlobExpander& glob_;
  SlurmConf conf_;
  NodeTemplate node_default_;
  PartitionConf part_default_;
  std::vector<Origin> part_origins_;
  std::vector<Origin> nodeset_origins_;
  struct DownDef {
    std::string nodes, state, reason;
    Origin origin;
  };
  std::vector<DownDef> downs_;
  // Key=Value pairs of the line being handled, one vector per Include depth (reused).
  std::vector<Pairs> pairs_by_depth_ = std::vector<Pairs>(kMaxIncludeDepth + 1);
};

Status Parser::ParseText(std::string_view text, const std::string& path, int depth) {
  std::string logical;  // one per file: includes recurse while a line is being handled
  int lineno = 0, start_line = 0;
  bool continued = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view phys = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++lineno;
    if (!continued) {
      logical.clear();
      start_line = lineno;
    }
    // Copy up to a comment: '#' outside quotes starts one, "\#" is a literal '#'.
    size_t begin = logical.size();
    bool quoted = false;
    for (size_t i = 0; i < phys.size(); ++i) {
      char c = phys[i];
      if (c == '"') {
        quoted = !quoted;
      } else if (c == '\\' && i + 1 < phys.size() && phys[i + 1] == '#') {
        logical.push_back('#');
        ++i;
        continue;
      } else if (c == '#' && !quoted) {
        break;
      }
      logical.push_back(c);
    }
    while (logical.size() > begin && IsSpace(logical.back())) logical.pop_back();
    if (logical.size() > begin && logical.back() == '\\') {
      logical.pop_back();
      continued = true;
      if (pos < text.size()) continue;
    }
    continued = false;
    Status st = HandleLine(logical, path, start_line, depth);
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

Status Parser::HandleLine(std::string_view line, const std::string& path, int lineno, int depth) {
  line = Trim(line);
  if (line.empty()) return Status::Ok();
  if (line.size() > 7 && IStartsWith(line, "include") && IsSpace(line[7])) {
    return Include(Trim(line.substr(8)), path, lineno, depth);
  }
  Pairs& pairs_ = pairs_by_depth_[depth];
  pairs_.clear();
  Status st = SplitInto(line, &pairs_);
  if (!st.ok()) return LineError(path, lineno, st.message());
  const std::string& first = pairs_[0].first;
  if (IEquals(first, "NodeName")) return NodeLine(pairs_, path, lineno);
  if (IEquals(first, "PartitionName")) return PartitionLine(pairs_, path, lineno);
  if (IEquals(first, "NodeSet")) {
    NodeSetConf ns;
    ns.name = pairs_[0].second;
    if (ns.name.empty()) return LineError(path, lineno, "empty NodeSet name");
    for (size_t i = 1; i < pairs_.size(); ++i) {
      const auto& [k, v] = pairs_[i];
      if (IEquals(k, "Nodes")) {
        ns.nodes_expr = v;
      } else if (IEquals(k, "Feature") || IEquals(k, "Features")) {
        ns.feature = v;
      } else {
        conf_.warnings.push_back(Located(path, lineno, Quoted("unknown key", k) + " ignored"));
      }
    }
    for (const NodeSetConf& other : conf_.nodesets) {
      if (other.name == ns.name) {
        return LineError(path, lineno, Quoted("duplicate NodeSet name", ns.name));
      }
    }
    conf_.nodesets.push_back(std::move(ns));
    nodeset_origins_.push_back({path, lineno});
    return Status::Ok();
  }
  if (IEquals(first, "DownNodes")) {
    DownDef d;
    d.nodes = pairs_[0].second;
    d.state = "DOWN";
    d.origin = {path, lineno};
    for (size_t i = 1; i < pairs_.size(); ++i) {
      const auto& [k, v] = pairs_[i];
      if (IEquals(k, "State")) {
        d.state = ToUpper(Trim(v));
        if (!ValidNodeState(d.state))
          return LineError(path, lineno, Quoted("invalid node state", v));
      } else if (IEquals(k, "Reason")) {
        d.reason = v;
      } else {
        conf_.warnings.push_back(Located(path, lineno, Quoted("unknown key", k) + " ignored"));
      }
    }
    downs_.push_back(std::move(d));
    return Status::Ok();
  }
  if (IEquals(first, "FrontendName")) {
    conf_.warnings.push_back(
        Located(path, lineno, "FrontendName lines are not supported, ignored"));
    return Status::Ok();
  }
  for (const auto& [k, v] : pairs_) {
    if (IEquals(k, "Include")) {
      st = Include(v, path, lineno, depth);
      if (!st.ok()) return st;
      continue;
    }
    if (IEquals(k, "NodeName") || IEquals(k, "PartitionName") || IEquals(k, "NodeSet") ||
        IEquals(k, "DownNodes")) {
      return LineError(path, lineno, k + " must be the first key on its line");
    }
    std::string_view canon = CanonicalGlobalKey(k);
    if (canon.empty()) {
      conf_.warnings.push_back(Located(path, lineno, Quoted("unknown key", k) + " ignored"));
      continue;
    }
    if (IEquals(canon, "SlurmctldHost")) conf_.controller_hosts.push_back(v);
    auto it = conf_.options.find(canon);
    if (it != conf_.options.end()) {
      it->second = v;
    } else {
      conf_.options.emplace(std::string(canon), v);
    }
  }
  return Status::Ok();
}

Status Parser::Include(std::string_view arg, const std::string& path, int lineno, int depth) {
  if (depth + 1 > kMaxIncludeDepth) return LineError(path, lineno, "Include nesting too deep");
  std::string pattern;
  pattern.reserve(arg.size());
  for (size_t i = 0; i < arg.size(); ++i) {
    if (arg[i] == '"') continue;
    if (arg[i] == '%' && i + 1 < arg.size() && arg[i + 1] == 'c') {
      pattern.append(conf_.ClusterName());
      ++i;
      continue;
    }
    pattern.push_back(arg[i]);
  }
  if (pattern.empty()) return LineError(path, lineno, "Include without a file name");
  if (pattern[0] != '/') {
    size_t slash = path.rfind('/');
    if (slash != std::string::npos) pattern.insert(0, path, 0, slash + 1);
  }
  std::vector<std::string> files = glob_(pattern);
  for (const std::string& file : files) {
    Result<std::string> text = reader_(file);
    if (!text.ok()) {
      return LineError(path, lineno, "Include: could not read '" + file + "': " + text.error());
    }
    Status st = ParseText(*text, file, depth + 1);
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

Status Parser::NodeLine(const Pairs& pairs, const std::string& path, int lineno) {
  const std::string& names_expr = pairs[0].second;
  const bool is_default = IEquals(names_expr, "DEFAULT");
  NodeTemplate local;
  NodeTemplate* t = &node_default_;
  if (!is_default) {
    local = node_default_;
    t = &local;
  }
  for (size_t i = 1; i < pairs.size(); ++i) {
    Status st = ApplyNodeKey(pairs[i].first, pairs[i].second, t);
    if (!st.ok()) return LineError(path, lineno, st.message());
  }
  if (is_default) return Status::Ok();

  Result<std::vector<std::string>> names = ExpandHostlist(names_expr);
  if (!names.ok()) return LineError(path, lineno, names.error());
  const size_t count = names->size();
  auto paired = [&](const std::string& expr, std::string_view key,
                    std::vector<std::string>* out) -> Status {
    if (expr.empty()) return Status::Ok();
    Result<std::vector<std::string>> list = ExpandHostlist(expr);
    if (!list.ok()) return LineError(path, lineno, std::string(key) + ": " + list.error());
    if (list->size() != count) {
      return LineError(path, lineno,
                       std::string(key) + " count (" + std::to_string(list->size()) +
                           ") does not match NodeName count (" + std::to_string(count) + ")");
    }
    *out = std::move(*list);
    return Status::Ok();
  };
  std::vector<std::string> addrs, hostnames;
  Status st = paired(t->addr_expr, "NodeAddr", &addrs);
  if (!st.ok()) return st;
  st = paired(t->hostname_expr, "NodeHostname", &hostnames);
  if (!st.ok()) return st;
  std::vector<uint32_t> ports;
  if (!t->port_expr.empty()) {
    Result<std::vector<uint32_t>> r = ExpandPorts(t->port_expr);
    if (!r.ok()) return LineError(path, lineno, r.error());
    if (r->size() != 1 && r->size() != count) {
      return LineError(path, lineno,
                       "Port count (" + std::to_string(r->size()) +
                           ") does not match NodeName count (" + std::to_string(count) + ")");
    }
    ports = std::move(*r);
  }
  DeriveTopology(t);

  // Grow geometrically: reserving exactly per line would make many-line files quadratic.
  const size_t want = conf_.nodes.size() + count;
  if (want > conf_.nodes.capacity())
    conf_.nodes.reserve(std::max(want, 2 * conf_.nodes.capacity()));
  if (want > conf_.node_index.size() * 2) conf_.node_index.reserve(2 * want);
  for (size_t i = 0; i < count; ++i) {
    std::string& name = (*names)[i];
    if (IEquals(name, "ALL")) return LineError(path, lineno, "node name 'ALL' is reserved");
    if (!conf_.node_index.try_emplace(name, conf_.nodes.size()).second) {
      return LineError(path, lineno, Quoted("duplicate node name", name));
    }
    NodeConf& n = conf_.nodes.emplace_back(t->base);
    n.hostname = hostnames.empty() ? name : std::move(hostnames[i]);
    n.addr = addrs.empty() ? n.hostname : std::move(addrs[i]);
    if (!ports.empty()) n.port = ports.size() == 1 ? ports[0] : ports[i];
    n.name = std::move(name);
  }
  return Status::Ok();
}

Status Parser::PartitionLine(const Pairs& pairs, const std::string& path, int lineno) {
  const std::string& name = pairs[0].second;
  const bool is_default = IEquals(name, "DEFAULT");
  if (name.empty()) return LineError(path, lineno, "empty PartitionName");
  PartitionConf local;
  PartitionConf* p = &part_default_;
  if (!is_default) {
    local = part_default_;
    local.name = name;
    p = &local;
  }
  for (size_t i = 1; i < pairs.size(); ++i) {
    Status st = ApplyPartitionKey(pairs[i].first, pairs[i].second, p);
    if (!st.ok()) return LineError(path, lineno, st.message());
  }
  if (is_default) return Status::Ok();
  for (const PartitionConf& other : conf_.partitions) {
    if (other.name == name)
      return LineError(path, lineno, Quoted("duplicate partition name", name));
  }
  conf_.partitions.push_back(std::move(local));
  part_origins_.push_back({path, lineno});
  return Status::Ok();
}

// Marks the nodes named by `expr` (hostlist of node names, NodeSet names, or ALL).
Status Parser::ResolveNodes(std::string_view expr, const Origin& origin, std::string_view what,
                            size_t visible_sets, std::vector<char>* marks) {
  if (Trim(expr).empty()) return Status::Ok();
  Result<std::vector<std::string>> names = ExpandHostlist(expr);
  if (!names.ok())
    return LineError(origin.path, origin.line, std::string(what) + ": " + names.error());
  for (const std::string& name : *names) {
    if (name == "ALL" || IEquals(name, "ALL")) {
      std::fill(marks->begin(), marks->end(), 1);
      continue;
    }
    auto it = conf_.node_index.find(name);
    if (it != conf_.node_index.end()) {
      (*marks)[it->second] = 1;
      continue;
    }
    const NodeSetConf* set = nullptr;
    for (size_t i = 0; i < visible_sets && set == nullptr; ++i) {
      if (conf_.nodesets[i].name == name) set = &conf_.nodesets[i];
    }
    if (set == nullptr) {
      return LineError(origin.path, origin.line,
                       std::string(what) + Quoted(": unknown node", name));
    }
    for (const std::string& member : set->nodes)
      (*marks)[conf_.node_index.find(member)->second] = 1;
  }
  return Status::Ok();
}

Status Parser::Finish() {
  for (const DownDef& d : downs_) {
    Result<std::vector<std::string>> names = ExpandHostlist(d.nodes);
    if (!names.ok()) return LineError(d.origin.path, d.origin.line, names.error());
    for (const std::string& name : *names) {
      auto it = conf_.node_index.find(name);
      if (it == conf_.node_index.end()) {
        return LineError(d.origin.path, d.origin.line, Quoted("DownNodes: unknown node", name));
      }
      conf_.nodes[it->second].state = d.state;
      conf_.nodes[it->second].reason = d.reason;
    }
  }

  // NodeSets resolve in definition order; a later set may name an earlier one.
  std::vector<char> marks;
  for (size_t i = 0; i < conf_.nodesets.size(); ++i) {
    NodeSetConf& ns = conf_.nodesets[i];
    const Origin& origin = nodeset_origins_[i];
    if (conf_.node_index.count(ns.name) != 0 || IEquals(ns.name, "ALL")) {
      return LineError(origin.path, origin.line,
                       "NodeSet '" + ns.name + "' clashes with a node name");
    }
    marks.assign(conf_.nodes.size(), 0);
    // Only earlier sets are resolved, so a set may name those but not itself or later ones.
    Status st = ResolveNodes(ns.nodes_expr, origin, "nodeset " + ns.name, i, &marks);
    if (!st.ok()) return st;
    NodeSetConf& set = ns;
    if (!set.feature.empty()) {
      for (size_t n = 0; n < conf_.nodes.size(); ++n) {
        const auto& f = conf_.nodes[n].features;
        if (std::find(f.begin(), f.end(), set.feature) != f.end()) marks[n] = 1;
      }
    }
    set.nodes.clear();
    for (size_t n = 0; n < marks.size(); ++n) {
      if (marks[n]) set.nodes.push_back(conf_.nodes[n].name);
    }
  }

  int last_default = -1;
  for (size_t i = 0; i < conf_.partitions.size(); ++i) {
    PartitionConf& p = conf_.partitions[i];
    marks.assign(conf_.nodes.size(), 0);
    Status st = ResolveNodes(p.nodes_expr, part_origins_[i], "partition " + p.name,
                             conf_.nodesets.size(), &marks);
    if (!st.ok()) return st;
    p.nodes.clear();
    for (size_t n = 0; n < marks.size(); ++n) {
      if (marks[n]) p.nodes.push_back(conf_.nodes[n].name);
    }
    if (p.is_default) last_default = static_cast<int>(i);
  }
  for (size_t i = 0; i < conf_.partitions.size(); ++i) {
    conf_.partitions[i].is_default = static_cast<int>(i) == last_default;
  }
  return Status::Ok();
}

uint32_t GetU32(const SlurmConf& conf, std::string_view key, uint32_t def) {
  auto it = conf.options.find(key);
  if (it == conf.options.end()) return def;
  uint32_t v = 0;
  return ParseU32(it->second, &v) ? v : def;
}

// "host(addr)" -> {host, addr}; addr empty when not given.
std::pair<std::string, std::string> SplitHostAddr(std::string_view s) {
  s = Trim(s);
  size_t open = s.find('(');
  if (open == std::string_view::npos) return {std::string(s), {}};
  size_t close = s.find(')', open);
  std::string_view addr =
      s.substr(open + 1, (close == std::string_view::npos ? s.size() : close) - open - 1);
  return {std::string(Trim(s.substr(0, open))), std::string(Trim(addr))};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public API

bool CaseInsensitiveLess::operator()(std::string_view a, std::string_view b) const {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    char x = Lower(a[i]), y = Lower(b[i]);
    if (x != y) return static_cast<unsigned char>(x) < static_cast<unsigned char>(y);
  }
  return a.size() < b.size();
}

Result<std::vector<std::pair<std::string, std::string>>> SplitConfLine(std::string_view line) {
  Pairs out;
  Status st = SplitInto(line, &out);
  if (!st.ok()) return st;
  return out;
}

Result<SlurmConf> ParseSlurmConf(const std::string& text, const std::string& path,
                                 const FileReader& reader, const GlobExpander& glob) {
  Parser parser(reader, glob);
  Status st = parser.ParseText(text, path, 0);
  if (!st.ok()) return st;
  st = parser.Finish();
  if (!st.ok()) return st;
  return parser.TakeConf();
}

Result<std::string> ReadFileToString(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error(ErrorCode::kIoError, std::strerror(errno));
  std::string out;
  struct stat sb;
  if (::fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    ::close(fd);
    return Error(ErrorCode::kIoError, std::strerror(EISDIR));
  }
  if (::fstat(fd, &sb) == 0 && sb.st_size > 0) out.reserve(static_cast<size_t>(sb.st_size));
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Error(ErrorCode::kIoError, std::strerror(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::vector<std::string> GlobPaths(const std::string& pattern) {
  if (pattern.find_first_of("*?[") == std::string::npos) return {pattern};
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

Result<SlurmConf> LoadSlurmConf(const std::string& path) {
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    return Error(ErrorCode::kIoError, "could not read " + path + ": " + text.error());
  }
  return ParseSlurmConf(*text, path, ReadFileToString, GlobPaths);
}

std::string DefaultSlurmConfPath() {
  const char* env = std::getenv("SLURM_CONF");
  if (env != nullptr && *env != '\0') return env;
  const std::string etc = "/etc/slurm/slurm.conf";
  if (::access(etc.c_str(), F_OK) == 0) return etc;
  std::string cached = std::string(kConfiglessCacheDir) + "/slurm.conf";
  if (::access(cached.c_str(), F_OK) == 0) return cached;
  return etc;
}

Result<NodeConf> ParseNodeConf(std::string_view name, std::string_view keys) {
  Pairs pairs;
  Status st = SplitInto(keys, &pairs);
  if (!st.ok()) return st;
  NodeTemplate t;
  for (const auto& [k, v] : pairs) {
    if (IEquals(k, "NodeName")) continue;
    st = ApplyNodeKey(k, v, &t);
    if (!st.ok()) return st;
  }
  DeriveTopology(&t);
  NodeConf n = std::move(t.base);
  n.name = std::string(name);
  n.hostname = t.hostname_expr.empty() ? n.name : t.hostname_expr;
  n.addr = t.addr_expr.empty() ? n.hostname : t.addr_expr;
  if (!t.port_expr.empty()) {
    Result<std::vector<uint32_t>> ports = ExpandPorts(t.port_expr);
    if (!ports.ok()) return ports.status();
    if (ports->size() != 1) return InvalidArgument(BadValue("Port", t.port_expr));
    n.port = (*ports)[0];
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// SlurmConf accessors

std::string SlurmConf::Get(std::string_view key, std::string_view def) const {
  auto it = options.find(key);
  return it == options.end() ? std::string(def) : it->second;
}

Result<int64_t> SlurmConf::GetInt(std::string_view key, int64_t def) const {
  auto it = options.find(key);
  if (it == options.end()) return def;
  std::string_view s = Trim(it->second);
  bool neg = !s.empty() && s[0] == '-';
  uint64_t v = 0;
  if (!ParseU64(neg ? s.substr(1) : s, neg ? (1ull << 63) : (1ull << 63) - 1, &v)) {
    return InvalidArgument(BadValue(it->first, it->second));
  }
  return neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
}

std::string SlurmConf::ClusterName() const {
  std::string name = Get("ClusterName");
  return name.empty() ? "cluster" : name;
}

std::string SlurmConf::ControllerHost() const {
  if (!controller_hosts.empty()) {
    std::string host = SplitHostAddr(controller_hosts.front()).first;
    if (!host.empty()) return host;
  }
  std::string legacy(Trim(Get("ControlMachine")));
  return legacy.empty() ? "localhost" : legacy;
}

std::string SlurmConf::ControllerAddr() const {
  if (!controller_hosts.empty()) {
    auto [host, addr] = SplitHostAddr(controller_hosts.front());
    if (!addr.empty()) return addr;
    if (!host.empty()) return host;
  }
  std::string addr(Trim(Get("ControlAddr")));
  return addr.empty() ? ControllerHost() : addr;
}

std::vector<std::string> SlurmConf::ControllerAddresses() const {
  std::string port = ":" + std::to_string(ControllerPort());
  std::vector<std::string> out;
  for (const auto& entry : controller_hosts) {
    auto [host, addr] = SplitHostAddr(entry);
    std::string a = !addr.empty() ? addr : host;
    if (!a.empty()) out.push_back(a + port);
  }
  if (out.empty()) out.push_back(ControllerAddr() + port);
  return out;
}

uint32_t SlurmConf::ControllerPort() const {
  // A range ("6817-6820") means several ports; the first is the one to use.
  std::string v = Get("SlurmctldPort");
  uint32_t port = 0;
  if (!ParseU32(std::string_view(v).substr(0, v.find('-')), &port) || port == 0 || port > 65535) {
    return 6817;
  }
  return port;
}

uint32_t SlurmConf::SlurmdPort() const { return GetU32(*this, "SlurmdPort", 6818); }

std::string SlurmConf::StateSaveLocation() const {
  return Get("StateSaveLocation", "/var/spool/slurmctld");
}

std::string SlurmConf::SlurmdSpoolDir() const { return Get("SlurmdSpoolDir", "/var/spool/slurmd"); }

uint32_t SlurmConf::SlurmdTimeout() const { return GetU32(*this, "SlurmdTimeout", 300); }
uint32_t SlurmConf::KillWait() const { return GetU32(*this, "KillWait", 30); }
uint32_t SlurmConf::FirstJobId() const { return GetU32(*this, "FirstJobId", 1); }
uint32_t SlurmConf::MaxJobCount() const { return GetU32(*this, "MaxJobCount", 10000); }
uint32_t SlurmConf::MinJobAge() const { return GetU32(*this, "MinJobAge", 300); }

std::string SlurmConf::SlurmUser() const {
  std::string user = Get("SlurmUser");
  return user.empty() ? "root" : user;
}

const NodeConf* SlurmConf::FindNode(std::string_view name) const {
  auto it = node_index.find(name);
  if (it != node_index.end() && it->second < nodes.size() && nodes[it->second].name == name) {
    return &nodes[it->second];
  }
  // Not indexed (or the index is stale): the vector is the truth.
  for (const NodeConf& n : nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

const PartitionConf* SlurmConf::DefaultPartition() const {
  const PartitionConf* found = nullptr;
  for (const PartitionConf& p : partitions) {
    if (p.is_default) found = &p;
  }
  return found;
}

}  // namespace shoal
