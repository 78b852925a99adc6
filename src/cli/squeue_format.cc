#include "cli/squeue_format.h"

#include <sys/wait.h>

#include <algorithm>
#include <bitset>
#include <charconv>
#include <cstdio>
#include <deque>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "cli/format_fields.h"
#include "cli/scontrol_format.h"
#include "common/hostlist.h"
#include "common/prefault.h"
#include "common/states.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

using fmt::AppendField;
using fmt::FieldSpec;

// Field ids: -o letters use their character; -O-only fields start at 256.
enum ExtraField : int {
  kAccrueTime = 256,
  kAdminComment,
  kAllocNodes,
  kAllocSid,
  kAssocId,
  kBatchFlag,
  kClusterFeature,
  kCpusPerTask,
  kDeadline,
  kDerivedEc,
  kEligibleTime,
  kExitCode,
  kLastSchedEval,
  kMaxCpus,
  kMaxNodes,
  kNumTasks,
  kPendingTime,
  kPreemptTime,
  kRequeue,
  kRestartCnt,
  kStdErr,
  kStdIn,
  kStdOut,
  kMcsLabel,
  kNetwork,
  kReboot,
  kMinTime,
  kCluster,
  kContainer,
  kBlank,  // unknown -o letters print nothing (padded to the width)
};

struct LongField {
  const char* name;  // lower case
  int id;
  const char* header;
};

constexpr LongField kLongFields[] = {
    {"account", 'a', "ACCOUNT"},
    {"accruetime", kAccrueTime, "ACCRUE_TIME"},
    {"admin_comment", kAdminComment, "ADMIN_COMMENT"},
    {"allocnodes", kAllocNodes, "ALLOC_NODES"},
    {"allocsid", kAllocSid, "ALLOC_SID"},
    {"arrayjobid", 'F', "ARRAY_JOB_ID"},
    {"arraytaskid", 'K', "ARRAY_TASK_ID"},
    {"associd", kAssocId, "ASSOC_ID"},
    {"batchflag", kBatchFlag, "BATCH_FLAG"},
    {"batchhost", 'B', "EXEC_HOST"},
    {"cluster", kCluster, "CLUSTER"},
    {"clusterfeature", kClusterFeature, "CLUSTER_FEATURE"},
    {"command", 'o', "COMMAND"},
    {"comment", 'k', "COMMENT"},
    {"container", kContainer, "CONTAINER"},
    {"contiguous", 'O', "CONTIGUOUS"},
    {"cores", 'I', "CORES_PER_SOCKET"},
    {"corespec", 'X', "CORE_SPEC"},
    {"cpus-per-task", kCpusPerTask, "CPUS_PER_TASK"},
    {"deadline", kDeadline, "DEADLINE"},
    {"dependency", 'E', "DEPENDENCY"},
    {"derivedec", kDerivedEc, "DERIVED_EC"},
    {"eligibletime", kEligibleTime, "ELIGIBLE_TIME"},
    {"endtime", 'e', "END_TIME"},
    {"exit_code", kExitCode, "EXIT_CODE"},
    {"feature", 'f', "FEATURES"},
    {"groupid", 'G', "GROUP"},
    {"groupname", 'g', "GROUP"},
    {"jobarrayid", 'F', "ARRAY_JOB_ID"},
    {"jobid", 'A', "JOBID"},
    {"lastschedeval", kLastSchedEval, "LAST_SCHED_EVAL"},
    {"licenses", 'W', "LICENSES"},
    {"maxcpus", kMaxCpus, "MAX_CPUS"},
    {"maxnodes", kMaxNodes, "MAX_NODES"},
    {"mcslabel", kMcsLabel, "MCSLABEL"},
    {"mincpus", 'c', "MIN_CPUS"},
    {"minmemory", 'm', "MIN_MEMORY"},
    {"mintime", kMinTime, "MIN_TIME"},
    {"mintmpdisk", 'd', "MIN_TMP_DISK"},
    {"name", 'j', "NAME"},
    {"network", kNetwork, "NETWORK"},
    {"nice", 'y', "NICE"},
    {"nodelist", 'N', "NODELIST"},
    {"numcpus", 'C', "CPUS"},
    {"numnodes", 'D', "NODES"},
    {"numtasks", kNumTasks, "TASKS"},
    {"oversubscribe", 'h', "OVER_SUBSCRIBE"},
    {"partition", 'P', "PARTITION"},
    {"pendingtime", kPendingTime, "PENDING_TIME"},
    {"preempttime", kPreemptTime, "PREEMPT_TIME"},
    {"priority", 'p', "PRIORITY"},
    {"prioritylong", 'Q', "PRIORITY"},
    {"qos", 'q', "QOS"},
    {"reason", 'r', "REASON"},
    {"reasonlist", 'R', "NODELIST(REASON)"},
    {"reboot", kReboot, "REBOOT"},
    {"reqnodes", 'n', "REQ_NODES"},
    {"requeue", kRequeue, "REQUEUE"},
    {"reservation", 'v', "RESERVATION"},
    {"restartcnt", kRestartCnt, "RESTARTCNT"},
    {"schednodes", 'Y', "SCHEDNODES"},
    {"sct", 'z', "S:C:T"},
    {"selectjobinfo", 's', "SELECT_JOBINFO"},
    {"sockets", 'H', "SOCKETS_PER_NODE"},
    {"starttime", 'S', "START_TIME"},
    {"state", 'T', "STATE"},
    {"statecompact", 't', "ST"},
    {"stderr", kStdErr, "STDERR"},
    {"stdin", kStdIn, "STDIN"},
    {"stdout", kStdOut, "STDOUT"},
    {"submittime", 'V', "SUBMIT_TIME"},
    {"threads", 'J', "THREADS_PER_CORE"},
    {"timeleft", 'L', "TIME_LEFT"},
    {"timelimit", 'l', "TIME_LIMIT"},
    {"timeused", 'M', "TIME"},
    {"tres-per-node", 'b', "TRES_PER_NODE"},
    {"userid", 'U', "UID"},
    {"username", 'u', "USER"},
    {"wckey", 'w', "WCKEY"},
    {"workdir", 'Z', "WORK_DIR"},
};

const char* LetterHeader(char c) {
  switch (c) {
    case 'a':
      return "ACCOUNT";
    case 'A':
      return "JOBID";
    case 'b':
      return "TRES_PER_NODE";
    case 'B':
      return "EXEC_HOST";
    case 'c':
      return "MIN_CPUS";
    case 'C':
      return "CPUS";
    case 'd':
      return "MIN_TMP_DISK";
    case 'D':
      return "NODES";
    case 'e':
      return "END_TIME";
    case 'E':
      return "DEPENDENCY";
    case 'f':
      return "FEATURES";
    case 'F':
      return "ARRAY_JOB_ID";
    case 'g':
      return "GROUP";
    case 'G':
      return "GROUP";
    case 'h':
      return "OVER_SUBSCRIBE";
    case 'H':
      return "SOCKETS_PER_NODE";
    case 'i':
      return "JOBID";
    case 'I':
      return "CORES_PER_SOCKET";
    case 'j':
      return "NAME";
    case 'J':
      return "THREADS_PER_CORE";
    case 'k':
      return "COMMENT";
    case 'K':
      return "ARRAY_TASK_ID";
    case 'l':
      return "TIME_LIMIT";
    case 'L':
      return "TIME_LEFT";
    case 'm':
      return "MIN_MEMORY";
    case 'M':
      return "TIME";
    case 'n':
      return "REQ_NODES";
    case 'N':
      return "NODELIST";
    case 'o':
      return "COMMAND";
    case 'O':
      return "CONTIGUOUS";
    case 'p':
      return "PRIORITY";
    case 'P':
      return "PARTITION";
    case 'q':
      return "QOS";
    case 'Q':
      return "PRIORITY";
    case 'r':
      return "REASON";
    case 'R':
      return "NODELIST(REASON)";
    case 's':
      return "SELECT_JOBINFO";
    case 'S':
      return "START_TIME";
    case 't':
      return "ST";
    case 'T':
      return "STATE";
    case 'u':
      return "USER";
    case 'U':
      return "UID";
    case 'v':
      return "RESERVATION";
    case 'V':
      return "SUBMIT_TIME";
    case 'w':
      return "WCKEY";
    case 'W':
      return "LICENSES";
    case 'x':
      return "EXC_NODES";
    case 'X':
      return "CORE_SPEC";
    case 'y':
      return "NICE";
    case 'Y':
      return "SCHEDNODES";
    case 'z':
      return "S:C:T";
    case 'Z':
      return "WORK_DIR";
    default:
      return nullptr;
  }
}

