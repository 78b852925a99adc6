// shoalsackd: the daemon of a login node that runs no shoald (Slurm's sackd).
//
// - Configless (--conf-server): fetches slurm.conf and the files beside it from the controller
//   into the cache where commands look (/run/shoal/conf), and fetches them again every --refresh
//   seconds and on SIGHUP, rewriting the cache only when the controller's hash changed.
// - Serves the auth agent socket, so an unprivileged user's commands get credentials for their
//   own uid without reading the cluster key.
//
// The refresh runs on its own thread (a fetch may wait seconds for an unreachable controller);
// the agent runs on the asio thread. They share nothing but the files they write.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <asio.hpp>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/auth.h"
#include "common/auth_agent.h"
#include "common/config_files.h"
#include "common/rpc.h"
#include "common/slurm_conf.h"
#include "noded/configless.h"
#include "noded/util.h"

namespace shoal::sackd {
namespace {

const char kUsage[] =
    "Usage: shoalsackd [OPTIONS]\n"
    "  --conf-server HOST[:PORT][,HOST2[:PORT]]  fetch the configuration from the controller\n"
    "                  (configless; SlurmctldParameters=enable_configless)\n"
    "  --conf-cache DIR   where the fetched files go (default /run/shoal/conf)\n"
    "  --key FILE      cluster key (default /etc/slurm/slurm.key)\n"
    "  -f FILE         use this slurm.conf instead of fetching one (no configless)\n"
    "  --agent-socket PATH  auth agent socket (default: AuthInfo socket= of slurm.conf,\n"
    "                  else /run/shoal/auth.sock)\n"
    "  --refresh SECONDS  how often to check the controller's configuration (default 60)\n"
    "  -D              run in the foreground\n"
    "  -h, --help      this text\n";

struct Options {
  std::string conf_server, conf_cache, key_file, conf_path, agent_socket;
  int refresh_seconds = 60;
  bool foreground = false;
};

Result<Options> ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> Result<std::string> {
      if (i + 1 >= argc)
        return Error(ErrorCode::kInvalidArgument, std::string(name) + " needs a value");
      return std::string(argv[++i]);
    };
    Result<std::string> v = std::string();
    if (a == "-D") {
      o.foreground = true;
      continue;
    }
    if (a == "--conf-server" || a == "--conf-cache" || a == "--key" || a == "-f" ||
        a == "--agent-socket" || a == "--refresh") {
      v = value(a.c_str());
      if (!v) return v.status();
    } else {
      return Error(ErrorCode::kInvalidArgument, "unknown option '" + a + "'");
    }
    if (a == "--conf-server") o.conf_server = *v;
    if (a == "--conf-cache") o.conf_cache = *v;
    if (a == "--key") o.key_file = *v;
    if (a == "-f") o.conf_path = *v;
    if (a == "--agent-socket") o.agent_socket = *v;
    if (a == "--refresh") {
      char* end = nullptr;
      long n = std::strtol(v->c_str(), &end, 10);
      if (end == v->c_str() || *end != '\0' || n < 1 || n > 86400)
        return Error(ErrorCode::kInvalidArgument, "--refresh: not a number of seconds: " + *v);
      o.refresh_seconds = static_cast<int>(n);
    }
  }
  if (o.conf_server.empty() == o.conf_path.empty())
    return Error(ErrorCode::kInvalidArgument, "give exactly one of --conf-server and -f");
  return o;
}

// Fetches the files every `interval` (and when poked) and rewrites the cache on a change.
class ConfigRefresher {
 public:
  ConfigRefresher(noded::ConfiglessSetup setup, const ClusterKey& key, std::string hash,
                  int interval)
      : setup_(std::move(setup)), key_(key), hash_(std::move(hash)), interval_(interval) {
    thread_ = std::thread([this] { Run(); });
  }
  ~ConfigRefresher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Poke() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      poked_ = true;
    }
    cv_.notify_all();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::seconds(interval_), [this] { return stop_ || poked_; });
      if (stop_) break;
      poked_ = false;
      lock.unlock();
      RefreshOnce();
      lock.lock();
    }
  }
  void RefreshOnce() {
    auto files = noded::FetchConfigFiles(setup_, key_);
    if (!files) {
      noded::Log("configless: %s; keeping the cached configuration", files.error().c_str());
      return;
    }
    if (files->hash() == hash_) return;
    if (Status st = WriteConfigCache(setup_.cache_dir, *files, setup_.key_path); !st.ok()) {
      noded::Log("configless: cannot update %s: %s", setup_.cache_dir.c_str(),
                 st.message().c_str());
      return;
    }
    hash_ = files->hash();
    noded::Log("configless: the controller's configuration changed; %d file(s) rewritten in %s",
               files->files_size(), setup_.cache_dir.c_str());
  }

  const noded::ConfiglessSetup setup_;
  const ClusterKey& key_;
  std::string hash_;  // the refresh thread's own
  const int interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, poked_ = false;
  std::thread thread_;
};

