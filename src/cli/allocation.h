// Interactive allocations for salloc and for srun outside a job: submit an allocation without a
// batch script, wait for it (with Slurm's progress lines), and release it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/client.h"
#include "common/rpc.h"
#include "shoal.pb.h"

namespace shoal::cli {

struct Allocation {
  RpcClient conn;  // held open while `held`: the controller ends the job when it closes
  bool held = false;
  pb::JobRecord job;
  std::vector<std::string> environment;  // SLURM_JOB_* of the allocation
};

struct AllocateOptions {
  std::string prog = "salloc";          // message prefix
  bool hold = true;                     // tie the allocation to this process (not --no-shell)
  std::optional<uint32_t> immediate_s;  // --immediate[=secs]: give up after that long
  bool quiet = false;
  bool is_salloc = true;  // salloc also prints "Granted job allocation N"
};

// Errors carry the complete text to print after "<prog>: error: ".
Result<Allocation> Allocate(const ClientContext& ctx, pb::JobSpec spec,
                            const AllocateOptions& options);

// Ends the allocation (exit status of the command that used it); closes the held connection.
// `step`: the end of the step that used it (srun), recorded in the same write.
void Release(const ClientContext& ctx, Allocation& allocation, int32_t exit_status,
             const pb::StepCompleteRequest* step = nullptr);

}  // namespace shoal::cli
