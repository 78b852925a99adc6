// The decisions of `shoal-operator leader-exec` (a command run only while its pod holds a
// Lease), as a pure state machine: the launcher feeds it what happened (lease acquired, a renewal
// and its result, a signal, the child's exit) with the time, and carries out the step it returns.
//
//   campaigning --acquired--> leading --SIGTERM/SIGINT--> stopping
//        |                     |   |                        |
//   SIGTERM: exit 0    child exit: release, exit with its status (also from stopping)
//                      renewals failing past the deadline: SIGKILL the child, exit 1
//
// A launcher that lost the Lease never releases it (someone else may hold it now) and exits
// non-zero, so its pod restarts and campaigns again; the child is killed first, because a
// controller that keeps running without the Lease is the split brain the Lease exists to stop.
#pragma once

#include <cstdint>

namespace shoal::op {

enum class LeaderExecStep {
  kNone,
  kStartChild,        // the Lease is ours: start the command
  kSignalChild,       // forward `signal` to the child
  kKillChildAndExit,  // SIGKILL the child, then exit `exit_code` without releasing
  kReleaseAndExit,    // release the Lease, then exit `exit_code`
  kExit,              // exit `exit_code` (nothing started, nothing to release)
};

struct LeaderExecOutcome {
  LeaderExecStep step = LeaderExecStep::kNone;
  int signal = 0;
  int exit_code = 0;
  // kReleaseAndExit after the child failed on its own: linger a little before exiting so that
  // a campaigning peer takes the released Lease before this pod's restarted launcher could.
  bool let_peer_take_over = false;
};

enum class RenewResult { kOk, kFailed };

// The exit status a shell would report for a waitpid() status: the code, or 128 + signal.
int ExitCodeForWaitStatus(int wait_status);

class LeaderExecMachine {
 public:
  enum class Phase { kCampaigning, kLeading, kStopping, kDone };

  // Renewals failing for longer than this (since the last success) mean the Lease is lost.
  explicit LeaderExecMachine(int64_t renew_deadline_ms) : renew_deadline_ms_(renew_deadline_ms) {}

  Phase phase() const { return phase_; }
  // True while a child should be running (leading or stopping).
  bool child_expected() const { return phase_ == Phase::kLeading || phase_ == Phase::kStopping; }

  LeaderExecOutcome OnAcquired(int64_t now_ms);
  LeaderExecOutcome OnRenew(RenewResult result, int64_t now_ms);
  LeaderExecOutcome OnSignal(int signal);
  LeaderExecOutcome OnChildExit(int wait_status);

 private:
  int64_t renew_deadline_ms_;
  Phase phase_ = Phase::kCampaigning;
  int64_t last_renew_ms_ = 0;
};

}  // namespace shoal::op
