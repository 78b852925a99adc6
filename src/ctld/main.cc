// shoalctld: the Shoal controller daemon.
//   shoalctld [-D] [-f slurm.conf] [-c] [-L logfile] [-v] [-V]
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <asio.hpp>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "common/auth.h"
#include "common/heap_tuning.h"
#include "common/log.h"
#include "ctld/controller.h"
#include "ctld/standby.h"

namespace {

void Usage() {
  std::fprintf(stderr,
               "Usage: shoalctld [-D] [-f slurm.conf] [-c] [-L logfile] [-v] [-V]\n"
               "  -D  run in the foreground\n"
               "  -f  configuration file (default $SLURM_CONF or /etc/slurm/slurm.conf)\n"
               "  -c  clear saved state (start with no jobs)\n");
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else: the heap's huge pages halve the time to load a large queue.
  shoal::ReexecWithHugePageHeap(argv);
  shoal::ctld::ControllerOptions options;
  options.conf_path = shoal::DefaultSlurmConfPath();
  bool foreground = false;
  std::string log_file;
  int opt;
  while ((opt = ::getopt(argc, argv, "Dcf:L:vVh")) != -1) {
    switch (opt) {
      case 'D':
        foreground = true;
        break;
      case 'c':
        options.clear_state = true;
        break;
      case 'f':
        options.conf_path = optarg;
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
  auto conf = shoal::LoadSlurmConf(options.conf_path);
  if (!conf) {
    std::fprintf(stderr, "shoalctld: fatal: %s\n", conf.error().c_str());
    return 1;
  }
  for (const auto& w : conf->warnings) std::fprintf(stderr, "shoalctld: warning: %s\n", w.c_str());
  auto paths = shoal::AuthPathsFor(options.conf_path, conf->Get("AuthInfo"));
  auto key = shoal::ClusterKey::Load(paths.key_file);
  if (!key) {
    std::fprintf(stderr, "shoalctld: fatal: cannot load the cluster key: %s\n",
                 key.error().c_str());
    return 1;
  }
  if (log_file.empty()) log_file = conf->Get("SlurmctldLogFile");
  if (!foreground) {
    if (::daemon(0, 0) != 0) {
      std::perror("shoalctld: daemon");
      return 1;
    }
  }
  if (!log_file.empty()) {
    int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd >= 0) {
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  // Only the holder of the state directory's lock serves; a second controller sharing the
  // directory (a backup SlurmctldHost, an HA pod) waits here in standby until it is released.
  auto state_lock = shoal::ctld::AcquireOrStandby(*conf);
  if (!state_lock) {
    LogError("fatal: %s", state_lock.error().c_str());
    std::fprintf(stderr, "shoalctld: fatal: %s\n", state_lock.error().c_str());
    return 1;
  }
  asio::io_context io(1);
  shoal::ctld::Controller controller(io, options, std::move(*conf), std::move(*key));
  if (auto s = controller.Start(); !s.ok()) {
    LogError("fatal: %s", s.message().c_str());
    std::fprintf(stderr, "shoalctld: fatal: %s\n", s.message().c_str());
    return 1;
  }
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](const asio::error_code& ec, int sig) {
    if (ec) return;
    LogInfo("terminating on signal %d", sig);
    controller.Shutdown();
  });
  // SIGHUP rereads slurm.conf, as `scontrol reconfigure` does; the handler re-arms itself.
  asio::signal_set hup(io, SIGHUP);
  std::function<void()> arm_hup = [&] {
    hup.async_wait([&](const asio::error_code& ec, int) {
      if (ec) return;
      (void)controller.Reconfigure("SIGHUP");
      arm_hup();
    });
  };
  arm_hup();
  io.run();
  return 0;
}
