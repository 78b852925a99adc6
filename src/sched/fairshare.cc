#include "sched/fairshare.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <functional>
#include <limits>
#include <set>

#include "common/units.h"

namespace shoal::sched {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
// What Slurm 22.05's sshare shows as root's NormShares: 0.000000, 2.328306e-10 when the column
// is narrow enough for the exponent form (one share in 2^32).
constexpr double kRootNormShares = 1.0 / 4294967296.0;

Status BadValue(std::string_view key, std::string_view value) {
  return InvalidArgument("Invalid " + std::string(key) + " value: " + std::string(value));
}

double ClassicFactor(double effective_usage, double norm_shares, double dampening) {
  if (norm_shares <= 0) return 0;
  return std::exp2(-(effective_usage / norm_shares) / dampening);
}

// The children an association shares with for fair-share: a Fairshare=parent account's
// children count as its parent's; Fairshare=parent users and accounts are listed apart.
struct FsChildren {
  std::vector<int> normal;
  std::vector<int> parent_users;
  std::vector<int> parent_accounts;
};

void CollectFsChildren(const AssocTree& t, int p, FsChildren& out) {
  for (int c : t.node(p).children) {
    const AssocTree::Node& n = t.node(c);
    if (n.assoc.shares() != kSharesParent) {
      out.normal.push_back(c);
    } else if (n.is_user) {
      out.parent_users.push_back(c);
    } else {
      out.parent_accounts.push_back(c);
      CollectFsChildren(t, c, out);
    }
  }
}

FsChildren ChildrenOf(const AssocTree& t, int p) {
  FsChildren out;
  CollectFsChildren(t, p, out);
  return out;
}

double SharesOf(const AssocTree& t, int i) { return double(t.node(i).assoc.shares()); }

// Local time midnight of the day `t` falls in, shifted by days/months/years.
int64_t LocalMidnight(int64_t t, int add_days, int add_months, int add_years, bool month_start,
                      int month_override = -1) {
  time_t tt = static_cast<time_t>(t);
  struct tm tm {};
  localtime_r(&tt, &tm);
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  tm.tm_mday += add_days;
  if (month_start) tm.tm_mday = 1;
  if (month_override >= 0) tm.tm_mon = month_override;
  tm.tm_mon += add_months;
  tm.tm_year += add_years;
  tm.tm_isdst = -1;
  return static_cast<int64_t>(mktime(&tm));
}

std::string TresRunMins(uint64_t cpu_s, uint64_t mem_s, uint64_t node_s) {
  // Slurm lists every cluster TRES; the ones Shoal does not count stay 0.
  return "cpu=" + std::to_string(cpu_s / 60) + ",mem=" + std::to_string(mem_s / 60) +
         ",energy=0,node=" + std::to_string(node_s / 60) +
         ",billing=" + std::to_string(cpu_s / 60) + ",fs/disk=0,vmem=0,pages=0";
}

}  // namespace

Result<FairShareConfig> ParseFairShareConfig(const ConfMap& conf) {
  FairShareConfig cfg;
  if (auto it = conf.find("PriorityDecayHalfLife"); it != conf.end()) {
    auto s = ParseDurationSeconds(it->second);
    if (!s) return BadValue("PriorityDecayHalfLife", it->second);
    cfg.decay_half_life_s = std::max<int64_t>(*s, 0);
  }
  if (auto it = conf.find("PriorityUsageResetPeriod"); it != conf.end()) {
    static const std::pair<const char*, UsageResetPeriod> kNames[] = {
        {"none", UsageResetPeriod::kNone},       {"now", UsageResetPeriod::kNow},
        {"daily", UsageResetPeriod::kDaily},     {"weekly", UsageResetPeriod::kWeekly},
        {"monthly", UsageResetPeriod::kMonthly}, {"quarterly", UsageResetPeriod::kQuarterly},
        {"yearly", UsageResetPeriod::kYearly}};
    std::string v = LowerAscii(it->second);
    bool found = false;
    for (auto [name, p] : kNames) {
      if (v == name) {
        cfg.reset_period = p;
        found = true;
      }
    }
    if (!found) return BadValue("PriorityUsageResetPeriod", it->second);
  }
  if (auto it = conf.find("PriorityFlags"); it != conf.end()) {
    std::string flags = LowerAscii(it->second);
    size_t pos = 0;
    while (pos <= flags.size()) {
      size_t comma = flags.find(',', pos);
      std::string f =
          flags.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      pos = comma == std::string::npos ? flags.size() + 1 : comma + 1;
      // DEPTH_OBLIVIOUS implies NO_FAIR_TREE (its own formula is not modelled: classic is used).
      if (f == "no_fair_tree" || f == "depth_oblivious") cfg.fair_tree = false;
    }
  }
  if (auto it = conf.find("PriorityCalcPeriod"); it != conf.end()) {
    auto s = ParseDurationSeconds(it->second);  // a bare number is minutes, as Slurm reads it
    if (!s || *s <= 0) return BadValue("PriorityCalcPeriod", it->second);
    cfg.calc_period_s = *s;
  }
  if (auto it = conf.find("FairShareDampeningFactor"); it != conf.end()) {
    char* end = nullptr;
    long v = std::strtol(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end || v < 1)
      return BadValue("FairShareDampeningFactor", it->second);
    cfg.dampening = double(v);
  }
  return cfg;
}

