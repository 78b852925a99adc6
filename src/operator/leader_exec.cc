#include "operator/leader_exec.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "common/log.h"
#include "operator/health.h"
#include "operator/kube/client.h"
#include "operator/kube/leader.h"
#include "operator/leader_exec_machine.h"

namespace shoal::op {
namespace {

struct Options {
  std::string api, kubeconfig;
  kube::LeaderConfig lease;
  int health_port = 0;
  std::vector<std::string> command;
};

void Usage(FILE* out) {
  std::fprintf(out,
               "Usage: shoal-operator leader-exec --lease-name NAME [options] -- COMMAND [ARG...]\n"
               "  Runs COMMAND only while holding the Lease NAME; releases it when COMMAND exits.\n"
               "  --lease-namespace NS          (the pod's namespace, or default)\n"
               "  --identity ID                 (hostname)\n"
               "  --lease-duration-seconds N    (15)\n"
               "  --health-port N               /livez and /readyz of the launcher (0 = off)\n"
               "  --api URL | --kubeconfig FILE (default: $KUBECONFIG, else in-cluster)\n"
               "  -v                            debug logging\n");
}

// Parses the options; nullopt (after a message) when they are wrong, or for --help (*code 0).
std::optional<Options> Parse(const std::vector<std::string>& args, int* code) {
  Options o;
  o.lease.name.clear();
  o.lease.identity = kube::HostnameOr("shoalctld");
  std::string ns;
  *code = 2;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--") {
      o.command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    std::string value;
    bool has_inline = false;
    if (size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_inline = true;
    }
    auto next = [&](std::string* out) {
      if (has_inline) {
        *out = value;
        return true;
      }
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "leader-exec: %s needs a value\n", a.c_str());
        return false;
      }
      *out = args[++i];
      return true;
    };
    auto next_int = [&](int* out, int min) {
      std::string v;
      if (!next(&v)) return false;
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < min || n > 86400) {
        std::fprintf(stderr, "leader-exec: %s: bad number '%s'\n", a.c_str(), v.c_str());
        return false;
      }
      *out = static_cast<int>(n);
      return true;
    };
    bool ok = true;
    if (a == "--lease-name") {
      ok = next(&o.lease.name);
    } else if (a == "--lease-namespace") {
      ok = next(&ns);
    } else if (a == "--identity") {
      ok = next(&o.lease.identity);
    } else if (a == "--lease-duration-seconds") {
      ok = next_int(&o.lease.lease_duration_s, 3);
    } else if (a == "--health-port") {
      ok = next_int(&o.health_port, 0);
    } else if (a == "--api") {
      ok = next(&o.api);
    } else if (a == "--kubeconfig") {
      ok = next(&o.kubeconfig);
    } else if (a == "-v" || a == "--verbose") {
      SetLogLevel(LogLevel::kDebug);
    } else if (a == "-h" || a == "--help") {
      Usage(stdout);
      *code = 0;
      return std::nullopt;
    } else {
      std::fprintf(stderr, "leader-exec: unknown option %s\n", a.c_str());
      ok = false;
    }
    if (!ok) {
      Usage(stderr);
      return std::nullopt;
    }
  }
  if (o.lease.name.empty() || o.command.empty() || o.lease.identity.empty()) {
    std::fprintf(stderr,
                 "leader-exec: --lease-name, a non-empty --identity and a command after "
                 "-- are required\n");
    Usage(stderr);
    return std::nullopt;
  }
  if (ns.empty()) ns = kube::PodNamespace();
  o.lease.ns = ns.empty() ? "default" : ns;
  // client-go's proportions (15/10/2): renew well inside the lease and give up before a
  // successor could take over.
  o.lease.renew_period_s = std::max(1, o.lease.lease_duration_s / 3);
  o.lease.renew_deadline_s = std::max(o.lease.renew_period_s + 1, o.lease.lease_duration_s * 2 / 3);
  return o;
}

Result<kube::KubeConfig> LoadConfig(const Options& o) {
  if (!o.api.empty()) {
    kube::KubeConfig plain;
    plain.server = o.api;
    while (!plain.server.empty() && plain.server.back() == '/') plain.server.pop_back();
    return plain;
  }
  if (!o.kubeconfig.empty()) return kube::LoadKubeconfig(o.kubeconfig);
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) return kube::LoadKubeconfig(env);
  return kube::InClusterConfig();
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// fork + exec with the signal mask and dispositions the launcher changed put back. The child
// dies with the launcher (PR_SET_PDEATHSIG): a controller left running after its launcher was
// killed would keep serving without the Lease.
pid_t Spawn(const std::vector<std::string>& command, const sigset_t& original_mask) {
  std::vector<char*> argv;
  for (const auto& s : command) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  // Only async-signal-safe calls from here: the launcher has other threads.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, nullptr);
  sigprocmask(SIG_SETMASK, &original_mask, nullptr);
  execvp(argv[0], argv.data());
  const char msg[] = "leader-exec: exec failed\n";
  ssize_t ignored = write(2, msg, sizeof msg - 1);
  (void)ignored;
  _exit(127);
}

}  // namespace

