#include "common/prolog_epilog.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "common/hostlist.h"
#include "common/units.h"

namespace shoal {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string> SplitCommas(std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    size_t end = comma == std::string_view::npos ? text.size() : comma;
    std::string_view item = Trim(text.substr(pos, end - pos));
    if (!item.empty()) out.push_back(Lower(item));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace

Result<PrologFlags> ParsePrologFlags(std::string_view text) {
  PrologFlags f;
  for (const std::string& item : SplitCommas(text)) {
    if (item == "alloc") {
      f.alloc = true;
    } else if (item == "contain") {
      f.contain = f.alloc = true;
    } else if (item == "nohold") {
      f.nohold = true;
    } else if (item == "serial") {
      f.serial = true;
    } else if (item == "x11") {
      f.x11 = f.alloc = f.contain = true;
    } else if (item == "runinjob") {
      f.run_in_job = f.alloc = f.contain = true;
    } else if (item == "deferbatch") {
      f.defer_batch = true;
    } else if (item == "forcerequeueonfail") {
      // Accepted: requeue on prolog failure is what happens here for batch jobs anyway.
    } else if (item == "none") {
    } else {
      return Error(ErrorCode::kInvalidArgument, "Invalid PrologFlags: " + item);
    }
  }
  return f;
}

Result<HealthCheckStates> ParseHealthCheckNodeState(std::string_view text) {
  HealthCheckStates s;
  std::vector<std::string> items = SplitCommas(text);
  if (items.empty()) items.push_back("any");
  bool any_state = false;
  for (const std::string& item : items) {
    if (item == "any") {
      s.idle = s.alloc = s.mixed = true;
      any_state = true;
    } else if (item == "idle") {
      s.idle = any_state = true;
    } else if (item == "alloc") {
      s.alloc = any_state = true;
    } else if (item == "mixed") {
      s.mixed = any_state = true;
    } else if (item == "nondrained_idle") {
      s.nondrained_idle = any_state = true;
    } else if (item == "cycle") {
      s.cycle = true;
    } else if (item == "start_only") {
      s.start_only = true;
    } else {
      return Error(ErrorCode::kInvalidArgument, "Invalid HealthCheckNodeState: " + item);
    }
  }
  // Only CYCLE or START_ONLY given: any state, as Slurm's default.
  if (!any_state) s.idle = s.alloc = s.mixed = true;
  return s;
}

bool HealthCheckShouldRun(const HealthCheckStates& s, const NodeStateForHealth& n, bool at_start) {
  if (at_start) return true;
  if (s.start_only) return false;
  if (n.idle && (s.idle || (s.nondrained_idle && !n.drain))) return true;
  if (n.alloc && s.alloc) return true;
  if (n.mixed && s.mixed) return true;
  return false;
}

std::string FirstLineTrimmed(std::string_view output, std::string_view fallback) {
  size_t pos = 0;
  while (pos < output.size()) {
    size_t nl = output.find('\n', pos);
    size_t end = nl == std::string_view::npos ? output.size() : nl;
    std::string_view line = Trim(output.substr(pos, end - pos));
    if (!line.empty()) return std::string(line);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return std::string(fallback);
}

TaskPrologOutput ParseTaskPrologOutput(std::string_view text) {
  TaskPrologOutput out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(pos, end - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view t = line;
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    if (t.rfind("export ", 0) == 0) {
      std::string_view kv = Trim(t.substr(7));
      size_t eq = kv.find('=');
      if (eq == std::string_view::npos || eq == 0) continue;
      out.exports.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
    } else if (t.rfind("unset ", 0) == 0) {
      std::string_view name = Trim(t.substr(6));
      if (!name.empty()) out.unsets.emplace_back(name);
    } else if (t.rfind("print ", 0) == 0) {
      out.print.append(t.substr(6));
      out.print.push_back('\n');
    }
  }
  return out;
}

void ApplyTaskPrologOutput(std::string_view text, std::vector<std::string>* env) {
  auto remove = [env](const std::string& name) {
    std::string prefix = name + "=";
    env->erase(std::remove_if(env->begin(), env->end(),
                              [&](const std::string& e) { return e.rfind(prefix, 0) == 0; }),
               env->end());
  };
  // Lines act in order: "export A=1" then "unset A" leaves A unset.
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    TaskPrologOutput one = ParseTaskPrologOutput(text.substr(pos, end - pos));
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    for (auto& [k, v] : one.exports) {
      remove(k);
      env->push_back(k + "=" + v);
    }
    for (auto& name : one.unsets) remove(name);
  }
}

std::string LowCpusReason(uint32_t, uint32_t) { return "Low CPUs"; }

std::string LowMemoryReason(uint64_t reported_mb, uint64_t configured_mb) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "Low RealMemory (reported:%llu < %.2f%% of configured:%llu)",
                static_cast<unsigned long long>(reported_mb), 100.0,
                static_cast<unsigned long long>(configured_mb));
  return buf;
}

