// The controller's consumable-resource bookkeeping: one sched::NodeView per node (inventory from
// slurm.conf or the node's registration, allocations booked through sched::Allocate/Release),
// job shapes parsed once per job, and the translation between placements and job records.
#include <signal.h>

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "common/log.h"
#include "common/units.h"
#include "ctld/controller.h"

namespace shoal::ctld {
namespace {

uint32_t OversubscribeCount(const std::string& mode, bool* force) {
  // "NO", "EXCLUSIVE", "YES[:N]", "FORCE[:N]"; YES and FORCE default to 4 jobs per CPU.
  *force = mode.rfind("FORCE", 0) == 0;
  if (mode.rfind("YES", 0) != 0 && !*force) return 1;
  size_t colon = mode.find(':');
  if (colon == std::string::npos) return 4;
  uint32_t n = static_cast<uint32_t>(std::strtoul(mode.c_str() + colon + 1, nullptr, 10));
  return std::max<uint32_t>(n, 1);
}

}  // namespace

void Controller::InitNodeView(int idx) {
  const pb::NodeRecord& r = nodes_[idx].rec;
  priority_totals_.reset();  // the cluster's totals change with its nodes
  if (views_.size() <= static_cast<size_t>(idx)) views_.resize(idx + 1);
  sched::NodeView& v = views_[idx];
  v.cpus = r.cpus();
  v.memory_mb = r.real_memory_mb();
  v.sockets = static_cast<uint16_t>(r.sockets());
  v.cores_per_socket = static_cast<uint16_t>(r.cores_per_socket());
  v.threads_per_core = static_cast<uint16_t>(r.threads_per_core());
  v.features = sched::FeatureSet();
  for (const auto& f : r.features()) v.features.Set(features_.Intern(f));
  auto gres = sched::ParseNodeGres(r.gres());
  if (!gres) {
    LogError("node %s: %s: %s", r.name().c_str(), gres.error().c_str(), r.gres().c_str());
    v.gres = sched::NodeGres();
  } else {
    v.gres = std::move(*gres);
  }
  // A node in several partitions takes the most permissive OverSubscribe among them.
  v.oversubscribe = 1;
  v.oversubscribe_force = false;
  for (const auto& p : partitions_) {
    if (std::find(p.node_index.begin(), p.node_index.end(), idx) == p.node_index.end()) continue;
    bool force = false;
    uint32_t n = OversubscribeCount(p.rec.over_subscribe(), &force);
    if (n > v.oversubscribe) {
      v.oversubscribe = n;
      v.oversubscribe_force = force;
    }
  }
}

void Controller::RefreshAvailability() {
  // A node still running an ended job's Epilog takes no new job until it reported, as a
  // COMPLETING node in Slurm (the ended job's resources are already free).
  std::unordered_set<std::string_view> in_epilog;
  for (const auto& [id, since] : epilog_started_)
    if (const pb::JobRecord* job = FindParsedJob(id))  // a packed job has no epilog running
      for (const auto& name : job->epilog_pending_nodes()) in_epilog.insert(name);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    // A powered-down node is schedulable when ResumeProgram can bring it up (power_save.cc).
    bool reachable = (n.registered && n.stream && !n.stream->closed()) ||
                     (n.rec.powered_down() && !power_.resume_program.empty());
    views_[i].available = reachable && !n.rec.drain() && n.rec.base_state() != pb::NODE_DOWN &&
                          n.rec.base_state() != pb::NODE_FUTURE && !n.rec.reboot_issued() &&
                          !n.rec.powering_down() && !in_epilog.count(n.rec.name());
  }
}

Result<sched::JobShape> Controller::ParseShape(const pb::JobSpec& s) const {
  sched::JobShape shape;
  shape.min_nodes = s.min_nodes();
  shape.max_nodes = s.max_nodes();
  shape.num_tasks = s.num_tasks();
  shape.cpus_per_task = std::max<uint32_t>(s.cpus_per_task(), 1);
  shape.ntasks_per_node = s.ntasks_per_node();
  if (s.overcommit() && !s.exclusive()) {
    // -O: "resources are allocated as if only one task per node is requested" (man sbatch).
    shape.num_tasks = s.min_nodes() ? s.min_nodes() : (s.num_tasks() ? 1 : 0);
    shape.ntasks_per_node = 0;
  }
  shape.mem_per_node_mb = s.mem_per_node_mb();
  shape.mem_per_cpu_mb = s.mem_per_cpu_mb();
  shape.mem_whole_node = s.mem_whole_node();
  shape.exclusive = s.exclusive() && s.exclusive_mode() != "user";
  shape.exclusive_user = s.exclusive() && s.exclusive_mode() == "user";
  shape.uid = s.uid();
  shape.oversubscribe = s.oversubscribe();
  if (!s.gres().empty() || !s.gpus().empty() || !s.gpus_per_task().empty() || s.cpus_per_gpu() ||
      s.mem_per_gpu_mb()) {
    sched::GresOptions opts;
    opts.gres = s.gres();
    opts.gpus = s.gpus();
    opts.gpus_per_task = s.gpus_per_task();
    if (s.cpus_per_gpu()) opts.cpus_per_gpu = std::to_string(s.cpus_per_gpu());
    if (s.mem_per_gpu_mb()) opts.mem_per_gpu = std::to_string(s.mem_per_gpu_mb());
    auto gres = sched::ParseJobGres(opts);
    if (!gres) return Error(ErrorCode::kInvalidGres, sched::kInvalidGresMessage);
    shape.gres = std::move(*gres);
  }
  if (!s.constraint().empty()) {
    auto c = sched::ParseConstraint(s.constraint(), features_);
    if (!c) return Error(ErrorCode::kInvalidFeature, "Invalid feature specification");
    shape.constraint = std::move(*c);
  }
  return shape;
}

