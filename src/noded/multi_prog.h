// srun --multi-prog on a node: the command line of one task from the configuration text srun
// sent (man srun, "MULTIPLE PROGRAM CONFIGURATION"). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shoal::noded {

// Lines "<ranks> <program> [args...]": ranks as "0-3,5" or "*"; "%t" in arguments becomes the
// task id, "%o" its offset within the line's range; "#" starts a comment. Error when no line
// names the task.
Result<std::vector<std::string>> MultiProgArgv(std::string_view config, uint32_t task_id,
                                               uint32_t local_id);

}  // namespace shoal::noded
