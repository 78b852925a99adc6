// Node reboots requested with `scontrol reboot [ASAP] [nextstate=RESUME|DOWN] [reason=..]
// {ALL|<nodes>}` and `scontrol cancel_reboot <nodes>`.
//
// REBOOT_REQUESTED waits until no job holds the node (ASAP also drains it so none starts), then
// the controller sends RebootNodeRequest and the node's shoald runs RebootProgram as root. The
// node is REBOOT_ISSUED (unavailable, silent by design) until it registers again with a newer
// boot time or a newer shoald start time (a restarted shoald counts: tests cannot reboot the
// host). Not back within ResumeTimeout: DOWN, reason "... : reboot timed out".
#include <algorithm>

#include "common/hostlist.h"
#include "common/log.h"
#include "ctld/controller.h"

namespace shoal::ctld {
namespace {

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), ::toupper);
  return s;
}

// reboot_next_state holds "[ASAP:]<nextstate>": whether the reboot drained the node (so that
// cancel_reboot and the return undrain it) and the state to take after it ("" = as before).
constexpr std::string_view kAsapTag = "ASAP:";
bool RebootAsap(const pb::NodeRecord& r) { return r.reboot_next_state().rfind(kAsapTag, 0) == 0; }
std::string RebootNextState(const pb::NodeRecord& r) {
  std::string s = r.reboot_next_state();
  return RebootAsap(r) ? s.substr(kAsapTag.size()) : s;
}

// The reason a reboot set (possibly with " : reboot issued" appended) is still the node's.
bool ReasonFromReboot(const pb::NodeRecord& r) {
  return !r.reboot_reason().empty() && r.reason().rfind(r.reboot_reason(), 0) == 0;
}

void ClearReason(pb::NodeRecord& r) {
  r.set_reason("");
  r.set_reason_uid(0);
  r.set_reason_time(0);
}

}  // namespace

int64_t Controller::ResumeTimeoutSeconds() const {
  auto v = conf_.GetInt("ResumeTimeout", 60);
  return v.ok() && *v > 0 ? *v : 60;
}

bool Controller::NodeIdle(int idx) const {
  if (nodes_[idx].rec.alloc_cpus() > 0 || views_[idx].num_jobs > 0) return false;
  const std::string& name = nodes_[idx].rec.name();
  for (uint32_t id : holders_) {  // not every job: this runs per node, every second
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    const pb::JobRecord& job = it->second;
    if (!HoldsNodes(job)) continue;
    if (std::find(job.nodes().begin(), job.nodes().end(), name) != job.nodes().end()) return false;
  }
  return true;
}

pb::Response Controller::RebootNodes(const pb::Credential& cred,
                                     const pb::RebootNodesRequest& req) {
  if (!IsAdmin(cred.uid()))
    return ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied");
  std::vector<int> targets;
  if (Upper(req.node_names()) == "ALL") {
    for (size_t i = 0; i < nodes_.size(); ++i) targets.push_back(static_cast<int>(i));
  } else {
    auto names = ExpandHostlist(req.node_names());
    if (!names || names->empty())
      return ErrorResponse(ErrorCode::kInvalidNodeName, "Invalid node name specified");
    for (const auto& name : *names) {
      int idx = FindNode(name);
      if (idx < 0) return ErrorResponse(ErrorCode::kInvalidNodeName, "Invalid node name specified");
      targets.push_back(idx);
    }
  }
  if (req.cancel()) {
    for (int idx : targets) CancelReboot(idx);
    return pb::Response();
  }
  std::string next = Upper(req.next_state());
  if (!next.empty() && next != "RESUME" && next != "DOWN")
    return ErrorResponse(ErrorCode::kInvalidArgument, "Invalid node state specified");
  if (conf_.Get("RebootProgram").empty())
    return ErrorResponse(ErrorCode::kInvalidArgument, "RebootProgram isn't defined");
  int64_t now = Now();
  for (int idx : targets) {
    auto& r = nodes_[idx].rec;
    if (r.base_state() == pb::NODE_FUTURE || r.reboot_issued()) continue;
    r.set_reboot_requested(true);
    r.set_reboot_next_state((req.asap() ? std::string(kAsapTag) : std::string()) + next);
    // Slurm: the given reason, else "Reboot ASAP" for ASAP, else "reboot requested" when the
    // node has no reason of its own.
    std::string reason = req.reason();
    if (reason.empty() && req.asap()) reason = "Reboot ASAP";
    if (reason.empty() && r.reason().empty()) reason = "reboot requested";
    r.set_reboot_reason(reason);
    if (!reason.empty()) {
      r.set_reason(reason);
      r.set_reason_uid(cred.uid());
      r.set_reason_time(now);
    }
    if (req.asap()) r.set_drain(true);
    LogInfo("reboot requested for node %s%s", r.name().c_str(), req.asap() ? " (ASAP)" : "");
    PersistNode(nodes_[idx]);
  }
  RebootTick(now);
  ScheduleSoon();
  return pb::Response();
}