// One output line: a job, or pending tasks of one array grouped together.
struct Row {
  const pb::JobRecord* job = nullptr;
  std::string task_range;  // "1-3,5" when several pending tasks are shown as one line
};

struct Column {
  int id = 0;  // 0: literal text only
  int width = 0;
  bool right = false;
  std::string header;
  std::string suffix;
};

struct Ctx {
  const SqueueFormatOptions* opts;
  int64_t now;
};

bool IsArrayTask(const pb::JobRecord& j) {
  return j.array_job_id() != 0 && j.array_task_id() != kNoArrayTask;
}

std::string OrNull(const std::string& s) { return s.empty() ? std::string("(null)") : s; }

std::string IdName(const std::function<std::string(uint32_t)>& fn, uint32_t id) {
  if (fn) {
    std::string name = fn(id);
    if (!name.empty()) return name;
  }
  return std::to_string(id);
}

std::string UserOf(const pb::JobRecord& j, const Ctx& c) {
  if (!j.spec().user_name().empty()) return j.spec().user_name();
  return IdName(c.opts->user_name, j.spec().uid());
}

const std::string& PartitionOf(const pb::JobRecord& j) {
  return j.partition().empty() ? j.spec().partition() : j.partition();
}

std::string Timestamp(int64_t t, const char* zero) {
  return t > 0 ? FormatTimestamp(t) : std::string(zero);
}

std::string LimitText(uint32_t minutes) {
  if (minutes == kTimeInfinite) return "UNLIMITED";
  if (minutes == kTimeNoVal) return "NOT_SET";
  return FormatElapsed(static_cast<int64_t>(minutes) * 60);
}

std::string Memory(uint64_t mb, bool noconvert) {
  if (mb == 0) return "0";
  if (noconvert) return std::to_string(mb) + "M";
  return FormatMemoryCompact(mb);
}

uint64_t MinMemoryMb(const pb::JobRecord& j) {
  if (j.spec().mem_per_cpu_mb()) return j.spec().mem_per_cpu_mb();
  if (j.spec().mem_per_node_mb()) return j.spec().mem_per_node_mb();
  return j.mem_per_node_mb();
}

uint32_t NodeCount(const pb::JobRecord& j) {
  if (j.state() != pb::JOB_PENDING && j.nodes_size() > 0) return j.nodes_size();
  return j.num_nodes() ? j.num_nodes() : 1;
}

uint32_t CpuCount(const pb::JobRecord& j) {
  if (j.num_cpus()) return j.num_cpus();
  uint32_t sum = 0;
  for (uint32_t c : j.cpus_per_node()) sum += c;
  return sum ? sum : 1;
}

uint32_t MinCpus(const pb::JobRecord& j) {
  if (j.spec().min_cpus_per_node()) return j.spec().min_cpus_per_node();
  uint32_t cpt = j.spec().cpus_per_task() ? j.spec().cpus_per_task() : 1;
  uint32_t tpn = j.spec().ntasks_per_node() ? j.spec().ntasks_per_node() : 1;
  return cpt * tpn;
}

int64_t TimeLeft(const pb::JobRecord& j, int64_t now) {
  int64_t left = static_cast<int64_t>(j.time_limit()) * 60 - JobRunSeconds(j, now);
  return left < 0 ? 0 : left;
}

int64_t EndTime(const pb::JobRecord& j) {
  if (j.end_time() > 0) return j.end_time();
  if ((j.state() == pb::JOB_RUNNING || j.state() == pb::JOB_SUSPENDED) && j.start_time() > 0 &&
      j.time_limit() != kTimeInfinite && j.time_limit() != kTimeNoVal) {
    return j.start_time() + static_cast<int64_t>(j.time_limit()) * 60;
  }
  return 0;
}

std::string ReasonText(const pb::JobRecord& j) {
  if (!j.state_desc().empty()) return j.state_desc();
  return j.reason().empty() ? std::string("None") : j.reason();
}

std::string NodeList(const pb::JobRecord& j) {
  if (j.nodes_size() == 0) return "";
  if (j.nodes_size() == 1) return j.nodes(0);
  return CompressHostlist(std::vector<std::string>(j.nodes().begin(), j.nodes().end()));
}

std::string ReasonList(const pb::JobRecord& j) {
  if (j.state() == pb::JOB_PENDING) return "(" + ReasonText(j) + ")";
  if (IsFinished(j.state()) && j.state() != pb::JOB_COMPLETED && !j.completing()) {
    std::string r = ReasonText(j);
    if (r != "None") return "(" + r + ")";
  }
  return NodeList(j);
}

std::string Throttle(const pb::JobRecord& j) {
  const std::string& a = j.spec().array();
  size_t pct = a.rfind('%');
  return pct == std::string::npos ? std::string() : a.substr(pct);
}

std::string JobIdText(const Row& r) {
  const pb::JobRecord& j = *r.job;
  if (!r.task_range.empty()) {
    return std::to_string(j.array_job_id()) + "_[" + r.task_range + Throttle(j) + "]";
  }
  if (IsArrayTask(j)) {
    return std::to_string(j.array_job_id()) + "_" + std::to_string(j.array_task_id());
  }
  return std::to_string(j.job_id());
}

std::string ExitCodeText(int32_t status) { return FormatExitCode(status); }

