// The Backend that shoalrestd's worker threads use: blocking RpcClient connections to shoalctld
// and shoaldbd, one each per thread, reused across requests and reopened when they fail.
#pragma once

#include <optional>
#include <string>

#include "common/auth.h"
#include "restd/router.h"

namespace shoal::restd {

struct BackendConfig {
  std::string controller_address;  // "host:port"
  std::string dbd_address;         // "" when accounting is not slurmdbd
  std::string cluster_name;
  std::optional<ClusterKey> key;  // signs unix-socket callers' credentials (restd runs as root)
  int timeout_ms = 10000;
};

// The credential a request carries for `caller`: a cluster-key signature for a local (unix
// socket) peer, the token for a JWT caller. Pure.
Result<pb::Credential> CredentialFor(const BackendConfig& config, const Caller& caller,
                                     const std::string& body, int64_t now);

class RpcBackend final : public Backend {
 public:
  explicit RpcBackend(const BackendConfig* config) : config_(config) {}
  Result<pb::Response> CallController(const Caller& caller, const pb::Request& request) override;
  Result<pb::Response> CallControllerRaw(const Caller& caller, const pb::Request& request) override;
  Result<pb::DbdResponse> CallDbd(const Caller& caller, const pb::DbdRequest& request) override;
  std::string ClusterName() const override { return config_->cluster_name; }

 private:
  Result<pb::Response> Call(RpcClient& client, const std::string& address, const Caller& caller,
                            const std::string& body, int timeout_ms);
  const BackendConfig* config_;
  RpcClient ctld_, dbd_;
};

}  // namespace shoal::restd
