// The environment of one task of a job step (srun), built from the launch request. Pure (no I/O)
// so it can be tested; the per-node supervisor calls it in the forked child, where the task pid
// is known. What real Slurm 22.05 puts there is recorded in docs/notes/slurm-steps-observed.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shoal.pb.h"

namespace shoal::noded {

struct TaskEnvInfo {
  std::string node_name;     // SLURMD_NODENAME
  std::string conf_path;     // SLURM_CONF
  std::string cluster_name;  // SLURM_CLUSTER_NAME when non-empty
  uint32_t global_task_id = 0, local_task_id = 0;
  uint32_t cpus_on_node = 0;           // the job's CPUs on this node (SLURM_CPUS_ON_NODE)
  int64_t task_pid = 0;                // SLURM_TASK_PID
  std::string user_name, home, shell;  // fill USER/LOGNAME/HOME/SHELL only when missing
  std::string srun_host;
  uint32_t srun_port = 0;          // SLURM_SRUN_COMM_HOST/PORT, SLURM_STEP_LAUNCHER_PORT
  std::vector<std::string> extra;  // appended last (PMI/PMIx/GPU variables from the supervisor)
  // CPU masks ("0x3") the supervisor applied to this node's tasks, in local-task order; empty
  // when it did not pin them. See CpuBindEnvironment.
  std::vector<std::string> cpu_masks;
};

// The environment of one task of a step: launch.environment (srun's own, already including the
// job's SLURM_JOB_* variables) overridden by the step's and the task's SLURM_* variables. Keys
// unique, first-insertion order (a variable srun already had keeps its place, with the new value),
// one "KEY=VALUE" per entry; entries of launch.environment without '=' are dropped.
//
// Set here, in this order (close to Slurm's, as observed):
//   from the step: SLURM_NTASKS, SLURM_NPROCS, SLURM_JOB_ID, SLURM_JOBID, SLURM_STEP_ID,
//     SLURM_STEPID, SLURM_NNODES (the step's node count), SLURM_TASKS_PER_NODE (the step's
//     layout), SLURM_CPUS_PER_TASK (launch.cpus_per_task, else step.cpus_per_task when > 1),
//     SLURM_JOB_UID, SLURM_JOB_USER (from the step credential), SLURM_MPI_TYPE (unless "none"),
//     SLURM_STEP_NODELIST, SLURM_STEP_NUM_NODES, SLURM_STEP_NUM_TASKS, SLURM_STEP_TASKS_PER_NODE,
//     SLURM_STEP_LAUNCHER_PORT, SLURM_SRUN_COMM_PORT, SLURM_SRUN_COMM_HOST (info.srun_*, else
//     parsed from launch.io_address);
//   interleaved with those, only when srun's environment lacks them (a standalone srun's job is
//     its step): SLURM_JOB_NUM_NODES, SLURM_NODELIST, SLURM_JOB_PARTITION, SLURM_JOB_NODELIST,
//     SLURM_JOB_CPUS_PER_NODE (from the credential), SLURM_JOB_NAME;
//   from this node and task: SLURM_TOPOLOGY_ADDR, SLURM_TOPOLOGY_ADDR_PATTERN=node,
//     SLURM_CPUS_ON_NODE (info.cpus_on_node, else the credential's CPUs for this node),
//     SLURM_TASK_PID, SLURM_NODEID (launch.node_id), SLURM_PROCID, SLURM_LOCALID,
//     SLURM_LAUNCH_NODE_IPADDR, SLURM_GTIDS (launch.global_task_ids: the tasks on this node),
//     SLURM_JOB_GID, SLURMD_NODENAME, SLURM_CLUSTER_NAME, SLURM_CONF, the SLURM_CPU_BIND* set
//     (CpuBindEnvironment of launch.cpu_bind and info.cpu_masks), TMPDIR=/tmp when unset,
//     USER/LOGNAME/HOME/SHELL when unset;
//   then info.extra (a key already present is replaced in place).
// Left to srun (in launch.environment), because only srun knows them: SLURM_UMASK,
// SLURM_PRIO_PROCESS, SRUN_DEBUG, SLURM_LABELIO (-l), SLURM_DISTRIBUTION (-m; inside an
// allocation "block" when tasks > nodes, else "cyclic"; unset for a standalone srun without -m),
// SLURM_NTASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0, SLURM_SUBMIT_DIR/HOST,
// SLURM_WORKING_CLUSTER. SLURM_NODELIST stays the job's even for a step on part of it.
std::vector<std::string> BuildTaskEnvironment(const pb::LaunchTasksRequest& launch,
                                              const TaskEnvInfo& info);

// SLURM_CPU_BIND, SLURM_CPU_BIND_LIST, SLURM_CPU_BIND_TYPE, SLURM_CPU_BIND_VERBOSE ("KEY=VALUE")
// for a --cpu-bind value and the masks applied on this node (empty: none applied). Empty
// cpu_bind and no masks: nothing. Explicit none/rank/map_*/mask_* are echoed back; otherwise, with
// masks, Slurm's task/affinity form "quiet,mask_cpu:0x1,0x2"; without, task/none's echo
// ("--cpu-bind=cores" -> "quiet,corescores", LIST "cores": what Slurm 22.05 shows).
std::vector<std::string> CpuBindEnvironment(std::string_view cpu_bind,
                                            const std::vector<std::string>& masks);

}  // namespace shoal::noded
