#include "cli/srun_run.h"

#include <unistd.h>

#include <cstdio>

#include "cli/allocation.h"

namespace shoal::cli {

void OverlayEnvironment(std::vector<std::string>& env, const std::vector<std::string>& add) {
  for (const auto& e : add) {
    std::string key = e.substr(0, e.find('=') + 1);
    bool replaced = false;
    for (auto& x : env) {
      if (x.compare(0, key.size(), key) == 0) {
        x = e;
        replaced = true;
        break;
      }
    }
    if (!replaced) env.push_back(e);
  }
}

int RunSrun(const ClientContext& ctx, SrunInvocation& inv) {
  std::optional<Allocation> alloc;
  std::vector<std::string> env = inv.environment;
  if (!inv.job_id) {
    AllocateOptions ao;
    ao.prog = "srun";
    ao.is_salloc = false;
    ao.immediate_s = inv.immediate_s;
    ao.quiet = inv.step.quiet;
    auto a = Allocate(ctx, inv.spec, ao);
    if (!a) {
      std::fprintf(stderr, "srun: error: %s\n", a.error().c_str());
      return 1;
    }
    alloc = std::move(*a);
    OverlayEnvironment(env, alloc->environment);
    inv.step.create.set_job_id(alloc->job.job_id());
  } else {
    inv.step.create.set_job_id(*inv.job_id);
  }
  inv.step.environment = env;
  pb::StepCompleteRequest end;
  int rc = RunStep(ctx, inv.step, alloc ? &end : nullptr);
  if (alloc) Release(ctx, *alloc, rc == 0 ? 0 : (rc & 0xff) << 8, end.job_id() ? &end : nullptr);
  return rc;
}

}  // namespace shoal::cli
