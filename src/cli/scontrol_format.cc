#include "cli/scontrol_format.h"

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/format_fields.h"
#include "common/hostlist.h"
#include "common/states.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

std::string OrNull(std::string_view s) {
  return s.empty() ? std::string("(null)") : std::string(s);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

template <typename Container>
std::vector<std::string> ToVector(const Container& c) {
  return std::vector<std::string>(c.begin(), c.end());
}

// Slurm's record layout: each line followed by the separator (job), or lines joined by it
// (node, partition); multi-line records end with a blank line.
struct Lines {
  std::vector<std::string> lines;
  void Add(std::string line) { lines.push_back(std::move(line)); }
};

std::string Sep(const ShowOptions& o) { return o.one_liner ? " " : "\n   "; }

std::string UserName(const NameLookup& names, uint32_t uid, std::string_view known) {
  if (!known.empty()) return std::string(known);
  if (names.user) {
    std::string n = names.user(uid);
    if (!n.empty()) return n;
  }
  return std::to_string(uid);
}

std::string GroupName(const NameLookup& names, uint32_t gid) {
  if (names.group) {
    std::string n = names.group(gid);
    if (!n.empty()) return n;
  }
  return std::to_string(gid);
}

std::string TimeOr(int64_t t, std::string_view zero) {
  return t == 0 ? std::string(zero) : FormatTimestamp(t);
}

bool IsArrayTask(const pb::JobRecord& job) {
  return job.array_job_id() != 0 && job.array_task_id() != kNoArrayTask;
}

uint32_t CpusPerTask(const pb::JobRecord& job) {
  return job.spec().cpus_per_task() ? job.spec().cpus_per_task() : 1;
}

uint64_t JobTotalMemoryMB(const pb::JobRecord& job) {
  uint32_t nodes = job.num_nodes() ? job.num_nodes() : static_cast<uint32_t>(job.nodes_size());
  if (nodes == 0) nodes = 1;
  if (job.mem_per_node_mb()) return job.mem_per_node_mb() * nodes;
  if (job.spec().mem_per_node_mb()) return job.spec().mem_per_node_mb() * nodes;
  if (job.spec().mem_per_cpu_mb()) return job.spec().mem_per_cpu_mb() * job.num_cpus();
  return 0;
}

std::string JobTres(const pb::JobRecord& job) {
  std::string s = "cpu=" + std::to_string(job.num_cpus());
  if (uint64_t mem = JobTotalMemoryMB(job)) s += ",mem=" + FormatTresMemory(mem);
  uint32_t nodes = job.nodes_size() ? static_cast<uint32_t>(job.nodes_size()) : job.num_nodes();
  s += ",node=" + std::to_string(nodes ? nodes : 1);
  s += ",billing=" + std::to_string(job.num_cpus());
  return s;
}

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

// JSON string literal (quotes included); one implementation for every command's --json.
std::string JsonEscape(std::string_view s) { return fmt::JsonString(s); }

// ---- hostlist compression (order-preserving, duplicates kept, like Slurm's hostlist) ----------

struct HostName {
  std::string prefix;
  bool has_num = false;
  uint64_t num = 0;
  size_t width = 0;     // digits as written
  bool padded = false;  // written with a leading zero ("n01")
};

HostName SplitHost(const std::string& h) {
  HostName out;
  size_t end = h.size(), start = end;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(h[start - 1]))) --start;
  // Keep numbers to 18 digits so they fit; longer digit runs stay in the prefix.
  if (start < end && end - start <= 18) {
    out.prefix = h.substr(0, start);
    out.has_num = true;
    out.width = end - start;
    out.num = std::strtoull(h.c_str() + start, nullptr, 10);
    out.padded = out.width > 1 && h[start] == '0';
  } else {
    out.prefix = h;
  }
  return out;
}

struct HostRange {
  std::string prefix;
  bool has_num = false;
  uint64_t lo = 0, hi = 0;
  size_t width = 0;
  bool padded = false;
};

bool WidthCompatible(const HostRange& r, const HostName& h) {
  if (r.width == h.width) return true;
  return !r.padded && !h.padded;  // "n9,n10" -> n[9-10]; "n1,n01" stay apart
}

std::string FormatNum(uint64_t n, const HostRange& r) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%0*" PRIu64, r.padded ? static_cast<int>(r.width) : 1, n);
  return buf;
}

std::string RangesToString(const std::vector<HostRange>& ranges) {
  std::string out;
  size_t i = 0;
  while (i < ranges.size()) {
    if (!out.empty()) out += ",";
    const HostRange& r = ranges[i];
    if (!r.has_num) {
      out += r.prefix;
      ++i;
      continue;
    }
    // Consecutive numbered ranges with the same prefix share one bracket.
    size_t j = i;
    while (j < ranges.size() && ranges[j].has_num && ranges[j].prefix == r.prefix) ++j;
    bool bracket = (j - i > 1) || (r.lo != r.hi);
    out += r.prefix;
    if (bracket) out += "[";
    for (size_t k = i; k < j; ++k) {
      if (k > i) out += ",";
      out += FormatNum(ranges[k].lo, ranges[k]);
      if (ranges[k].hi != ranges[k].lo) out += "-" + FormatNum(ranges[k].hi, ranges[k]);
    }
    if (bracket) out += "]";
    i = j;
  }
  return out;
}

std::vector<HostRange> Coalesce(const std::vector<HostName>& hosts) {
  std::vector<HostRange> ranges;
  for (const HostName& h : hosts) {
    if (!ranges.empty()) {
      HostRange& last = ranges.back();
      if (h.has_num && last.has_num && last.prefix == h.prefix && h.num == last.hi + 1 &&
          WidthCompatible(last, h)) {
        last.hi = h.num;
        continue;
      }
    }
    HostRange r;
    r.prefix = h.prefix;
    r.has_num = h.has_num;
    r.lo = r.hi = h.num;
    r.width = h.width;
    r.padded = h.padded;
    ranges.push_back(r);
  }
  return ranges;
}

