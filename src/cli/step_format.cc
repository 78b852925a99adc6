#include "cli/step_format.h"

#include <algorithm>
#include <unordered_map>

#include "cli/format_fields.h"
#include "cli/scontrol_format.h"
#include "common/hostlist.h"
#include "common/states.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

bool IsArrayTask(const pb::JobRecord* job) {
  return job && job->array_job_id() != 0 && job->array_task_id() != kNoArrayTask;
}

bool IsSpecialStep(uint32_t step_id) { return step_id >= kInteractiveStepId; }

bool ParseU32(std::string_view s, uint32_t* out) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 0xffffffffull) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

std::string UserOf(const StepRef& r, const SqueueStepOptions& o) {
  uint32_t uid = r.job ? r.job->spec().uid() : r.step->uid();
  if (r.job && !r.job->spec().user_name().empty()) return r.job->spec().user_name();
  if (o.user_name) {
    std::string n = o.user_name(uid);
    if (!n.empty()) return n;
  }
  return std::to_string(uid);
}

std::string PartitionOf(const StepRef& r) {
  if (!r.step->partition().empty()) return r.step->partition();
  if (r.job) return !r.job->partition().empty() ? r.job->partition() : r.job->spec().partition();
  return "";
}

uint32_t TasksOf(const pb::StepRecord& s) {
  if (s.num_tasks() != 0) return s.num_tasks();
  uint32_t n = 0;
  for (uint32_t t : s.tasks_per_node()) n += t;
  return n;
}

// Value of "key=" in a TRES string ("cpu=4,mem=1G,node=2"), or "" when absent.
std::string TresValue(std::string_view tres, std::string_view key) {
  for (const std::string& item : fmt::SplitList(tres, ',')) {
    auto eq = item.find('=');
    if (eq != std::string::npos && std::string_view(item).substr(0, eq) == key)
      return item.substr(eq + 1);
  }
  return "";
}

// CPUs of a step as Slurm counts them: 0 for the batch and extern steps; else the TRES cpu count
// (which an --overlap step has although it holds none), else what it holds.
uint32_t CpusOf(const pb::StepRecord& s) {
  if (s.step_id() == kBatchStepId || s.step_id() == kExternStepId) return 0;
  uint32_t cpus = 0;
  if (ParseU32(TresValue(s.tres(), "cpu"), &cpus)) return cpus;
  for (uint32_t c : s.cpus_per_node()) cpus += c;
  if (cpus == 0) cpus = TasksOf(s) * std::max<uint32_t>(s.cpus_per_task(), 1);
  return cpus;
}

// "cpu=2,mem=0,node=2" (then any other TRES the record names); "(null)" for batch/extern.
std::string TresOf(const pb::StepRecord& s) {
  if (s.step_id() == kBatchStepId || s.step_id() == kExternStepId) return "(null)";
  std::string mem = TresValue(s.tres(), "mem");
  if (mem.empty()) {
    uint64_t mb = s.mem_per_node_mb() * static_cast<uint64_t>(s.nodes_size());
    mem = mb == 0 ? "0" : FormatTresMemory(mb);
  }
  std::string out = "cpu=" + std::to_string(CpusOf(s)) + ",mem=" + mem +
                    ",node=" + std::to_string(s.nodes_size());
  for (const std::string& item : fmt::SplitList(s.tres(), ',')) {
    std::string key = item.substr(0, item.find('='));
    if (key != "cpu" && key != "mem" && key != "node") out += "," + item;
  }
  return out;
}

std::string NodeListOf(const pb::StepRecord& s) {
  std::vector<std::string> nodes(s.nodes().begin(), s.nodes().end());
  return CompressHostlist(nodes);
}

int64_t ElapsedOf(const pb::StepRecord& s, int64_t now) {
  if (s.start_time() <= 0) return 0;
  int64_t end = s.end_time() > 0 && s.end_time() < now ? s.end_time() : now;
  return end - s.start_time();
}

// Sort rank of a step id within a job for scontrol: extern, batch, interactive, then numeric.
uint64_t ScontrolRank(uint32_t step_id) {
  switch (step_id) {
    case kExternStepId:
      return 0;
    case kBatchStepId:
      return 1;
    case kInteractiveStepId:
      return 2;
    default:
      return 3 + static_cast<uint64_t>(step_id);
  }
}

// ---- squeue -s columns -----------------------------------------------------------------------

enum class Field {
  kStepId,
  kName,
  kPartition,
  kUser,
  kUid,
  kTimeUsed,
  kNodes,
  kTimeLimit,
  kStartTime,
  kTasks,
  kTres,
  kCpus,
  kState,
  kLiteral,  // an unknown letter, printed as written
};

