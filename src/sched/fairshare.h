// Fair-share for PriorityType=priority/multifactor: usage per association (CPU-seconds times
// the QOS UsageFactor, decayed by PriorityDecayHalfLife, cleared by PriorityUsageResetPeriod),
// and the fair-share factor by the classic algorithm (PriorityFlags=NO_FAIR_TREE) or Fair
// Tree (Slurm's default since 19.05), as Slurm's classic_fair_share.html and fair_tree.html
// describe them. Also the rows sshare prints. Pure logic, no I/O: the caller moves the clock.
//
// Usage is kept per association as its own jobs' usage; an account's usage is the sum over
// its subtree, computed when factors are recomputed, so a new tree (new snapshot) needs no
// re-charging. Factors are recomputed by Advance() (call it every PriorityCalcPeriod or each
// scheduling pass), SetTree(), SetConfig() and Import(); between those they hold still, as in
// Slurm.
//
//   classic:  S = Sraw/Ssiblings * Sparent;  U = usage/total;
//             UE = U (under root), else U + (UEparent - U) * Sraw/Ssiblings;  F = 2^(-UE/S/d)
//   Fair Tree: per level S = Sraw/Ssiblings, U = usage/siblings' usage, LevelFS = S/U
//             (infinity without usage); siblings sorted by LevelFS, walked depth first; users
//             ranked in that order (ties share a rank); F = rank / number of user associations.
//   Fairshare=parent: a user uses its account's values (classic) or the rank of the account's
//   best user (Fair Tree); an account's children count as children of its parent.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/slurm_conf.h"
#include "sched/assoc_limits.h"
#include "sched/assoc_tree.h"
#include "sched/priority.h"
#include "shoal.pb.h"

namespace shoal::sched {

enum class UsageResetPeriod { kNone, kNow, kDaily, kWeekly, kMonthly, kQuarterly, kYearly };

struct FairShareConfig {
  int64_t decay_half_life_s = 7 * 86400;                    // PriorityDecayHalfLife; 0 = no decay
  UsageResetPeriod reset_period = UsageResetPeriod::kNone;  // PriorityUsageResetPeriod
  bool fair_tree = true;        // PriorityFlags without NO_FAIR_TREE / DEPTH_OBLIVIOUS
  double dampening = 1.0;       // FairShareDampeningFactor (classic only)
  int64_t calc_period_s = 300;  // PriorityCalcPeriod (minutes in slurm.conf)
};

// Reads PriorityDecayHalfLife, PriorityUsageResetPeriod, PriorityFlags, PriorityCalcPeriod and
// FairShareDampeningFactor. Errors name the key ("Invalid PriorityDecayHalfLife value: x").
Result<FairShareConfig> ParseFairShareConfig(const ConfMap& conf);

// The next time usage is cleared after `after` (local time midnight boundaries: every day,
// Sunday, the 1st of a month/quarter/year); 0 for kNone and kNow.
int64_t NextUsageReset(UsageResetPeriod period, int64_t after);

// ShareRecord.raw_shares of root, which has none (sshare prints it blank).
inline constexpr uint32_t kNoRawShares = 0xfffffffe;

// What the controller persists (StateSaveLocation) and gives back after a restart.
struct UsageState {
  int64_t last_update = 0;                                // usage is current as of this time
  int64_t next_reset = 0;                                 // 0 = none scheduled
  std::vector<std::pair<uint32_t, double>> assoc_usage;   // own usage by association id
  std::vector<std::pair<std::string, double>> qos_usage;  // by QOS name
};

// A running job, for accrual and for sshare's TRESRunMins.
struct ChargedJob {
  uint32_t assoc_id = 0;
  std::string qos;  // lower case; its UsageFactor weighs the usage
  uint32_t cpus = 1;
  uint32_t nodes = 1;
  uint64_t mem_mb = 0;
  int64_t start_time = 0;
  uint32_t time_limit_min = 0;  // for TRESRunMins; kTimeInfinite/kTimeNoVal = none
};

// Values computed for one association (sshare's columns).
struct ShareValues {
  double usage = 0;  // raw usage of the subtree (decayed CPU-seconds x UsageFactor)
  double norm_shares = 0;
  double norm_usage = 0;
  double effective_usage = 0;
  double fairshare = 0;  // users: the factor; accounts: classic only
  double level_fs = 0;   // Fair Tree
};

class FairShare : public FairShareSource, public UsageMinutesSource {
 public:
  explicit FairShare(FairShareConfig cfg = {});

  void SetConfig(const FairShareConfig& cfg);
  const FairShareConfig& config() const { return cfg_; }
  void SetTree(std::shared_ptr<const AssocTree> tree);
  const AssocTree* tree() const { return tree_.get(); }

  // Running jobs: usage accrues from max(start, last update), so after a restart (Import)
  // re-adding the running jobs charges nothing twice. JobStarted on a known id replaces it.
  void JobStarted(uint32_t job_id, const ChargedJob& job);
  void JobEnded(uint32_t job_id, int64_t end_time);  // charges up to end_time, forgets it
  // Direct usage (already weighted): tests, or usage from elsewhere.
  void Charge(uint32_t assoc_id, std::string_view qos, double amount);

  // Moves the clock to `now`: decays usage for the elapsed time, charges running jobs up to
  // now, clears usage at a PriorityUsageResetPeriod boundary, recomputes the factors.
  void Advance(int64_t now);

  // FairShareSource: the user's association in `account` (without partition; else any of its
  // partitions); 0 for an unknown association. Empty account: the user's default.
  double Factor(const std::string& user, const std::string& account) const override;
  double FactorOfAssoc(uint32_t assoc_id) const;

  // UsageMinutesSource (GrpTRESMins=cpu=N): subtree usage / 60.
  double AssocCpuMinutes(uint32_t assoc_id) const override;
  double QosCpuMinutes(std::string_view qos) const override;

  const ShareValues* Values(uint32_t assoc_id) const;  // nullptr if unknown

  UsageState Export() const;
  void Import(const UsageState& state);  // PriorityUsageResetPeriod=NOW: usage starts at zero
  void ResetUsage();

  // sshare: rows in tree order. Users shown: `req.users`, all with `req.all_users`, else
  // `caller`'s (sshare's default); account rows are always shown. `req.accounts` keeps only
  // rows whose account is listed. ShareRecord.depth is the indentation sshare draws: one
  // more than the parent's row when that row is in the answer, else 0. Values sshare prints
  // blank are NaN (root's NormUsage, FairShare/LevelFS of accounts in Fair Tree, ...).
  pb::ShareQueryResponse Shares(const pb::ShareQueryRequest& req, std::string_view caller,
                                int64_t now) const;

 private:
  void Accrue(int64_t until);
  void Recompute();
  void ComputeClassic(const std::vector<double>& usage);
  void ComputeFairTree(const std::vector<double>& usage);
  double UsageFactor(const std::string& qos) const;

  struct Running {
    ChargedJob job;
    int64_t accrued_until = 0;
  };

  FairShareConfig cfg_;
  std::shared_ptr<const AssocTree> tree_;
  int64_t last_update_ = 0;
  int64_t next_reset_ = 0;
  std::unordered_map<uint32_t, double> own_usage_;  // by association id
  std::map<std::string, double, std::less<>> qos_usage_;
  std::map<uint32_t, Running> running_;  // by job id
  // Computed, indexed like tree_->nodes().
  std::vector<ShareValues> values_;
  std::map<std::pair<std::string, std::string>, double> user_factor_;  // (user, account)
};

}  // namespace shoal::sched
