#include "common/script_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio.hpp>
#include <cerrno>
#include <cstring>

namespace shoal {

int SpawnDetached(char* const* argv, char* const* envp, int out_fd, pid_t* pid) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  if (out_fd >= 0) {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
  } else {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDWR, 0);
    posix_spawn_file_actions_adddup2(&actions, 0, 1);
    posix_spawn_file_actions_adddup2(&actions, 0, 2);
  }
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawn_file_actions_addchdir_np(&actions, "/");
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  int rc = ::posix_spawn(pid, argv[0], &actions, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc;
}

namespace {
constexpr size_t kMaxOutput = 64 * 1024;
}

struct ScriptRunner::Running {
  Running(asio::io_context& io) : timer(io) {}
  ScriptSpec spec;
  ScriptDone done;
  int out_fd = -1;
  bool timed_out = false;
  asio::steady_timer timer;
};

struct ScriptRunner::Signals {
  explicit Signals(asio::io_context& io) : set(io, SIGCHLD) {}
  asio::signal_set set;
};

ScriptRunner::ScriptRunner(asio::io_context& io, bool own_reaper) : io_(io) {
  if (own_reaper) {
    signals_ = std::make_unique<Signals>(io);
    WaitSignal();
  }
}

ScriptRunner::~ScriptRunner() {
  for (auto& [pid, r] : running_) {
    ::kill(-pid, SIGKILL);
    if (r->out_fd >= 0) ::close(r->out_fd);
  }
}

void ScriptRunner::WaitSignal() {
  signals_->set.async_wait([this](const asio::error_code& ec, int) {
    if (ec) return;
    ReapOwn();
    WaitSignal();
  });
}

void ScriptRunner::ReapOwn() {
  std::vector<pid_t> pids;
  for (auto& [pid, r] : running_) pids.push_back(pid);
  for (pid_t pid : pids) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) OnExit(pid, status);
  }
}

void ScriptRunner::Run(ScriptSpec spec, ScriptDone done) {
  if (serial_ && !running_.empty()) {
    queue_.emplace_back(std::move(spec), std::move(done));
    return;
  }
  Start(std::move(spec), std::move(done));
}

void ScriptRunner::StartNext() {
  while (!queue_.empty() && (!serial_ || running_.empty())) {
    auto next = std::move(queue_.front());
    queue_.pop_front();
    Start(std::move(next.first), std::move(next.second));
  }
}

void ScriptRunner::Start(ScriptSpec spec, ScriptDone done) {
  auto fail = [&](const std::string& why) {
    ScriptResult r;
    r.status = -1;
    r.error = why;
    // Delivered later, like every other result, so callers never re-enter themselves.
    asio::post(io_, [done = std::move(done), r] { done(r); });
    asio::post(io_, [this] { StartNext(); });
  };
  int fd = ::memfd_create("shoal-script-output", MFD_CLOEXEC);
  if (fd < 0) return fail(std::string("memfd_create: ") + std::strerror(errno));
  std::vector<std::string> argv_s;
  argv_s.push_back(spec.path);
  for (const auto& a : spec.args) argv_s.push_back(a);
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : spec.env) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = 0;
  int rc = SpawnDetached(argv.data(), envp.data(), fd, &pid);
  if (rc != 0) {
    ::close(fd);
    return fail("exec " + spec.path + ": " + std::strerror(rc));
  }
  auto r = std::make_shared<Running>(io_);
  r->out_fd = fd;
  int timeout = spec.timeout_s;
  r->spec = std::move(spec);
  r->done = std::move(done);
  running_[pid] = r;
  if (timeout > 0) {
    r->timer.expires_after(std::chrono::seconds(timeout));
    std::weak_ptr<Running> weak = r;
    r->timer.async_wait([weak, pid](const asio::error_code& ec) {
      auto run = weak.lock();
      if (ec || !run) return;
      run->timed_out = true;
      ::kill(-pid, SIGKILL);  // its own session: the script and everything it started
      ::kill(pid, SIGKILL);
    });
  }
}

bool ScriptRunner::OnExit(pid_t pid, int status) {
  auto it = running_.find(pid);
  if (it == running_.end()) return false;
  std::shared_ptr<Running> r = it->second;
  running_.erase(it);
  r->timer.cancel();
  if (r->timed_out) ::kill(-pid, SIGKILL);  // leftovers of a killed script
  ScriptResult result;
  result.status = status;
  result.timed_out = r->timed_out;
  result.output.resize(kMaxOutput);
  ssize_t n = ::pread(r->out_fd, result.output.data(), kMaxOutput, 0);
  result.output.resize(n > 0 ? static_cast<size_t>(n) : 0);
  ::close(r->out_fd);
  r->out_fd = -1;
  asio::post(io_, [r, result] { r->done(result); });
  asio::post(io_, [this] { StartNext(); });
  return true;
}

}  // namespace shoal
