#include "cli/sacct_format.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "cli/format_fields.h"
#include "common/hostlist.h"
#include "common/states.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

// How a field prints: strings are cut with '+', numbers overflow their column, dates are cut
// without a mark (Slurm formats them into a buffer of the column's width).
enum class Kind { kStr, kUint, kDate };

enum F : int {
  kAccount,
  kAdminComment,
  kAllocCPUS,
  kAllocNodes,
  kAllocTRES,
  kAssocID,
  kAveCPU,
  kAveCPUFreq,
  kAveDiskRead,
  kAveDiskWrite,
  kAvePages,
  kAveRSS,
  kAveVMSize,
  kBlockID,
  kCluster,
  kComment,
  kConstraints,
  kConsumedEnergy,
  kConsumedEnergyRaw,
  kContainer,
  kCPUTime,
  kCPUTimeRAW,
  kDBIndex,
  kDerivedExitCode,
  kElapsed,
  kElapsedRaw,
  kEligible,
  kEnd,
  kExitCode,
  kFlags,
  kGID,
  kGroup,
  kJobID,
  kJobIDRaw,
  kJobName,
  kLayout,
  kMaxDiskRead,
  kMaxDiskReadNode,
  kMaxDiskReadTask,
  kMaxDiskWrite,
  kMaxDiskWriteNode,
  kMaxDiskWriteTask,
  kMaxPages,
  kMaxPagesNode,
  kMaxPagesTask,
  kMaxRSS,
  kMaxRSSNode,
  kMaxRSSTask,
  kMaxVMSize,
  kMaxVMSizeNode,
  kMaxVMSizeTask,
  kMcsLabel,
  kMinCPU,
  kMinCPUNode,
  kMinCPUTask,
  kNCPUS,
  kNNodes,
  kNodeList,
  kNTasks,
  kPartition,
  kPriority,
  kQOS,
  kQOSRAW,
  kReason,
  kReqCPUFreq,
  kReqCPUFreqGov,
  kReqCPUFreqMax,
  kReqCPUFreqMin,
  kReqCPUS,
  kReqMem,
  kReqNodes,
  kReqTRES,
  kReservation,
  kReservationId,
  kReserved,
  kResvCPU,
  kResvCPURAW,
  kStart,
  kState,
  kSubmit,
  kSubmitLine,
  kSuspended,
  kSystemComment,
  kSystemCPU,
  kTimelimit,
  kTimelimitRaw,
  kTotalCPU,
  kTRESUsageInAve,
  kTRESUsageInMax,
  kTRESUsageInMaxNode,
  kTRESUsageInMaxTask,
  kTRESUsageInMin,
  kTRESUsageInMinNode,
  kTRESUsageInMinTask,
  kTRESUsageInTot,
  kTRESUsageOutAve,
  kTRESUsageOutMax,
  kTRESUsageOutMaxNode,
  kTRESUsageOutMaxTask,
  kTRESUsageOutMin,
  kTRESUsageOutMinNode,
  kTRESUsageOutMinTask,
  kTRESUsageOutTot,
  kUID,
  kUser,
  kUserCPU,
  kWCKey,
  kWCKeyID,
  kWorkDir,
};

struct FieldDef {
  const char* name;
  int width;  // Slurm 22.05's default (negative = left aligned)
  Kind kind;
};