struct Column {
  Field field = Field::kLiteral;
  int width = 0;
  bool right = false;
  std::string prefix;  // literal text before the first field (only on the first column)
  std::string suffix;
  std::string literal;  // kLiteral: "%a"
};

std::optional<Field> LetterField(char c) {
  switch (c) {
    case 'i':
      return Field::kStepId;
    case 'j':
      return Field::kName;
    case 'P':
      return Field::kPartition;
    case 'u':
      return Field::kUser;
    case 'U':
      return Field::kUid;
    case 'M':
      return Field::kTimeUsed;
    case 'N':
      return Field::kNodes;
    case 'l':
      return Field::kTimeLimit;
    case 'S':
      return Field::kStartTime;
    case 'A':
      return Field::kTasks;
    case 'b':
      return Field::kTres;
    default:
      return std::nullopt;
  }
}

std::optional<Field> NameField(std::string_view name) {
  static const std::pair<const char*, Field> kNames[] = {
      {"stepid", Field::kStepId},       {"stepname", Field::kName},
      {"name", Field::kName},           {"partition", Field::kPartition},
      {"username", Field::kUser},       {"userid", Field::kUid},
      {"timeused", Field::kTimeUsed},   {"timelimit", Field::kTimeLimit},
      {"starttime", Field::kStartTime}, {"numtasks", Field::kTasks},
      {"numcpus", Field::kCpus},        {"stepstate", Field::kState},
      {"nodes", Field::kNodes},         {"nodelist", Field::kNodes},
      {"trespertask", Field::kTres},    {"tresperjob", Field::kTres},
  };
  std::string lower = fmt::Lower(name);
  for (const auto& [n, f] : kNames)
    if (lower == n) return f;
  return std::nullopt;
}

const char* Header(Field f) {
  switch (f) {
    case Field::kStepId:
      return "STEPID";
    case Field::kName:
      return "NAME";
    case Field::kPartition:
      return "PARTITION";
    case Field::kUser:
      return "USER";
    case Field::kUid:
      return "UID";
    case Field::kTimeUsed:
      return "TIME";
    case Field::kNodes:
      return "NODELIST";
    case Field::kTimeLimit:
      return "TIME_LIMIT";
    case Field::kStartTime:
      return "START_TIME";
    case Field::kTasks:
      return "TASKS";
    case Field::kTres:
      return "TRES_PER_JOB";
    case Field::kCpus:
      return "NUM_CPUS";
    case Field::kState:
      return "STATE";
    case Field::kLiteral:
      return "";
  }
  return "";
}

std::string Value(Field f, const StepRef& r, const SqueueStepOptions& o, int64_t now) {
  const pb::StepRecord& s = *r.step;
  switch (f) {
    case Field::kStepId:
      return StepIdString(s, r.job);
    case Field::kName:
      return s.name();
    case Field::kPartition:
      return PartitionOf(r);
    case Field::kUser:
      return UserOf(r, o);
    case Field::kUid:
      return std::to_string(r.job ? r.job->spec().uid() : s.uid());
    case Field::kTimeUsed:
      return FormatElapsed(ElapsedOf(s, now));
    case Field::kNodes:
      return NodeListOf(s);
    case Field::kTimeLimit:
      return FormatTimeLimit(s.time_limit() == 0 ? kTimeInfinite : s.time_limit());
    case Field::kStartTime:
      return FormatTimestamp(s.start_time());
    case Field::kTasks:
      return std::to_string(TasksOf(s));
    case Field::kTres:
      return s.gres().empty() ? "(null)" : s.gres();
    case Field::kCpus:
      return std::to_string(CpusOf(s));
    case Field::kState:
      return JobStateName(s.state());
    case Field::kLiteral:
      return "";
  }
  return "";
}

void AppendColumn(std::string& out, const Column& c, std::string_view value) {
  out += c.prefix;
  if (c.field == Field::kLiteral) {
    out += c.literal;
  } else if (c.field == Field::kNodes && static_cast<int>(value.size()) > c.width) {
    out.append(value);  // squeue never cuts a step's node list
  } else {
    fmt::AppendField(out, value, c.width, c.right);
  }
  out += c.suffix;
}

std::vector<Column> PercentColumns(std::string_view format, std::vector<std::string>& errors) {
  std::vector<Column> cols;
  std::string pending_prefix;
  for (const fmt::FieldSpec& f : fmt::ParsePercentFormat(format)) {
    if (f.code == 0) {  // text before the first field
      pending_prefix += f.suffix;
      continue;
    }
    Column c;
    c.width = f.width;
    c.right = f.right;
    c.suffix = f.suffix;
    c.prefix = std::move(pending_prefix);
    pending_prefix.clear();
    if (auto field = LetterField(f.code)) {
      c.field = *field;
    } else {
      errors.push_back(std::string("Invalid job step format specification: ") + f.code);
      c.literal = "%";
      if (f.right) c.literal += '.';
      if (f.width > 0) c.literal += std::to_string(f.width);
      c.literal += f.code;
    }
    cols.push_back(std::move(c));
  }
  if (!pending_prefix.empty()) {  // a format without any field
    Column c;
    c.literal = pending_prefix;
    cols.push_back(std::move(c));
  }
  return cols;
}

