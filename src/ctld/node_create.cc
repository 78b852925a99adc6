// scontrol create NodeName=... / scontrol delete NodeName=...: dynamic nodes made and removed by
// an admin. A created node is journalled like a node that registered with shoald -Z; a deleted
// one leaves a tombstone slot in nodes_ (node indices are held all over the controller) and is
// dropped from the journal by a compaction.
#include <algorithm>

#include "common/hostlist.h"
#include "common/log.h"
#include "ctld/controller.h"
#include "ctld/dynamic_nodes.h"
#include "ctld/reconfigure_plan.h"

namespace shoal::ctld {

pb::Response Controller::CreateNode(const pb::Credential& cred, const pb::CreateNodeRequest& req) {
  if (!IsAdmin(cred.uid()))
    return ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied");
  auto confs = ParseCreateNodeSpec(req.spec());
  if (!confs) return ErrorResponse(ErrorCode::kInvalidArgument, confs.error());
  for (const auto& nc : *confs) {
    if (FindNode(nc.name) >= 0)
      return ErrorResponse(ErrorCode::kInvalidNodeName, "Duplicate node name: " + nc.name);
  }
  // MaxNodeCount caps the node table when it is set (Shoal takes shoald -Z nodes without it).
  auto max_conf = conf_.GetInt("MaxNodeCount", 0);
  int64_t max_nodes = max_conf.ok() ? *max_conf : 0;
  size_t live = static_cast<size_t>(
      std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return !n.deleted; }));
  if (max_nodes > 0 && live + confs->size() > static_cast<size_t>(max_nodes))
    return ErrorResponse(ErrorCode::kInvalidArgument,
                         "Creating " + std::to_string(confs->size()) +
                             " node(s) would exceed MaxNodeCount=" + std::to_string(max_nodes));
  for (const auto& nc : *confs) {
    pb::NodeRecord rec = NodeRecordFromConf(nc, conf_);
    rec.set_dynamic(true);
    int idx = AddDynamicNode(std::move(rec));
    // A full SlurmdTimeout to register, as at start-up.
    nodes_[idx].last_seen = SteadySeconds();
    LogInfo("node %s created by uid %u", nc.name.c_str(), cred.uid());
    PersistNode(nodes_[idx]);
  }
  ScheduleSoon();
  return pb::Response();
}

pb::Response Controller::DeleteNode(const pb::Credential& cred, const pb::DeleteNodeRequest& req) {
  if (!IsAdmin(cred.uid()))
    return ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied");
  auto resolved = ResolveNodeNames(req.node_names());
  if (!resolved) return ErrorResponse(resolved.status().code(), resolved.error());
  std::vector<int> targets;
  for (int idx : *resolved) {
    const std::string& name = nodes_[idx].rec.name();
    if (!nodes_[idx].rec.dynamic())
      return ErrorResponse(ErrorCode::kInvalidArgument,
                           "Can't delete non-dynamic node " + name + ": it is in slurm.conf");
    bool busy = views_[idx].num_jobs > 0;
    for (const auto& [id, job] : jobs_) {
      if (busy) break;
      busy = HoldsNodes(job) &&
             std::find(job.nodes().begin(), job.nodes().end(), name) != job.nodes().end();
    }
    if (busy)
      return ErrorResponse(ErrorCode::kInvalidArgument,
                           "Requested nodes are busy: " + name + " has jobs allocated");
    targets.push_back(idx);
  }
  for (int idx : targets) {
    Node& node = nodes_[idx];
    std::string name = node.rec.name();
    for (auto& p : partitions_) {
      p.node_index.erase(std::remove(p.node_index.begin(), p.node_index.end(), idx),
                         p.node_index.end());
      auto* nodes = p.rec.mutable_nodes();
      for (int i = nodes->size() - 1; i >= 0; --i)
        if (nodes->Get(i) == name) nodes->DeleteSubrange(i, 1);
    }
    node_by_name_.erase(name);
    resume_queue_.erase(idx);
    power_down_queue_.erase(idx);
    if (node.stream) node.stream->Close();
    node.stream.reset();
    // The slot stays (indices elsewhere stay valid) but offers nothing and is never listed.
    node.deleted = true;
    node.registered = false;
    pb::NodeRecord tomb;
    tomb.set_base_state(pb::NODE_FUTURE);
    node.rec = std::move(tomb);
    InitNodeView(idx);
    views_[idx].available = false;
    TopologyNodeChanged(idx, false);
    LogInfo("node %s deleted by uid %u", name.c_str(), cred.uid());
  }
  // The journal holds the node's records: a snapshot without it replaces them.
  MaybeCompact();
  ScheduleSoon();
  return pb::Response();
}

}  // namespace shoal::ctld
