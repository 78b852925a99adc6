#include "ctld/standby.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <asio.hpp>
#include <cerrno>
#include <cstring>
#include <memory>

#include "common/errors.h"
#include "common/log.h"
#include "common/rpc.h"

namespace shoal::ctld {

Result<int> TryLockStateDir(const std::string& dir, bool* busy) {
  *busy = false;
  ::mkdir(dir.c_str(), 0700);
  std::string path = dir + "/shoalctld.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Error(ErrorCode::kIoError, path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
  int err = errno;
  ::close(fd);
  if (err == EWOULDBLOCK) {
    *busy = true;
    return Error(ErrorCode::kInStandby, path + " is held by another controller");
  }
  return Error(ErrorCode::kIoError, path + ": " + std::strerror(err));
}

Result<int> AcquireOrStandby(const SlurmConf& conf, int poll_ms) {
  std::string dir = conf.StateSaveLocation();
  bool busy = false;
  auto fd = TryLockStateDir(dir, &busy);
  if (fd || !busy) return fd;

  LogInfo(
      "standby: %s/shoalctld.lock is held by another controller; serving standby answers "
      "until it is released",
      dir.c_str());
  asio::io_context io(1);
  auto handler = [](const RpcConnectionPtr&, const pb::Credential&, const std::string&,
                    Responder respond) {
    respond(ErrorResponse(ErrorCode::kInStandby, "Slurm backup controller in standby mode"));
  };
  auto http = [](const HttpRequest& req) {
    HttpResponse r;
    if (req.path == "/livez" || req.path == "/healthz") {
      r.body = "ok\n";
    } else if (req.path == "/readyz") {
      r.status = 503;
      r.body = "standby\n";
    } else {
      r.status = 503;
      r.body = "standby: another controller is active\n";
    }
    return r;
  };
  auto server = RpcServer::Listen(io, "0.0.0.0:" + std::to_string(conf.ControllerPort()), handler,
                                  0666, http);
  // The port may still be the active controller's (same host): then just wait for the lock.
  if (!server) LogInfo("standby: not serving (%s)", server.error().c_str());

  Result<int> result = Error(ErrorCode::kInternal, "standby ended");
  asio::steady_timer timer(io);
  std::function<void()> poll = [&] {
    timer.expires_after(std::chrono::milliseconds(poll_ms));
    timer.async_wait([&](const asio::error_code& ec) {
      if (ec) return;
      bool still_busy = false;
      auto got = TryLockStateDir(dir, &still_busy);
      if (!got && still_busy) return poll();
      result = std::move(got);
      io.stop();
    });
  };
  poll();
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](const asio::error_code& ec, int sig) {
    if (ec) return;
    result = Error(ErrorCode::kUnavailable, "standby ended by signal " + std::to_string(sig));
    io.stop();
  });
  io.run();
  if (server) (*server)->Stop();
  if (result) LogInfo("standby: took over %s; becoming the active controller", dir.c_str());
  return result;
}

}  // namespace shoal::ctld