// Slurm 22.05's field table, in its order (prefix matching takes the first hit).
constexpr FieldDef kFields[] = {
    {"Account", 10, Kind::kStr},
    {"AdminComment", 15, Kind::kStr},
    {"AllocCPUS", 10, Kind::kUint},
    {"AllocNodes", 10, Kind::kStr},
    {"AllocTRES", 10, Kind::kStr},
    {"AssocID", 7, Kind::kUint},
    {"AveCPU", 10, Kind::kStr},
    {"AveCPUFreq", 10, Kind::kStr},
    {"AveDiskRead", 14, Kind::kStr},
    {"AveDiskWrite", 14, Kind::kStr},
    {"AvePages", 10, Kind::kStr},
    {"AveRSS", 10, Kind::kStr},
    {"AveVMSize", 10, Kind::kStr},
    {"BlockID", 16, Kind::kStr},
    {"Cluster", 10, Kind::kStr},
    {"Comment", 14, Kind::kStr},
    {"Constraints", 19, Kind::kStr},
    {"ConsumedEnergy", 14, Kind::kStr},
    {"ConsumedEnergyRaw", 17, Kind::kUint},
    {"Container", 19, Kind::kStr},
    {"CPUTime", 10, Kind::kStr},
    {"CPUTimeRAW", 10, Kind::kUint},
    {"DBIndex", -10, Kind::kUint},
    {"DerivedExitCode", 15, Kind::kStr},
    {"Elapsed", 10, Kind::kStr},
    {"ElapsedRaw", 10, Kind::kUint},
    {"Eligible", 19, Kind::kDate},
    {"End", 19, Kind::kDate},
    {"ExitCode", 8, Kind::kStr},
    {"Flags", 19, Kind::kStr},
    {"GID", 6, Kind::kUint},
    {"Group", 9, Kind::kStr},
    {"JobID", -12, Kind::kStr},
    {"JobIDRaw", -12, Kind::kStr},
    {"JobName", 10, Kind::kStr},
    {"Layout", 9, Kind::kStr},
    {"MaxDiskRead", 12, Kind::kStr},
    {"MaxDiskReadNode", 15, Kind::kStr},
    {"MaxDiskReadTask", 15, Kind::kUint},
    {"MaxDiskWrite", 12, Kind::kStr},
    {"MaxDiskWriteNode", 16, Kind::kStr},
    {"MaxDiskWriteTask", 16, Kind::kUint},
    {"MaxPages", 8, Kind::kStr},
    {"MaxPagesNode", 12, Kind::kStr},
    {"MaxPagesTask", 14, Kind::kUint},
    {"MaxRSS", 10, Kind::kStr},
    {"MaxRSSNode", 10, Kind::kStr},
    {"MaxRSSTask", 10, Kind::kUint},
    {"MaxVMSize", 10, Kind::kStr},
    {"MaxVMSizeNode", 14, Kind::kStr},
    {"MaxVMSizeTask", 14, Kind::kUint},
    {"McsLabel", 12, Kind::kStr},
    {"MinCPU", 10, Kind::kStr},
    {"MinCPUNode", 10, Kind::kStr},
    {"MinCPUTask", 10, Kind::kUint},
    {"NCPUS", 10, Kind::kUint},
    {"NNodes", 8, Kind::kUint},
    {"NodeList", 15, Kind::kStr},
    {"NTasks", 8, Kind::kUint},
    {"Partition", 10, Kind::kStr},
    {"Priority", 10, Kind::kUint},
    {"QOS", 10, Kind::kStr},
    {"QOSRAW", 6, Kind::kUint},
    {"Reason", 22, Kind::kStr},
    {"ReqCPUFreq", 10, Kind::kStr},
    {"ReqCPUFreqGov", 13, Kind::kStr},
    {"ReqCPUFreqMax", 13, Kind::kStr},
    {"ReqCPUFreqMin", 13, Kind::kStr},
    {"ReqCPUS", 8, Kind::kUint},
    {"ReqMem", 10, Kind::kStr},
    {"ReqNodes", 8, Kind::kStr},
    {"ReqTRES", 10, Kind::kStr},
    {"Reservation", 20, Kind::kStr},
    {"ReservationId", 8, Kind::kUint},
    {"Reserved", 10, Kind::kStr},
    {"ResvCPU", 10, Kind::kStr},
    {"ResvCPURAW", 10, Kind::kUint},
    {"Start", 19, Kind::kDate},
    {"State", 10, Kind::kStr},
    {"Submit", 19, Kind::kDate},
    {"SubmitLine", 20, Kind::kStr},
    {"Suspended", 10, Kind::kStr},
    {"SystemComment", 15, Kind::kStr},
    {"SystemCPU", 10, Kind::kStr},
    {"Timelimit", 10, Kind::kStr},
    {"TimelimitRaw", 10, Kind::kStr},
    {"TotalCPU", 10, Kind::kStr},
    {"TRESUsageInAve", 14, Kind::kStr},
    {"TRESUsageInMax", 14, Kind::kStr},
    {"TRESUsageInMaxNode", 18, Kind::kStr},
    {"TRESUsageInMaxTask", 18, Kind::kStr},
    {"TRESUsageInMin", 14, Kind::kStr},
    {"TRESUsageInMinNode", 18, Kind::kStr},
    {"TRESUsageInMinTask", 18, Kind::kStr},
    {"TRESUsageInTot", 14, Kind::kStr},
    {"TRESUsageOutAve", 15, Kind::kStr},
    {"TRESUsageOutMax", 15, Kind::kStr},
    {"TRESUsageOutMaxNode", 19, Kind::kStr},
    {"TRESUsageOutMaxTask", 19, Kind::kStr},
    {"TRESUsageOutMin", 15, Kind::kStr},
    {"TRESUsageOutMinNode", 19, Kind::kStr},
    {"TRESUsageOutMinTask", 19, Kind::kStr},
    {"TRESUsageOutTot", 15, Kind::kStr},
    {"UID", 6, Kind::kUint},
    {"User", 9, Kind::kStr},
    {"UserCPU", 10, Kind::kStr},
    {"WCKey", 10, Kind::kStr},
    {"WCKeyID", 10, Kind::kUint},
    {"WorkDir", 20, Kind::kStr},
};
constexpr int kFieldCount = static_cast<int>(sizeof(kFields) / sizeof(kFields[0]));
static_assert(kFieldCount == kWorkDir + 1, "field enum and table disagree");