int64_t NextUsageReset(UsageResetPeriod period, int64_t after) {
  switch (period) {
    case UsageResetPeriod::kNone:
    case UsageResetPeriod::kNow:
      return 0;
    case UsageResetPeriod::kDaily:
      return LocalMidnight(after, 1, 0, 0, false);
    case UsageResetPeriod::kWeekly: {
      time_t tt = static_cast<time_t>(after);
      struct tm tm {};
      localtime_r(&tt, &tm);
      return LocalMidnight(after, 7 - tm.tm_wday, 0, 0, false);  // the next Sunday
    }
    case UsageResetPeriod::kMonthly:
      return LocalMidnight(after, 0, 1, 0, true);
    case UsageResetPeriod::kQuarterly: {
      time_t tt = static_cast<time_t>(after);
      struct tm tm {};
      localtime_r(&tt, &tm);
      return LocalMidnight(after, 0, 3, 0, true, tm.tm_mon / 3 * 3);
    }
    case UsageResetPeriod::kYearly:
      return LocalMidnight(after, 0, 0, 1, true, 0);
  }
  return 0;
}

FairShare::FairShare(FairShareConfig cfg) : cfg_(cfg) {}

void FairShare::SetConfig(const FairShareConfig& cfg) {
  bool period_changed = cfg.reset_period != cfg_.reset_period;
  cfg_ = cfg;
  if (period_changed)
    next_reset_ = last_update_ ? NextUsageReset(cfg_.reset_period, last_update_) : 0;
  if (cfg_.reset_period == UsageResetPeriod::kNow) ResetUsage();  // "at reconfiguration time"
  Recompute();
}

void FairShare::SetTree(std::shared_ptr<const AssocTree> tree) {
  tree_ = std::move(tree);
  Recompute();
}

double FairShare::UsageFactor(const std::string& qos) const {
  if (!tree_ || qos.empty()) return 1.0;
  const pb::AcctQos* q = tree_->Qos(qos);
  return q ? std::max(q->usage_factor(), 0.0) : 1.0;
}

void FairShare::JobStarted(uint32_t job_id, const ChargedJob& job) {
  Running r;
  r.job = job;
  r.job.qos = LowerAscii(job.qos);
  r.accrued_until = std::max(job.start_time, last_update_);
  running_[job_id] = std::move(r);
}

void FairShare::JobEnded(uint32_t job_id, int64_t end_time) {
  auto it = running_.find(job_id);
  if (it == running_.end()) return;
  const Running& r = it->second;
  if (end_time > r.accrued_until)
    Charge(r.job.assoc_id, r.job.qos,
           double(r.job.cpus) * double(end_time - r.accrued_until) * UsageFactor(r.job.qos));
  running_.erase(it);
}

void FairShare::Charge(uint32_t assoc_id, std::string_view qos, double amount) {
  if (amount <= 0) return;
  own_usage_[assoc_id] += amount;
  if (!qos.empty()) qos_usage_[LowerAscii(qos)] += amount;
}

void FairShare::Accrue(int64_t until) {
  for (auto& [id, r] : running_) {
    if (until <= r.accrued_until) continue;
    Charge(r.job.assoc_id, r.job.qos,
           double(r.job.cpus) * double(until - r.accrued_until) * UsageFactor(r.job.qos));
    r.accrued_until = until;
  }
}

