#include "common/jwt_auth.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <vector>

#include "common/jwt.h"
#include "common/name_service.h"
#include "common/strings.h"

namespace shoal {
namespace {

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

Status AuthFail(std::string why) { return Error(ErrorCode::kAuthFailure, std::move(why)); }

}  // namespace

JwtSettings ParseJwtSettings(std::string_view alt_types, std::string_view alt_params,
                             std::string_view default_key_dir) {
  JwtSettings s;
  for (std::string_view t : SplitFields(alt_types, ','))
    if (Trim(t) == "auth/jwt") s.enabled = true;
  for (std::string_view p : SplitFields(alt_params, ',')) {
    std::string opt = Trim(p);
    if (opt.rfind("jwt_key=", 0) == 0) {
      s.key_path = opt.substr(8);
    } else if (opt == "disable_token_creation") {
      s.disable_token_creation = true;
    } else if (opt.rfind("max_token_lifespan=", 0) == 0) {
      std::string v = opt.substr(19);
      int64_t n = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec == std::errc() && end == v.data() + v.size() && n > 0) s.max_token_lifespan = n;
    }
  }
  if (s.key_path.empty() && !default_key_dir.empty())
    s.key_path = std::string(default_key_dir) + "/jwt_hs256.key";
  return s;
}

std::optional<UserIdentity> LookupUserByName(const std::string& name) {
  auto user = UserByName(name);
  if (!user) return std::nullopt;
  return UserIdentity{user->uid, user->gid};
}

Result<const pb::Credential*> AuthenticateCredential(const ClusterKey& key, const JwtVerifier& jwt,
                                                     const pb::Credential& cred,
                                                     std::string_view body, int64_t now,
                                                     pb::Credential* jwt_cred) {
  // Any credential naming a token is a token credential: it never falls back to the HMAC path,
  // whose uid fields a token sender controls.
  if (cred.jwt().empty()) {
    if (!cred.jwt_user().empty()) return AuthFail("X-SLURM-USER-NAME given without a token");
    if (Status s = key.Verify(cred, body, now); !s.ok()) return s;
    return &cred;
  }
  if (jwt.key.empty()) return AuthFail("auth/jwt is not configured (AuthAltTypes)");
  auto claims = jwt::Verify(jwt.key, cred.jwt(), now);
  if (!claims) return claims.status();
  auto owner = jwt.lookup(claims->user);
  if (!owner) return AuthFail("token user " + claims->user + " does not exist");
  UserIdentity acting = *owner;
  if (!cred.jwt_user().empty() && cred.jwt_user() != claims->user) {
    bool privileged = owner->uid == 0 || owner->uid == jwt.slurm_user_uid;
    if (!privileged)
      return AuthFail("token of " + claims->user + " may not act as " + cred.jwt_user() +
                      " (only root and SlurmUser may)");
    auto other = jwt.lookup(cred.jwt_user());
    if (!other) return AuthFail("user " + cred.jwt_user() + " does not exist");
    acting = *other;
  }
  jwt_cred->Clear();
  jwt_cred->set_uid(acting.uid);
  jwt_cred->set_gid(acting.gid);
  return static_cast<const pb::Credential*>(jwt_cred);
}

Result<JwtVerifier> LoadJwtVerifier(const JwtSettings& settings, uint32_t slurm_user_uid) {
  JwtVerifier v;
  v.slurm_user_uid = slurm_user_uid;
  if (!settings.enabled) return v;
  if (settings.key_path.empty())
    return AuthFail("AuthAltTypes=auth/jwt needs AuthAltParameters=jwt_key=<path>");
  auto key = jwt::LoadJwtKey(settings.key_path);
  if (!key) return key.status();
  v.key = std::move(*key);
  return v;
}

Result<std::string> IssueToken(const TokenPolicy& policy, const std::string& username,
                               int64_t lifespan, int64_t now) {
  if (policy.settings == nullptr || !policy.settings->enabled || policy.key == nullptr ||
      policy.key->empty())
    return Error(ErrorCode::kDisabled, "auth/jwt is not configured (AuthAltTypes=auth/jwt)");
  if (policy.caller_used_token)
    return Error(ErrorCode::kAccessDenied,
                 "Access/permission denied: a token cannot create tokens");
  if (policy.settings->disable_token_creation && !policy.caller_is_admin)
    return Error(ErrorCode::kAccessDenied, "Access/permission denied");
  std::string user = username.empty() ? policy.caller_name : username;
  if (user != policy.caller_name && !policy.caller_is_admin)
    return Error(ErrorCode::kAccessDenied, "Access/permission denied");
  if (!policy.lookup(user)) return Error(ErrorCode::kInvalidArgument, "Invalid user id");
  if (lifespan < 0) return Error(ErrorCode::kInvalidArgument, "Invalid lifespan");
  if (lifespan == 0) lifespan = kDefaultTokenLifespan;
  // max_token_lifespan limits user accounts, not SlurmUser/root.
  if (!policy.caller_is_admin && policy.settings->max_token_lifespan > 0)
    lifespan = std::min(lifespan, policy.settings->max_token_lifespan);
  jwt::Claims claims;
  claims.user = user;
  claims.iat = now;
  claims.exp = now + lifespan;
  return jwt::Sign(*policy.key, claims);
}

}  // namespace shoal
