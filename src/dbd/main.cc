// shoaldbd: the Shoal accounting daemon (slurmdbd's counterpart).
//   shoaldbd [-D] [-f slurmdbd.conf] [-L logfile] [-v] [-V]
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <asio.hpp>
#include <cstdio>
#include <string>

#include "common/auth.h"
#include "common/log.h"
#include "dbd/dbd_conf.h"
#include "dbd/server.h"

namespace {

void Usage() {
  std::fprintf(stderr,
               "Usage: shoaldbd [-D] [-f slurmdbd.conf] [-L logfile] [-v] [-V]\n"
               "  -D  run in the foreground\n"
               "  -f  configuration file (default $SLURMDBD_CONF, else slurmdbd.conf beside\n"
               "      $SLURM_CONF, else /etc/slurm/slurmdbd.conf)\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string conf_path = shoal::dbd::DefaultDbdConfPath();
  bool foreground = false;
  std::string log_file;
  int opt;
  while ((opt = ::getopt(argc, argv, "Df:L:vVh")) != -1) {
    switch (opt) {
      case 'D':
        foreground = true;
        break;
      case 'f':
        conf_path = optarg;
        break;
      case 'L':
        log_file = optarg;
        break;
      case 'v':
        shoal::SetLogLevel(shoal::LogLevel::kDebug);
        break;
      case 'V':
        std::printf("shoal %s\n", SHOAL_VERSION);
        return 0;
      default:
        Usage();
        return 1;
    }
  }
  auto conf = shoal::dbd::LoadDbdConf(conf_path);
  if (!conf) {
    std::fprintf(stderr, "shoaldbd: fatal: %s\n", conf.error().c_str());
    return 1;
  }
  for (const auto& w : conf->warnings) std::fprintf(stderr, "shoaldbd: warning: %s\n", w.c_str());
  auto paths = shoal::AuthPathsFor(conf_path, conf->auth_info);
  auto key = shoal::ClusterKey::Load(paths.key_file);
  if (!key) {
    std::fprintf(stderr, "shoaldbd: fatal: cannot load the cluster key: %s\n", key.error().c_str());
    return 1;
  }
  if (log_file.empty()) log_file = conf->log_file;
  if (!foreground && ::daemon(0, 0) != 0) {
    std::perror("shoaldbd: daemon");
    return 1;
  }
  if (!log_file.empty()) {
    int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd >= 0) {
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
  }
  if (!conf->pid_file.empty()) {
    if (FILE* f = std::fopen(conf->pid_file.c_str(), "w")) {
      std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
      std::fclose(f);
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  asio::io_context io(1);
  shoal::dbd::DbdServer server(io, std::move(*conf), std::move(*key));
  if (auto s = server.Start(); !s.ok()) {
    LogError("fatal: %s", s.message().c_str());
    std::fprintf(stderr, "shoaldbd: fatal: %s\n", s.message().c_str());
    return 1;
  }
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](const asio::error_code& ec, int sig) {
    if (ec) return;
    LogInfo("terminating on signal %d", sig);
    server.Shutdown();
    io.stop();
  });
  io.run();
  server.Shutdown();
  return 0;
}
