// Nodes in the controller: registration over the node's own stream, heartbeats, silence
// detection (DOWN after SlurmdTimeout, jobs NODE_FAIL or requeued), admin updates.
#include <algorithm>
#include <chrono>

#include "common/hostlist.h"
#include "common/log.h"
#include "common/states.h"
#include "ctld/controller.h"
#include "ctld/dynamic_nodes.h"

namespace shoal::ctld {

int64_t SteadySeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

// "10.0.0.5:41234" -> "10.0.0.5"; "[::1]:5" or "::1:5" -> the address; unix sockets -> "".
std::string PeerIp(const std::string& peer) {
  if (peer.empty() || peer.rfind("unix:", 0) == 0) return "";
  size_t colon = peer.rfind(':');
  if (colon == std::string::npos || colon == 0) return "";
  std::string ip = peer.substr(0, colon);
  if (ip.size() > 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  return ip;
}

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), ::toupper);
  return s;
}

}  // namespace

pb::NodeRecord Controller::NodeView(const Node& node) const {
  pb::NodeRecord r = node.rec;
  if (r.base_state() != pb::NODE_DOWN && r.base_state() != pb::NODE_FUTURE) {
    bool powered = r.powered_down() || r.powering_up() || r.powering_down();
    if (!node.registered && !powered && r.alloc_cpus() == 0)
      r.set_base_state(pb::NODE_UNKNOWN);
    else if (r.alloc_cpus() == 0)
      r.set_base_state(pb::NODE_IDLE);
    else if (r.alloc_cpus() >= r.cpus())
      r.set_base_state(pb::NODE_ALLOCATED);
    else
      r.set_base_state(pb::NODE_MIXED);
  }
  if (r.reboot_issued()) r.set_base_state(pb::NODE_DOWN);  // Slurm: DOWN+REBOOT_ISSUED
  r.set_responding(node.stream && !node.stream->closed());
  if (!node.registered && r.base_state() == pb::NODE_UNKNOWN) r.set_responding(false);
  r.set_gres_used(GresUsedOf(static_cast<int>(&node - nodes_.data())));
  return r;
}

void Controller::PersistNode(const Node& node) {
  pb::JournalRecord rec;
  *rec.mutable_node() = node.rec;
  std::vector<pb::JournalRecord> v;
  v.push_back(std::move(rec));
  Persist(std::move(v), nullptr);
}

void Controller::SendToNode(int node_index, const pb::Request& request, ResponseCallback done) {
  Node& node = nodes_[node_index];
  if (!node.stream || node.stream->closed()) {
    if (done) done(Error(ErrorCode::kUnavailable, "node " + node.rec.name() + " not connected"));
    return;
  }
  std::string body = request.SerializeAsString();
  node.stream->Send(request, key_.Sign(0, 0, body, Now()), std::move(done));
}

