// The operator's client to shoalctld: Shoal's own RPC (no REST hop), authenticated with a
// short-lived auth/jwt token the operator signs itself with the cluster's HS256 key (as Slinky
// signs tokens for slurmrestd). Every failure (no address, connect failure, rc != 0) is an
// error value: the planners read "unknown" as "wait", never as "idle".
//
// Blocking; one ShoalApi per thread (it keeps one connection open between calls).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/rpc.h"
#include "operator/model/plan.h"
#include "shoal.pb.h"

namespace shoal::op {

struct ShoalApiConfig {
  std::string address;  // "host:port" of the controller
  std::string jwt_key;  // the HS256 key (the jwt_hs256.key file's bytes)
  std::string user = "root";
  int timeout_ms = 10000;
  int64_t token_lifetime_s = 300;
};

// Pure: the operator's view of the controller's nodes plus the jobs running or completing on
// them (COMPLETING flag, running_jobs, latest_job_end).
std::vector<ShoalNode> ToShoalNodes(const pb::NodeQueryResponse& nodes,
                                    const pb::JobQueryResponse& jobs);
// Pure: the ReservationRequest args of a MAINT reservation (StartTime in the controller's local
// time; "now" when `start` is not in the future).
std::vector<std::string> MaintReservationArgs(const std::string& name, int64_t start,
                                              int64_t duration_s, const std::string& nodes,
                                              int64_t now);

class ShoalApi {
 public:
  explicit ShoalApi(ShoalApiConfig config) : config_(std::move(config)) {}

  const ShoalApiConfig& config() const { return config_; }
  // A new address or key takes effect on the next call (the connection is reopened).
  void SetAddress(const std::string& address);
  void SetKey(const std::string& key) { config_.jwt_key = key; }

  Status Ping();
  Result<std::vector<ShoalNode>> ListNodes();
  Status Drain(const std::string& node, const std::string& reason);
  Status Undrain(const std::string& node);
  Status Down(const std::string& node, const std::string& reason);
  Status SetComment(const std::string& node, const std::string& text);
  // Replaces the node's features (scontrol update NodeName= Features=a,b).
  Status SetFeatures(const std::string& node, const std::string& features);
  Status DeleteNode(const std::string& node);
  Status Reconfigure();
  Status CreateReservation(const std::string& name, int64_t start, int64_t duration_s,
                           const std::string& nodes);

  // One request; rc != 0 becomes an error carrying the controller's message.
  Result<pb::Response> Call(const pb::Request& request);

 private:
  Status UpdateNode(const std::string& node, const std::string& state, const std::string& reason,
                    const std::string& comment);

  ShoalApiConfig config_;
  RpcClient client_;
};

}  // namespace shoal::op
