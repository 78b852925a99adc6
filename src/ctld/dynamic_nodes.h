// scontrol create NodeName=... / delete NodeName=...: the pure part (spec parsing).
#pragma once

#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/slurm_conf.h"

namespace shoal::ctld {

// Parses one slurm.conf node line ("NodeName=d[1-2] CPUs=4 RealMemory=2000 State=FUTURE") with
// the slurm.conf parser: same keys, defaults and hostlist expansion. Errors name the problem
// without a file position. NodeName=DEFAULT and lines that are not node lines are refused.
Result<std::vector<NodeConf>> ParseCreateNodeSpec(std::string_view spec);

}  // namespace shoal::ctld