int RunLeaderExec(const std::vector<std::string>& args) {
  int code = 2;
  auto parsed = Parse(args, &code);
  if (!parsed) return code;
  Options& o = *parsed;
  auto cfg = LoadConfig(o);
  if (!cfg) {
    LogError("leader-exec: %s", cfg.error().c_str());
    return 1;
  }

  // Signals are taken synchronously (sigtimedwait) by this thread; threads started after this
  // (the probe server, libcurl's resolver) inherit the mask.
  sigset_t handled, original;
  sigemptyset(&handled);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD})
    sigaddset(&handled, s);
  sigprocmask(SIG_BLOCK, &handled, &original);
  signal(SIGPIPE, SIG_IGN);

  std::atomic<bool> child_running{false};
  HealthServer health;
  if (o.health_port > 0) {
    // /livez: the launcher is alive (campaigning counts); /readyz: it leads and runs the child.
    Status s = health.Start(o.health_port, [&] { return child_running.load(); });
    if (!s.ok()) LogError("leader-exec: no probe endpoint: %s", s.message().c_str());
  }

  kube::KubeClient client(*cfg);
  // A renewal (a get and an update) must end within the renew deadline, hung server or not.
  client.set_request_timeout_ms(std::max(1000L, o.lease.renew_deadline_s * 1000L / 2));
  kube::LeaderElector elector(client, o.lease);
  LeaderExecMachine machine(static_cast<int64_t>(o.lease.renew_deadline_s) * 1000);
  const int64_t renew_ms = static_cast<int64_t>(o.lease.renew_period_s) * 1000;
  // client-go's retry period: a standby notices a released Lease within about 2 s.
  const int64_t retry_ms = std::max<int64_t>(1000, o.lease.lease_duration_s * 1000 / 7);
  LogInfo("leader-exec: %s campaigning for lease %s/%s (duration %ds) to run %s",
          o.lease.identity.c_str(), o.lease.ns.c_str(), o.lease.name.c_str(),
          o.lease.lease_duration_s, o.command[0].c_str());

  pid_t child = -1;
  // Carries out one step; an exit code when the launcher is done.
  auto act = [&](const LeaderExecOutcome& out) -> std::optional<int> {
    switch (out.step) {
      case LeaderExecStep::kNone:
        return std::nullopt;
      case LeaderExecStep::kStartChild:
        child = Spawn(o.command, original);
        if (child < 0) {
          LogError("leader-exec: fork: %s", std::strerror(errno));
          auto s = elector.Release();
          if (!s.ok()) LogError("leader-exec: release: %s", s.message().c_str());
          return 1;
        }
        child_running = true;
        LogInfo("leader-exec: holding the lease; started %s (pid %d)", o.command[0].c_str(),
                static_cast<int>(child));
        return std::nullopt;
      case LeaderExecStep::kSignalChild:
        if (child > 0) kill(child, out.signal);
        return std::nullopt;
      case LeaderExecStep::kKillChildAndExit:
        LogError("leader-exec: lost lease %s/%s; killing %s", o.lease.ns.c_str(),
                 o.lease.name.c_str(), o.command[0].c_str());
        if (child > 0) {
          kill(child, SIGKILL);
          waitpid(child, nullptr, 0);
        }
        return out.exit_code;
      case LeaderExecStep::kReleaseAndExit: {
        auto s = elector.Release();
        if (!s.ok()) LogError("leader-exec: release: %s", s.message().c_str());
        if (out.let_peer_take_over && s.ok()) {
          // A peer campaigns every retry_ms; SIGTERM cuts the wait short.
          int64_t ms = retry_ms + 1000;
          timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000};
          sigset_t stop;
          sigemptyset(&stop);
          sigaddset(&stop, SIGTERM);
          sigaddset(&stop, SIGINT);
          siginfo_t info;
          sigtimedwait(&stop, &info, &ts);
        }
        return out.exit_code;
      }
      case LeaderExecStep::kExit:
        return out.exit_code;
    }
    return std::nullopt;
  };

  // A fresh candidate waits one retry period first: a peer that was already waiting then wins a
  // Lease just released by this pod's previous launcher (or its deleted namesake), instead of
  // the restarted pod taking it straight back.
  int64_t next_try = NowMs() + retry_ms;
  int result = 0;
  for (;;) {
    if (child > 0) {
      int status = 0;
      if (waitpid(child, &status, WNOHANG) == child) {
        child = -1;
        child_running = false;
        LogInfo("leader-exec: %s exited (status %d)", o.command[0].c_str(),
                ExitCodeForWaitStatus(status));
        if (auto done = act(machine.OnChildExit(status))) {
          result = *done;
          break;
        }
      }
    }
    int64_t now = NowMs();
    if (now >= next_try) {
      auto r = elector.TryAcquireOrRenew();
      bool ok = r && *r;
      if (!r) LogError("leader-exec: lease %s: %s", o.lease.name.c_str(), r.error().c_str());
      std::optional<int> done;
      if (machine.phase() == LeaderExecMachine::Phase::kCampaigning) {
        if (ok) done = act(machine.OnAcquired(NowMs()));
        next_try = NowMs() + (ok ? renew_ms : retry_ms);
      } else {
        if (!ok && r) LogError("leader-exec: renewing lease %s failed", o.lease.name.c_str());
        done = act(machine.OnRenew(ok ? RenewResult::kOk : RenewResult::kFailed, NowMs()));
        next_try = NowMs() + (ok ? renew_ms : retry_ms);
      }
      if (done) {
        result = *done;
        break;
      }
      now = NowMs();
    }
    // Wake for the next renewal, a signal, or at least every second to reap the child.
    int64_t wait_ms = std::clamp<int64_t>(next_try - now, 0, 1000);
    timespec ts{static_cast<time_t>(wait_ms / 1000), static_cast<long>(wait_ms % 1000) * 1000000};
    siginfo_t info;
    int sig = sigtimedwait(&handled, &info, &ts);
    if (sig > 0 && sig != SIGCHLD) {
      LogInfo("leader-exec: signal %d", sig);
      if (auto done = act(machine.OnSignal(sig))) {
        result = *done;
        break;
      }
    }
  }
  health.Stop();
  LogInfo("leader-exec: exiting with %d", result);
  return result;
}

}  // namespace shoal::op
