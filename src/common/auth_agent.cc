#include "common/auth_agent.h"

namespace shoal {

pb::Response AnswerAuthAgent(const ClusterKey& key, const RpcConnection& conn,
                             const std::string& body, int64_t now) {
  pb::Request req;
  if (!req.ParseFromString(body) || req.body_case() != pb::Request::kAuth)
    return ErrorResponse(ErrorCode::kProtocol, "auth agent: malformed request");
  if (conn.peer_uid() < 0 || conn.peer_gid() < 0)
    return ErrorResponse(ErrorCode::kAuthFailure, "auth agent: no peer credentials");
  // Sign exactly the caller's own identity, as read by the kernel.
  pb::Response resp;
  *resp.mutable_auth()->mutable_cred() =
      key.SignDigest(static_cast<uint32_t>(conn.peer_uid()), static_cast<uint32_t>(conn.peer_gid()),
                     req.auth().body_sha256(), now);
  return resp;
}

}  // namespace shoal
