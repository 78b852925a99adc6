#include "common/name_service.h"

#include <fcntl.h>
#include <grp.h>
#include <nss.h>
#include <pwd.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "common/script_runner.h"  // SpawnDetached
#include "common/strings.h"

extern char** environ;

namespace shoal {
namespace {

bool g_builtin_only = false;  // set once, before any lookup, by UseBuiltinNameSources

std::optional<uint32_t> ParseId(std::string_view text) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

// The colon-separated fields of the first line of `text`.
std::vector<std::string_view> FirstLineFields(std::string_view text) {
  text = text.substr(0, text.find('\n'));
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  return SplitFields(text, ':');
}

UserEntry FromPasswd(const passwd& pw) {
  return UserEntry{pw.pw_name,
                   pw.pw_uid,
                   pw.pw_gid,
                   pw.pw_dir ? pw.pw_dir : "",
                   pw.pw_shell ? pw.pw_shell : "",
                   pw.pw_gecos ? pw.pw_gecos : ""};
}

// Calls a getpw*_r/getgr*_r style lookup with a buffer that grows on ERANGE.
template <class Entry, class Call>
bool Lookup(Entry* entry, std::vector<char>& buf, Call call) {
  buf.resize(4096);
  while (true) {
    Entry* found = nullptr;
    int rc = call(entry, buf.data(), buf.size(), &found);
    if (rc == ERANGE && buf.size() < (1u << 22)) {
      buf.resize(buf.size() * 4);
      continue;
    }
    return rc == 0 && found != nullptr;
  }
}

std::optional<UserEntry> UserFromGetent(const std::string& key) {
  if (!g_builtin_only) return std::nullopt;
  auto out = RunGetent({"passwd", key});
  return out ? ParsePasswdLine(*out) : std::nullopt;
}

}  // namespace

bool LinkedStatically() { return ::getauxval(AT_BASE) == 0; }

void UseBuiltinNameSources() {
  if (!LinkedStatically()) return;
  ::__nss_configure_lookup("passwd", "files");
  ::__nss_configure_lookup("group", "files");
  ::__nss_configure_lookup("hosts", "files dns");
  g_builtin_only = true;
}

std::optional<UserEntry> UserById(uint32_t uid) {
  passwd pw{};
  std::vector<char> buf;
  if (Lookup(&pw, buf, [&](passwd* e, char* b, size_t n, passwd** f) {
        return ::getpwuid_r(uid, e, b, n, f);
      }))
    return FromPasswd(pw);
  auto entry = UserFromGetent(std::to_string(uid));
  if (entry && entry->uid != uid) return std::nullopt;
  return entry;
}

std::optional<UserEntry> UserByName(const std::string& name) {
  if (name.empty()) return std::nullopt;
  passwd pw{};
  std::vector<char> buf;
  if (Lookup(&pw, buf, [&](passwd* e, char* b, size_t n, passwd** f) {
        return ::getpwnam_r(name.c_str(), e, b, n, f);
      }))
    return FromPasswd(pw);
  auto entry = UserFromGetent(name);
  if (entry && entry->name != name) return std::nullopt;  // getent takes numbers for names too
  return entry;
}

std::optional<std::string> GroupNameById(uint32_t gid) {
  group gr{};
  std::vector<char> buf;
  if (Lookup(&gr, buf,
             [&](group* e, char* b, size_t n, group** f) { return ::getgrgid_r(gid, e, b, n, f); }))
    return std::string(gr.gr_name);
  if (!g_builtin_only) return std::nullopt;
  auto out = RunGetent({"group", std::to_string(gid)});
  auto parsed = out ? ParseGroupLine(*out) : std::nullopt;
  if (!parsed || parsed->second != gid) return std::nullopt;
  return parsed->first;
}

std::optional<std::string> HostAddressFallback(const std::string& host) {
  if (!g_builtin_only || host.empty()) return std::nullopt;
  auto out = RunGetent({"ahosts", host});
  return out ? ParseAhostsFirst(*out) : std::nullopt;
}

std::optional<std::string> RunGetent(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  std::vector<std::string> owned = {"/usr/bin/getent"};  // libc-bin's, always there on Debian
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  // getent writes nothing but usage errors to stderr, and then exits non-zero (ignored below).
  int rc = SpawnDetached(argv.data(), environ, fds[1], &pid);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return std::nullopt;
  }
  std::string out;
  char chunk[4096];
  while (true) {
    ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n > 0) {
      out.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.empty()) return std::nullopt;
  return out;
}

std::optional<UserEntry> ParsePasswdLine(std::string_view line) {
  auto f = FirstLineFields(line);
  if (f.size() != 7 || f[0].empty()) return std::nullopt;
  auto uid = ParseId(f[2]);
  auto gid = ParseId(f[3]);
  if (!uid || !gid) return std::nullopt;
  return UserEntry{std::string(f[0]), *uid, *gid, std::string(f[5]), std::string(f[6]),
                   std::string(f[4])};
}

std::optional<std::pair<std::string, uint32_t>> ParseGroupLine(std::string_view line) {
  auto f = FirstLineFields(line);
  if (f.size() != 4 || f[0].empty()) return std::nullopt;
  auto gid = ParseId(f[2]);
  if (!gid) return std::nullopt;
  return std::make_pair(std::string(f[0]), *gid);
}

std::optional<std::string> ParseAhostsFirst(std::string_view out) {
  size_t end = out.find_first_of(" \t\n");
  if (end == 0 || out.empty()) return std::nullopt;
  return std::string(out.substr(0, end));
}

}  // namespace shoal
