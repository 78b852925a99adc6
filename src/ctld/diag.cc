// sdiag (REQUEST_STATS_INFO) and the timing of RPCs and scheduling passes behind it.
#include <chrono>
#include <memory>

#include "common/log.h"
#include "ctld/controller.h"

namespace shoal::ctld {
namespace {

uint64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
}

}  // namespace

Responder Controller::TimedResponder(const pb::Request& req, uint32_t uid,
                                     std::chrono::steady_clock::time_point start,
                                     Responder respond) {
  RpcType type = RpcTypeOf(req);
  auto inner = std::make_shared<Responder>(std::move(respond));
  return Responder(
      [this, type, uid, start, inner](const pb::Response& r) {
        diag_.RecordRpc(type, uid, MicrosSince(start));
        (*inner)(r);
      },
      [this, type, uid, start, inner](std::string bytes) {
        diag_.RecordRpc(type, uid, MicrosSince(start));
        inner->Raw(std::move(bytes));
      },
      inner->can_stream()
          ? Responder::RawFn([inner](std::string bytes) { inner->Part(std::move(bytes)); })
          : nullptr);
}

void Controller::TimedSchedule(bool backfill, uint32_t depth) {
  auto queue_len = static_cast<uint32_t>(pending_.size());
  auto start = std::chrono::steady_clock::now();
  RunPlanner(backfill, depth);
  uint64_t usec = MicrosSince(start);
  if (backfill && backfill_.enabled)
    diag_.BackfillCycle(usec, queue_len, Now());
  else
    diag_.ScheduleCycle(usec, queue_len);
}

pb::Response Controller::Diag(const pb::Credential& cred, const pb::DiagRequest& req) {
  int64_t now = Now();
  if (req.reset()) {
    // Slurm: operators and administrators only.
    if (!IsAdmin(cred.uid()))
      return ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied");
    diag_.Reset(now);
    LogInfo("sdiag statistics reset by uid %u", cred.uid());
    return pb::Response();
  }
  pb::Response resp;
  pb::DiagResponse* d = resp.mutable_diag();
  diag_.Fill(d, [this](uint32_t uid) { return UserNameOf(uid); });
  d->set_now(now);
  // One event-loop thread serves every RPC; node messages go out on the nodes' own streams
  // with nothing queued for retry, so the agent figures are those of an idle slurmctld.
  d->set_server_thread_count(1);
  d->set_agent_queue_size(0);
  d->set_agent_count(0);
  d->set_agent_thread_count(0);
  d->set_dbd_agent_queue_size(
      static_cast<uint32_t>(acct_dirty_.size() + acct_events_.size() + acct_resvs_.size()));
  d->set_job_states_ts(now);
  uint32_t pending = 0, running = 0, completing = 0, held = 0;
  for (const auto& [id, job] : jobs_) {
    if (job.state() == pb::JOB_PENDING) {
      ++pending;
      if (job.held()) ++held;
    } else if (job.state() == pb::JOB_RUNNING && !job.completing()) {
      ++running;
    }
    if (job.completing()) ++completing;
  }
  // Packed jobs are pending, held or runnable (packed_job.h).
  pending += static_cast<uint32_t>(packed_.size());
  for (const auto& [id, packed] : packed_) held += packed.runnable ? 0 : 1;
  d->set_jobs_pending(pending);
  d->set_jobs_running(running);
  d->set_jobs_completing(completing);
  d->set_jobs_held(held);
  d->set_bf_active(false);  // passes run to completion on the event loop: never mid-cycle
  return resp;
}

}  // namespace shoal::ctld
