#include "cli/allocation.h"

#include <cstdio>

namespace shoal::cli {
namespace {

std::string Id(uint32_t id) { return std::to_string(id); }

void Cancel(const ClientContext& ctx, uint32_t job_id) {
  pb::Request req;
  req.mutable_cancel_job()->add_job_ids(Id(job_id));
  (void)CallControllerRaw(ctx, req);
}

}  // namespace

Result<Allocation> Allocate(const ClientContext& ctx, pb::JobSpec spec, const AllocateOptions& o) {
  spec.set_interactive(true);
  pb::Request submit;
  *submit.mutable_submit_job()->mutable_spec() = std::move(spec);
  auto submitted = CallController(ctx, submit);
  if (!submitted) {
    // The controller names the partition for sbatch's first line; srun/salloc print Slurm's
    // generic text.
    std::string why = submitted.status().code() == ErrorCode::kInvalidPartition
                          ? "Invalid partition name specified"
                          : submitted.error();
    return Error(submitted.status().code(), "Unable to allocate resources: " + why);
  }
  uint32_t job_id = submitted->submit_job().job_id();

  pb::Request wait;
  wait.mutable_allocation_wait()->set_job_id(job_id);
  wait.mutable_allocation_wait()->set_hold_connection(o.hold);
  std::string body = wait.SerializeAsString();
  auto cred = SignForCaller(ctx, body);
  if (!cred) return cred.status();
  std::string addr = ctx.conf.ControllerAddr() + ":" + std::to_string(ctx.conf.ControllerPort());
  auto conn = RpcClient::Connect(addr, 10000);
  if (!conn)
    return Error(ErrorCode::kUnavailable, "Unable to contact slurm controller (connect failure)");
  auto id = conn->SendRaw(body, *cred, 10000);
  if (!id) return id.status();
  // The scheduler normally answers within milliseconds; after a second, say the job waits.
  int first_wait_ms =
      o.immediate_s ? static_cast<int>(std::max<uint32_t>(*o.immediate_s, 1) * 1000) : 1000;
  bool queued = false;
  if (!conn->Readable(first_wait_ms)) {
    if (o.immediate_s) {
      Cancel(ctx, job_id);
      return Error(ErrorCode::kNodesBusy,
                   o.is_salloc ? "Unable to allocate resources: Immediate execution impossible, "
                                 "insufficient priority"
                               : "Unable to allocate resources: Requested nodes are busy");
    }
    if (o.is_salloc && !o.quiet)
      std::fprintf(stderr, "%s: Pending job allocation %u\n", o.prog.c_str(), job_id);
    if (!o.quiet)
      std::fprintf(stderr, "%s: job %u queued and waiting for resources\n", o.prog.c_str(), job_id);
    queued = true;
  }
  auto resp = conn->Receive(*id, 0x7fffffff);
  if (!resp)
    return Error(ErrorCode::kUnavailable,
                 "Unable to contact slurm controller (" + resp.error() + ")");
  if (resp->rc() != 0) {
    if (queued && !o.quiet)
      std::fprintf(stderr, "%s: Job allocation %u has been revoked.\n", o.prog.c_str(), job_id);
    return Error(static_cast<ErrorCode>(resp->rc()), resp->error());
  }
  if (queued && !o.quiet)
    std::fprintf(stderr, "%s: job %u has been allocated resources\n", o.prog.c_str(), job_id);
  if (o.is_salloc && !o.quiet)
    std::fprintf(stderr, "%s: Granted job allocation %u\n", o.prog.c_str(), job_id);
  Allocation a;
  a.conn = std::move(*conn);
  a.held = o.hold;
  a.job = resp->allocation_wait().job();
  a.environment.assign(resp->allocation_wait().environment().begin(),
                       resp->allocation_wait().environment().end());
  return a;
}

void Release(const ClientContext& ctx, Allocation& a, int32_t exit_status,
             const pb::StepCompleteRequest* step) {
  pb::Request req;
  req.mutable_release_allocation()->set_job_id(a.job.job_id());
  req.mutable_release_allocation()->set_exit_status(exit_status);
  if (step) *req.mutable_release_allocation()->mutable_step() = *step;
  (void)CallControllerRaw(ctx, req);
  a.conn = RpcClient();
}

}  // namespace shoal::cli
