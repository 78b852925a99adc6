// Preemption (PreemptType=preempt/partition_prio|preempt/qos, PreemptMode, GraceTime,
// PreemptExemptTime): which running jobs a pending job may preempt, a small set of them that
// lets it start, and what happens to each victim. Pure logic, no I/O: whether the pending job
// fits once some jobs are gone is the caller's callback, so the controller can plug PlaceJob in.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shoal::sched {

enum class PreemptType { kNone, kPartitionPrio, kQos };
enum class PreemptAction { kOff, kCancel, kRequeue, kSuspend };

struct PreemptMode {
  PreemptAction action = PreemptAction::kOff;
  bool gang = false;
  bool within = false;  // WITHIN (preempt/qos: same QOS may preempt)
};

// "preempt/none", "preempt/partition_prio", "preempt/qos". Error: "Invalid PreemptType".
Result<PreemptType> ParsePreemptType(std::string_view text);
// "OFF", "CANCEL", "REQUEUE", "SUSPEND", "SUSPEND,GANG", "GANG", "REQUEUE,WITHIN"
// (case-insensitive). Error: "Invalid PreemptMode".
Result<PreemptMode> ParsePreemptMode(std::string_view text);
std::string FormatPreemptMode(const PreemptMode& m);  // "SUSPEND,GANG", "OFF"

struct PreemptConfig {
  PreemptType type = PreemptType::kNone;
  PreemptMode cluster_mode;         // slurm.conf PreemptMode
  int64_t preempt_exempt_time = 0;  // seconds; -1/0 = none
  bool youngest_first = false;      // SchedulerParameters=preempt_youngest_first
  bool job_requeue = false;         // slurm.conf JobRequeue=1
};

struct PreemptorJob {
  uint32_t job_id = 0;
  uint32_t partition_tier = 1;  // PriorityTier of its partition
  std::string qos;
  std::vector<std::string> qos_preempt;  // its QOS's Preempt= list
  bool qos_within = false;               // its QOS has PreemptMode WITHIN
};

struct PreemptibleJob {
  uint32_t job_id = 0;
  uint32_t partition_tier = 1;
  std::string qos;
  uint32_t qos_priority = 0;
  std::optional<PreemptMode> partition_mode;  // partition PreemptMode, if set
  std::optional<PreemptMode> qos_mode;        // QOS PreemptMode, if set
  int64_t grace_time = 0;                     // partition (partition_prio) / QOS (qos) GraceTime
  std::optional<int64_t> qos_exempt_time;     // QOS PreemptExemptTime (wins over the global)
  int64_t start_time = 0;
  uint32_t num_nodes = 1;  // job size, smaller preferred
  bool requeue = false;    // --requeue (or JobRequeue=1 unless --no-requeue)
  bool batch = true;
  bool suspended = false;  // already preempted by suspension
  std::vector<int> nodes;  // node indexes it holds (for the caller's fit check)
};

// The mode a running job is preempted with: partition's (partition_prio) or QOS's (qos), else
// the cluster's.
PreemptMode EffectiveMode(const PreemptConfig& cfg, const PreemptibleJob& victim);

// Whether `job` may preempt `victim` under the configured plugin: partition_prio needs a
// strictly higher tier; qos needs the victim's QOS in the preemptor's Preempt= list (or the
// same QOS with WITHIN). Never when the victim's mode is OFF, when a CANCEL/REQUEUE victim has
// run less than PreemptExemptTime, or when it is already suspended.
bool CanPreempt(const PreemptConfig& cfg, const PreemptorJob& job, const PreemptibleJob& victim,
                int64_t now);

struct Victim {
  uint32_t job_id = 0;
  PreemptAction action = PreemptAction::kCancel;  // REQUEUE falls back to CANCEL when the job
                                                  // cannot be requeued
  int64_t sigterm_time = 0;                       // now: SIGCONT+SIGTERM (suspend: SIGSTOP at now)
  int64_t sigkill_time = 0;  // now + GraceTime (+KillWait is the caller's): end time
  // What Slurm shows for the preempted job: CANCEL -> state PREEMPTED (squeue "PR", sacct
  // PREEMPTED); REQUEUE -> the run is accounted PREEMPTED and the job goes back to PENDING
  // (squeue reason "BeginTime" while its requeue delay runs, then "Priority"/"Resources");
  // SUSPEND -> SUSPENDED, reason "Preempted".
  std::string state;
  std::string reason;
};

struct PreemptPlan {
  std::vector<Victim> victims;  // in the order they were chosen
};

// The running jobs `job` may preempt, in the order Slurm tries them: lowest partition tier
// (partition_prio) or lowest QOS priority (qos) first; then youngest (latest start) first with
// preempt_youngest_first, else smaller jobs first, then youngest; job id breaks ties.
std::vector<const PreemptibleJob*> PreemptionCandidates(const PreemptConfig& cfg,
                                                        const PreemptorJob& job,
                                                        const std::vector<PreemptibleJob>& running,
                                                        int64_t now);

// fits(ids) says whether the pending job could start if the jobs with these ids were gone.
using FitsFn = std::function<bool(const std::vector<uint32_t>& freed)>;

// Chooses victims: adds candidates in order until `fits`, then retries with the last one first
// (it may free enough alone) and drops any victim the job does not need, so the set is minimal
// and low-priority jobs are preferred. nullopt when preemption is off or even all candidates
// are not enough. An empty plan means the job fits without preempting.
std::optional<PreemptPlan> PlanPreemption(const PreemptConfig& cfg, const PreemptorJob& job,
                                          const std::vector<PreemptibleJob>& running, int64_t now,
                                          const FitsFn& fits);

// A simple capacity model for callers without a placement engine (and for tests): per-node
// free CPUs/memory/GPUs and what each running job holds on each node; the pending job needs
// `nodes` nodes, each with the given free resources.
struct NodeCapacity {
  uint32_t free_cpus = 0;
  uint64_t free_mem_mb = 0;
  uint32_t free_gpus = 0;
};
struct JobHolding {
  uint32_t job_id = 0;
  int node = 0;
  uint32_t cpus = 0;
  uint64_t mem_mb = 0;
  uint32_t gpus = 0;
};
struct PerNodeNeed {
  uint32_t nodes = 1;
  uint32_t cpus = 1;
  uint64_t mem_mb = 0;
  uint32_t gpus = 0;
  bool suspend = false;  // suspended victims keep their memory and GRES
};
FitsFn CapacityFits(std::vector<NodeCapacity> free, std::vector<JobHolding> holdings,
                    PerNodeNeed need);

}  // namespace shoal::sched
