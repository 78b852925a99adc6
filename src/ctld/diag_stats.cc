#include "ctld/diag_stats.h"

#include <algorithm>

namespace shoal::ctld {

RpcType RpcTypeOf(const pb::Request& req) {
  // Numbers are Slurm's slurm_msg_type_t values (never renumbered across releases), so sdiag
  // output and dashboards keyed on them read the same as with slurmctld.
  using R = pb::Request;
  switch (req.body_case()) {
    case R::kSubmitJob:
      if (req.submit_job().spec().interactive()) return {"REQUEST_RESOURCE_ALLOCATION", 4001};
      return {"REQUEST_SUBMIT_BATCH_JOB", 4003};
    case R::kJobQuery:
      return {"REQUEST_JOB_INFO", 2003};
    case R::kStepQuery:
      return {"REQUEST_JOB_STEP_INFO", 2005};
    case R::kNodeQuery:
      return {"REQUEST_NODE_INFO", 2007};
    case R::kConfigQuery:
      return {"REQUEST_BUILD_INFO", 2001};
    case R::kShareQuery:
      return {"REQUEST_SHARE_INFO", 2022};
    case R::kReservationQuery:
      return {"REQUEST_RESERVATION_INFO", 2024};
    case R::kPriorityQuery:
      return {"REQUEST_PRIORITY_FACTORS", 2026};
    case R::kTopologyQuery:
      return {"REQUEST_TOPO_INFO", 2028};
    case R::kDiag:
      return {"REQUEST_STATS_INFO", 2035};
    case R::kConfigFiles:
      return {"REQUEST_CONFIG", 2015};
    case R::kUpdateJob:
      return {"REQUEST_UPDATE_JOB", 3001};
    case R::kJobControl:
      switch (req.job_control().action()) {
        case pb::JobControlRequest::REQUEUE:
        case pb::JobControlRequest::REQUEUE_HOLD:
          return {"REQUEST_JOB_REQUEUE", 5023};
        case pb::JobControlRequest::SUSPEND:
        case pb::JobControlRequest::RESUME:
          return {"REQUEST_SUSPEND", 5014};
        case pb::JobControlRequest::TOP:
          return {"REQUEST_TOP_JOB", 5038};
        default:
          return {"REQUEST_UPDATE_JOB", 3001};  // hold/release are job updates
      }
    case R::kUpdateNode:
    case R::kNodeDrain:
      return {"REQUEST_UPDATE_NODE", 3002};
    case R::kReservation:
      switch (req.reservation().action()) {
        case pb::ReservationRequest::UPDATE:
          return {"REQUEST_UPDATE_RESERVATION", 3009};
        case pb::ReservationRequest::DELETE:
          return {"REQUEST_DELETE_RESERVATION", 3008};
        default:
          return {"REQUEST_CREATE_RESERVATION", 3006};
      }
    case R::kAllocationWait:
      return {"REQUEST_JOB_ALLOCATION_INFO", 4014};
    case R::kCancelJob:
      return {"REQUEST_KILL_JOB", 5032};
    case R::kSignalStep:
      return {"REQUEST_CANCEL_JOB_STEP", 5005};
    case R::kStepCreate:
      return {"REQUEST_JOB_STEP_CREATE", 5001};
    case R::kStepComplete:
      return {"REQUEST_STEP_COMPLETE", 5016};
    case R::kReleaseAllocation:
      return {"REQUEST_COMPLETE_JOB_ALLOCATION", 5017};
    case R::kJobComplete:
      return {"REQUEST_COMPLETE_BATCH_SCRIPT", 5018};
    case R::kToken:
      return {"REQUEST_AUTH_TOKEN", 5039};
    case R::kPing:
      return {"REQUEST_PING", 1008};
    case R::kNodeRegister:
      return {"MESSAGE_NODE_REGISTRATION_STATUS", 1002};
    case R::kReconfigure:
      return {"REQUEST_RECONFIGURE", 1003};
    case R::kRebootNodes:
      return {"REQUEST_REBOOT_NODES", 1015};
    // The node's periodic word to the controller answers what Slurm's controller pings for.
    case R::kHeartbeat:
      return {"RESPONSE_PING_SLURMD", 1016};
    case R::kPrologEpilog:
      if (req.prolog_epilog().epilog()) return {"MESSAGE_EPILOG_COMPLETE", 6012};
      return {"REQUEST_COMPLETE_PROLOG", 6018};
    default:
      return {"INVALID", 0};
  }
}

void DiagStats::RecordRpc(RpcType type, uint32_t uid, uint64_t usec) {
  RpcTypeStats& t = by_type_[type.id];
  t.name = type.name;
  ++t.count;
  t.total_usec += usec;
  t.lifetime.Observe(kRpcLatencyBounds, usec);
  RpcUserStats& u = by_user_[uid];
  ++u.count;
  u.total_usec += usec;
  ++u.lifetime_count;
  u.lifetime_usec += usec;
}

void DiagStats::JobEnded(pb::JobState state) {
  switch (state) {
    case pb::JOB_COMPLETED:
      ++jobs_completed_;
      ++lifetime_completed_;
      break;
    case pb::JOB_CANCELLED:
      ++jobs_canceled_;
      ++lifetime_canceled_;
      break;
    case pb::JOB_FAILED:
    case pb::JOB_NODE_FAIL:
    case pb::JOB_BOOT_FAIL:
    case pb::JOB_OUT_OF_MEMORY:
      ++jobs_failed_;
      ++lifetime_failed_;
      break;
    default:  // TIMEOUT, DEADLINE, PREEMPTED: not counted by Slurm's three counters either
      break;
  }
}

void DiagStats::NotePlan(uint32_t depth, const sched::CyclePlan& plan) {
  plan_depth_ = depth;
  plan_tested_ = plan.stats.backfill_tested;
  plan_started_ = static_cast<uint32_t>(plan.starts.size());
  plan_backfilled_ = static_cast<uint32_t>(std::count_if(
      plan.starts.begin(), plan.starts.end(), [](const auto& s) { return s.backfilled; }));
  jobs_started_ += plan_started_;
  lifetime_started_ += plan_started_;
}

void DiagStats::ScheduleCycle(uint64_t usec, uint32_t queue_len) {
  sched_.cycle_last = usec;
  sched_.cycle_max = std::max(sched_.cycle_max, usec);
  sched_.cycle_sum += usec;
  ++sched_.cycle_counter;
  sched_.depth_sum += plan_depth_;
  sched_.queue_len = queue_len;
  plan_depth_ = plan_tested_ = plan_started_ = plan_backfilled_ = 0;
}

void DiagStats::BackfillCycle(uint64_t usec, uint32_t queue_len, int64_t now) {
  bf_.backfilled_jobs += plan_backfilled_;
  bf_.last_backfilled_jobs += plan_backfilled_;
  ++bf_.cycle_counter;
  bf_.when_last_cycle = now;
  bf_.cycle_last = usec;
  bf_.cycle_max = std::max(bf_.cycle_max, usec);
  bf_.cycle_sum += usec;
  bf_.last_depth = plan_depth_;
  bf_.last_depth_try = plan_tested_;
  bf_.depth_sum += plan_depth_;
  bf_.depth_try_sum += plan_tested_;
  bf_.queue_len = queue_len;
  bf_.queue_len_sum += queue_len;
  plan_depth_ = plan_tested_ = plan_started_ = plan_backfilled_ = 0;
}

void DiagStats::JournalCommit(uint64_t usec) {
  commits_.Observe(kCommitLatencyBounds, usec);
  ++commit_count_;
  commit_usec_sum_ += usec;
  commit_usec_max_ = std::max(commit_usec_max_, usec);
}

void DiagStats::Reset(int64_t now) {
  since_ = now;
  for (auto& [id, t] : by_type_) t.count = t.total_usec = 0;
  for (auto& [uid, u] : by_user_) u.count = u.total_usec = 0;
  jobs_submitted_ = jobs_started_ = jobs_completed_ = jobs_canceled_ = jobs_failed_ = 0;
  sched_ = Sched{};
  uint64_t backfilled = bf_.backfilled_jobs;  // "since last slurm start": kept
  bf_ = Bf{};
  bf_.backfilled_jobs = backfilled;
  commit_count_ = commit_usec_sum_ = commit_usec_max_ = 0;
}

void DiagStats::Fill(pb::DiagResponse* out,
                     const std::function<std::string(uint32_t)>& user_name) const {
  out->set_since(since_);
  out->set_jobs_submitted(jobs_submitted_);
  out->set_jobs_started(jobs_started_);
  out->set_jobs_completed(jobs_completed_);
  out->set_jobs_canceled(jobs_canceled_);
  out->set_jobs_failed(jobs_failed_);
  out->set_schedule_cycle_last(sched_.cycle_last);
  out->set_schedule_cycle_max(sched_.cycle_max);
  out->set_schedule_cycle_sum(sched_.cycle_sum);
  out->set_schedule_cycle_counter(sched_.cycle_counter);
  out->set_schedule_cycle_depth(sched_.depth_sum);
  out->set_schedule_queue_len(sched_.queue_len);
  out->set_bf_backfilled_jobs(bf_.backfilled_jobs);
  out->set_bf_last_backfilled_jobs(bf_.last_backfilled_jobs);
  out->set_bf_cycle_counter(bf_.cycle_counter);
  out->set_bf_when_last_cycle(bf_.when_last_cycle);
  out->set_bf_cycle_last(bf_.cycle_last);
  out->set_bf_cycle_max(bf_.cycle_max);
  out->set_bf_cycle_sum(bf_.cycle_sum);
  out->set_bf_last_depth(bf_.last_depth);
  out->set_bf_last_depth_try(bf_.last_depth_try);
  out->set_bf_depth_sum(bf_.depth_sum);
  out->set_bf_depth_try_sum(bf_.depth_try_sum);
  out->set_bf_queue_len(bf_.queue_len);
  out->set_bf_queue_len_sum(bf_.queue_len_sum);
  out->set_bf_table_size(bf_.table_size);
  out->set_bf_table_size_sum(bf_.table_size_sum);
  for (const auto& [id, t] : by_type_) {
    if (t.count == 0) continue;  // seen before the last reset only
    auto* row = out->add_rpc_by_type();
    row->set_name(t.name);
    row->set_id(id);
    row->set_count(t.count);
    row->set_total_usec(t.total_usec);
  }
  for (const auto& [uid, u] : by_user_) {
    if (u.count == 0) continue;
    auto* row = out->add_rpc_by_user();
    row->set_name(user_name(uid));
    row->set_id(uid);
    row->set_count(u.count);
    row->set_total_usec(u.total_usec);
  }
  out->set_journal_commits(commit_count_);
  out->set_journal_commit_usec_sum(commit_usec_sum_);
  out->set_journal_commit_usec_max(commit_usec_max_);
}

}  // namespace shoal::ctld