std::string Value(const Row& r, int id, const Ctx& c) {
  const pb::JobRecord& j = *r.job;
  const pb::JobSpec& s = j.spec();
  switch (id) {
    case 'a':
      return OrNull(s.account());
    case 'A':
      return std::to_string(j.job_id());
    case 'b':
      return s.gres().empty() ? std::string("N/A") : "gres:" + s.gres();
    case 'B':
      return j.batch_host().empty() ? std::string("n/a") : j.batch_host();
    case 'c':
      return std::to_string(MinCpus(j));
    case 'C':
      return std::to_string(CpuCount(j));
    case 'd':
      return "0";
    case 'D':
      return std::to_string(NodeCount(j));
    case 'e':
      return Timestamp(EndTime(j), "N/A");
    case 'E':
      return OrNull(s.dependency());
    case 'f':
      return OrNull(s.constraint());
    case 'F':
      return std::to_string(IsArrayTask(j) ? j.array_job_id() : j.job_id());
    case 'g':
      return IdName(c.opts->group_name, s.gid());
    case 'G':
      return std::to_string(s.gid());
    case 'h': {
      if (!s.exclusive()) return "OK";
      std::string mode = fmt::Upper(s.exclusive_mode());
      return mode == "USER" || mode == "MCS" ? mode : std::string("NO");
    }
    case 'H':
    case 'I':
    case 'J':
      return "*";
    case 'i':
      return JobIdText(r);
    case 'j':
      return s.name();
    case 'k':
      return OrNull(s.comment());
    case 'K':
      if (!r.task_range.empty()) return r.task_range + Throttle(j);
      return IsArrayTask(j) ? std::to_string(j.array_task_id()) : std::string("N/A");
    case 'l':
      return LimitText(j.time_limit());
    case 'L':
      if (j.time_limit() == kTimeInfinite || j.time_limit() == kTimeNoVal) {
        return LimitText(j.time_limit());
      }
      return FormatElapsed(TimeLeft(j, c.now));
    case 'm':
      return Memory(MinMemoryMb(j), c.opts->noconvert);
    case 'M':
      return FormatElapsed(JobRunSeconds(j, c.now));
    case 'n':
      return s.nodelist();
    case 'N':
      return NodeList(j);
    case 'o':
      return OrNull(s.command());
    case 'O':
      return "0";
    case 'p': {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.8f", j.priority() / 4294967295.0);
      return buf;
    }
    case 'P':
      return PartitionOf(j);
    case 'q':
      return OrNull(s.qos());
    case 'Q':
      return std::to_string(j.priority());
    case 'r':
      return ReasonText(j);
    case 'R':
      return ReasonList(j);
    case 's':
      return "(null)";
    case 'S':
      return Timestamp(j.start_time(), "N/A");
    case 't':
      return SqueueStateShort(j);
    case 'T':
      return SqueueStateLong(j);
    case 'u':
      return UserOf(j, c);
    case 'U':
      return std::to_string(s.uid());
    case 'v':
      return OrNull(s.reservation());
    case 'V':
      return Timestamp(j.submit_time(), "Unknown");
    case 'w':
      return OrNull(s.wckey());
    case 'W':
      return OrNull(s.licenses());
    case 'x':
      return s.exclude();
    case 'X':
      return "N/A";
    case 'y':
      return std::to_string(s.nice());
    case 'Y':
      return j.sched_nodes().empty() ? "(null)" : j.sched_nodes();
    case 'z':
      return "*:*:*";
    case 'Z':
      return s.work_dir();
    case kAccrueTime:
      return Timestamp(j.accrue_time(), "N/A");
    case kAdminComment:
      return "(null)";
    case kContainer:
      return OrNull(s.container());
    case kAllocNodes:
      return OrNull(s.submit_host());
    case kAllocSid:
      return std::to_string(s.alloc_sid());
    case kAssocId:
      return "0";
    case kBatchFlag:
      return "1";
    case kClusterFeature:
      return OrNull(s.cluster_features());
    case kCpusPerTask:
      return std::to_string(s.cpus_per_task() ? s.cpus_per_task() : 1);
    case kDeadline:
      return Timestamp(s.deadline(), "N/A");
    case kDerivedEc:
      return ExitCodeText(j.derived_exit_status());
    case kEligibleTime:
      return Timestamp(j.eligible_time(), "N/A");
    case kExitCode:
      return ExitCodeText(j.exit_status());
    case kLastSchedEval:
      return Timestamp(j.last_sched_eval(), "Unknown");
    case kMaxCpus:
      return "0";
    case kMaxNodes:
      return std::to_string(s.max_nodes());
    case kMcsLabel:
      return "N/A";
    case kNetwork:
      return "";
    case kNumTasks:
      return std::to_string(j.num_tasks() ? j.num_tasks() : 1);
    case kPendingTime: {
      // A pending job's start_time is only the expected start.
      int64_t until = j.state() != pb::JOB_PENDING && j.start_time() > 0 ? j.start_time() : c.now;
      int64_t d = j.submit_time() > 0 ? until - j.submit_time() : 0;
      return std::to_string(d < 0 ? 0 : d);
    }
    case kPreemptTime:
      return Timestamp(j.preempt_time(), "N/A");
    case kReboot:
      return "0";
    case kRequeue:
      return j.requeue() ? "1" : "0";
    case kRestartCnt:
      return std::to_string(j.restart_count());
    case kStdErr:
      return ExpandStdPath(j, StdStream::kErr, UserOf(j, c));
    case kStdIn:
      return ExpandStdPath(j, StdStream::kIn, UserOf(j, c));
    case kStdOut:
      return ExpandStdPath(j, StdStream::kOut, UserOf(j, c));
    case kMinTime:
      return s.time_min() == 0 || s.time_min() == kTimeNoVal ? std::string("0:00")
                                                             : LimitText(s.time_min());
    case kCluster:
      return "";
    default:
      return "";
  }
}

// The common fields appended without temporaries (squeue over 100,000 jobs stays fast); the
// rest go through Value().
std::string_view StateShortView(const pb::JobRecord& j) {
  static constexpr std::string_view kShort[] = {"PD", "R",  "S",  "CD", "CA", "F",
                                                "TO", "NF", "PR", "BF", "DL", "OOM"};
  if (j.completing()) return "CG";
  if (j.state() == pb::JOB_RUNNING && j.prolog_pending_nodes_size() > 0) return "CF";
  int s = static_cast<int>(j.state());
  return s >= 0 && s < 12 ? kShort[s] : std::string_view("?");
}

std::string_view ElapsedInto(char* buf, int64_t secs) {
  if (secs < 0) return "INVALID";
  int64_t days = secs / 86400, hours = (secs / 3600) % 24, mins = (secs / 60) % 60, s = secs % 60;
  char* p = buf;
  auto num = [&p](int64_t v, bool two) {
    if (two && v < 10) *p++ = '0';
    p = std::to_chars(p, p + 24, v).ptr;
  };
  if (days > 0) {
    num(days, false);
    *p++ = '-';
    num(hours, true);
    *p++ = ':';
    num(mins, true);
  } else if (hours > 0) {
    num(hours, false);
    *p++ = ':';
    num(mins, true);
  } else {
    num(mins, false);
  }
  *p++ = ':';
  num(s, true);
  return std::string_view(buf, static_cast<size_t>(p - buf));
}

void AppendValue(std::string& out, const Row& r, const Column& col, const Ctx& c,
                 std::string& scratch) {
  const pb::JobRecord& j = *r.job;
  char buf[64];
  std::string_view v;
  switch (col.id) {
    case 'i':
      if (!r.task_range.empty() || IsArrayTask(j)) {
        scratch = JobIdText(r);
        v = scratch;
      } else {
        v = std::string_view(
            buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, j.job_id()).ptr - buf));
      }
      break;
    case 'P':
      v = PartitionOf(j);
      break;
    case 'j':
      v = j.spec().name();
      break;
    case 'u':
      if (!j.spec().user_name().empty()) {
        v = j.spec().user_name();
      } else {
        scratch = UserOf(j, c);
        v = scratch;
      }
      break;
    case 't':
      v = StateShortView(j);
      break;
    case 'M':
      v = ElapsedInto(buf, JobRunSeconds(j, c.now));
      break;
    case 'D':
      v = std::string_view(
          buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, NodeCount(j)).ptr - buf));
      break;
    case 'R':
      if (j.state() == pb::JOB_PENDING) {
        scratch.assign(1, '(');
        if (!j.state_desc().empty()) {
          scratch += j.state_desc();
        } else {
          scratch += j.reason().empty() ? std::string_view("None") : std::string_view(j.reason());
        }
        scratch += ')';
        v = scratch;
      } else if (j.nodes_size() == 1 && !IsFinished(j.state())) {
        v = j.nodes(0);
      } else {
        scratch = ReasonList(j);
        v = scratch;
      }
      break;
    default:
      scratch = Value(r, col.id, c);
      v = scratch;
      break;
  }
  AppendField(out, v, col.width, col.right);
}

// ---- sorting ---------------------------------------------------------------------------------

struct SortKey {
  char field;
  bool desc;
};

