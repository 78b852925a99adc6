#include "noded/step_env.h"

#include <unordered_map>

#include "common/hostlist.h"
#include "common/mem_bind.h"
#include "noded/job_env.h"

namespace shoal::noded {
namespace {

// Insertion-ordered environment with unique keys: setting a key that exists replaces its value
// in place.
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
  void SetEntry(std::string_view entry) {
    auto eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) return;  // not KEY=VALUE: dropped
    Set(entry.substr(0, eq), entry.substr(eq + 1));
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

std::string JoinIds(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) {
    if (!out.empty()) out.push_back(',');
    out += std::to_string(id);
  }
  return out;
}

// The step's tasks per node: step.tasks_per_node, else launch.tasks_per_node.
std::vector<uint32_t> TasksPerNode(const pb::LaunchTasksRequest& launch) {
  const auto& src = launch.step().tasks_per_node_size() > 0 ? launch.step().tasks_per_node()
                                                            : launch.tasks_per_node();
  return {src.begin(), src.end()};
}

// Global ids of the tasks on node `node_id`: launch.global_task_ids when given, else the block
// layout of tasks_per_node.
std::vector<uint32_t> TasksOnNode(const pb::LaunchTasksRequest& launch,
                                  const std::vector<uint32_t>& per_node) {
  if (launch.global_task_ids_size() > 0)
    return {launch.global_task_ids().begin(), launch.global_task_ids().end()};
  std::vector<uint32_t> ids;
  uint32_t first = 0;
  for (size_t i = 0; i < per_node.size() && i < launch.node_id(); ++i) first += per_node[i];
  if (launch.node_id() < per_node.size())
    for (uint32_t t = 0; t < per_node[launch.node_id()]; ++t) ids.push_back(first + t);
  return ids;
}

// "host:port" or "[v6]:port" -> (host, port).
std::pair<std::string, std::string> SplitAddress(std::string_view addr) {
  auto colon = addr.rfind(':');
  if (colon == std::string_view::npos) return {std::string(addr), ""};
  std::string_view host = addr.substr(0, colon), port = addr.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return {std::string(host), std::string(port)};
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::vector<std::string> CpuBindEnvironment(std::string_view cpu_bind,
                                            const std::vector<std::string>& masks) {
  if (cpu_bind.empty() && masks.empty()) return {};
  bool verbose = false;
  std::string type;            // "none", "rank", "cores", ..., or "map_cpu:" with its colon
  std::string list;            // what follows a map/mask type's colon
  bool explicit_type = false;  // none, rank, map_*, mask_*: shown as given even when pinned
  std::string_view rest = cpu_bind;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view tok = rest.substr(0, comma);
    auto colon = tok.find(':');
    if (colon != std::string_view::npos) {
      // map_cpu:0,1 / mask_cpu:0x1,0x2 / map_ldom:... / mask_ldom:...: the list runs to the end.
      type = std::string(tok.substr(0, colon + 1));
      std::string_view values = rest.substr(colon + 1);
      bool is_mask = StartsWith(type, "mask_");
      while (!values.empty()) {
        auto c = values.find(',');
        std::string_view v = values.substr(0, c);
        if (is_mask && (StartsWith(v, "0x") || StartsWith(v, "0X"))) v.remove_prefix(2);
        if (!list.empty()) list.push_back(',');
        list.append(v);
        if (c == std::string_view::npos) break;
        values.remove_prefix(c + 1);
      }
      explicit_type = true;
      break;
    }
    if (tok == "verbose" || tok == "v") {
      verbose = true;
    } else if (tok == "quiet" || tok == "q") {
      verbose = false;
    } else if (tok == "none" || tok == "no") {
      type = "none";
      explicit_type = true;
    } else if (tok == "rank") {
      type = "rank";
      explicit_type = true;
    } else if (!tok.empty()) {
      type = std::string(tok);  // cores, threads, sockets, ldoms, boards, rank_ldom, ...
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (!explicit_type) {
    if (!masks.empty()) {
      type = "mask_cpu:";
      list.clear();
      for (const auto& m : masks) {
        if (!list.empty()) list.push_back(',');
        list += m;
      }
    } else if (!type.empty()) {
      list = std::string(cpu_bind);  // task/none echoes the whole option as the "list"
    }
  }
  std::string verbosity = verbose ? "verbose" : "quiet";
  return {
      "SLURM_CPU_BIND=" + verbosity + "," + type + list,
      "SLURM_CPU_BIND_LIST=" + list,
      "SLURM_CPU_BIND_TYPE=" + type,
      "SLURM_CPU_BIND_VERBOSE=" + verbosity,
  };
}

std::vector<std::string> BuildTaskEnvironment(const pb::LaunchTasksRequest& launch,
                                              const TaskEnvInfo& info) {
  const pb::StepRecord& step = launch.step();
  pb::StepCredential cred;
  if (launch.has_cred() && !launch.cred().body().empty())
    (void)cred.ParseFromString(launch.cred().body());
  EnvBuilder env;

  // srun's environment (with the job's variables).
  for (const auto& entry : launch.environment()) env.SetEntry(entry);

  // The step.
  std::vector<uint32_t> per_node = TasksPerNode(launch);
  uint32_t num_tasks = step.num_tasks();
  if (num_tasks == 0)
    for (uint32_t n : per_node) num_tasks += n;
  std::vector<std::string> nodes(step.nodes().begin(), step.nodes().end());
  if (nodes.empty()) nodes.assign(cred.nodes().begin(), cred.nodes().end());
  if (nodes.empty() && !info.node_name.empty()) nodes.push_back(info.node_name);
  std::string step_nodelist = CompressHostlist(nodes);
  std::string tasks_per_node = CompressCounts(per_node);
  std::string job_id = std::to_string(step.job_id() != 0 ? step.job_id() : cred.job_id());

  env.Set("SLURM_NTASKS", std::to_string(num_tasks));
  env.Set("SLURM_NPROCS", std::to_string(num_tasks));
  env.Set("SLURM_JOB_ID", job_id);
  env.Set("SLURM_JOBID", job_id);
  env.Set("SLURM_STEP_ID", std::to_string(step.step_id()));
  env.Set("SLURM_STEPID", std::to_string(step.step_id()));
  env.Set("SLURM_NNODES", std::to_string(nodes.size()));
  env.SetIfUnset("SLURM_JOB_NUM_NODES", std::to_string(nodes.size()));
  env.SetIfUnset("SLURM_NODELIST", step_nodelist);
  if (!step.partition().empty()) env.SetIfUnset("SLURM_JOB_PARTITION", step.partition());
  if (!per_node.empty()) env.Set("SLURM_TASKS_PER_NODE", tasks_per_node);
  uint32_t cpus_per_task = launch.cpus_per_task();
  if (cpus_per_task == 0 && step.cpus_per_task() > 1) cpus_per_task = step.cpus_per_task();
  if (cpus_per_task != 0) env.Set("SLURM_CPUS_PER_TASK", std::to_string(cpus_per_task));
  uint32_t uid = cred.uid() != 0 ? cred.uid() : step.uid();
  env.Set("SLURM_JOB_UID", std::to_string(uid));
  std::string user = !launch.user_name().empty() ? launch.user_name()
                     : !cred.user_name().empty() ? cred.user_name()
                                                 : info.user_name;
  if (!user.empty()) env.Set("SLURM_JOB_USER", user);
  env.SetIfUnset("SLURM_JOB_NODELIST", step_nodelist);
  if (cred.cpus_per_node_size() > 0 && cred.cpus_per_node_size() == cred.nodes_size()) {
    std::vector<uint32_t> cpus(cred.cpus_per_node().begin(), cred.cpus_per_node().end());
    env.SetIfUnset("SLURM_JOB_CPUS_PER_NODE", CompressCounts(cpus));
  }
  if (!step.name().empty()) env.SetIfUnset("SLURM_JOB_NAME", step.name());
  if (!step.mpi().empty() && step.mpi() != "none") env.Set("SLURM_MPI_TYPE", step.mpi());
  env.Set("SLURM_STEP_NODELIST", step_nodelist);
  env.Set("SLURM_STEP_NUM_NODES", std::to_string(nodes.size()));
  env.Set("SLURM_STEP_NUM_TASKS", std::to_string(num_tasks));
  if (!per_node.empty()) env.Set("SLURM_STEP_TASKS_PER_NODE", tasks_per_node);
  auto [io_host, io_port] = SplitAddress(launch.io_address());
  std::string srun_host = !info.srun_host.empty() ? info.srun_host : io_host;
  std::string srun_port = info.srun_port != 0 ? std::to_string(info.srun_port) : io_port;
  if (!srun_port.empty()) {
    env.Set("SLURM_STEP_LAUNCHER_PORT", srun_port);
    env.Set("SLURM_SRUN_COMM_PORT", srun_port);
  }
  if (!srun_host.empty()) env.Set("SLURM_SRUN_COMM_HOST", srun_host);

  // This node and this task.
  uint32_t node_id = launch.node_id();
  uint32_t cpus_on_node = info.cpus_on_node;
  if (cpus_on_node == 0 && static_cast<int>(node_id) < cred.cpus_per_node_size())
    cpus_on_node = cred.cpus_per_node(static_cast<int>(node_id));
  if (cpus_on_node == 0 && static_cast<int>(node_id) < step.cpus_per_node_size())
    cpus_on_node = step.cpus_per_node(static_cast<int>(node_id));
  env.Set("SLURM_TOPOLOGY_ADDR", info.node_name);
  env.Set("SLURM_TOPOLOGY_ADDR_PATTERN", "node");
  if (cpus_on_node != 0) env.Set("SLURM_CPUS_ON_NODE", std::to_string(cpus_on_node));
  env.Set("SLURM_TASK_PID", std::to_string(info.task_pid));
  env.Set("SLURM_NODEID", std::to_string(node_id));
  env.Set("SLURM_PROCID", std::to_string(info.global_task_id));
  env.Set("SLURM_LOCALID", std::to_string(info.local_task_id));
  if (!srun_host.empty()) env.Set("SLURM_LAUNCH_NODE_IPADDR", srun_host);
  env.Set("SLURM_GTIDS", JoinIds(TasksOnNode(launch, per_node)));
  uint32_t gid = launch.gid() != 0 ? launch.gid() : cred.gid();
  env.Set("SLURM_JOB_GID", std::to_string(gid));
  env.Set("SLURMD_NODENAME", info.node_name);
  if (!info.cluster_name.empty()) env.Set("SLURM_CLUSTER_NAME", info.cluster_name);
  if (!info.conf_path.empty()) env.Set("SLURM_CONF", info.conf_path);
  const std::string& cpu_bind = !launch.cpu_bind().empty() ? launch.cpu_bind() : step.cpu_bind();
  for (const auto& entry : CpuBindEnvironment(cpu_bind, info.cpu_masks)) env.SetEntry(entry);
  for (const auto& entry : MemBindEnvironment(step.mem_bind(), "SLURM")) env.SetEntry(entry);
  env.SetIfUnset("TMPDIR", "/tmp");

  // Login basics, when srun's environment lacks them (--export=NONE or a list).
  if (!user.empty()) {
    env.SetIfUnset("USER", user);
    env.SetIfUnset("LOGNAME", user);
  }
  if (!info.home.empty()) env.SetIfUnset("HOME", info.home);
  if (!info.shell.empty()) env.SetIfUnset("SHELL", info.shell);

  // The supervisor's own (PMI-2, PMIx, GPUs, ...).
  for (const auto& entry : info.extra) env.SetEntry(entry);
  return env.Take();
}

}  // namespace shoal::noded
