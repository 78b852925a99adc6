#include "sched/assoc_limits.h"

#include <algorithm>
#include <optional>
#include <type_traits>
#include <vector>

namespace shoal::sched {
namespace {

bool HasFlag(const pb::AcctQos& q, std::string_view flag) {
  for (const std::string& f : q.flags())
    if (LowerAscii(f) == LowerAscii(flag)) return true;
  return false;
}

TresMap Parsed(std::string_view text) {
  auto r = ParseTres(text);
  return r.ok() ? std::move(*r) : TresMap{};  // shoaldbd validated it; ignore the unreadable
}

std::optional<uint64_t> Get(const TresMap& m, const char* key) {
  auto it = m.find(key);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

uint64_t Count(const TresMap& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

void Add(Tally& t, const JobSize& s, int delta, bool running) {
  auto step = [delta](auto& v, uint64_t amount) {
    using V = std::remove_reference_t<decltype(v)>;
    if (delta > 0)
      v = static_cast<V>(v + amount);
    else
      v = static_cast<V>(v >= amount ? v - amount : 0);  // never below zero on a double remove
  };
  if (!running) {
    step(t.submitted, 1);
    return;
  }
  step(t.running, 1);
  step(t.cpus, s.cpus);
  step(t.nodes, s.nodes);
  step(t.mem_mb, s.mem_mb);
  for (const auto& [k, v] : s.gres) {
    step(t.gres[k], v);
    if (t.gres[k] == 0) t.gres.erase(k);
  }
}

void Apply(UsageCounters& c, const AssocTree& tree, const CountedJob& job, int delta,
           bool running) {
  Add(c.assoc_own[job.assoc_id], job.shape, delta, running);
  int idx = tree.IndexOfId(job.assoc_id);
  if (idx == AssocTree::kNone) {
    Add(c.assoc_tree[job.assoc_id], job.shape, delta, running);
  } else {
    for (int i : tree.Chain(idx))
      Add(c.assoc_tree[tree.node(i).assoc.id()], job.shape, delta, running);
  }
  if (!job.qos.empty()) {
    Add(c.qos[job.qos], job.shape, delta, running);
    Add(c.qos_user[{job.qos, job.user}], job.shape, delta, running);
    Add(c.qos_account[{job.qos, job.account}], job.shape, delta, running);
  }
}

const Tally& Find(const std::unordered_map<uint32_t, Tally>& m, uint32_t id) {
  static const Tally kEmpty;
  auto it = m.find(id);
  return it == m.end() ? kEmpty : it->second;
}
template <typename M, typename K>
const Tally& FindKey(const M& m, const K& key) {
  static const Tally kEmpty;
  auto it = m.find(key);
  return it == m.end() ? kEmpty : it->second;
}

// "Would one more job of this shape exceed `limit`" for each TRES kind, with the reason names
// of the limit's family. `used` is what runs now (zero for stand-alone checks).
struct TresReasons {
  const char* cpu;
  const char* mem;
  const char* node;
  const char* gres;
};

const char* OverTres(const TresMap& limit, const Tally& used, const JobSize& s,
                     const TresReasons& r) {
  if (auto v = Get(limit, "cpu"); v && used.cpus + s.cpus > *v) return r.cpu;
  if (auto v = Get(limit, "mem"); v && s.mem_mb && used.mem_mb + s.mem_mb > *v) return r.mem;
  if (auto v = Get(limit, "node"); v && used.nodes + s.nodes > *v) return r.node;
  for (const auto& [k, v] : limit) {
    if (k.rfind("gres/", 0) != 0 || !r.gres) continue;
    // "gres/gpu" limits count every typed GPU too; the job's shape uses the untyped name.
    if (Count(used.gres, k) + Count(s.gres, k) > v) return r.gres;
  }
  return nullptr;
}

bool OverWall(std::optional<uint32_t> max_wall, const JobSize& s) {
  if (!max_wall || s.time_limit_min == kTimeNoVal) return false;
  return s.time_limit_min == kTimeInfinite || s.time_limit_min > *max_wall;
}

// CPU-minutes the job may use (its CPUs times its time limit); 0 when unlimited/unknown.
double JobCpuMinutes(const JobSize& s) {
  if (s.time_limit_min == kTimeNoVal || s.time_limit_min == kTimeInfinite) return 0;
  return double(s.cpus) * s.time_limit_min;
}

constexpr TresReasons kQosPerJob{"QOSMaxCpuPerJobLimit", "QOSMaxMemoryPerJob",
                                 "QOSMaxNodePerJobLimit", "QOSMaxGRESPerJob"};
constexpr TresReasons kQosPerUser{"QOSMaxCpuPerUserLimit", "QOSMaxMemoryPerUser",
                                  "QOSMaxNodePerUserLimit", "QOSMaxGRESPerUser"};
constexpr TresReasons kQosGrp{"QOSGrpCpuLimit", "QOSGrpMemLimit", "QOSGrpNodeLimit", "QOSGrpGRES"};
constexpr TresReasons kAssocPerJob{"AssocMaxCpuPerJobLimit", "AssocMaxMemPerJob",
                                   "AssocMaxNodePerJobLimit", "AssocMaxGRESPerJob"};
constexpr TresReasons kAssocGrp{"AssocGrpCpuLimit", "AssocGrpMemLimit", "AssocGrpNodeLimit",
                                "AssocGrpGRES"};

// Per-job limits of the QOS and the association chain, the job alone (DenyOnLimit at submit,
// and the first pending checks). Grp TRES limits count as per-job limits here only when
// `with_grp` (DenyOnLimit treats them so).
const char* PerJobReason(const AssocTree& tree, int idx, const pb::AcctQos* qos, const JobSize& s,
                         bool with_grp) {
  static const Tally kNothing;
  if (qos) {
    const pb::AcctLimits& l = qos->limits();
    if (const char* r = OverTres(Parsed(l.max_tres_per_job()), kNothing, s, kQosPerJob)) return r;
    if (OverWall(l.has_max_wall_minutes() ? std::optional(l.max_wall_minutes()) : std::nullopt, s))
      return "QOSMaxWallDurationPerJobLimit";
    if (auto min = Get(Parsed(l.min_tres_per_job()), "cpu"); min && s.cpus < *min)
      return "QOSMinCpuNotSatisfied";
    if (auto v = Get(Parsed(l.max_tres_mins_per_job()), "cpu"); v && JobCpuMinutes(s) > *v)
      return "QOSMaxCpuMinutesPerJobLimit";
    if (with_grp)
      if (const char* r = OverTres(Parsed(l.grp_tres()), kNothing, s, kQosGrp)) return r;
  }
  if (idx == AssocTree::kNone) return nullptr;
  EffectiveLimits e = tree.Limits(idx);
  if (const char* r = OverTres(e.max_tres_per_job, kNothing, s, kAssocPerJob)) return r;
  if (OverWall(e.max_wall_minutes, s)) return "AssocMaxWallDurationPerJobLimit";
  if (auto v = Get(e.max_tres_mins_per_job, "cpu"); v && JobCpuMinutes(s) > *v)
    return "AssocMaxCpuMinutesPerJobLimit";
  if (with_grp) {
    for (int i : tree.Chain(idx))
      if (const char* r =
              OverTres(Parsed(tree.node(i).assoc.limits().grp_tres()), kNothing, s, kAssocGrp))
        return r;
  }
  return nullptr;
}

bool Reached(bool has, int32_t limit, uint32_t used) {
  return has && limit >= 0 && used + 1 > static_cast<uint32_t>(limit);
}

Status PolicyError() { return Error(kAcctPolicyError, kAcctPolicyText); }

}  // namespace

Result<EnforceFlags> ParseEnforce(std::string_view text) {
  EnforceFlags f;
  std::string rest = LowerAscii(text);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string item =
        rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? rest.size() + 1 : comma + 1;
    if (item.empty() || item == "none" || item == "0") continue;
    if (item == "associations") {
      f.associations = true;
    } else if (item == "limits") {
      f.associations = f.limits = true;
    } else if (item == "qos") {
      f.associations = f.qos = true;
    } else if (item == "safe") {
      f.associations = f.limits = f.safe = true;
    } else if (item == "wckeys" || item == "nojobs" || item == "nosteps" || item == "all" ||
               item == "1") {
      if (item == "all" || item == "1") f.associations = f.limits = f.qos = true;
    } else {
      return InvalidArgument("Invalid AccountingStorageEnforce: " + item);
    }
  }
  return f;
}

void CountSubmitted(UsageCounters& c, const AssocTree& tree, const CountedJob& job, int delta) {
  Apply(c, tree, job, delta, false);
}

void CountRunning(UsageCounters& c, const AssocTree& tree, const CountedJob& job, int delta) {
  Apply(c, tree, job, delta, true);
}

UsageCounters Recount(const AssocTree& tree, const std::vector<CountedJob>& submitted,
                      const std::vector<CountedJob>& running) {
  UsageCounters c;
  for (const CountedJob& j : submitted) CountSubmitted(c, tree, j, +1);
  for (const CountedJob& j : running) CountRunning(c, tree, j, +1);
  return c;
}

Result<ResolvedJob> ValidateSubmit(const AssocTree& tree, const UsageCounters& counters,
                                   const SubmitJob& job, const EnforceFlags& enforce) {
  ResolvedJob r;
  r.account = tree.ResolveAccount(job.user, job.account);
  r.assoc_index = tree.Find(job.user, r.account, job.partition);
  if (r.assoc_index == AssocTree::kNone) {
    if (enforce.associations) return Error(ErrorCode::kInvalidAccount, kInvalidAccountText);
    r.qos = job.qos.empty() ? "normal" : LowerAscii(job.qos);
    return r;
  }
  const AssocTree::Node& node = tree.node(r.assoc_index);
  r.assoc_id = node.assoc.id();
  r.qos = job.qos.empty() ? tree.DefaultQos(r.assoc_index) : LowerAscii(job.qos);
  const pb::AcctQos* qos = tree.Qos(r.qos);
  if (enforce.qos && (!qos || !tree.QosAllowed(r.assoc_index, r.qos)))
    return Error(ErrorCode::kInvalidQos, kInvalidQosText);
  if (!enforce.limits) return r;

  // Submit counts: the association's own MaxSubmitJobs, every level's GrpSubmitJobs.
  EffectiveLimits e = tree.Limits(r.assoc_index);
  if (e.max_submit_jobs &&
      Reached(true, *e.max_submit_jobs, Find(counters.assoc_own, r.assoc_id).submitted))
    return PolicyError();
  for (int i : tree.Chain(r.assoc_index)) {
    const pb::AcctAssoc& a = tree.node(i).assoc;
    if (Reached(a.limits().has_grp_submit_jobs(), a.limits().grp_submit_jobs(),
                Find(counters.assoc_tree, a.id()).submitted))
      return PolicyError();
  }
  if (qos) {
    const pb::AcctLimits& l = qos->limits();
    if (Reached(l.has_max_submit_jobs(), l.max_submit_jobs(),
                FindKey(counters.qos_user, std::make_pair(r.qos, job.user)).submitted) ||
        Reached(l.has_max_submit_jobs_per_account(), l.max_submit_jobs_per_account(),
                FindKey(counters.qos_account, std::make_pair(r.qos, r.account)).submitted) ||
        Reached(l.has_grp_submit_jobs(), l.grp_submit_jobs(),
                FindKey(counters.qos, r.qos).submitted))
      return PolicyError();
    if (HasFlag(*qos, "DenyOnLimit") && PerJobReason(tree, r.assoc_index, qos, job.shape, true))
      return PolicyError();
  }
  return r;
}

std::string PendingLimitReason(const LimitContext& ctx, const CountedJob& job) {
  const AssocTree& tree = ctx.tree;
  const UsageCounters& c = ctx.counters;
  int idx = tree.IndexOfId(job.assoc_id);
  const pb::AcctQos* qos = job.qos.empty() ? nullptr : tree.Qos(job.qos);
  const JobSize& s = job.shape;

  // Limits the job can never meet alone come first: they explain the wait best.
  if (const char* r = PerJobReason(tree, idx, qos, s, false)) return r;

  if (qos) {
    const pb::AcctLimits& l = qos->limits();
    const Tally& per_user = FindKey(c.qos_user, std::make_pair(job.qos, job.user));
    const Tally& per_acct = FindKey(c.qos_account, std::make_pair(job.qos, job.account));
    const Tally& all = FindKey(c.qos, job.qos);
    if (Reached(l.has_max_jobs(), l.max_jobs(), per_user.running)) return "QOSMaxJobsPerUserLimit";
    if (const char* r = OverTres(Parsed(l.max_tres_per_user()), per_user, s, kQosPerUser)) return r;
    if (Reached(l.has_max_jobs_per_account(), l.max_jobs_per_account(), per_acct.running))
      return "MaxJobsPerAccount";
    if (Reached(l.has_grp_jobs(), l.grp_jobs(), all.running)) return "QOSGrpJobsLimit";
    if (const char* r = OverTres(Parsed(l.grp_tres()), all, s, kQosGrp)) return r;
    if (auto v = Get(Parsed(l.grp_tres_mins()), "cpu"); v && ctx.minutes) {
      double used = ctx.minutes->QosCpuMinutes(job.qos);
      if (used >= double(*v) || (ctx.safe && used + JobCpuMinutes(s) > double(*v)))
        return "QOSGrpCPUMinutesLimit";
    }
  }

  if (idx == AssocTree::kNone) return "";
  EffectiveLimits e = tree.Limits(idx);
  if (e.max_jobs && Reached(true, *e.max_jobs, Find(c.assoc_own, job.assoc_id).running))
    return "AssocMaxJobsLimit";
  for (int i : tree.Chain(idx)) {
    const pb::AcctAssoc& a = tree.node(i).assoc;
    const pb::AcctLimits& l = a.limits();
    const Tally& t = Find(c.assoc_tree, a.id());
    if (Reached(l.has_grp_jobs(), l.grp_jobs(), t.running)) return "AssocGrpJobsLimit";
    if (const char* r = OverTres(Parsed(l.grp_tres()), t, s, kAssocGrp)) return r;
    if (auto v = Get(Parsed(l.grp_tres_mins()), "cpu"); v && ctx.minutes) {
      double used = ctx.minutes->AssocCpuMinutes(a.id());
      if (used >= double(*v) || (ctx.safe && used + JobCpuMinutes(s) > double(*v)))
        return "AssocGrpCPUMinutesLimit";
    }
  }
  return "";
}

}  // namespace shoal::sched
