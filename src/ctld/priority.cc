// Job priority in the controller: priority/basic (FIFO) or priority/multifactor through the pure
// sched/priority library, recomputed every PriorityCalcPeriod, and the sprio query.
#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "common/units.h"
#include "ctld/controller.h"

namespace shoal::ctld {
namespace {

// priority/basic: earlier submissions first; nice lowers it, as in Slurm.
uint32_t FifoPriority(uint32_t job_id, int32_t nice) {
  int64_t p = int64_t(sched::kBasicTopPriority) - job_id - nice;
  return static_cast<uint32_t>(std::clamp<int64_t>(p, 1, 0xFFFFFFF0LL));
}

int64_t Round(double v) { return static_cast<int64_t>(v + (v >= 0 ? 0.5 : -0.5)); }

}  // namespace

void Controller::LoadSchedulingConfig() {
  auto prio = sched::ParsePriorityConfig(conf_.options);
  if (!prio) {
    LogError("%s; using priority/basic", prio.error().c_str());
  } else {
    priority_ = std::move(*prio);
  }
  auto bf = sched::ParseSchedulerParameters(conf_.Get("SchedulerParameters"));
  if (!bf) {
    LogError("SchedulerParameters: %s; using the defaults", bf.error().c_str());
  } else {
    backfill_ = *bf;
  }
  backfill_.enabled = conf_.Get("SchedulerType", "sched/backfill") != "sched/builtin";
  if (auto parsed = sched::ParseMainSchedulerParameters(conf_.Get("SchedulerParameters"));
      !parsed) {
    LogError("SchedulerParameters: %s; using the defaults", parsed.error().c_str());
    main_sched_ = sched::MainSchedParams();
  } else {
    main_sched_ = *parsed;
  }
  // bf_interval (seconds, Slurm's default 30) is the controller's timer, not the planner's.
  std::string params = conf_.Get("SchedulerParameters");
  if (auto pos = params.find("bf_interval="); pos != std::string::npos)
    backfill_interval_s_ = std::max<uint32_t>(
        static_cast<uint32_t>(std::strtoul(params.c_str() + pos + 12, nullptr, 10)), 1);
  // PriorityCalcPeriod (minutes, default 5): ages and fair-share move slowly.
  if (auto m = ParseTimeLimit(conf_.Get("PriorityCalcPeriod", "5"));
      m && *m != kTimeNoVal && *m != kTimeInfinite)
    priority_calc_period_s_ = std::max<int64_t>(int64_t(*m) * 60, 1);
}

const sched::PriorityContext& Controller::PriorityTotals() {
  // Cluster totals change only when nodes are added or resized (InitNodeView resets this), so
  // a pass over 100,000 pending jobs does not sum 10,000 nodes for each of them.
  if (priority_totals_) return *priority_totals_;
  sched::PriorityContext ctx;
  ctx.total_nodes = std::max<uint32_t>(static_cast<uint32_t>(nodes_.size()), 1);
  uint64_t cpus = 0, mem = 0;
  for (const auto& n : nodes_) {
    cpus += n.rec.cpus();
    mem += n.rec.real_memory_mb();
  }
  ctx.total_cpus = std::max<uint64_t>(cpus, 1);
  ctx.total_memory_mb = std::max<uint64_t>(mem, 1);
  uint32_t max_factor = 1;
  for (const auto& p : partitions_) max_factor = std::max(max_factor, p.rec.priority_job_factor());
  ctx.max_partition_job_factor = static_cast<uint16_t>(std::min<uint32_t>(max_factor, 0xffff));
  priority_totals_ = ctx;
  return *priority_totals_;
}

void Controller::ComputePriority(pb::JobRecord& job, int64_t now) {
  if (job.held() || job.admin_priority()) return;
  const auto& s = job.spec();
  if (priority_.type == sched::PriorityType::kBasic) {
    job.set_priority(FifoPriority(job.job_id(), s.nice()));
    return;
  }
  sched::PriorityContext ctx = PriorityTotals();
  ctx.now = now;

  sched::PriorityJob pj;
  pj.job_id = job.job_id();
  pj.user = s.user_name();
  pj.account = s.account();
  pj.eligible_time = std::min(job.eligible_time(), now);
  pj.nodes = std::max<uint32_t>(job.num_nodes(), 1);
  pj.cpus = std::max<uint32_t>(job.num_cpus(), 1);
  pj.memory_mb =
      s.mem_per_node_mb() ? s.mem_per_node_mb() * pj.nodes : s.mem_per_cpu_mb() * pj.cpus;
  std::string first = job.partition().substr(0, job.partition().find(','));
  if (const Partition* part = FindPartition(first))
    pj.partition_job_factor =
        static_cast<uint16_t>(std::min<uint32_t>(part->rec.priority_job_factor(), 0xffff));
  pj.nice = s.nice();
  pj.site_factor = job.priority_site();
  // Fair-share from accounting's usage when there is an association tree; QOS priority from
  // the job's QOS.
  static const sched::FlatFairShare kNoAccounting;
  const sched::FairShareSource* fairshare = &kNoAccounting;
  if (accounting_enabled_ && assoc_tree_) {
    fairshare = &fairshare_;
    std::string qos = s.qos().empty() ? "normal" : s.qos();
    if (const pb::AcctQos* q = assoc_tree_->Qos(qos)) pj.qos_priority = q->priority();
    for (const auto& q : assoc_tree_->all_qos())
      ctx.max_qos_priority = std::max(ctx.max_qos_priority, q.priority());
  }
  sched::PriorityBreakdown b = sched::MultifactorPriority(priority_, ctx, pj, *fairshare);
  job.set_priority(b.priority);
  job.set_priority_age(Round(b.age));
  job.set_priority_fairshare(Round(b.fairshare));
  job.set_priority_jobsize(Round(b.job_size));
  job.set_priority_partition(Round(b.partition));
  job.set_priority_qos(Round(b.qos));
  job.set_priority_tres(Round(b.tres_total));
}

void Controller::RecomputePriorities(int64_t now) {
  last_priority_calc_ = now;
  recalc_pass_.active = false;
  if (priority_.type == sched::PriorityType::kBasic) return;
  PriorityRecalcPass& pass = recalc_pass_;
  pass.ids.clear();
  pass.ids.reserve(pending_.size());
  for (const auto& [prio, id] : pending_) {
    // Packed held jobs keep priority 0.
    auto p = packed_.find(id);
    if (p == packed_.end() || p->second.runnable) pass.ids.push_back(id);
  }
  pass.next = 0;
  pass.now = now;
  pass.usec = pass.batches = pass.longest_batch_usec = 0;
  pass.active = true;
  RecomputePriorityBatch();
}

void Controller::RecomputePriorityBatch() {
  // A few thousand jobs (about 4 µs each) per turn of the main loop: at 100,000 pending jobs
  // the pass would otherwise hold every request for about 0.4 s.
  constexpr size_t kBatch = 2048;
  PriorityRecalcPass& pass = recalc_pass_;
  if (!pass.active) return;
  auto started = std::chrono::steady_clock::now();
  size_t end = std::min(pass.ids.size(), pass.next + kBatch);
  for (; pass.next < end; ++pass.next) {
    uint32_t id = pass.ids[pass.next];
    // Jobs change between batches: started, ended, held or released since the pass began.
    if (auto p = packed_.find(id); p != packed_.end()) {
      if (p->second.runnable) RecomputePackedPriority(id, p->second, pass.now);
      continue;
    }
    auto it = jobs_.find(id);
    if (it == jobs_.end() || it->second.state() != pb::JOB_PENDING) continue;
    pb::JobRecord& job = it->second;
    RemovePending(job);
    ComputePriority(job, pass.now);
    AddPending(job);
  }
  auto usec = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::steady_clock::now() - started)
                                        .count());
  pass.usec += usec;
  pass.batches++;
  pass.longest_batch_usec = std::max(pass.longest_batch_usec, usec);
  if (pass.next < pass.ids.size()) {
    if (!pass.posted) {
      pass.posted = true;
      asio::post(io_, [this] {
        recalc_pass_.posted = false;
        RecomputePriorityBatch();
      });
    }
    return;
  }
  pass.active = false;
  priority_recalc_.last_jobs = pass.ids.size();
  std::vector<uint32_t>().swap(pass.ids);  // 400 KB at 100,000 jobs, until the next pass
  priority_recalc_.count++;
  priority_recalc_.total_usec += pass.usec;
  priority_recalc_.last_usec = pass.usec;
  priority_recalc_.last_batches = pass.batches;
  priority_recalc_.last_longest_batch_usec = pass.longest_batch_usec;
  ScheduleSoon();  // the queue's order may have changed
}

