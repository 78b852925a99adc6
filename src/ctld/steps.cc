// Interactive allocations (salloc, srun outside a job) and job steps (srun inside one): step
// creation and layout, completion, queries, step signals, and the tie between an allocation and
// the connection of the client that holds it.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>

#include "common/hostlist.h"
#include "common/log.h"
#include "common/mem_bind.h"
#include "common/states.h"
#include "common/units.h"
#include "ctld/controller.h"
#include "sched/step_layout.h"

namespace shoal::ctld {
namespace {

bool MayUse(const pb::Credential& cred, const pb::JobRecord& job, bool admin) {
  return admin || cred.uid() == job.spec().uid();
}

// "123.4", "123.batch", "123.extern" -> (job, step).
std::optional<std::pair<uint32_t, uint32_t>> ParseStepId(const std::string& text) {
  auto dot = text.find('.');
  if (dot == std::string::npos || dot == 0) return std::nullopt;
  std::string job = text.substr(0, dot), step = text.substr(dot + 1);
  if (job.size() > 10 || job.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  uint32_t step_id = 0;
  if (step == "batch") {
    step_id = kBatchStepId;
  } else if (step == "extern") {
    step_id = kExternStepId;
  } else if (step == "interactive") {
    step_id = kInteractiveStepId;
  } else if (!step.empty() && step.size() <= 10 &&
             step.find_first_not_of("0123456789") == std::string::npos) {
    unsigned long v = std::strtoul(step.c_str(), nullptr, 10);
    if (v >= kInteractiveStepId) return std::nullopt;
    step_id = static_cast<uint32_t>(v);
  } else {
    return std::nullopt;
  }
  unsigned long id = std::strtoul(job.c_str(), nullptr, 10);
  if (id == 0 || id > 0xffffffffUL) return std::nullopt;
  return std::make_pair(static_cast<uint32_t>(id), step_id);
}

pb::StepRecord* FindStep(pb::JobRecord& job, uint32_t step_id) {
  for (auto& s : *job.mutable_steps())
    if (s.step_id() == step_id) return &s;
  return nullptr;
}

// Step state from the worst task's wait status.
pb::JobState StepEndState(int32_t status, bool cancelled) {
  if (cancelled) return pb::JOB_CANCELLED;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return pb::JOB_COMPLETED;
  return pb::JOB_FAILED;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Allocations
// ---------------------------------------------------------------------------------------------

void Controller::AllocationWait(const RpcConnectionPtr& conn, const pb::Credential& cred,
                                const pb::AllocationWaitRequest& req, Responder respond) {
  pb::JobRecord* job = FindJob(req.job_id());
  if (!job || !MayUse(cred, *job, IsAdmin(cred.uid()))) {
    respond(ErrorResponse(ErrorCode::kInvalidJobId, "Invalid job id specified"));
    return;
  }
  uint32_t id = job->job_id();
  if (req.hold_connection() && job->spec().interactive()) {
    alloc_holders_[id] = conn;
    std::weak_ptr<RpcConnection> weak = conn;
    conn->OnClose([this, id, weak] { AllocationClientGone(id, weak); });
  }
  // Also while its prologs run (CONFIGURING, PrologFlags=Alloc): Launch wakes the waiters.
  bool configuring = job->state() == pb::JOB_RUNNING && !job->completing() &&
                     job->spec().interactive() && !job->launch_acked();
  if (job->state() == pb::JOB_PENDING || configuring) {
    alloc_waiters_[id].push_back(std::move(respond));
    return;
  }
  AnswerAllocationWait(*job, respond);
}

void Controller::AnswerAllocationWait(const pb::JobRecord& job, const Responder& respond) {
  if (job.state() != pb::JOB_RUNNING || job.completing()) {
    respond(ErrorResponse(ErrorCode::kAlreadyDone,
                          "Job allocation " + std::to_string(job.job_id()) + " has been revoked."));
    return;
  }
  pb::Response r;
  auto* out = r.mutable_allocation_wait();
  *out->mutable_job() = job;
  out->mutable_job()->mutable_spec()->clear_script();
  out->mutable_job()->mutable_spec()->clear_environment();
  for (auto& e : JobEnvironment(job)) out->add_environment(std::move(e));
  respond(r);
}

// Called when a job starts or ends: whoever waits for its allocation hears about it.
void Controller::WakeAllocationWaiters(const pb::JobRecord& job) {
  auto it = alloc_waiters_.find(job.job_id());
  if (it == alloc_waiters_.end()) return;
  auto waiters = std::move(it->second);
  alloc_waiters_.erase(it);
  for (auto& respond : waiters) AnswerAllocationWait(job, respond);
}

void Controller::AllocationClientGone(uint32_t job_id, const std::weak_ptr<RpcConnection>& conn) {
  if (shutting_down_) return;
  auto it = alloc_holders_.find(job_id);
  if (it == alloc_holders_.end() || it->second != conn.lock()) return;
  alloc_holders_.erase(it);
  pb::JobRecord* job = FindJob(job_id);
  if (!job || IsFinished(job->state()) || job->completing()) return;
  LogInfo("job %u: the allocating client went away; ending the allocation", job_id);
  if (job->state() == pb::JOB_PENDING) {
    RemovePending(*job);
    FinishJob(*job, pb::JOB_CANCELLED, Now());
  } else {
    TerminateRunning(*job, pb::JOB_CANCELLED, "cancelled");
  }
  PersistJob(*job, [this] { ScheduleSoon(); });
}

void Controller::ReleaseAllocation(const pb::Credential& cred,
                                   const pb::ReleaseAllocationRequest& req, Responder respond) {
  pb::JobRecord* job = FindJob(req.job_id());
  if (!job || !MayUse(cred, *job, IsAdmin(cred.uid()))) {
    respond(ErrorResponse(ErrorCode::kInvalidJobId, "Invalid job id specified"));
    return;
  }
  alloc_holders_.erase(job->job_id());
  if (req.has_step()) {
    // srun outside a job: its one step ends with the allocation (one write for both).
    if (pb::StepRecord* step = FindStep(*job, req.step().step_id()))
      ApplyStepCompletion(*step, req.step());
  }
  if (IsFinished(job->state()) || job->completing()) {
    respond(pb::Response());  // already over (time limit, scancel): nothing to release
    return;
  }
  if (job->state() == pb::JOB_PENDING) {
    RemovePending(*job);
    FinishJob(*job, pb::JOB_CANCELLED, Now());
  } else {
    job->set_exit_status(req.exit_status());
    int status = req.exit_status();
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (req.has_step() && req.step().oom() && !req.step().cancelled()) {
      // srun's own allocation ends as its step did, as in Slurm: OUT_OF_MEMORY, ExitCode 0:125.
      job->set_oom(true);
      job->set_exit_status(req.step().exit_status());
      TerminateRunning(*job, pb::JOB_OUT_OF_MEMORY, "released");
      job->set_reason("OutOfMemory");
    } else {
      TerminateRunning(*job, ok ? pb::JOB_COMPLETED : pb::JOB_FAILED, "released");
      if (!ok) job->set_reason("NonZeroExitCode");
    }
  }
  PersistJob(*job, [this, respond] {
    respond(pb::Response());
    ScheduleSoon();
  });
}

// ---------------------------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------------------------

void Controller::CreateStep(const pb::Credential& cred, const pb::StepCreateRequest& req,
                            Responder respond) {
  pb::JobRecord* job = FindJob(req.job_id());
  if (!job || !MayUse(cred, *job, IsAdmin(cred.uid()))) {
    // Someone else's job reads as absent, as in Slurm ("Invalid job id specified").
    respond(ErrorResponse(job ? ErrorCode::kAccessDenied : ErrorCode::kInvalidJobId,
                          job ? "Access/permission denied" : "Invalid job id specified"));
    return;
  }
  if (job->state() == pb::JOB_PENDING) {
    respond(ErrorResponse(ErrorCode::kTransitionState, "Job is pending execution"));
    return;
  }
  if (job->state() != pb::JOB_RUNNING || job->completing()) {
    respond(ErrorResponse(ErrorCode::kAlreadyDone, "Job/step already completing or completed"));
    return;
  }
  sched::StepJobNodes jn;
  for (int i = 0; i < job->nodes_size(); ++i) {
    jn.names.push_back(job->nodes(i));
    jn.cpus.push_back(i < job->cpus_per_node_size() ? job->cpus_per_node(i) : 1);
  }
  jn.cpus_in_use.assign(jn.names.size(), 0);
  for (const auto& s : job->steps()) {
    if (s.state() != pb::JOB_RUNNING || s.overlap() || s.step_id() >= kInteractiveStepId) continue;
    for (int i = 0; i < s.nodes_size(); ++i) {
      auto it = std::find(jn.names.begin(), jn.names.end(), s.nodes(i));
      if (it != jn.names.end() && i < s.cpus_per_node_size())
        jn.cpus_in_use[it - jn.names.begin()] += s.cpus_per_node(i);
    }
  }
  sched::StepRequest sr;
  sr.min_nodes = req.min_nodes();
  sr.max_nodes = req.max_nodes();
  sr.num_tasks = req.num_tasks();
  sr.cpus_per_task = req.cpus_per_task();
  sr.ntasks_per_node = req.ntasks_per_node();
  if (!req.nodelist().empty()) {
    auto names = ExpandHostlist(req.nodelist());
    if (!names) {
      respond(ErrorResponse(ErrorCode::kInvalidNodeName, "Invalid node name specified"));
      return;
    }
    sr.nodelist = std::move(*names);
  }
  if (!req.exclude().empty()) {
    auto names = ExpandHostlist(req.exclude());
    if (!names) {
      respond(ErrorResponse(ErrorCode::kInvalidNodeName, "Invalid node name specified"));
      return;
    }
    sr.exclude = std::move(*names);
  }
  sr.overlap = req.overlap();
  sr.exact = req.exclusive();
  sr.overcommit = job->spec().overcommit() || req.overcommit();
  sr.relative_given = req.relative_given();
  sr.relative = req.relative();
  auto layout = sched::LayoutStep(jn, sr);
  if (!layout) {
    respond(ErrorResponse(layout.status().code(), layout.error()));
    return;
  }

  int64_t now = Now();
  pb::StepRecord step;
  step.set_job_id(job->job_id());
  step.set_step_id(job->next_step_id());
  step.set_name(req.name());
  step.set_uid(job->spec().uid());
  uint64_t tres_cpus = 0;
  for (size_t i = 0; i < layout->node_index.size(); ++i) {
    step.add_nodes(jn.names[layout->node_index[i]]);
    step.add_tasks_per_node(layout->tasks[i]);
    step.add_cpus_per_node(layout->cpus[i]);
    tres_cpus += req.overlap() ? layout->tasks[i] * std::max<uint32_t>(req.cpus_per_task(), 1)
                               : layout->cpus[i];
  }
  step.set_num_tasks(layout->num_tasks);
  step.set_cpus_per_task(std::max<uint32_t>(req.cpus_per_task(), 1));
  step.set_start_time(now);
  step.set_state(pb::JOB_RUNNING);
  step.set_time_limit(req.time_limit() == 0 || req.time_limit() == kTimeNoVal ? kTimeInfinite
                                                                              : req.time_limit());
  step.set_overlap(req.overlap());
  step.set_partition(job->partition());
  step.set_srun_host(req.srun_host());
  step.set_srun_pid(req.srun_pid());
  step.mutable_argv()->CopyFrom(req.argv());
  step.set_mpi(req.mpi());
  // A step runs in the job's container (salloc/sbatch --container) unless srun names its own.
  step.set_container(!req.container().empty() ? req.container() : job->spec().container());
  // Binding the job asked for (sbatch/salloc --gpu-bind, --mem-bind, --hint) applies to steps
  // that name none, as Slurm hands it on through SLURM_GPU_BIND & co.
  step.set_cpu_bind(EffectiveCpuBind(req.cpu_bind(), job->spec().hint()));
  step.set_gpu_bind(!req.gpu_bind().empty() ? req.gpu_bind() : job->spec().gpu_bind());
  step.set_mem_bind(!req.mem_bind().empty() ? req.mem_bind() : job->spec().mem_bind());
  step.set_mem_per_node_mb(req.mem_per_node_mb() ? req.mem_per_node_mb() : job->mem_per_node_mb());
  step.set_work_dir(req.work_dir());
  step.set_gres(req.gres());
  step.set_tres("cpu=" + std::to_string(tres_cpus) + ",node=" + std::to_string(step.nodes_size()));
  job->set_next_step_id(job->next_step_id() + 1);
  *job->add_steps() = step;

  // The credential the node daemons check before they start anything.
  pb::StepCredential sc;
  sc.set_job_id(job->job_id());
  sc.set_step_id(step.step_id());
  sc.set_uid(job->spec().uid());
  sc.set_gid(job->spec().gid());
  sc.set_user_name(job->spec().user_name());
  for (int i = 0; i < step.nodes_size(); ++i) {
    sc.add_nodes(step.nodes(i));
    uint32_t idx = layout->node_index[i];
    sc.add_cpus_per_node(jn.cpus[idx]);
    sc.add_gres_alloc(static_cast<int>(idx) < job->gres_alloc_size() ? job->gres_alloc(idx) : "");
  }
  sc.set_mem_per_node_mb(job->mem_per_node_mb());
  sc.set_time_limit(step.time_limit());
  if (job->time_limit() != kTimeInfinite && job->time_limit() != kTimeNoVal)
    sc.set_job_end_time(job->start_time() + int64_t(job->time_limit()) * 60 +
                        job->suspended_secs());
  pb::Response r;
  auto* out = r.mutable_step_create();
  *out->mutable_step() = step;
  std::string body = sc.SerializeAsString();
  out->mutable_cred()->set_body(body);
  *out->mutable_cred()->mutable_sig() = key_.Sign(0, 0, body, now);
  for (const auto& name : step.nodes()) {
    auto* a = out->add_nodes();
    a->set_name(name);
    int idx = FindNode(name);
    if (idx >= 0) {
      a->set_addr(nodes_[idx].rec.addr());
      a->set_port(nodes_[idx].rec.port());
    }
  }
  // Answered before the record is durable: a step is recreated by its srun, not by a restart.
  // Its id must still never be handed out twice, which LoadState ensures by skipping ahead.
  PersistJob(*job);
  respond(r);
}

void Controller::StepComplete(const pb::Credential& cred, const pb::StepCompleteRequest& req,
                              Responder respond) {
  pb::JobRecord* job = FindJob(req.job_id());
  bool admin = IsAdmin(cred.uid());
  if (!job || !MayUse(cred, *job, admin)) {
    respond(ErrorResponse(ErrorCode::kInvalidJobId, "Invalid job id specified"));
    return;
  }
  pb::StepRecord* step = FindStep(*job, req.step_id());
  if (!step) {
    respond(ErrorResponse(ErrorCode::kInvalidStep, "Invalid job step specified"));
    return;
  }
  if (!req.node_name().empty()) {
    // A node's supervisor finished its part (reported through shoald, as root).
    if (!admin) {
      respond(ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied"));
      return;
    }
    bool first_report = std::find(step->nodes_done().begin(), step->nodes_done().end(),
                                  req.node_name()) == step->nodes_done().end();
    if (first_report && step->state() == pb::JOB_RUNNING) {
      step->add_nodes_done(req.node_name());
      // Keep the nodes' results (worst status, summed CPU time, largest RSS) for when srun
      // does not report: killed, or simply later than the nodes.
      if (req.exit_status() != 0 && step->exit_status() == 0)
        step->set_exit_status(req.exit_status());
      step->set_user_cpu_usec(step->user_cpu_usec() + req.user_cpu_usec());
      step->set_sys_cpu_usec(step->sys_cpu_usec() + req.sys_cpu_usec());
      if (req.max_rss_kb() > step->max_rss_kb()) {
        step->set_max_rss_kb(req.max_rss_kb());
        step->set_max_rss_node(req.node_name());
        step->set_max_rss_task(req.max_rss_task());
      }
      if (req.cancelled()) step_cancelled_.insert({job->job_id(), step->step_id()});
      if (req.oom()) step->set_oom(true);
    }
    if (step->state() == pb::JOB_RUNNING && step->nodes_done_size() >= step->nodes_size()) {
      // Every node is done, so the step is over, whether or not srun reports it.
      bool cancelled = step_cancelled_.erase({job->job_id(), step->step_id()}) > 0;
      step->set_state(step->oom() && !cancelled ? pb::JOB_OUT_OF_MEMORY
                                                : StepEndState(step->exit_status(), cancelled));
      step->set_end_time(Now());
      PersistJob(*job, [respond] { respond(pb::Response()); });
      return;
    }
    // Progress only (srun reports the step's end itself): nothing worth a disk write.
    respond(pb::Response());
    return;
  }
  ApplyStepCompletion(*step, req);
  PersistJob(*job, [this, respond] {
    respond(pb::Response());
    ScheduleSoon();
  });
}

void Controller::ApplyStepCompletion(pb::StepRecord& step, const pb::StepCompleteRequest& req) {
  step_cancelled_.erase({step.job_id(), step.step_id()});
  if (req.oom()) step.set_oom(true);
  if (step.state() == pb::JOB_RUNNING) {
    bool oom = step.oom() && !req.cancelled();
    step.set_state(oom ? pb::JOB_OUT_OF_MEMORY : StepEndState(req.exit_status(), req.cancelled()));
    step.set_end_time(Now());
  } else if (step.oom() && !req.cancelled() && step.state() != pb::JOB_CANCELLED) {
    step.set_state(pb::JOB_OUT_OF_MEMORY);  // the nodes ended it first, without srun's word
  }
  step.set_exit_status(req.exit_status());
  step.set_user_cpu_usec(req.user_cpu_usec());
  step.set_sys_cpu_usec(req.sys_cpu_usec());
  step.set_max_rss_kb(req.max_rss_kb());
  step.set_max_rss_node(req.max_rss_node());
  step.set_max_rss_task(req.max_rss_task());
}

// Steps still running when their job ends end with it.
void Controller::EndSteps(pb::JobRecord& job, int64_t now) {
  for (auto& s : *job.mutable_steps()) {
    if (s.state() != pb::JOB_RUNNING) continue;
    s.set_state(job.state() == pb::JOB_COMPLETED ? pb::JOB_COMPLETED
                : job.state() == pb::JOB_TIMEOUT ? pb::JOB_CANCELLED
                                                 : job.state());
    if (s.step_id() < kInteractiveStepId && s.state() == pb::JOB_FAILED)
      s.set_state(pb::JOB_CANCELLED);
    s.set_end_time(now);
  }
}

pb::Response Controller::QuerySteps(const pb::StepQueryRequest& req) {
  pb::Response r;
  auto* out = r.mutable_step_query();
  out->set_server_time(Now());
  auto visit = [&](const pb::JobRecord& job) {
    if (req.uids_size() > 0 &&
        std::find(req.uids().begin(), req.uids().end(), job.spec().uid()) == req.uids().end())
      return;
    bool any = false;
    for (const auto& s : job.steps()) {
      if (s.state() != pb::JOB_RUNNING) continue;
      if (req.has_step_id() && s.step_id() != req.step_id()) continue;
      *out->add_steps() = s;
      any = true;
    }
    if (!any) return;
    pb::JobRecord* copy = out->add_jobs();
    *copy = job;
    copy->clear_steps();
    copy->mutable_spec()->clear_script();
    copy->mutable_spec()->clear_environment();
  };
  if (req.job_id() != 0) {
    if (const pb::JobRecord* job = FindJob(req.job_id())) visit(*job);
  } else {
    for (const auto& [id, job] : jobs_)
      if (job.state() == pb::JOB_RUNNING || job.state() == pb::JOB_SUSPENDED) visit(job);
  }
  return r;
}

// scancel 123.4 [-s SIG]: the step's nodes signal or terminate its tasks.
pb::JobResult Controller::CancelStep(const pb::Credential& cred, const std::string& id_text,
                                     int32_t signal) {
  pb::JobResult res;
  res.set_job_id(id_text);
  auto fail = [&](ErrorCode code, const std::string& msg) {
    res.set_rc(static_cast<int32_t>(code));
    res.set_error(msg);
    return res;
  };
  auto ids = ParseStepId(id_text);
  if (!ids) return fail(ErrorCode::kInvalidJobId, "Invalid job id specified");
  pb::JobRecord* job = FindJob(ids->first);
  if (!job) return fail(ErrorCode::kInvalidJobId, "Invalid job id specified");
  if (!MayUse(cred, *job, IsAdmin(cred.uid())))
    return fail(ErrorCode::kAccessDenied, "Access/permission denied");
  pb::StepRecord* step = FindStep(*job, ids->second);
  if (!step || step->state() != pb::JOB_RUNNING || IsFinished(job->state()))
    return fail(ErrorCode::kAlreadyDone, "Job/step already completing or completed");
  for (const auto& name : step->nodes()) {
    int idx = FindNode(name);
    if (idx < 0) continue;
    pb::Request req;
    if (signal == 0) {
      auto* t = req.mutable_terminate_job();
      t->set_job_id(job->job_id());
      t->set_has_step_id(true);
      t->set_step_id(step->step_id());
      t->set_kill_wait_s(conf_.KillWait());
      t->set_reason("cancelled");
    } else {
      auto* s = req.mutable_signal_job();
      s->set_job_id(job->job_id());
      s->set_has_step_id(true);
      s->set_step_id(step->step_id());
      s->set_signal(signal);
    }
    SendToNode(idx, req, nullptr);
  }
  return res;
}

}  // namespace shoal::ctld
