// Scheduling glue: turns pending jobs into allocations with the pure placement library, and
// launches batch scripts on their first node once the allocation is durable.
#include <algorithm>
#include <csignal>
#include <cstdint>

#include "common/hostlist.h"
#include "common/log.h"
#include "common/states.h"
#include "common/units.h"
#include "ctld/controller.h"
#include "sched/array_spec.h"
#include "sched/dependency.h"

namespace shoal::ctld {
namespace {

std::string Compress(const std::vector<std::string>& v) { return CompressHostlist(v); }

// "after:5+10": satisfied only some time after an event, so the clock matters too.
bool HasDelayedDependency(const pb::JobRecord& job) {
  auto dep = sched::ParseDependency(job.spec().dependency());
  if (!dep) return false;
  for (const auto& term : dep->terms)
    if (term.delay_minutes > 0) return true;
  return false;
}

// "2(x3),1" form of SLURM_JOB_CPUS_PER_NODE / SLURM_TASKS_PER_NODE.
template <typename T>
std::string RunLength(const T& values) {
  std::string out;
  for (int i = 0; i < static_cast<int>(values.size());) {
    int j = i;
    while (j < static_cast<int>(values.size()) && values[j] == values[i]) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(values[i]);
    if (j - i > 1) out += "(x" + std::to_string(j - i) + ")";
    i = j;
  }
  return out;
}

int64_t TimeLimitSeconds(uint32_t minutes) {
  return minutes == kTimeInfinite || minutes == kTimeNoVal ? sched::kUnlimitedSeconds
                                                           : int64_t(minutes) * 60;
}

}  // namespace

const char* Controller::PartitionRefusal(const Partition& part, uint32_t time_limit,
                                         uint32_t min_nodes) const {
  if (part.rec.state() == "DOWN" || part.rec.state() == "INACTIVE") return "PartitionDown";
  if (time_limit != kTimeInfinite && part.rec.max_time() != kTimeInfinite &&
      time_limit > part.rec.max_time())
    return "PartitionTimeLimit";
  uint32_t want = std::max<uint32_t>(min_nodes, 1);
  if ((part.rec.max_nodes() != 0xffffffffu && want > part.rec.max_nodes()) ||
      want < part.rec.min_nodes())
    return "PartitionNodeLimit";
  return nullptr;
}

Status Controller::ValidateAgainstPartition(const pb::JobRecord& job, const Partition& part) {
  auto parsed = ParseShape(job.spec());
  if (!parsed) return parsed.status();
  sched::JobShape& shape = *parsed;
  if (!sched::UnknownFeatures(shape.constraint, features_).empty())
    return Error(ErrorCode::kInvalidFeature, "Invalid feature specification");
  shape.allowed = part.node_index;
  if (!job.spec().nodelist().empty()) {
    auto names = ExpandHostlist(job.spec().nodelist());
    if (!names) return Error(ErrorCode::kInvalidNodeName, "Invalid node name specified");
    for (const auto& n : *names) {
      int idx = FindNode(n);
      if (idx < 0) return Error(ErrorCode::kInvalidNodeName, "Invalid node name specified");
      if (std::find(part.node_index.begin(), part.node_index.end(), idx) == part.node_index.end())
        return Error(ErrorCode::kInvalidNodeName, "Requested node configuration is not available");
      shape.required.push_back(idx);
    }
  }
  if (!job.spec().exclude().empty()) {
    auto names = ExpandHostlist(job.spec().exclude());
    if (!names) return Error(ErrorCode::kInvalidNodeName, "Invalid node name specified");
    for (const auto& n : *names) {
      int idx = FindNode(n);
      shape.allowed.erase(std::remove(shape.allowed.begin(), shape.allowed.end(), idx),
                          shape.allowed.end());
    }
  }
  if (sched::CouldEverRun(shape, views_)) return Status::Ok();
  // A GRES nobody has reads as a GRES error, as in Slurm; anything else as a node-shape error.
  if (!shape.gres.empty()) {
    sched::JobShape without = shape;
    without.gres = sched::JobGres();
    if (sched::CouldEverRun(without, views_))
      return Error(ErrorCode::kInvalidGres, "Invalid generic resource (gres) specification");
  }
  return Error(ErrorCode::kRequestedConfigUnavailable,
               "Requested node configuration is not available");
}

sched::JobShape Controller::ShapeFor(const pb::JobRecord& job, const Partition& part) {
  sched::JobShape shape = ShapeOfJob(job);
  shape.allowed = part.node_index;
  if (!job.spec().nodelist().empty()) {
    if (auto names = ExpandHostlist(job.spec().nodelist()))
      for (const auto& n : *names)
        if (int idx = FindNode(n); idx >= 0) shape.required.push_back(idx);
  }
  if (!job.spec().exclude().empty()) {
    if (auto names = ExpandHostlist(job.spec().exclude()))
      for (const auto& n : *names) {
        int idx = FindNode(n);
        shape.allowed.erase(std::remove(shape.allowed.begin(), shape.allowed.end(), idx),
                            shape.allowed.end());
      }
  }
  return shape;
}

void Controller::ScheduleSoon() {
  if (schedule_posted_) return;
  schedule_posted_ = true;
  asio::post(io_, [this] {
    schedule_posted_ = false;
    Schedule();
  });
}

void Controller::Schedule() {
  // As Slurm's main scheduler: a pass after an event examines default_queue_depth jobs, and
  // every sched_interval seconds one examines them all (reasons, begin times, deadlines of
  // jobs deep in the queue). Backfill passes examine them all too.
  int64_t now = SteadySeconds();
  bool full = last_full_pass_ < 0 ||
              (main_sched_.interval_s >= 0 && now - last_full_pass_ >= main_sched_.interval_s);
  if (full) last_full_pass_ = now;
  TimedSchedule(false, full ? 0 : main_sched_.queue_depth);
}

void Controller::Backfill() { TimedSchedule(true, 0); }

void Controller::RunPlanner(bool with_backfill, uint32_t depth) {
  int64_t now = Now();
  RefreshAvailability();
  ResumePreemptedJobs();
  RecountAssocUsage();
  sched::PlanInput in;
  in.now = now;
  in.params = backfill_;
  in.params.enabled = with_backfill && backfill_.enabled;
  in.partition_nodes.reserve(partitions_.size());
  for (const auto& p : partitions_) in.partition_nodes.push_back(p.node_index);

  std::unordered_map<uint32_t, uint32_t> array_admitted;  // throttled arrays: running + admitted
  std::vector<pb::JobRecord*> ended;                      // cancelled by kill_invalid_depend
  std::vector<pb::JobRecord*> deadline_passed;            // can no longer meet --deadline
  struct Candidate {
    sched::SchedOrderKey key;
    pb::JobRecord* job;  // nullptr: a packed job, weighed from its view (packed_job.h)
    const sched::JobShape* packed_shape;
    uint32_t time_limit;  // a packed job's
    int partition;
  };
  std::vector<Candidate> candidates;
  // Parked jobs whose begin time came, or whose dependency an event may have satisfied.
  for (uint32_t id : eligibility_.TakeDue(now))
    if (const pb::JobRecord* job = FindJob(id); job && job->state() == pb::JOB_PENDING)
      runnable_.insert({-static_cast<int64_t>(job->priority()), id});
  // The walk goes in priority order; the planner orders by partition tier first. With tiers
  // that differ, a job deep in the walk may come first, so the walk is not cut short.
  for (const Partition& p : partitions_)
    if (p.rec.priority_tier() != partitions_.front().rec.priority_tier()) depth = 0;
  uint32_t examined = 0;  // jobs the walk weighed (throttled array tasks are not counted)
  std::vector<uint32_t> per_partition(partitions_.size(), 0);
  bool cut_short = false;
  for (auto it = runnable_.begin(); it != runnable_.end();) {
    // Held jobs have priority 0 and sort last: nothing after this point can start.
    if (it->first == 0) break;
    if (depth != 0 && examined >= depth) {
      cut_short = true;
      break;
    }
    const PendingKey walk_key = *it;
    ++it;
    if (auto p = packed_.find(walk_key.second); p != packed_.end()) {
      // A packed runnable job: eligible, one partition, nothing to wait for but its turn and
      // resources (packed_job.h). Weighed from its view; unpacked only if it starts.
      PackedJob& packed = p->second;
      if (const sched::JobShape* shape = PackedShapeToWeigh(walk_key.second, packed)) {
        ++examined;
        const Partition& part = partitions_[packed.view.partition];
        if (const char* why = PartitionRefusal(part, packed.view.time_limit, shape->min_nodes)) {
          packed.reason = PackedReasonOf(why);
          continue;
        }
        int index = packed.view.partition;
        if (!with_backfill && main_sched_.partition_depth != 0 &&
            ++per_partition[index] > main_sched_.partition_depth)
          continue;
        sched::SchedOrderKey key;
        key.partition_tier = static_cast<uint16_t>(part.rec.priority_tier());
        key.priority = static_cast<uint32_t>(-walk_key.first);
        key.job_id = walk_key.second;
        candidates.push_back({key, nullptr, shape, packed.view.time_limit, index});
        continue;
      }
    }
    pb::JobRecord* job = FindJob(walk_key.second);
    if (!job || job->held()) continue;
    ++examined;
    // --deadline: a job that can no longer end in time is removed (state DEADLINE).
    if (job->spec().deadline() > 0) {
      uint32_t minutes = job->spec().time_min() != kTimeNoVal && job->spec().time_min() != 0
                             ? job->spec().time_min()
                             : job->time_limit();
      int64_t earliest_end = std::max(now, job->eligible_time()) +
                             (minutes == kTimeInfinite ? int64_t(1) << 40 : int64_t(minutes) * 60);
      if (earliest_end > job->spec().deadline()) {
        job->set_reason("DeadLine");
        deadline_passed.push_back(job);
        continue;
      }
    }
    if (job->eligible_time() > now) {
      job->set_reason("BeginTime");
      // Out of the walk until then (the deadline check above cannot change meanwhile).
      runnable_.erase(walk_key);
      eligibility_.ParkUntil(job->job_id(), job->eligible_time());
      continue;
    }
    if (!job->spec().dependency().empty()) {
      std::string why = DependencyReason(*job, now);
      if (!why.empty()) {
        bool kill =
            job->spec().kill_on_invalid_dep() == 1 ||
            (job->spec().kill_on_invalid_dep() == 0 &&
             conf_.Get("SchedulerParameters").find("kill_invalid_depend") != std::string::npos);
        if (why == "DependencyNeverSatisfied" && kill) {
          job->set_reason("DependencyNeverSatisfied");
          ended.push_back(job);
          continue;
        }
        job->set_reason(why);
        // Out of the walk until another job starts, ends or changes (Persist notes it). A
        // delayed term ("after:5+10") or a deadline also depends on the clock: those stay.
        if (job->spec().deadline() == 0 && !HasDelayedDependency(*job)) {
          runnable_.erase(walk_key);
          eligibility_.ParkUntilEvent(job->job_id());
        }
        continue;
      }
    }
    if (job->array_task_id() != kNoArrayTask &&
        job->spec().array().find('%') != std::string::npos) {
      uint32_t limit = static_cast<uint32_t>(std::strtoul(
          job->spec().array().substr(job->spec().array().find('%') + 1).c_str(), nullptr, 10));
      auto [count, fresh] = array_admitted.try_emplace(job->array_job_id(), 0);
      if (fresh) {
        for (uint32_t id : array_tasks_[job->array_job_id()]) {
          const pb::JobRecord* t = FindParsedJob(id);  // running ones are never packed
          if (t && (t->state() == pb::JOB_RUNNING || t->completing())) ++count->second;
        }
      }
      if (limit > 0 && count->second >= limit) {
        job->set_reason("JobArrayTaskLimit");
        --examined;  // a throttled array's waiting tasks cost little and do not fill the depth
        continue;
      }
      ++count->second;  // at most `limit` tasks are offered to the planner
    }
    // The first of the job's partitions (highest tier first) that is up and within limits.
    int chosen = -1;
    const char* why_not = nullptr;
    std::string list = job->partition();
    for (size_t pos = 0; pos <= list.size();) {
      size_t comma = list.find(',', pos);
      std::string name = list.substr(pos, comma == std::string::npos ? comma : comma - pos);
      pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
      const Partition* part = FindPartition(name);
      if (!part) continue;
      if (const char* why = PartitionRefusal(*part, job->time_limit(), job->spec().min_nodes())) {
        if (!why_not) why_not = why;
        continue;
      }
      int index = static_cast<int>(part - partitions_.data());
      if (chosen < 0) chosen = index;
      // A multi-partition job goes where it can start now, else waits in its first partition.
      if (comma == std::string::npos || sched::PlaceJob(ShapeFor(*job, *part), views_)) {
        chosen = index;
        break;
      }
    }
    if (chosen < 0) {
      job->set_reason(why_not ? why_not : "PartitionDown");
      continue;
    }
    // partition_job_depth: the main scheduler weighs at most that many jobs of a partition.
    if (!with_backfill && main_sched_.partition_depth != 0 &&
        ++per_partition[chosen] > main_sched_.partition_depth)
      continue;
    sched::SchedOrderKey key;
    key.partition_tier = static_cast<uint16_t>(partitions_[chosen].rec.priority_tier());
    key.priority = job->priority();
    key.job_id = job->job_id();
    candidates.push_back({key, job, nullptr, 0, chosen});
  }
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const Candidate& a, const Candidate& b) { return sched::SchedulesBefore(a.key, b.key); });
  in.pending.reserve(candidates.size());
  std::unordered_map<uint32_t, int> multi_partition;
  for (const Candidate& c : candidates) {
    if (!c.job) {
      sched::PendingJob pj;
      pj.job_id = c.key.job_id;
      pj.partition = static_cast<uint32_t>(c.partition);
      pj.shape = *c.packed_shape;
      pj.time_limit_s = TimeLimitSeconds(c.time_limit);
      in.pending.push_back(std::move(pj));
      continue;
    }
    const pb::JobRecord& job = *c.job;
    // Association and QOS limits, in priority order (each admitted job counts for the next).
    if (std::string why = LimitReason(job, true); !why.empty()) {
      c.job->set_reason(why);
      continue;
    }
    if (job.partition().find(',') != std::string::npos) multi_partition[job.job_id()] = c.partition;
    sched::PendingJob pj;
    pj.job_id = job.job_id();
    pj.partition = static_cast<uint32_t>(c.partition);
    // -w/-x need the node list spelled out; other jobs use the partition's list.
    if (!job.spec().nodelist().empty() || !job.spec().exclude().empty())
      pj.shape = ShapeFor(job, partitions_[c.partition]);
    else
      pj.shape = ShapeOfJob(job);
    pj.time_limit_s = TimeLimitSeconds(job.time_limit());
    if (!reservations_.empty() || !job.reservation().empty()) {
      if (pj.shape.allowed.empty()) pj.shape = ShapeFor(job, partitions_[c.partition]);
      int64_t t1 = pj.time_limit_s == sched::kUnlimitedSeconds ? INT64_MAX : now + pj.time_limit_s;
      auto& allowed = pj.shape.allowed;
      allowed.erase(std::remove_if(allowed.begin(), allowed.end(),
                                   [&](int n) { return ReservationBlocksNode(n, now, t1, job); }),
                    allowed.end());
      // An empty list means "the whole partition" to the planner: a job that no node may take
      // now waits, with the reservation's reason.
      if (allowed.empty()) {
        std::string why = ReservationPendingReason(job, now);
        c.job->set_reason(why.empty() ? "Resources" : why);
        continue;
      }
    }
    // Topology: a multi-node job is offered its candidates in the topology's order (one leaf
    // switch or block when possible); PlaceJob takes `allowed` in order.
    if (job.spec().min_nodes() > 1) {
      std::vector<int> order = TopologyOrder(
          job, pj.shape.allowed.empty() ? partitions_[c.partition].node_index : pj.shape.allowed);
      if (!order.empty()) pj.shape.allowed = std::move(order);
    }
    in.pending.push_back(std::move(pj));
  }
  if (in.params.enabled) {
    for (auto& [id, job] : jobs_) {
      if (job.state() != pb::JOB_RUNNING && !job.completing()) continue;
      sched::RunningJob rj;
      rj.job_id = id;
      rj.shape = ShapeOfJob(job);
      rj.placement = PlacementOf(job);
      rj.end_time = job.completing() ? now
                    : job.time_limit() == kTimeInfinite
                        ? sched::kUnlimitedSeconds
                        : job.start_time() + int64_t(job.time_limit()) * 60;
      in.running.push_back(std::move(rj));
    }
  }
  in.nodes = views_;
  // Promises of the last backfill pass bind this pass too: a reserved job is not delayed by
  // jobs the plan already knew about.
  in.previous = backfill_promises_;
  sched::CyclePlan plan;
  if (!in.pending.empty()) plan = sched::PlanCycle(in);
  diag_.NotePlan(static_cast<uint32_t>(in.pending.size()), plan);  // sdiag depth, jobs started
  if (in.params.enabled)
    backfill_promises_ = std::make_shared<const sched::PreviousPlan>(plan.pending);

  std::vector<pb::JobRecord*> started;
  for (const auto& start : plan.starts) {
    pb::JobRecord* job = FindJob(start.job_id);
    if (!job) continue;
    // --switches: a placement over more leaf switches than asked waits, up to max_switch_wait.
    if (!SwitchesAllowStart(*job, start.placement.nodes, now)) {
      job->set_reason("Resources");
      job->set_last_sched_eval(now);
      continue;
    }
    // A multi-partition job runs in the partition the planner was given for it.
    if (auto mp = multi_partition.find(job->job_id()); mp != multi_partition.end())
      job->set_partition(partitions_[mp->second].rec.name());
    RemovePending(*job);
    BookResources(*job, start.placement);
    job->set_batch_host(job->nodes(0));
    job->set_state(pb::JOB_RUNNING);
    holders_.insert(job->job_id());
    job->set_reason("None");
    job->set_start_time(now);
    job->set_expected_start(0);
    job->set_sched_nodes("");
    job->set_launch_acked(false);
    started.push_back(job);
  }
  // A pass cut short that started jobs may have left startable ones deeper down.
  if (cut_short && !started.empty()) ScheduleSoon();
  // The nodes a backfill plan reserves for a pending job, as a hostlist (squeue's SCHEDNODES).
  auto planned_hostlist = [&](const auto& planned) {
    std::vector<std::string> names;
    for (int idx : planned) names.push_back(nodes_[idx].rec.name());
    return names.empty() ? std::string() : Compress(names);
  };
  for (const auto& d : plan.pending) {
    if (auto p = packed_.find(d.job_id); p != packed_.end()) {
      // Weighed from its view (no reservation applies): the conclusions go to the overlay.
      PackedJob& packed = p->second;
      packed.reason = PackedReasonOf(sched::ReasonName(d.reason));
      packed.last_sched_eval = now;
      if (!in.params.enabled) continue;
      packed.expected_start = d.start_time ? *d.start_time : 0;
      packed.sched_nodes = planned_hostlist(d.planned_nodes);
      continue;
    }
    pb::JobRecord* job = FindJob(d.job_id);
    if (!job) continue;
    job->set_reason(std::string(sched::ReasonName(d.reason)));
    if (d.reason == sched::PendingReason::kResources)
      if (std::string why = ReservationPendingReason(*job, now); !why.empty()) job->set_reason(why);
    job->set_last_sched_eval(now);
    if (!in.params.enabled) continue;  // expected starts come from backfill passes only
    job->set_expected_start(d.start_time ? *d.start_time : 0);
    job->set_sched_nodes(planned_hostlist(d.planned_nodes));
  }
  // A job blocked for resources may preempt lower-tier jobs (preempt/partition_prio).
  if (preempt_.type != sched::PreemptType::kNone) {
    std::unordered_map<uint32_t, int> blocked;
    for (const auto& d : plan.pending)
      if (d.reason == sched::PendingReason::kResources) blocked[d.job_id] = -1;
    for (const Candidate& c : candidates)
      if (auto b = blocked.find(c.key.job_id); b != blocked.end()) b->second = c.partition;
    for (const auto& d : plan.pending) {
      auto b = blocked.find(d.job_id);
      if (b == blocked.end() || b->second < 0) continue;
      pb::JobRecord* job = FindJob(d.job_id);
      if (job && TryPreemption(*job, b->second, now)) break;
    }
  }
  for (pb::JobRecord* job : ended) {
    RemovePending(*job);
    FinishJob(*job, pb::JOB_CANCELLED, now);
    started.push_back(job);  // persisted with the others; not launched (not RUNNING)
  }
  for (pb::JobRecord* job : deadline_passed) {
    RemovePending(*job);
    FinishJob(*job, pb::JOB_DEADLINE, now);
    started.push_back(job);
  }
  if (started.empty()) return;
  std::vector<pb::JournalRecord> recs;
  std::vector<uint32_t> ids;
  for (auto* job : started) {
    pb::JournalRecord rec;
    *rec.mutable_job() = *job;
    recs.push_back(std::move(rec));
    ids.push_back(job->job_id());
  }
  // Launch only once the allocation is durable: a restart must never forget a running job.
  Persist(std::move(recs), [this, ids] {
    for (uint32_t id : ids) {
      pb::JobRecord* job = FindJob(id);
      if (!job) continue;
      if (job->state() == pb::JOB_RUNNING && !job->completing()) {
        Launch(*job);
      } else if (job->completing() && !job->spec().interactive() && !job->batch_host().empty()) {
        // Ended (scancel, requeue, a limit) while its allocation was being saved: it was never
        // launched, so no node will report its end. It ends as a script killed before it ran.
        pb::JobCompleteRequest done;
        done.set_job_id(id);
        done.set_node_name(job->batch_host());
        done.set_exit_status(SIGTERM);  // a wait status: terminated by SIGTERM
        JobComplete(done, Responder([](const pb::Response&) {}));
      }
    }
  });
}

