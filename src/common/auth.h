// Request authentication.
//
// Every request carries a Credential: uid, gid, expiry, nonce and the SHA-256 of the request
// body, signed with HMAC-SHA256 under the cluster key (a 0600 file only root and SlurmUser can
// read). Root signs directly; an unprivileged user asks the local auth agent, a unix socket whose
// server reads the caller's uid/gid from SO_PEERCRED, so nobody can get a credential for another
// uid. A credential is bound to one request body, so a stolen one cannot authorize anything else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "shoal.pb.h"

namespace shoal {

inline constexpr int64_t kCredentialTtlSeconds = 300;

class ClusterKey {
 public:
  // Reads the key file; refuses a file that others can read or write ("... is readable by
  // others: chmod 600").
  static Result<ClusterKey> Load(const std::string& path);
  // Writes 32 random bytes, mode 0600; fails if the file exists.
  static Status Generate(const std::string& path);
  static ClusterKey FromBytes(std::string bytes) { return ClusterKey(std::move(bytes)); }

  pb::Credential Sign(uint32_t uid, uint32_t gid, std::string_view body, int64_t now) const;
  // Same, for a body the signer only knows by its SHA-256 (the auth agent's case).
  pb::Credential SignDigest(uint32_t uid, uint32_t gid, std::string body_sha256, int64_t now) const;
  // Checks signature, expiry and body hash. Error code kAuthFailure with a reason.
  Status Verify(const pb::Credential& cred, std::string_view body, int64_t now) const;

 private:
  explicit ClusterKey(std::string bytes) : key_(std::move(bytes)) {}
  std::string Mac(const pb::Credential& cred) const;
  std::string key_;
};

std::string Sha256(std::string_view data);

// Where a client's credentials come from: the key itself when readable (root), otherwise the
// auth agent socket.
class CredentialSource {
 public:
  CredentialSource(std::string key_path, std::string agent_socket)
      : key_path_(std::move(key_path)), agent_socket_(std::move(agent_socket)) {}
  Result<pb::Credential> For(std::string_view body);

 private:
  std::string key_path_, agent_socket_;
  bool key_tried_ = false;
  std::optional<ClusterKey> key_;
};

// Paths derived from slurm.conf: the key is AuthInfo's "key=" or slurm.key beside slurm.conf;
// the agent socket is AuthInfo's "socket=" or /run/shoal/auth.sock.
struct AuthPaths {
  std::string key_file;
  std::string agent_socket;
};
AuthPaths AuthPathsFor(const std::string& slurm_conf_path, const std::string& auth_info);

}  // namespace shoal
