#include "noded/node_scripts.h"

#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio.hpp>
#include <optional>

#include "noded/util.h"

namespace shoal::noded {

struct NodeScripts::Timer {
  explicit Timer(asio::io_context& io) : t(io) {}
  asio::steady_timer t;
};

namespace {

std::string StatusText(const ScriptResult& r) {
  if (r.status < 0) return r.error;
  if (r.timed_out) return "timed out";
  if (WIFSIGNALED(r.status)) return "status=0:" + std::to_string(WTERMSIG(r.status));
  return "status=" + std::to_string(WIFEXITED(r.status) ? WEXITSTATUS(r.status) : r.status) + ":0";
}

}  // namespace

uint64_t TmpDiskMb(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.f_blocks) * st.f_frsize / (1024 * 1024);
}

NodeScripts::NodeScripts(asio::io_context& io, const SlurmConf& conf, std::string spool,
                         std::string node_name)
    : io_(io),
      runner_(io, /*own_reaper=*/false),
      spool_(std::move(spool)),
      node_name_(std::move(node_name)),
      cluster_(conf.ClusterName()),
      prolog_(conf.Get("Prolog")),
      epilog_(conf.Get("Epilog")),
      health_timer_(std::make_unique<Timer>(io)) {
  if (auto f = ParsePrologFlags(conf.Get("PrologFlags")))
    flags_ = *f;
  else
    Log("error: %s", f.error().c_str());
  runner_.set_serial(flags_.serial);
  if (auto t = conf.GetInt("PrologEpilogTimeout", 0); t && *t > 0)
    timeout_s_ = static_cast<int>(*t);
  health_program_ = conf.Get("HealthCheckProgram");
  if (auto t = conf.GetInt("HealthCheckInterval", 0); t && *t > 0)
    health_interval_s_ = static_cast<int>(*t);
  if (auto s = ParseHealthCheckNodeState(conf.Get("HealthCheckNodeState", "ANY")))
    health_states_ = *s;
  else
    Log("error: %s", s.error().c_str());
}

NodeScripts::~NodeScripts() = default;

std::string NodeScripts::MarkerPath(uint32_t job_id) const {
  return spool_ + "/prolog." + std::to_string(job_id);
}

bool NodeScripts::PrologRan(uint32_t job_id) const { return FileExists(MarkerPath(job_id)); }

std::vector<std::string> NodeScripts::Env(const pb::JobRecord& job, const char* context) const {
  std::vector<std::string> env =
      BuildScriptEnv(ScriptInfoFromJob(job, node_name_, cluster_), context);
  env.emplace_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  return env;
}

void NodeScripts::Prolog(const pb::JobRecord& job, ScriptDone done) {
  uint32_t id = job.job_id();
  if (prolog_.empty() || PrologRan(id)) {
    asio::post(io_, [done = std::move(done)] { done(ScriptResult{}); });
    return;
  }
  auto& waiters = prolog_waiters_[id];
  waiters.push_back(std::move(done));
  if (waiters.size() > 1) return;  // already running: wait for that one
  ScriptSpec spec;
  spec.path = prolog_;
  spec.env = Env(job, "prolog_slurmd");
  spec.timeout_s = timeout_s_;
  spec.what = "prolog job " + std::to_string(id);
  runner_.Run(std::move(spec), [this, id](const ScriptResult& r) {
    if (r.ok()) {
      Status st = WriteFileAtomic(MarkerPath(id), "", 0600, false);
      if (!st.ok()) Log("job %u: %s", id, st.message().c_str());
    } else {
      Log("error: [job %u] prolog failed %s%s%s", id, StatusText(r).c_str(),
          r.output.empty() ? "" : ": ", FirstLineTrimmed(r.output, "").c_str());
    }
    auto it = prolog_waiters_.find(id);
    if (it == prolog_waiters_.end()) return;
    std::vector<ScriptDone> waiting = std::move(it->second);
    prolog_waiters_.erase(it);
    for (auto& w : waiting) w(r);
  });
}

void NodeScripts::Epilog(const pb::JobRecord& job, ScriptDone done) {
  uint32_t id = job.job_id();
  ::unlink(MarkerPath(id).c_str());
  if (epilog_.empty()) {
    asio::post(io_, [done = std::move(done)] { done(ScriptResult{}); });
    return;
  }
  ScriptSpec spec;
  spec.path = epilog_;
  spec.env = Env(job, "epilog_slurmd");
  spec.timeout_s = timeout_s_;
  spec.what = "epilog job " + std::to_string(id);
  runner_.Run(std::move(spec), [id, done = std::move(done)](const ScriptResult& r) {
    if (!r.ok())
      Log("error: [job %u] epilog failed %s%s%s", id, StatusText(r).c_str(),
          r.output.empty() ? "" : ": ", FirstLineTrimmed(r.output, "").c_str());
    done(r);
  });
}

void NodeScripts::StartHealthChecks(StateQuery query_state,
                                    std::function<void(std::string)> drain) {
  if (health_program_.empty()) return;
  query_state_ = std::move(query_state);
  drain_ = std::move(drain);
  ScheduleHealthCheck(0);
}

void NodeScripts::ScheduleHealthCheck(int delay_s) {
  health_timer_->t.expires_after(std::chrono::seconds(delay_s));
  health_timer_->t.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    RunHealthCheck();
  });
}

void NodeScripts::RunHealthCheck() {
  bool at_start = !health_started_;
  health_started_ = true;
  auto next = [this] {
    if (health_interval_s_ > 0 && !health_states_.start_only)
      ScheduleHealthCheck(health_interval_s_);
  };
  if (health_running_) return next();
  auto run = [this, next] {
    health_running_ = true;
    ScriptSpec spec;
    spec.path = health_program_;
    spec.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "SLURMD_NODENAME=" + node_name_, "SLURM_CLUSTER_NAME=" + cluster_};
    // A check may not outlive its interval (Slurm kills it after 60 s).
    spec.timeout_s = health_interval_s_ > 0 ? std::min(health_interval_s_, 60) : 60;
    spec.what = "health check";
    runner_.Run(std::move(spec), [this](const ScriptResult& r) {
      health_running_ = false;
      if (r.ok()) return;
      std::string reason = FirstLineTrimmed(
          r.output,
          "NHC: " + [&] { return r.timed_out ? std::string("timed out") : StatusText(r); }());
      Log("error: health check failed: %s", reason.c_str());
      if (drain_) drain_(reason);
    });
    next();
  };
  if (at_start) return run();
  if (health_states_.start_only) return;
  bool all = health_states_.idle && health_states_.alloc && health_states_.mixed;
  if (all || !query_state_) return run();
  query_state_([this, run, next](std::optional<NodeStateForHealth> state) {
    if (state && HealthCheckShouldRun(health_states_, *state, false)) return run();
    next();
  });
}

}  // namespace shoal::noded