const sched::JobShape& Controller::ShapeOfJob(const pb::JobRecord& job) {
  auto it = shape_cache_.find(job.job_id());
  if (it != shape_cache_.end()) return *it->second;
  auto shape = ParseShape(job.spec());
  // Accepted jobs were validated at submit; a failure here means the cluster changed since
  // (e.g. a feature disappeared), and the job keeps an empty request of that resource.
  sched::JobShape value = shape ? std::move(*shape) : sched::JobShape();
  return *shape_cache_.emplace(job.job_id(), shape_interner_.Intern(std::move(value)))
              .first->second;
}

sched::Placement Controller::PlacementOf(const pb::JobRecord& job) const {
  sched::Placement p;
  for (int i = 0; i < job.nodes_size(); ++i) {
    int idx = FindNode(job.nodes(i));
    p.nodes.push_back(idx);
    p.cpus.push_back(i < job.cpus_per_node_size() ? job.cpus_per_node(i) : 0);
    p.tasks.push_back(0);
    p.mem_mb.push_back(i < job.mem_alloc_mb_size() ? job.mem_alloc_mb(i) : job.mem_per_node_mb());
  }
  p.mem_per_node_mb = job.mem_per_node_mb();
  if (job.gres_devices_size() > 0) {
    p.gres.resize(p.nodes.size());
    for (const auto& d : job.gres_devices()) {
      if (d.node_pos() >= p.gres.size()) continue;
      sched::GresAlloc a;
      a.slot = d.slot();
      a.name = d.name();
      a.type = d.type();
      a.count = d.count();
      a.indexes.assign(d.indexes().begin(), d.indexes().end());
      p.gres[d.node_pos()].push_back(std::move(a));
    }
  }
  // Nodes that no longer exist (a dynamic node dropped from the config) hold nothing.
  for (size_t i = p.nodes.size(); i-- > 0;) {
    if (p.nodes[i] >= 0) continue;
    p.nodes.erase(p.nodes.begin() + i);
    p.cpus.erase(p.cpus.begin() + i);
    p.tasks.erase(p.tasks.begin() + i);
    p.mem_mb.erase(p.mem_mb.begin() + i);
    if (!p.gres.empty()) p.gres.erase(p.gres.begin() + i);
  }
  return p;
}

void Controller::SyncNodeAllocation(int idx) {
  auto& r = nodes_[idx].rec;
  const auto& v = views_[idx];
  r.set_alloc_cpus(std::min(v.alloc_cpus, v.cpus));
  r.set_alloc_memory_mb(v.alloc_memory_mb);
}

void Controller::BookResources(pb::JobRecord& job, const sched::Placement& placement) {
  const sched::JobShape& shape = ShapeOfJob(job);
  sched::Allocate(views_, shape, placement);
  job.clear_nodes();
  job.clear_cpus_per_node();
  job.clear_mem_alloc_mb();
  job.clear_gres_devices();
  job.clear_gres_alloc();
  uint32_t total_cpus = 0, tasks = 0;
  for (size_t k = 0; k < placement.nodes.size(); ++k) {
    int idx = placement.nodes[k];
    SyncNodeAllocation(idx);
    job.add_nodes(nodes_[idx].rec.name());
    job.add_cpus_per_node(placement.cpus[k]);
    job.add_mem_alloc_mb(k < placement.mem_mb.size() ? placement.mem_mb[k]
                                                     : placement.mem_per_node_mb);
    total_cpus += placement.cpus[k];
    tasks += placement.tasks[k];
    if (k < placement.gres.size()) {
      for (const auto& a : placement.gres[k]) {
        auto* d = job.add_gres_devices();
        d->set_node_pos(static_cast<uint32_t>(k));
        d->set_slot(a.slot);
        d->set_name(a.name);
        d->set_type(a.type);
        d->set_count(a.count);
        for (uint32_t i : a.indexes) d->add_indexes(i);
      }
      job.add_gres_alloc(sched::FormatAllocIndexes(placement.gres[k]));
    }
  }
  job.set_num_tasks(std::max(job.num_tasks(), tasks));
  job.set_num_nodes(static_cast<uint32_t>(placement.nodes.size()));
  job.set_num_cpus(total_cpus);
  job.set_mem_per_node_mb(placement.mem_per_node_mb);
}

