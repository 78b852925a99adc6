// The controller's own statistics, for sdiag and the metrics endpoints: RPCs by Slurm message
// type and by user (count, time), job counters, scheduling and backfill cycles, journal commits.
// Owned by the controller's event-loop thread (no locks): the journal's writer thread hands its
// timings over through the completion it already posts to that thread.
//
// Two views of the RPC and job counters: sdiag's, which `sdiag --reset` clears (as Slurm's), and
// the lifetime ones behind the OpenMetrics counters and histograms, which must never go down.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "sched/backfill.h"
#include "shoal.pb.h"

namespace shoal::ctld {

// A Slurm message type: the name and number sdiag prints (slurm_msg_type_t).
struct RpcType {
  const char* name = "INVALID";
  uint16_t id = 0;
};
// The Slurm request a Shoal request stands for.
RpcType RpcTypeOf(const pb::Request& req);

// Bucket upper bounds (seconds) of the RPC latency histograms; +Inf is implied.
inline constexpr std::array<double, 14> kRpcLatencyBounds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};
// Journal commits (write + fdatasync) are slower: their own bounds.
inline constexpr std::array<double, 12> kCommitLatencyBounds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1};

// Per-bucket (not cumulative) counts; the last one is +Inf.
template <size_t N>
struct Histogram {
  std::array<uint64_t, N + 1> buckets{};
  uint64_t count = 0;
  uint64_t sum_usec = 0;
  void Observe(const std::array<double, N>& bounds, uint64_t usec) {
    double s = static_cast<double>(usec) / 1e6;
    size_t i = 0;
    while (i < N && s > bounds[i]) ++i;
    ++buckets[i];
    ++count;
    sum_usec += usec;
  }
};
using RpcHistogram = Histogram<kRpcLatencyBounds.size()>;
using CommitHistogram = Histogram<kCommitLatencyBounds.size()>;

struct RpcTypeStats {
  const char* name = "";
  uint64_t count = 0, total_usec = 0;  // since the last reset (sdiag)
  RpcHistogram lifetime;               // since start (metrics)
};
struct RpcUserStats {
  uint64_t count = 0, total_usec = 0;  // since the last reset (sdiag)
  uint64_t lifetime_count = 0, lifetime_usec = 0;
};

class DiagStats {
 public:
  explicit DiagStats(int64_t now = 0) : since_(now) {}

  // Two hash updates: the type's row and the user's.
  void RecordRpc(RpcType type, uint32_t uid, uint64_t usec);
  void JobsSubmitted(uint32_t n) {
    jobs_submitted_ += n;
    lifetime_submitted_ += n;
  }
  void JobEnded(pb::JobState state);
  // RunPlanner: what the planner was given and decided (before the caller times the pass).
  void NotePlan(uint32_t depth, const sched::CyclePlan& plan);
  // Schedule()/Backfill(): one pass done, `usec` long, with `queue_len` jobs pending before it.
  void ScheduleCycle(uint64_t usec, uint32_t queue_len);
  void BackfillCycle(uint64_t usec, uint32_t queue_len, int64_t now);
  // On the event-loop thread, from the journal's completion: one group commit.
  void JournalCommit(uint64_t usec);
  void Reset(int64_t now);

  // sdiag's answer, except the fields only the controller knows (thread counts, job states).
  // `user_name` turns a uid into a name for the by-user rows.
  void Fill(pb::DiagResponse* out, const std::function<std::string(uint32_t)>& user_name) const;

  // For the metrics.
  const std::unordered_map<uint16_t, RpcTypeStats>& by_type() const { return by_type_; }
  const std::unordered_map<uint32_t, RpcUserStats>& by_user() const { return by_user_; }
  const CommitHistogram& commits() const { return commits_; }
  uint64_t lifetime_submitted() const { return lifetime_submitted_; }
  uint64_t lifetime_started() const { return lifetime_started_; }
  uint64_t lifetime_completed() const { return lifetime_completed_; }
  uint64_t lifetime_canceled() const { return lifetime_canceled_; }
  uint64_t lifetime_failed() const { return lifetime_failed_; }
  int64_t since() const { return since_; }

  // Scheduler statistics since the last reset (as sdiag shows them).
  struct Sched {
    uint64_t cycle_last = 0, cycle_max = 0, cycle_sum = 0;
    uint32_t cycle_counter = 0;
    uint64_t depth_sum = 0;
    uint32_t queue_len = 0;
  };
  struct Bf {
    uint64_t backfilled_jobs = 0;       // since start
    uint64_t last_backfilled_jobs = 0;  // since reset
    uint32_t cycle_counter = 0;
    int64_t when_last_cycle = 0;
    uint64_t cycle_last = 0, cycle_max = 0, cycle_sum = 0;
    uint32_t last_depth = 0, last_depth_try = 0;
    uint64_t depth_sum = 0, depth_try_sum = 0;
    uint32_t queue_len = 0;
    uint64_t queue_len_sum = 0;
    uint32_t table_size = 0;
    uint64_t table_size_sum = 0;
  };
  const Sched& sched() const { return sched_; }
  const Bf& bf() const { return bf_; }
  uint32_t jobs_submitted() const { return jobs_submitted_; }
  uint32_t jobs_started() const { return jobs_started_; }
  uint32_t jobs_completed() const { return jobs_completed_; }
  uint32_t jobs_canceled() const { return jobs_canceled_; }
  uint32_t jobs_failed() const { return jobs_failed_; }

 private:
  int64_t since_ = 0;
  std::unordered_map<uint16_t, RpcTypeStats> by_type_;
  std::unordered_map<uint32_t, RpcUserStats> by_user_;
  uint32_t jobs_submitted_ = 0, jobs_started_ = 0, jobs_completed_ = 0, jobs_canceled_ = 0,
           jobs_failed_ = 0;
  uint64_t lifetime_submitted_ = 0, lifetime_started_ = 0, lifetime_completed_ = 0,
           lifetime_canceled_ = 0, lifetime_failed_ = 0;
  Sched sched_;
  Bf bf_;
  // The last NotePlan, consumed by the next ScheduleCycle/BackfillCycle.
  uint32_t plan_depth_ = 0, plan_tested_ = 0, plan_started_ = 0, plan_backfilled_ = 0;
  CommitHistogram commits_;                                                // lifetime (metrics)
  uint64_t commit_count_ = 0, commit_usec_sum_ = 0, commit_usec_max_ = 0;  // since reset
};

}  // namespace shoal::ctld
