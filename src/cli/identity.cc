#include "cli/identity.h"

#include <grp.h>
#include <pwd.h>

#include <unordered_map>

namespace shoal::cli {

std::string UserNameOf(uint32_t uid) {
  static std::unordered_map<uint32_t, std::string> cache;
  auto it = cache.find(uid);
  if (it != cache.end()) return it->second;
  std::string name;
  struct passwd pw;
  struct passwd* res = nullptr;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) name = pw.pw_name;
  cache.emplace(uid, name);
  return name;
}

std::string GroupNameOf(uint32_t gid) {
  static std::unordered_map<uint32_t, std::string> cache;
  auto it = cache.find(gid);
  if (it != cache.end()) return it->second;
  std::string name;
  struct group gr;
  struct group* res = nullptr;
  char buf[8192];
  if (getgrgid_r(gid, &gr, buf, sizeof buf, &res) == 0 && res) name = gr.gr_name;
  cache.emplace(gid, name);
  return name;
}

bool UidOfUser(const std::string& text, uint32_t* uid) {
  struct passwd pw;
  struct passwd* res = nullptr;
  char buf[4096];
  if (getpwnam_r(text.c_str(), &pw, buf, sizeof buf, &res) == 0 && res) {
    *uid = pw.pw_uid;
    return true;
  }
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
      text.size() > 10) {
    return false;
  }
  unsigned long long n = std::strtoull(text.c_str(), nullptr, 10);
  if (n > 0xffffffffull) return false;
  if (getpwuid_r(static_cast<uid_t>(n), &pw, buf, sizeof buf, &res) == 0 && res) {
    *uid = static_cast<uint32_t>(n);
    return true;
  }
  return false;
}

}  // namespace shoal::cli
