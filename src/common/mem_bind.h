// --mem-bind=[{quiet|verbose},]<type> and the verbose "cpu-bind=" / "mem-bind=" lines tasks
// print. Pure: parsing (shared by srun, sbatch, salloc and the node), the NUMA node mask of each
// local task, the SLURM_MEM_BIND_* variables; the node applies a mask with set_mempolicy(2).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shoal {

enum class MemBindType { kNone, kLocal, kRank, kMap, kMask };

struct MemBind {
  bool verbose = false;
  MemBindType type = MemBindType::kNone;
  std::vector<uint64_t> list;  // map_mem: NUMA node ids; mask_mem: node masks (repeats expanded)
  bool given = false;          // a type was named (vs. "" or only verbose/quiet)
};

// Case-insensitive, comma separated; accepts quiet/verbose (q/v), none/no, local, rank,
// map_mem:L, mask_mem:L (ids decimal unless 0x; masks hex; "*N" repeats), prefer, sort, nosort.
// Errors read as Slurm's: `unrecognized --mem-bind argument "foo"`, `missing list for
// "--mem-bind=map_mem:<list>"`, `Failed to validate number: x, the offending character is x`.
// "help" is the caller's to handle.
Result<MemBind> ParseMemBind(std::string_view value);

// The NUMA node mask of each of `ntasks` local tasks (bit N = node N); 0 = no binding (none, or
// local: the kernel's local allocation). rank: task i -> node i % numa_nodes.
std::vector<uint64_t> TaskMemMasks(const MemBind& mb, uint32_t ntasks, uint32_t numa_nodes);

// "NONE", "LOCAL", "RANK", "MAP", "MASK" (the word after "mem-bind=" in verbose lines).
std::string MemBindTypeWord(MemBindType type);

// SLURM_MEM_BIND, SLURM_MEM_BIND_{LIST,PREFER,SORT,TYPE,VERBOSE} ("NAME=value" entries) for a
// task; `prefix` "SLURM" or "SBATCH". Empty when `value` is "".
std::vector<std::string> MemBindEnvironment(std::string_view value, const std::string& prefix);

// "cpu-bind=MASK - n1, task  0  0 [1234]: mask 0x1 set" (what = "cpu-bind" or "mem-bind";
// `set` false for NONE lines, which show the mask without " set").
std::string BindVerboseLine(std::string_view what, std::string_view type_word,
                            std::string_view node, uint32_t global_task, uint32_t local_task,
                            pid_t pid, std::string_view mask, bool set);

// "0x1" for 1; "0x0" for 0.
std::string HexU64(uint64_t v);

}  // namespace shoal

namespace shoal {

// --hint's effect on task binding (man srun): compute_bound, memory_bound and nomultithread
// bind tasks to cores, multithread to threads. Applies only when --cpu-bind names no type
// ("verbose" alone keeps the hint). Returns the --cpu-bind value to use.
std::string EffectiveCpuBind(std::string_view cpu_bind, std::string_view hint);

// True for the four hint words (case-insensitive).
bool ValidHint(std::string_view hint);

// What --hint=help and --mem-bind=help print (Slurm's text).
std::string HintHelpText();
std::string MemBindHelpText();

}  // namespace shoal
