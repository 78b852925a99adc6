// Job array specifications (sbatch --array): "0-15", "0,6,16-32", "0-15:4", "1-7%2".
// Pure parsing, no I/O.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shoal::sched {

struct ArraySpec {
  std::vector<uint32_t> indexes;  // ascending, unique
  uint32_t throttle = 0;          // %N: at most N tasks running at once; 0 = unlimited
};

// Errors read "Invalid job array specification" (Slurm's message) with the reason appended.
// Every index must be below max_array_size (MaxArraySize, default 1001).
Result<ArraySpec> ParseArraySpec(std::string_view text, uint32_t max_array_size);

}  // namespace shoal::sched
