// What srun does once its options are understood: find or make the allocation, run the step,
// release an allocation it made. Separate from option parsing (srun_options.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/step_launch.h"
#include "shoal.pb.h"

namespace shoal::cli {

struct SrunInvocation {
  pb::JobSpec spec;                // the allocation to make when not inside one (interactive)
  StepLaunchOptions step;          // the step: layout in step.create (job id filled here), I/O
  std::optional<uint32_t> job_id;  // inside an allocation (SLURM_JOB_ID or --jobid)
  std::optional<uint32_t> immediate_s;
  std::vector<std::string> environment;  // srun's own, already filtered by --export
};

int RunSrun(const ClientContext& ctx, SrunInvocation& inv);

// "KEY=VALUE" lists: each entry of `add` replaces the one with its key in `env`, in place, or is
// appended (the allocation's SLURM_JOB_* over srun's and salloc's own environment).
void OverlayEnvironment(std::vector<std::string>& env, const std::vector<std::string>& add);

}  // namespace shoal::cli
