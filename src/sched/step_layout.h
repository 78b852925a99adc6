// Where a job step's tasks go inside its job's allocation (srun in sbatch/salloc). Pure: the
// controller passes the job's nodes and what its running steps hold.
//
// Slurm's rules (man srun, 22.05): without -N a step spans min(tasks, job nodes) nodes, or every
// job node when no task count is given (one task per node); tasks are spread in block order,
// evenly, the first nodes taking the remainder. A step holds every CPU of the job on its nodes
// unless --exact/--exclusive (then tasks × cpus-per-task) and shares none of them with other
// steps unless --overlap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace shoal::sched {

struct StepJobNodes {
  std::vector<std::string> names;     // the job's nodes, in allocation order
  std::vector<uint32_t> cpus;         // the job's CPUs on each
  std::vector<uint32_t> cpus_in_use;  // held by its running (non-overlapping) steps
};

struct StepRequest {
  uint32_t min_nodes = 0;  // 0 = not given
  uint32_t max_nodes = 0;
  uint32_t num_tasks = 0;  // 0 = not given
  uint32_t cpus_per_task = 0;
  uint32_t ntasks_per_node = 0;
  std::vector<std::string> nodelist;  // -w, expanded
  std::vector<std::string> exclude;   // -x, expanded
  bool overlap = false;
  bool exact = false;  // --exact or --exclusive
  bool overcommit = false;
  bool relative_given = false;
  uint32_t relative = 0;  // -r
};

struct StepLayout {
  std::vector<uint32_t> node_index;  // into StepJobNodes
  std::vector<uint32_t> tasks;       // per chosen node
  std::vector<uint32_t> cpus;        // CPUs the step holds per chosen node (0 with --overlap)
  uint32_t num_tasks = 0;
};

// kInvalidStep: the request can never fit this job (message in Slurm's words); kStepBusy: it
// could, once other steps end.
Result<StepLayout> LayoutStep(const StepJobNodes& job, const StepRequest& req);

}  // namespace shoal::sched
