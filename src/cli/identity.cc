#include "cli/identity.h"

#include <cstdlib>
#include <unordered_map>

#include "common/name_service.h"

namespace shoal::cli {

std::string UserNameOf(uint32_t uid) {
  static std::unordered_map<uint32_t, std::string> cache;
  auto it = cache.find(uid);
  if (it != cache.end()) return it->second;
  auto user = UserById(uid);
  return cache.emplace(uid, user ? user->name : "").first->second;
}

std::string GroupNameOf(uint32_t gid) {
  static std::unordered_map<uint32_t, std::string> cache;
  auto it = cache.find(gid);
  if (it != cache.end()) return it->second;
  return cache.emplace(gid, GroupNameById(gid).value_or("")).first->second;
}

bool UidOfUser(const std::string& text, uint32_t* uid) {
  if (auto user = UserByName(text)) {
    *uid = user->uid;
    return true;
  }
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
      text.size() > 10) {
    return false;
  }
  unsigned long long n = std::strtoull(text.c_str(), nullptr, 10);
  if (n > 0xffffffffull) return false;
  if (UserById(static_cast<uint32_t>(n))) {
    *uid = static_cast<uint32_t>(n);
    return true;
  }
  return false;
}

}  // namespace shoal::cli