std::vector<Column> LongColumns(std::string_view format, std::vector<std::string>& errors) {
  std::vector<Column> cols;
  for (const fmt::FieldSpec& f : fmt::ParseLongFormat(format)) {
    auto field = NameField(f.name);
    if (!field) {
      errors.push_back("Invalid job step format specification: " + f.name);
      continue;  // Slurm drops the column
    }
    Column c;
    c.field = *field;
    c.width = f.width;
    c.right = f.right;
    c.suffix = f.suffix;
    cols.push_back(std::move(c));
  }
  return cols;
}

}  // namespace

std::string StepIdSuffix(uint32_t step_id) {
  switch (step_id) {
    case kBatchStepId:
      return "batch";
    case kExternStepId:
      return "extern";
    case kInteractiveStepId:
      return "interactive";
    case kPendingStepId:
      return "TBD";
    default:
      return std::to_string(step_id);
  }
}

std::string StepIdString(const pb::StepRecord& step, const pb::JobRecord* job) {
  std::string id;
  if (IsArrayTask(job)) {
    id = std::to_string(job->array_job_id()) + "_" + std::to_string(job->array_task_id());
  } else {
    id = std::to_string(job ? job->job_id() : step.job_id());
  }
  return id + "." + StepIdSuffix(step.step_id());
}

Result<StepIdSpec> ParseStepId(std::string_view text) {
  auto bad = [&] { return InvalidArgument("Invalid job step id: " + std::string(text)); };
  StepIdSpec spec;
  size_t dot = text.find('.');
  std::string_view job = text.substr(0, dot);
  size_t us = job.find('_');
  if (!ParseU32(job.substr(0, us), &spec.job_id) || spec.job_id == 0) return bad();
  if (us != std::string_view::npos) {
    uint32_t task = 0;
    if (!ParseU32(job.substr(us + 1), &task)) return bad();
    spec.array_task = task;
  }
  if (dot == std::string_view::npos) return spec;
  std::string_view step = text.substr(dot + 1);
  std::string lower = fmt::Lower(step);
  uint32_t id = 0;
  if (lower == "batch") {
    spec.step_id = kBatchStepId;
  } else if (lower == "extern") {
    spec.step_id = kExternStepId;
  } else if (lower == "interactive") {
    spec.step_id = kInteractiveStepId;
  } else if (ParseU32(step, &id) && id < kInteractiveStepId) {
    spec.step_id = id;
  } else {
    return bad();
  }
  return spec;
}

Result<std::vector<StepIdSpec>> ParseSqueueStepList(std::string_view text) {
  std::vector<StepIdSpec> out;
  for (const std::string& item : fmt::SplitList(text, ',')) {
    auto spec = ParseStepId(item);
    if (!spec.ok()) return InvalidArgument("Invalid job_step id: " + item);
    if (!spec->step_id) return InvalidArgument("Invalid job_step id: " + item + ".??");
    out.push_back(*spec);
  }
  return out;
}

bool StepMatchesSpec(const pb::StepRecord& step, const pb::JobRecord* job, const StepIdSpec& spec) {
  uint32_t job_id = job ? job->job_id() : step.job_id();
  if (spec.array_task) {
    if (!IsArrayTask(job) || job->array_job_id() != spec.job_id ||
        job->array_task_id() != *spec.array_task)
      return false;
  } else if (job_id != spec.job_id) {
    return false;
  }
  return !spec.step_id || *spec.step_id == step.step_id();
}

bool StepMatches(const pb::StepRecord& step, const pb::JobRecord* job, const StepFilter& f) {
  if (!f.steps.empty() && std::none_of(f.steps.begin(), f.steps.end(), [&](const StepIdSpec& s) {
        return StepMatchesSpec(step, job, s);
      }))
    return false;
  if (!f.jobs.empty()) {
    uint32_t job_id = job ? job->job_id() : step.job_id();
    bool any = std::any_of(f.jobs.begin(), f.jobs.end(), [&](const JobIdSpec& id) {
      if (id.task)
        return IsArrayTask(job) && job->array_job_id() == id.job_id &&
               job->array_task_id() == *id.task;
      return job_id == id.job_id || (IsArrayTask(job) && job->array_job_id() == id.job_id);
    });
    if (!any) return false;
  }
  if (!f.uids.empty()) {
    uint32_t uid = job ? job->spec().uid() : step.uid();
    if (std::find(f.uids.begin(), f.uids.end(), uid) == f.uids.end()) return false;
  }
  if (!f.partitions.empty()) {
    std::string part = PartitionOf(StepRef{&step, job});
    if (std::find(f.partitions.begin(), f.partitions.end(), part) == f.partitions.end())
      return false;
  }
  return true;
}

