// The environment of a batch script, built from the launch request. Pure (no I/O) so it can be
// tested; shoal-stepd calls it in the forked child, where the task pid is known.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shoal.pb.h"

namespace shoal::noded {

struct NodeEnvInfo {
  std::string node_name;     // this node (SLURMD_NODENAME)
  std::string conf_path;     // SLURM_CONF
  std::string cluster_name;  // SLURM_CLUSTER_NAME (omitted when empty)
  int64_t task_pid = 0;      // SLURM_TASK_PID: pid of the batch shell
  // From the passwd entry of the job's uid; used for USER/LOGNAME/HOME/SHELL when the submitted
  // environment lacks them.
  std::string user_name, home, shell;
};

// Order of precedence (later wins):
//   1. JobSpec.environment (the submitted environment, already filtered by --export);
//   2. job-level SLURM_* variables derived from the JobRecord (job id, name, node list, CPUs per
//      node, partition, submit dir/host, array ids, ...), so stale values inherited from an
//      enclosing allocation never leak into the job;
//   3. LaunchBatchRequest.extra_env (computed by the controller);
//   4. node-level variables (SLURMD_NODENAME, SLURM_NODEID, SLURM_CPUS_ON_NODE, SLURM_TASK_PID,
//      SLURM_PROCID, SLURM_LOCALID, SLURM_GTIDS, SLURM_TOPOLOGY_ADDR[_PATTERN], SLURM_CONF).
// Finally USER, LOGNAME, HOME and SHELL are filled from passwd if still unset.
// The result keeps first-insertion order, one "KEY=VALUE" per entry, keys unique.
std::vector<std::string> BuildJobEnvironment(const pb::LaunchBatchRequest& launch,
                                             const NodeEnvInfo& info);

// "72(x2),36" form of a per-node count list (SLURM_JOB_CPUS_PER_NODE, SLURM_TASKS_PER_NODE).
std::string CompressCounts(const std::vector<uint32_t>& counts);

// Index of `node` in the job's node list, or 0 when absent.
uint32_t NodeIndex(const pb::JobRecord& job, std::string_view node);

}  // namespace shoal::noded