bool IPrefix(std::string_view full, std::string_view prefix) {
  if (prefix.size() > full.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(full[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  }
  return true;
}

// A cell: nullopt is Slurm's NULL (blank), which differs from "" only in parsable output (both
// print as nothing there too), so it is kept only for clarity.
using Cell = std::optional<std::string>;

struct Row {
  const pb::AcctJob* job;
  const pb::AcctStep* step;  // null for the job row
};

struct Ctx {
  const SacctFormatOptions* o;
  int64_t now;
};

std::string StepName(uint32_t id) {
  switch (id) {
    case kBatchStepId:
      return "batch";
    case kExternStepId:
      return "extern";
    case kInteractiveStepId:
      return "interactive";
    case kPendingStepId:
      return "TBD";
    default:
      return std::to_string(id);
  }
}

// Slurm stores step ids as signed ints, so batch/extern sort before step 0.
int32_t StepOrder(uint32_t id) { return static_cast<int32_t>(id); }

// A count from a TRES string ("billing=2,cpu=2,mem=1G,node=1"); -1 when absent.
int64_t TresCount(std::string_view tres, std::string_view key) {
  for (const std::string& item : fmt::SplitList(tres)) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || item.substr(0, eq) != key) continue;
    if (key == "mem") {
      auto mb = ParseMemoryMB(item.substr(eq + 1));
      return mb.ok() ? static_cast<int64_t>(*mb) : -1;
    }
    return std::strtoll(item.c_str() + eq + 1, nullptr, 10);
  }
  return -1;
}

std::string ExitCodeText(int32_t status, bool adjust) {
  int code = 0, sig = 0;
  if (WIFSIGNALED(status)) {
    sig = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    code = WEXITSTATUS(status);
    if (adjust && code >= 128) code -= 128;
  }
  return std::to_string(code) + ":" + std::to_string(sig);
}

uint32_t JobCpus(const pb::AcctJob& j) {
  if (j.alloc_cpus()) return j.alloc_cpus();
  int64_t c = TresCount(j.tres_alloc(), "cpu");
  return c > 0 ? static_cast<uint32_t>(c) : 0;
}

uint32_t StepCpus(const pb::AcctJob& j, const pb::AcctStep& s) {
  if (s.ncpus()) return s.ncpus();
  int64_t c = TresCount(s.tres_alloc(), "cpu");
  return c > 0 ? static_cast<uint32_t>(c) : JobCpus(j);
}

// Start and end as shown (-T clips them to the window); end 0 while running.
std::pair<int64_t, int64_t> Times(const Row& r, const Ctx& c) {
  int64_t start = r.step ? r.step->start_time() : r.job->start_time();
  int64_t end = r.step ? r.step->end_time() : r.job->end_time();
  if (r.step && end == 0) end = r.job->end_time();  // sacct shows an open step with its job's end
  if (c.o->truncate && start > 0) {
    int64_t wend = c.o->window_end ? c.o->window_end : c.now;
    if (start < c.o->window_start) start = c.o->window_start;
    if (end == 0 || end > wend) end = wend;
  }
  return {start, end};
}

int64_t ElapsedOf(const Row& r, const Ctx& c) {
  auto [start, end] = Times(r, c);
  if (start <= 0) return 0;
  int64_t stop = end > 0 ? end : c.now;
  int64_t susp = r.step ? r.step->suspended_s() : r.job->suspended_s();
  return std::max<int64_t>(0, stop - start - susp);
}

// CPU times: a step's own; a job's is the sum over its finished steps (as slurmdbd does).
uint64_t UserUsec(const Row& r) {
  if (r.step) return r.step->user_cpu_usec();
  uint64_t t = 0;
  for (const pb::AcctStep& s : r.job->steps())
    if (IsFinished(s.state())) t += s.user_cpu_usec();
  return t;
}
uint64_t SysUsec(const Row& r) {
  if (r.step) return r.step->sys_cpu_usec();
  uint64_t t = 0;
  for (const pb::AcctStep& s : r.job->steps())
    if (IsFinished(s.state())) t += s.sys_cpu_usec();
  return t;
}

bool HasStats(const pb::AcctStep& s) { return s.max_rss_kb() != 0 || !s.max_rss_node().empty(); }

std::string NameOrNumber(const std::string& name, uint32_t id,
                         const std::function<std::string(uint32_t)>& lookup) {
  if (!name.empty()) return name;
  std::string n = lookup ? lookup(id) : "";
  return n.empty() ? std::to_string(id) : n;
}

std::string TimelimitText(uint32_t minutes, bool raw) {
  if (minutes == kTimeInfinite) return "UNLIMITED";
  if (minutes == kTimeNoVal) return "Partition_Limit";
  return raw ? std::to_string(minutes) : FormatHms(static_cast<int64_t>(minutes) * 60);
}