int Run(const Options& o) {
  std::string conf_path = o.conf_path;
  std::string key_path = o.key_file;
  std::optional<noded::ConfiglessSetup> setup;
  std::string first_hash;
  if (!o.conf_server.empty()) {
    auto s = noded::MakeConfiglessSetup(o.conf_server, o.conf_cache, o.key_file);
    if (!s) return std::fprintf(stderr, "shoalsackd: error: %s\n", s.error().c_str()), 1;
    setup = std::move(*s);
    key_path = setup->key_path;
  } else if (key_path.empty()) {
    key_path = AuthPathsFor(conf_path, "").key_file;
  }
  auto key = ClusterKey::Load(key_path);
  if (!key) return std::fprintf(stderr, "shoalsackd: error: %s\n", key.error().c_str()), 1;
  if (setup) {
    auto cached = noded::FetchOrUseCache(*setup, *key);
    if (!cached) return std::fprintf(stderr, "shoalsackd: error: %s\n", cached.error().c_str()), 1;
    conf_path = *cached;
    // The first refresh rewrites the cache once more (same content) and learns the hash.
  }
  auto conf = LoadSlurmConf(conf_path);
  if (!conf) return std::fprintf(stderr, "shoalsackd: error: %s\n", conf.error().c_str()), 1;
  std::string agent_socket = o.agent_socket.empty()
                                 ? AuthPathsFor(conf_path, conf->Get("AuthInfo")).agent_socket
                                 : o.agent_socket;

  if (!o.foreground && ::daemon(0, 0) != 0) {
    std::perror("shoalsackd: daemon");
    return 1;
  }
  ::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  if (auto slash = agent_socket.rfind('/'); slash != std::string::npos && slash > 0)
    ::mkdir(agent_socket.substr(0, slash).c_str(), 0755);
  auto agent = RpcServer::Listen(
      io, "unix:" + agent_socket,
      [&key](const RpcConnectionPtr& c, const pb::Credential&, const std::string& body,
             Responder respond) {
        respond(AnswerAuthAgent(*key, *c, body, static_cast<int64_t>(::time(nullptr))));
      },
      0666);
  if (!agent) return std::fprintf(stderr, "shoalsackd: error: %s\n", agent.error().c_str()), 1;

  std::optional<ConfigRefresher> refresher;
  if (setup) refresher.emplace(*setup, *key, first_hash, o.refresh_seconds);
  asio::signal_set stop(io, SIGTERM, SIGINT);
  stop.async_wait([&io](const asio::error_code& ec, int) {
    if (!ec) io.stop();
  });
  asio::signal_set hup(io, SIGHUP);
  std::function<void(const asio::error_code&, int)> on_hup = [&](const asio::error_code& ec, int) {
    if (ec) return;
    if (refresher) refresher->Poke();
    hup.async_wait(on_hup);
  };
  hup.async_wait(on_hup);
  noded::Log("shoalsackd started: auth agent on %s%s%s", agent_socket.c_str(),
             setup ? ", configuration cached in " : "", setup ? setup->cache_dir.c_str() : "");
  io.run();
  return 0;
}

}  // namespace
}  // namespace shoal::sackd

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") return std::fputs(shoal::sackd::kUsage, stdout), 0;
  }
  auto opts = shoal::sackd::ParseArgs(argc, argv);
  if (!opts) {
    std::fprintf(stderr, "shoalsackd: error: %s\n%s", opts.error().c_str(), shoal::sackd::kUsage);
    return 1;
  }
  return shoal::sackd::Run(*opts);
}
