// shoalrestd: Slurm's REST API (slurmrestd, OpenAPI v0.0.44) for a Shoal cluster.
//   shoalrestd [options] [host]:port|unix:/path ...
// Runs in the foreground like slurmrestd; SIGTERM/SIGINT stop it.
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/client.h"
#include "common/auth.h"
#include "common/log.h"
#include "common/slurm_conf.h"
#include "restd/backend.h"
#include "restd/http_server.h"

namespace {

void Usage() {
  std::fprintf(stderr,
               "Usage: shoalrestd [options] [host]:port|unix:/path ...\n"
               "  -f FILE               slurm.conf (default $SLURM_CONF or /etc/slurm/slurm.conf)\n"
               "  -t N                  worker threads per listen address (default 2 x cores)\n"
               "  -L FILE               log file (default stderr)\n"
               "  -v                    verbose logging\n"
               "  --max-body=SIZE       largest request body (default 1M; larger: 413)\n"
               "  --max-header=SIZE     per-connection header memory (default 64K)\n"
               "  --max-connections=N   open connections per listen address (default 4096)\n"
               "  --rate=R              requests per second per user (default 0 = unlimited)\n"
               "  --burst=B             token bucket size per user (default 2 x rate)\n"
               "  --address-file=FILE   write the bound addresses, one a line, once listening\n"
               "  --pidfile=FILE        write the process id\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shoal;
  std::string conf_path = DefaultSlurmConfPath();
  std::string log_file, address_file, pid_file;
  restd::ServerOptions options;
  enum { kMaxBody = 1000, kMaxHeader, kMaxConn, kRate, kBurst, kAddrFile, kPidFile };
  static const option kLong[] = {
      {"max-body", required_argument, nullptr, kMaxBody},
      {"max-header", required_argument, nullptr, kMaxHeader},
      {"max-connections", required_argument, nullptr, kMaxConn},
      {"rate", required_argument, nullptr, kRate},
      {"burst", required_argument, nullptr, kBurst},
      {"address-file", required_argument, nullptr, kAddrFile},
      {"pidfile", required_argument, nullptr, kPidFile},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  int opt;
  while ((opt = ::getopt_long(argc, argv, "f:t:L:vVh", kLong, nullptr)) != -1) {
    switch (opt) {
      case 'f':
        conf_path = optarg;
        break;
      case 't':
        options.threads = static_cast<unsigned>(std::atoi(optarg));
        break;
      case 'L':
        log_file = optarg;
        break;
      case 'v':
        SetLogLevel(LogLevel::kDebug);
        break;
      case 'V':
        std::printf("shoal %s\n", SHOAL_VERSION);
        return 0;
      case kMaxBody:
        options.limits.max_body_bytes = restd::ParseByteSize(optarg);
        break;
      case kMaxHeader:
        options.limits.max_header_bytes = restd::ParseByteSize(optarg);
        break;
      case kMaxConn:
        options.limits.max_connections = static_cast<unsigned>(std::atoi(optarg));
        break;
      case kRate:
        options.limits.rate_per_user = std::atof(optarg);
        break;
      case kBurst:
        options.limits.burst_per_user = std::atof(optarg);
        break;
      case kAddrFile:
        address_file = optarg;
        break;
      case kPidFile:
        pid_file = optarg;
        break;
      case 'h':
        Usage();
        return 0;
      default:
        Usage();
        return 1;
    }
  }
  for (int i = optind; i < argc; ++i) {
    std::string a = argv[i];
    // slurmrestd accepts ":port" and "host:port"; a bare "port" is accepted too.
    if (a.rfind("unix:", 0) != 0 && a.find(':') == std::string::npos) a = ":" + a;
    options.listen.push_back(a);
  }
  if (options.listen.empty()) {
    std::fprintf(stderr, "shoalrestd: no listen address given\n");
    Usage();
    return 1;
  }
  if (options.limits.max_body_bytes == 0 || options.limits.max_header_bytes == 0) {
    std::fprintf(stderr, "shoalrestd: bad size (use e.g. 1048576, 512K, 1M)\n");
    return 1;
  }
  auto conf = LoadSlurmConf(conf_path);
  if (!conf) {
    std::fprintf(stderr, "shoalrestd: fatal: %s\n", conf.error().c_str());
    return 1;
  }
  restd::BackendConfig backend;
  backend.controller_address =
      conf->ControllerAddr() + ":" + std::to_string(conf->ControllerPort());
  backend.dbd_address = cli::DbdAddress(*conf);
  backend.cluster_name = conf->Get("ClusterName");
  if (auto t = conf->GetInt("MessageTimeout", 10); t && *t > 0) backend.timeout_ms = int(*t) * 1000;
  auto paths = AuthPathsFor(conf_path, conf->Get("AuthInfo"));
  if (auto key = ClusterKey::Load(paths.key_file)) {
    backend.key = std::move(*key);
  } else {
    // Without the key only token (TCP) callers can be served.
    std::fprintf(stderr, "shoalrestd: warning: unix socket callers cannot be served: %s\n",
                 key.error().c_str());
  }
  options.cluster_name = backend.cluster_name;

  if (!log_file.empty()) {
    int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd >= 0) {
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
  }
  // Enough descriptors for every allowed connection on every listener, plus backend sockets.
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rlim_t want = static_cast<rlim_t>(options.limits.max_connections) * options.listen.size() + 256;
    if (rl.rlim_cur < want) {
      rl.rlim_cur = std::min(want, rl.rlim_max);
      ::setrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  // Signals are taken by sigwait below; every thread started from here on inherits the mask.
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  restd::Router router;
  restd::RegisterOpenApiEndpoints(router);
  restd::RegisterSlurmEndpoints(router);
  restd::RegisterSlurmdbEndpoints(router);
  const restd::BackendConfig* backend_config = &backend;
  auto server = restd::HttpServer::Start(options, &router, [backend_config] {
    return std::unique_ptr<restd::Backend>(new restd::RpcBackend(backend_config));
  });
  if (!server) {
    std::fprintf(stderr, "shoalrestd: fatal: %s\n", server.error().c_str());
    return 1;
  }
  std::string listening;
  for (const auto& a : (*server)->addresses()) listening += (listening.empty() ? "" : " ") + a;
  LogInfo("shoalrestd listening on %s", listening.c_str());
  if (!pid_file.empty()) {
    if (FILE* f = std::fopen(pid_file.c_str(), "w")) {
      std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
      std::fclose(f);
    }
  }
  if (!address_file.empty()) {
    // Written whole then renamed, so a reader never sees half of it.
    std::string tmp = address_file + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      for (const auto& a : (*server)->addresses()) std::fprintf(f, "%s\n", a.c_str());
      std::fclose(f);
      ::rename(tmp.c_str(), address_file.c_str());
    }
  }
  int sig = 0;
  sigwait(&stop, &sig);
  LogInfo("terminating on signal %d", sig);
  (*server)->Stop();
  if (!address_file.empty()) ::unlink(address_file.c_str());
  if (!pid_file.empty()) ::unlink(pid_file.c_str());
  return 0;
}