void FairShare::Advance(int64_t now) {
  if (last_update_ != 0 && now > last_update_) {
    // Decay what was there, then add what ran meanwhile (as Slurm does each calc period).
    if (cfg_.decay_half_life_s > 0) {
      double f = std::exp2(-double(now - last_update_) / double(cfg_.decay_half_life_s));
      for (auto& [id, u] : own_usage_) u *= f;
      for (auto& [q, u] : qos_usage_) u *= f;
    }
  }
  Accrue(now);
  if (cfg_.reset_period != UsageResetPeriod::kNone && cfg_.reset_period != UsageResetPeriod::kNow) {
    if (next_reset_ == 0)
      next_reset_ = NextUsageReset(cfg_.reset_period, std::max(last_update_, now));
    if (now >= next_reset_) {
      ResetUsage();
      next_reset_ = NextUsageReset(cfg_.reset_period, now);
    }
  }
  last_update_ = std::max(last_update_, now);
  Recompute();
}

void FairShare::ResetUsage() {
  own_usage_.clear();
  qos_usage_.clear();
}

UsageState FairShare::Export() const {
  UsageState s;
  s.last_update = last_update_;
  s.next_reset = next_reset_;
  for (const auto& [id, u] : own_usage_)
    if (u > 0) s.assoc_usage.emplace_back(id, u);
  std::sort(s.assoc_usage.begin(), s.assoc_usage.end());
  for (const auto& [q, u] : qos_usage_)
    if (u > 0) s.qos_usage.emplace_back(q, u);
  return s;
}

void FairShare::Import(const UsageState& state) {
  own_usage_.clear();
  qos_usage_.clear();
  for (const auto& [id, u] : state.assoc_usage) own_usage_[id] = u;
  for (const auto& [q, u] : state.qos_usage) qos_usage_[LowerAscii(q)] = u;
  last_update_ = state.last_update;
  next_reset_ = state.next_reset;
  if (cfg_.reset_period == UsageResetPeriod::kNow) ResetUsage();  // "at startup"
  for (auto& [id, r] : running_) r.accrued_until = std::max(r.accrued_until, last_update_);
  Recompute();
}

void FairShare::Recompute() {
  values_.clear();
  user_factor_.clear();
  if (!tree_ || tree_->empty()) return;
  const auto& nodes = tree_->nodes();
  std::vector<double> usage(nodes.size(), 0.0);
  std::vector<int> order = tree_->PreOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    int i = *it;
    auto own = own_usage_.find(nodes[size_t(i)].assoc.id());
    usage[size_t(i)] += own == own_usage_.end() ? 0.0 : own->second;
    if (int p = nodes[size_t(i)].parent; p != AssocTree::kNone)
      usage[size_t(p)] += usage[size_t(i)];
  }
  values_.assign(nodes.size(), ShareValues{});
  for (size_t i = 0; i < nodes.size(); ++i) values_[i].usage = usage[i];
  if (cfg_.fair_tree)
    ComputeFairTree(usage);
  else
    ComputeClassic(usage);
  for (int i : order) {
    const AssocTree::Node& n = nodes[size_t(i)];
    if (!n.is_user) continue;
    auto key = std::make_pair(n.assoc.user(), n.account);
    if (n.assoc.partition().empty())
      user_factor_[key] = values_[size_t(i)].fairshare;
    else
      user_factor_.emplace(key, values_[size_t(i)].fairshare);
  }
}

void FairShare::ComputeClassic(const std::vector<double>& usage) {
  const AssocTree& t = *tree_;
  double total = usage[0];
  ShareValues& root = values_[0];
  root.norm_shares = 1.0;  // for the children; shown as kRootNormShares below
  root.norm_usage = kNaN;
  root.effective_usage = 1.0;
  root.fairshare = ClassicFactor(root.effective_usage, kRootNormShares, cfg_.dampening);
  root.level_fs = kNaN;
  std::function<void(int)> visit = [&](int p) {
    const ShareValues& pv = values_[size_t(p)];
    FsChildren fs = ChildrenOf(t, p);
    double sum = 0;
    for (int c : fs.normal) sum += SharesOf(t, c);
    for (int c : fs.normal) {
      ShareValues& v = values_[size_t(c)];
      double frac = sum > 0 ? SharesOf(t, c) / sum : 0.0;
      v.norm_shares = frac * pv.norm_shares;
      v.norm_usage = total > 0 ? usage[size_t(c)] / total : 0.0;
      v.effective_usage =
          p == 0 ? v.norm_usage : v.norm_usage + (pv.effective_usage - v.norm_usage) * frac;
      v.fairshare = ClassicFactor(v.effective_usage, v.norm_shares, cfg_.dampening);
      v.level_fs = kNaN;
      if (!t.node(c).is_user) visit(c);
    }
    for (const auto* list : {&fs.parent_users, &fs.parent_accounts}) {
      for (int c : *list) {
        ShareValues& v = values_[size_t(c)];
        v.norm_shares = pv.norm_shares;
        v.norm_usage = total > 0 ? usage[size_t(c)] / total : 0.0;
        v.effective_usage = pv.effective_usage;
        v.fairshare = pv.fairshare;
        v.level_fs = kNaN;
      }
    }
  };
  visit(0);
  values_[0].norm_shares = kRootNormShares;
}

