// Users, groups and hosts as glibc's name service gives them, in a statically linked program
// too. glibc loads name-service modules (sss, ldap, systemd, db) with dlopen, which in a static
// program brings a second C library into the process and crashes (seen with Debian's default
// `passwd: files systemd` on a miss in files). A static program calls UseBuiltinNameSources()
// first: glibc then keeps to its built-in sources (passwd and group: files; hosts: files dns),
// and what those do not know is asked of getent, a dynamically linked program that goes through
// every source nsswitch.conf names. In a dynamically linked program these are the plain glibc
// calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shoal {

struct UserEntry {
  std::string name;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string home;
  std::string shell;
  std::string gecos;
};

// True when this process has no program interpreter (linked statically).
bool LinkedStatically();
// In a statically linked program: glibc's built-in sources only, getent for the rest. No-op in a
// dynamically linked one. Call before any lookup (first thing in main).
void UseBuiltinNameSources();

std::optional<UserEntry> UserById(uint32_t uid);
std::optional<UserEntry> UserByName(const std::string& name);
std::optional<std::string> GroupNameById(uint32_t gid);
// Where getaddrinfo found nothing for `host` and the built-in sources are in use: its first
// address from `getent ahosts` (nullopt otherwise, or when getent knows none either).
std::optional<std::string> HostAddressFallback(const std::string& host);

// --- the fallback and its parsing (pure), exposed for tests ---
// getent's output for `args` (e.g. {"passwd", "1000"}); nullopt when it fails or finds nothing.
std::optional<std::string> RunGetent(const std::vector<std::string>& args);
// One passwd(5) line (name:password:uid:gid:gecos:home:shell).
std::optional<UserEntry> ParsePasswdLine(std::string_view line);
// One group(5) line (name:password:gid:members): the name and gid.
std::optional<std::pair<std::string, uint32_t>> ParseGroupLine(std::string_view line);
// The first address of `getent ahosts` output ("ADDR STREAM name" lines).
std::optional<std::string> ParseAhostsFirst(std::string_view out);

}  // namespace shoal
