// Job priority: PriorityType=priority/basic (FIFO) and priority/multifactor (age, fairshare,
// job size, partition, QOS, TRES, nice, site), as described in Slurm's priority_multifactor
// documentation, plus the order the scheduler walks pending jobs in (PriorityTier first).
// Pure logic, no I/O: the caller supplies the time, the job's facts and the cluster's totals.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/slurm_conf.h"

namespace shoal::sched {

enum class PriorityType { kBasic, kMultifactor };

struct PriorityConfig {
  PriorityType type = PriorityType::kBasic;   // Slurm's default PriorityType is priority/basic
  int64_t max_age_s = 7 * 86400;              // PriorityMaxAge (default 7-00:00:00)
  bool favor_small = false;                   // PriorityFavorSmall
  uint32_t weight_age = 0;                    // PriorityWeightAge
  uint32_t weight_fairshare = 0;              // PriorityWeightFairshare
  uint32_t weight_job_size = 0;               // PriorityWeightJobSize
  uint32_t weight_partition = 0;              // PriorityWeightPartition
  uint32_t weight_qos = 0;                    // PriorityWeightQOS
  std::map<std::string, double> weight_tres;  // PriorityWeightTRES: "cpu", "mem", "node", ...
};

// Reads the Priority* keys of slurm.conf (other keys are ignored). Errors name the key.
Result<PriorityConfig> ParsePriorityConfig(const ConfMap& conf);

// Fair-share factor of a user's association (0..1). Until accounting exists every association
// gets 1.0; sshare/priority/fairshare will plug a real source in here.
class FairShareSource {
 public:
  virtual ~FairShareSource() = default;
  virtual double Factor(const std::string& user, const std::string& account) const = 0;
};

class FlatFairShare : public FairShareSource {
 public:
  double Factor(const std::string&, const std::string&) const override { return 1.0; }
};

// What priority needs to know about one pending job.
struct PriorityJob {
  uint32_t job_id = 0;
  std::string user;
  std::string account;
  int64_t eligible_time = 0;          // when it became eligible (begin time, dependencies met)
  uint32_t nodes = 1;                 // requested nodes
  uint32_t cpus = 1;                  // requested CPUs
  uint64_t memory_mb = 0;             // requested memory in all
  uint16_t partition_job_factor = 1;  // the partition's PriorityJobFactor
  uint32_t qos_priority = 0;          // the QOS's Priority
  int32_t nice = 0;                   // --nice (negative only for administrators)
  int64_t site_factor = 0;            // set by a site plugin or scontrol
};

// Cluster-wide quantities factors are normalized by.
struct PriorityContext {
  int64_t now = 0;
  uint32_t total_nodes = 1;
  uint64_t total_cpus = 1;
  uint64_t total_memory_mb = 1;
  uint16_t max_partition_job_factor = 1;  // max PriorityJobFactor across partitions
  uint32_t max_qos_priority = 0;          // max Priority across QOSes (0: QOS factor is 0)
};

// A job's priority and each weighted factor, as sprio shows them (columns JOBID PARTITION
// USER PRIORITY SITE AGE FAIRSHARE JOBSIZE PARTITION QOS NICE TRES).
struct PriorityBreakdown {
  uint32_t priority = 0;  // the total, at least 1 (0 means held)
  double site = 0;
  double age = 0;
  double fairshare = 0;
  double job_size = 0;
  double partition = 0;
  double qos = 0;
  int32_t nice = 0;
  std::map<std::string, double> tres;  // weighted TRES factors by name ("cpu", "mem")
  double tres_total = 0;
};

PriorityBreakdown MultifactorPriority(const PriorityConfig& cfg, const PriorityContext& ctx,
                                      const PriorityJob& job, const FairShareSource& fairshare);

// priority/basic: the n-th job submitted (0-based submit sequence) gets a priority one lower
// than the one before, so the queue is served first in, first out.
inline constexpr uint32_t kBasicTopPriority = 0xFFFF0000u;
uint32_t BasicPriority(uint64_t submit_sequence);

// The order the scheduler walks pending jobs in: partition PriorityTier (higher first), then
// priority (higher first), then job id (lower first).
struct SchedOrderKey {
  uint16_t partition_tier = 1;
  uint32_t priority = 0;
  uint32_t job_id = 0;
};
bool SchedulesBefore(const SchedOrderKey& a, const SchedOrderKey& b);
void SortForScheduling(std::vector<SchedOrderKey>& keys);

}  // namespace shoal::sched
