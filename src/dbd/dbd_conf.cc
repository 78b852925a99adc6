#include "dbd/dbd_conf.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "common/slurm_conf.h"

namespace shoal::dbd {
namespace {

bool IEq(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Keys slurmdbd.conf documents that Shoal reads or accepts without effect.
constexpr std::string_view kAcceptedKeys[] = {
    "ArchiveDir",        "ArchiveEvents",
    "ArchiveJobs",       "ArchiveResvs",
    "ArchiveScript",     "ArchiveSteps",
    "ArchiveSuspend",    "ArchiveTXN",
    "ArchiveUsage",      "AuthAltParameters",
    "AuthAltTypes",      "AuthType",
    "CommitDelay",       "CommunicationParameters",
    "DbdBackupHost",     "DebugFlags",
    "DebugLevel",        "DebugLevelSyslog",
    "DefaultQOS",        "LogTimeFormat",
    "MaxQueryTimeRange", "Parameters",
    "PluginDir",         "PurgeEventAfter",
    "PurgeJobAfter",     "PurgeResvAfter",
    "PurgeStepAfter",    "PurgeSuspendAfter",
    "PurgeTXNAfter",     "PurgeUsageAfter",
    "StorageBackupHost", "StorageParameters",
    "TCPTimeout",        "TrackSlurmctldDown",
    "TrackWCKey",
};

Result<uint32_t> ParsePort(const std::string& where, const std::string& key,
                           const std::string& value) {
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v <= 0 || v > 65535)
    return InvalidArgument(where + ": invalid " + key + " '" + value + "'");
  return static_cast<uint32_t>(v);
}

}  // namespace

bool DbdConf::Private(const std::string& what) const {
  std::stringstream ss(private_data);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (IEq(item, what)) return true;
  }
  return false;
}

Result<DbdConf> ParseDbdConf(const std::string& text, const std::string& path) {
  DbdConf conf;
  bool port_given = false;
  std::stringstream in(text);
  std::string line, logical;
  int line_no = 0, start_line = 0;
  auto handle = [&](const std::string& l, int no) -> Status {
    std::string where = path + ":" + std::to_string(no);
    auto pairs = SplitConfLine(l);
    if (!pairs) return InvalidArgument(where + ": " + pairs.error());
    for (const auto& [key, value] : *pairs) {
      if (IEq(key, "DbdHost")) {
        conf.dbd_host = value;
      } else if (IEq(key, "DbdAddr")) {
        conf.dbd_addr = value;
      } else if (IEq(key, "DbdPort")) {
        auto p = ParsePort(where, "DbdPort", value);
        if (!p) return p.status();
        conf.dbd_port = *p;
      } else if (IEq(key, "AuthInfo")) {
        conf.auth_info = value;
      } else if (IEq(key, "AuthAltTypes")) {
        conf.auth_alt_types = value;
      } else if (IEq(key, "AuthAltParameters")) {
        conf.auth_alt_params = value;
      } else if (IEq(key, "SlurmUser")) {
        conf.slurm_user = value;
      } else if (IEq(key, "LogFile")) {
        conf.log_file = value;
      } else if (IEq(key, "PidFile")) {
        conf.pid_file = value;
      } else if (IEq(key, "PrivateData")) {
        conf.private_data = value;
      } else if (IEq(key, "MessageTimeout")) {
        char* end = nullptr;
        long v = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || v <= 0 || v > 3600)
          return InvalidArgument(where + ": invalid MessageTimeout '" + value + "'");
        conf.message_timeout_s = static_cast<uint32_t>(v);
      } else if (IEq(key, "StorageType")) {
        if (value != "accounting_storage/sqlite" && value != "accounting_storage/mysql")
          return InvalidArgument(where + ": StorageType '" + value +
                                 "' is not supported (accounting_storage/sqlite or "
                                 "accounting_storage/mysql)");
        conf.storage.type = value;
      } else if (IEq(key, "StorageHost")) {
        conf.storage.host = value;
      } else if (IEq(key, "StoragePort")) {
        auto p = ParsePort(where, "StoragePort", value);
        if (!p) return p.status();
        conf.storage.port = *p;
        port_given = true;
      } else if (IEq(key, "StorageUser")) {
        conf.storage.user = value;
      } else if (IEq(key, "StoragePass")) {
        conf.storage.pass = value;
      } else if (IEq(key, "StorageLoc")) {
        conf.storage.loc = value;
      } else if (std::none_of(std::begin(kAcceptedKeys), std::end(kAcceptedKeys),
                              [&](std::string_view k) { return IEq(k, key); })) {
        conf.warnings.push_back(where + ": unknown key '" + key + "' ignored");
      }
    }
    return Status::Ok();
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    bool continues = !line.empty() && line.back() == '\\';
    if (continues) line.pop_back();
    if (logical.empty()) start_line = line_no;
    logical += line;
    if (continues) continue;
    if (logical.find_first_not_of(" \t\r") != std::string::npos) {
      if (Status st = handle(logical, start_line); !st.ok()) return st;
    }
    logical.clear();
  }
  if (!logical.empty()) {
    if (Status st = handle(logical, start_line); !st.ok()) return st;
  }
  if (conf.storage.type.empty()) conf.storage.type = "accounting_storage/sqlite";
  if (conf.storage.type == "accounting_storage/mysql") {
    if (conf.storage.host.empty()) conf.storage.host = "localhost";
    if (conf.storage.loc.empty()) conf.storage.loc = "slurm_acct_db";
    if (!port_given) conf.storage.port = 3306;
  } else if (conf.storage.loc.empty()) {
    conf.storage.loc = "/var/lib/shoal/slurm_acct_db.sqlite";
  }
  return conf;
}

Result<DbdConf> LoadDbdConf(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text) return Error(ErrorCode::kIoError, "could not read " + path + ": " + text.error());
  auto conf = ParseDbdConf(*text, path);
  if (!conf) return conf;
  struct stat st {};
  if (!conf->storage.pass.empty() && ::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    return Error(ErrorCode::kAccessDenied,
                 path + " holds StoragePass and is readable by others: chmod 600");
  return conf;
}

std::string DefaultDbdConfPath() {
  if (const char* env = std::getenv("SLURMDBD_CONF"); env != nullptr && *env != '\0') return env;
  std::string slurm_conf = DefaultSlurmConfPath();
  if (auto slash = slurm_conf.rfind('/'); slash != std::string::npos)
    return slurm_conf.substr(0, slash + 1) + "slurmdbd.conf";
  return "/etc/slurm/slurmdbd.conf";
}

}  // namespace shoal::dbd
