#include "cli/client.h"

#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

#include "common/auth.h"
#include "common/rpc.h"

namespace shoal::cli {
namespace {

// Slurm's MessageTimeout default is 10 s; commands wait that long for an answer.
constexpr int kCallTimeoutMs = 10000;

// Whether a serialized answer is a standby controller's "try another" (then the next is tried).
bool IsStandbyAnswer(const std::string& bytes) {
  // A standby's answer is a few dozen bytes: a large query answer is never parsed twice.
  if (bytes.size() > 256) return false;
  pb::Response r;
  return r.ParseFromString(bytes) && r.rc() == static_cast<int>(ErrorCode::kInStandby);
}

}  // namespace

Result<ClientContext> LoadClientContext() {
  ClientContext ctx;
  ctx.conf_path = DefaultSlurmConfPath();
  auto conf = LoadSlurmConf(ctx.conf_path);
  if (!conf) return conf.status();
  ctx.conf = std::move(*conf);
  return ctx;
}

namespace {

int CallTimeoutMs(const ClientContext& ctx) {
  if (auto t = ctx.conf.GetInt("MessageTimeout", 10); t && *t > 0) return int(*t) * 1000;
  return kCallTimeoutMs;
}

Status Unreachable(const Status& why) {
  return Error(ErrorCode::kUnavailable,
               "Unable to contact slurm controller (" + why.message() + ")");
}

}  // namespace

Status CallControllerParts(const ClientContext& ctx, const pb::Request& request,
                           const std::function<Result<bool>(std::string& part)>& part) {
  std::string body = request.SerializeAsString();
  auto cred = SignForCaller(ctx, body);
  if (!cred) return cred.status();
  int timeout_ms = CallTimeoutMs(ctx);
  Status result = Error(ErrorCode::kUnavailable, "connect failure");
  const std::vector<std::string> addresses = ctx.conf.ControllerAddresses();
  for (size_t i = 0; i < addresses.size(); ++i) {
    auto client = RpcClient::Connect(addresses[i], timeout_ms);
    if (!client) continue;
    auto id = client->SendRaw(body, *cred, timeout_ms);
    if (!id) {
      result = id.status();
      break;
    }
    // Each SlurmctldHost in order: one that is down sends us on, and so does a standby's "try
    // another", which comes as the only part (the last controller's is the caller's to report).
    // An error of the caller's own (a malformed part) ends the call as it is; a broken
    // connection means the controller is unreachable.
    bool first = true, standby = false;
    std::optional<Status> caller_failed;
    result = client->ReceiveParts(*id, timeout_ms, [&](std::string& bytes) -> Result<bool> {
      if (std::exchange(first, false) && i + 1 < addresses.size() && IsStandbyAnswer(bytes)) {
        standby = true;
        return false;
      }
      Result<bool> more = part(bytes);
      if (!more) caller_failed = more.status();
      return more;
    });
    if (standby) continue;
    if (caller_failed) return *caller_failed;
    if (result.ok()) return result;
    break;
  }
  return Unreachable(result);
}

namespace {

// One request, the answer unparsed (a serialized pb::Response): an answer in one frame is the
// only part of one.
Result<std::string> CallControllerBytes(const ClientContext& ctx, const pb::Request& request) {
  std::string answer;
  Status called = CallControllerParts(ctx, request, [&answer](std::string& part) -> Result<bool> {
    answer = std::move(part);
    return false;
  });
  if (!called.ok()) return called;
  return answer;
}

}  // namespace

Result<pb::Response> CallControllerRaw(const ClientContext& ctx, const pb::Request& request) {
  auto bytes = CallControllerBytes(ctx, request);
  if (!bytes) return bytes.status();
  pb::Response response;
  if (!response.ParseFromString(*bytes)) return Error(ErrorCode::kProtocol, "malformed response");
  return response;
}

Status CallControllerInto(const ClientContext& ctx, const pb::Request& request, pb::Response* out) {
  auto bytes = CallControllerBytes(ctx, request);
  if (!bytes) return bytes.status();
  if (!out->ParseFromString(*bytes)) return Error(ErrorCode::kProtocol, "malformed response");
  if (out->rc() != 0) return Error(static_cast<ErrorCode>(out->rc()), out->error());
  return Status::Ok();
}

Result<pb::Credential> SignForCaller(const ClientContext& ctx, const std::string& body) {
  // auth/jwt, as Slurm's commands do with SLURM_JWT set: the token stands in for the signed
  // identity (shoalctld and shoaldbd check it; node daemons do not take tokens).
  if (const char* token = std::getenv("SLURM_JWT"); token != nullptr && *token != '\0') {
    pb::Credential cred;
    cred.set_jwt(token);
    return cred;
  }
  AuthPaths paths = AuthPathsFor(ctx.conf_path, ctx.conf.Get("AuthInfo"));
  CredentialSource creds(paths.key_file, paths.agent_socket);
  auto cred = creds.For(body);
  if (!cred) return Error(ErrorCode::kAuthFailure, "Authentication failure: " + cred.error());
  return cred;
}

Result<HeldCall> CallControllerHeld(const ClientContext& ctx, const pb::Request& request,
                                    int timeout_ms) {
  std::string body = request.SerializeAsString();
  auto cred = SignForCaller(ctx, body);
  if (!cred) return cred.status();
  Result<RpcClient> client = Error(ErrorCode::kUnavailable, "connect failure");
  Result<pb::Response> response = Error(ErrorCode::kUnavailable, "connect failure");
  for (const std::string& addr : ctx.conf.ControllerAddresses()) {
    client = RpcClient::Connect(addr, kCallTimeoutMs);
    if (!client) continue;
    // The longest wait poll() takes (24 days) stands for "as long as it takes".
    response = client->CallRaw(body, *cred, timeout_ms < 0 ? 0x7fffffff : timeout_ms);
    if (!response || response->rc() != static_cast<int>(ErrorCode::kInStandby)) break;
  }
  if (!client)
    return Error(ErrorCode::kUnavailable, "Unable to contact slurm controller (connect failure)");
  if (!response)
    return Error(ErrorCode::kUnavailable,
                 "Unable to contact slurm controller (" + response.error() + ")");
  if (response->rc() != 0) return Error(static_cast<ErrorCode>(response->rc()), response->error());
  HeldCall held{std::move(*client), std::move(*response)};
  return held;
}

Result<pb::Response> CallController(const ClientContext& ctx, const pb::Request& request) {
  auto response = CallControllerRaw(ctx, request);
  if (!response) return response;
  if (response->rc() != 0) return Error(static_cast<ErrorCode>(response->rc()), response->error());
  return response;
}

std::string DbdAddress(const SlurmConf& conf) {
  std::string type = conf.Get("AccountingStorageType");
  if (type != "accounting_storage/slurmdbd") return "";
  std::string host = conf.Get("AccountingStorageHost");
  if (host.empty()) host = "localhost";
  std::string port = conf.Get("AccountingStoragePort");
  if (port.empty()) port = "6819";
  return host + ":" + port;
}

Result<pb::DbdResponse> CallDbd(const ClientContext& ctx, const pb::DbdRequest& request) {
  std::string address = DbdAddress(ctx.conf);
  if (address.empty())
    return Error(ErrorCode::kUnavailable,
                 "Accounting storage is not configured (AccountingStorageType is not "
                 "accounting_storage/slurmdbd)");
  pb::Request envelope;
  envelope.set_dbd(request.SerializeAsString());
  std::string body = envelope.SerializeAsString();
  auto cred = SignForCaller(ctx, body);
  if (!cred) return cred.status();
  int timeout_ms = 60000;  // a large sacct query may take a while on the database side
  auto client = RpcClient::Connect(address, kCallTimeoutMs);
  if (!client)
    return Error(ErrorCode::kUnavailable, "Problem talking to the database: Connection refused");
  auto response = client->CallRaw(body, *cred, timeout_ms);
  if (!response)
    return Error(ErrorCode::kUnavailable, "Problem talking to the database: " + response.error());
  if (response->rc() != 0) return Error(static_cast<ErrorCode>(response->rc()), response->error());
  pb::DbdResponse out;
  if (!out.ParseFromString(response->dbd()))
    return Error(ErrorCode::kProtocol, "malformed answer from the accounting daemon");
  return out;
}

}  // namespace shoal::cli
