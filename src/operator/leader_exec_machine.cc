#include "operator/leader_exec_machine.h"

#include <signal.h>
#include <sys/wait.h>

namespace shoal::op {

int ExitCodeForWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

LeaderExecOutcome LeaderExecMachine::OnAcquired(int64_t now_ms) {
  if (phase_ != Phase::kCampaigning) return {};
  phase_ = Phase::kLeading;
  last_renew_ms_ = now_ms;
  return {LeaderExecStep::kStartChild, 0, 0};
}

LeaderExecOutcome LeaderExecMachine::OnRenew(RenewResult result, int64_t now_ms) {
  if (!child_expected()) return {};
  if (result == RenewResult::kOk) {
    last_renew_ms_ = now_ms;
    return {};
  }
  // As client-go's renew deadline: a failed renewal is retried; only a deadline without one
  // success means another candidate may take the Lease (it waits the full lease duration,
  // which is longer than the deadline, so the child is gone before a successor starts).
  if (now_ms - last_renew_ms_ <= renew_deadline_ms_) return {};
  phase_ = Phase::kDone;
  return {LeaderExecStep::kKillChildAndExit, SIGKILL, 1};
}

LeaderExecOutcome LeaderExecMachine::OnSignal(int signal) {
  bool stop = signal == SIGTERM || signal == SIGINT;
  switch (phase_) {
    case Phase::kCampaigning:
      if (!stop) return {};
      phase_ = Phase::kDone;
      return {LeaderExecStep::kExit, 0, 0};
    case Phase::kLeading:
      if (stop) phase_ = Phase::kStopping;
      return {LeaderExecStep::kSignalChild, signal, 0};
    case Phase::kStopping:
      return {LeaderExecStep::kSignalChild, signal, 0};
    case Phase::kDone:
      return {};
  }
  return {};
}

LeaderExecOutcome LeaderExecMachine::OnChildExit(int wait_status) {
  if (!child_expected()) return {};
  bool asked_to_stop = phase_ == Phase::kStopping;
  phase_ = Phase::kDone;
  // The Lease is still ours: handing it back lets the peer take over at once instead of after
  // the lease duration.
  int code = ExitCodeForWaitStatus(wait_status);
  return {LeaderExecStep::kReleaseAndExit, 0, code, code != 0 && !asked_to_stop};
}

}  // namespace shoal::op