std::vector<SortKey> ParseSort(std::string_view spec) {
  std::vector<SortKey> keys;
  for (const std::string& item : fmt::SplitList(spec, ',')) {
    size_t i = 0;
    bool desc = false;
    while (i < item.size() && (item[i] == '+' || item[i] == '-')) desc = item[i++] == '-';
    if (i < item.size()) keys.push_back({item[i], desc});
  }
  return keys;
}

uint32_t StateRank(const pb::JobRecord& j) {
  return static_cast<uint32_t>(j.state()) + (j.completing() ? 0x8000u : 0u);
}

// A sort key of one row, computed once: a number, or a string for text fields.
struct KeyVal {
  int64_t num = 0;
  std::string str;
};

KeyVal KeyOf(const Row& r, char field, const Ctx& c) {
  const pb::JobRecord& j = *r.job;
  KeyVal k;
  switch (field) {
    case 'i':
    case 'F':
      k.num = static_cast<int64_t>(IsArrayTask(j) ? j.array_job_id() : j.job_id()) << 32 |
              (IsArrayTask(j) ? j.array_task_id() : 0);
      break;
    case 'A':
      k.num = j.job_id();
      break;
    case 'K':
      k.num = IsArrayTask(j) ? j.array_task_id() : -1;
      break;
    case 'P':
      k.str = PartitionOf(j);
      break;
    case 't':
    case 'T':
      k.num = StateRank(j);
      break;
    case 'p':
    case 'Q':
      k.num = j.priority();
      break;
    case 'U':
      k.num = j.spec().uid();
      break;
    case 'G':
      k.num = j.spec().gid();
      break;
    case 'j':
      k.str = j.spec().name();
      break;
    case 'M':
      k.num = JobRunSeconds(j, c.now);
      break;
    case 'l':
      k.num = j.time_limit();
      break;
    case 'L':
      k.num = TimeLeft(j, c.now);
      break;
    case 'D':
      k.num = NodeCount(j);
      break;
    case 'C':
      k.num = CpuCount(j);
      break;
    case 'c':
      k.num = MinCpus(j);
      break;
    case 'm':
      k.num = static_cast<int64_t>(MinMemoryMb(j));
      break;
    case 'S':
      k.num = j.start_time();
      break;
    case 'V':
      k.num = j.submit_time();
      break;
    case 'e':
      k.num = EndTime(j);
      break;
    case 'y':
      k.num = j.spec().nice();
      break;
    default:
      if (LetterHeader(field)) k.str = Value(r, field, c);
      break;
  }
  return k;
}

// ---- array grouping ----------------------------------------------------------------------------

std::string Ranges(std::vector<uint32_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t k = i;
    while (k + 1 < ids.size() && ids[k + 1] == ids[k] + 1) ++k;
    if (!out.empty()) out += ',';
    out += std::to_string(ids[i]);
    if (k > i) out += '-' + std::to_string(ids[k]);
    i = k + 1;
  }
  return out;
}

Result<std::vector<Column>> BuildColumns(const SqueueFormatOptions& o) {
  std::vector<Column> cols;
  if (o.format.empty() && !o.long_format.empty()) {
    for (const FieldSpec& f : fmt::ParseLongFormat(o.long_format)) {
      std::string lower = fmt::Lower(f.name);
      const LongField* found = nullptr;
      for (const LongField& lf : kLongFields) {
        if (lower == lf.name) found = &lf;
      }
      if (!found) return InvalidArgument("Invalid job format specification: " + f.name);
      cols.push_back({found->id, f.width, f.right, found->header, f.suffix});
    }
    return cols;
  }
  std::string_view format = o.long_output ? kSqueueLongFormat : kSqueueDefaultFormat;
  if (!o.format.empty()) format = o.format;
  for (const FieldSpec& f : fmt::ParsePercentFormat(format)) {
    if (f.code == 0) {
      cols.push_back({0, 0, false, "", f.suffix});
      continue;
    }
    const char* header = LetterHeader(f.code);
    int id = header ? static_cast<int>(f.code) : static_cast<int>(kBlank);
    cols.push_back({id, f.width, f.right, header ? header : "", f.suffix});
  }
  return cols;
}

void AppendNoVal(std::string& out, const char* key, bool set, int64_t number, bool infinite) {
  out += '"';
  out += key;
  out += "\":{\"set\":";
  out += set ? "true" : "false";
  out += ",\"infinite\":";
  out += infinite ? "true" : "false";
  out += ",\"number\":";
  out += std::to_string(set ? number : 0);
  out += '}';
}

void AppendStr(std::string& out, const char* key, std::string_view value) {
  out += '"';
  out += key;
  out += "\":";
  out += fmt::JsonString(value);
}

void AppendInt(std::string& out, const char* key, int64_t value) {
  out += '"';
  out += key;
  out += "\":";
  out += std::to_string(value);
}

void AppendBool(std::string& out, const char* key, bool value) {
  out += '"';
  out += key;
  out += "\":";
  out += value ? "true" : "false";
}

void AppendExitCode(std::string& out, const char* key, const pb::JobRecord& j, int32_t status) {
  out += '"';
  out += key;
  out += "\":{\"status\":[";
  int code = 0, sig = 0;
  bool ended = IsFinished(j.state());
  if (!ended) {
    out += "\"PENDING\"";
  } else if (WIFSIGNALED(status)) {
    sig = WTERMSIG(status);
    out += "\"SIGNALED\"";
  } else {
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    out += code == 0 ? "\"SUCCESS\"" : "\"ERROR\"";
  }
  out += "],";
  AppendNoVal(out, "return_code", ended, code, false);
  out += ",\"signal\":{";
  AppendNoVal(out, "id", sig != 0, sig, false);
  out += ',';
  AppendStr(out, "name", sig ? SignalName(sig) : "");
  out += "}}";
}

void AppendTime(std::string& out, const char* key, int64_t t) {
  AppendNoVal(out, key, true, t, false);
}

void AppendLimit(std::string& out, const char* key, uint32_t minutes) {
  if (minutes == kTimeInfinite) return AppendNoVal(out, key, false, 0, true);
  if (minutes == kTimeNoVal) return AppendNoVal(out, key, false, 0, false);
  AppendNoVal(out, key, true, minutes, false);
}

}  // namespace

std::string SqueueStateLong(const pb::JobRecord& job) {
  if (job.state() == pb::JOB_RUNNING && job.prolog_pending_nodes_size() > 0 && !job.completing())
    return "CONFIGURING";
  return job.completing() ? std::string("COMPLETING") : JobStateName(job.state());
}

std::string SqueueStateShort(const pb::JobRecord& job) {
  if (job.state() == pb::JOB_RUNNING && job.prolog_pending_nodes_size() > 0 && !job.completing())
    return "CF";
  return job.completing() ? std::string("CG") : JobStateCompact(job.state());
}

Result<SqueueStateFilter> ParseSqueueStates(std::string_view text) {
  static const char kValid[] =
      "Valid job states include: "
      "PENDING,RUNNING,SUSPENDED,COMPLETED,CANCELLED,FAILED,TIMEOUT,NODE_FAIL,PREEMPTED,BOOT_"
      "FAIL,DEADLINE,OUT_OF_MEMORY,COMPLETING,CONFIGURING,RESIZING,RESV_DEL_HOLD,REQUEUED,"
      "REQUEUE_FED,REQUEUE_HOLD,REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,STOPPED";
  // Slurm states Shoal never produces: accepted, match nothing.
  static const char* const kOther[] = {
      "CONFIGURING",  "CF", "RESIZING",     "RS", "RESV_DEL_HOLD", "RD", "REQUEUED",  "RQ",
      "REQUEUE_FED",  "RF", "REQUEUE_HOLD", "RH", "REVOKED",       "RV", "SIGNALING", "SI",
      "SPECIAL_EXIT", "SE", "STAGE_OUT",    "SO", "STOPPED",       "ST"};
  SqueueStateFilter f;
  if (fmt::Lower(text) == "all") {
    f.all = true;
    return f;
  }
  for (const std::string& item : fmt::SplitList(text, ',')) {
    std::string up = fmt::Upper(item);
    if (up == "CG" || up == "COMPLETING") {
      f.completing = true;
      continue;
    }
    if (auto st = ParseJobState(item)) {
      if (std::find(f.states.begin(), f.states.end(), *st) == f.states.end()) {
        f.states.push_back(*st);
      }
      continue;
    }
    bool other = false;
    for (const char* o : kOther) other = other || up == o;
    if (other) continue;
    return InvalidArgument("Invalid job state specified: " + item + "\nsqueue: error: " + kValid);
  }
  return f;
}

