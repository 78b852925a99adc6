#include "restd/backend.h"

#include <ctime>

namespace shoal::restd {

Result<pb::Credential> CredentialFor(const BackendConfig& config, const Caller& caller,
                                     const std::string& body, int64_t now) {
  if (caller.local) {
    if (!config.key)
      return Error(ErrorCode::kAuthFailure,
                   "shoalrestd cannot sign credentials (cluster key not readable)");
    return config.key->Sign(caller.uid, caller.gid, body, now);
  }
  if (caller.jwt.empty()) return Error(ErrorCode::kAuthFailure, "Authentication failure");
  pb::Credential cred;
  cred.set_jwt(caller.jwt);
  cred.set_jwt_user(caller.jwt_user);
  return cred;
}

Result<pb::Response> RpcBackend::Call(RpcClient& client, const std::string& address,
                                      const Caller& caller, const std::string& body,
                                      int timeout_ms) {
  auto cred = CredentialFor(*config_, caller, body, std::time(nullptr));
  if (!cred) return cred.status();
  // A kept connection that turned readable while idle was closed by the daemon (restart,
  // idle timeout): reopen it before sending, so a request is never sent on a dead stream.
  if (client.fd() >= 0 && client.Readable(0)) client = RpcClient();
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool fresh = client.fd() < 0;
    if (fresh) {
      auto c = RpcClient::Connect(address, timeout_ms);
      if (!c)
        return Error(ErrorCode::kUnavailable,
                     "Unable to contact slurm controller (" + c.error() + ")");
      client = std::move(*c);
    }
    auto id = client.SendRaw(body, *cred, timeout_ms);
    if (!id) {
      client = RpcClient();
      if (!fresh) continue;  // the kept connection died under us: nothing was delivered
      return Error(ErrorCode::kUnavailable,
                   "Unable to contact slurm controller (" + id.error() + ")");
    }
    auto response = client.Receive(*id, timeout_ms);
    if (!response) {
      // The request may have been applied: never resend it.
      client = RpcClient();
      return Error(ErrorCode::kUnavailable,
                   "Unable to contact slurm controller (" + response.error() + ")");
    }
    return response;
  }
  return Error(ErrorCode::kUnavailable, "Unable to contact slurm controller");
}

Result<pb::Response> RpcBackend::CallControllerRaw(const Caller& caller,
                                                   const pb::Request& request) {
  return Call(ctld_, config_->controller_address, caller, request.SerializeAsString(),
              config_->timeout_ms);
}

Result<pb::Response> RpcBackend::CallController(const Caller& caller, const pb::Request& request) {
  auto r = CallControllerRaw(caller, request);
  if (!r) return r;
  if (r->rc() != 0) return Error(static_cast<ErrorCode>(r->rc()), r->error());
  return r;
}

Result<pb::DbdResponse> RpcBackend::CallDbd(const Caller& caller, const pb::DbdRequest& request) {
  if (config_->dbd_address.empty())
    return Error(ErrorCode::kUnavailable,
                 "Accounting storage is not configured (AccountingStorageType is not "
                 "accounting_storage/slurmdbd)");
  pb::Request envelope;
  envelope.set_dbd(request.SerializeAsString());
  auto r = Call(dbd_, config_->dbd_address, caller, envelope.SerializeAsString(), 60000);
  if (!r) {
    if (r.status().code() == ErrorCode::kUnavailable)
      return Error(ErrorCode::kUnavailable, "Problem talking to the database: " + r.error());
    return r.status();
  }
  if (r->rc() != 0) return Error(static_cast<ErrorCode>(r->rc()), r->error());
  pb::DbdResponse out;
  if (!out.ParseFromString(r->dbd()))
    return Error(ErrorCode::kProtocol, "malformed answer from the accounting daemon");
  return out;
}

}  // namespace shoal::restd
