// Live reconfiguration (scontrol reconfigure, SIGHUP, SlurmctldParameters=shoal_watch_config)
// and configless operation (SlurmctldParameters=enable_configless: node daemons fetch the
// configuration files from here).
//
// Reconfigure parses the new slurm.conf completely before touching anything, so a bad file
// changes nothing. Then: nodes new to the file are appended (indexes of existing nodes never
// move, so allocations, streams and queues keyed by index stay valid), changed nodes get their
// new hardware/features with their bookings kept, partitions are rebuilt from the file (with
// the dynamic nodes that joined ALL partitions), and scheduler, priority, preemption, power
// and topology settings are reloaded. Jobs are not touched: running jobs keep their nodes, and
// a pending job whose partition went away pends (PartitionDown) until it is updated or the
// partition returns. Finally every registered node is told to reread its configuration.
#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include "common/config_files.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "ctld/controller.h"
#include "ctld/dynamic_nodes.h"
#include "ctld/reconfigure_plan.h"

namespace shoal::ctld {
namespace {

// What the watcher compares: each file's size and modification time.
std::string FileStamp(const std::vector<std::string>& paths) {
  std::string stamp;
  for (const auto& path : paths) {
    struct stat sb;
    if (::stat(path.c_str(), &sb) != 0) {
      stamp += path + ":-;";
      continue;
    }
    stamp += path + ":" + std::to_string(sb.st_size) + ":" + std::to_string(sb.st_mtim.tv_sec) +
             "." + std::to_string(sb.st_mtim.tv_nsec) + ";";
  }
  return stamp;
}

}  // namespace

void Controller::LoadConfigFiles(const std::vector<std::string>& included) {
  auto files = CollectConfigFiles(options_.conf_path, included, ReadFileToString);
  if (!files) {
    LogError("configless: %s", files.error().c_str());
    return;
  }
  config_files_ = std::move(*files);
  std::string dir = ".";
  if (size_t slash = options_.conf_path.rfind('/'); slash != std::string::npos)
    dir = slash == 0 ? "/" : options_.conf_path.substr(0, slash);
  watch_paths_ = {options_.conf_path};
  watch_paths_.insert(watch_paths_.end(), included.begin(), included.end());
  for (const auto& name : ConfiglessFileNames()) watch_paths_.push_back(dir + "/" + name);
  watch_stamp_ = FileStamp(watch_paths_);
}

void Controller::ConfigFilesRequest(const pb::Credential& cred, Responder respond) {
  (void)cred;  // any authenticated caller: the files are what every node and command reads
  if (!configless_) {
    respond(
        ErrorResponse(ErrorCode::kNotSupported,
                      "configless mode is not enabled (SlurmctldParameters=enable_configless)"));
    return;
  }
  if (config_files_.files_size() == 0) {
    respond(ErrorResponse(ErrorCode::kUnavailable, "the configuration files could not be read"));
    return;
  }
  pb::Response r;
  *r.mutable_config_files() = config_files_;
  respond(r);
}

void Controller::ReconfigureRequest(const pb::Credential& cred, Responder respond) {
  if (!IsAdmin(cred.uid())) {
    respond(ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied"));
    return;
  }
  Status st = Reconfigure("scontrol reconfigure by uid " + std::to_string(cred.uid()));
  if (!st.ok()) {
    respond(ErrorResponse(st.code() == ErrorCode::kOk ? ErrorCode::kInvalidArgument : st.code(),
                          st.message()));
    return;
  }
  // Node records of newly configured nodes are not journalled (slurm.conf is their truth);
  // answering after the journal drains keeps replies ordered with earlier changes.
  Persist({}, [respond] { respond(pb::Response()); });
}

Status Controller::Reconfigure(const std::string& origin) {
  std::vector<std::string> included;
  auto loaded = LoadSlurmConfRecording(options_.conf_path, &included);
  if (!loaded) {
    LogError("reconfigure (%s) refused: %s; the configuration in force is unchanged",
             origin.c_str(), loaded.error().c_str());
    return loaded.status();
  }
  SlurmConf& next = *loaded;
  for (const auto& w : next.warnings) LogError("reconfigure: warning: %s", w.c_str());
  NodeChangePlan plan = PlanNodeChanges(conf_, next);
  if (!plan.removed.empty()) {
    // Indexes of nodes are held by allocations, queues and streams: removing one needs a restart.
    std::string msg = "nodes cannot be removed by reconfigure (" + CompressHostlist(plan.removed) +
                      "): restart shoalctld to remove them; the configuration in force is "
                      "unchanged";
    LogError("reconfigure (%s) refused: %s", origin.c_str(), msg.c_str());
    return InvalidArgument(msg);
  }

  conf_ = std::move(next);
  max_job_count_ = conf_.MaxJobCount();
  if (passwd* pw = ::getpwnam(conf_.SlurmUser().c_str())) slurm_user_uid_ = pw->pw_uid;
  int64_t steady = SteadySeconds();
  std::vector<int> rebuilt;
  for (size_t i : plan.added) {
    const NodeConf& nc = conf_.nodes[i];
    pb::NodeRecord rec = NodeRecordFromConf(nc, conf_);
    if (int idx = FindNode(nc.name); idx >= 0) {
      // A dynamic node of that name is now configured: it keeps its runtime state.
      ApplyNodeConfig(rec, &nodes_[idx].rec);
      nodes_[idx].rec.set_dynamic(false);
      rebuilt.push_back(idx);
      continue;
    }
    Node n;
    n.rec = std::move(rec);
    n.last_seen = steady;  // a full SlurmdTimeout to register, as at start-up
    node_by_name_[nc.name] = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(n));
  }
  for (size_t i : plan.changed) {
    int idx = FindNode(conf_.nodes[i].name);
    if (idx < 0) continue;
    ApplyNodeConfig(NodeRecordFromConf(conf_.nodes[i], conf_), &nodes_[idx].rec);
    rebuilt.push_back(idx);
  }

  std::vector<Partition> parts;
  parts.reserve(conf_.partitions.size());
  for (const PartitionConf& pc : conf_.partitions) {
    Partition p;
    p.rec = PartitionRecordFromConf(pc, conf_);
    for (const auto& n : pc.nodes)
      if (int idx = FindNode(n); idx >= 0) p.node_index.push_back(idx);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const pb::NodeRecord& r = nodes_[i].rec;
      if (!r.dynamic()) continue;
      std::vector<std::string> features(r.features().begin(), r.features().end());
      if (!DynamicNodeInPartition(pc.nodes_expr, conf_.nodesets, features)) continue;
      p.node_index.push_back(static_cast<int>(i));
      p.rec.add_nodes(r.name());
    }
    parts.push_back(std::move(p));
  }
  partitions_ = std::move(parts);
  ++partitions_version_;  // packed jobs' partition indexes may be stale (SchedView)

