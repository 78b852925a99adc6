// slurmdbd.conf: the accounting daemon's configuration, in slurm.conf's Key=Value syntax.
// Parsing is pure (the text is passed in); unknown keys become warnings, malformed lines and bad
// values are errors naming "path:line".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "dbd/sql.h"

namespace shoal::dbd {

struct DbdConf {
  std::string dbd_host = "localhost";  // DbdHost (DbdAddr: the address to listen on)
  std::string dbd_addr;                // "" = listen on every address
  uint32_t dbd_port = 6819;            // DbdPort
  std::string auth_info;               // AuthInfo: key= and socket= as in slurm.conf
  std::string auth_alt_types;          // AuthAltTypes (auth/jwt)
  std::string auth_alt_params;         // AuthAltParameters (jwt_key=, required for auth/jwt)
  std::string slurm_user = "root";     // SlurmUser: may send records, is a superuser
  std::string log_file;                // LogFile
  std::string pid_file;                // PidFile
  std::string private_data;            // PrivateData: "jobs,usage,users,accounts" etc.
  uint32_t message_timeout_s = 10;     // MessageTimeout
  StorageConfig storage;               // StorageType/Host/Port/User/Pass/Loc
  std::vector<std::string> warnings;
  // Whether PrivateData lists `what` ("jobs", "usage", "users", "accounts").
  bool Private(const std::string& what) const;
};

Result<DbdConf> ParseDbdConf(const std::string& text, const std::string& path);
// Reads the file; refuses one that others can read when it holds StoragePass (Slurm's rule:
// slurmdbd.conf must be 0600).
Result<DbdConf> LoadDbdConf(const std::string& path);

// $SLURMDBD_CONF, else slurmdbd.conf beside $SLURM_CONF, else /etc/slurm/slurmdbd.conf.
std::string DefaultDbdConfPath();

}  // namespace shoal::dbd