void FairShare::ComputeFairTree(const std::vector<double>& usage) {
  const AssocTree& t = *tree_;
  const auto& nodes = t.nodes();
  double total = usage[0];
  ShareValues& root = values_[0];
  root.norm_shares = kRootNormShares;
  root.norm_usage = kNaN;
  root.effective_usage = 1.0;
  root.fairshare = kNaN;
  root.level_fs = kNaN;

  // Level Fairshare of every association, level by level (effective parents only).
  std::vector<FsChildren> fs(nodes.size());
  std::vector<int> parents{0};
  while (!parents.empty()) {
    int p = parents.back();
    parents.pop_back();
    fs[size_t(p)] = ChildrenOf(t, p);
    const FsChildren& f = fs[size_t(p)];
    double sum_s = 0, sum_u = 0;
    for (int c : f.normal) {
      sum_s += SharesOf(t, c);
      sum_u += usage[size_t(c)];
    }
    for (int c : f.normal) {
      ShareValues& v = values_[size_t(c)];
      v.norm_shares = sum_s > 0 ? SharesOf(t, c) / sum_s : 0.0;
      v.effective_usage = sum_u > 0 ? usage[size_t(c)] / sum_u : 0.0;
      v.norm_usage = total > 0 ? usage[size_t(c)] / total : 0.0;
      v.level_fs = v.norm_shares <= 0       ? 0.0
                   : v.effective_usage <= 0 ? kInf
                                            : v.norm_shares / v.effective_usage;
      v.fairshare = kNaN;
      if (!nodes[size_t(c)].is_user) parents.push_back(c);
    }
    for (const auto* list : {&f.parent_users, &f.parent_accounts}) {
      for (int c : *list) {
        ShareValues& v = values_[size_t(c)];
        v.norm_shares = values_[size_t(p)].norm_shares;
        v.effective_usage = values_[size_t(p)].effective_usage;
        v.norm_usage = total > 0 ? usage[size_t(c)] / total : 0.0;
        v.level_fs = kNaN;
        v.fairshare = kNaN;
      }
    }
  }

  // Rank users depth first, siblings by Level Fairshare (highest first). Ties: users share a
  // rank; a user tied with an account gets the account's best rank; tied accounts merge.
  size_t user_count = 0;
  for (const auto& n : nodes) user_count += n.is_user ? 1 : 0;
  if (user_count == 0) return;
  int64_t counter = static_cast<int64_t>(user_count);
  auto assign = [&](int u, int64_t rank) {
    values_[size_t(u)].fairshare = double(rank) / double(user_count);
    --counter;
  };
  std::function<void(std::vector<int>, const std::vector<int>&)> rank_group =
      [&](std::vector<int> items, const std::vector<int>& parent_users) {
        int64_t top = counter;
        std::stable_sort(items.begin(), items.end(), [&](int a, int b) {
          return values_[size_t(a)].level_fs > values_[size_t(b)].level_fs;
        });
        for (size_t i = 0; i < items.size();) {
          size_t j = i;
          while (j < items.size() &&
                 values_[size_t(items[j])].level_fs == values_[size_t(items[i])].level_fs)
            ++j;
          int64_t start = counter;
          std::vector<int> merged, merged_parent_users;
          for (size_t k = i; k < j; ++k) {
            int c = items[k];
            if (nodes[size_t(c)].is_user) continue;
            const FsChildren& f = fs[size_t(c)];
            merged.insert(merged.end(), f.normal.begin(), f.normal.end());
            merged_parent_users.insert(merged_parent_users.end(), f.parent_users.begin(),
                                       f.parent_users.end());
          }
          if (!merged.empty() || !merged_parent_users.empty())
            rank_group(std::move(merged), merged_parent_users);
          for (size_t k = i; k < j; ++k)
            if (nodes[size_t(items[k])].is_user) assign(items[k], start);
          i = j;
        }
        for (int u : parent_users) assign(u, top);
      };
  rank_group(fs[0].normal, fs[0].parent_users);
}