void Controller::SuspendJob(pb::JobRecord& job) {
  // Suspended jobs keep their memory and GRES (the processes still hold them) and lend their
  // CPUs out. This is the one booking outside Allocate/Release: it moves CPUs only.
  sched::Placement p = PlacementOf(job);
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    auto& v = views_[p.nodes[k]];
    v.alloc_cpus -= std::min(v.alloc_cpus, p.cpus[k]);
    SyncNodeAllocation(p.nodes[k]);
  }
  job.set_cpus_released(true);
  job.set_state(pb::JOB_SUSPENDED);
  job.set_suspend_time(Now());
  SignalJobNodes(job, SIGSTOP);
}

void Controller::ResumeJob(pb::JobRecord& job) {
  sched::Placement p = PlacementOf(job);
  if (job.cpus_released()) {
    for (size_t k = 0; k < p.nodes.size(); ++k) {
      views_[p.nodes[k]].alloc_cpus += p.cpus[k];
      SyncNodeAllocation(p.nodes[k]);
    }
  }
  job.set_cpus_released(false);
  job.set_state(pb::JOB_RUNNING);
  holders_.insert(job.job_id());
  job.set_reason("None");
  job.set_preempted_by(0);
  if (job.suspend_time() > 0)
    job.set_suspended_secs(job.suspended_secs() + Now() - job.suspend_time());
  SignalJobNodes(job, SIGCONT);
}

void Controller::SignalJobNodes(const pb::JobRecord& job, int signal) {
  int idx = FindNode(job.batch_host());
  if (idx < 0) return;
  pb::Request req;
  req.mutable_signal_job()->set_job_id(job.job_id());
  req.mutable_signal_job()->set_signal(signal);
  SendToNode(idx, req, nullptr);
}

void Controller::ResumePreemptedJobs() {
  // A job suspended by preemption resumes once its preemptor is gone and its CPUs are free.
  // Only the jobs preemption suspended are looked at (not every job, on every pass).
  for (auto it = preempt_suspended_.begin(); it != preempt_suspended_.end();) {
    uint32_t id = *it;
    pb::JobRecord* found = FindJob(id);
    if (!found || found->state() != pb::JOB_SUSPENDED || found->preempted_by() == 0) {
      it = preempt_suspended_.erase(it);
      continue;
    }
    ++it;
    pb::JobRecord& job = *found;
    const pb::JobRecord* preemptor = FindJob(job.preempted_by());
    if (preemptor && (preemptor->state() == pb::JOB_RUNNING ||
                      preemptor->state() == pb::JOB_PENDING || preemptor->completing()))
      continue;
    sched::Placement p = PlacementOf(job);
    bool free = true;
    for (size_t k = 0; k < p.nodes.size(); ++k) {
      const auto& v = views_[p.nodes[k]];
      free &= v.alloc_cpus + p.cpus[k] <= v.cpus * std::max<uint32_t>(v.oversubscribe, 1);
    }
    if (!free) continue;
    LogInfo("job %u resumed after preemption", id);
    ResumeJob(job);
    PersistJob(job);
  }
}

void Controller::ReleaseResources(const pb::JobRecord& job) {
  int64_t now = Now();
  sched::Placement p = PlacementOf(job);
  // A suspended job's CPUs were already given back.
  if (job.cpus_released())
    for (auto& c : p.cpus) c = 0;
  sched::Release(views_, ShapeOfJob(job), p);
  for (int idx : p.nodes) {
    SyncNodeAllocation(idx);
    nodes_[idx].rec.set_last_busy(now);
  }
}

void Controller::RebookAfterRestart(const pb::JobRecord& job) {
  sched::Placement p = PlacementOf(job);
  if (job.cpus_released())
    for (auto& c : p.cpus) c = 0;
  sched::Allocate(views_, ShapeOfJob(job), p);
  for (int idx : p.nodes) SyncNodeAllocation(idx);
}

std::vector<std::string> Controller::GpuEnvironment(const pb::JobRecord& job) const {
  // The batch step runs on the first node: bind the GPUs allocated there.
  std::vector<sched::GresAlloc> first;
  for (const auto& d : job.gres_devices()) {
    if (d.node_pos() != 0) continue;
    sched::GresAlloc a;
    a.name = d.name();
    a.type = d.type();
    a.count = d.count();
    a.indexes.assign(d.indexes().begin(), d.indexes().end());
    first.push_back(std::move(a));
  }
  std::string gpus = sched::FormatIndexList(first, "gpu");
  if (gpus.empty()) return {};
  return {"SLURM_JOB_GPUS=" + gpus, "CUDA_VISIBLE_DEVICES=" + gpus, "GPU_DEVICE_ORDINAL=" + gpus,
          "SLURM_GPUS_ON_NODE=" + std::to_string(std::count(gpus.begin(), gpus.end(), ',') + 1)};
}

std::string Controller::GresUsedOf(int idx) const {
  if (views_[idx].gres.empty()) return "";
  return sched::FormatGresUsed(views_[idx].gres);
}

}  // namespace shoal::ctld
