// The scheduling cycle's planning core: a main pass in priority order, then backfill with
// reservations over a time-ordered availability profile (sched/backfill, SchedulerParameters
// bf_*). Pure logic, no I/O: the caller gives the time, node views with current allocations,
// running jobs and pending jobs already sorted (see sched/priority.h: SortForScheduling).
//
// Resources are only ever booked or freed through sched::Allocate/Release and jobs placed
// through sched::PlaceJob, so resources added to the placement model are planned for as well.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "sched/placement.h"

namespace shoal::sched {

// A time limit the planner treats as unlimited (longer than any window).
inline constexpr int64_t kUnlimitedSeconds = INT64_MAX / 4;

struct RunningJob {
  uint32_t job_id = 0;
  JobShape shape;  // `allowed` may be empty: only the placement matters here
  Placement placement;
  int64_t end_time = 0;  // start + time limit (kUnlimitedSeconds-ish for no limit)
};

struct PendingJob {
  uint32_t job_id = 0;
  // When shape.allowed is empty the partition's nodes (PlanInput::partition_nodes) are used,
  // so 100,000 jobs need not each carry a copy of a 10,000-node list.
  JobShape shape;
  int64_t time_limit_s = 0;  // <= 0 or >= kUnlimitedSeconds: unlimited
  uint32_t partition = 0;    // index into PlanInput::partition_nodes; groups Priority/Resources
  // Optional: jobs with the same non-zero key (in the same partition) have identical shapes,
  // e.g. a hash of the request computed by the caller. Backfill then knows a later such job
  // with no shorter limit cannot start before an earlier one, and skips the search. 0 = none.
  uint64_t shape_key = 0;
};

struct BackfillParams {
  bool enabled = true;          // SchedulerType=sched/backfill (false: sched/builtin)
  uint32_t max_job_test = 500;  // bf_max_job_test
  uint32_t window_min = 1440;   // bf_window (minutes)
  uint32_t resolution_s = 60;   // bf_resolution (seconds)
  // bf_continue: accepted for compatibility. A cycle here is one pass that never yields its
  // state half-way (the controller holds no lock to release), so there is nothing to resume.
  bool bf_continue = false;
  double max_time_s = 0;  // bf_max_time in seconds of wall time; 0 = no limit
};

// Parses the bf_* entries of SchedulerParameters ("bf_window=2880,bf_resolution=120,...");
// unknown entries are ignored (they belong to other parts of the scheduler).
Result<BackfillParams> ParseSchedulerParameters(std::string_view text, BackfillParams base = {});

// The main scheduler's entries of SchedulerParameters, as in Slurm: an event-triggered pass
// (a submission, a job ending, the once-a-second tick) examines at most default_queue_depth
// pending jobs in priority order, and every sched_interval seconds one pass examines them all,
// so the work an event costs does not grow with the queue.
struct MainSchedParams {
  uint32_t queue_depth = 100;    // default_queue_depth; 0: no limit
  int64_t interval_s = 60;       // sched_interval; -1: no periodic full pass
  uint32_t partition_depth = 0;  // partition_job_depth: jobs weighed per partition; 0: no limit
  bool defer = false;            // defer: a submission does not trigger a pass of its own
};

// Parses default_queue_depth, sched_interval, partition_job_depth and defer; other entries are
// ignored.
Result<MainSchedParams> ParseMainSchedulerParameters(std::string_view text);

enum class PendingReason { kNone, kPriority, kResources };
std::string_view ReasonName(PendingReason r);  // "None", "Priority", "Resources"

struct PendingDecision {
  uint32_t job_id = 0;
  PendingReason reason = PendingReason::kPriority;
  std::optional<int64_t> start_time;  // expected start (squeue --start), when planned
  std::vector<int> planned_nodes;     // where it is expected to start, with start_time
};

// A cycle's CyclePlan::pending, indexed by job id. Shared, not copied: the controller's main
// passes weigh a hundred jobs against the promises of a backfill pass over 20,000.
class PreviousPlan {
 public:
  explicit PreviousPlan(std::vector<PendingDecision> decisions);
  const PendingDecision* Find(uint32_t job_id) const;  // nullptr: the plan did not know the job
  bool empty() const { return decisions_.empty(); }

 private:
  std::vector<PendingDecision> decisions_;
  std::unordered_map<uint32_t, size_t> index_;
};

struct PlanInput {
  int64_t now = 0;
  std::vector<NodeView> nodes;  // current allocations (running jobs already booked)
  std::vector<RunningJob> running;
  std::vector<PendingJob> pending;  // highest priority first; held/ineligible already removed
  std::vector<std::vector<int>> partition_nodes;
  BackfillParams params;
  // Optional: the previous cycle's CyclePlan::pending, as is. A job given a start time there
  // (a promise) is planned to start no later than that, on those nodes if need be, as long as
  // they still take it then: every other job the previous plan knew (listed here, planned or
  // not) is planned around the promise. Only what the plan could not foresee breaks one: a
  // node going down, a job running past its limit, or a job not listed here (one that just
  // arrived) taking the resources first. Null: every cycle is planned afresh, as in Slurm.
  std::shared_ptr<const PreviousPlan> previous;
};

struct JobStart {
  uint32_t job_id = 0;
  Placement placement;
  bool backfilled = false;  // started by backfill rather than the main pass
};

struct PlanStats {
  uint32_t main_tested = 0;      // PlaceJob calls in the main pass
  uint32_t backfill_tested = 0;  // jobs examined by backfill (bf_max_job_test counts these)
  uint32_t place_calls = 0;      // PlaceJob calls in backfill
  bool stopped_by_time = false;  // bf_max_time was reached
  double seconds = 0;            // wall time of the whole cycle
};

struct CyclePlan {
  std::vector<JobStart> starts;          // in the order they were decided
  std::vector<PendingDecision> pending;  // every pending job not started, in input order
  PlanStats stats;
};

// One scheduling cycle. Main pass: in priority order, a job starts if it fits now; the first
// job of a partition that does not fit gets Resources and blocks that partition (later jobs
// there get Priority). Backfill (if enabled): walks the pending jobs in priority order over an
// availability profile built from running jobs' expected ends; a job starts now only if it
// fits now and for its whole time limit without touching resources reserved for a higher
// priority job; otherwise it is given a reservation at its earliest feasible time within
// bf_window, which later jobs cannot delay.
CyclePlan PlanCycle(const PlanInput& in);

struct SingleDecision {
  std::optional<Placement> placement;  // start now here
  PendingReason reason = PendingReason::kNone;
};

// The controller's immediate attempt when a job is submitted: starts it if no job of higher
// priority is waiting in its partitions (`jobs_ahead`) and it fits now; never reserves.
SingleDecision PlanSingle(const std::vector<NodeView>& nodes, const PendingJob& job,
                          const std::vector<int>& partition_nodes, bool jobs_ahead);

}  // namespace shoal::sched
