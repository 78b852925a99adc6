// Association and QOS limits (AccountingStorageEnforce=associations,limits,qos,safe): the
// checks at submit time and the pending reason the scheduler shows while a job waits on a
// limit, from usage counters the controller keeps up to date. Pure logic, no I/O.
//
// Which limits apply (resource_limits.html, qos.html):
//   * The job's QOS first, then its user association, then each parent account up to root.
//   * Max* limits are the association's own after inheritance (AssocTree::Limits) and count
//     the association's own jobs; Grp* limits are each association's own and count the jobs of
//     the association and all its descendants.
//   * Submit: MaxSubmitJobs/GrpSubmitJobs (associations) and MaxSubmitJobsPerUser,
//     MaxSubmitJobsPerAccount, GrpSubmitJobs (QOS) reject. With the QOS flag DenyOnLimit the
//     job's own size and time against Max*PerJob, MaxWall and Grp TRES limits (QOS and
//     associations) reject as well; otherwise such jobs pend with a reason.
//   * Pending reasons carry Slurm's names (squeue(1) "JOB REASON CODES").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "common/result.h"
#include "common/units.h"
#include "sched/assoc_tree.h"

namespace shoal::sched {

// Submit rejections. ErrorCode for the policy text: Slurm's ESLURM_ACCOUNTING_POLICY has no
// Shoal code yet; kAcctPolicyError names the one to use (see the report: a dedicated
// ErrorCode::kAccountingPolicy belongs in common/errors.h).
inline constexpr ErrorCode kAcctPolicyError = ErrorCode::kAccountingPolicy;
inline constexpr char kInvalidAccountText[] =
    "Invalid account or account/partition combination specified";
inline constexpr char kInvalidQosText[] = "Invalid qos specification";
inline constexpr char kAcctPolicyText[] =
    "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)";

// slurm.conf AccountingStorageEnforce: "associations,limits,qos,safe" (limits, qos and safe
// imply associations; safe implies limits). "wckeys"/"nojobs"/"nosteps" are accepted, ignored.
struct EnforceFlags {
  bool associations = false;
  bool limits = false;
  bool qos = false;
  bool safe = false;
};
Result<EnforceFlags> ParseEnforce(
    std::string_view text);  // error: "Invalid AccountingStorageEnforce: x"

// A job's size as the limits see it (totals over the job).
struct JobSize {
  uint32_t cpus = 1;
  uint32_t nodes = 1;
  uint64_t mem_mb = 0;
  uint32_t time_limit_min = kTimeNoVal;  // kTimeNoVal: not checked; kTimeInfinite: unlimited
  TresMap gres;                          // "gres/gpu" -> count over the job
};

// Counts for one scope (an association, a QOS, a (QOS, user) pair, ...).
struct Tally {
  uint32_t submitted = 0;  // pending + running
  uint32_t running = 0;
  uint64_t cpus = 0, nodes = 0, mem_mb = 0;  // running jobs' totals
  TresMap gres;                              // running jobs' GRES
};

// What the controller keeps incrementally (CountSubmitted/CountRunning) or recomputes after
// a new AssocTree (Recount), since ancestors are charged through the tree of the moment.
struct UsageCounters {
  std::unordered_map<uint32_t, Tally> assoc_own;   // by association id: its own jobs
  std::unordered_map<uint32_t, Tally> assoc_tree;  // the association and its descendants
  std::map<std::string, Tally, std::less<>> qos;   // by QOS name (lower case)
  std::map<std::pair<std::string, std::string>, Tally> qos_user;     // (qos, user)
  std::map<std::pair<std::string, std::string>, Tally> qos_account;  // (qos, account)
};

// One job as the counters see it.
struct CountedJob {
  uint32_t assoc_id = 0;
  std::string qos;  // lower case (as ResolvedJob gives it)
  std::string user;
  std::string account;  // lower case
  JobSize shape;
};

// delta +1: the job was accepted (pending), -1: it left the system (ended, cancelled).
void CountSubmitted(UsageCounters& c, const AssocTree& tree, const CountedJob& job, int delta);
// delta +1: the job started, -1: it stopped running (ended, requeued, suspended-released).
void CountRunning(UsageCounters& c, const AssocTree& tree, const CountedJob& job, int delta);
// From scratch: `submitted` are all pending and running jobs, `running` the running ones.
UsageCounters Recount(const AssocTree& tree, const std::vector<CountedJob>& submitted,
                      const std::vector<CountedJob>& running);

// The job as submitted.
struct SubmitJob {
  std::string user;
  std::string account;    // as given; "" = the user's default account
  std::string partition;  // one partition (check each of a multi-partition job)
  std::string qos;        // as given; "" = the association's default QOS
  JobSize shape;
};

// What a valid submission resolves to: record assoc_id, account and qos on the job.
struct ResolvedJob {
  int assoc_index = AssocTree::kNone;  // kNone when associations are not enforced and none fits
  uint32_t assoc_id = 0;
  std::string account;  // lower case; "" when unknown
  std::string qos;      // lower case
};

// Submit-time checks (see above). Errors: kInvalidAccount / kInvalidQos / kAcctPolicyError with
// Slurm's texts (kInvalidAccountText, kInvalidQosText, kAcctPolicyText).
Result<ResolvedJob> ValidateSubmit(const AssocTree& tree, const UsageCounters& counters,
                                   const SubmitJob& job, const EnforceFlags& enforce);

// Decayed usage for Grp*Mins limits (implemented by FairShare, fairshare.h).
class UsageMinutesSource {
 public:
  virtual ~UsageMinutesSource() = default;
  virtual double AssocCpuMinutes(uint32_t assoc_id) const = 0;  // association + descendants
  virtual double QosCpuMinutes(std::string_view qos) const = 0;
};

struct LimitContext {
  const AssocTree& tree;
  const UsageCounters& counters;
  const UsageMinutesSource* minutes = nullptr;  // null: GrpTRESMins not checked
  bool safe = false;  // AccountingStorageEnforce=safe: the job must fit GrpTRESMins to the end
};

// The reason a pending job may not start now because of a limit, or "" when none holds it.
// `job`: its resolved association and QOS (from ValidateSubmit) and shape; `user`: its user.
std::string PendingLimitReason(const LimitContext& ctx, const CountedJob& job);

}  // namespace shoal::sched
