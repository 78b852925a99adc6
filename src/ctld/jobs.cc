// Job lifecycle in the controller: submit, cancel, update, hold/release/requeue, completion,
// time limits and purging of finished jobs.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <optional>

#include "common/hostlist.h"
#include "common/log.h"
#include "common/states.h"
#include "common/units.h"
#include "ctld/controller.h"
#include "sched/array_spec.h"
#include "sched/dependency.h"

namespace shoal::ctld {
namespace {

// priority/basic: earlier submissions first. Nice lowers it, as in Slurm.
constexpr int64_t kBasePriority = 4294901760LL;  // 0xFFFF0000
constexpr int64_t kTerminateResendSlackS = 20;

uint32_t BasicPriority(uint32_t job_id, int32_t nice) {
  int64_t p = kBasePriority - job_id - nice;
  return static_cast<uint32_t>(std::clamp<int64_t>(p, 1, 0xFFFFFFF0LL));
}

bool Owns(const pb::Credential& cred, const pb::JobRecord& job) {
  return cred.uid() == job.spec().uid();
}

pb::JobResult Ok(const std::string& id) {
  pb::JobResult r;
  r.set_job_id(id);
  return r;
}

pb::JobResult Fail(const std::string& id, ErrorCode code, const std::string& msg) {
  pb::JobResult r;
  r.set_job_id(id);
  r.set_rc(static_cast<int32_t>(code));
  r.set_error(msg);
  return r;
}

std::string IdString(const pb::JobRecord& job) { return std::to_string(job.job_id()); }

// A request about several jobs fails as a whole when any job failed; the per-job results say
// which, and the commands print one line for each.
void PropagateFailure(const google::protobuf::RepeatedPtrField<pb::JobResult>& results,
                      pb::Response* resp) {
  for (const auto& r : results) {
    if (r.rc() != 0) {
      resp->set_rc(r.rc());
      resp->set_error(r.error());
    }
  }
}

}  // namespace

pb::Response Controller::Submit(const pb::Credential& cred, pb::SubmitJobRequest& req,
                                std::vector<pb::JobRecord*>* created) {
  pb::JobSpec& spec = *req.mutable_spec();
  // Identity comes from the credential, never from the request: the name too, which
  // associations and accounting key on.
  spec.set_uid(cred.uid());
  spec.set_user_name(UserNameOf(cred.uid()));
  if (!IsAdmin(cred.uid()) || spec.gid() == 0) spec.set_gid(cred.gid());

  if (spec.interactive()) {
    spec.clear_script();
    spec.set_requeue(0);  // allocations are never requeued
  } else if (spec.script().rfind("#!", 0) != 0)
    return ErrorResponse(ErrorCode::kInvalidArgument,
                         "Batch script does not start with #! (not a batch script)");
  if (JobCount() >= max_job_count_)
    return ErrorResponse(ErrorCode::kTooManyJobs,
                         "Slurm temporarily unable to accept job, sleeping and retrying");

  // Partitions: every one listed that the user may use (a list is tried in tier order when the
  // job is scheduled), else the default.
  auto parts = PartitionsForSubmit(spec, IsAdmin(cred.uid()));
  if (!parts) return ErrorResponse(parts.status().code(), parts.error());
  const Partition* part = parts->front();
  std::string part_list;
  for (const Partition* p : *parts) part_list += (part_list.empty() ? "" : ",") + p->rec.name();
  if (!spec.reservation().empty()) {
    Status s = CheckJobReservation(spec);
    if (!s.ok()) return ErrorResponse(s.code(), s.message());
  }
  if (part->rec.exclusive_user()) {
    spec.set_exclusive(true);
    spec.set_exclusive_mode("user");
  }

  pb::JobRecord job;
  *job.mutable_spec() = spec;
  job.set_partition(part_list);
  job.set_reservation(spec.reservation());
  job.set_eligible_time(spec.begin_time());
  job.set_time_limit(spec.time_limit() != kTimeNoVal          ? spec.time_limit()
                     : part->rec.default_time() != kTimeNoVal ? part->rec.default_time()
                                                              : part->rec.max_time());
  if (spec.time_limit() == 0 && spec.time_limit() != kTimeNoVal)
    return ErrorResponse(ErrorCode::kTimeLimitExceeded,
                         "Requested time limit is invalid (missing or exceeds some limit)");
  uint32_t nodes = std::max<uint32_t>(spec.min_nodes(), 1);
  uint32_t tasks = spec.num_tasks()         ? spec.num_tasks()
                   : spec.ntasks_per_node() ? spec.ntasks_per_node() * nodes
                                            : nodes;
  uint32_t cpt = std::max<uint32_t>(spec.cpus_per_task(), 1);
  job.set_num_nodes(nodes);
  job.set_num_tasks(tasks);
  job.set_num_cpus(spec.overcommit() && !spec.exclusive() ? nodes * cpt : tasks * cpt);
  job.set_array_task_id(kNoArrayTask);
  job.set_requeue(spec.requeue() == 1 ||
                  (spec.requeue() == -1 && conf_.Get("JobRequeue", "1") != "0"));

  // Jobs that could never run are refused now, with Slurm's messages; a multi-partition job
  // needs one partition where it could.
  auto could_run_in = [&](const Partition& p) -> Status {
    if (!spec.gres().empty() || !spec.gpus().empty()) {
      bool any_gres = false;
      for (int idx : p.node_index)
        if (!nodes_[idx].rec.gres().empty()) any_gres = true;
      if (!any_gres)
        return Error(ErrorCode::kInvalidGres, "Invalid generic resource (gres) specification");
    }
    if (nodes > p.node_index.size() ||
        (p.rec.max_nodes() != 0xffffffffu && nodes > p.rec.max_nodes() && !IsAdmin(cred.uid())))
      return Error(ErrorCode::kRequestedConfigUnavailable, "Node count specification invalid");
    return ValidateAgainstPartition(job, p);
  };
  Status first_failure;
  bool runnable = false;
  for (const Partition* p : *parts) {
    Status s = could_run_in(*p);
    if (s.ok()) {
      runnable = true;
      break;
    }
    if (first_failure.ok()) first_failure = s;
  }
  if (!runnable) return ErrorResponse(first_failure.code(), first_failure.message());
  // Accounting: the association names the account and QOS (defaults filled in) and its
  // limits may refuse the job outright.
  if (Status s = ResolveAssociation(job); !s.ok()) return ErrorResponse(s.code(), s.message());
  spec.set_account(job.spec().account());
  spec.set_qos(job.spec().qos());

  std::optional<sched::ArraySpec> array;
  if (!spec.array().empty()) {
    auto max = conf_.GetInt("MaxArraySize", 1001);
    auto parsed = sched::ParseArraySpec(spec.array(), max ? static_cast<uint32_t>(*max) : 1001);
    if (!parsed) return ErrorResponse(ErrorCode::kInvalidArgument, parsed.error());
    array = std::move(*parsed);
    if (JobCount() + array->indexes.size() > max_job_count_)
      return ErrorResponse(ErrorCode::kTooManyJobs,
                           "Slurm temporarily unable to accept job, sleeping and retrying");
  }
  if (!spec.dependency().empty()) {
    auto dep = sched::ParseDependency(spec.dependency());
    if (!dep) return ErrorResponse(ErrorCode::kInvalidArgument, dep.error());
    for (const auto& term : dep->terms) {
      if (term.type == sched::DepType::kSingleton) continue;
      if (!JobExists(term.job_id) && !array_tasks_.count(term.job_id))
        return ErrorResponse(ErrorCode::kInvalidArgument, "Job dependency problem");
    }
  }

  if (req.test_only()) {
    // Where and when it would start now; a busy cluster answers with the soonest end of a
    // running job (a lower bound until backfill reservations exist).
    pb::Response r;
    auto* out = r.mutable_submit_job();
    out->set_job_id(next_job_id_);
    out->set_expected_partition(part->rec.name());
    // The job has no id yet, so its shape is parsed here rather than taken from the cache.
    RefreshAvailability();
    auto parsed = ParseShape(job.spec());  // validated above, so this succeeds
    sched::JobShape shape = parsed ? std::move(*parsed) : sched::JobShape();
    shape.allowed = part->node_index;
    auto placement = sched::PlaceJob(shape, views_);
    if (placement) {
      std::vector<std::string> names;
      uint32_t cpus = 0;
      for (size_t i = 0; i < placement->nodes.size(); ++i) {
        names.push_back(nodes_[placement->nodes[i]].rec.name());
        cpus += placement->cpus[i];
      }
      out->set_expected_start(std::max(Now(), job.eligible_time()));
      out->set_expected_nodes(CompressHostlist(names));
      out->set_expected_cpus(cpus);
    } else {
      int64_t soonest = 0;
      for (const auto& [id, other] : jobs_) {
        if (other.state() != pb::JOB_RUNNING || other.time_limit() == kTimeInfinite) continue;
        int64_t end = other.start_time() + int64_t(other.time_limit()) * 60;
        if (soonest == 0 || end < soonest) soonest = end;
      }
      out->set_expected_start(soonest ? soonest : Now());
      out->set_expected_cpus(job.num_cpus());
    }
    return r;
  }

  int64_t now = Now();
  job.set_state(pb::JOB_PENDING);
  job.set_reason("None");
  job.set_submit_time(now);
  job.set_accrue_time(now);
  job.set_eligible_time(spec.begin_time() > now ? spec.begin_time() : now);
  job.set_held(spec.hold());
  if (spec.hold()) job.set_reason("JobHeldUser");
  uint32_t first_id = next_job_id_;
  size_t count = array ? array->indexes.size() : 1;
  PayloadPtr payload = payloads_.Take(job.mutable_spec());  // shared by every task
  ReserveJobTable(count);
  for (size_t i = 0; i < count; ++i) {
    uint32_t id = next_job_id_++;
    pb::JobRecord task = job;
    task.set_job_id(id);
    if (spec.hold())
      task.set_priority(0);
    else
      ComputePriority(task, now);
    if (array) {
      task.set_array_job_id(first_id);
      task.set_array_task_id(array->indexes[i]);
    }
    auto [it, inserted] = jobs_.emplace(id, std::move(task));
    jobs_by_id_stale_ = true;
    payloads_.Set(id, payload);
    IndexArrayTask(it->second);
    AddPending(it->second);
    created->push_back(&it->second);
    // Counted at once, so MaxSubmitJobs holds within a burst of submissions.
    if (LimitsEnforced())
      if (auto cj = CountedOf(it->second))
        sched::CountSubmitted(assoc_counters_, *assoc_tree_, *cj, +1);
  }

  pb::Response r;
  r.mutable_submit_job()->set_job_id(first_id);
  return r;
}

Result<std::vector<pb::JobRecord*>> Controller::ResolveJobIds(const std::string& spec) {
  // "123" (a job, or every task of array 123), "123_4", "123_[1-3,7]".
  std::vector<pb::JobRecord*> out;
  if (spec.find('.') != std::string::npos)
    return Error(ErrorCode::kNotSupported, "Job steps are not supported yet");
  std::string base = spec.substr(0, spec.find('_'));
  if (base.empty() || base.size() > 10 || base.find_first_not_of("0123456789") != std::string::npos)
    return Error(ErrorCode::kInvalidJobId, "Invalid job id specified");
  unsigned long id = std::strtoul(base.c_str(), nullptr, 10);
  if (id > 0xffffffffUL) return Error(ErrorCode::kInvalidJobId, "Invalid job id specified");
  auto tasks = array_tasks_.find(static_cast<uint32_t>(id));
  size_t us = spec.find('_');
  if (us == std::string::npos) {
    if (tasks != array_tasks_.end()) {
      for (uint32_t t : tasks->second)
        if (pb::JobRecord* j = FindJob(t)) out.push_back(j);
    } else if (pb::JobRecord* j = FindJob(static_cast<uint32_t>(id))) {
      out.push_back(j);
    }
    if (out.empty()) return Error(ErrorCode::kInvalidJobId, "Invalid job id specified");
    return out;
  }
  std::string sel = spec.substr(us + 1);
  if (sel.size() >= 2 && sel.front() == '[' && sel.back() == ']')
    sel = sel.substr(1, sel.size() - 2);
  auto wanted = sched::ParseArraySpec(sel, 0xfffffff0u);
  if (!wanted || tasks == array_tasks_.end())
    return Error(ErrorCode::kInvalidJobId, "Invalid job id specified");
  for (uint32_t t : tasks->second) {
    pb::JobRecord* j = FindJob(t);
    if (j && std::binary_search(wanted->indexes.begin(), wanted->indexes.end(), j->array_task_id()))
      out.push_back(j);
  }
  if (out.empty()) return Error(ErrorCode::kInvalidJobId, "Invalid job id specified");
  return out;
}

std::string Controller::DependencyReason(const pb::JobRecord& job, int64_t now) {
  if (job.spec().dependency().empty()) return "";
  auto dep = sched::ParseDependency(job.spec().dependency());
  if (!dep) return "DependencyNeverSatisfied";
  auto describe = [&](const pb::JobRecord& j, sched::DepTarget& t, bool first) {
    bool started = j.start_time() != 0 && j.state() != pb::JOB_PENDING;
    bool finished = IsFinished(j.state()) && !j.completing();
    bool ok = finished && j.state() == pb::JOB_COMPLETED;
    t.exists = true;
    t.started = first ? started : t.started && started;
    t.finished = first ? finished : t.finished && finished;
    t.ok = first ? ok : t.ok && ok;
    t.start_time = std::max(t.start_time, j.start_time());
    t.end_time = std::max(t.end_time, j.end_time());
    // An array is "not ok" as soon as one finished task failed.
    if (finished && !ok) t.ok = false;
  };
  pb::JobRecord scratch;  // a packed job (queued or finished) is read, not unpacked
  auto lookup = [&](const sched::DepTerm& term) {
    sched::DepTarget t;
    auto tasks = array_tasks_.find(term.job_id);
    std::optional<uint32_t> task = term.task;
    if (term.type == sched::DepType::kAfterCorr && job.array_task_id() != kNoArrayTask)
      task = job.array_task_id();
    if (tasks != array_tasks_.end()) {
      bool first = true;
      bool any_failed = false;
      for (uint32_t id : tasks->second) {
        const pb::JobRecord* j = PeekJob(id, &scratch);
        if (!j || (task && j->array_task_id() != *task)) continue;
        describe(*j, t, first);
        first = false;
        if (IsFinished(j->state()) && !j->completing() && j->state() != pb::JOB_COMPLETED)
          any_failed = true;
      }
      // afterok on an array can never be met once any task failed, even if others still run.
      if (any_failed && term.type == sched::DepType::kAfterOk) {
        t.finished = true;
        t.ok = false;
      }
    } else if (const pb::JobRecord* j = PeekJob(term.job_id, &scratch)) {
      describe(*j, t, true);
    }
    return t;
  };
  bool singleton_blocked = false;
  for (const auto& term : dep->terms) {
    if (term.type != sched::DepType::kSingleton) continue;
    for (const auto& [id, other] : jobs_) {
      if (id == job.job_id() || other.spec().uid() != job.spec().uid() ||
          other.spec().name() != job.spec().name())
        continue;
      if (other.state() == pb::JOB_RUNNING || other.completing() ||
          (other.state() == pb::JOB_PENDING && other.job_id() < job.job_id()))
        singleton_blocked = true;
    }
    // Packed jobs are pending: an older one of the same user and name blocks.
    pb::JobRecord other;
    for (const auto& [id, packed] : packed_) {
      if (singleton_blocked) break;
      if (id >= job.job_id() || packed.uid != job.spec().uid()) continue;
      other.Clear();
      singleton_blocked = Unpack(packed, &other) && other.spec().name() == job.spec().name();
    }
  }
  switch (sched::EvaluateDependency(*dep, now, lookup, singleton_blocked)) {
    case sched::DepState::kSatisfied:
      return "";
    case sched::DepState::kPending:
      return "Dependency";
    case sched::DepState::kNeverSatisfied:
      return "DependencyNeverSatisfied";
  }
  return "";
}

pb::Response Controller::Cancel(const pb::Credential& cred, const pb::CancelJobRequest& req,
                                std::vector<pb::JobRecord*>* changed) {
  pb::Response resp;
  auto* out = resp.mutable_cancel_job();
  std::vector<std::pair<std::string, pb::JobRecord*>> targets;
  if (req.job_ids_size() > 0) {
    for (const auto& id : req.job_ids()) {
      if (id.find('.') != std::string::npos) {
        *out->add_results() = CancelStep(cred, id, req.signal());
        continue;
      }
      auto jobs = ResolveJobIds(id);
      if (!jobs) {
        *out->add_results() = Fail(id, jobs.status().code(), jobs.error());
        continue;
      }
      // A whole array: act on the tasks still alive; finished ones are not an error.
      std::vector<pb::JobRecord*> alive;
      for (auto* j : *jobs)
        if (!IsFinished(j->state())) alive.push_back(j);
      if (jobs->size() > 1) {
        if (alive.empty())
          jobs->resize(1);  // all finished: report it once
        else
          *jobs = std::move(alive);
      }
      for (auto* j : *jobs) targets.emplace_back(id, j);
    }
  } else {
    // Filters: every job matching them that the caller may touch.
    std::set<std::string> filter_nodes(req.filter_nodes().begin(), req.filter_nodes().end());
    auto matches = [&](const pb::JobRecord& job) {
      if (IsFinished(job.state())) return false;
      if (req.has_filter_uid() && job.spec().uid() != req.filter_uid()) return false;
      if (!req.filter_name().empty() && job.spec().name() != req.filter_name()) return false;
      if (!req.filter_partition().empty() &&
          !InPartitionList(job.partition(), req.filter_partition()))
        return false;
      if (!req.filter_account().empty() && job.spec().account() != req.filter_account())
        return false;
      if (!req.filter_qos().empty() && job.spec().qos() != req.filter_qos()) return false;
      if (req.filter_states_size() > 0 &&
          std::find(req.filter_states().begin(), req.filter_states().end(), job.state()) ==
              req.filter_states().end())
        return false;
      if (!filter_nodes.empty()) {
        bool hit = false;
        for (const auto& n : job.nodes()) hit |= filter_nodes.count(n) > 0;
        if (!hit) return false;
      }
      // Filtered cancels by a user silently skip other users' jobs, as scancel -u does.
      return IsAdmin(cred.uid()) || Owns(cred, job);
    };
    // Packed jobs that match are unpacked first, and then found below like the others.
    std::vector<uint32_t> unpack;
    pb::JobRecord scratch;
    for (const auto& [id, packed] : packed_) {
      if (req.has_filter_uid() && packed.uid != req.filter_uid()) continue;
      scratch.Clear();
      if (Unpack(packed, &scratch) && matches(scratch)) unpack.push_back(id);
    }
    for (uint32_t id : unpack) FindJob(id);
    for (auto& [id, job] : jobs_)
      if (matches(job)) targets.emplace_back(IdString(job), &job);
  }
  int64_t now = Now();
  for (auto& [id, job] : targets) {
    if (!IsAdmin(cred.uid()) && !Owns(cred, *job)) {
      *out->add_results() = Fail(id, ErrorCode::kAccessDenied, "Access/permission denied");
      continue;
    }
    if (IsFinished(job->state())) {
      *out->add_results() =
          Fail(id, ErrorCode::kAlreadyDone, "Job/step already completing or completed");
      continue;
    }
    if (req.signal() != 0) {
      // A signal, not a cancellation: deliver it where the job runs.
      if (job->state() != pb::JOB_RUNNING) {
        *out->add_results() = Fail(id, ErrorCode::kTransitionState, "Job is pending execution");
        continue;
      }
      int idx = FindNode(job->batch_host());
      if (idx >= 0) {
        pb::Request sig;
        sig.mutable_signal_job()->set_job_id(job->job_id());
        sig.mutable_signal_job()->set_signal(req.signal());
        sig.mutable_signal_job()->set_batch_only(req.batch_only());
        SendToNode(idx, sig, nullptr);
      }
      *out->add_results() = Ok(id);
      continue;
    }
    job->set_cancel_uid(cred.uid());
    if (job->state() == pb::JOB_PENDING) {
      RemovePending(*job);
      job->set_reason("None");
      FinishJob(*job, pb::JOB_CANCELLED, now);
    } else {
      TerminateRunning(*job, pb::JOB_CANCELLED, "cancelled");
    }
    changed->push_back(job);
    *out->add_results() = Ok(id);
  }
  PropagateFailure(out->results(), &resp);
  return resp;
}

pb::Response Controller::UpdateJob(const pb::Credential& cred, const pb::UpdateJobRequest& req,
                                   std::vector<pb::JobRecord*>* changed) {
  pb::Response resp;
  auto* out = resp.mutable_job_control();
  bool admin = IsAdmin(cred.uid());
  for (const auto& id : req.job_ids()) {
    auto jobs = ResolveJobIds(id);
    if (!jobs) {
      *out->add_results() = Fail(id, jobs.status().code(), jobs.error());
      continue;
    }
    for (pb::JobRecord* job : *jobs) {
      if (!admin && !Owns(cred, *job)) {
        *out->add_results() = Fail(id, ErrorCode::kAccessDenied, "Access/permission denied");
        continue;
      }
      if (IsFinished(job->state())) {
        *out->add_results() =
            Fail(id, ErrorCode::kAlreadyDone, "Job/step already completing or completed");
        continue;
      }
      // Validate every field first: a rejected update changes nothing.
      pb::JobRecord next = *job;
      Status status;
      for (const auto& [key_raw, value] : req.fields()) {
        std::string key = key_raw;
        std::transform(key.begin(), key.end(), key.begin(), ::tolower);
        if (key == "timelimit") {
          auto t = ParseTimeLimit(value);
          if (!t) {
            status = InvalidArgument("Invalid TimeLimit value: " + value);
            break;
          }
          if (!admin && *t > job->time_limit()) {
            status = Error(ErrorCode::kAccessDenied, "Access/permission denied");
            break;
          }
          next.set_time_limit(*t);
          next.mutable_spec()->set_time_limit(*t);
        } else if (key == "name" || key == "jobname") {
          next.mutable_spec()->set_name(value);
        } else if (key == "comment") {
          next.mutable_spec()->set_comment(value);
        } else if (key == "partition") {
          if (job->state() != pb::JOB_PENDING) {
            status = Error(ErrorCode::kJobNotPending, "Job is no longer pending execution");
            break;
          }
          const Partition* p = FindPartition(value);
          if (!p) {
            status = Error(ErrorCode::kInvalidPartition, "Invalid partition name specified");
            break;
          }
          next.set_partition(value);
          next.mutable_spec()->set_partition(value);
          if (Status s = ValidateAgainstPartition(next, *p); !s.ok()) {
            status = s;
            break;
          }
        } else if (key == "nice") {
          char* end = nullptr;
          long nice = std::strtol(value.c_str(), &end, 10);
          if (*end || nice < -2147483645L || nice > 2147483645L) {
            status = InvalidArgument("Invalid Nice value: " + value);
            break;
          }
          if (nice < 0 && !admin) {
            status = Error(ErrorCode::kAccessDenied, "Access/permission denied");
            break;
          }
          next.mutable_spec()->set_nice(static_cast<int32_t>(nice));
          if (!next.held()) ComputePriority(next, Now());
        } else if (key == "priority") {
          if (!admin) {
            status = Error(ErrorCode::kAccessDenied, "Access/permission denied");
            break;
          }
          char* end = nullptr;
          unsigned long p = std::strtoul(value.c_str(), &end, 10);
          if (*end) {
            status = InvalidArgument("Invalid Priority value: " + value);
            break;
          }
          next.set_priority(static_cast<uint32_t>(p));
          next.set_admin_priority(true);
        } else if (key == "numnodes" || key == "minnodes") {
          if (job->state() != pb::JOB_PENDING) {
            status = Error(ErrorCode::kJobNotPending, "Job is no longer pending execution");
            break;
          }
          unsigned long n = std::strtoul(value.c_str(), nullptr, 10);
          if (n == 0) {
            status = InvalidArgument("Invalid NumNodes value: " + value);
            break;
          }
          next.mutable_spec()->set_min_nodes(static_cast<uint32_t>(n));
          next.set_num_nodes(static_cast<uint32_t>(n));
        } else if (key == "starttime" || key == "begintime") {
          auto t = ParseBeginTime(value, Now());
          if (!t) {
            status = InvalidArgument("Invalid StartTime value: " + value);
            break;
          }
          next.mutable_spec()->set_begin_time(*t);
          next.set_eligible_time(*t);
        } else if (key == "requeue") {
          next.set_requeue(value == "1" || value == "yes");
        } else if (key == "dependency") {
          if (job->state() != pb::JOB_PENDING) {
            status = Error(ErrorCode::kJobNotPending, "Job is no longer pending execution");
            break;
          }
          if (!value.empty()) {
            auto dep = sched::ParseDependency(value);
            if (!dep) {
              status = InvalidArgument(dep.error());
              break;
            }
            for (const auto& term : dep->terms) {
              if (term.type == sched::DepType::kSingleton) continue;
              if (term.job_id == job->job_id() ||
                  (!JobExists(term.job_id) && !array_tasks_.count(term.job_id))) {
                status = InvalidArgument("Job dependency problem");
                break;
              }
            }
            if (!status.ok()) break;
          }
          next.mutable_spec()->set_dependency(value);
        } else if (key == "arraytaskthrottle") {
          if (job->array_task_id() == kNoArrayTask) {
            status = InvalidArgument("Job is not an array job: ArrayTaskThrottle");
            break;
          }
          char* end = nullptr;
          unsigned long limit = std::strtoul(value.c_str(), &end, 10);
          if (value.empty() || *end) {
            status = InvalidArgument("Invalid ArrayTaskThrottle value: " + value);
            break;
          }
          // The throttle lives in the array expression every task keeps ("0-99%4").
          std::string array = next.spec().array().substr(0, next.spec().array().find('%'));
          next.mutable_spec()->set_array(limit ? array + "%" + std::to_string(limit) : array);
        } else if (key == "deadline") {
          auto t = ParseBeginTime(value, Now());
          if (!t) {
            status = InvalidArgument("Invalid Deadline value: " + value);
            break;
          }
          next.mutable_spec()->set_deadline(*t);
        } else {
          status = InvalidArgument("Update of " + key_raw + " is not supported");
          break;
        }
      }
      if (!status.ok()) {
        *out->add_results() = Fail(id, status.code(), status.message());
        continue;
      }
      bool pending = job->state() == pb::JOB_PENDING;
      if (pending) RemovePending(*job);
      *job = std::move(next);
      shape_cache_.erase(job->job_id());  // the request may have changed
      if (pending) AddPending(*job);
      eligibility_.NoteEvent();  // e.g. a new name may free a singleton waiting on this job
      changed->push_back(job);
      *out->add_results() = Ok(id);
    }
  }
  PropagateFailure(out->results(), &resp);
  return resp;
}

pb::Response Controller::ControlJob(const pb::Credential& cred, const pb::JobControlRequest& req,
                                    std::vector<pb::JobRecord*>* changed) {
  pb::Response resp;
  auto* out = resp.mutable_job_control();
  bool admin = IsAdmin(cred.uid());
  for (const auto& id : req.job_ids()) {
    auto jobs = ResolveJobIds(id);
    if (!jobs) {
      *out->add_results() = Fail(id, jobs.status().code(), jobs.error());
      continue;
    }
    for (pb::JobRecord* job : *jobs) {
      if (!admin && !Owns(cred, *job)) {
        *out->add_results() = Fail(id, ErrorCode::kAccessDenied, "Access/permission denied");
        continue;
      }
      using A = pb::JobControlRequest;
      switch (req.action()) {
        case A::HOLD:
        case A::UHOLD: {
          if (job->state() != pb::JOB_PENDING) {
            *out->add_results() =
                Fail(id, ErrorCode::kJobNotPending, "Job is no longer pending execution");
            continue;
          }
          RemovePending(*job);
          job->set_held(true);
          job->set_held_by_admin(admin && req.action() == A::HOLD);
          job->set_priority(0);
          job->set_reason(job->held_by_admin() ? "JobHeldAdmin" : "JobHeldUser");
          AddPending(*job);
          break;
        }
        case A::RELEASE: {
          if (job->state() != pb::JOB_PENDING) {
            *out->add_results() =
                Fail(id, ErrorCode::kJobNotPending, "Job is no longer pending execution");
            continue;
          }
          if (job->held_by_admin() && !admin) {
            *out->add_results() = Fail(id, ErrorCode::kAccessDenied, "Access/permission denied");
            continue;
          }
          RemovePending(*job);
          job->set_held(false);
          job->set_held_by_admin(false);
          ComputePriority(*job, Now());
          job->set_reason("None");
          AddPending(*job);
          break;
        }
        case A::REQUEUE:
        case A::REQUEUE_HOLD: {
          if (job->state() != pb::JOB_RUNNING &&
              !(IsFinished(job->state()) && !job->completing())) {
            *out->add_results() = Fail(id, ErrorCode::kTransitionState, "Job is pending execution");
            continue;
          }
          if (job->state() == pb::JOB_RUNNING) {
            job->set_state_desc(req.action() == A::REQUEUE_HOLD ? "requeue_hold" : "requeue");
            TerminateRunning(*job, pb::JOB_RUNNING, "requeue");
          } else {
            Requeue(*job, req.action() == A::REQUEUE_HOLD);
          }
          break;
        }
        case A::SUSPEND:
        case A::RESUME: {
          // Only administrators suspend and resume jobs, as in Slurm.
          if (!admin) {
            *out->add_results() = Fail(id, ErrorCode::kAccessDenied, "Access/permission denied");
            continue;
          }
          bool suspend = req.action() == A::SUSPEND;
          if (suspend && (job->state() != pb::JOB_RUNNING || job->completing())) {
            *out->add_results() =
                Fail(id, ErrorCode::kTransitionState,
                     job->state() == pb::JOB_PENDING ? "Job is pending execution"
                                                     : "Job/step already completing or completed");
            continue;
          }
          if (!suspend && job->state() != pb::JOB_SUSPENDED) {
            *out->add_results() = Fail(id, ErrorCode::kTransitionState, "Job is not suspended");
            continue;
          }
          if (suspend)
            SuspendJob(*job);
          else
            ResumeJob(*job);
          break;
        }
        case A::TOP: {
          if (job->state() != pb::JOB_PENDING) {
            *out->add_results() =
                Fail(id, ErrorCode::kJobNotPending, "Job is no longer pending execution");
            continue;
          }
          RemovePending(*job);
          job->set_priority(BasicPriority(0, 0));
          AddPending(*job);
          break;
        }
        default:
          *out->add_results() =
              Fail(id, ErrorCode::kNotSupported, "Requested operation not supported on this job");
          continue;
      }
      changed->push_back(job);
      *out->add_results() = Ok(id);
    }
  }
  PropagateFailure(out->results(), &resp);
  return resp;
}

void Controller::TerminateRunning(pb::JobRecord& job, pb::JobState end_state,
                                  const std::string& reason, uint32_t kill_wait) {
  int64_t now = Now();
  if (end_state != pb::JOB_RUNNING) {
    job.set_state(end_state);
    job.set_end_time(now);
  }
  job.set_completing(true);
  if (reason == "cancelled") job.set_cancel_requested(true);
  if (reason == "timeout") job.set_timeout_requested(true);
  if (kill_wait == 0) kill_wait = conf_.KillWait();
  SendTerminate(job, reason, kill_wait);
  terminate_sent_[job.job_id()] = SteadySeconds();
  // An allocation without a batch script has no node to report its end: its steps are being
  // torn down (KillWait) and the job is over now.
  if (job.spec().interactive()) {
    ReleaseResources(job);
    FinishJob(job, job.state() == pb::JOB_RUNNING ? pb::JOB_CANCELLED : job.state(), now);
  }
}

void Controller::SendTerminate(const pb::JobRecord& job, const std::string& reason,
                               uint32_t kill_wait, int only_node) {
  // Every node of the job: the batch script runs on one, steps on any.
  for (const auto& name : job.nodes()) {
    int idx = FindNode(name);
    if (idx < 0 || (only_node >= 0 && idx != only_node)) continue;
    pb::Request req;
    auto* t = req.mutable_terminate_job();
    t->set_job_id(job.job_id());
    t->set_kill_wait_s(kill_wait);
    t->set_reason(reason);
    SendToNode(idx, req, nullptr);
  }
}

void Controller::FinishJob(pb::JobRecord& job, pb::JobState state, int64_t now) {
  diag_.JobEnded(state);  // sdiag's completed/canceled/failed
  job.set_state(state);
  job.set_completing(false);
  if (job.end_time() == 0 || job.end_time() < job.start_time()) job.set_end_time(now);
  if (job.start_time() == 0) job.set_start_time(now);
  ended_by_time_.insert({job.end_time(), job.job_id()});  // PurgeOldJobs' index
  pack_candidates_.push_back(job.job_id());               // kept packed once settled (PackJobs)
  EndSteps(job, now);
  JobEnded(job, true);  // EpilogSlurmctld, node epilogs
  WakeAllocationWaiters(job);
  // A salloc still holding the allocation hears it was revoked: its connection closes.
  if (auto it = alloc_holders_.find(job.job_id()); it != alloc_holders_.end()) {
    RpcConnectionPtr conn = it->second;
    alloc_holders_.erase(it);
    asio::post(io_, [conn] { conn->Close(); });
  }
}

void Controller::Requeue(pb::JobRecord& job, bool hold) {
  JobEnded(job, false);  // epilogs still run on its nodes
  job.set_state(pb::JOB_PENDING);
  job.set_completing(false);
  job.set_restart_count(job.restart_count() + 1);
  job.clear_nodes();
  job.clear_cpus_per_node();
  job.set_batch_host("");
  job.set_start_time(0);
  job.set_end_time(0);
  job.set_exit_status(0);
  job.set_cancel_requested(false);
  job.set_timeout_requested(false);
  job.set_launch_acked(false);
  job.set_state_desc("");
  job.set_held(hold);
  job.set_held_by_admin(hold);
  if (hold)
    job.set_priority(0);
  else
    ComputePriority(job, Now());
  job.set_reason(hold ? "JobHeldAdmin" : "BeginTime");
  if (hold && job.spec().prolog_failed_hold()) job.set_reason("launch_failed_requeued_held");
  // Slurm delays a requeued job briefly before it is eligible again.
  job.set_eligible_time(Now() + 1);
  AddPending(job);
}

void Controller::JobComplete(const pb::JobCompleteRequest& req, Responder respond) {
  pb::JobRecord* job = FindJob(req.job_id());
  // Unknown or already finished: acknowledge so the node can forget it.
  if (!job || (IsFinished(job->state()) && !job->completing()) ||
      (job->state() == pb::JOB_PENDING) || job->batch_host() != req.node_name()) {
    respond(pb::Response());
    return;
  }
  int64_t now = Now();
  ReleaseResources(*job);
  job->set_exit_status(req.exit_status());
  if (req.end_time() > 0) job->set_end_time(req.end_time());
  job->set_batch_user_cpu_usec(req.user_cpu_usec());
  job->set_batch_sys_cpu_usec(req.sys_cpu_usec());
  job->set_batch_max_rss_kb(req.max_rss_kb());
  for (auto& s : *job->mutable_steps()) {
    if (s.step_id() != kBatchStepId) continue;
    s.set_exit_status(req.exit_status());
    s.set_user_cpu_usec(req.user_cpu_usec());
    s.set_sys_cpu_usec(req.sys_cpu_usec());
    s.set_max_rss_kb(req.max_rss_kb());
    s.set_max_rss_node(req.node_name());
    s.set_end_time(req.end_time() > 0 ? req.end_time() : Now());
    int st = req.exit_status();
    if (req.oom()) s.set_oom(true);
    s.set_state(job->cancel_requested()                 ? pb::JOB_CANCELLED
                : req.oom()                             ? pb::JOB_OUT_OF_MEMORY
                : WIFEXITED(st) && WEXITSTATUS(st) == 0 ? pb::JOB_COMPLETED
                                                        : pb::JOB_FAILED);
  }
  int status = req.exit_status();
  if (job->state_desc() == "requeue" || job->state_desc() == "requeue_hold") {
    Requeue(*job, job->state_desc() == "requeue_hold");
  } else if (job->cancel_requested() || job->state() == pb::JOB_CANCELLED) {
    FinishJob(*job, pb::JOB_CANCELLED, now);
  } else if (job->timeout_requested() || req.timed_out() || job->state() == pb::JOB_TIMEOUT) {
    FinishJob(*job, pb::JOB_TIMEOUT, now);
  } else if (job->state() == pb::JOB_NODE_FAIL) {
    FinishJob(*job, pb::JOB_NODE_FAIL, now);
  } else if (job->state() == pb::JOB_PREEMPTED) {
    FinishJob(*job, pb::JOB_PREEMPTED, now);
  } else if (job->state() == pb::JOB_DEADLINE) {
    FinishJob(*job, pb::JOB_DEADLINE, now);
  } else if (req.oom()) {
    job->set_oom(true);
    FinishJob(*job, pb::JOB_OUT_OF_MEMORY, now);
    job->set_reason("OutOfMemory");
  } else if (req.prolog_failed()) {
    PrologFailedOnBatchHost(*job, req.node_name());
  } else if (req.launch_failed()) {
    FinishJob(*job, pb::JOB_FAILED, now);
    job->set_reason("launch_failed_requeued_held");
    job->set_state_desc(req.failure());
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    FinishJob(*job, pb::JOB_COMPLETED, now);
  } else {
    FinishJob(*job, pb::JOB_FAILED, now);
    job->set_reason("NonZeroExitCode");
  }
  PersistJob(*job, [this, respond] {
    respond(pb::Response());
    ScheduleSoon();
  });
}

void Controller::CheckTimeLimits(int64_t now) {
  std::vector<pb::JobRecord*> changed;
  // Only running jobs can reach a limit: the index, not every job (queued ones included).
  std::vector<uint32_t> ids;
  ids.reserve(holders_.size());
  int64_t steady = SteadySeconds();
  for (auto it = holders_.begin(); it != holders_.end();) {
    const pb::JobRecord* job = FindParsedJob(*it);
    if (!job || !HoldsNodes(*job)) {
      terminate_sent_.erase(*it);
      it = holders_.erase(it);  // ended or requeued: re-added when it starts again
      continue;
    }
    if (job->state() == pb::JOB_RUNNING && !job->completing()) ids.push_back(*it);
    if (job->completing()) ResendTerminateIfDue(*job, steady);
    ++it;
  }
  for (uint32_t id : ids) {
    pb::JobRecord* found = FindJob(id);
    if (!found || found->state() != pb::JOB_RUNNING || found->completing()) continue;
    pb::JobRecord& job = *found;
    // --deadline: a running job is ended when the deadline passes (state DEADLINE).
    if (job.spec().deadline() > 0 && now >= job.spec().deadline()) {
      TerminateRunning(job, pb::JOB_DEADLINE, "deadline");
      changed.push_back(&job);
      continue;
    }
    if (job.time_limit() == kTimeInfinite || job.time_limit() == kTimeNoVal) continue;
    int64_t end = job.start_time() + int64_t(job.time_limit()) * 60 + job.suspended_secs();
    // --signal=[B:]SIG@TIME: warn the job TIME seconds before its limit, once.
    if (job.spec().warn_signal() && !job.warn_signal_sent() &&
        now >= end - int64_t(job.spec().warn_time())) {
      job.set_warn_signal_sent(true);
      if (int idx = FindNode(job.batch_host()); idx >= 0) {
        pb::Request sig;
        sig.mutable_signal_job()->set_job_id(job.job_id());
        sig.mutable_signal_job()->set_signal(job.spec().warn_signal());
        sig.mutable_signal_job()->set_batch_only(job.spec().warn_batch_only());
        SendToNode(idx, sig, nullptr);
      }
      changed.push_back(&job);
    }
    if (now < end) continue;
    LogInfo("job %u reached its time limit", id);
    TerminateRunning(job, pb::JOB_TIMEOUT, "timeout");
    job.set_reason("TimeLimit");
    changed.push_back(&job);
  }
  for (auto* job : changed) PersistJob(*job);
}

void Controller::ResendTerminateIfDue(const pb::JobRecord& job, int64_t steady) {
  if (job.spec().interactive()) return;
  // As slurmctld resends its kill request: KillWait plus some slack after the last one (a
  // controller restart starts the count again).
  auto [it, fresh] = terminate_sent_.try_emplace(job.job_id(), steady);
  if (fresh || steady - it->second < int64_t(conf_.KillWait()) + kTerminateResendSlackS) return;
  it->second = steady;
  LogInfo(
      "job %u: resending TerminateJob to %s", job.job_id(),
      CompressHostlist(std::vector<std::string>(job.nodes().begin(), job.nodes().end())).c_str());
  SendTerminate(job, TerminateReason(job), conf_.KillWait());
}

std::string Controller::TerminateReason(const pb::JobRecord& job) {
  if (job.cancel_requested()) return "cancelled";
  if (job.timeout_requested()) return "timeout";
  return "";
}

void Controller::PurgeOldJobs(int64_t now) {
  int64_t min_age = conf_.MinJobAge();
  std::vector<pb::JournalRecord> recs;
  // Ended jobs in end-time order: only those old enough are looked at.
  pb::JobRecord scratch;  // a packed finished job, read for its array indexes
  for (auto e = ended_by_time_.begin(); e != ended_by_time_.end() && e->first + min_age < now;) {
    const uint32_t id = e->second;
    auto it = jobs_.find(id);
    auto packed = it == jobs_.end() ? packed_finished_.find(id) : packed_finished_.end();
    const pb::JobRecord* job = nullptr;
    if (it != jobs_.end()) {
      job = &it->second;
    } else if (packed != packed_finished_.end() && packed->second.end_time == e->first) {
      scratch.Clear();
      if (UnpackFinished(packed->second, &scratch)) job = &scratch;
    }
    if (!job || !IsFinished(job->state()) || job->end_time() != e->first) {
      e = ended_by_time_.erase(e);  // stale: purged, requeued, or ended again later
      continue;
    }
    // A job whose final record shoaldbd has not acknowledged stays (it is the outbox).
    if (job->completing() || AcctUnsent(id)) {
      ++e;
      continue;
    }
    UnindexArrayTask(*job);
    shape_cache_.erase(id);
    resolved_.erase(id);
    payloads_.Drop(id);
    pb::JournalRecord rec;
    rec.set_purge_job_id(id);
    recs.push_back(std::move(rec));
    if (it != jobs_.end())
      jobs_.erase(it);
    else
      packed_finished_.erase(packed);
    jobs_by_id_stale_ = true;
    e = ended_by_time_.erase(e);
  }
  if (!recs.empty()) Persist(std::move(recs), nullptr);
}

}  // namespace shoal::ctld