Cell Value(int field, const Row& r, const Ctx& c) {
  const pb::AcctJob& j = *r.job;
  const pb::AcctStep* s = r.step;
  const SacctFormatOptions& o = *c.o;
  switch (field) {
    case kAccount:
      return j.account();
    case kAllocCPUS:
    case kNCPUS:
      return std::to_string(s ? StepCpus(j, *s) : JobCpus(j));
    case kAllocNodes: {
      uint32_t n = s ? s->nnodes() : j.alloc_nodes();
      if (n == 0) {
        int64_t t = TresCount(s ? s->tres_alloc() : j.tres_alloc(), "node");
        if (t > 0) n = static_cast<uint32_t>(t);
      }
      return SacctConvertUnits(n, 0, 0, o.noconvert);
    }
    case kAllocTRES:
      return s ? s->tres_alloc() : j.tres_alloc();
    case kCluster:
      return j.cluster();
    case kComment:
      return s ? Cell() : Cell(j.comment());
    case kConstraints:
      return s ? Cell() : Cell(j.constraints());
    case kCPUTime:
    case kCPUTimeRAW: {
      uint64_t v = static_cast<uint64_t>(ElapsedOf(r, c)) * (s ? StepCpus(j, *s) : JobCpus(j));
      return field == kCPUTime ? FormatHms(static_cast<int64_t>(v)) : std::to_string(v);
    }
    case kDerivedExitCode:
      return s ? std::string() : ExitCodeText(j.derived_exit_status(), false);
    case kElapsed:
      return FormatHms(ElapsedOf(r, c));
    case kElapsedRaw:
      return std::to_string(ElapsedOf(r, c));
    case kEligible:
      return FormatTimestamp(s ? s->start_time() : j.eligible_time());
    case kEnd:
      return FormatTimestamp(Times(r, c).second);
    case kExitCode:
      return ExitCodeText(s ? s->exit_status() : j.exit_status(), true);
    case kGID:
      return s ? Cell() : Cell(std::to_string(j.gid()));
    case kGroup:
      return s ? Cell() : Cell(NameOrNumber(j.group(), j.gid(), o.group_name));
    case kJobID:
      return s ? SacctStepId(j, *s) : SacctJobId(j);
    case kJobIDRaw:
      return s ? std::to_string(j.job_id()) + "." + StepName(s->step_id())
               : std::to_string(j.job_id());
    case kJobName:
      return s ? s->name() : j.name();
    case kMaxRSS:
    case kAveRSS: {
      if (!s || !HasStats(*s)) return Cell();
      uint64_t kb = field == kMaxRSS ? s->max_rss_kb() : s->ave_rss_kb();
      return SacctConvertUnits(static_cast<double>(kb) * 1024, 0, o.units, o.noconvert);
    }
    case kMaxRSSNode:
      return s && HasStats(*s) ? Cell(s->max_rss_node()) : Cell();
    case kMaxRSSTask:
      return s && HasStats(*s) ? Cell(std::to_string(s->max_rss_task())) : Cell();
    case kNNodes: {
      uint32_t n = s ? s->nnodes() : j.alloc_nodes();
      if (n == 0 && !s) {
        int64_t t = TresCount(j.tres_alloc().empty() ? j.tres_req() : j.tres_alloc(), "node");
        n = t > 0 ? static_cast<uint32_t>(t) : j.req_nodes();
      }
      return std::to_string(n);
    }
    case kNodeList:
      if (s) return s->nodelist();
      return j.nodelist().empty() ? std::string("None assigned") : j.nodelist();
    case kNTasks:
      return s ? Cell(std::to_string(s->ntasks())) : Cell();
    case kPartition:
      return s ? Cell() : Cell(j.partition());
    case kPriority:
      return s ? Cell() : Cell(std::to_string(j.priority()));
    case kQOS:
      return s ? Cell() : Cell(j.qos());
    case kReason:
      return s ? Cell() : Cell(j.reason().empty() ? std::string("None") : j.reason());
    case kReqCPUS:
      return std::to_string(s ? StepCpus(j, *s) : j.req_cpus());
    case kReqMem: {
      if (s) return Cell();
      double mb = 0;
      if (j.req_mem_mb()) {
        uint64_t mult = j.req_mem_per_cpu() ? std::max<uint32_t>(j.req_cpus(), 1)
                                            : std::max<uint32_t>(j.req_nodes(), 1);
        mb = static_cast<double>(j.req_mem_mb() * mult);
      } else {
        int64_t t = TresCount(j.tres_req(), "mem");
        if (t < 0) return Cell();
        mb = static_cast<double>(t);
      }
      return SacctConvertUnits(mb, 2, o.units, o.noconvert);
    }
    case kReqNodes: {
      uint32_t n = s ? s->nnodes() : 0;
      if (!s) {
        int64_t t = TresCount(j.tres_req(), "node");
        n = t > 0 ? static_cast<uint32_t>(t) : j.req_nodes();
      }
      return SacctConvertUnits(n, 0, o.units, o.noconvert);
    }
    case kReqTRES:
      return s ? Cell() : Cell(j.tres_req());
    case kReservation:
      return s ? Cell() : Cell(j.reservation());
    case kStart:
      return FormatTimestamp(Times(r, c).first);
    case kState: {
      pb::JobState st = s ? s->state() : j.state();
      uint32_t requid = s ? s->requid() : j.requid();
      std::string name = JobStateName(st);
      if (st == pb::JOB_CANCELLED && requid != kNoUid) name += " by " + std::to_string(requid);
      return name;
    }
    case kSubmit:
      return FormatTimestamp(s ? s->start_time() : j.submit_time());
    case kSubmitLine:
      return s ? s->submit_line() : j.submit_line();
    case kSuspended:
      return FormatHms(s ? s->suspended_s() : j.suspended_s());
    case kSystemCPU:
      return SacctCpuTime(SysUsec(r));
    case kUserCPU:
      return SacctCpuTime(UserUsec(r));
    case kTotalCPU:
      return SacctCpuTime(UserUsec(r) + SysUsec(r));
    case kTimelimit:
    case kTimelimitRaw:
      if (s || j.time_limit() == 0) return Cell();
      return TimelimitText(j.time_limit(), field == kTimelimitRaw);
    case kUID:
      return s ? Cell() : Cell(std::to_string(j.uid()));
    case kUser:
      return s ? Cell() : Cell(NameOrNumber(j.user(), j.uid(), o.user_name));
    case kWCKey:
      return s ? Cell() : Cell(j.wckey());
    case kWorkDir:
      return s ? Cell() : Cell(j.work_dir());
    case kReserved: {
      if (s) return Cell();
      int64_t e = j.eligible_time();
      if (e <= 0) return FormatHms(0);
      int64_t until = j.start_time() ? j.start_time() : (j.end_time() ? j.end_time() : c.now);
      return FormatHms(std::max<int64_t>(0, until - e));
    }
    default:
      return Cell();  // recorded by Slurm but not by Shoal
  }
}

