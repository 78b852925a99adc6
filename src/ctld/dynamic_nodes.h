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

// Whether a dynamic node with `features` belongs to a partition whose Nodes= is `nodes_expr`:
// Nodes=ALL takes every dynamic node, and a NodeSet named in the expression takes those carrying
// its Feature= (how Slurm places dynamic nodes; the Kubernetes operator relies on it).
bool DynamicNodeInPartition(std::string_view nodes_expr, const std::vector<NodeSetConf>& nodesets,
                            const std::vector<std::string>& features);

}  // namespace shoal::ctld