  // Every node's view: new nodes get one, changed nodes a new inventory, and all of them the
  // OverSubscribe of their (possibly new) partitions; bookings are kept.
  for (size_t i = 0; i < nodes_.size(); ++i) RebuildNodeView(static_cast<int>(i));
  priority_totals_.reset();
  backfill_promises_.reset();

  LoadSchedulingConfig();
  preempt_ = sched::PreemptConfig();
  LoadPreemptConfig();
  power_ = PowerConfig();
  LoadPowerConfig();
  topology_ = sched::Topology();
  topology_plugin_.clear();
  max_switch_wait_ = 300;
  if (Status s = LoadTopology(); !s.ok())
    LogError("reconfigure: %s; no topology until it is fixed", s.message().c_str());
  RecomputePriorities(Now());
  LoadConfigFiles(included);

  LogInfo("reconfigured (%s): %zu nodes (%zu added, %zu changed), %zu partitions", origin.c_str(),
          nodes_.size(), plan.added.size(), plan.changed.size(), partitions_.size());
  PushNodeReconfigure();
  ScheduleSoon();
  return Status::Ok();
}

void Controller::RebuildNodeView(int idx) {
  if (static_cast<size_t>(idx) >= views_.size()) {
    InitNodeView(idx);
    return;
  }
  sched::NodeView old = views_[idx];
  InitNodeView(idx);
  sched::NodeView& v = views_[idx];
  v.alloc_cpus = old.alloc_cpus;
  v.alloc_memory_mb = old.alloc_memory_mb;
  v.num_jobs = old.num_jobs;
  v.exclusive_in_use = old.exclusive_in_use;
  v.exclusive_user = old.exclusive_user;
  v.exclusive_user_jobs = old.exclusive_user_jobs;
  v.available = old.available;
  if (old.num_jobs == 0) return;
  // Devices held by running jobs are marked used in the new inventory.
  for (const auto& [id, job] : jobs_) {
    if (!HoldsNodes(job) || job.gres_devices_size() == 0) continue;
    sched::Placement p = PlacementOf(job);
    for (size_t k = 0; k < p.nodes.size(); ++k)
      if (p.nodes[k] == idx && k < p.gres.size()) sched::BookGres(v.gres, p.gres[k]);
  }
}

void Controller::PushNodeReconfigure() {
  pb::Request req;
  if (configless_)
    *req.mutable_reconfigure_node()->mutable_files() = config_files_;
  else
    req.mutable_reconfigure_node();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (!n.registered || !n.stream || n.stream->closed()) continue;
    std::string name = n.rec.name();
    SendToNode(static_cast<int>(i), req, [name](Result<pb::Response> r) {
      if (!r)
        LogError("reconfigure: node %s: %s", name.c_str(), r.error().c_str());
      else if (r->rc() != 0)
        LogError("reconfigure: node %s: %s", name.c_str(), r->error().c_str());
    });
  }
}

void Controller::StartConfigWatch() {
  if (!HasCtldParameter(conf_, "shoal_watch_config")) return;
  if (!watch_timer_) watch_timer_ = std::make_unique<asio::steady_timer>(io_);
  watch_timer_->expires_after(std::chrono::seconds(1));
  watch_timer_->async_wait([this](const asio::error_code& ec) {
    if (ec || shutting_down_) return;
    std::string now = FileStamp(watch_paths_);
    if (now != watch_stamp_) {
      // A broken file is not retried every second: the next change triggers the next try.
      if (!Reconfigure("a configuration file changed").ok()) watch_stamp_ = now;
    }
    StartConfigWatch();
  });
}

}  // namespace shoal::ctld
