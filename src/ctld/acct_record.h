// What the controller tells the accounting daemon about a job: its JobRecord (which carries the
// script, environment and scheduler state) reduced to the AcctJob row sacct shows. Pure.
#pragma once

#include <string>

#include "acct.pb.h"
#include "shoal.pb.h"

namespace shoal::ctld {

// `group` is the job's group name (resolved by the caller, which caches lookups).
pb::AcctJob ToAcctJob(const pb::JobRecord& job, const std::string& cluster,
                      const std::string& group);

// TRES as Slurm prints them (alphabetical): "billing=4,cpu=4,gres/gpu=1,mem=8G,node=2".
std::string TresString(uint64_t cpus, uint64_t mem_mb, uint64_t nodes, uint64_t gpus);

}  // namespace shoal::ctld