void AppendCell(std::string& out, const Cell& cell, const FieldDef& def, int width, bool last,
                const SacctFormatOptions& o) {
  const std::string& v = cell ? *cell : std::string();
  if (o.parsable) {
    out += v;
    if (!(last && o.parsable == 2)) out += o.delimiter;
    return;
  }
  int abs_w = width < 0 ? -width : width;
  bool left = width < 0;
  std::string shown = v;
  if (def.kind != Kind::kUint && shown.size() > static_cast<size_t>(abs_w)) {
    shown.resize(static_cast<size_t>(abs_w));
    if (def.kind == Kind::kStr && abs_w > 0) shown.back() = '+';
  }
  if (shown.size() < static_cast<size_t>(abs_w)) {
    size_t pad = static_cast<size_t>(abs_w) - shown.size();
    if (left)
      shown.append(pad, ' ');
    else
      shown.insert(0, pad, ' ');
  }
  out += shown;
  out += ' ';
}

bool SelectorMatchesJob(const SacctJobSelector& s, const pb::AcctJob& j) {
  bool is_task = j.array_task_id() != kNoArrayTask;
  if (s.task) return is_task && j.array_job_id() == s.job_id && j.array_task_id() == *s.task;
  return j.job_id() == s.job_id || (j.array_job_id() == s.job_id && j.array_job_id() != 0);
}

// Slurm hides the steps of a job whose only step looks like the job itself.
bool TracksSteps(const pb::AcctJob& j) {
  if (j.steps_size() > 1) return true;
  if (j.steps_size() == 0) return false;
  const pb::AcctStep& s = j.steps(0);
  return s.name() != j.name() || s.nodelist() != j.nodelist();
}

// --json pieces (slurmrestd v0.0.44 names).
void JKey(std::string& out, const char* key) {
  out += '"';
  out += key;
  out += "\":";
}
void JStr(std::string& out, const char* key, std::string_view v) {
  JKey(out, key);
  out += fmt::JsonString(v);
}
void JInt(std::string& out, const char* key, int64_t v) {
  JKey(out, key);
  out += std::to_string(v);
}
void JNoVal(std::string& out, const char* key, bool set, int64_t number, bool infinite) {
  JKey(out, key);
  out += "{\"set\":";
  out += set ? "true" : "false";
  out += ",\"infinite\":";
  out += infinite ? "true" : "false";
  out += ",\"number\":";
  out += std::to_string(set ? number : 0);
  out += '}';
}
void JExit(std::string& out, const char* key, int32_t status, bool finished) {
  JKey(out, key);
  out += "{\"status\":[";
  int code = 0, sig = 0;
  if (!finished) {
    out += "\"PENDING\"";
  } else if (WIFSIGNALED(status)) {
    sig = WTERMSIG(status);
    out += WCOREDUMP(status) ? "\"CORE_DUMPED\"" : "\"SIGNALED\"";
  } else {
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    out += code ? "\"ERROR\"" : "\"SUCCESS\"";
  }
  out += "],";
  JNoVal(out, "return_code", true, code, false);
  out += ",\"signal\":{";
  JNoVal(out, "id", sig != 0, sig, false);
  out += ',';
  JStr(out, "name", sig ? SignalName(sig) : "");
  out += "}}";
}
void JSecs(std::string& out, const char* key, uint64_t usec) {
  JKey(out, key);
  out += "{\"seconds\":" + std::to_string(usec / 1000000) +
         ",\"microseconds\":" + std::to_string(usec % 1000000) + "}";
}
int TresId(std::string_view type) {
  static const char* kIds[] = {"cpu",     "mem",     "energy", "node",
                               "billing", "fs/disk", "vmem",   "pages"};
  for (int i = 0; i < 8; ++i)
    if (type == kIds[i]) return i + 1;
  return 1001;
}
void JTres(std::string& out, const char* key, std::string_view tres) {
  JKey(out, key);
  out += '[';
  bool first = true;
  for (const std::string& item : fmt::SplitList(tres)) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    std::string full = item.substr(0, eq), type = full, name;
    size_t slash = full.find('/');
    if (slash != std::string::npos && full != "fs/disk") {
      type = full.substr(0, slash);
      name = full.substr(slash + 1);
    }
    int64_t count = TresCount(tres, full);
    if (!first) out += ',';
    first = false;
    out += '{';
    JStr(out, "type", type);
    out += ',';
    JStr(out, "name", name);
    out += ',';
    JInt(out, "id", TresId(full));
    out += ',';
    JInt(out, "count", count < 0 ? 0 : count);
    out += '}';
  }
  out += ']';
}

}  // namespace