std::vector<StepRef> CollectSteps(const pb::StepQueryResponse& resp) {
  std::unordered_map<uint32_t, const pb::JobRecord*> jobs;
  for (const pb::JobRecord& j : resp.jobs()) jobs.emplace(j.job_id(), &j);
  std::vector<StepRef> out;
  out.reserve(static_cast<size_t>(resp.steps_size()));
  for (const pb::StepRecord& s : resp.steps()) {
    auto it = jobs.find(s.job_id());
    out.push_back({&s, it == jobs.end() ? nullptr : it->second});
  }
  return out;
}

StepListing FormatSqueueSteps(std::vector<StepRef> steps, const SqueueStepOptions& options,
                              int64_t now) {
  StepListing out;
  std::vector<Column> cols;
  if (!options.format.empty() || options.long_format.empty()) {
    std::string format = options.format.empty() ? kSqueueStepFormat : options.format;
    if (format == "%all") format = "%b|%i|%j|%l|%u|%A|%M|%N|%P|%S|%U|";
    cols = PercentColumns(format, out.errors);
  } else {
    cols = LongColumns(options.long_format, out.errors);
  }

  std::stable_sort(steps.begin(), steps.end(), [](const StepRef& a, const StepRef& b) {
    std::string pa = PartitionOf(a), pb = PartitionOf(b);
    if (pa != pb) return pa < pb;
    uint32_t ja = a.job ? a.job->job_id() : a.step->job_id();
    uint32_t jb = b.job ? b.job->job_id() : b.step->job_id();
    if (ja != jb) return ja < jb;
    return a.step->step_id() < b.step->step_id();
  });

  if (!options.no_header) {
    for (const Column& c : cols) AppendColumn(out.text, c, Header(c.field));
    out.text += '\n';
  }
  for (const StepRef& r : steps) {
    for (const Column& c : cols)
      AppendColumn(out.text, c, c.field == Field::kLiteral ? "" : Value(c.field, r, options, now));
    out.text += '\n';
  }
  return out;
}

void SortStepsForScontrol(std::vector<StepRef>& steps) {
  std::stable_sort(steps.begin(), steps.end(), [](const StepRef& a, const StepRef& b) {
    uint32_t ja = a.job ? a.job->job_id() : a.step->job_id();
    uint32_t jb = b.job ? b.job->job_id() : b.step->job_id();
    if (ja != jb) return ja < jb;
    return ScontrolRank(a.step->step_id()) < ScontrolRank(b.step->step_id());
  });
}

std::string FormatStepRecord(const pb::StepRecord& s, const pb::JobRecord* job, bool one_liner) {
  const std::string sep = one_liner ? " " : "\n   ";
  uint32_t uid = job ? job->spec().uid() : s.uid();
  uint32_t limit = s.time_limit() == 0 ? kTimeInfinite : s.time_limit();
  std::string part = PartitionOf(StepRef{&s, job});
  std::string out;
  out += "StepId=" + StepIdString(s, job) + " UserId=" + std::to_string(uid) +
         " StartTime=" + FormatTimestamp(s.start_time()) +
         " TimeLimit=" + FormatLimitMinutes(limit, "UNLIMITED");
  out += sep + "State=" + JobStateName(s.state()) +
         " Partition=" + (part.empty() ? "(null)" : part) + " NodeList=" + NodeListOf(s);
  out += sep + "Nodes=" + std::to_string(s.nodes_size()) + " CPUs=" + std::to_string(CpusOf(s)) +
         " Tasks=" + std::to_string(TasksOf(s)) + " Name=" + s.name() + " Network=(null)";
  out += sep + "TRES=" + TresOf(s);
  out += sep + "ResvPorts=(null)";
  out += sep + "CPUFreqReq=Default";
  if (!IsSpecialStep(s.step_id()))
    out += TasksOf(s) > static_cast<uint32_t>(s.nodes_size()) ? " Dist=Block" : " Dist=Cyclic";
  out += sep + "SrunHost:Pid=" + (s.srun_host().empty() ? "(null)" : s.srun_host()) + ":" +
         std::to_string(s.srun_pid());
  out += one_liner ? "\n" : "\n\n";
  return out;
}

std::string StepNotFoundMessage(const StepIdSpec& spec) {
  std::string job = std::to_string(spec.job_id);
  if (spec.array_task) job += "_" + std::to_string(*spec.array_task);
  return "Job step " + job + "." + (spec.step_id ? StepIdSuffix(*spec.step_id) : "") + " not found";
}

}  // namespace shoal::cli