std::string LowTmpDiskReason(uint64_t, uint64_t) { return "Low TmpDisk"; }

std::string LowGresReason(std::string_view name, uint64_t reported, uint64_t configured) {
  return "gres/" + std::string(name) + " count reported lower than configured (" +
         std::to_string(reported) + " < " + std::to_string(configured) + ")";
}

std::vector<std::string> BuildScriptEnv(const ScriptJobInfo& j, std::string_view context) {
  std::vector<std::string> env;
  auto add = [&](const char* k, const std::string& v) { env.push_back(std::string(k) + "=" + v); };
  std::string id = std::to_string(j.job_id);
  bool node_side = context == "prolog_slurmd" || context == "epilog_slurmd";
  add("SLURM_SCRIPT_CONTEXT", std::string(context));
  add("SLURM_JOB_ID", id);
  add("SLURM_JOBID", id);
  add("SLURM_JOB_UID", std::to_string(j.uid));
  add("SLURM_JOB_GID", std::to_string(j.gid));
  add("SLURM_JOB_USER", j.user);
  add("SLURM_UID", std::to_string(j.uid));
  add("SLURM_JOB_NAME", j.job_name);
  add("SLURM_JOB_PARTITION", j.partition);
  add("SLURM_JOB_ACCOUNT", j.account);
  add("SLURM_JOB_NODELIST", j.nodelist);
  add("SLURM_NODELIST", j.nodelist);
  add("SLURM_CLUSTER_NAME", j.cluster);
  add("SLURM_JOB_CONSTRAINTS", j.constraints);
  if (!j.work_dir.empty()) add("SLURM_JOB_WORK_DIR", j.work_dir);
  if (!j.std_out.empty()) add("SLURM_JOB_STDOUT", j.std_out);
  if (!j.std_err.empty()) add("SLURM_JOB_STDERR", j.std_err);
  if (!j.comment.empty()) add("SLURM_JOB_COMMENT", j.comment);
  if (!j.reservation.empty()) add("SLURM_JOB_RESERVATION", j.reservation);
  if (!j.qos.empty()) add("SLURM_JOB_QOS", j.qos);
  if (j.is_array) {
    add("SLURM_ARRAY_JOB_ID", std::to_string(j.array_job_id));
    add("SLURM_ARRAY_TASK_ID", std::to_string(j.array_task_id));
  }
  if (node_side) {
    add("SLURMD_NODENAME", j.node_name);
    if (!j.gpus.empty()) {
      add("CUDA_VISIBLE_DEVICES", j.gpus);
      add("SLURM_JOB_GPUS", j.gpus);
    }
  } else {
    if (!j.gpus.empty()) add("SLURM_JOB_GPUS", j.gpus);
    if (j.exit_code >= 0) {
      add("SLURM_JOB_EXIT_CODE", std::to_string(j.exit_code));
      add("SLURM_JOB_EXIT_CODE2", j.derived_ec);
    }
  }
  return env;
}

ScriptJobInfo ScriptInfoFromJob(const pb::JobRecord& job, const std::string& node_name,
                                const std::string& cluster) {
  const pb::JobSpec& s = job.spec();
  ScriptJobInfo j;
  j.job_id = job.job_id();
  j.job_name = s.name();
  j.user = s.user_name();
  j.uid = s.uid();
  j.gid = s.gid();
  j.account = s.account();
  j.qos = s.qos();
  j.partition = job.partition();
  std::vector<std::string> nodes(job.nodes().begin(), job.nodes().end());
  j.nodelist = CompressHostlist(nodes);
  j.constraints = s.constraint();
  j.cluster = cluster;
  j.work_dir = s.work_dir();
  j.std_out = s.std_out();
  j.std_err = s.std_err();
  j.comment = s.comment();
  j.reservation = job.reservation();
  if (job.array_task_id() != kNoArrayTask && job.array_job_id() != 0) {
    j.is_array = true;
    j.array_job_id = job.array_job_id();
    j.array_task_id = job.array_task_id();
  }
  j.node_name = node_name;
  int pos = -1;
  for (int i = 0; i < job.nodes_size(); ++i)
    if (job.nodes(i) == node_name) pos = i;
  std::string gpus;
  for (const auto& d : job.gres_devices()) {
    if (d.name() != "gpu" || (pos >= 0 && static_cast<int>(d.node_pos()) != pos)) continue;
    for (uint32_t idx : d.indexes()) {
      if (!gpus.empty()) gpus += ",";
      gpus += std::to_string(idx);
    }
  }
  j.gpus = gpus;
  return j;
}

}  // namespace shoal