std::string SacctConvertUnits(double value, int unit, char to_units, bool noconvert) {
  static const char kUnits[] = "\0KMGTP";
  if (static_cast<int64_t>(value) == 0) return "0";
  if (to_units) {
    int want = static_cast<int>(std::string_view("KMGTP").find(to_units)) + 1;
    while (want < unit) {
      value *= 1024;
      --unit;
    }
    while (want > unit) {
      value /= 1024;
      ++unit;
    }
  } else if (!noconvert) {
    // Divide while no precision is lost (half units such as 1.5G count as exact).
    while (value >= 1024 && static_cast<uint64_t>(value) % 512 == 0) {
      value /= 1024;
      ++unit;
    }
  }
  char buf[64];
  std::string suffix = unit > 0 && unit <= 5 ? std::string(1, kUnits[unit]) : "";
  if (unit > 5) suffix = "?";
  if (static_cast<double>(static_cast<uint64_t>(value)) == value)
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(value));
  else
    std::snprintf(buf, sizeof buf, "%.2f", value);
  return buf + suffix;
}

std::string SacctCpuTime(uint64_t usec) {
  uint64_t secs = usec / 1000000, rem = usec % 1000000;
  uint64_t msec = rem / 1000;
  uint64_t days = secs / 86400, hours = (secs / 3600) % 24, mins = (secs / 60) % 60, s = secs % 60;
  char buf[64];
  if (days)
    std::snprintf(buf, sizeof buf, "%llu-%02llu:%02llu:%02llu",
                  static_cast<unsigned long long>(days), static_cast<unsigned long long>(hours),
                  static_cast<unsigned long long>(mins), static_cast<unsigned long long>(s));
  else if (hours)
    std::snprintf(buf, sizeof buf, "%02llu:%02llu:%02llu", static_cast<unsigned long long>(hours),
                  static_cast<unsigned long long>(mins), static_cast<unsigned long long>(s));
  else if (msec)
    std::snprintf(buf, sizeof buf, "%02llu:%02llu.%03llu", static_cast<unsigned long long>(mins),
                  static_cast<unsigned long long>(s), static_cast<unsigned long long>(msec));
  else
    std::snprintf(buf, sizeof buf, "00:%02llu:%02llu", static_cast<unsigned long long>(mins),
                  static_cast<unsigned long long>(s));
  return buf;
}

std::string SacctJobId(const pb::AcctJob& j) {
  if (!j.array_task_str().empty()) {
    std::string tasks = j.array_task_str();
    if (tasks.find('%') == std::string::npos && j.array_max_tasks())
      tasks += "%" + std::to_string(j.array_max_tasks());
    uint32_t base = j.array_job_id() ? j.array_job_id() : j.job_id();
    return std::to_string(base) + "_[" + tasks + "]";
  }
  if (j.array_task_id() != kNoArrayTask && j.array_job_id() != 0)
    return std::to_string(j.array_job_id()) + "_" + std::to_string(j.array_task_id());
  return std::to_string(j.job_id());
}

std::string SacctStepId(const pb::AcctJob& j, const pb::AcctStep& s) {
  return SacctJobId(j) + "." + StepName(s.step_id());
}

Result<std::vector<SacctColumn>> ParseSacctFields(std::string_view list) {
  std::vector<SacctColumn> out;
  for (std::string item : fmt::SplitList(list)) {
    size_t b = item.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    item = item.substr(b);
    std::optional<int> width;
    size_t pct = item.find('%');
    if (pct != std::string::npos) {
      width = std::atoi(item.c_str() + pct + 1);
      item.resize(pct);
    }
    // "ALL" (or a prefix of it) lists every field.
    if (IPrefix("ALL", item)) {
      for (int i = 0; i < kFieldCount; ++i) out.push_back({i, width ? *width : kFields[i].width});
      continue;
    }
    int found = -1;
    for (int i = 0; i < kFieldCount && found < 0; ++i)
      if (IPrefix(kFields[i].name, item)) found = i;
    if (found < 0)
      return InvalidArgument("sacct: error: Invalid field requested: \"" + item + "\"");
    out.push_back({found, width ? *width : kFields[found].width});
  }
  return out;
}

std::string SacctHelpFormat() {
  std::string out;
  char buf[32];
  for (int i = 0; i < kFieldCount; ++i) {
    if (i & 3)
      out += ' ';
    else if (i)
      out += '\n';
    std::snprintf(buf, sizeof buf, "%-19s", kFields[i].name);
    out += buf;
  }
  out += '\n';
  return out;
}

