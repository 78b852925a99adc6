#include "noded/job_env.h"

#include <unordered_map>

#include "common/hostlist.h"

namespace shoal::noded {
namespace {

constexpr uint32_t kNoArrayTaskId = 0xfffffffe;
constexpr uint32_t kNoTimeVal = 0xfffffffe;
constexpr uint32_t kInfiniteTime = 0xffffffff;

// Insertion-ordered environment with unique keys.
class EnvBuilder {
 public:
  void Set(std::string_view key, std::string_view value) {
    std::string entry;
    entry.reserve(key.size() + 1 + value.size());
    entry.append(key).push_back('=');
    entry.append(value);
    auto it = index_.find(std::string(key));
    if (it != index_.end()) {
      entries_[it->second] = std::move(entry);
    } else {
      index_.emplace(std::string(key), entries_.size());
      entries_.push_back(std::move(entry));
    }
  }
  void SetEntry(const std::string& entry) {
    auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) return;  // not KEY=VALUE: dropped
    Set(std::string_view(entry).substr(0, eq), std::string_view(entry).substr(eq + 1));
  }
  void SetIfUnset(std::string_view key, std::string_view value) {
    if (!Has(key)) Set(key, value);
  }
  bool Has(std::string_view key) const { return index_.count(std::string(key)) != 0; }
  std::vector<std::string> Take() { return std::move(entries_); }