Result<std::vector<JobIdSpec>> ParseSqueueJobIds(std::string_view text) {
  std::vector<JobIdSpec> out;
  for (const std::string& item : fmt::SplitList(text, ',')) {
    auto parse_u32 = [](std::string_view s, uint32_t* v) {
      if (s.empty() || s.size() > 10) return false;
      uint64_t n = 0;
      for (char ch : s) {
        if (ch < '0' || ch > '9') return false;
        n = n * 10 + static_cast<uint64_t>(ch - '0');
      }
      if (n > 0xffffffffull) return false;
      *v = static_cast<uint32_t>(n);
      return true;
    };
    JobIdSpec spec;
    size_t us = item.find('_');
    std::string_view id = std::string_view(item).substr(0, us);
    if (!parse_u32(id, &spec.job_id) || spec.job_id == 0) {
      return InvalidArgument("Invalid job id: " + item);
    }
    if (us != std::string::npos) {
      uint32_t task = 0;
      if (!parse_u32(std::string_view(item).substr(us + 1), &task)) {
        return InvalidArgument("Invalid job id: " + item);
      }
      spec.task = task;
    }
    out.push_back(spec);
  }
  return out;
}

pb::JobQueryRequest BuildJobQuery(const SqueueFilter& f) {
  pb::JobQueryRequest q;
  q.set_omit_script(true);
  std::vector<uint32_t> ids;
  for (const JobIdSpec& j : f.jobs) {
    if (std::find(ids.begin(), ids.end(), j.job_id) == ids.end()) ids.push_back(j.job_id);
  }
  for (uint32_t id : ids) q.add_job_ids(id);
  for (uint32_t uid : f.uids) q.add_uids(uid);
  for (const std::string& p : f.partitions) q.add_partitions(p);
  for (const std::string& n : f.names) q.add_names(n);
  for (const std::string& n : f.nodes) q.add_nodes(n);
  if (f.states) {
    if (f.states->all || f.states->completing) {
      q.set_include_finished(true);  // COMPLETING jobs may carry a finished base state
    } else {
      bool finished = false;
      for (pb::JobState s : f.states->states) {
        q.add_states(s);
        finished = finished || IsFinished(s);
      }
      q.set_include_finished(finished);
    }
  } else {
    q.set_include_finished(!f.jobs.empty());
  }
  return q;
}

bool JobMatches(const pb::JobRecord& j, const SqueueFilter& f) {
  if (!f.jobs.empty()) {
    bool any = false;
    for (const JobIdSpec& id : f.jobs) {
      if (id.task) {
        any = IsArrayTask(j) && j.array_job_id() == id.job_id && j.array_task_id() == *id.task;
      } else {
        any = j.job_id() == id.job_id || (IsArrayTask(j) && j.array_job_id() == id.job_id);
      }
      if (any) break;
    }
    if (!any) return false;
  }
  if (!f.uids.empty() && std::find(f.uids.begin(), f.uids.end(), j.spec().uid()) == f.uids.end()) {
    return false;
  }
  if (!f.partitions.empty()) {
    bool any = false;
    std::vector<std::string> parts = j.partition().empty()
                                         ? fmt::SplitList(j.spec().partition(), ',')
                                         : std::vector<std::string>{j.partition()};
    for (const std::string& p : parts) {
      any = any || std::find(f.partitions.begin(), f.partitions.end(), p) != f.partitions.end();
    }
    if (!any) return false;
  }
  if (!f.names.empty() &&
      std::find(f.names.begin(), f.names.end(), j.spec().name()) == f.names.end()) {
    return false;
  }
  auto ci_in = [](const std::vector<std::string>& list, const std::string& v) {
    std::string lv = fmt::Lower(v);
    for (const std::string& x : list) {
      if (fmt::Lower(x) == lv) return true;
    }
    return false;
  };
  if (!f.accounts.empty() && !ci_in(f.accounts, j.spec().account())) return false;
  if (!f.qos.empty() && !ci_in(f.qos, j.spec().qos())) return false;
  if (!f.nodes.empty()) {
    bool any = false;
    for (const std::string& n : j.nodes()) {
      any = any || std::find(f.nodes.begin(), f.nodes.end(), n) != f.nodes.end();
    }
    if (!any) return false;
  }
  if (f.states) {
    if (f.states->all) return true;
    if (f.states->completing && j.completing()) return true;
    return std::find(f.states->states.begin(), f.states->states.end(), j.state()) !=
           f.states->states.end();
  }
  if (!f.jobs.empty()) return true;  // -j alone shows every state
  return !IsFinished(j.state()) || j.completing();
}

// Lines and sort keys are made as jobs arrive, so the caller can hand over one reused record
// after another (squeue decodes its answer that way instead of keeping thousands of messages).
// Only pending array tasks are kept, to be grouped into one line per array, partition and reason.
struct SqueueFormatter::Impl {
  SqueueFormatOptions options;
  Ctx ctx{};
  std::vector<Column> cols;
  std::vector<SortKey> keys;
  // Per row and key: the number, and the text interned per key (text keys sort by rank).
  std::vector<int64_t> nums;
  std::vector<uint32_t> text_ids;
  static constexpr uint32_t kEmptyText = 0xffffffff;             // "" sorts before every other text
  std::vector<std::unordered_map<std::string, uint32_t>> texts;  // per key: text -> id
  std::vector<bool> text_key;
  // Per key: the last row's text and its id. Neighbouring rows mostly share a partition or a
  // name, and comparing with the last one is cheaper than hashing into `texts`.
  std::vector<std::string> last_text;
  std::vector<uint32_t> last_text_id;
  std::string lines;
  std::vector<uint32_t> start;  // each row's first byte in `lines`
  std::string scratch;
  struct Group {
    const pb::JobRecord* lowest = nullptr;  // the lowest task stands for the group
    std::vector<uint32_t> tasks;
  };
  std::deque<pb::JobRecord> held;  // pending array tasks (stable addresses)
  std::unordered_map<std::string, size_t> group_of;
  std::vector<Group> groups;

  void AddRow(const Row& r) {
    for (size_t k = 0; k < keys.size(); ++k) {
      KeyVal v = KeyOf(r, keys[k].field, ctx);
      if (!v.str.empty()) text_key[k] = true;
      nums.push_back(v.num);
      if (v.str.empty()) {
        text_ids.push_back(kEmptyText);  // numeric keys: no lookup per row
        continue;
      }
      if (last_text_id[k] != kEmptyText && v.str == last_text[k]) {
        text_ids.push_back(last_text_id[k]);
        continue;
      }
      auto id = static_cast<uint32_t>(texts[k].size());
      id = texts[k].try_emplace(v.str, id).first->second;
      text_ids.push_back(id);
      last_text[k] = std::move(v.str);
      last_text_id[k] = id;
    }
    start.push_back(static_cast<uint32_t>(lines.size()));
    for (const Column& c : cols) {
      if (c.id != 0) AppendValue(lines, r, c, ctx, scratch);
      lines += c.suffix;
    }
    lines += '\n';
  }
};

