// GPUs a task sees: the GPU environment variables Slurm sets (CUDA_VISIBLE_DEVICES & co.) and
// --gpu-bind's per-task choice. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "noded/gres_devices.h"

namespace shoal::noded {

struct GpuBind {
  bool verbose = false;
  // none/"" (every task sees every GPU), closest, single, map, mask, per_task
  std::string type;
  uint32_t n = 0;                 // single:<tasks_per_gpu>, per_task:<gpus_per_task>
  std::vector<uint64_t> entries;  // map_gpu ids / mask_gpu masks, repetitions expanded
};
// "[verbose,]closest|single:N|map_gpu:0*2,1|mask_gpu:0x3,c|per_task:N|none".
bool ParseGpuBind(std::string_view text, GpuBind& out, std::string* error);

// Positions (into `gpus`, the GPUs the step holds here in index order) each of `ntasks` local
// tasks is bound to; empty = no per-task binding. `task_cpus[i]` are the CPUs of task i (may be
// empty = unknown; closest/single then treat every GPU as close). With `constrained`
// (ConstrainDevices), map/mask ids are positions; otherwise global GPU indexes.
std::vector<std::vector<size_t>> TaskGpus(const GpuBind& bind, uint32_t ntasks,
                                          const std::vector<GresDevice>& gpus,
                                          const std::vector<std::vector<int>>& task_cpus,
                                          bool constrained);

// "0-3,8" -> {0,1,2,3,8}; invalid parts are skipped.
std::vector<int> ParseCpuList(std::string_view list);

// The GPU variables of a task. `gpus`: the node's GPUs held by the job/step (index order);
// `visible`: positions the task is bound to (all when empty). SLURM_JOB_GPUS (batch) or
// SLURM_STEP_GPUS (steps) carry global indexes; CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES,
// ZE_AFFINITY_MASK and GPU_DEVICE_ORDINAL carry positions when devices are constrained (the task
// only sees its GPUs, renumbered from 0), else global indexes. Nothing when no GPU is held.
std::vector<std::string> GpuEnvironmentVars(const std::vector<GresDevice>& gpus,
                                            const std::vector<size_t>& visible, bool batch,
                                            bool constrained);

// The line --gpu-bind=verbose prints on a task's stderr.
std::string GpuBindVerboseLine(const std::string& node, uint32_t task,
                               const std::vector<GresDevice>& gpus,
                               const std::vector<size_t>& visible);

// Replaces (or appends) KEY=... entries of `env` with those of `vars`.
void OverrideEnv(std::vector<std::string>& env, const std::vector<std::string>& vars);

}  // namespace shoal::noded
