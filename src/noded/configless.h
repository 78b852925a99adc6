// shoald --conf-server: the configuration comes from the controller (enable_configless) and is
// cached locally, so the node needs no slurm.conf of its own and commands on the node find it.
//
// The cache is --conf-cache DIR (a Shoal option), default kConfiglessCacheDir (/run/shoal/conf,
// where commands look when neither $SLURM_CONF nor /etc/slurm/slurm.conf exists). The key is
// never fetched: it is --key PATH, default /etc/slurm/slurm.key; the cache links slurm.key to it.
#pragma once

#include <string>
#include <vector>

#include "common/auth.h"
#include "common/result.h"
#include "shoal.pb.h"

namespace shoal::noded {

struct ConfiglessSetup {
  std::vector<std::string> servers;  // "host:port", the primary first
  std::string cache_dir;
  std::string key_path;  // absolute
};

Result<ConfiglessSetup> MakeConfiglessSetup(const std::string& conf_server,
                                            const std::string& conf_cache,
                                            const std::string& key_path);

// Asks each server in turn (blocking, a few seconds each) for the configuration files.
Result<pb::ConfigFilesResponse> FetchConfigFiles(const ConfiglessSetup& setup,
                                                 const ClusterKey& key);

// Start-up: fetches and caches the files; with every server unreachable, a cache left by an
// earlier run is used (with a log line). Returns the cached slurm.conf's path.
Result<std::string> FetchOrUseCache(const ConfiglessSetup& setup, const ClusterKey& key);

}  // namespace shoal::noded
