// Prolog/Epilog coordination, PrologSlurmctld/EpilogSlurmctld, node drains requested by nodes
// (HealthCheckProgram, Epilog/Prolog failures) and registration checks.
//
// Node scripts run on the nodes (shoald); the controller only decides who runs what and when:
// with PrologFlags=Alloc it asks every node of a starting job for its Prolog (JobProlog) and
// launches the job once all reported (the job shows CONFIGURING meanwhile, JobRecord.
// prolog_pending_nodes); when a job ends it asks every node for the Epilog and shows the job
// COMPLETING until they reported (JobRecord.epilog_pending_nodes). A node that is down or gone
// is dropped from those lists, so nothing waits forever. PrologSlurmctld/EpilogSlurmctld run
// here through a ScriptRunner: children of shoalctld, reaped on the event loop.
#include "common/prolog_epilog.h"

#include <sys/wait.h>

#include <algorithm>
#include <map>

#include "common/hostlist.h"
#include "common/log.h"
#include "common/script_runner.h"
#include "common/states.h"
#include "common/units.h"
#include "ctld/controller.h"
#include "sched/gres.h"

namespace shoal::ctld {
namespace {

constexpr const char* kCtldPrologMark = "(PrologSlurmctld)";
constexpr int64_t kDefaultEpilogWait = 300;  // without PrologEpilogTimeout

void EraseName(google::protobuf::RepeatedPtrField<std::string>* list, const std::string& name) {
  for (int i = 0; i < list->size(); ++i) {
    if (list->Get(i) != name) continue;
    list->DeleteSubrange(i, 1);
    return;
  }
}

bool Contains(const google::protobuf::RepeatedPtrField<std::string>& list,
              const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

}  // namespace

ScriptRunner& Controller::CtldScripts() {
  if (!ctld_scripts_) ctld_scripts_ = std::make_unique<ScriptRunner>(io_, /*own_reaper=*/true);
  return *ctld_scripts_;
}

PrologFlags Controller::ConfPrologFlags() const {
  auto f = ParsePrologFlags(conf_.Get("PrologFlags"));
  return f ? *f : PrologFlags{};
}

int64_t Controller::PrologEpilogTimeout() const {
  auto t = conf_.GetInt("PrologEpilogTimeout", 0);
  return t && *t > 0 ? *t : 0;
}

std::vector<std::string> Controller::CtldScriptEnv(const pb::JobRecord& job,
                                                   const char* context) const {
  ScriptJobInfo info = ScriptInfoFromJob(job, "", conf_.ClusterName());
  if (std::string(context) == "epilog_slurmctld") {
    int st = job.exit_status();
    info.exit_code = st;
    info.derived_ec = std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : 0) + ":" +
                      std::to_string(WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  }
  std::vector<std::string> env = BuildScriptEnv(info, context);
  env.emplace_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  return env;
}

void Controller::DrainNodeFor(int idx, const std::string& reason, bool health) {
  Node& node = nodes_[idx];
  auto& r = node.rec;
  LogInfo("node %s drained: %s", r.name().c_str(), reason.c_str());
  r.set_drain(true);
  r.set_reason(reason);
  r.set_reason_uid(slurm_user_uid_);
  r.set_reason_time(Now());
  if (health) r.set_health_drain(true);
  PersistNode(node);
  ScheduleSoon();
}

// Launch: whether the job may start now. PrologSlurmctld first, then (PrologFlags=Alloc) the
// Prolog on every node; each finished part calls Launch again.
bool Controller::PrologGate(pb::JobRecord& job) {
  uint32_t id = job.job_id();
  std::string ctld_prolog = conf_.Get("PrologSlurmctld");
  if (!ctld_prolog.empty() && !ctld_prolog_done_.count(id)) {
    if (ctld_prolog_running_.count(id)) return false;
    ctld_prolog_running_.insert(id);
    if (!Contains(job.prolog_pending_nodes(), kCtldPrologMark))
      job.add_prolog_pending_nodes(kCtldPrologMark);
    ScriptSpec spec;
    spec.path = ctld_prolog;
    spec.env = CtldScriptEnv(job, "prolog_slurmctld");
    spec.timeout_s = static_cast<int>(PrologEpilogTimeout());
    spec.what = "PrologSlurmctld job " + std::to_string(id);
    CtldScripts().Run(std::move(spec), [this, id](const ScriptResult& r) {
      ctld_prolog_running_.erase(id);
      pb::JobRecord* job = FindJob(id);
      if (!job) return;
      EraseName(job->mutable_prolog_pending_nodes(), kCtldPrologMark);
      if (r.ok()) {
        ctld_prolog_done_.insert(id);
        ResumeLaunch(*job);
        return;
      }
      int st = r.status;
      LogError("prolog_slurmctld JobId=%u prolog exit status %d:%d", id,
               st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : 1,
               st >= 0 && WIFSIGNALED(st) ? WTERMSIG(st) : (r.timed_out ? SIGKILL : 0));
      if (job->state() != pb::JOB_RUNNING || job->completing()) {
        ResumeLaunch(*job);
        return;
      }
      ReleaseResources(*job);
      if (!job->spec().interactive() && job->requeue()) {
        // Slurm requeues a batch job whose PrologSlurmctld failed (not held).
        Requeue(*job, false);
      } else {
        FinishJob(*job, pb::JOB_FAILED, Now());
        job->set_reason("Prolog");
        job->set_state_desc("PrologSlurmctld failed, job killed");
      }
      PersistJob(*job);
      ScheduleSoon();
    });
    PersistJob(job);
    return false;
  }
  PrologFlags flags = ConfPrologFlags();
  // Contain asks the nodes even without a Prolog: they create the job's extern step.
  bool ask_nodes = flags.alloc && (!conf_.Get("Prolog").empty() || flags.contain);
  if (!ask_nodes || alloc_prolog_done_.count(id)) {
    MaybeAddExternStep(job, flags);
    return true;
  }
  if (!alloc_prolog_sent_.count(id)) {
    alloc_prolog_sent_.insert(id);
    job.clear_prolog_pending_nodes();
    for (const auto& n : job.nodes()) job.add_prolog_pending_nodes(n);
    std::vector<std::string> env = JobEnvironment(job);
    for (const auto& name : job.nodes()) {
      int idx = FindNode(name);
      if (idx < 0) continue;
      pb::Request req;
      auto* jp = req.mutable_job_prolog();
      *jp->mutable_job() = job;
      jp->mutable_job()->mutable_spec()->clear_script();
      jp->mutable_job()->mutable_spec()->clear_environment();
      for (const auto& e : env) jp->add_env(e);
      SendToNode(idx, req, [this, id, name](Result<pb::Response> r) {
        if (r && r->rc() == 0) return;
        // Unreachable: the node is handled as failed by the silence check; do not wait for it.
        pb::JobRecord* job = FindJob(id);
        if (!job) return;
        LogError("job %u: cannot start the prolog on %s: %s", id, name.c_str(),
                 r ? r->error().c_str() : r.error().c_str());
        EraseName(job->mutable_prolog_pending_nodes(), name);
        if (job->prolog_pending_nodes_size() == 0) {
          alloc_prolog_done_.insert(id);
          ResumeLaunch(*job);
        }
      });
    }
    PersistJob(job);
  }
  // NoHold: salloc gets its allocation at once; steps wait for the node's prolog there.
  if (job.prolog_pending_nodes_size() == 0 || (flags.nohold && job.spec().interactive())) {
    if (job.prolog_pending_nodes_size() == 0) alloc_prolog_done_.insert(id);
    MaybeAddExternStep(job, flags);
    return true;
  }
  return false;
}

// A prolog phase ended: launch the job, or finish it if it was ended meanwhile.
void Controller::ResumeLaunch(pb::JobRecord& job) {
  if (job.state() == pb::JOB_RUNNING && !job.completing()) {
    Launch(job);
  } else if (job.completing()) {
    // Cancelled while configuring: nothing was launched, so nobody else will end it.
    ReleaseResources(job);
    FinishJob(job, job.state(), Now());
  }
  PersistJob(job);
  ScheduleSoon();
}

// PrologFlags=Contain: the job's "extern" step, on every node for the job's whole life.
void Controller::MaybeAddExternStep(pb::JobRecord& job, const PrologFlags& flags) {
  if (!flags.contain) return;
  for (const auto& s : job.steps())
    if (s.step_id() == kExternStepId) return;
  pb::StepRecord ext;
  ext.set_job_id(job.job_id());
  ext.set_step_id(kExternStepId);
  ext.set_name("extern");
  ext.set_uid(job.spec().uid());
  for (int i = 0; i < job.nodes_size(); ++i) {
    ext.add_nodes(job.nodes(i));
    ext.add_tasks_per_node(1);
    ext.add_cpus_per_node(i < job.cpus_per_node_size() ? job.cpus_per_node(i) : 1);
  }
  ext.set_num_tasks(job.nodes_size());
  ext.set_start_time(job.start_time() ? job.start_time() : Now());
  ext.set_state(pb::JOB_RUNNING);
  ext.set_time_limit(kTimeInfinite);
  ext.set_overlap(true);
  ext.set_partition(job.partition());
  uint32_t cpus = 0;
  for (uint32_t c : job.cpus_per_node()) cpus += c;
  ext.set_tres("cpu=" + std::to_string(cpus) + ",node=" + std::to_string(job.nodes_size()));
  job.mutable_steps()->Add(std::move(ext));
}

// FinishJob (and Requeue, `track` false): EpilogSlurmctld, and the Epilog on every node.
void Controller::JobEnded(pb::JobRecord& job, bool track) {
  uint32_t id = job.job_id();
  ctld_prolog_done_.erase(id);
  alloc_prolog_sent_.erase(id);
  alloc_prolog_done_.erase(id);
  job.clear_prolog_pending_nodes();
  if (job.nodes_size() == 0 || job.start_time() == 0) return;
  std::string ctld_epilog = conf_.Get("EpilogSlurmctld");
  if (!ctld_epilog.empty()) {
    ScriptSpec spec;
    spec.path = ctld_epilog;
    spec.env = CtldScriptEnv(job, "epilog_slurmctld");
    spec.timeout_s = static_cast<int>(PrologEpilogTimeout());
    spec.what = "EpilogSlurmctld job " + std::to_string(id);
    CtldScripts().Run(std::move(spec), [id](const ScriptResult& r) {
      if (!r.ok())
        LogError("epilog_slurmctld JobId=%u epilog exit status %d", id,
                 r.status >= 0 && WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1);
    });
  }
  // Contain tells every node the job ended even without an Epilog (its extern step ends).
  if (conf_.Get("Epilog").empty()) {
    if (!ConfPrologFlags().contain) return;
    track = false;
  }
  job.clear_epilog_pending_nodes();
  std::vector<std::string> env = JobEnvironment(job);
  for (const auto& name : job.nodes()) {
    int idx = FindNode(name);
    if (idx < 0) continue;
    if (track) job.add_epilog_pending_nodes(name);
    pb::Request req;
    auto* jp = req.mutable_job_prolog();
    *jp->mutable_job() = job;
    jp->mutable_job()->mutable_spec()->clear_script();
    jp->mutable_job()->mutable_spec()->clear_environment();
    jp->set_epilog(true);
    for (const auto& e : env) jp->add_env(e);
    SendToNode(idx, req, [this, id, name](Result<pb::Response> r) {
      if (r && r->rc() == 0) return;
      if (pb::JobRecord* job = FindJob(id)) EraseName(job->mutable_epilog_pending_nodes(), name);
    });
  }
  if (track && job.epilog_pending_nodes_size() > 0) epilog_started_[id] = Now();
}

void Controller::NodeDrain(const RpcConnectionPtr& conn, const pb::Credential& cred,
                           const pb::NodeDrainRequest& req, Responder respond) {
  // Node daemons sign as root; a request on a node's own stream may only drain that node.
  if (!IsAdmin(cred.uid()) || (!conn->tag.empty() && conn->tag != req.node_name())) {
    respond(ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied"));
    return;
  }
  int idx = FindNode(req.node_name());
  if (idx < 0) {
    respond(ErrorResponse(ErrorCode::kInvalidNodeName, "Invalid node name specified"));
    return;
  }
  std::string reason = req.reason().empty() ? "drained by its node" : req.reason();
  if (req.down())
    NodeFailed(idx, reason);
  else if (!nodes_[idx].rec.drain() || nodes_[idx].rec.reason() != reason)
    DrainNodeFor(idx, reason, req.health_check());
  Persist({}, [respond] { respond(pb::Response()); });
}

void Controller::NodePrologEpilog(const RpcConnectionPtr& conn, const pb::Credential& cred,
                                  const pb::NodePrologEpilogRequest& req, Responder respond) {
  if (!IsAdmin(cred.uid()) || (!conn->tag.empty() && conn->tag != req.node_name())) {
    respond(ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied"));
    return;
  }
  int idx = FindNode(req.node_name());
  pb::JobRecord* job = FindJob(req.job_id());
  const std::string& node = req.node_name();
  if (req.status() != 0 && idx >= 0)
    DrainNodeFor(idx, req.epilog() ? "Epilog error" : "Prolog error", false);
  if (!job) {
    Persist({}, [respond] { respond(pb::Response()); });
    return;
  }
  uint32_t id = job->job_id();
  if (req.epilog()) {
    EraseName(job->mutable_epilog_pending_nodes(), node);
    if (job->epilog_pending_nodes_size() == 0) epilog_started_.erase(id);
  } else if (Contains(job->prolog_pending_nodes(), node)) {
    EraseName(job->mutable_prolog_pending_nodes(), node);
    if (req.status() != 0) {
      PrologFailedOnNode(*job, node);
    } else if (job->prolog_pending_nodes_size() == 0) {
      alloc_prolog_done_.insert(id);
      if (job->state() == pb::JOB_RUNNING && !job->completing() && !job->launch_acked())
        ResumeLaunch(*job);
    }
  } else if (req.status() != 0) {
    PrologFailedOnNode(*job, node);  // before a step (no Alloc)
  }
  PersistJob(*job, [this, respond] {
    respond(pb::Response());
    ScheduleSoon();
  });
}

bool Controller::NoHoldOnPrologFail() const {
  return conf_.Get("SchedulerParameters").find("nohold_on_prolog_fail") != std::string::npos;
}

// The batch host reported that the Prolog failed before the script: requeue (held unless
// nohold_on_prolog_fail), the node is drained.
void Controller::PrologFailedOnBatchHost(pb::JobRecord& job, const std::string& node) {
  if (int idx = FindNode(node); idx >= 0) DrainNodeFor(idx, "Prolog error", false);
  LogError("Prolog launch failure, JobId=%u", job.job_id());
  bool hold = !NoHoldOnPrologFail();
  job.mutable_spec()->set_prolog_failed_hold(hold);
  Requeue(job, hold);
}

// A node's Prolog failed while the job runs (or configures): the job is requeued as after a
// batch-host failure, an allocation is ended.
void Controller::PrologFailedOnNode(pb::JobRecord& job, const std::string& node) {
  LogError("Prolog launch failure, JobId=%u on %s", job.job_id(), node.c_str());
  if (job.state() != pb::JOB_RUNNING || job.completing()) return;
  bool hold = !NoHoldOnPrologFail();
  if (!job.spec().interactive() && !job.launch_acked() && alloc_prolog_sent_.count(job.job_id())) {
    // Nothing launched yet (PrologFlags=Alloc): requeue at once.
    ReleaseResources(job);
    job.mutable_spec()->set_prolog_failed_hold(hold);
    Requeue(job, hold);
    return;
  }
  if (!job.spec().interactive()) {
    job.mutable_spec()->set_prolog_failed_hold(hold);
    job.set_state_desc(hold ? "requeue_hold" : "requeue");
    TerminateRunning(job, pb::JOB_RUNNING, "prolog failed");
  } else {
    TerminateRunning(job, pb::JOB_FAILED, "prolog failed");
  }
}

// Tick: epilogs of nodes that are down or gone are not waited for, nor any beyond the limit.
void Controller::PrologEpilogTick(int64_t now) {
  if (!epilogs_recovered_) {
    // After a restart: epilogs asked for by the previous controller get their full wait again.
    epilogs_recovered_ = true;
    for (const auto& [id, job] : jobs_)
      if (job.epilog_pending_nodes_size() > 0 && !epilog_started_.count(id))
        epilog_started_[id] = now;
  }
  int64_t limit = PrologEpilogTimeout() > 0 ? PrologEpilogTimeout() + 10 : kDefaultEpilogWait;
  for (auto it = epilog_started_.begin(); it != epilog_started_.end();) {
    pb::JobRecord* job = FindParsedJob(it->first);  // a packed job has no epilog running
    if (!job) {
      it = epilog_started_.erase(it);
      continue;
    }
    bool changed = false;
    auto* pending = job->mutable_epilog_pending_nodes();
    for (int i = pending->size() - 1; i >= 0; --i) {
      int idx = FindNode(pending->Get(i));
      bool gone =
          idx < 0 || nodes_[idx].rec.base_state() == pb::NODE_DOWN || now - it->second > limit;
      if (!gone) continue;
      pending->DeleteSubrange(i, 1);
      changed = true;
    }
    if (changed) PersistJob(*job);
    if (pending->empty())
      it = epilog_started_.erase(it);
    else
      ++it;
  }
}

// RegisterNode: Slurm's reasons when a node reports less than configured ("" = fine).
std::string Controller::RegistrationProblems(const pb::NodeRecord& conf,
                                             const pb::NodeRegisterRequest& req) const {
  std::string reasons;
  auto add = [&](const std::string& r) {
    if (!reasons.empty()) reasons += ", ";
    reasons += r;
  };
  if (req.cpus() > 0 && req.cpus() < conf.cpus()) add(LowCpusReason(req.cpus(), conf.cpus()));
  if (req.real_memory_mb() > 0 && conf.real_memory_mb() > 0 &&
      req.real_memory_mb() < conf.real_memory_mb())
    add(LowMemoryReason(req.real_memory_mb(), conf.real_memory_mb()));
  if (req.tmp_disk_mb() > 0 && req.tmp_disk_mb() < conf.tmp_disk_mb())
    add(LowTmpDiskReason(req.tmp_disk_mb(), conf.tmp_disk_mb()));
  // GRES only when the node found them (gres.conf, AutoDetect), not copied from slurm.conf.
  if (req.gres_detected()) {
    auto configured = sched::ParseNodeGres(conf.gres());
    auto reported = sched::ParseNodeGres(req.gres());
    if (configured && reported) {
      std::map<std::string, uint64_t> want, have;
      std::vector<std::string> order;
      for (const auto& s : configured->slots) {
        if (!want.count(s.name)) order.push_back(s.name);
        want[s.name] += s.count;
      }
      for (const auto& s : reported->slots) have[s.name] += s.count;
      for (const auto& name : order)
        if (have[name] < want[name]) add(LowGresReason(name, have[name], want[name]));
    }
  }
  return reasons;
}

}  // namespace shoal::ctld