SqueueFormatter::SqueueFormatter() = default;
SqueueFormatter::~SqueueFormatter() = default;
SqueueFormatter::SqueueFormatter(SqueueFormatter&&) noexcept = default;
SqueueFormatter& SqueueFormatter::operator=(SqueueFormatter&&) noexcept = default;

Result<SqueueFormatter> SqueueFormatter::Make(const SqueueFormatOptions& options, int64_t now) {
  Result<std::vector<Column>> cols = BuildColumns(options);
  if (!cols.ok()) return cols.status();
  SqueueFormatter f;
  f.impl_ = std::make_unique<Impl>();
  Impl& m = *f.impl_;
  m.options = options;
  m.ctx = Ctx{&m.options, now};
  m.cols = std::move(*cols);
  m.keys = ParseSort(options.sort.empty() ? std::string_view(kSqueueDefaultSort) : options.sort);
  m.keys.push_back({'i', false});  // ties: by job id, then array task
  m.text_key.assign(m.keys.size(), false);
  m.texts.resize(m.keys.size());
  m.last_text.resize(m.keys.size());
  m.last_text_id.assign(m.keys.size(), Impl::kEmptyText);
  return f;
}

void SqueueFormatter::Reserve(size_t jobs) {
  Impl& m = *impl_;
  m.nums.reserve(jobs * m.keys.size());
  m.text_ids.reserve(jobs * m.keys.size());
  m.lines.reserve(jobs * 96);
  m.start.reserve(jobs + 1);
  // Filled right away: map their pages in one call each rather than a fault per page.
  PrefaultForWrite(m.nums.data(), m.nums.capacity() * sizeof(int64_t));
  PrefaultForWrite(m.text_ids.data(), m.text_ids.capacity() * sizeof(uint32_t));
  PrefaultForWrite(m.lines.data(), m.lines.capacity());
}

void SqueueFormatter::Add(const pb::JobRecord& j) {
  Impl& m = *impl_;
  if (m.options.array_one_per_line || j.state() != pb::JOB_PENDING || !IsArrayTask(j)) {
    m.AddRow(Row{&j, {}});
    return;
  }
  std::string key = std::to_string(j.array_job_id());
  key += '\0';
  key += PartitionOf(j);
  key += '\0';
  key += ReasonText(j);
  auto [it, inserted] = m.group_of.try_emplace(std::move(key), m.groups.size());
  if (inserted) m.groups.emplace_back();
  Impl::Group& g = m.groups[it->second];
  if (!g.lowest || j.array_task_id() < g.lowest->array_task_id()) {
    m.held.push_back(j);
    g.lowest = &m.held.back();
  }
  g.tasks.push_back(j.array_task_id());
}

std::vector<uint32_t> SqueueFormatter::SortedRows() {
  Impl& m = *impl_;
  for (Impl::Group& g : m.groups) {
    Row r{g.lowest, {}};
    if (g.tasks.size() > 1) r.task_range = Ranges(g.tasks);
    m.AddRow(r);
  }
  const size_t nk = m.keys.size();
  const size_t rows = m.start.size();
  m.start.push_back(static_cast<uint32_t>(m.lines.size()));

  // One integer per row and key (text keys become their rank, descending keys are negated), so
  // that sorting compares plain numbers.
  std::vector<int64_t>& flat = m.nums;  // rewritten in place
  for (size_t k = 0; k < nk; ++k) {
    std::vector<int64_t> rank;  // text id -> rank among the key's distinct texts
    if (m.text_key[k]) {
      std::vector<std::pair<std::string_view, uint32_t>> uniq(m.texts[k].begin(), m.texts[k].end());
      std::sort(uniq.begin(), uniq.end());
      rank.resize(uniq.size());
      for (size_t r = 0; r < uniq.size(); ++r) rank[uniq[r].second] = static_cast<int64_t>(r);
    }
    for (size_t i = 0; i < rows; ++i) {
      uint32_t id = m.text_ids[i * nk + k];
      int64_t n = !m.text_key[k] ? m.nums[i * nk + k] : id == Impl::kEmptyText ? -1 : rank[id];
      flat[i * nk + k] = m.keys[k].desc ? -n : n;
    }
  }
  // A key with one value on every row (one partition, all pending, one priority) orders nothing:
  // drop it, so that a typical listing compares a single number per pair of rows.
  std::vector<size_t> varying;
  for (size_t k = 0; k < nk; ++k) {
    for (size_t i = 1; i < rows; ++i) {
      if (flat[i * nk + k] != flat[k]) {
        varying.push_back(k);
        break;
      }
    }
  }
  const size_t nv = varying.size();
  if (nv < nk) {
    for (size_t i = 0; i < rows; ++i) {
      for (size_t v = 0; v < nv; ++v) flat[i * nv + v] = flat[i * nk + varying[v]];
    }
  }
  auto before = [&](uint32_t a, uint32_t b) {
    const int64_t* x = &flat[a * nv];
    const int64_t* y = &flat[b * nv];
    for (size_t k = 0; k < nv; ++k) {
      if (x[k] != y[k]) return x[k] < y[k];
    }
    return a < b;  // stable
  };
  std::vector<uint32_t> order(rows);
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  // The controller answers in job id order, which often is the listing's order already.
  if (!std::is_sorted(order.begin(), order.end(), before))
    std::sort(order.begin(), order.end(), before);
  return order;
}

void SqueueFormatter::AppendHeader(std::string& out) const {
  if (impl_->options.no_header) return;
  for (const Column& c : impl_->cols) {
    if (c.id != 0) AppendField(out, c.header, c.width, c.right);
    out += c.suffix;
  }
  out += '\n';
}

void SqueueFormatter::FinishInto(std::string& out) {
  std::vector<uint32_t> order = SortedRows();
  const Impl& m = *impl_;
  AppendHeader(out);
  out.reserve(out.size() + m.lines.size());
  for (uint32_t i : order) out.append(m.lines, m.start[i], m.start[i + 1] - m.start[i]);
}

void SqueueFormatter::FinishTo(std::FILE* f) {
  std::vector<uint32_t> order = SortedRows();
  const Impl& m = *impl_;
  std::string header;
  AppendHeader(header);
  std::fwrite(header.data(), 1, header.size(), f);
  // The rows go out from where they were formatted, through stdio's buffer: a sorted copy of
  // a large listing would be megabytes of fresh memory, a page fault per 4 KB.
  for (uint32_t i : order)
    std::fwrite(m.lines.data() + m.start[i], 1, m.start[i + 1] - m.start[i], f);
}

Result<std::string> FormatSqueue(const std::vector<const pb::JobRecord*>& jobs,
                                 const SqueueFormatOptions& options, int64_t now) {
  Result<SqueueFormatter> f = SqueueFormatter::Make(options, now);
  if (!f.ok()) return f.status();
  f->Reserve(jobs.size());
  for (const pb::JobRecord* j : jobs) f->Add(*j);
  std::string out;
  f->FinishInto(out);
  return out;
}

