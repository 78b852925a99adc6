// shoald's administrator scripts: Prolog and Epilog (slurm.conf Prolog, Epilog, PrologFlags,
// PrologEpilogTimeout) and HealthCheckProgram (HealthCheckInterval, HealthCheckNodeState).
// Everything runs as root through a ScriptRunner (asynchronous, bounded), on shoald's event-loop
// thread. Whether a job's Prolog ran on this node is remembered in the spool
// (<spool>/prolog.<job>), so a restarted shoald does not run it twice.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/prolog_epilog.h"
#include "common/script_runner.h"
#include "common/slurm_conf.h"
#include "shoal.pb.h"

namespace asio {
class io_context;
}

namespace shoal::noded {

// Size of the file system holding `path`, in MB (0 when unknown): TmpDisk as slurmd reports it.
uint64_t TmpDiskMb(const std::string& path);

class NodeScripts {
 public:
  NodeScripts(asio::io_context& io, const SlurmConf& conf, std::string spool,
              std::string node_name);
  ~NodeScripts();

  // For shoald's SIGCHLD reaper: true when `pid` was one of the scripts.
  bool OnChildExit(pid_t pid, int status) { return runner_.OnExit(pid, status); }

  bool has_prolog() const { return !prolog_.empty(); }
  bool has_epilog() const { return !epilog_.empty(); }
  const PrologFlags& flags() const { return flags_; }
  // Runs the job's Prolog unless it already ran (or is running: `done` then waits for it).
  // Without a Prolog, `done` is called (later) with success.
  void Prolog(const pb::JobRecord& job, ScriptDone done);
  bool PrologRunning(uint32_t job_id) const { return prolog_waiters_.count(job_id) > 0; }
  bool PrologRan(uint32_t job_id) const;
  // Runs the job's Epilog (when configured) and forgets that its Prolog ran.
  void Epilog(const pb::JobRecord& job, ScriptDone done);

  // HealthCheckProgram: `query_state` asks the controller what this node is (answering with
  // nullopt when it cannot); `drain` reports a failed check with its reason.
  using StateQuery = std::function<void(std::function<void(std::optional<NodeStateForHealth>)>)>;
  void StartHealthChecks(StateQuery query_state, std::function<void(std::string)> drain);

 private:
  std::vector<std::string> Env(const pb::JobRecord& job, const char* context) const;
  std::string MarkerPath(uint32_t job_id) const;
  void ScheduleHealthCheck(int delay_s);
  void RunHealthCheck();

  asio::io_context& io_;
  ScriptRunner runner_;
  std::string spool_, node_name_, cluster_;
  std::string prolog_, epilog_;
  PrologFlags flags_;
  int timeout_s_ = 0;
  std::map<uint32_t, std::vector<ScriptDone>> prolog_waiters_;
  // Health checks.
  std::string health_program_;
  int health_interval_s_ = 0;
  HealthCheckStates health_states_;
  StateQuery query_state_;
  std::function<void(std::string)> drain_;
  bool health_running_ = false;
  bool health_started_ = false;
  struct Timer;
  std::unique_ptr<Timer> health_timer_;
};

}  // namespace shoal::noded