void Controller::Launch(pb::JobRecord& job) {
  if (LaunchWaitsForPower(job)) return;  // launched by PowerTick once its nodes are up
  if (!PrologGate(job)) return;          // PrologSlurmctld / PrologFlags=Alloc next
  if (job.spec().interactive()) {
    // Nothing to start on a node: the client that asked runs its command (salloc) or its
    // step (srun) once it hears the allocation is there.
    job.set_launch_acked(true);
    WakeAllocationWaiters(job);
    return;
  }
  int idx = FindNode(job.batch_host());
  if (idx < 0) return;
  if (job.steps_size() == 0 || job.steps(0).step_id() != kBatchStepId) {
    // The batch script is the job's "batch" step (squeue -s, scontrol show step, accounting).
    pb::StepRecord batch;
    batch.set_job_id(job.job_id());
    batch.set_step_id(kBatchStepId);
    batch.set_name("batch");
    batch.set_uid(job.spec().uid());
    batch.add_nodes(job.batch_host());
    batch.add_tasks_per_node(1);
    batch.add_cpus_per_node(job.cpus_per_node_size() ? job.cpus_per_node(0) : 1);
    batch.set_num_tasks(1);
    batch.set_cpus_per_task(job.cpus_per_node_size() ? job.cpus_per_node(0) : 1);
    batch.set_start_time(job.start_time());
    batch.set_state(pb::JOB_RUNNING);
    batch.set_time_limit(kTimeInfinite);
    batch.set_overlap(true);
    batch.set_partition(job.partition());
    batch.set_tres("cpu=" + std::to_string(batch.cpus_per_task()) + ",node=1");
    job.mutable_steps()->Add(std::move(batch));
    // Keep the batch step first.
    for (int i = job.steps_size() - 1; i > 0; --i) job.mutable_steps()->SwapElements(i, i - 1);
  }
  pb::Request req;
  auto* launch = req.mutable_launch_batch();
  *launch->mutable_job() = job;
  payloads_.Restore(job.job_id(), launch->mutable_job()->mutable_spec());
  for (auto& e : JobEnvironment(job)) launch->add_extra_env(std::move(e));
  launch->set_kill_wait_s(conf_.KillWait());
  uint32_t id = job.job_id();
  SendToNode(idx, req, [this, id](Result<pb::Response> r) {
    pb::JobRecord* job = FindJob(id);
    if (!job || job->state() != pb::JOB_RUNNING) return;
    if (r && r->rc() == 0) {
      job->set_launch_acked(true);
      return;
    }
    if (!r) return;  // connection lost: re-sent when the node registers again
    // The node refused the job (e.g. unknown user there): it cannot run.
    LogError("launch of job %u failed: %s", id, r->error().c_str());
    ReleaseResources(*job);
    FinishJob(*job, pb::JOB_FAILED, Now());
    job->set_reason("launch_failed_requeued_held");
    job->set_state_desc(r->error());
    PersistJob(*job);
    ScheduleSoon();
  });
}

