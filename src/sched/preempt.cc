#include "sched/preempt.h"

#include <algorithm>
#include <cctype>

namespace shoal::sched {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Result<PreemptType> ParsePreemptType(std::string_view text) {
  std::string t = Upper(text);
  if (t == "PREEMPT/NONE" || t.empty()) return PreemptType::kNone;
  if (t == "PREEMPT/PARTITION_PRIO") return PreemptType::kPartitionPrio;
  if (t == "PREEMPT/QOS") return PreemptType::kQos;
  return InvalidArgument("Invalid PreemptType: " + std::string(text));
}

Result<PreemptMode> ParsePreemptMode(std::string_view text) {
  PreemptMode m;
  std::string t = Upper(text);
  size_t pos = 0;
  bool any_action = false;
  while (pos <= t.size()) {
    size_t c = t.find(',', pos);
    std::string item = t.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
    PreemptAction a = PreemptAction::kOff;
    bool is_action = true;
    if (item == "OFF") {
      a = PreemptAction::kOff;
    } else if (item == "CANCEL") {
      a = PreemptAction::kCancel;
    } else if (item == "REQUEUE") {
      a = PreemptAction::kRequeue;
    } else if (item == "SUSPEND") {
      a = PreemptAction::kSuspend;
    } else if (item == "GANG") {
      m.gang = true;
      is_action = false;
    } else if (item == "WITHIN") {
      m.within = true;
      is_action = false;
    } else {
      return InvalidArgument("Invalid PreemptMode: " + std::string(text));
    }
    if (is_action) {
      if (any_action) return InvalidArgument("Invalid PreemptMode: " + std::string(text));
      any_action = true;
      m.action = a;
    }
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  return m;
}

std::string FormatPreemptMode(const PreemptMode& m) {
  std::string out;
  switch (m.action) {
    case PreemptAction::kOff:
      out = "OFF";
      break;
    case PreemptAction::kCancel:
      out = "CANCEL";
      break;
    case PreemptAction::kRequeue:
      out = "REQUEUE";
      break;
    case PreemptAction::kSuspend:
      out = "SUSPEND";
      break;
  }
  if (m.gang) out = (m.action == PreemptAction::kOff ? "GANG" : out + ",GANG");
  if (m.within) out += ",WITHIN";
  return out;
}

PreemptMode EffectiveMode(const PreemptConfig& cfg, const PreemptibleJob& v) {
  if (cfg.type == PreemptType::kPartitionPrio && v.partition_mode) return *v.partition_mode;
  if (cfg.type == PreemptType::kQos && v.qos_mode) return *v.qos_mode;
  return cfg.cluster_mode;
}

bool CanPreempt(const PreemptConfig& cfg, const PreemptorJob& job, const PreemptibleJob& v,
                int64_t now) {
  if (cfg.type == PreemptType::kNone || v.suspended || v.job_id == job.job_id) return false;
  PreemptMode mode = EffectiveMode(cfg, v);
  if (mode.action == PreemptAction::kOff) return false;
  if (cfg.type == PreemptType::kPartitionPrio) {
    if (job.partition_tier <= v.partition_tier) return false;
  } else {
    bool listed =
        std::find(job.qos_preempt.begin(), job.qos_preempt.end(), v.qos) != job.qos_preempt.end();
    bool within = v.qos == job.qos && (job.qos_within || cfg.cluster_mode.within);
    if (!listed && !within) return false;
  }
  if (mode.action == PreemptAction::kCancel || mode.action == PreemptAction::kRequeue) {
    int64_t exempt = v.qos_exempt_time ? *v.qos_exempt_time : cfg.preempt_exempt_time;
    if (exempt > 0 && now - v.start_time < exempt) return false;
  }
  return true;
}

std::vector<const PreemptibleJob*> PreemptionCandidates(const PreemptConfig& cfg,
                                                        const PreemptorJob& job,
                                                        const std::vector<PreemptibleJob>& running,
                                                        int64_t now) {
  std::vector<const PreemptibleJob*> out;
  for (const auto& r : running)
    if (CanPreempt(cfg, job, r, now)) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [&](const PreemptibleJob* a, const PreemptibleJob* b) {
    if (cfg.type == PreemptType::kQos) {
      if (a->qos_priority != b->qos_priority) return a->qos_priority < b->qos_priority;
    } else if (a->partition_tier != b->partition_tier) {
      return a->partition_tier < b->partition_tier;
    }
    if (!cfg.youngest_first && a->num_nodes != b->num_nodes) return a->num_nodes < b->num_nodes;
    if (a->start_time != b->start_time) return a->start_time > b->start_time;
    return a->job_id > b->job_id;
  });
  return out;
}

std::optional<PreemptPlan> PlanPreemption(const PreemptConfig& cfg, const PreemptorJob& job,
                                          const std::vector<PreemptibleJob>& running, int64_t now,
                                          const FitsFn& fits) {
  if (fits({})) return PreemptPlan{};
  if (cfg.type == PreemptType::kNone) return std::nullopt;
  auto cands = PreemptionCandidates(cfg, job, running, now);
  std::vector<const PreemptibleJob*> chosen;
  std::vector<uint32_t> ids;
  bool ok = false;
  for (const PreemptibleJob* c : cands) {
    chosen.push_back(c);
    ids.push_back(c->job_id);
    if (fits(ids)) {
      ok = true;
      break;
    }
  }
  if (!ok) return std::nullopt;
  // Second stage: the job that made it fit goes first; then drop every victim not needed,
  // trying the most valuable (last in preemption order) first.
  if (chosen.size() > 1) {
    std::rotate(chosen.begin(), chosen.end() - 1, chosen.end());
    for (size_t i = chosen.size(); i-- > 0;) {
      std::vector<uint32_t> without;
      for (size_t j = 0; j < chosen.size(); ++j)
        if (j != i) without.push_back(chosen[j]->job_id);
      if (fits(without)) chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  PreemptPlan plan;
  for (const PreemptibleJob* c : chosen) {
    Victim v;
    v.job_id = c->job_id;
    PreemptMode mode = EffectiveMode(cfg, *c);
    v.action = mode.action;
    if (v.action == PreemptAction::kRequeue && !(c->requeue && c->batch))
      v.action = PreemptAction::kCancel;
    v.sigterm_time = now;
    v.sigkill_time = v.action == PreemptAction::kSuspend ? now : now + c->grace_time;
    switch (v.action) {
      case PreemptAction::kSuspend:
        v.state = "SUSPENDED";
        v.reason = "Preempted";
        break;
      case PreemptAction::kRequeue:
        v.state = "PENDING";
        v.reason = "BeginTime";
        break;
      default:
        v.state = "PREEMPTED";
        v.reason = "None";
        break;
    }
    plan.victims.push_back(std::move(v));
  }
  return plan;
}

FitsFn CapacityFits(std::vector<NodeCapacity> free, std::vector<JobHolding> holdings,
                    PerNodeNeed need) {
  return [free = std::move(free), holdings = std::move(holdings),
          need](const std::vector<uint32_t>& freed) {
    std::vector<NodeCapacity> f = free;
    for (const auto& h : holdings) {
      if (std::find(freed.begin(), freed.end(), h.job_id) == freed.end()) continue;
      if (h.node < 0 || static_cast<size_t>(h.node) >= f.size()) continue;
      auto& n = f[static_cast<size_t>(h.node)];
      n.free_cpus += h.cpus;
      if (!need.suspend) {
        n.free_mem_mb += h.mem_mb;
        n.free_gpus += h.gpus;
      }
    }
    uint32_t ok = 0;
    for (const auto& n : f)
      if (n.free_cpus >= need.cpus && n.free_mem_mb >= need.mem_mb && n.free_gpus >= need.gpus)
        ++ok;
    return ok >= need.nodes;
  };
}

}  // namespace shoal::sched
