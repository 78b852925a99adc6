// Trace-driven discrete-event simulation of the scheduler: jobs arrive, the planner
// (sched/backfill.h) decides what starts, jobs end after their actual runtime. Used to compare
// policies (fifo, priority without backfill, backfill) on synthetic or SWF workloads.
// Pure logic apart from the clock it reads to time each scheduling cycle.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "sched/backfill.h"
#include "sched/priority.h"

namespace shoal::sim {

struct SimJob {
  uint32_t id = 0;
  int64_t submit = 0;        // seconds
  int64_t runtime = 0;       // actual run time, <= limit
  int64_t limit = 0;         // requested time limit (seconds)
  uint32_t tasks = 1;        // one CPU each
  uint32_t nodes = 0;        // exact node count; 0 = any (tasks may spread)
  bool whole_nodes = false;  // tasks = nodes * CPUs per node, one task per CPU
};

struct Workload {
  std::vector<SimJob> jobs;  // by submit time
};

struct SyntheticParams {
  uint32_t jobs = 5000;
  uint64_t seed = 1;
  uint32_t nodes = 128;
  uint32_t cpus_per_node = 32;
  double load = 1.1;  // offered load relative to the cluster's capacity
};

// Many small short jobs, some medium ones, a few wide long ones; runtimes well under their
// limits; arrivals in bursts. Deterministic for a given seed.
Workload Synthetic(const SyntheticParams& p);

// Standard Workload Format: 18 whitespace-separated fields per line, ';' comment lines. Uses
// submit time (2), run time (4), allocated (5) / requested (8) processors and requested time
// (9); jobs with unknown run time or processor count are skipped, requests wider than the
// cluster are capped to it.
Result<Workload> ReadSwf(std::string_view text, uint32_t nodes, uint32_t cpus_per_node);

enum class Policy { kFifo, kPriority, kBackfill };
Result<Policy> ParsePolicy(std::string_view name);  // "fifo", "priority", "backfill"
std::string_view PolicyName(Policy p);

struct SimConfig {
  Policy policy = Policy::kBackfill;
  uint32_t nodes = 128;
  uint32_t cpus_per_node = 32;
  sched::BackfillParams backfill;
  sched::PriorityConfig priority = DefaultPriority();
  // Each cycle gets the previous cycle's plan (PlanInput::previous), so reserved jobs keep
  // their promised start; and a cycle also runs at the earliest planned start, as the
  // controller's periodic backfill would, so a reservation is not left waiting for an
  // unrelated event. false: every cycle planned afresh, cycles only on arrivals and ends.
  bool keep_reservations = true;
  // Called after every scheduling cycle with its input and plan (property tests use it).
  std::function<void(const sched::PlanInput&, const sched::CyclePlan&)> on_cycle;

  static sched::PriorityConfig DefaultPriority();
};

struct JobOutcome {
  uint32_t id = 0;
  int64_t submit = 0, start = 0, end = 0;
  std::optional<int64_t> first_reservation;  // the first expected start backfill gave it
};

struct SimReport {
  Policy policy = Policy::kBackfill;
  uint32_t jobs_completed = 0;
  double utilization = 0;  // CPU-seconds used / CPU-seconds available, first submit..last end
  double mean_wait_s = 0;
  double mean_bounded_slowdown = 0;  // max(1, (wait+run)/max(run, 10 s))
  uint64_t cycles = 0;
  double mean_cycle_s = 0, max_cycle_s = 0;
  int64_t makespan_s = 0;
  std::vector<JobOutcome> jobs;
};

SimReport Simulate(const Workload& w, const SimConfig& cfg);

// One table, one row per report.
std::string FormatReports(const std::vector<SimReport>& reports);

}  // namespace shoal::sim