std::vector<std::string> Controller::JobEnvironment(const pb::JobRecord& job) const {
  const auto& s = job.spec();
  std::vector<std::string> env;
  auto add = [&](const std::string& k, const std::string& v) { env.push_back(k + "=" + v); };
  std::vector<std::string> nodes(job.nodes().begin(), job.nodes().end());
  std::string nodelist = Compress(nodes);
  std::string id = std::to_string(job.job_id());
  add("SLURM_JOB_ID", id);
  add("SLURM_JOBID", id);
  add("SLURM_JOB_NAME", s.name());
  add("SLURM_JOB_NODELIST", nodelist);
  add("SLURM_NODELIST", nodelist);
  add("SLURM_JOB_NUM_NODES", std::to_string(job.nodes_size()));
  add("SLURM_NNODES", std::to_string(job.nodes_size()));
  add("SLURM_JOB_PARTITION", job.partition());
  add("SLURM_SUBMIT_DIR", s.submit_dir());
  add("SLURM_SUBMIT_HOST", s.submit_host());
  add("SLURM_JOB_UID", std::to_string(s.uid()));
  add("SLURM_JOB_GID", std::to_string(s.gid()));
  add("SLURM_JOB_USER", s.user_name());
  add("SLURM_CLUSTER_NAME", conf_.ClusterName());
  add("SLURM_JOB_CPUS_PER_NODE",
      RunLength(std::vector<uint32_t>(job.cpus_per_node().begin(), job.cpus_per_node().end())));
  if (s.num_tasks() || s.ntasks_per_node()) {
    add("SLURM_NTASKS", std::to_string(job.num_tasks()));
    add("SLURM_NPROCS", std::to_string(job.num_tasks()));
  }
  if (s.ntasks_per_node()) add("SLURM_NTASKS_PER_NODE", std::to_string(s.ntasks_per_node()));
  // Tasks per node: spread evenly in node order, as the allocation placed them.
  {
    std::vector<uint32_t> per_node;
    uint32_t n = static_cast<uint32_t>(job.nodes_size());
    uint32_t tasks = job.num_tasks();
    for (uint32_t i = 0; i < n; ++i) per_node.push_back(tasks / n + (i < tasks % n ? 1 : 0));
    add("SLURM_TASKS_PER_NODE", RunLength(per_node));
  }
  if (s.cpus_per_task()) add("SLURM_CPUS_PER_TASK", std::to_string(s.cpus_per_task()));
  if (s.mem_per_node_mb()) add("SLURM_MEM_PER_NODE", std::to_string(s.mem_per_node_mb()));
  if (s.mem_per_cpu_mb()) add("SLURM_MEM_PER_CPU", std::to_string(s.mem_per_cpu_mb()));
  if (!s.account().empty()) add("SLURM_JOB_ACCOUNT", s.account());
  if (!s.qos().empty()) add("SLURM_JOB_QOS", s.qos());
  if (!s.comment().empty()) add("SLURM_JOB_COMMENT", s.comment());
  if (!s.container().empty()) add("SLURM_CONTAINER", s.container());
  if (job.array_task_id() != kNoArrayTask) {
    // The whole array as submitted, as Slurm gives it: tasks already finished, purged or
    // kept packed count too.
    uint32_t lo = job.array_task_id(), hi = lo, count = 1;
    if (auto whole = sched::ParseArraySpec(s.array(), UINT32_MAX);
        whole && !whole->indexes.empty()) {
      lo = whole->indexes.front();
      hi = whole->indexes.back();
      count = static_cast<uint32_t>(whole->indexes.size());
    }
    add("SLURM_ARRAY_JOB_ID", std::to_string(job.array_job_id()));
    add("SLURM_ARRAY_TASK_ID", std::to_string(job.array_task_id()));
    add("SLURM_ARRAY_TASK_COUNT", std::to_string(std::max<uint32_t>(count, 1)));
    add("SLURM_ARRAY_TASK_MIN", std::to_string(lo));
    add("SLURM_ARRAY_TASK_MAX", std::to_string(hi));
    std::string spec = s.array().substr(0, s.array().find('%'));
    auto colon = spec.find(':');
    add("SLURM_ARRAY_TASK_STEP", colon == std::string::npos ? "1" : spec.substr(colon + 1));
  }
  add("SLURM_PRIO_PROCESS", "0");
  add("SLURM_RESTART_COUNT", std::to_string(job.restart_count()));
  add("SLURM_JOB_START_TIME", std::to_string(job.start_time()));
  if (job.time_limit() != kTimeInfinite && job.time_limit() != kTimeNoVal)
    add("SLURM_JOB_END_TIME", std::to_string(job.start_time() + int64_t(job.time_limit()) * 60));
  if (!s.std_out().empty()) add("SLURM_JOB_STDOUT", s.std_out());
  for (auto& e : GpuEnvironment(job)) env.push_back(std::move(e));
  return env;
}

}  // namespace shoal::ctld