 private:
  std::vector<std::string> entries_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace

std::string CompressCounts(const std::vector<uint32_t>& counts) {
  std::string out;
  size_t i = 0;
  while (i < counts.size()) {
    size_t j = i;
    while (j < counts.size() && counts[j] == counts[i]) ++j;
    if (!out.empty()) out.push_back(',');
    out += std::to_string(counts[i]);
    if (j - i > 1) out += "(x" + std::to_string(j - i) + ")";
    i = j;
  }
  return out;
}

uint32_t NodeIndex(const pb::JobRecord& job, std::string_view node) {
  for (int i = 0; i < job.nodes_size(); ++i)
    if (job.nodes(i) == node) return static_cast<uint32_t>(i);
  return 0;
}

std::vector<std::string> BuildJobEnvironment(const pb::LaunchBatchRequest& launch,
                                             const NodeEnvInfo& info) {
  const pb::JobRecord& job = launch.job();
  const pb::JobSpec& spec = job.spec();
  EnvBuilder env;

  // 1. The submitted environment.
  for (const auto& entry : spec.environment()) env.SetEntry(entry);

  // 2. Job-level variables derived from the record.
  std::string id = std::to_string(job.job_id());
  env.Set("SLURM_JOB_ID", id);
  env.Set("SLURM_JOBID", id);
  env.Set("SLURM_JOB_NAME", spec.name());
  std::vector<std::string> nodes(job.nodes().begin(), job.nodes().end());
  if (nodes.empty() && !info.node_name.empty()) nodes.push_back(info.node_name);
  std::string nodelist = CompressHostlist(nodes);
  env.Set("SLURM_JOB_NODELIST", nodelist);
  env.Set("SLURM_NODELIST", nodelist);
  env.Set("SLURM_JOB_NUM_NODES", std::to_string(nodes.size()));
  env.Set("SLURM_NNODES", std::to_string(nodes.size()));
  if (job.cpus_per_node_size() > 0) {
    std::vector<uint32_t> cpus(job.cpus_per_node().begin(), job.cpus_per_node().end());
    env.Set("SLURM_JOB_CPUS_PER_NODE", CompressCounts(cpus));
  }
  env.Set("SLURM_JOB_UID", std::to_string(spec.uid()));
  env.Set("SLURM_JOB_GID", std::to_string(spec.gid()));
  const std::string& user = !info.user_name.empty() ? info.user_name : spec.user_name();
  if (!user.empty()) env.Set("SLURM_JOB_USER", user);
  std::string partition = !job.partition().empty() ? job.partition() : spec.partition();
  if (!partition.empty()) env.Set("SLURM_JOB_PARTITION", partition);
  if (!spec.account().empty()) env.Set("SLURM_JOB_ACCOUNT", spec.account());
  if (!spec.qos().empty()) env.Set("SLURM_JOB_QOS", spec.qos());
  if (!spec.reservation().empty()) env.Set("SLURM_JOB_RESERVATION", spec.reservation());
  if (!spec.dependency().empty()) env.Set("SLURM_JOB_DEPENDENCY", spec.dependency());
  if (!spec.submit_dir().empty()) env.Set("SLURM_SUBMIT_DIR", spec.submit_dir());
  if (!spec.submit_host().empty()) env.Set("SLURM_SUBMIT_HOST", spec.submit_host());
  if (!info.cluster_name.empty()) env.Set("SLURM_CLUSTER_NAME", info.cluster_name);
  if (job.array_job_id() != 0 && job.array_task_id() != kNoArrayTaskId) {
    env.Set("SLURM_ARRAY_JOB_ID", std::to_string(job.array_job_id()));
    env.Set("SLURM_ARRAY_TASK_ID", std::to_string(job.array_task_id()));
  }
  if (spec.num_tasks() != 0) {
    env.Set("SLURM_NTASKS", std::to_string(spec.num_tasks()));
    env.Set("SLURM_NPROCS", std::to_string(spec.num_tasks()));
  }
  if (spec.cpus_per_task() != 0)
    env.Set("SLURM_CPUS_PER_TASK", std::to_string(spec.cpus_per_task()));
  if (spec.ntasks_per_node() != 0)
    env.Set("SLURM_NTASKS_PER_NODE", std::to_string(spec.ntasks_per_node()));
  if (spec.mem_per_node_mb() != 0)
    env.Set("SLURM_MEM_PER_NODE", std::to_string(spec.mem_per_node_mb()));
  if (spec.mem_per_cpu_mb() != 0)
    env.Set("SLURM_MEM_PER_CPU", std::to_string(spec.mem_per_cpu_mb()));
  if (spec.overcommit()) env.Set("SLURM_OVERCOMMIT", "1");
  if (job.restart_count() != 0) env.Set("SLURM_RESTART_COUNT", std::to_string(job.restart_count()));
  if (job.start_time() != 0) {
    env.Set("SLURM_JOB_START_TIME", std::to_string(job.start_time()));
    if (job.time_limit() != kNoTimeVal && job.time_limit() != kInfiniteTime)
      env.Set("SLURM_JOB_END_TIME",
              std::to_string(job.start_time() + int64_t{job.time_limit()} * 60));
  }
  env.Set("ENVIRONMENT", "BATCH");

  // 3. What the controller computed.
  for (const auto& entry : launch.extra_env()) env.SetEntry(entry);

  // 4. This node.
  uint32_t index = NodeIndex(job, info.node_name);
  env.Set("SLURMD_NODENAME", info.node_name);
  env.Set("SLURM_NODEID", std::to_string(index));
  if (static_cast<int>(index) < job.cpus_per_node_size())
    env.Set("SLURM_CPUS_ON_NODE", std::to_string(job.cpus_per_node(static_cast<int>(index))));
  env.Set("SLURM_TASK_PID", std::to_string(info.task_pid));
  env.Set("SLURM_PROCID", "0");
  env.Set("SLURM_LOCALID", "0");
  env.Set("SLURM_GTIDS", "0");
  env.Set("SLURM_TOPOLOGY_ADDR", info.node_name);
  env.Set("SLURM_TOPOLOGY_ADDR_PATTERN", "node");
  if (!info.conf_path.empty()) env.Set("SLURM_CONF", info.conf_path);

  // Login basics the script may rely on.
  if (!user.empty()) {
    env.SetIfUnset("USER", user);
    env.SetIfUnset("LOGNAME", user);
  }
  if (!info.home.empty()) env.SetIfUnset("HOME", info.home);
  if (!info.shell.empty()) env.SetIfUnset("SHELL", info.shell);
  return env.Take();
}

}  // namespace shoal::noded