void Controller::RegisterNode(const RpcConnectionPtr& conn, const pb::NodeRegisterRequest& req,
                              Responder respond) {
  int idx = FindNode(req.name());
  if (idx < 0) {
    if (!req.dynamic()) {
      respond(
          ErrorResponse(ErrorCode::kInvalidNodeName, "Invalid node name specified: " + req.name()));
      return;
    }
    pb::NodeRecord rec;
    rec.set_name(req.name());
    rec.set_dynamic(true);
    idx = AddDynamicNode(std::move(rec));
  }
  Node& node = nodes_[idx];
  auto& r = node.rec;
  if (r.dynamic()) {
    r.set_cpus(req.cpus());
    r.set_real_memory_mb(req.real_memory_mb());
    r.clear_features();
    for (const auto& f : req.features()) r.add_features(f);
    PlaceDynamicNode(idx);  // its features may put it in other NodeSets' partitions
    r.set_gres(req.gres());
    r.set_sockets(req.sockets() ? req.sockets() : req.cpus());
    r.set_cores_per_socket(req.cores_per_socket() ? req.cores_per_socket() : 1);
    r.set_threads_per_core(req.threads_per_core() ? req.threads_per_core() : 1);
    if (!req.addr().empty()) {
      r.set_addr(req.addr());
    } else if (std::string ip = PeerIp(conn->peer()); !ip.empty()) {
      // As Slurm records a dynamic node's address: the one it registered from (a pod's IP,
      // where its bare host name does not resolve).
      r.set_addr(ip);
    }
    r.set_hostname(req.hostname().empty() ? req.name() : req.hostname());
    r.set_port(req.port());
    // New inventory, same bookings: devices held by running jobs are marked used again.
    sched::NodeView old = views_[idx];
    InitNodeView(idx);
    views_[idx].alloc_cpus = old.alloc_cpus;
    views_[idx].alloc_memory_mb = old.alloc_memory_mb;
    views_[idx].num_jobs = old.num_jobs;
    views_[idx].exclusive_in_use = old.exclusive_in_use;
    views_[idx].exclusive_user = old.exclusive_user;
    views_[idx].exclusive_user_jobs = old.exclusive_user_jobs;
    for (const auto& [id, job] : jobs_) {
      if (!HoldsNodes(job)) continue;
      sched::Placement p = PlacementOf(job);
      for (size_t k = 0; k < p.nodes.size(); ++k)
        if (p.nodes[k] == idx && k < p.gres.size()) sched::BookGres(views_[idx].gres, p.gres[k]);
    }
    PersistNode(node);
  }
  bool reboot_down = RebootRegistered(idx, req);
  PowerRegistered(idx);
  // A node with less than its configuration is drained with Slurm's reasons.
  if (!r.dynamic()) {
    std::string low = RegistrationProblems(r, req);
    if (!low.empty() && !(r.drain() && r.reason() == low)) {
      LogError("node %s registered with less than configured: %s", req.name().c_str(), low.c_str());
      DrainNodeFor(idx, low, false);
    }
  }
  r.set_boot_time(req.boot_time());
  r.set_slurmd_start_time(req.start_time());
  r.set_version(req.version());
  r.set_os(req.os());
  r.set_arch(req.arch());
  if (node.stream && node.stream != conn) node.stream->Close();
  node.stream = conn;
  conn->tag = req.name();
  node.registered = true;
  node.last_seen = SteadySeconds();
  std::weak_ptr<RpcConnection> weak = conn;
  conn->OnClose([this, idx, weak] {
    auto c = weak.lock();
    if (nodes_[idx].stream == c) nodes_[idx].stream.reset();
  });
  // A node that went down only for not responding comes back (ReturnToService=1, or 2 for any).
  std::string rts = conf_.Get("ReturnToService", "0");
  if (r.base_state() == pb::NODE_DOWN && !reboot_down &&
      ((rts == "1" && node.down_not_responding) || rts == "2")) {
    r.set_base_state(pb::NODE_UNKNOWN);
    r.set_configured_down(false);
    if (node.down_not_responding) r.set_reason("");
    node.down_not_responding = false;
    PersistNode(node);
  }
  // A dynamic node created FUTURE (scontrol create) comes into service when its daemon registers.
  if (r.dynamic() && r.base_state() == pb::NODE_FUTURE) r.set_base_state(pb::NODE_UNKNOWN);
  if (r.base_state() == pb::NODE_UNKNOWN) r.set_base_state(pb::NODE_IDLE);

  // Reconcile jobs: the node's word against ours.
  std::set<uint32_t> known(req.running_job_ids().begin(), req.running_job_ids().end());
  pb::Response resp;
  auto* out = resp.mutable_node_register();
  out->set_node_name(req.name());
  out->set_heartbeat_interval_s(
      std::max<uint32_t>(1, std::min<uint32_t>(conf_.SlurmdTimeout() / 3, 30)));
  std::vector<pb::JobRecord*> relaunch;
  std::vector<pb::JobRecord*> failed;
  for (auto& [id, job] : jobs_) {
    if (job.batch_host() != req.name() || job.spec().interactive()) continue;
    bool active = HoldsNodes(job);
    if (!active) continue;
    if (known.count(id)) continue;
    if (!job.launch_acked() && job.state() == pb::JOB_RUNNING && !job.completing()) {
      relaunch.push_back(&job);  // the launch may never have arrived: send it again
    } else {
      failed.push_back(&job);
    }
  }
  std::vector<const pb::JobRecord*> still_to_end;
  for (uint32_t id : known) {
    pb::JobRecord* job = FindJob(id);
    bool on_node = job && (job->batch_host() == req.name() ||
                           std::find(job->nodes().begin(), job->nodes().end(), req.name()) !=
                               job->nodes().end());
    bool ours = on_node && HoldsNodes(*job);
    if (!ours) out->add_unknown_job_ids(id);
    // Ended here while the node was away (its TerminateJob found no stream): ask again.
    if (ours && job->completing() && !job->spec().interactive()) still_to_end.push_back(job);
  }
  respond(resp);
  for (const pb::JobRecord* job : still_to_end)
    SendTerminate(*job, TerminateReason(*job), conf_.KillWait(), idx);
  for (auto* job : failed) {
    LogInfo("job %u lost on node %s", job->job_id(), req.name().c_str());
    ReleaseResources(*job);
    if (job->completing()) {
      FinishJob(*job, job->state(), Now());
    } else {
      FinishJob(*job, pb::JOB_NODE_FAIL, Now());
      job->set_reason("NodeDown");
    }
    PersistJob(*job);
  }
  for (auto* job : relaunch) Launch(*job);
  ScheduleSoon();
}

