// srun --cpu-bind on a node: which CPUs each local task is pinned to. The mask computation is
// pure; reading and applying affinity are thin wrappers over sched_{get,set}affinity.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::noded {

// One mask per local task, as hex ("0x3"), or an empty vector when the tasks are not pinned
// ("", "none", or a value this node cannot honour). `cpus` are the CPUs this node lets the step
// use, in order. cores/threads/sockets/ldoms/rank: consecutive blocks of cpus_per_task CPUs,
// wrapping around; map_cpu:ID,ID,...: task i gets CPU list[i % n]; mask_cpu:M,M,...: task i gets
// mask list[i % n]. "verbose"/"quiet" may precede the type ("verbose,cores").
std::vector<std::string> TaskCpuMasks(std::string_view cpu_bind, uint32_t ntasks,
                                      uint32_t cpus_per_task, const std::vector<int>& cpus);

std::vector<int> CpusOfThisProcess();
// Pins the calling process to a "0x.." mask; false when the kernel refuses it.
bool ApplyCpuMask(const std::string& mask);

}  // namespace shoal::noded
