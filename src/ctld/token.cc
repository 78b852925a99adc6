// auth/jwt in the controller: the key loaded at start, `scontrol token`, and the user name
// of a request's verified uid.
#include <pwd.h>
#include <unistd.h>

#include <vector>

#include "common/log.h"
#include "ctld/controller.h"

namespace shoal::ctld {
namespace {

std::string NameOfUid(uint32_t uid) {
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(size > 0 ? static_cast<size_t>(size) : 16384);
  passwd pw{}, *res = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) == 0 && res) return res->pw_name;
  return "";
}

}  // namespace

Status Controller::LoadJwt() {
  jwt_settings_ = ParseJwtSettings(conf_.Get("AuthAltTypes"), conf_.Get("AuthAltParameters"),
                                   conf_.StateSaveLocation());
  auto verifier = LoadJwtVerifier(jwt_settings_, slurm_user_uid_);
  if (!verifier) return verifier.status();
  jwt_ = std::move(*verifier);
  if (jwt_settings_.enabled)
    LogInfo("auth/jwt: accepting tokens signed with %s", jwt_settings_.key_path.c_str());
  return Status::Ok();
}

const std::string& Controller::UserNameOf(uint32_t uid) {
  auto it = user_names_.find(uid);
  if (it != user_names_.end()) return it->second;
  std::string name = NameOfUid(uid);
  if (name.empty()) name = std::to_string(uid);
  // Bounded: a name that changes later is picked up after the cache is dropped.
  if (user_names_.size() > 10000) user_names_.clear();
  return user_names_.emplace(uid, std::move(name)).first->second;
}

pb::Response Controller::CreateToken(const pb::Credential& cred, bool via_jwt,
                                     const pb::TokenRequest& req) {
  TokenPolicy policy;
  policy.settings = &jwt_settings_;
  policy.key = &jwt_.key;
  policy.caller_is_admin = IsAdmin(cred.uid());
  policy.caller_used_token = via_jwt;
  policy.caller_name = NameOfUid(cred.uid());
  if (policy.caller_name.empty())
    return ErrorResponse(ErrorCode::kInvalidArgument, "Invalid user id");
  auto token = shoal::IssueToken(policy, req.username(), req.lifespan(), Now());
  if (!token) return ErrorResponse(token.status().code(), token.error());
  pb::Response r;
  r.mutable_token()->set_token(std::move(*token));
  return r;
}

}  // namespace shoal::ctld
