#include "operator/shoal_api.h"

#include <algorithm>
#include <ctime>
#include <map>

#include "common/jwt.h"
#include "common/states.h"
#include "common/units.h"

namespace shoal::op {
namespace {

const char* BaseName(pb::NodeBaseState s) {
  switch (s) {
    case pb::NODE_IDLE:
      return "IDLE";
    case pb::NODE_ALLOCATED:
      return "ALLOCATED";
    case pb::NODE_MIXED:
      return "MIXED";
    case pb::NODE_DOWN:
      return "DOWN";
    case pb::NODE_FUTURE:
      return "FUTURE";
    default:
      return "UNKNOWN";
  }
}

// An unlimited job has no deadline: it sorts after every limited one.
constexpr int64_t kNoDeadlineSeconds = int64_t{10} * 365 * 86400;

}  // namespace

std::vector<ShoalNode> ToShoalNodes(const pb::NodeQueryResponse& nodes,
                                    const pb::JobQueryResponse& jobs) {
  struct Busy {
    uint32_t jobs = 0;
    bool completing = false;
    int64_t latest_end = 0;
  };
  std::map<std::string, Busy> busy;
  for (const auto& j : jobs.jobs()) {
    if (j.completing()) {
      // Only the nodes whose epilog is outstanding are still completing.
      const auto& list = j.epilog_pending_nodes_size() > 0 ? j.epilog_pending_nodes() : j.nodes();
      for (const auto& n : list) {
        busy[n].jobs++;
        busy[n].completing = true;
      }
      continue;
    }
    if (j.state() != pb::JOB_RUNNING && j.state() != pb::JOB_SUSPENDED) continue;
    int64_t end = j.time_limit() == kTimeInfinite || j.time_limit() == kTimeNoVal
                      ? j.start_time() + kNoDeadlineSeconds
                      : j.start_time() + int64_t{j.time_limit()} * 60 + j.suspended_secs();
    for (const auto& n : j.nodes()) {
      Busy& b = busy[n];
      b.jobs++;
      b.latest_end = std::max(b.latest_end, end);
    }
  }
  std::vector<ShoalNode> out;
  out.reserve(nodes.nodes_size());
  for (const auto& r : nodes.nodes()) {
    ShoalNode n;
    n.name = r.name();
    n.base_state = BaseName(r.base_state());
    if (r.drain()) n.flags.insert("DRAIN");
    if (r.maint()) n.flags.insert("MAINTENANCE");
    if (!r.responding() && r.base_state() != pb::NODE_FUTURE) n.flags.insert("NOT_RESPONDING");
    n.reason = r.reason();
    n.comment = r.comment();
    n.features.assign(r.features().begin(), r.features().end());
    n.alloc_cpus = r.alloc_cpus();
    if (auto it = busy.find(r.name()); it != busy.end()) {
      n.running_jobs = it->second.jobs;
      n.latest_job_end = it->second.latest_end;
      if (it->second.completing) n.flags.insert("COMPLETING");
    }
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<std::string> MaintReservationArgs(const std::string& name, int64_t start,
                                              int64_t duration_s, const std::string& nodes,
                                              int64_t now) {
  std::string start_text = "now";
  if (start > now) {
    std::time_t t = start;
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    start_text = buf;
  }
  int64_t minutes = std::max<int64_t>(1, (duration_s + 59) / 60);
  return {
      "ReservationName=" + name, "StartTime=" + start_text, "Duration=" + std::to_string(minutes),
      "Nodes=" + nodes,          "Flags=MAINT,IGNORE_JOBS", "Users=root"};
}

void ShoalApi::SetAddress(const std::string& address) {
  if (address == config_.address) return;
  config_.address = address;
  client_ = RpcClient();
}

Result<pb::Response> ShoalApi::Call(const pb::Request& request) {
  if (config_.address.empty()) return Error(ErrorCode::kUnavailable, "controller address unknown");
  if (config_.jwt_key.empty()) return Error(ErrorCode::kAuthFailure, "no jwt key");
  int64_t now = std::time(nullptr);
  pb::Credential cred;
  cred.set_jwt(jwt::Sign(config_.jwt_key, {config_.user, now, now + config_.token_lifetime_s}));
  std::string body = request.SerializeAsString();
  // A kept connection that turned readable while idle was closed by the controller: reopen.
  if (client_.fd() >= 0 && client_.Readable(0)) client_ = RpcClient();
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool fresh = client_.fd() < 0;
    if (fresh) {
      auto c = RpcClient::Connect(config_.address, config_.timeout_ms);
      if (!c)
        return Error(ErrorCode::kUnavailable, "Unable to contact slurm controller at " +
                                                  config_.address + " (" + c.error() + ")");
      client_ = std::move(*c);
    }
    auto id = client_.SendRaw(body, cred, config_.timeout_ms);
    if (!id) {
      client_ = RpcClient();
      if (!fresh) continue;  // the kept connection died: nothing was delivered
      return Error(ErrorCode::kUnavailable,
                   "Unable to contact slurm controller (" + id.error() + ")");
    }
    auto r = client_.Receive(*id, config_.timeout_ms);
    if (!r) {
      client_ = RpcClient();  // the request may have been applied: never resend it
      return Error(ErrorCode::kUnavailable,
                   "Unable to contact slurm controller (" + r.error() + ")");
    }
    if (r->rc() != 0)
      return Error(static_cast<ErrorCode>(r->rc()),
                   r->error().empty() ? "error " + std::to_string(r->rc()) : r->error());
    return r;
  }
  return Error(ErrorCode::kUnavailable, "Unable to contact slurm controller");
}

Status ShoalApi::Ping() {
  pb::Request req;
  req.mutable_ping();
  auto r = Call(req);
  return r ? Status::Ok() : r.status();
}

Result<std::vector<ShoalNode>> ShoalApi::ListNodes() {
  pb::Request nq;
  nq.mutable_node_query();
  auto nodes = Call(nq);
  if (!nodes) return nodes.status();
  if (!nodes->has_node_query())
    return Error(ErrorCode::kProtocol, "node query answered without nodes");
  pb::Request jq;
  jq.mutable_job_query()->set_omit_script(true);
  auto jobs = Call(jq);
  if (!jobs) return jobs.status();
  if (!jobs->has_job_query()) return Error(ErrorCode::kProtocol, "job query answered without jobs");
  return ToShoalNodes(nodes->node_query(), jobs->job_query());
}

Status ShoalApi::UpdateNode(const std::string& node, const std::string& state,
                            const std::string& reason, const std::string& comment) {
  pb::Request req;
  auto* u = req.mutable_update_node();
  u->set_node_names(node);
  u->set_state(state);
  u->set_reason(reason);
  if (state.empty()) (*u->mutable_fields())["Comment"] = comment;
  auto r = Call(req);
  return r ? Status::Ok() : r.status();
}

Status ShoalApi::Drain(const std::string& node, const std::string& reason) {
  return UpdateNode(node, "DRAIN", reason, "");
}
Status ShoalApi::Undrain(const std::string& node) { return UpdateNode(node, "UNDRAIN", "", ""); }
Status ShoalApi::Down(const std::string& node, const std::string& reason) {
  return UpdateNode(node, "DOWN", reason, "");
}
Status ShoalApi::SetComment(const std::string& node, const std::string& text) {
  return UpdateNode(node, "", "", text);
}

Status ShoalApi::SetFeatures(const std::string& node, const std::string& features) {
  pb::Request req;
  auto* u = req.mutable_update_node();
  u->set_node_names(node);
  (*u->mutable_fields())["Features"] = features;
  auto r = Call(req);
  return r ? Status::Ok() : r.status();
}

Status ShoalApi::DeleteNode(const std::string& node) {
  pb::Request req;
  req.mutable_delete_node()->set_node_names(node);
  auto r = Call(req);
  return r ? Status::Ok() : r.status();
}

Status ShoalApi::Reconfigure() {
  pb::Request req;
  req.mutable_reconfigure();
  auto r = Call(req);
  return r ? Status::Ok() : r.status();
}

Status ShoalApi::CreateReservation(const std::string& name, int64_t start, int64_t duration_s,
                                   const std::string& nodes) {
  pb::Request req;
  auto* rv = req.mutable_reservation();
  rv->set_action(pb::ReservationRequest::CREATE);
  for (auto& a : MaintReservationArgs(name, start, duration_s, nodes, std::time(nullptr)))
    rv->add_args(a);
  auto r = Call(req);
  return r ? Status::Ok() : r.status();
}

}  // namespace shoal::op