std::string FormatSacct(std::vector<pb::AcctJob> jobs, const SacctFormatOptions& o, int64_t now) {
  Ctx c{&o, now};
  std::string out;
  const auto& cols = o.columns;
  if (!o.no_header && !cols.empty()) {
    for (size_t i = 0; i < cols.size(); ++i) {
      const FieldDef& d = kFields[cols[i].field];
      bool last = i + 1 == cols.size();
      if (o.parsable) {
        out += d.name;
        if (!(last && o.parsable == 2)) out += o.delimiter;
        continue;
      }
      // The header is cut to the width without a '+'.
      int w = cols[i].width, aw = w < 0 ? -w : w;
      std::string name = std::string(d.name).substr(0, static_cast<size_t>(aw));
      std::string pad(static_cast<size_t>(aw) - name.size(), ' ');
      out += w < 0 ? name + pad : pad + name;
      out += ' ';
    }
    out += '\n';
    if (!o.parsable) {
      for (const SacctColumn& col : cols) {
        out.append(static_cast<size_t>(col.width < 0 ? -col.width : col.width), '-');
        out += ' ';
      }
      out += '\n';
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const pb::AcctJob& a, const pb::AcctJob& b) {
    if (a.submit_time() != b.submit_time()) return a.submit_time() < b.submit_time();
    return a.job_id() < b.job_id();
  });
  auto emit = [&](const Row& r) {
    for (size_t i = 0; i < cols.size(); ++i)
      AppendCell(out, Value(cols[i].field, r, c), kFields[cols[i].field], cols[i].width,
                 i + 1 == cols.size(), o);
    out += '\n';
  };
  for (const pb::AcctJob& j : jobs) {
    // -j: a job row shows when the job itself was asked for (or nothing was); step selectors
    // show only their steps.
    bool show_full = o.selectors.empty();
    std::vector<const SacctJobSelector*> step_sel;
    for (const SacctJobSelector& s : o.selectors) {
      if (!SelectorMatchesJob(s, j)) continue;
      if (s.step)
        step_sel.push_back(&s);
      else
        show_full = true;
    }
    if (!show_full && step_sel.empty() && !o.selectors.empty()) continue;
    if (show_full) emit({&j, nullptr});
    if (o.allocations || (show_full && !TracksSteps(j))) continue;
    std::vector<const pb::AcctStep*> steps;
    for (const pb::AcctStep& s : j.steps()) {
      if (!show_full) {
        bool wanted = false;
        for (const SacctJobSelector* sel : step_sel) wanted |= *sel->step == s.step_id();
        if (!wanted) continue;
      }
      steps.push_back(&s);
    }
    std::stable_sort(steps.begin(), steps.end(), [](const pb::AcctStep* a, const pb::AcctStep* b) {
      return StepOrder(a->step_id()) < StepOrder(b->step_id());
    });
    for (const pb::AcctStep* s : steps) emit({&j, s});
  }
  return out;
}