void Controller::CancelReboot(int idx) {
  auto& r = nodes_[idx].rec;
  if (!r.reboot_requested()) return;
  // Slurm: undrained and the reason cleared if the node was drained by an ASAP reboot.
  if (RebootAsap(r)) r.set_drain(false);
  if (ReasonFromReboot(r)) ClearReason(r);
  r.set_reboot_requested(false);
  r.set_reboot_next_state("");
  r.set_reboot_reason("");
  LogInfo("reboot of node %s cancelled", r.name().c_str());
  PersistNode(nodes_[idx]);
}

void Controller::RebootTick(int64_t now) {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    int idx = static_cast<int>(i);
    Node& node = nodes_[i];
    auto& r = node.rec;
    if (r.reboot_requested() && node.registered && node.stream && !node.stream->closed() &&
        NodeIdle(idx)) {
      r.set_reboot_requested(false);
      r.set_reboot_issued(true);
      r.set_reboot_time(now);
      if (ReasonFromReboot(r)) r.set_reason(r.reason() + " : reboot issued");
      pb::Request req;
      req.mutable_reboot_node()->set_reboot_program(conf_.Get("RebootProgram"));
      std::string name = r.name();
      SendToNode(idx, req, [name](Result<pb::Response> resp) {
        if (!resp.ok())
          LogInfo("reboot of node %s: %s", name.c_str(), resp.error().c_str());
        else if (resp->rc() != 0)
          LogInfo("reboot of node %s: %s", name.c_str(), resp->error().c_str());
      });
      LogInfo("reboot issued for node %s", name.c_str());
      PersistNode(node);
    } else if (r.reboot_issued() && now - r.reboot_time() > ResumeTimeoutSeconds()) {
      r.set_reboot_issued(false);
      r.set_reboot_next_state("");
      std::string reason =
          r.reason().empty() ? "reboot timed out" : r.reason() + " : reboot timed out";
      r.set_reboot_reason("");
      NodeFailed(idx, reason);
    }
  }
}

bool Controller::RebootRegistered(int idx, const pb::NodeRegisterRequest& req) {
  auto& r = nodes_[idx].rec;
  if (!r.reboot_issued()) return false;
  bool rebooted = req.boot_time() > r.boot_time() || req.start_time() > r.slurmd_start_time();
  if (!rebooted) return false;
  std::string next = RebootNextState(r);
  bool ours = ReasonFromReboot(r);
  r.set_reboot_issued(false);
  if (next == "DOWN") {
    // Stays down (not ReturnToService) until an admin resumes it; DRAIN is cleared (man).
    r.set_drain(false);
    r.set_base_state(pb::NODE_DOWN);
    r.set_configured_down(true);
    r.set_reason(r.reason().empty() ? "reboot complete" : r.reason() + " : reboot complete");
    r.set_reason_time(Now());
    nodes_[idx].down_not_responding = false;
  } else {
    if (next == "RESUME" || RebootAsap(r)) r.set_drain(false);
    if (next == "RESUME" || ours) ClearReason(r);
    if (next == "RESUME" && r.base_state() == pb::NODE_DOWN) {
      r.set_base_state(pb::NODE_UNKNOWN);
      r.set_configured_down(false);
      nodes_[idx].down_not_responding = false;
    }
  }
  r.set_reboot_next_state("");
  r.set_reboot_reason("");
  LogInfo("node %s rebooted", r.name().c_str());
  PersistNode(nodes_[idx]);
  return next == "DOWN";
}

}  // namespace shoal::ctld
