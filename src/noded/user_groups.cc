#include "noded/user_groups.h"

#include <grp.h>
#include <pwd.h>

#include <charconv>

#include "common/strings.h"

namespace shoal::noded {

std::optional<UserIdentity> ResolveUserIdentity(uid_t uid, gid_t gid) {
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr)
    return std::nullopt;
  UserIdentity id;
  id.user = pw.pw_name;
  id.home = pw.pw_dir ? pw.pw_dir : "";
  id.shell = pw.pw_shell ? pw.pw_shell : "";
  int count = 32;
  id.groups.resize(static_cast<size_t>(count));
  // getgrouplist says how many there are when the list is too short: ask again with room.
  while (::getgrouplist(id.user.c_str(), gid, id.groups.data(), &count) == -1) {
    if (count <= static_cast<int>(id.groups.size())) return std::nullopt;
    id.groups.resize(static_cast<size_t>(count));
  }
  id.groups.resize(static_cast<size_t>(count));
  return id;
}

std::optional<UserIdentity> UserIdentityCache::Get(uid_t uid, gid_t gid, int64_t now) {
  auto key = std::make_pair(uid, gid);
  auto it = entries_.find(key);
  if (it != entries_.end() && now >= it->second.resolved_at &&
      now - it->second.resolved_at < kTtlSeconds)
    return it->second.identity;
  std::optional<UserIdentity> fresh = resolve_(uid, gid);
  if (!fresh) {
    if (it != entries_.end()) entries_.erase(it);
    return std::nullopt;
  }
  entries_[key] = Entry{*fresh, now};
  return fresh;
}

std::string FormatGroupList(const std::vector<gid_t>& groups) { return JoinNumbers(groups); }

Result<std::vector<gid_t>> ParseGroupList(std::string_view text) {
  std::vector<gid_t> groups;
  size_t pos = 0;
  while (true) {
    size_t comma = text.find(',', pos);
    std::string_view item = text.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v > 0xfffffffeu)
      return Error(ErrorCode::kInvalidArgument, "invalid group list '" + std::string(text) + "'");
    groups.push_back(static_cast<gid_t>(v));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return groups;
}

}  // namespace shoal::noded
