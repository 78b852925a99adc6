// Who may read the controller's metrics endpoints (Slurm 25.11's rules, pure):
// - MetricsAuthUsers=u1,u2: only those users, root and SlurmUser, each proving it with an
//   auth/jwt token (X-SLURM-USER-TOKEN, or Authorization: Bearer); PrivateData is then ignored.
// - else PrivateData set without MetricsParameters=ignore_private_data: root and SlurmUser only,
//   with a token.
// - else everyone, no token needed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/http_head.h"
#include "common/slurm_conf.h"

namespace shoal::ctld {

struct MetricsAccessPolicy {
  bool open = true;                        // no token needed
  std::vector<std::string> allowed_users;  // besides root and SlurmUser
  std::string slurm_user = "root";
};
MetricsAccessPolicy MetricsAccessPolicyFrom(const SlurmConf& conf);

// 0 when `req` may read metrics; else the HTTP status to answer: 401 (no usable token, or
// auth/jwt not configured: `jwt_key` empty) or 403 (a valid token of a user not allowed).
int CheckMetricsAccess(const MetricsAccessPolicy& policy, const HttpRequest& req,
                       std::string_view jwt_key, int64_t now);

}  // namespace shoal::ctld
