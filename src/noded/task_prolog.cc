#include "noded/task_prolog.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <thread>

#include "common/prolog_epilog.h"
#include "common/slurm_conf.h"
#include "noded/util.h"

namespace shoal::noded {

TaskScripts LoadTaskScripts(const std::string& conf_path) {
  TaskScripts t;
  // Every task start comes here: skip the full parse when slurm.conf cannot name them.
  auto text = ReadWholeFile(conf_path);
  if (!text) return t;
  std::string lower = *text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("taskprolog") == std::string::npos &&
      lower.find("taskepilog") == std::string::npos && lower.find("include") == std::string::npos)
    return t;
  auto conf = LoadSlurmConf(conf_path);
  if (!conf) return t;
  t.prolog = conf->Get("TaskProlog");
  t.epilog = conf->Get("TaskEpilog");
  return t;
}

namespace {

std::vector<char*> Pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  p.reserve(v.size() + 1);
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

}  // namespace

void RunTaskProlog(const std::string& program, std::vector<std::string>* env) {
  if (program.empty()) return;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  std::vector<std::string> env_copy = *env;
  std::vector<std::string> args = {program};
  std::vector<char*> envp = Pointers(env_copy);
  std::vector<char*> argv = Pointers(args);
  // SIGCHLD may be ignored here (inherited): then waitpid cannot report, so restore it.
  ::signal(SIGCHLD, SIG_DFL);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  if (pid == 0) {
    ::dup2(fds[1], 1);
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::execve(program.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() < (1u << 20)) out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  TaskPrologOutput parsed = ParseTaskPrologOutput(out);
  if (!parsed.print.empty()) {
    ssize_t n = ::write(1, parsed.print.data(), parsed.print.size());
    (void)n;
  }
  ApplyTaskPrologOutput(out, env);
}

void RunTaskEpilog(const std::string& program, uint32_t uid, uint32_t gid,
                   const std::vector<std::string>& env, const std::string& work_dir,
                   int timeout_s) {
  if (program.empty()) return;
  std::vector<std::string> env_copy = env;
  std::vector<std::string> args = {program};
  std::vector<char*> envp = Pointers(env_copy);
  std::vector<char*> argv = Pointers(args);
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> pwbuf(16384);
  std::string user;
  if (::getpwuid_r(uid, &pw, pwbuf.data(), pwbuf.size(), &found) == 0 && found) user = pw.pw_name;
  pid_t pid = ::fork();
  if (pid < 0) return;
  if (pid == 0) {
    ::setsid();
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    if (::setgid(gid) != 0) ::_exit(1);
    if (!user.empty() && ::initgroups(user.c_str(), gid) != 0) ::_exit(1);
    if (::setuid(uid) != 0) ::_exit(1);
    if (work_dir.empty() || ::chdir(work_dir.c_str()) != 0) {
      if (::chdir("/tmp") != 0) ::_exit(1);
    }
    ResetSignals();
    ::execve(program.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  // Bounded wait: shoal-stepd must still report the job.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      Log("TaskEpilog %s killed after %d s", program.c_str(), timeout_s);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace shoal::noded
