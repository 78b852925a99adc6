// Authenticating a request where it arrives (shoalctld, shoaldbd): the cluster-key HMAC
// credential, or an auth/jwt token (AuthAltTypes=auth/jwt) standing in for it.
//
// A JWT credential carries no trusted uid: its uid/gid fields are ignored (proto3 would read
// them as 0, root). The acting user comes only from the verified token's "sun", or from
// Credential.jwt_user when the token belongs to root or SlurmUser, and the daemon continues
// with a fresh credential holding that user's uid/gid.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/auth.h"
#include "common/result.h"
#include "shoal.pb.h"

namespace shoal {

inline constexpr int64_t kDefaultTokenLifespan = 1800;

// AuthAltTypes / AuthAltParameters, from slurm.conf or slurmdbd.conf.
struct JwtSettings {
  bool enabled = false;  // AuthAltTypes lists auth/jwt
  std::string key_path;  // jwt_key=, else <default_key_dir>/jwt_hs256.key ("" without a dir)
  bool disable_token_creation = false;
  int64_t max_token_lifespan = 0;  // max_token_lifespan=; 0: none
};
JwtSettings ParseJwtSettings(std::string_view alt_types, std::string_view alt_params,
                             std::string_view default_key_dir);

struct UserIdentity {
  uint32_t uid = 0;
  uint32_t gid = 0;
};
using UserLookup = std::function<std::optional<UserIdentity>(const std::string& name)>;
std::optional<UserIdentity> LookupUserByName(const std::string& name);  // getpwnam_r

// What a daemon needs to accept tokens; key empty: auth/jwt is off and tokens are refused.
struct JwtVerifier {
  std::string key;
  uint32_t slurm_user_uid = 0;
  UserLookup lookup = LookupUserByName;
};

// Checks a request's credential and returns the one the request acts under: `cred` itself for
// an HMAC credential, or *jwt_cred (uid/gid of the token's user, nothing else) for a token.
// Errors are kAuthFailure with a reason.
Result<const pb::Credential*> AuthenticateCredential(const ClusterKey& key, const JwtVerifier& jwt,
                                                     const pb::Credential& cred,
                                                     std::string_view body, int64_t now,
                                                     pb::Credential* jwt_cred);

// Loads the key named by `settings` into a verifier (an empty verifier when auth/jwt is off).
Result<JwtVerifier> LoadJwtVerifier(const JwtSettings& settings, uint32_t slurm_user_uid);

// `scontrol token`: the caller (uid) asks for a token for `username` ("" = themselves).
// Pure apart from `lookup`; names errors the way Slurm's controller does.
struct TokenPolicy {
  const JwtSettings* settings = nullptr;
  const std::string* key = nullptr;  // empty/null: auth/jwt not configured
  bool caller_is_admin = false;      // root or SlurmUser
  bool caller_used_token = false;    // a token may not mint tokens (it would never expire)
  std::string caller_name;
  UserLookup lookup = LookupUserByName;
};
Result<std::string> IssueToken(const TokenPolicy& policy, const std::string& username,
                               int64_t lifespan, int64_t now);

}  // namespace shoal
