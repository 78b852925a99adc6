// A job's identity on this node — user name, home, shell and group list — resolved by shoald and
// handed to shoal-stepd on its command line (as Slurm's LaunchParameters=send_gids hands them
// over): the step then sets its groups with setgroups(2) instead of initgroups(3), and a trivial
// job no longer loads the name-service modules (libnss_systemd and its libraries) in every step.
// Lookups are cached for a minute per (uid, gid), as group databases change rarely and a change
// reaches new steps within that time. Without an identity, shoal-stepd resolves it itself.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace shoal::noded {

struct UserIdentity {
  std::string user;
  std::string home, shell;    // the passwd entry's, for the job's environment
  std::vector<gid_t> groups;  // what initgroups(user, gid) would set: gid and the supplementary
};

// The system's answer: getpwuid_r and getgrouplist. nullopt when the uid is unknown here.
std::optional<UserIdentity> ResolveUserIdentity(uid_t uid, gid_t gid);

class UserIdentityCache {
 public:
  using Resolver = std::function<std::optional<UserIdentity>(uid_t, gid_t)>;
  static constexpr int64_t kTtlSeconds = 60;

  explicit UserIdentityCache(Resolver resolve = ResolveUserIdentity)
      : resolve_(std::move(resolve)) {}
  // The identity for (uid, gid) at time `now` (seconds); unknown users are not cached.
  std::optional<UserIdentity> Get(uid_t uid, gid_t gid, int64_t now);

 private:
  struct Entry {
    UserIdentity identity;
    int64_t resolved_at = 0;
  };
  Resolver resolve_;
  std::map<std::pair<uid_t, gid_t>, Entry> entries_;
};

// "1000,27,100": the --groups argument of shoal-stepd.
std::string FormatGroupList(const std::vector<gid_t>& groups);
// Fails on anything but a non-empty comma-separated list of decimal group ids.
Result<std::vector<gid_t>> ParseGroupList(std::string_view text);

}  // namespace shoal::noded
