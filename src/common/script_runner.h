// Runs administrator scripts (Prolog, Epilog, PrologSlurmctld, HealthCheckProgram, ...) as
// children of an asio daemon without blocking its event loop: posix_spawn in a new session,
// output captured in a memfd, a time limit that SIGKILLs the script's whole process group, and
// the result delivered on the io_context thread. Optionally one at a time (PrologFlags=Serial).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace asio {
class io_context;
}

namespace shoal {

struct ScriptSpec {
  std::string path;               // the program (executed directly, no shell)
  std::vector<std::string> args;  // argv[1..]
  std::vector<std::string> env;   // the whole environment ("NAME=value")
  int timeout_s = 0;              // 0 = no limit
  std::string what;               // for logs: "prolog job 12"
};
struct ScriptResult {
  int status = 0;          // raw wait status; -1 when it could not be started
  bool timed_out = false;  // killed at the time limit
  std::string output;      // stdout and stderr, first 64 KiB
  std::string error;       // why it could not start
  bool ok() const { return status == 0 && !timed_out; }
};
// posix_spawn of argv[0] in a new session, with every signal at its default and unblocked, cwd
// "/", stdin from /dev/null and stdout/stderr to `out_fd` (-1: /dev/null), no other descriptor.
// Returns 0 or the errno; *pid is the child.
int SpawnDetached(char* const* argv, char* const* envp, int out_fd, pid_t* pid);

using ScriptDone = std::function<void(const ScriptResult&)>;

class ScriptRunner {
 public:
  // own_reaper: install a SIGCHLD handler that reaps this runner's children (by pid). Without
  // it, the owner's reaper must call OnExit for every child it reaps.
  ScriptRunner(asio::io_context& io, bool own_reaper);
  ~ScriptRunner();
  ScriptRunner(const ScriptRunner&) = delete;
  ScriptRunner& operator=(const ScriptRunner&) = delete;

  void set_serial(bool serial) { serial_ = serial; }
  void Run(ScriptSpec spec, ScriptDone done);
  // The owner reaped `pid`: true when it was one of ours (its result is then delivered).
  bool OnExit(pid_t pid, int status);
  size_t running() const { return running_.size(); }

 private:
  struct Running;
  void Start(ScriptSpec spec, ScriptDone done);
  void StartNext();
  void ReapOwn();
  void WaitSignal();

  asio::io_context& io_;
  bool serial_ = false;
  std::map<pid_t, std::shared_ptr<Running>> running_;
  std::deque<std::pair<ScriptSpec, ScriptDone>> queue_;
  struct Signals;
  std::unique_ptr<Signals> signals_;
};

}  // namespace shoal