// ---- scontrol update key tables -----------------------------------------------------------------

// Job fields scontrol accepts (Slurm's spelling). Aliases map to the canonical key.
struct KeyAlias {
  const char* alias;
  const char* canonical;
};

constexpr const char* kJobKeys[] = {
    "Account",
    "AdminComment",
    "ArrayTaskThrottle",
    "BurstBuffer",
    "ClusterFeatures",
    "Comment",
    "Contiguous",
    "CoreSpec",
    "CPUsPerTask",
    "Deadline",
    "DelayBoot",
    "Dependency",
    "EligibleTime",
    "EndTime",
    "ExcNodeList",
    "Features",
    "Gres",
    "Licenses",
    "MailType",
    "MailUser",
    "MinCPUsNode",
    "MinMemoryCPU",
    "MinMemoryNode",
    "MinTmpDiskNode",
    "Name",
    "Nice",
    "NodeList",
    "NumCPUs",
    "NumNodes",
    "NumTasks",
    "OverSubscribe",
    "Partition",
    "Prefer",
    "Priority",
    "QOS",
    "Reboot",
    "ReqNodeList",
    "Requeue",
    "Reservation",
    "SiteFactor",
    "StartTime",
    "StdErr",
    "StdIn",
    "StdOut",
    "Switches",
    "TasksPerNode",
    "ThreadSpec",
    "TimeLimit",
    "TimeMin",
    "WCKey",
    "WorkDir",
    "UserID",
};

constexpr KeyAlias kJobAliases[] = {
    {"jobname", "Name"},
    {"reqnodes", "NumNodes"},
    {"reqprocs", "NumCPUs"},
    {"shared", "OverSubscribe"},
    {"reservationname", "Reservation"},
    {"irequeue", "Requeue"},
    {"mincpus", "MinCPUsNode"},
    {"minmemory", "MinMemoryNode"},
    {"mintmpdisk", "MinTmpDiskNode"},
    {"constraint", "Features"},
    {"qos", "QOS"},
    {"numtasks", "NumTasks"},
    {"tresperjob", "Gres"},
    {"tres_per_node", "Gres"},
    {"tresPerNode", "Gres"},
};

std::optional<std::string> CanonicalJobKey(std::string_view key) {
  std::string lk = Lower(key);
  for (const auto& a : kJobAliases)
    if (Lower(a.alias) == lk) return std::string(a.canonical);
  for (const char* k : kJobKeys)
    if (Lower(k) == lk) return std::string(k);
  return std::nullopt;
}

constexpr const char* kNodeKeys[] = {
    "ActiveFeatures", "AvailableFeatures", "Comment",      "CpuBind", "Extra",
    "Gres",           "NodeAddr",          "NodeHostName", "Weight"};

constexpr const char* kNodeStates[] = {"CANCEL_REBOOT",   "DOWN",
                                       "DRAIN",           "FAIL",
                                       "FUTURE",          "IDLE",
                                       "NORESP",          "POWER_DOWN",
                                       "POWER_DOWN_ASAP", "POWER_DOWN_FORCE",
                                       "POWER_UP",        "RESUME",
                                       "UNDRAIN"};

bool IsAllDigits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

bool IsInteger(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return IsAllDigits(s);
}

}  // namespace

// ================================================================================================
// Units
// ================================================================================================