int Controller::AddDynamicNode(pb::NodeRecord rec) {
  int idx = static_cast<int>(nodes_.size());
  node_by_name_[rec.name()] = idx;
  Node n;
  n.rec = std::move(rec);
  nodes_.push_back(std::move(n));
  PlaceDynamicNode(idx);
  InitNodeView(idx);
  TopologyNodeChanged(idx, true);  // topology.conf may name it before it existed
  return idx;
}

void Controller::PlaceDynamicNode(int idx) {
  const pb::NodeRecord& rec = nodes_[idx].rec;
  std::vector<std::string> features(rec.features().begin(), rec.features().end());
  for (auto& p : partitions_) {
    bool member = std::find(p.node_index.begin(), p.node_index.end(), idx) != p.node_index.end();
    bool wanted = DynamicNodeInPartition(p.rec.nodes_expr(), conf_.nodesets, features);
    if (member == wanted) continue;
    if (wanted) {
      p.node_index.push_back(idx);
      p.rec.add_nodes(rec.name());
      continue;
    }
    p.node_index.erase(std::remove(p.node_index.begin(), p.node_index.end(), idx),
                       p.node_index.end());
    auto* names = p.rec.mutable_nodes();
    for (int k = 0; k < names->size(); ++k) {
      if (names->Get(k) != rec.name()) continue;
      names->erase(names->begin() + k);
      break;
    }
  }
}

void Controller::Heartbeat(const pb::HeartbeatRequest& req) {
  int idx = FindNode(req.name());
  if (idx < 0) return;
  nodes_[idx].last_seen = SteadySeconds();
  nodes_[idx].rec.set_cpu_load(req.cpu_load());
  nodes_[idx].rec.set_free_memory_mb(req.free_memory_mb());
  nodes_[idx].rec.set_last_heartbeat(Now());
}

void Controller::CheckNodeSilence(int64_t now) {
  int64_t steady = SteadySeconds();
  int64_t timeout = conf_.SlurmdTimeout();
  if (timeout == 0) return;  // 0 disables the check, as in Slurm
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (n.rec.base_state() == pb::NODE_DOWN || n.rec.base_state() == pb::NODE_FUTURE) continue;
    if (NodeSilentByDesign(n.rec)) continue;  // reboot or power action: its own timeouts
    bool connected = n.stream && !n.stream->closed();
    if (connected) n.last_seen = std::max<int64_t>(n.last_seen, steady - 1);
    if (steady - n.last_seen < timeout) continue;
    // Nodes that never registered since boot stay UNKNOWN until the timeout passes too.
    NodeFailed(static_cast<int>(i), "Not responding");
  }
  (void)now;
}

void Controller::NodeFailed(int node_index, const std::string& reason) {
  Node& node = nodes_[node_index];
  LogInfo("node %s is DOWN: %s", node.rec.name().c_str(), reason.c_str());
  node.rec.set_base_state(pb::NODE_DOWN);
  node.rec.set_reason(reason);
  node.rec.set_reason_uid(slurm_user_uid_);
  node.rec.set_reason_time(Now());
  node.down_not_responding = reason == "Not responding";
  int64_t now = Now();
  for (auto& [id, job] : jobs_) {
    bool active = HoldsNodes(job);
    if (!active) continue;
    if (std::find(job.nodes().begin(), job.nodes().end(), node.rec.name()) == job.nodes().end())
      continue;
    ReleaseResources(job);
    if (job.completing()) {
      FinishJob(job, job.state(), now);
    } else if (job.requeue()) {
      LogInfo("job %u requeued after node failure", id);
      Requeue(job, false);
      job.set_reason("BeginTime");
    } else {
      FinishJob(job, pb::JOB_NODE_FAIL, now);
      job.set_reason("NodeDown");
    }
    PersistJob(job);
  }
  PersistNode(node);
  ScheduleSoon();
}

