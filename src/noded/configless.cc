#include "noded/configless.h"

#include <unistd.h>

#include <ctime>

#include "common/config_files.h"
#include "common/rpc.h"
#include "common/slurm_conf.h"
#include "noded/util.h"

namespace shoal::noded {
namespace {

constexpr int kFetchTimeoutMs = 5000;
constexpr uint32_t kDefaultCtldPort = 6817;

std::string Absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

}  // namespace

Result<ConfiglessSetup> MakeConfiglessSetup(const std::string& conf_server,
                                            const std::string& conf_cache,
                                            const std::string& key_path) {
  ConfiglessSetup s;
  auto servers = ParseConfServers(conf_server, kDefaultCtldPort);
  if (!servers) return servers.status();
  s.servers = std::move(*servers);
  s.cache_dir = Absolute(conf_cache.empty() ? std::string(kConfiglessCacheDir) : conf_cache);
  while (s.cache_dir.size() > 1 && s.cache_dir.back() == '/') s.cache_dir.pop_back();
  s.key_path = Absolute(key_path.empty() ? std::string("/etc/slurm/slurm.key") : key_path);
  return s;
}

Result<pb::ConfigFilesResponse> FetchConfigFiles(const ConfiglessSetup& setup,
                                                 const ClusterKey& key) {
  pb::Request req;
  req.mutable_config_files();
  std::string body = req.SerializeAsString();
  std::string errors;
  for (const std::string& server : setup.servers) {
    auto client = RpcClient::Connect(server, kFetchTimeoutMs);
    std::string why;
    if (client) {
      auto resp = client->CallRaw(body, key.Sign(0, 0, body, ::time(nullptr)), kFetchTimeoutMs);
      if (resp && resp->rc() == 0 && resp->has_config_files()) return resp->config_files();
      why = !resp ? resp.error() : resp->rc() != 0 ? resp->error() : "no files in the answer";
    } else {
      why = client.error();
    }
    if (!errors.empty()) errors += "; ";
    errors += server + ": " + why;
  }
  return Error(ErrorCode::kUnavailable, "cannot fetch the configuration (" + errors + ")");
}

Result<std::string> FetchOrUseCache(const ConfiglessSetup& setup, const ClusterKey& key) {
  std::string conf_path = setup.cache_dir + "/slurm.conf";
  auto files = FetchConfigFiles(setup, key);
  if (files) {
    if (Status st = WriteConfigCache(setup.cache_dir, *files, setup.key_path); !st.ok()) return st;
    Log("configless: fetched %d file(s) from the controller into %s", files->files_size(),
        setup.cache_dir.c_str());
    return conf_path;
  }
  if (::access(conf_path.c_str(), R_OK) == 0) {
    Log("configless: %s; using the cached configuration in %s", files.error().c_str(),
        setup.cache_dir.c_str());
    return conf_path;
  }
  return files.status();
}

}  // namespace shoal::noded