std::string FormatMemoryScontrol(uint64_t mb) {
  static const char kUnits[] = {'M', 'G', 'T', 'P', 'E'};
  double v = static_cast<double>(mb);
  size_t unit = 0;
  while (v >= 1024 && std::fmod(v, 512) == 0 && unit + 1 < sizeof(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char buf[64];
  if (v == std::floor(v)) {
    std::snprintf(buf, sizeof(buf), "%.0f%c", v, kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f%c", v, kUnits[unit]);
  }
  return buf;
}

std::string FormatTresMemory(uint64_t mb) {
  static const char kUnits[] = {'M', 'G', 'T', 'P', 'E'};
  size_t unit = 0;
  while (mb >= 1024 && mb % 1024 == 0 && unit + 1 < sizeof(kUnits)) {
    mb /= 1024;
    ++unit;
  }
  return std::to_string(mb) + kUnits[unit];
}

std::string FormatLimitMinutes(uint32_t minutes, std::string_view no_val) {
  if (minutes == kTimeInfinite) return "UNLIMITED";
  if (minutes == kTimeNoVal) return std::string(no_val);
  return FormatHms(static_cast<int64_t>(minutes) * 60);
}

std::string FormatExitCode(int32_t status) {
  int code = 0, sig = 0;
  if (WIFSIGNALED(status)) {
    sig = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    code = WEXITSTATUS(status);
  }
  return std::to_string(code) + ":" + std::to_string(sig);
}

// ================================================================================================
// show job
// ================================================================================================

int64_t JobRunSeconds(const pb::JobRecord& job, int64_t now) {
  if (job.start_time() == 0) return 0;
  switch (job.state()) {
    case pb::JOB_PENDING:
      return 0;
    case pb::JOB_RUNNING: {
      int64_t t = now - job.start_time();
      // Time spent suspended before a resume is not tracked separately; best effort.
      return t < 0 ? 0 : t;
    }
    case pb::JOB_SUSPENDED: {
      int64_t t = (job.suspend_time() ? job.suspend_time() : now) - job.start_time();
      return t < 0 ? 0 : t;
    }
    default: {
      int64_t end = job.end_time() ? job.end_time() : now;
      int64_t t = end - job.start_time();
      return t < 0 ? 0 : t;
    }
  }
}

std::string ExpandStdPath(const pb::JobRecord& job, StdStream which, std::string_view user) {
  const pb::JobSpec& spec = job.spec();
  std::string pattern;
  switch (which) {
    case StdStream::kIn:
      pattern = spec.std_in();
      if (pattern.empty()) return "/dev/null";
      break;
    case StdStream::kErr:
      pattern = spec.std_err();
      if (pattern.empty()) pattern = spec.std_out();
      break;
    case StdStream::kOut:
      pattern = spec.std_out();
      break;
  }
  bool array = IsArrayTask(job);
  if (pattern.empty()) pattern = array ? "slurm-%A_%a.out" : "slurm-%j.out";

  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c != '%' || i + 1 >= pattern.size()) {
      out += c;
      continue;
    }
    char f = pattern[i + 1];
    switch (f) {
      case 'A':
        out += std::to_string(array ? job.array_job_id() : job.job_id());
        break;
      case 'a':
        out += std::to_string(array ? job.array_task_id() : kNoArrayTask);
        break;
      case 'j':
        out += std::to_string(job.job_id());
        break;
      case 'u':
        out += user;
        break;
      case 'x':
        out += spec.name();
        break;
      default:
        // Slurm leaves the other patterns (%N, %n, %t, %s, %%) as written.
        out += c;
        out += f;
        break;
    }
    ++i;
  }
  if (!out.empty() && out[0] != '/' && !spec.work_dir().empty()) {
    std::string dir = spec.work_dir();
    if (dir.back() != '/') dir += '/';
    out = dir + out;
  }
  return out;
}

std::string FormatJob(const pb::JobRecord& job, int64_t now, const ShowOptions& opts,
                      const NameLookup& names) {
  const pb::JobSpec& spec = job.spec();
  Lines l;
  std::string user = UserName(names, spec.uid(), spec.user_name());

  std::string first = "JobId=" + std::to_string(job.job_id());
  if (IsArrayTask(job)) {
    first += " ArrayJobId=" + std::to_string(job.array_job_id()) +
             " ArrayTaskId=" + std::to_string(job.array_task_id());
  }
  first += " JobName=" + spec.name();
  l.Add(first);

  l.Add("UserId=" + user + "(" + std::to_string(spec.uid()) + ") GroupId=" +
        GroupName(names, spec.gid()) + "(" + std::to_string(spec.gid()) + ") MCS_label=N/A");

  uint32_t priority = (job.held() && job.state() == pb::JOB_PENDING) ? 0 : job.priority();
  l.Add("Priority=" + std::to_string(priority) + " Nice=" + std::to_string(spec.nice()) +
        " Account=" + OrNull(spec.account()) + " QOS=" + OrNull(spec.qos()));

  // CONFIGURING: running, but prologs (PrologSlurmctld, PrologFlags=Alloc) not done yet.
  std::string state = job.completing() ? "COMPLETING"
                      : job.state() == pb::JOB_RUNNING && job.prolog_pending_nodes_size() > 0
                          ? "CONFIGURING"
                          : JobStateName(job.state());
  std::string reason;
  if (!job.state_desc().empty()) {
    reason = ReplaceAll(job.state_desc(), " ", "_");
  } else {
    reason = job.reason().empty() ? "None" : job.reason();
  }
  l.Add("JobState=" + state + " Reason=" + reason + " Dependency=" + OrNull(spec.dependency()));

  l.Add(std::string("Requeue=") + (job.requeue() ? "1" : "0") + " Restarts=" +
        std::to_string(job.restart_count()) + " BatchFlag=" + (spec.interactive() ? "0" : "1") +
        " Reboot=0 ExitCode=" + FormatExitCode(job.exit_status()));
  if (opts.details) l.Add("DerivedExitCode=" + FormatExitCode(job.derived_exit_status()));

  std::string time_min = "N/A";
  if (spec.time_min() != 0 && spec.time_min() != kTimeNoVal) {
    time_min = FormatLimitMinutes(spec.time_min(), "N/A");
  }
  l.Add("RunTime=" + FormatHms(JobRunSeconds(job, now)) + " TimeLimit=" +
        FormatLimitMinutes(job.time_limit(), "Partition_Limit") + " TimeMin=" + time_min);

  l.Add("SubmitTime=" + TimeOr(job.submit_time(), "Unknown") +
        " EligibleTime=" + TimeOr(job.eligible_time(), "Unknown"));
  l.Add("AccrueTime=" + TimeOr(job.accrue_time(), "Unknown"));

  std::string end;
  if (job.end_time() != 0 && !(job.time_limit() == kTimeInfinite && !IsFinished(job.state()))) {
    end = FormatTimestamp(job.end_time());
  } else if (job.start_time() != 0 && !IsFinished(job.state()) && job.state() != pb::JOB_PENDING &&
             job.time_limit() != kTimeInfinite && job.time_limit() != kTimeNoVal) {
    end = FormatTimestamp(job.start_time() + static_cast<int64_t>(job.time_limit()) * 60);
  } else {
    end = "Unknown";
  }
  l.Add("StartTime=" + TimeOr(job.start_time(), "Unknown") + " EndTime=" + end +
        " Deadline=" + TimeOr(spec.deadline(), "N/A"));
  if (job.preempt_time() != 0)
    l.Add("PreemptEligibleTime=" + TimeOr(job.start_time(), "None") +
          " PreemptTime=" + FormatTimestamp(job.preempt_time()));

  int64_t pre_suspend = 0;
  if (job.state() == pb::JOB_SUSPENDED && job.suspend_time() && job.start_time()) {
    pre_suspend = std::max<int64_t>(0, job.suspend_time() - job.start_time());
  }
  l.Add("SuspendTime=" + TimeOr(job.suspend_time(), "None") +
        " SecsPreSuspend=" + std::to_string(pre_suspend) +
        " LastSchedEval=" + TimeOr(job.last_sched_eval(), "Unknown") + " Scheduler=Main");

  l.Add("Partition=" + OrNull(job.partition().empty() ? spec.partition() : job.partition()) +
        " AllocNode:Sid=" + OrNull(spec.submit_host()) + ":0");
  l.Add("ReqNodeList=" + OrNull(spec.nodelist()) + " ExcNodeList=" + OrNull(spec.exclude()));
  l.Add("NodeList=" + (job.nodes_size() ? CompressHostlist(ToVector(job.nodes())) : "") +
        (job.sched_nodes().empty() ? "" : " SchedNodeList=" + job.sched_nodes()));
  if (!job.batch_host().empty()) l.Add("BatchHost=" + job.batch_host());

  std::string num_nodes = std::to_string(job.num_nodes());
  if (job.state() == pb::JOB_PENDING && spec.max_nodes() != 0) {
    num_nodes += "-" + std::to_string(spec.max_nodes());
  }
  l.Add("NumNodes=" + num_nodes + " NumCPUs=" + std::to_string(job.num_cpus()) +
        " NumTasks=" + std::to_string(job.num_tasks() ? job.num_tasks() : 1) +
        " CPUs/Task=" + std::to_string(CpusPerTask(job)) + " ReqB:S:C:T=0:0:*:*");
  l.Add("TRES=" + JobTres(job));
  l.Add("Socks/Node=* NtasksPerN:B:S:C=" + std::to_string(spec.ntasks_per_node()) +
        ":0:*:* CoreSpec=*");

  uint32_t min_cpus = CpusPerTask(job) * std::max<uint32_t>(1, spec.ntasks_per_node());
  min_cpus = std::max(min_cpus, spec.min_cpus_per_node());
  std::string mem;
  if (spec.mem_per_cpu_mb()) {
    mem = "MinMemoryCPU=" + FormatMemoryScontrol(spec.mem_per_cpu_mb());
  } else if (spec.mem_per_node_mb()) {
    mem = "MinMemoryNode=" + FormatMemoryScontrol(spec.mem_per_node_mb());
  } else if (job.mem_per_node_mb()) {
    mem = "MinMemoryNode=" + FormatMemoryScontrol(job.mem_per_node_mb());
  } else {
    mem = "MinMemoryNode=0";
  }
  l.Add("MinCPUsNode=" + std::to_string(min_cpus) + " " + mem + " MinTmpDiskNode=0");
  l.Add("Features=" + OrNull(spec.constraint()) + " DelayBoot=00:00:00");
  if (!spec.cluster_features().empty()) l.Add("ClusterFeatures=" + spec.cluster_features());
  if (!spec.reservation().empty()) l.Add("Reservation=" + spec.reservation());
  std::string over = "OK";
  if (spec.exclusive()) {
    std::string mode = Upper(spec.exclusive_mode());
    over = (mode == "USER" || mode == "MCS") ? mode : "NO";
  }
  l.Add("OverSubscribe=" + over + " Contiguous=0 Licenses=" + OrNull(spec.licenses()) +
        " Network=(null)");
  // Slurm shows the script path followed by its arguments; (null) for --wrap and stdin.
  std::string command = spec.command();
  for (const auto& a : spec.argv()) command += " " + a;
  l.Add("Command=" + (spec.command().empty() ? std::string("(null)") : command));
  l.Add("WorkDir=" + OrNull(spec.work_dir()));
  if (!spec.comment().empty()) l.Add("Comment=" + spec.comment() + " ");
  l.Add("StdErr=" + ExpandStdPath(job, StdStream::kErr, user));
  l.Add("StdIn=" + ExpandStdPath(job, StdStream::kIn, user));
  l.Add("StdOut=" + ExpandStdPath(job, StdStream::kOut, user));
  l.Add("Power=");
  if (!spec.gpus().empty()) l.Add("TresPerJob=gres:gpu:" + spec.gpus());
  if (!spec.gres().empty()) l.Add("TresPerNode=gres:" + spec.gres());
  if (!spec.mail_type().empty() || !spec.mail_user().empty()) {
    l.Add("MailUser=" + (spec.mail_user().empty() ? user : spec.mail_user()) + " MailType=" +
          (spec.mail_type().empty() ? std::string("NONE") : Upper(spec.mail_type())));
  }
  if (!spec.container().empty()) l.Add("Container=" + spec.container());  // Slurm: only when set

  std::string sep = Sep(opts);
  std::string out;
  for (const auto& line : l.lines) out += line + sep;
  out += opts.one_liner ? "\n" : "\n\n";
  return out;
}

std::string FormatJobsJson(const std::vector<pb::JobRecord>& jobs, int64_t now,
                           const NameLookup& names) {
  std::string out = "{\n  \"jobs\": [";
  for (size_t i = 0; i < jobs.size(); ++i) {
    const pb::JobRecord& j = jobs[i];
    const pb::JobSpec& s = j.spec();
    std::string user = UserName(names, s.uid(), s.user_name());
    out += i ? ",\n    {" : "\n    {";
    std::vector<std::string> f;
    f.push_back("\"job_id\": " + std::to_string(j.job_id()));
    f.push_back("\"name\": " + JsonEscape(s.name()));
    f.push_back("\"user_id\": " + std::to_string(s.uid()));
    f.push_back("\"user_name\": " + JsonEscape(user));
    f.push_back("\"group_id\": " + std::to_string(s.gid()));
    f.push_back("\"job_state\": " +
                JsonEscape(j.completing() ? "COMPLETING" : JobStateName(j.state())));
    f.push_back("\"state_reason\": " + JsonEscape(j.reason().empty() ? "None" : j.reason()));
    f.push_back("\"partition\": " + JsonEscape(j.partition()));
    f.push_back("\"account\": " + JsonEscape(s.account()));
    f.push_back("\"qos\": " + JsonEscape(s.qos()));
    f.push_back("\"priority\": " + std::to_string(j.priority()));
    f.push_back("\"nice\": " + std::to_string(s.nice()));
    f.push_back("\"nodes\": " +
                JsonEscape(j.nodes_size() ? CompressHostlist(ToVector(j.nodes())) : ""));
    f.push_back("\"batch_host\": " + JsonEscape(j.batch_host()));
    f.push_back("\"node_count\": " + std::to_string(j.num_nodes()));
    f.push_back("\"cpus\": " + std::to_string(j.num_cpus()));
    f.push_back("\"tasks\": " + std::to_string(j.num_tasks()));
    f.push_back("\"time_limit\": " + std::to_string(j.time_limit()));
    f.push_back("\"run_time\": " + std::to_string(JobRunSeconds(j, now)));
    f.push_back("\"submit_time\": " + std::to_string(j.submit_time()));
    f.push_back("\"eligible_time\": " + std::to_string(j.eligible_time()));
    f.push_back("\"start_time\": " + std::to_string(j.start_time()));
    f.push_back("\"end_time\": " + std::to_string(j.end_time()));
    f.push_back("\"exit_code\": " + JsonEscape(FormatExitCode(j.exit_status())));
    f.push_back("\"requeue\": " + std::string(j.requeue() ? "true" : "false"));
    f.push_back("\"restart_cnt\": " + std::to_string(j.restart_count()));
    f.push_back("\"current_working_directory\": " + JsonEscape(s.work_dir()));
    f.push_back("\"standard_output\": " + JsonEscape(ExpandStdPath(j, StdStream::kOut, user)));
    f.push_back("\"standard_error\": " + JsonEscape(ExpandStdPath(j, StdStream::kErr, user)));
    f.push_back("\"standard_input\": " + JsonEscape(ExpandStdPath(j, StdStream::kIn, user)));
    f.push_back("\"comment\": " + JsonEscape(s.comment()));
    if (IsArrayTask(j)) {
      f.push_back("\"array_job_id\": " + std::to_string(j.array_job_id()));
      f.push_back("\"array_task_id\": " + std::to_string(j.array_task_id()));
    }
    out += "\n      " + Join(f, ",\n      ") + "\n    }";
  }
  out += jobs.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

// ================================================================================================
// show node
// ================================================================================================

namespace {

std::string NodeState(const pb::NodeRecord& n) {
  std::string s = NodeStateLong(n);
  if (n.dynamic()) {
    // Slurm puts DYNAMIC_NORM after DRAIN and before MAINTENANCE, RESERVED, NOT_RESPONDING.
    size_t pos = s.size();
    for (const char* later : {"+MAINTENANCE", "+RESERVED", "+NOT_RESPONDING"})
      pos = std::min(pos, s.find(later));
    s.insert(pos, "+DYNAMIC_NORM");
  }
  return s;
}

bool NodeRegistered(const pb::NodeRecord& n) { return n.slurmd_start_time() != 0; }

}  // namespace

std::string FormatNode(const pb::NodeRecord& n, int64_t now, const ShowOptions& opts,
                       const NameLookup& names) {
  Lines l;
  std::string first = "NodeName=" + n.name();
  if (!n.arch().empty()) first += " Arch=" + n.arch();
  first += " CoresPerSocket=" + std::to_string(n.cores_per_socket()) + " ";
  l.Add(first);

  std::string load = "N/A";
  if (NodeRegistered(n)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.2f", n.cpu_load() / 100.0);
    load = buf;
  }
  l.Add("CPUAlloc=" + std::to_string(n.alloc_cpus()) + " CPUEfctv=" + std::to_string(n.cpus()) +
        " CPUTot=" + std::to_string(n.cpus()) + " CPULoad=" + load);
  std::string features = n.features_size() ? Join(ToVector(n.features()), ",") : "(null)";
  l.Add("AvailableFeatures=" + features);
  l.Add("ActiveFeatures=" + features);
  l.Add("Gres=" + OrNull(n.gres()));
  // Like Slurm, the devices in use are shown with -d/details.
  if (opts.details && !n.gres().empty()) {
    l.Add("GresDrain=N/A");
    l.Add("GresUsed=" + n.gres_used());
  }
  std::string addr = "NodeAddr=" + (n.addr().empty() ? n.name() : n.addr()) +
                     " NodeHostName=" + (n.hostname().empty() ? n.name() : n.hostname()) + " ";
  if (!n.version().empty()) addr += "Version=" + n.version();
  l.Add(addr);
  if (!n.os().empty()) l.Add("OS=" + n.os() + " ");
  l.Add("RealMemory=" + std::to_string(n.real_memory_mb()) +
        " AllocMem=" + std::to_string(n.alloc_memory_mb()) +
        " FreeMem=" + (NodeRegistered(n) ? std::to_string(n.free_memory_mb()) : "N/A") +
        " Sockets=" + std::to_string(n.sockets()) +
        " Boards=" + std::to_string(n.boards() ? n.boards() : 1));
  l.Add("State=" + NodeState(n) + " ThreadsPerCore=" + std::to_string(n.threads_per_core()) +
        " TmpDisk=" + std::to_string(n.tmp_disk_mb()) + " Weight=" + std::to_string(n.weight()) +
        " Owner=N/A MCS_label=N/A");
  if (n.partitions_size()) l.Add("Partitions=" + Join(ToVector(n.partitions()), ",") + " ");
  l.Add("BootTime=" + TimeOr(n.boot_time(), "None") +
        " SlurmdStartTime=" + TimeOr(n.slurmd_start_time(), "None"));
  l.Add("LastBusyTime=" + TimeOr(n.last_busy(), "Unknown"));
  l.Add("CfgTRES=cpu=" + std::to_string(n.cpus()) + ",mem=" + FormatTresMemory(n.real_memory_mb()) +
        ",billing=" + std::to_string(n.cpus()));
  std::string alloc;
  if (n.alloc_cpus()) {
    alloc = "cpu=" + std::to_string(n.alloc_cpus());
    if (n.alloc_memory_mb()) alloc += ",mem=" + FormatTresMemory(n.alloc_memory_mb());
  }
  l.Add("AllocTRES=" + alloc);
  l.Add("CapWatts=n/a");
  l.Add("CurrentWatts=0 AveWatts=0");
  l.Add("ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s");
  if (!n.reason().empty()) {
    std::string r = "Reason=" + n.reason();
    if (n.reason_time() != 0) {
      r +=
          " [" + UserName(names, n.reason_uid(), "") + "@" + FormatTimestamp(n.reason_time()) + "]";
    }
    l.Add(r);
  }
  // Slurm 22.05 prints these only when set, after the Reason line.
  if (!n.comment().empty()) l.Add("Comment=" + n.comment());
  if (!n.extra().empty()) l.Add("Extra=" + n.extra());
  (void)now;
  std::string out = Join(l.lines, Sep(opts));
  out += opts.one_liner ? "\n" : "\n\n";
  return out;
}

std::string FormatNodesJson(const std::vector<pb::NodeRecord>& nodes, const NameLookup& names) {
  std::string out = "{\n  \"nodes\": [";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const pb::NodeRecord& n = nodes[i];
    out += i ? ",\n    {" : "\n    {";
    std::vector<std::string> f;
    f.push_back("\"name\": " + JsonEscape(n.name()));
    f.push_back("\"hostname\": " + JsonEscape(n.hostname().empty() ? n.name() : n.hostname()));
    f.push_back("\"address\": " + JsonEscape(n.addr().empty() ? n.name() : n.addr()));
    f.push_back("\"state\": " + JsonEscape(NodeState(n)));
    f.push_back("\"cpus\": " + std::to_string(n.cpus()));
    f.push_back("\"alloc_cpus\": " + std::to_string(n.alloc_cpus()));
    f.push_back("\"sockets\": " + std::to_string(n.sockets()));
    f.push_back("\"cores\": " + std::to_string(n.cores_per_socket()));
    f.push_back("\"threads\": " + std::to_string(n.threads_per_core()));
    f.push_back("\"real_memory\": " + std::to_string(n.real_memory_mb()));
    f.push_back("\"alloc_memory\": " + std::to_string(n.alloc_memory_mb()));
    f.push_back("\"free_memory\": " + std::to_string(n.free_memory_mb()));
    f.push_back("\"gres\": " + JsonEscape(n.gres()));
    std::string feats;
    for (int k = 0; k < n.features_size(); ++k)
      feats += (k ? ", " : "") + JsonEscape(n.features(k));
    f.push_back("\"features\": [" + feats + "]");
    std::string parts;
    for (int k = 0; k < n.partitions_size(); ++k) {
      parts += (k ? ", " : "") + JsonEscape(n.partitions(k));
    }
    f.push_back("\"partitions\": [" + parts + "]");
    f.push_back("\"reason\": " + JsonEscape(n.reason()));
    f.push_back("\"reason_set_by_user\": " +
                JsonEscape(n.reason().empty() ? "" : UserName(names, n.reason_uid(), "")));
    f.push_back("\"reason_changed_at\": " + std::to_string(n.reason_time()));
    f.push_back("\"weight\": " + std::to_string(n.weight()));
    f.push_back("\"version\": " + JsonEscape(n.version()));
    f.push_back("\"boot_time\": " + std::to_string(n.boot_time()));
    f.push_back("\"slurmd_start_time\": " + std::to_string(n.slurmd_start_time()));
    f.push_back("\"last_busy\": " + std::to_string(n.last_busy()));
    out += "\n      " + Join(f, ",\n      ") + "\n    }";
  }
  out += nodes.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

// ================================================================================================
// show partition
// ================================================================================================

std::string FormatPartition(const pb::PartitionRecord& p, const std::vector<pb::NodeRecord>& nodes,
                            const ShowOptions& opts) {
  uint64_t cpus = 0, mem = 0;
  uint32_t count = 0;
  for (const std::string& name : p.nodes()) {
    for (const pb::NodeRecord& n : nodes) {
      if (n.name() == name) {
        cpus += n.cpus();
        mem += n.real_memory_mb();
        break;
      }
    }
    ++count;
  }
  auto all_or = [](const std::string& v) {
    return (v.empty() || Upper(v) == "ALL") ? std::string("ALL") : v;
  };

  Lines l;
  l.Add("PartitionName=" + p.name());
  std::string accounts;
  if (!p.allow_accounts().empty() && Upper(p.allow_accounts()) != "ALL") {
    accounts = "AllowAccounts=" + p.allow_accounts();
  } else if (!p.deny_accounts().empty()) {
    accounts = "DenyAccounts=" + p.deny_accounts();
  } else {
    accounts = "AllowAccounts=ALL";
  }
  l.Add("AllowGroups=" + all_or(p.allow_groups()) + " " + accounts +
        " AllowQos=" + all_or(p.allow_qos()));
  l.Add(std::string("AllocNodes=ALL Default=") + (p.is_default() ? "YES" : "NO") + " QoS=N/A");
  l.Add("DefaultTime=" + FormatLimitMinutes(p.default_time(), "NONE") +
        " DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=" + (p.hidden() ? "YES" : "NO"));
  std::string max_nodes =
      p.max_nodes() == 0xffffffffu ? std::string("UNLIMITED") : std::to_string(p.max_nodes());
  l.Add("MaxNodes=" + max_nodes + " MaxTime=" + FormatLimitMinutes(p.max_time(), "NONE") +
        " MinNodes=" + std::to_string(p.min_nodes()) + " LLN=NO MaxCPUsPerNode=UNLIMITED");
  std::string node_text = !p.nodes_expr().empty() ? p.nodes_expr()
                          : p.nodes_size()        ? CompressHostlist(ToVector(p.nodes()))
                                                  : std::string("(null)");
  l.Add("Nodes=" + node_text);

  std::string over = Upper(p.over_subscribe());
  if (over.empty()) over = "NO";
  if (over == "YES" || over == "FORCE") over += ":4";
  l.Add("PriorityJobFactor=" + std::to_string(p.priority_job_factor()) +
        " PriorityTier=" + std::to_string(p.priority_tier()) +
        " RootOnly=" + (p.root_only() ? "YES" : "NO") + " ReqResv=NO OverSubscribe=" + over);
  l.Add("OverTimeLimit=NONE PreemptMode=OFF");
  l.Add("State=" + (p.state().empty() ? std::string("UP") : Upper(p.state())) +
        " TotalCPUs=" + std::to_string(cpus) + " TotalNodes=" + std::to_string(count) +
        " SelectTypeParameters=NONE");
  l.Add("JobDefaults=(null)");
  std::string def = p.def_mem_per_cpu_mb()
                        ? "DefMemPerCPU=" + std::to_string(p.def_mem_per_cpu_mb())
                        : std::string("DefMemPerNode=UNLIMITED");
  std::string max = p.max_mem_per_cpu_mb()
                        ? "MaxMemPerCPU=" + std::to_string(p.max_mem_per_cpu_mb())
                        : std::string("MaxMemPerNode=UNLIMITED");
  l.Add(def + " " + max);
  std::string tres = "(null)";
  if (count) {
    tres = "cpu=" + std::to_string(cpus);
    if (mem) tres += ",mem=" + FormatTresMemory(mem);
    tres += ",node=" + std::to_string(count) + ",billing=" + std::to_string(cpus);
  }
  l.Add("TRES=" + tres);

  std::string out = Join(l.lines, Sep(opts));
  out += opts.one_liner ? "\n" : "\n\n";
  return out;
}

// ================================================================================================
// show config
// ================================================================================================

std::string FormatConfigLine(std::string_view key, std::string_view value) {
  std::string k(key);
  if (k.size() < 23) k.resize(23, ' ');
  return k + " = " + std::string(value) + "\n";
}

std::string FormatConfig(const pb::ConfigQueryResponse& c) {
  std::string out = "Configuration data as of " + FormatTimestamp(c.server_time()) + "\n";
  int n = std::min(c.keys_size(), c.values_size());
  for (int i = 0; i < n; ++i) out += FormatConfigLine(c.keys(i), c.values(i));
  return out;
}

// ================================================================================================
// hostlists
// ================================================================================================

std::string HostlistInOrder(const std::vector<std::string>& hosts) {
  std::vector<HostName> split;
  split.reserve(hosts.size());
  for (const auto& h : hosts) split.push_back(SplitHost(h));
  return RangesToString(Coalesce(split));
}

std::string HostlistSorted(std::vector<std::string> hosts) {
  std::vector<HostName> split;
  split.reserve(hosts.size());
  for (const auto& h : hosts) split.push_back(SplitHost(h));
  std::stable_sort(split.begin(), split.end(), [](const HostName& a, const HostName& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    if (a.has_num != b.has_num) return !a.has_num;
    if (a.num != b.num) return a.num < b.num;
    return a.width < b.width;
  });
  return RangesToString(Coalesce(split));
}

// ================================================================================================
// command-line parsing
// ================================================================================================

std::vector<std::string> SplitCommandLine(std::string_view line) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char c : line) {
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        cur += c;
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

KeyValue SplitKeyValue(std::string_view word) {
  KeyValue kv;
  size_t eq = word.find('=');
  if (eq == std::string_view::npos) {
    kv.key = std::string(word);
    return kv;
  }
  kv.key = std::string(word.substr(0, eq));
  kv.value = std::string(word.substr(eq + 1));
  kv.has_value = true;
  return kv;
}

bool IsValidJobIdArg(std::string_view id) {
  // 123 | 123_4 | 123_[1-3,5] | 123_* (not steps: those are rejected by callers).
  size_t us = id.find('_');
  std::string_view base = id.substr(0, us);
  if (!IsAllDigits(base) || base.size() > 10) return false;
  if (std::strtoull(std::string(base).c_str(), nullptr, 10) == 0) return false;
  if (us == std::string_view::npos) return true;
  std::string_view rest = id.substr(us + 1);
  if (rest == "*") return true;
  if (IsAllDigits(rest)) return true;
  if (rest.size() < 3 || rest.front() != '[' || rest.back() != ']') return false;
  rest = rest.substr(1, rest.size() - 2);
  // Comma-separated numbers or ranges, optional %throttle is not accepted here.
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string_view part =
        rest.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    size_t dash = part.find('-');
    if (dash == std::string_view::npos) {
      if (!IsAllDigits(part)) return false;
    } else {
      std::string_view lo = part.substr(0, dash), hi = part.substr(dash + 1);
      if (!IsAllDigits(lo) || !IsAllDigits(hi)) return false;
      if (std::strtoull(std::string(lo).c_str(), nullptr, 10) >
          std::strtoull(std::string(hi).c_str(), nullptr, 10))
        return false;
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return true;
}

Result<std::vector<std::string>> ParseJobIdList(const std::vector<std::string>& words) {
  std::vector<std::string> ids;
  for (const std::string& w : words) {
    // Split on commas outside brackets: "1,2,3_[1,2]" -> 1 2 3_[1,2].
    std::string cur;
    int depth = 0;
    auto flush = [&](const std::string& word) -> Status {
      if (cur.empty()) return Status::Ok();
      if (!IsValidJobIdArg(cur)) {
        return InvalidArgument("Invalid job id specified for job " + word);
      }
      ids.push_back(cur);
      cur.clear();
      return Status::Ok();
    };
    for (char c : w) {
      if (c == '[') ++depth;
      if (c == ']') --depth;
      if (c == ',' && depth == 0) {
        if (Status s = flush(w); !s.ok()) return s;
      } else if (!std::isspace(static_cast<unsigned char>(c))) {
        cur += c;
      }
    }
    if (Status s = flush(w); !s.ok()) return s;
  }
  return ids;
}

Result<JobUpdate> ParseJobUpdate(const std::vector<std::string>& words) {
  JobUpdate up;
  std::optional<std::string> job_name;
  for (const std::string& w : words) {
    KeyValue kv = SplitKeyValue(w);
    std::string lk = Lower(kv.key);
    if (!kv.has_value) {
      return InvalidArgument("Invalid input: " + w + "\nRequest aborted");
    }
    if (lk == "jobid") {
      auto ids = ParseJobIdList({kv.value});
      if (!ids.ok() || ids->empty()) {
        return InvalidArgument("Invalid job id specified for job " + kv.value);
      }
      for (auto& id : *ids) up.job_ids.push_back(id);
      continue;
    }
    if (lk == "jobname" || lk == "name") {
      job_name = kv.value;
      continue;
    }
    std::optional<std::string> key = CanonicalJobKey(kv.key);
    if (!key) {
      return InvalidArgument("Update of this parameter is not supported: " + w +
                             "\nRequest aborted");
    }
    if (*key == "TimeLimit" || *key == "TimeMin") {
      std::string_view v = kv.value;
      if (!v.empty() && (v[0] == '+' || v[0] == '-') && v != "-1") v.remove_prefix(1);
      if (!ParseTimeLimit(v).ok()) return InvalidArgument("Invalid " + *key + " value");
    } else if (*key == "Nice" || *key == "Priority" || *key == "NumTasks" ||
               *key == "CPUsPerTask" || *key == "MinCPUsNode" || *key == "SiteFactor") {
      if (!IsInteger(kv.value)) return InvalidArgument("Invalid " + *key + " value");
    } else if (*key == "Requeue" || *key == "Contiguous") {
      if (kv.value != "0" && kv.value != "1") {
        return InvalidArgument("Invalid " + *key + " value");
      }
    }
    up.fields[*key] = kv.value;
  }
  if (job_name) {
    // With a JobId, JobName sets the name; alone, it selects the jobs to update.
    if (up.job_ids.empty()) {
      up.by_name = *job_name;
    } else {
      up.fields["Name"] = *job_name;
    }
  }
  if (up.job_ids.empty() && !up.by_name) {
    return InvalidArgument(
        "No valid entity in update command\nInput line must include \"NodeName\", "
        "\"PartitionName\", \"Reservation\", \"JobId\", or \"SlurmctldDebug\"");
  }
  if (up.fields.empty()) return InvalidArgument("No changes specified");
  return up;
}

Result<NodeUpdate> ParseNodeUpdate(const std::vector<std::string>& words) {
  NodeUpdate up;
  bool have_name = false;
  for (const std::string& w : words) {
    KeyValue kv = SplitKeyValue(w);
    std::string lk = Lower(kv.key);
    if (!kv.has_value) return InvalidArgument("Invalid input: " + w + "\nRequest aborted");
    if (lk == "nodename") {
      up.node_names = kv.value;
      have_name = true;
    } else if (lk == "state") {
      std::string st = Upper(kv.value);
      bool ok = false;
      for (const char* s : kNodeStates)
        if (st == s) ok = true;
      if (!ok) {
        return InvalidArgument(
            "Invalid input: " + w +
            "\nRequest aborted\nValid states are: NoResp DRAIN FAIL FUTURE RESUME POWER_DOWN "
            "POWER_UP UNDRAIN\nNot all states are valid given a node's prior state");
      }
      up.state = st;
    } else if (lk == "reason") {
      up.reason = kv.value;
    } else {
      std::string key;
      for (const char* k : kNodeKeys)
        if (Lower(k) == lk) key = k;
      if (lk == "features") key = "AvailableFeatures";
      if (key.empty()) {
        return InvalidArgument("Update of this parameter is not supported: " + w +
                               "\nRequest aborted");
      }
      up.fields[key] = kv.value;
    }
  }
  if (!have_name || up.node_names.empty()) {
    return InvalidArgument(
        "No valid entity in update command\nInput line must include \"NodeName\", "
        "\"PartitionName\", \"Reservation\", \"JobId\", or \"SlurmctldDebug\"");
  }
  if ((up.state == "DOWN" || up.state == "DRAIN" || up.state == "FAIL") && up.reason.empty()) {
    return InvalidArgument(
        "You must specify a reason when DOWNING or DRAINING a node. Request denied");
  }
  if (up.state.empty() && up.reason.empty() && up.fields.empty()) {
    return InvalidArgument("No changes specified");
  }
  return up;
}

}  // namespace shoal::cli
