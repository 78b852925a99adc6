#include "noded/util.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace shoal::noded {
namespace {

Status Errno(const std::string& what) {
  return Error(ErrorCode::kIoError, what + ": " + std::strerror(errno));
}

}  // namespace

namespace {

// The pids of our children (/proc/self/task/<pid>/children).
std::vector<pid_t> Children() {
  std::vector<pid_t> out;
  std::string self = std::to_string(::getpid());
  auto text = ReadWholeFile("/proc/" + self + "/task/" + self + "/children");
  if (!text) return out;
  const char* p = text->c_str();
  char* end = nullptr;
  for (;;) {
    long v = std::strtol(p, &end, 10);
    if (end == p) break;
    if (v > 0) out.push_back(static_cast<pid_t>(v));
    p = end;
  }
  return out;
}

}  // namespace

void KillReparentedChildren() {
  for (int round = 0; round < 20; ++round) {
    std::vector<pid_t> kids = Children();
    if (kids.empty()) break;
    for (pid_t kid : kids) {
      ::kill(-kid, SIGKILL);
      ::kill(kid, SIGKILL);
    }
    ::usleep(10000);
    int status = 0;
    while (::waitpid(-1, &status, WNOHANG) > 0) {
    }
  }
}

std::string JobDir(const std::string& spool, uint32_t job_id) {
  return spool + "/job" + std::to_string(job_id);
}

std::string StepDir(const std::string& spool, uint32_t job_id, uint32_t step_id) {
  return spool + "/step" + std::to_string(job_id) + "." + std::to_string(step_id);
}

std::vector<StepDirId> ListStepDirs(const std::string& spool) {
  std::vector<StepDirId> out;
  DIR* dir = ::opendir(spool.c_str());
  if (!dir) return out;
  while (dirent* e = ::readdir(dir)) {
    std::string name(e->d_name);
    if (name.size() < 7 || name.compare(0, 4, "step") != 0) continue;
    auto dot = name.find('.', 4);
    if (dot == std::string::npos) continue;
    std::string job = name.substr(4, dot - 4), step = name.substr(dot + 1);
    auto digits = [](const std::string& s) {
      return !s.empty() && s.size() <= 10 && std::all_of(s.begin(), s.end(), ::isdigit);
    };
    if (!digits(job) || !digits(step)) continue;
    uint64_t j = std::strtoull(job.c_str(), nullptr, 10),
             st = std::strtoull(step.c_str(), nullptr, 10);
    if (j == 0 || j > 0xffffffffull || st > 0xffffffffull) continue;
    out.push_back({static_cast<uint32_t>(j), static_cast<uint32_t>(st)});
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end(), [](const StepDirId& a, const StepDirId& b) {
    return a.job_id != b.job_id ? a.job_id < b.job_id : a.step_id < b.step_id;
  });
  return out;
}

std::vector<uint32_t> ListJobDirs(const std::string& spool) {
  std::vector<uint32_t> ids;
  DIR* dir = ::opendir(spool.c_str());
  if (!dir) return ids;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name(e->d_name);
    if (name.size() <= 3 || name.substr(0, 3) != "job") continue;
    std::string_view digits = name.substr(3);
    if (digits.size() > 10 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    uint64_t id = std::strtoull(std::string(digits).c_str(), nullptr, 10);
    if (id == 0 || id > 0xffffffffull) continue;
    ids.push_back(static_cast<uint32_t>(id));
  }
  ::closedir(dir);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string ExpandNodePath(std::string_view pattern, std::string_view node, std::string_view host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      if (pattern[i + 1] == 'n') {
        out += node;
        ++i;
        continue;
      }
      if (pattern[i + 1] == 'h') {
        out += host;
        ++i;
        continue;
      }
    }
    out.push_back(pattern[i]);
  }
  return out;
}

bool FileExists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

Status RemoveTree(const std::string& path) {
  if (DIR* dir = ::opendir(path.c_str())) {
    std::vector<std::string> names;
    while (dirent* e = ::readdir(dir)) {
      std::string_view name(e->d_name);
      if (name == "." || name == "..") continue;
      names.emplace_back(name);
    }
    ::closedir(dir);
    for (const auto& name : names) {
      std::string child = path + "/" + name;
      struct stat st {};
      if (::lstat(child.c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode))
        (void)RemoveTree(child);
      else
        ::unlink(child.c_str());
    }
  }
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT) return Errno("rmdir " + path);
  return Status::Ok();
}

Status MakeDirs(const std::string& path, mode_t mode) {
  if (path.empty()) return InvalidArgument("empty directory path");
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string part = path.substr(0, pos);
    if (::mkdir(part.c_str(), mode) != 0 && errno != EEXIST) return Errno("mkdir " + part);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Error(ErrorCode::kIoError, path + " is not a directory");
  return Status::Ok();
}

pid_t ReadPidFile(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text) return 0;
  long v = std::strtol(text->c_str(), nullptr, 10);
  return v > 0 ? static_cast<pid_t>(v) : 0;
}

bool IsStepdProcess(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  auto cmdline = ReadWholeFile("/proc/" + std::to_string(pid) + "/cmdline");
  if (!cmdline) return false;
  return cmdline->find("shoal-stepd") != std::string::npos;
}

void CloexecFrom3() {
  if (::syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) == 0) return;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    int self = ::dirfd(dir);
    while (dirent* e = ::readdir(dir)) {
      int fd = std::atoi(e->d_name);
      if (fd < 3 || fd == self) continue;
      int flags = ::fcntl(fd, F_GETFD);
      if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
    ::closedir(dir);
    return;
  }
  long max = ::sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536) max = 65536;
  for (int fd = 3; fd < max; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

void ResetSignals() {
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  ::sigemptyset(&sa.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    ::sigaction(sig, &sa, nullptr);
  }
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

pid_t ForkSignalsBlocked() {
  sigset_t all, old;
  ::sigfillset(&all);
  ::sigprocmask(SIG_BLOCK, &all, &old);
  pid_t pid = ::fork();
  if (pid != 0) ::sigprocmask(SIG_SETMASK, &old, nullptr);
  return pid;
}

std::string Hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

std::string ShortHostname() {
  std::string h = Hostname();
  auto dot = h.find('.');
  return dot == std::string::npos ? h : h.substr(0, dot);
}

int64_t NowSeconds() { return static_cast<int64_t>(::time(nullptr)); }

void Log(const char* fmt, ...) {
  timeval tv{};
  ::gettimeofday(&tv, nullptr);
  tm local{};
  ::localtime_r(&tv.tv_sec, &local);
  char stamp[64];
  size_t n = std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &local);
  std::snprintf(stamp + n, sizeof(stamp) - n, ".%03d", static_cast<int>(tv.tv_usec / 1000));
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "[%s] %s\n", stamp, msg);
  std::fflush(stderr);
}

}  // namespace shoal::noded
