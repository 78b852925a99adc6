// Scheduling glue: turns pending jobs into allocations with the pure placement library, and
// launches batch scripts on their first node once the allocation is durable.
#include <algorithm>

#include "common/hostlist.h"
#include "common/log.h"
#include "common/states.h"
#include "common/units.h"
#include "ctld/controller.h"

namespace shoal::ctld {
namespace {

std::string Compress(const std::vector<std::string>& v) { return CompressHostlist(v); }

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

sched::JobShape ShapeOf(const pb::JobRecord& job) {
  const auto& s = job.spec();
  sched::JobShape shape;
  shape.min_nodes = s.min_nodes();
  shape.max_nodes = s.max_nodes();
  shape.num_tasks = s.num_tasks();
  shape.cpus_per_task = std::max<uint32_t>(s.cpus_per_task(), 1);
  shape.ntasks_per_node = s.ntasks_per_node();
  shape.mem_per_node_mb = s.mem_per_node_mb();
  shape.mem_per_cpu_mb = s.mem_per_cpu_mb();
  shape.exclusive = s.exclusive();
  return shape;
}

}  // namespace

Status Controller::ValidateAgainstPartition(const pb::JobRecord& job, const Partition& part) const {
  sched::JobShape shape = ShapeOf(job);
  std::vector<sched::NodeView> views(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    views[i].cpus = nodes_[i].rec.cpus();
    views[i].memory_mb = nodes_[i].rec.real_memory_mb();
  }
  shape.allowed = part.node_index;
  if (!job.spec().nodelist().empty()) {
    auto names = ExpandHostlist(job.spec().nodelist());
    if (!names) return Error(ErrorCode::kInvalidNodeName, "Invalid node name specified");
    for (const auto& n : *names) {
      int idx = FindNode(n);
      if (idx < 0 ||
          std::find(part.node_index.begin(), part.node_index.end(), idx) == part.node_index.end())
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
  if (!sched::CouldEverRun(shape, views))
    return Error(ErrorCode::kRequestedConfigUnavailable,
                 "Requested node configuration is not available");
  return Status::Ok();
}

std::vector<sched::NodeView> Controller::NodeViews() const {
  std::vector<sched::NodeView> views(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    auto& v = views[i];
    v.cpus = n.rec.cpus();
    v.alloc_cpus = n.rec.alloc_cpus();
    v.memory_mb = n.rec.real_memory_mb();
    v.alloc_memory_mb = n.rec.alloc_memory_mb();
    v.available = n.registered && n.stream && !n.stream->closed() && !n.rec.drain() &&
                  n.rec.base_state() != pb::NODE_DOWN && n.rec.base_state() != pb::NODE_FUTURE;
  }
  return views;
}

sched::JobShape Controller::ShapeFor(const pb::JobRecord& job, const Partition& part) const {
  sched::JobShape shape = ShapeOf(job);
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
  int64_t now = Now();
  std::vector<sched::NodeView> views = NodeViews();
  uint32_t free_cpus = 0;
  for (const auto& v : views)
    if (v.available) free_cpus += v.cpus - std::min(v.cpus, v.alloc_cpus);
  std::set<std::string> blocked_partitions;  // a higher-priority job is waiting for resources
  std::unordered_map<uint32_t, uint32_t> array_running;  // throttled arrays: running tasks
  std::vector<pb::JobRecord*> started;
  std::vector<pb::JobRecord*> reason_changed;
  auto set_reason = [&](pb::JobRecord& job, const char* reason) {
    if (job.reason() != reason) {
      job.set_reason(reason);
    }
  };
  for (auto it = pending_.begin(); it != pending_.end();) {
    // Held jobs have priority 0 and sort last: nothing after this point can start.
    if (it->first == 0) break;
    pb::JobRecord* job = FindJob(it->second);
    ++it;
    if (!job) continue;
    if (job->held()) continue;
    if (job->eligible_time() > now) {
      set_reason(*job, "BeginTime");
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
          RemovePending(*job);
          job->set_reason("DependencyNeverSatisfied");
          FinishJob(*job, pb::JOB_CANCELLED, now);
          started.push_back(job);  // persisted with the others; not launched (not RUNNING)
          continue;
        }
        set_reason(*job, why.c_str());
        continue;
      }
    }
    if (job->array_task_id() != kNoArrayTask && !job->spec().array().empty() &&
        job->spec().array().find('%') != std::string::npos) {
      uint32_t limit = static_cast<uint32_t>(std::strtoul(
          job->spec().array().substr(job->spec().array().find('%') + 1).c_str(), nullptr, 10));
      auto [cached, fresh] = array_running.try_emplace(job->array_job_id(), 0);
      if (fresh) {
        for (uint32_t id : array_tasks_[job->array_job_id()]) {
          const pb::JobRecord* t = FindJob(id);
          if (t && (t->state() == pb::JOB_RUNNING || t->completing())) ++cached->second;
        }
      }
      if (limit > 0 && cached->second >= limit) {
        set_reason(*job, "JobArrayTaskLimit");
        continue;
      }
    }
    if (free_cpus == 0) {
      // Nothing can start; later jobs keep their reason ("Priority" behind this one).
      if (job->reason() == "None" || job->reason() == "BeginTime") set_reason(*job, "Resources");
      break;
    }
    const Partition* part = FindPartition(job->partition());
    if (!part) continue;
    if (part->rec.state() == "DOWN" || part->rec.state() == "INACTIVE") {
      set_reason(*job, "PartitionDown");
      continue;
    }
    if (job->time_limit() != kTimeInfinite && part->rec.max_time() != kTimeInfinite &&
        job->time_limit() > part->rec.max_time()) {
      set_reason(*job, "PartitionTimeLimit");
      continue;
    }
    if (blocked_partitions.count(part->rec.name())) {
      set_reason(*job, "Priority");
      // Later, smaller jobs may still start where they fit (greedy fill; proper backfill with
      // reservations for the blocked job comes with the scheduler work).
    }
    sched::JobShape shape = ShapeFor(*job, *part);
    auto placement = sched::PlaceJob(shape, views);
    if (!placement) {
      if (!blocked_partitions.count(part->rec.name())) set_reason(*job, "Resources");
      blocked_partitions.insert(part->rec.name());
      continue;
    }
    // Allocate.
    RemovePending(*job);
    job->clear_nodes();
    job->clear_cpus_per_node();
    uint32_t total_cpus = 0;
    for (size_t k = 0; k < placement->nodes.size(); ++k) {
      int idx = placement->nodes[k];
      auto& v = views[idx];
      v.alloc_cpus += placement->cpus[k];
      v.alloc_memory_mb += placement->mem_per_node_mb;
      if (job->spec().exclusive()) v.exclusive_in_use = true;
      free_cpus -= std::min(free_cpus, placement->cpus[k]);
      auto& r = nodes_[idx].rec;
      r.set_alloc_cpus(r.alloc_cpus() + placement->cpus[k]);
      r.set_alloc_memory_mb(r.alloc_memory_mb() + placement->mem_per_node_mb);
      job->add_nodes(r.name());
      job->add_cpus_per_node(placement->cpus[k]);
      total_cpus += placement->cpus[k];
    }
    uint32_t tasks = 0;
    for (uint32_t t : placement->tasks) tasks += t;
    job->set_num_tasks(std::max(job->num_tasks(), tasks));
    job->set_num_nodes(static_cast<uint32_t>(placement->nodes.size()));
    job->set_num_cpus(total_cpus);
    job->set_mem_per_node_mb(placement->mem_per_node_mb);
    job->set_batch_host(job->nodes(0));
    job->set_state(pb::JOB_RUNNING);
    job->set_reason("None");
    job->set_start_time(now);
    job->set_launch_acked(false);
    if (job->array_task_id() != kNoArrayTask) {
      auto a = array_running.find(job->array_job_id());
      if (a != array_running.end()) ++a->second;
    }
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
      if (job && job->state() == pb::JOB_RUNNING && !job->completing()) Launch(*job);
    }
  });
}

void Controller::Launch(pb::JobRecord& job) {
  int idx = FindNode(job.batch_host());
  if (idx < 0) return;
  pb::Request req;
  auto* launch = req.mutable_launch_batch();
  *launch->mutable_job() = job;
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
  if (job.array_task_id() != kNoArrayTask) {
    auto it = array_tasks_.find(job.array_job_id());
    uint32_t lo = job.array_task_id(), hi = lo, count = 0;
    if (it != array_tasks_.end()) {
      for (uint32_t id : it->second) {
        const auto jt = jobs_.find(id);
        if (jt == jobs_.end()) continue;
        lo = std::min(lo, jt->second.array_task_id());
        hi = std::max(hi, jt->second.array_task_id());
        ++count;
      }
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
  return env;
}

}  // namespace shoal::ctld