namespace {

// What one column or sort key reads of a record, as field numbers.
struct FieldNeeds {
  std::bitset<128> rec, spec;
  bool all = false;  // a column whose reads are not itemised below
  void Rec(std::initializer_list<int> fs) {
    for (int f : fs) rec.set(static_cast<size_t>(f));
  }
  void Spec(std::initializer_list<int> fs) {
    for (int f : fs) spec.set(static_cast<size_t>(f));
  }
};

// Kept in step with Value(), AppendValue() and KeyOf() above: a field they read and this omits
// prints as its default (the squeue projection tests compare projected and full output).
void NeedFieldsOf(int id, FieldNeeds& n) {
  using R = pb::JobRecord;
  using S = pb::JobSpec;
  const std::initializer_list<int> run_seconds = {R::kStartTimeFieldNumber, R::kStateFieldNumber,
                                                  R::kSuspendTimeFieldNumber,
                                                  R::kEndTimeFieldNumber};
  const std::initializer_list<int> array_ids = {R::kJobIdFieldNumber, R::kArrayJobIdFieldNumber,
                                                R::kArrayTaskIdFieldNumber};
  switch (id) {
    case 'a':
      n.Spec({S::kAccountFieldNumber});
      break;
    case 'A':
      n.Rec({R::kJobIdFieldNumber});
      break;
    case 'b':
      n.Spec({S::kGresFieldNumber});
      break;
    case 'B':
      n.Rec({R::kBatchHostFieldNumber});
      break;
    case 'c':
      n.Spec({S::kMinCpusPerNodeFieldNumber, S::kCpusPerTaskFieldNumber,
              S::kNtasksPerNodeFieldNumber});
      break;
    case 'C':
      n.Rec({R::kNumCpusFieldNumber, R::kCpusPerNodeFieldNumber});
      break;
    case 'D':
      n.Rec({R::kStateFieldNumber, R::kNodesFieldNumber, R::kNumNodesFieldNumber});
      break;
    case 'e':
      n.Rec({R::kEndTimeFieldNumber, R::kStateFieldNumber, R::kStartTimeFieldNumber,
             R::kTimeLimitFieldNumber});
      break;
    case 'E':
      n.Spec({S::kDependencyFieldNumber});
      break;
    case 'f':
      n.Spec({S::kConstraintFieldNumber});
      break;
    case 'F':
      n.Rec(array_ids);
      break;
    case 'g':
    case 'G':
      n.Spec({S::kGidFieldNumber});
      break;
    case 'h':
      n.Spec({S::kExclusiveFieldNumber, S::kExclusiveModeFieldNumber});
      break;
    case 'i':
    case 'K':
      n.Rec(array_ids);
      n.Spec({S::kArrayFieldNumber});  // the throttle of a grouped line
      break;
    case 'j':
      n.Spec({S::kNameFieldNumber});
      break;
    case 'k':
      n.Spec({S::kCommentFieldNumber});
      break;
    case 'l':
      n.Rec({R::kTimeLimitFieldNumber});
      break;
    case 'L':
      n.Rec(run_seconds);
      n.Rec({R::kTimeLimitFieldNumber});
      break;
    case 'm':
      n.Spec({S::kMemPerCpuMbFieldNumber, S::kMemPerNodeMbFieldNumber});
      n.Rec({R::kMemPerNodeMbFieldNumber});
      break;
    case 'M':
      n.Rec(run_seconds);
      break;
    case 'n':
      n.Spec({S::kNodelistFieldNumber});
      break;
    case 'N':
      n.Rec({R::kNodesFieldNumber});
      break;
    case 'o':
      n.Spec({S::kCommandFieldNumber});
      break;
    case 'p':
    case 'Q':
      n.Rec({R::kPriorityFieldNumber});
      break;
    case 'P':
      n.Rec({R::kPartitionFieldNumber});
      n.Spec({S::kPartitionFieldNumber});
      break;
    case 'q':
      n.Spec({S::kQosFieldNumber});
      break;
    case 'r':
      n.Rec({R::kStateDescFieldNumber, R::kReasonFieldNumber});
      break;
    case 'R':
      n.Rec({R::kStateFieldNumber, R::kStateDescFieldNumber, R::kReasonFieldNumber,
             R::kCompletingFieldNumber, R::kNodesFieldNumber});
      break;
    case 'S':
      n.Rec({R::kStartTimeFieldNumber});
      break;
    case 't':
    case 'T':
      n.Rec({R::kStateFieldNumber, R::kCompletingFieldNumber, R::kPrologPendingNodesFieldNumber});
      break;
    case 'u':
      n.Spec({S::kUserNameFieldNumber, S::kUidFieldNumber});
      break;
    case 'U':
      n.Spec({S::kUidFieldNumber});
      break;
    case 'v':
      n.Spec({S::kReservationFieldNumber});
      break;
    case 'V':
      n.Rec({R::kSubmitTimeFieldNumber});
      break;
    case 'w':
      n.Spec({S::kWckeyFieldNumber});
      break;
    case 'W':
      n.Spec({S::kLicensesFieldNumber});
      break;
    case 'x':
      n.Spec({S::kExcludeFieldNumber});
      break;
    case 'y':
      n.Spec({S::kNiceFieldNumber});
      break;
    case 'Y':
      n.Rec({R::kSchedNodesFieldNumber});
      break;
    case 'Z':
      n.Spec({S::kWorkDirFieldNumber});
      break;
    case kAccrueTime:
      n.Rec({R::kAccrueTimeFieldNumber});
      break;
    case kContainer:
      n.Spec({S::kContainerFieldNumber});
      break;
    case kAllocNodes:
      n.Spec({S::kSubmitHostFieldNumber});
      break;
    case kAllocSid:
      n.Spec({S::kAllocSidFieldNumber});
      break;
    case kClusterFeature:
      n.Spec({S::kClusterFeaturesFieldNumber});
      break;
    case kCpusPerTask:
      n.Spec({S::kCpusPerTaskFieldNumber});
      break;
    case kDeadline:
      n.Spec({S::kDeadlineFieldNumber});
      break;
    case kDerivedEc:
      n.Rec({R::kDerivedExitStatusFieldNumber});
      break;
    case kEligibleTime:
      n.Rec({R::kEligibleTimeFieldNumber});
      break;
    case kExitCode:
      n.Rec({R::kExitStatusFieldNumber});
      break;
    case kLastSchedEval:
      n.Rec({R::kLastSchedEvalFieldNumber});
      break;
    case kMaxNodes:
      n.Spec({S::kMaxNodesFieldNumber});
      break;
    case kNumTasks:
      n.Rec({R::kNumTasksFieldNumber});
      break;
    case kPendingTime:
      n.Rec({R::kStateFieldNumber, R::kStartTimeFieldNumber, R::kSubmitTimeFieldNumber});
      break;
    case kPreemptTime:
      n.Rec({R::kPreemptTimeFieldNumber});
      break;
    case kRequeue:
      n.Rec({R::kRequeueFieldNumber});
      break;
    case kRestartCnt:
      n.Rec({R::kRestartCountFieldNumber});
      break;
    case kMinTime:
      n.Spec({S::kTimeMinFieldNumber});
      break;
    case kStdErr:
    case kStdIn:
    case kStdOut:
      n.all = true;  // ExpandStdPath reads many fields
      break;
    default:
      break;  // literal text and constant columns read nothing
  }
}

}  // namespace

