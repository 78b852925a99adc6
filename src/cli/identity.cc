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

}  // namespace shoal::cli