void Controller::RecomputePackedPriority(uint32_t id, PackedJob& packed, int64_t now) {
  // Parsed for the computation and packed again in place (listings keep pointing at `packed`),
  // rather than unpacked into the job table until the next tick's packing.
  pb::JobRecord job;
  if (!Unpack(packed, &job)) {
    LogError("job %u: its packed record does not parse", id);
    return;
  }
  RemovePending(job);
  ComputePriority(job, now);
  AddPending(job);
  SchedView view = packed.view;
  packed = Pack(job, view);
}

pb::Response Controller::QueryPriorities(const pb::PriorityQueryRequest& req) {
  pb::Response r;
  if (priority_.type == sched::PriorityType::kBasic) {
    r.set_rc(static_cast<int32_t>(ErrorCode::kDisabled));
    r.set_error("You are not running a supported priority plugin\n(" +
                conf_.Get("PriorityType", "priority/basic") +
                ").\nOnly 'priority/multifactor' is supported.");
    return r;
  }
  auto* out = r.mutable_priority_query();
  auto* w = out->mutable_weights();
  w->set_age(priority_.weight_age);
  w->set_fairshare(priority_.weight_fairshare);
  w->set_jobsize(priority_.weight_job_size);
  w->set_partition_factor(priority_.weight_partition);
  w->set_qos_factor(priority_.weight_qos);
  std::string tres;
  for (const auto& [name, weight] : priority_.weight_tres)
    tres += (tres.empty() ? "" : ",") + name + "=" + std::to_string(Round(weight));
  w->set_tres_detail(tres);
  if (req.weights_only()) return r;
  std::set<uint32_t> ids(req.job_ids().begin(), req.job_ids().end());
  std::set<uint32_t> uids(req.uids().begin(), req.uids().end());
  pb::JobRecord scratch;  // a packed job is read, not unpacked
  for (const auto& [prio, id] : pending_) {
    if (auto p = packed_.find(id); p != packed_.end() && !p->second.runnable) continue;  // held
    const pb::JobRecord* job = PeekJob(id, &scratch);
    if (!job || job->held()) continue;
    if (!ids.empty() && !ids.count(id)) continue;
    if (!uids.empty() && !uids.count(job->spec().uid())) continue;
    auto* f = out->add_jobs();
    f->set_job_id(id);
    f->set_partition(job->partition());
    f->set_uid(job->spec().uid());
    f->set_account(job->spec().account());
    f->set_qos(job->spec().qos().empty() ? "normal" : job->spec().qos());
    f->set_priority(job->priority());
    f->set_nice(job->spec().nice());
    if (job->admin_priority()) continue;  // Slurm shows no factors for an admin-set priority
    f->set_site(job->priority_site());
    f->set_age(job->priority_age());
    f->set_fairshare(job->priority_fairshare());
    f->set_jobsize(job->priority_jobsize());
    f->set_partition_factor(job->priority_partition());
    f->set_qos_factor(job->priority_qos());
    f->set_tres(job->priority_tres());
  }
  return r;
}

}  // namespace shoal::ctld
