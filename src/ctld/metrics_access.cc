#include "ctld/metrics_access.h"

#include <algorithm>

#include "common/jwt.h"

namespace shoal::ctld {
namespace {

std::vector<std::string> SplitCommas(std::string_view s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    size_t end = comma == std::string_view::npos ? s.size() : comma;
    std::string_view item = s.substr(pos, end - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

// The request's token: X-SLURM-USER-TOKEN (slurmrestd's header) or a Bearer authorization.
std::string TokenOf(const HttpRequest& req) {
  std::string t = req.Header("x-slurm-user-token");
  if (!t.empty()) return t;
  std::string auth = req.Header("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() > kBearer.size() && auth.compare(0, kBearer.size(), kBearer) == 0)
    return auth.substr(kBearer.size());
  return "";
}

}  // namespace

MetricsAccessPolicy MetricsAccessPolicyFrom(const SlurmConf& conf) {
  MetricsAccessPolicy p;
  p.slurm_user = conf.SlurmUser();
  std::string auth_users = conf.Get("MetricsAuthUsers");
  if (!auth_users.empty()) {
    p.open = false;
    p.allowed_users = SplitCommas(auth_users);
    return p;
  }
  bool ignore_private =
      conf.Get("MetricsParameters").find("ignore_private_data") != std::string::npos;
  p.open = conf.Get("PrivateData").empty() || ignore_private;
  return p;
}

int CheckMetricsAccess(const MetricsAccessPolicy& policy, const HttpRequest& req,
                       std::string_view jwt_key, int64_t now) {
  if (policy.open) return 0;
  std::string token = TokenOf(req);
  if (token.empty() || jwt_key.empty()) return 401;
  auto claims = jwt::Verify(jwt_key, token, now);
  if (!claims) return 401;
  const std::string& user = claims->user;
  if (user == "root" || user == policy.slurm_user) return 0;
  if (std::find(policy.allowed_users.begin(), policy.allowed_users.end(), user) !=
      policy.allowed_users.end())
    return 0;
  return 403;
}

}  // namespace shoal::ctld