Result<std::vector<int>> Controller::ResolveNodeNames(const std::string& hostlist) const {
  auto names = ExpandHostlist(hostlist);
  if (!names || names->empty())
    return Error(ErrorCode::kInvalidNodeName, "Invalid node name specified");
  std::vector<int> out;
  for (const auto& name : *names) {
    int idx = FindNode(name);
    if (idx < 0) return Error(ErrorCode::kInvalidNodeName, "Invalid node name specified: " + name);
    out.push_back(idx);
  }
  return out;
}

pb::Response Controller::UpdateNode(const pb::Credential& cred, const pb::UpdateNodeRequest& req) {
  if (!IsAdmin(cred.uid()))
    return ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied");
  auto resolved = ResolveNodeNames(req.node_names());
  if (!resolved) return ErrorResponse(resolved.status().code(), resolved.error());
  std::vector<int> targets = std::move(*resolved);
  std::string state = Upper(req.state());
  if ((state == "DRAIN" || state == "DOWN" || state == "FAIL") && req.reason().empty())
    return ErrorResponse(
        ErrorCode::kInvalidArgument,
        "You must specify a reason when DOWNING or DRAINING a node. Request denied");
  static const std::set<std::string> kStates = {
      "",         "DRAIN",           "RESUME",          "DOWN",   "IDLE",          "UNDRAIN",
      "FAIL",     "FUTURE",          "NORESP",          "UNDOWN", "CANCEL_REBOOT", "POWER_DOWN",
      "POWER_UP", "POWER_DOWN_ASAP", "POWER_DOWN_FORCE"};
  if (!kStates.count(state))
    return ErrorResponse(ErrorCode::kInvalidArgument,
                         "Invalid node state specified: " + req.state());
  int64_t now = Now();
  for (int idx : targets) {
    Node& node = nodes_[idx];
    auto& r = node.rec;
    if (state == "DRAIN" || state == "FAIL") {
      r.set_drain(true);
    } else if (state == "DOWN") {
      r.set_reason(req.reason());
      r.set_reason_uid(cred.uid());
      r.set_reason_time(now);
      r.set_configured_down(true);
      NodeFailed(idx, req.reason());
      node.down_not_responding = false;
    } else if (state == "RESUME" || state == "IDLE" || state == "UNDRAIN" || state == "UNDOWN") {
      r.set_drain(false);
      r.set_health_drain(false);
      if (state != "UNDRAIN" && r.base_state() == pb::NODE_DOWN) {
        r.set_base_state(node.registered ? pb::NODE_IDLE : pb::NODE_UNKNOWN);
        r.set_configured_down(false);
        node.down_not_responding = false;
      }
      r.set_reason("");
      r.set_reason_uid(0);
      r.set_reason_time(0);
    } else if (state == "FUTURE") {
      r.set_base_state(pb::NODE_FUTURE);
    } else if (state == "CANCEL_REBOOT") {
      CancelReboot(idx);
    } else if (state.rfind("POWER_", 0) == 0) {
      if (Status st = PowerUpdate(idx, state); !st.ok())
        return ErrorResponse(ErrorCode::kInvalidArgument, st.message());
    }
    if (!req.reason().empty() && state != "RESUME" && state != "IDLE" && state != "UNDRAIN") {
      r.set_reason(req.reason());
      r.set_reason_uid(cred.uid());
      r.set_reason_time(now);
    }
    for (const auto& [k, v] : req.fields()) {
      std::string key = Upper(k);
      if (key == "FEATURES" || key == "AVAILABLEFEATURES" || key == "ACTIVEFEATURES") {
        r.clear_features();
        size_t pos = 0;
        while (pos <= v.size()) {
          size_t comma = v.find(',', pos);
          std::string f =
              v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
          if (!f.empty()) r.add_features(f);
          if (comma == std::string::npos) break;
          pos = comma + 1;
        }
        if (r.dynamic()) PlaceDynamicNode(idx);  // NodeSet= partitions follow features
      } else if (key == "COMMENT") {
        r.set_comment(v);
      } else if (key == "EXTRA") {
        r.set_extra(v);
      } else if (key == "WEIGHT") {
        r.set_weight(static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10)));
      } else if (key != "REASON" && key != "STATE" && key != "NODENAME") {
        return ErrorResponse(ErrorCode::kInvalidArgument, "Update of " + k + " is not supported");
      }
    }
    PersistNode(node);
  }
  ScheduleSoon();
  return pb::Response();
}

}  // namespace shoal::ctld
