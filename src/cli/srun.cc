// srun and salloc: gather the outside world (environment, directory, user), parse the options,
// then run (srun_run.cc) or allocate and run a command (salloc).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cli/allocation.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/job_options_common.h"
#include "cli/srun_args.h"
#include "cli/srun_run.h"
#include "common/name_service.h"

extern char** environ;

namespace shoal::cli {
namespace {

std::vector<std::string> ReadEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

std::string CurrentDir() {
  std::string buf(4096, '\0');
  while (getcwd(buf.data(), buf.size()) == nullptr) {
    if (errno != ERANGE) return "/";
    buf.resize(buf.size() * 2);
  }
  buf.resize(strlen(buf.c_str()));
  return buf;
}

RunContext GatherContext() {
  RunContext c;
  c.environment = ReadEnvironment();
  c.cwd = CurrentDir();
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) c.hostname = host;
  c.uid = ::getuid();
  c.gid = ::getgid();
  c.pid = static_cast<uint32_t>(::getpid());
  c.now = ::time(nullptr);
  if (auto user = UserById(c.uid)) {
    c.user_name = user->name;
    c.shell = user->shell.empty() ? "/bin/sh" : user->shell;
  } else {
    c.user_name = std::to_string(c.uid);
    c.shell = "/bin/sh";
  }
  return c;
}

void NoteChild(int) {}

// Runs salloc's command with the allocation's environment and returns its wait status. While it
// runs, `held_fd` (the allocation's connection) closing means the allocation was revoked
// (scancel, time limit): salloc says so and, with -K, signals the command.
int RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env,
               const std::string& work_dir, int held_fd, const SallocInvocation& inv,
               uint32_t job_id, const std::function<bool()>& job_over) {
  // SIGCHLD interrupts the wait below; blocked except inside ppoll, so none is missed.
  struct sigaction sa {};
  sa.sa_handler = NoteChild;
  ::sigaction(SIGCHLD, &sa, nullptr);
  sigset_t chld, orig;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, &orig);
  pid_t pid = ::fork();
  if (pid < 0) return 1 << 8;
  if (pid == 0) {
    ::sigprocmask(SIG_SETMASK, &orig, nullptr);
    ::signal(SIGCHLD, SIG_DFL);
    if (!work_dir.empty() && ::chdir(work_dir.c_str()) != 0)
      std::fprintf(stderr, "salloc: error: chdir(%s): %s\n", work_dir.c_str(),
                   std::strerror(errno));
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGQUIT, SIG_DFL);
    std::vector<char*> cargv, cenv;
    std::vector<std::string> a = argv, e = env;
    for (auto& s : a) cargv.push_back(s.data());
    cargv.push_back(nullptr);
    for (auto& s : e) cenv.push_back(s.data());
    cenv.push_back(nullptr);
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    std::fprintf(stderr, "salloc: error: %s: %s\n", argv[0].c_str(), std::strerror(errno));
    ::_exit(127);
  }
  // The command owns the terminal's Ctrl-C; salloc waits for it.
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGQUIT, SIG_IGN);
  int status = 0;
  bool revoked = false;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    pollfd p{revoked ? -1 : held_fd, POLLIN, 0};
    int n = ::ppoll(&p, 1, nullptr, &orig);
    if (n > 0 && !revoked) {
      revoked = true;  // either way, the connection is done with
      // A controller restart closes it too; only a job that really ended is "revoked".
      if (!job_over()) continue;
      if (!inv.quiet) std::fprintf(stderr, "salloc: Job allocation %u has been revoked.\n", job_id);
      if (inv.kill_command)
        ::kill(pid, inv.kill_command_signal ? inv.kill_command_signal
                                            : (::isatty(0) ? SIGHUP : SIGTERM));
    }
  }
  ::sigprocmask(SIG_SETMASK, &orig, nullptr);
  return status;
}

}  // namespace

int SrunMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  RunContext rc = GatherContext();
  auto parsed = ParseSrunArgs(args, rc);
  if (!parsed) {
    std::fprintf(stderr, "%s\n", parsed.error().c_str());
    return ErrorExitCode(rc.environment);
  }
  if (parsed->text_only) {
    std::fputs(parsed->text.c_str(), stdout);
    return 0;
  }
  auto ctx = LoadClientContext();
  if (!ctx) {
    std::fprintf(stderr, "srun: error: %s\n", ctx.error().c_str());
    return 1;
  }
  FinishSrunInvocation(parsed->srun, ctx->conf);
  return RunSrun(*ctx, parsed->srun);
}

int SallocMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  RunContext rc = GatherContext();
  auto parsed = ParseSallocArgs(args, rc);
  if (!parsed) {
    std::fprintf(stderr, "%s\n", parsed.error().c_str());
    return ErrorExitCode(rc.environment);
  }
  if (parsed->text_only) {
    std::fputs(parsed->text.c_str(), stdout);
    return 0;
  }
  auto ctx = LoadClientContext();
  if (!ctx) {
    std::fprintf(stderr, "salloc: error: %s\n", ctx.error().c_str());
    return 1;
  }
  SallocInvocation& inv = parsed->salloc;
  AllocateOptions ao;
  ao.prog = "salloc";
  ao.hold = !inv.no_shell;
  ao.immediate_s = inv.immediate_s;
  ao.quiet = inv.quiet;
  auto alloc = Allocate(*ctx, inv.spec, ao);
  if (!alloc) {
    std::fprintf(stderr, "salloc: error: %s\n", alloc.error().c_str());
    return 1;
  }
  if (inv.no_shell) return 0;
  std::vector<std::string> env = rc.environment;
  OverlayEnvironment(env, alloc->environment);
  for (const auto& e : inv.extra_env) env.push_back(e);
  std::vector<std::string> command = inv.command;
  if (command.empty()) command.push_back(rc.shell);
  uint32_t job_id = alloc->job.job_id();
  auto job_over = [&] {
    pb::Request q;
    q.mutable_job_query()->add_job_ids(job_id);
    q.mutable_job_query()->set_include_finished(true);
    q.mutable_job_query()->set_omit_script(true);
    auto r = CallControllerRaw(*ctx, q);
    if (!r || r->rc() != 0) return false;
    const auto& jobs = r->job_query().jobs();
    return jobs.empty() || jobs[0].state() != pb::JOB_RUNNING || jobs[0].completing();
  };
  int status = RunCommand(command, env, inv.work_dir, alloc->conn.fd(), inv, job_id, job_over);
  if (!inv.quiet)
    std::fprintf(stderr, "salloc: Relinquishing job allocation %u\n", alloc->job.job_id());
  Release(*ctx, *alloc, status);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace shoal::cli