std::string FormatSacctJson(const std::vector<pb::AcctJob>& jobs, const SacctFormatOptions& o,
                            int64_t now) {
  Ctx c{&o, now};
  std::string out = "{\"jobs\":[";
  bool first = true;
  for (const pb::AcctJob& j : jobs) {
    Row r{&j, nullptr};
    if (!first) out += ',';
    first = false;
    out += '{';
    JStr(out, "account", j.account());
    out += ",\"comment\":{\"administrator\":\"\",\"job\":" + fmt::JsonString(j.comment()) +
           ",\"system\":\"\"},";
    JInt(out, "allocation_nodes", j.alloc_nodes());
    bool task = j.array_task_id() != kNoArrayTask && j.array_job_id() != 0;
    out += ",\"array\":{";
    JInt(out, "job_id", task || !j.array_task_str().empty() ? j.array_job_id() : 0);
    out += ",\"limits\":{\"max\":{\"running\":{\"tasks\":" + std::to_string(j.array_max_tasks()) +
           "}}},";
    JNoVal(out, "task_id", task, task ? j.array_task_id() : 0, false);
    out += ',';
    JStr(out, "task", j.array_task_str());
    out += "},\"association\":{";
    JStr(out, "account", j.account());
    out += ',';
    JStr(out, "cluster", j.cluster());
    out += ',';
    JStr(out, "partition", "");
    out += ',';
    JStr(out, "user", Value(kUser, r, c).value_or(""));
    out += ",\"id\":0},";
    JStr(out, "cluster", j.cluster());
    out += ',';
    JStr(out, "constraints", j.constraints());
    out += ',';
    JExit(out, "derived_exit_code", j.derived_exit_status(), IsFinished(j.state()));
    out += ",\"time\":{";
    JInt(out, "elapsed", ElapsedOf(r, c));
    out += ',';
    JInt(out, "eligible", j.eligible_time());
    out += ',';
    JInt(out, "end", j.end_time());
    out += ',';
    JInt(out, "start", j.start_time());
    out += ',';
    JInt(out, "submission", j.submit_time());
    out += ',';
    JInt(out, "suspended", j.suspended_s());
    out += ',';
    JSecs(out, "system", SysUsec(r));
    out += ',';
    JNoVal(out, "limit", j.time_limit() != kTimeNoVal, j.time_limit(),
           j.time_limit() == kTimeInfinite);
    out += ',';
    JSecs(out, "total", SysUsec(r) + UserUsec(r));
    out += ',';
    JSecs(out, "user", UserUsec(r));
    out += "},";
    JExit(out, "exit_code", j.exit_status(), IsFinished(j.state()));
    out += ",\"flags\":[],";
    JStr(out, "group", Value(kGroup, r, c).value_or(""));
    out += ',';
    JInt(out, "job_id", j.job_id());
    out += ',';
    JStr(out, "name", j.name());
    out += ',';
    JStr(out, "nodes", Value(kNodeList, r, c).value_or(""));
    out += ',';
    JStr(out, "partition", j.partition());
    out += ',';
    JNoVal(out, "priority", true, j.priority(), false);
    out += ',';
    JStr(out, "qos", j.qos());
    out += ",\"required\":{";
    JInt(out, "CPUs", j.req_cpus());
    out += ',';
    JNoVal(out, "memory_per_cpu", j.req_mem_per_cpu(), static_cast<int64_t>(j.req_mem_mb()), false);
    out += ',';
    JNoVal(out, "memory_per_node", !j.req_mem_per_cpu(), static_cast<int64_t>(j.req_mem_mb()),
           false);
    out += "},";
    JStr(out, "kill_request_user",
         j.requid() == kNoUid ? std::string() : NameOrNumber("", j.requid(), o.user_name));
    out += ',';
    JInt(out, "restart_cnt", j.restart_count());
    out += ",\"reservation\":{\"id\":0,";
    JStr(out, "name", j.reservation());
    out += "},\"state\":{\"current\":[";
    out += fmt::JsonString(JobStateName(j.state()));
    out += "],";
    JStr(out, "reason", j.reason().empty() ? "None" : j.reason());
    out += "},\"steps\":[";
    std::vector<const pb::AcctStep*> steps;
    for (const pb::AcctStep& s : j.steps()) steps.push_back(&s);
    std::stable_sort(steps.begin(), steps.end(), [](const pb::AcctStep* a, const pb::AcctStep* b) {
      return StepOrder(a->step_id()) < StepOrder(b->step_id());
    });
    bool first_step = true;
    for (const pb::AcctStep* s : steps) {
      Row sr{&j, s};
      if (!first_step) out += ',';
      first_step = false;
      out += "{\"time\":{";
      JInt(out, "elapsed", ElapsedOf(sr, c));
      out += ',';
      JNoVal(out, "end", s->end_time() != 0, s->end_time(), false);
      out += ',';
      JNoVal(out, "start", s->start_time() != 0, s->start_time(), false);
      out += ',';
      JInt(out, "suspended", s->suspended_s());
      out += ',';
      JSecs(out, "system", s->sys_cpu_usec());
      out += ',';
      JNoVal(out, "limit", false, 0, false);
      out += ',';
      JSecs(out, "total", s->sys_cpu_usec() + s->user_cpu_usec());
      out += ',';
      JSecs(out, "user", s->user_cpu_usec());
      out += "},";
      JExit(out, "exit_code", s->exit_status(), IsFinished(s->state()));
      out += ",\"nodes\":{";
      JInt(out, "count", s->nnodes());
      out += ',';
      JStr(out, "range", s->nodelist());
      out += ",\"list\":[";
      auto hosts = ExpandHostlist(s->nodelist());
      if (hosts.ok()) {
        for (size_t i = 0; i < hosts->size(); ++i) {
          if (i) out += ',';
          out += fmt::JsonString((*hosts)[i]);
        }
      }
      out += "]},\"tasks\":{";
      JInt(out, "count", s->ntasks());
      out += "},";
      JStr(out, "kill_request_user",
           s->requid() == kNoUid ? std::string() : NameOrNumber("", s->requid(), o.user_name));
      out += ",\"state\":[";
      out += fmt::JsonString(JobStateName(s->state()));
      out += "],\"step\":{";
      JStr(out, "id", SacctStepId(j, *s));
      out += ',';
      JStr(out, "name", s->name());
      out += "},\"tres\":{";
      JTres(out, "allocated", s->tres_alloc());
      out += "}}";
    }
    out += "],";
    JStr(out, "submit_line", j.submit_line());
    out += ",\"tres\":{";
    JTres(out, "allocated", j.tres_alloc());
    out += ',';
    JTres(out, "requested", j.tres_req());
    out += "},";
    JStr(out, "user", Value(kUser, r, c).value_or(""));
    out += ",\"wckey\":{";
    JStr(out, "wckey", j.wckey());
    out += ",\"flags\":[]},";
    JStr(out, "working_directory", j.work_dir());
    out += '}';
  }
  out +=
      "],\"meta\":{\"plugin\":{\"type\":\"\",\"name\":\"\",\"data_parser\":\"data_parser/"
      "v0.0.44\",\"accounting_storage\":\"accounting_storage/slurmdbd\"},\"command\":[\"sacct\"],"
      "\"slurm\":{\"version\":{\"major\":\"22\",\"micro\":\"8\",\"minor\":\"05\"},\"release\":"
      "\"22.05.8\"}},\"errors\":[],\"warnings\":[]}\n";
  return out;
}

}  // namespace shoal::cli
