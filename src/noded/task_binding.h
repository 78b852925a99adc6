// Binding one task (or the batch script) just before exec, in the child: its CPU mask
// (--cpu-bind, already computed by TaskCpuMasks) and its memory policy (--mem-bind, through the
// raw set_mempolicy(2) syscall: no libnuma), printing Slurm's verbose lines on stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "noded/gres_devices.h"

namespace shoal::pb {
class JobSpec;
}

namespace shoal::noded {

struct TaskBindRequest {
  std::string cpu_bind;  // the step's --cpu-bind ("verbose,map_cpu:0", "" = none)
  std::string cpu_mask;  // this task's mask ("0x1"), "" = not pinned
  std::string mem_bind;  // the step's --mem-bind ("verbose,local", "" = none)
  std::string node;      // this node's name
  uint32_t global_task = 0, local_task = 0, local_tasks = 1;
};

// Applies both and writes the verbose lines to fd 2. Returns "" or why the memory policy could
// not be set (the caller fails the task).
std::string ApplyTaskBinding(const TaskBindRequest& r);

// NUMA nodes of this host (/sys/devices/system/node/online; 1 when unknown).
uint32_t NumaNodeCount();

// The batch script, one task: binds it as the job's --cpu-bind (or --hint) and --mem-bind ask
// and adds what its steps inherit to `env` (SLURM_GPU_BIND, SLURM_HINT, SBATCH_MEM_BIND*).
// Returns "" or why it could not be bound.
std::string BindBatchScript(const pb::JobSpec& spec, const std::string& node,
                            std::vector<std::string>* env);

// The positions (into `gpus`) the batch script sees under the job's --gpu-bind; empty = all.
// Prints the verbose line on stderr when asked.
std::vector<size_t> BatchScriptGpus(const std::string& gpu_bind, const std::string& node,
                                    const std::vector<GresDevice>& gpus, bool constrained);

// "verbose" in a --cpu-bind value; the word verbose lines show ("NONE" or "MASK").
bool CpuBindVerbose(const std::string& cpu_bind);

}  // namespace shoal::noded