Result<SqueueFields> SqueueQueryFields(const SqueueFormatOptions& options,
                                       const SqueueFilter& filter) {
  using R = pb::JobRecord;
  using S = pb::JobSpec;
  Result<std::vector<Column>> cols = BuildColumns(options);
  if (!cols.ok()) return cols.status();
  FieldNeeds n;
  // Always: the default state filter, -j, array grouping (by job, partition and reason) and the
  // final tie-break by job id.
  n.Rec({R::kJobIdFieldNumber, R::kStateFieldNumber, R::kCompletingFieldNumber,
         R::kArrayJobIdFieldNumber, R::kArrayTaskIdFieldNumber, R::kPartitionFieldNumber,
         R::kStateDescFieldNumber, R::kReasonFieldNumber});
  n.Spec({S::kPartitionFieldNumber});
  if (!filter.uids.empty()) n.Spec({S::kUidFieldNumber});
  if (!filter.names.empty()) n.Spec({S::kNameFieldNumber});
  if (!filter.accounts.empty()) n.Spec({S::kAccountFieldNumber});
  if (!filter.qos.empty()) n.Spec({S::kQosFieldNumber});
  if (!filter.nodes.empty()) n.Rec({R::kNodesFieldNumber});
  for (const Column& c : *cols) NeedFieldsOf(c.id, n);
  for (const SortKey& k : ParseSort(options.sort.empty() ? std::string_view(kSqueueDefaultSort)
                                                         : std::string_view(options.sort)))
    if (LetterHeader(k.field)) NeedFieldsOf(k.field, n);
  SqueueFields out;
  if (n.all) return out;
  for (uint32_t f = 1; f < n.rec.size(); ++f)
    if (n.rec.test(f)) out.fields.push_back(f);
  for (uint32_t f = 1; f < n.spec.size(); ++f)
    if (n.spec.test(f)) out.spec_fields.push_back(f);
  if (!out.spec_fields.empty()) out.fields.push_back(static_cast<uint32_t>(R::kSpecFieldNumber));
  std::sort(out.fields.begin(), out.fields.end());
  return out;
}

std::string FormatSqueueJson(const std::vector<const pb::JobRecord*>& jobs,
                             const SqueueFormatOptions& options, int64_t now,
                             std::string_view cluster_name) {
  Ctx ctx{&options, now};
  std::string out;
  out.reserve(256 + jobs.size() * 1500);
  out += "{\"jobs\":[";
  bool first = true;
  for (const pb::JobRecord* jp : jobs) {
    const pb::JobRecord& j = *jp;
    const pb::JobSpec& s = j.spec();
    Row row{jp, {}};
    if (!first) out += ',';
    first = false;
    out += '{';
    AppendStr(out, "account", s.account());
    out += ',';
    AppendTime(out, "accrue_time", j.accrue_time());
    out += ',';
    bool array = IsArrayTask(j);
    AppendNoVal(out, "array_job_id", true, array ? j.array_job_id() : 0, false);
    out += ',';
    AppendNoVal(out, "array_task_id", array, array ? j.array_task_id() : 0, false);
    out += ',';
    AppendStr(out, "array_task_string", "");
    out += ',';
    AppendBool(out, "batch_flag", true);
    out += ',';
    AppendStr(out, "batch_host", j.batch_host());
    out += ',';
    AppendStr(out, "cluster", cluster_name);
    out += ',';
    AppendStr(out, "command", s.command());
    out += ',';
    AppendStr(out, "comment", s.comment());
    out += ',';
    AppendNoVal(out, "cpus", true, CpuCount(j), false);
    out += ',';
    AppendNoVal(out, "cpus_per_task", true, s.cpus_per_task() ? s.cpus_per_task() : 1, false);
    out += ',';
    AppendTime(out, "deadline", s.deadline());
    out += ',';
    AppendStr(out, "dependency", s.dependency());
    out += ',';
    AppendExitCode(out, "derived_exit_code", j, j.derived_exit_status());
    out += ',';
    AppendTime(out, "eligible_time", j.eligible_time());
    out += ',';
    AppendTime(out, "end_time", EndTime(j));
    out += ',';
    AppendStr(out, "excluded_nodes", s.exclude());
    out += ',';
    AppendExitCode(out, "exit_code", j, j.exit_status());
    out += ',';
    AppendStr(out, "features", s.constraint());
    out += ',';
    AppendInt(out, "group_id", s.gid());
    out += ',';
    AppendStr(out, "group_name", Value(row, 'g', ctx));
    out += ',';
    AppendBool(out, "hold", j.held());
    out += ',';
    AppendInt(out, "job_id", j.job_id());
    out += ",\"job_state\":[";
    out += fmt::JsonString(JobStateName(j.state()));
    if (j.completing()) out += ",\"COMPLETING\"";
    out += "],";
    AppendTime(out, "last_sched_evaluation", j.last_sched_eval());
    out += ',';
    AppendStr(out, "licenses", s.licenses());
    out += ',';
    AppendStr(out, "name", s.name());
    out += ',';
    AppendStr(out, "nodes", NodeList(j));
    out += ',';
    AppendInt(out, "nice", s.nice());
    out += ',';
    AppendNoVal(out, "node_count", true, NodeCount(j), false);
    out += ',';
    AppendNoVal(out, "tasks", true, j.num_tasks() ? j.num_tasks() : 1, false);
    out += ',';
    AppendStr(out, "partition", PartitionOf(j));
    out += ',';
    AppendNoVal(out, "memory_per_cpu", s.mem_per_cpu_mb() != 0, s.mem_per_cpu_mb(), false);
    out += ',';
    uint64_t mpn = s.mem_per_node_mb() ? s.mem_per_node_mb() : j.mem_per_node_mb();
    AppendNoVal(out, "memory_per_node", s.mem_per_cpu_mb() == 0, mpn, false);
    out += ',';
    AppendNoVal(out, "minimum_cpus_per_node", true, MinCpus(j), false);
    out += ',';
    AppendTime(out, "preempt_time", j.preempt_time());
    out += ',';
    AppendNoVal(out, "priority", true, j.priority(), false);
    out += ',';
    AppendStr(out, "qos", s.qos());
    out += ',';
    AppendStr(out, "required_nodes", s.nodelist());
    out += ',';
    AppendBool(out, "requeue", j.requeue());
    out += ',';
    AppendInt(out, "restart_cnt", j.restart_count());
    out += ',';
    AppendStr(out, "resv_name", s.reservation());
    out += ',';
    AppendTime(out, "start_time", j.start_time());
    out += ',';
    AppendStr(out, "state_description", j.state_desc());
    out += ',';
    AppendStr(out, "state_reason", j.reason().empty() ? "None" : j.reason());
    out += ',';
    AppendStr(out, "standard_input", ExpandStdPath(j, StdStream::kIn, UserOf(j, ctx)));
    out += ',';
    AppendStr(out, "standard_output", ExpandStdPath(j, StdStream::kOut, UserOf(j, ctx)));
    out += ',';
    AppendStr(out, "standard_error", ExpandStdPath(j, StdStream::kErr, UserOf(j, ctx)));
    out += ',';
    AppendTime(out, "submit_time", j.submit_time());
    out += ',';
    AppendTime(out, "suspend_time", j.suspend_time());
    out += ',';
    AppendLimit(out, "time_limit", j.time_limit());
    out += ',';
    AppendStr(out, "tres_per_node", s.gres().empty() ? "" : "gres:" + s.gres());
    out += ',';
    AppendInt(out, "user_id", s.uid());
    out += ',';
    AppendStr(out, "user_name", UserOf(j, ctx));
    out += ',';
    AppendStr(out, "wckey", s.wckey());
    out += ',';
    AppendStr(out, "current_working_directory", s.work_dir());
    out += '}';
  }
  out += "],";
  AppendNoVal(out, "last_backfill", false, 0, false);
  out += ',';
  AppendTime(out, "last_update", now);
  out +=
      ",\"meta\":{\"plugin\":{\"type\":\"\",\"name\":\"\",\"data_parser\":\"data_parser/"
      "v0.0.44\",\"accounting_storage\":\"\"},\"command\":[\"squeue\"],\"slurm\":{"
      "\"version\":{\"major\":\"22\",\"micro\":\"8\",\"minor\":\"05\"},\"release\":"
      "\"22.05.8\",";
  AppendStr(out, "cluster", cluster_name);
  out += "}},\"errors\":[],\"warnings\":[]}\n";
  return out;
}

}  // namespace shoal::cli
