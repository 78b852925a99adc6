// Preemption in the controller (PreemptType=preempt/partition_prio, PreemptMode=CANCEL|REQUEUE,
// GraceTime): when the highest-priority job waiting in a partition cannot start, the pure
// sched/preempt library picks a minimal set of lower-tier running jobs, and this file ends them.
// The preemptor starts in a later pass, once its victims' nodes have confirmed the ends.
#include <algorithm>

#include "common/log.h"
#include "common/units.h"
#include "ctld/controller.h"
#include "sched/preempt.h"

namespace shoal::ctld {
namespace {

std::optional<sched::PreemptMode> ModeOf(const std::string& text) {
  if (text.empty()) return std::nullopt;
  auto mode = sched::ParsePreemptMode(text);
  if (!mode) return std::nullopt;
  return *mode;
}

}  // namespace

void Controller::LoadPreemptConfig() {
  auto type = sched::ParsePreemptType(conf_.Get("PreemptType", "preempt/none"));
  if (!type) {
    LogError("%s: %s; preemption is off", type.error().c_str(), conf_.Get("PreemptType").c_str());
    return;
  }
  preempt_.type = *type;
  if (auto mode = ModeOf(conf_.Get("PreemptMode", "OFF"))) preempt_.cluster_mode = *mode;
  preempt_.job_requeue = conf_.Get("JobRequeue", "1") != "0";
  preempt_.youngest_first =
      conf_.Get("SchedulerParameters").find("preempt_youngest_first") != std::string::npos;
  std::string exempt = conf_.Get("PreemptExemptTime");
  if (!exempt.empty()) {
    if (auto minutes = ParseTimeLimit(exempt); minutes && *minutes != kTimeNoVal)
      preempt_.preempt_exempt_time = int64_t(*minutes) * 60;
  }
}

bool Controller::TryPreemption(pb::JobRecord& job, int partition, int64_t now) {
  if (preempt_.type != sched::PreemptType::kPartitionPrio) return false;
  // One preemption at a time: while victims are still ending, their resources are already
  // promised, and picking more would preempt jobs for nothing.
  for (const auto& [id, other] : jobs_) {
    if (other.completing() && other.preempt_time() > 0) return false;
    // A job suspended for this very job already made room for it.
    if (other.state() == pb::JOB_SUSPENDED && other.preempted_by() == job.job_id()) return false;
  }

  const Partition& part = partitions_[partition];
  sched::PreemptorJob preemptor;
  preemptor.job_id = job.job_id();
  preemptor.partition_tier = part.rec.priority_tier();
  preemptor.qos = job.spec().qos().empty() ? "normal" : job.spec().qos();

  std::vector<sched::PreemptibleJob> running;
  for (const auto& [id, other] : jobs_) {
    if (other.state() != pb::JOB_RUNNING || other.completing()) continue;
    const Partition* p = FindPartition(other.partition());
    if (!p) continue;
    sched::PreemptibleJob r;
    r.job_id = id;
    r.partition_tier = p->rec.priority_tier();
    r.qos = other.spec().qos().empty() ? "normal" : other.spec().qos();
    r.partition_mode = ModeOf(p->rec.preempt_mode());
    r.grace_time = p->rec.grace_time_s();
    r.start_time = other.start_time();
    r.num_nodes = static_cast<uint32_t>(other.nodes_size());
    r.requeue = other.requeue();
    for (const auto& n : other.nodes()) r.nodes.push_back(FindNode(n));
    running.push_back(std::move(r));
  }
  if (running.empty()) return false;

  sched::JobShape shape = ShapeFor(job, part);
  auto fits = [&](const std::vector<uint32_t>& freed) {
    std::vector<sched::NodeView> views = views_;
    for (uint32_t id : freed) {
      const pb::JobRecord* victim = FindJob(id);
      if (victim) sched::Release(views, ShapeOfJob(*victim), PlacementOf(*victim));
    }
    return sched::PlaceJob(shape, views).has_value();
  };
  auto plan = sched::PlanPreemption(preempt_, preemptor, running, now, fits);
  if (!plan || plan->victims.empty()) return false;

  std::vector<pb::JobRecord*> changed;
  for (const auto& v : plan->victims) {
    pb::JobRecord* victim = FindJob(v.job_id);
    if (!victim) continue;
    const Partition* p = FindPartition(victim->partition());
    uint32_t kill_wait = conf_.KillWait() + (p ? p->rec.grace_time_s() : 0);
    victim->set_preempt_time(now);
    LogInfo("job %u preempted by job %u (%s)", v.job_id, job.job_id(),
            v.action == sched::PreemptAction::kRequeue   ? "requeue"
            : v.action == sched::PreemptAction::kSuspend ? "suspend"
                                                         : "cancel");
    if (v.action == sched::PreemptAction::kSuspend) {
      SuspendJob(*victim);
      victim->set_preempted_by(job.job_id());
      preempt_suspended_.insert(victim->job_id());
      victim->set_reason("Preempted");
    } else if (v.action == sched::PreemptAction::kRequeue) {
      victim->set_state_desc("requeue");
      TerminateRunning(*victim, pb::JOB_RUNNING, "requeue", kill_wait);
    } else {
      TerminateRunning(*victim, pb::JOB_PREEMPTED, "preempted", kill_wait);
      victim->set_reason("Preempted");
    }
    changed.push_back(victim);
  }
  std::vector<pb::JournalRecord> recs;
  for (auto* victim : changed) {
    pb::JournalRecord rec;
    *rec.mutable_job() = *victim;
    recs.push_back(std::move(rec));
  }
  Persist(std::move(recs), nullptr);
  return true;
}

}  // namespace shoal::ctld