double FairShare::Factor(const std::string& user, const std::string& account) const {
  std::string acct = account;
  if (acct.empty() && tree_) acct = tree_->ResolveAccount(user, "");
  auto it = user_factor_.find({user, LowerAscii(acct)});
  return it == user_factor_.end() ? 0.0 : it->second;
}

double FairShare::FactorOfAssoc(uint32_t assoc_id) const {
  const ShareValues* v = Values(assoc_id);
  return v && !std::isnan(v->fairshare) ? v->fairshare : 0.0;
}

const ShareValues* FairShare::Values(uint32_t assoc_id) const {
  if (!tree_) return nullptr;
  int i = tree_->IndexOfId(assoc_id);
  if (i == AssocTree::kNone || size_t(i) >= values_.size()) return nullptr;
  return &values_[size_t(i)];
}

double FairShare::AssocCpuMinutes(uint32_t assoc_id) const {
  // Subtree usage as of the last recompute plus what was charged since to this association.
  const ShareValues* v = Values(assoc_id);
  if (v) return v->usage / 60.0;
  auto it = own_usage_.find(assoc_id);
  return it == own_usage_.end() ? 0.0 : it->second / 60.0;
}

double FairShare::QosCpuMinutes(std::string_view qos) const {
  auto it = qos_usage_.find(LowerAscii(qos));
  return it == qos_usage_.end() ? 0.0 : it->second / 60.0;
}

pb::ShareQueryResponse FairShare::Shares(const pb::ShareQueryRequest& req, std::string_view caller,
                                         int64_t now) const {
  pb::ShareQueryResponse resp;
  resp.set_fair_tree(cfg_.fair_tree);
  if (!tree_ || tree_->empty() || values_.size() != tree_->nodes().size()) return resp;
  const AssocTree& t = *tree_;
  std::set<std::string, std::less<>> users(req.users().begin(), req.users().end());
  bool all_users = req.all_users() || (users.empty() && caller.empty());
  if (users.empty() && !all_users) users.insert(std::string(caller));
  std::set<std::string, std::less<>> accounts;
  for (const std::string& a : req.accounts()) accounts.insert(LowerAscii(a));

  // Remaining TRES-seconds of running jobs, per subtree (TRESRunMins).
  struct Run {
    uint64_t cpu = 0, mem = 0, node = 0;
  };
  std::vector<Run> run(t.nodes().size());
  for (const auto& [id, r] : running_) {
    int idx = t.IndexOfId(r.job.assoc_id);
    uint32_t limit = r.job.time_limit_min;
    if (idx == AssocTree::kNone || limit == kTimeInfinite || limit == kTimeNoVal) continue;
    int64_t left = std::max<int64_t>(r.job.start_time + int64_t(limit) * 60 - now, 0);
    for (int i : t.Chain(idx)) {
      run[size_t(i)].cpu += uint64_t(left) * r.job.cpus;
      run[size_t(i)].mem += uint64_t(left) * r.job.mem_mb;
      run[size_t(i)].node += uint64_t(left) * r.job.nodes;
    }
  }

  // Indentation as sshare draws it: one more than the parent's row when that row is shown,
  // none when it is not (sshare -A physics starts at column 0).
  std::vector<int> indent(t.nodes().size(), -1);
  for (int i : t.PreOrder()) {
    const AssocTree::Node& n = t.node(i);
    if (n.is_user && !all_users && !users.count(n.assoc.user())) continue;
    if (!accounts.empty() && !accounts.count(n.account)) continue;
    indent[size_t(i)] = n.parent == AssocTree::kNone || indent[size_t(n.parent)] < 0
                            ? 0
                            : indent[size_t(n.parent)] + 1;
    const ShareValues& v = values_[size_t(i)];
    pb::ShareRecord* r = resp.add_records();
    r->set_account(n.account);
    r->set_user(n.assoc.user());
    r->set_partition(n.assoc.partition());
    r->set_depth(uint32_t(indent[size_t(i)]));
    r->set_raw_shares(i == 0 ? kNoRawShares : n.assoc.shares());
    r->set_norm_shares(v.norm_shares);
    r->set_raw_usage(static_cast<uint64_t>(v.usage));
    r->set_norm_usage(v.norm_usage);
    r->set_effective_usage(v.effective_usage);
    r->set_fairshare(v.fairshare);
    r->set_level_fs(v.level_fs);
    r->set_grp_tres_mins(n.assoc.limits().grp_tres_mins());
    r->set_tres_run_mins(TresRunMins(run[size_t(i)].cpu, run[size_t(i)].mem, run[size_t(i)].node));
  }
  return resp;
}

}  // namespace shoal::sched
