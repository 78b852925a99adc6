#include "noded/oci_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <regex>

#include "noded/oci_conf.h"
#include "noded/oci_config_json.h"
#include "noded/util.h"

namespace shoal::noded {
namespace {

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsDir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<std::optional<std::regex>> CompileRegex(const std::string& re, const std::string& key) {
  if (re.empty()) return std::optional<std::regex>();
  try {
    return std::optional<std::regex>(std::regex(re, std::regex::extended));
  } catch (const std::regex_error&) {
    return Error(ErrorCode::kInvalidArgument, "oci.conf: bad " + key + " " + re);
  }
}

bool Excluded(const std::string& entry, const std::vector<std::regex>& res) {
  std::string name = entry.substr(0, entry.find('='));
  for (const auto& re : res)
    if (std::regex_search(name, re)) return true;
  return false;
}

}  // namespace

Result<OciLaunch> PrepareOciTask(const OciTask& task) {
  std::string oci_path = DirName(task.conf_path) + "/oci.conf";
  auto text = ReadWholeFile(oci_path);
  if (!text.ok()) {
    if (!FileExists(oci_path))
      return Error(ErrorCode::kNotSupported, "Container support is not configured");
    return Error(ErrorCode::kInternal, "cannot read " + oci_path + ": " + text.error());
  }
  auto conf = ParseOciConf(*text);
  if (!conf.ok()) return conf.status();
  if (conf->runtime_run.empty() && conf->runtime_query.empty())
    return Error(ErrorCode::kInvalidArgument,
                 "oci.conf: RunTimeQuery is required with RunTimeCreate/RunTimeStart");

  std::string bundle = task.bundle;
  if (!bundle.empty() && bundle[0] != '/') bundle = task.work_dir + "/" + bundle;
  // The bundle's own config.json is the base (unless IgnoreFileConfigJson): its root.path.
  std::optional<std::string> bundle_config;
  std::string rootfs = bundle + "/rootfs";
  if (!conf->ignore_file_config_json && FileExists(bundle + "/config.json")) {
    auto text = ReadWholeFile(bundle + "/config.json");
    if (!text.ok()) return Error(ErrorCode::kInternal, "cannot read " + bundle + "/config.json");
    auto parsed = ParseJson(*text);
    if (!parsed.ok()) return parsed.status();
    auto root = OciConfigRootfs(*parsed, bundle);
    if (!root.ok()) return root.status();
    rootfs = *root;
    bundle_config = std::move(*text);
  }
  if (!IsDir(rootfs))
    return Error(ErrorCode::kInvalidArgument, "container bundle " + bundle + " has no rootfs");

  auto exclude = CompileRegex(conf->env_exclude, "EnvExclude");
  if (!exclude.ok()) return exclude.status();
  std::vector<std::regex> runtime_exclude;
  for (const auto& re : conf->runtime_env_exclude) {
    auto r = CompileRegex(re, "RunTimeEnvExclude");
    if (!r.ok()) return r.status();
    if (*r) runtime_exclude.push_back(**r);
  }

  // The task's own bundle: config.json made for this task, the user's rootfs referenced.
  std::string base = conf->container_path.empty() ? "/tmp" : conf->container_path;
  std::string tmpl = base + "/shoal-oci-" + std::to_string(task.job_id) + "." +
                     std::to_string(task.step_id) + "." + std::to_string(task.task_id) + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr)
    return Error(ErrorCode::kInternal, "mkdtemp " + tmpl + ": " + std::strerror(errno));
  std::string dir = buf.data();

  std::vector<std::string> env;
  for (const auto& e : task.env)
    if (!*exclude || !std::regex_search(e.substr(0, e.find('=')), **exclude)) env.push_back(e);

  OciProcessSpec spec;
  spec.rootfs = rootfs;
  spec.argv = task.argv;
  spec.env = env;
  // The task's directory when the image has it, else "/".
  // (With the bundle's config.json: else the image's own cwd.)
  bool wd_in_image = !task.work_dir.empty() && IsDir(rootfs + task.work_dir);
  spec.cwd = wd_in_image ? task.work_dir : bundle_config ? "" : "/";
  spec.uid = task.uid;
  spec.gid = task.gid;
  spec.hostname = task.node_name;
  // The spool directory inside the container: always for a batch script (it runs from there),
  // for tasks only when MountSpoolDir was given (a read-only image may lack the mount point).
  std::string mount = conf->mount_spool_dir;
  while (mount.size() > 1 && mount.back() == '/') mount.pop_back();
  if (task.batch_script || conf->mount_spool_dir_set) spec.binds.emplace_back(dir, mount);
  if (task.batch_script && !task.argv.empty()) {
    auto script = ReadWholeFile(task.argv[0]);
    if (!script.ok())
      return Error(ErrorCode::kInternal, "cannot read batch script: " + script.error());
    std::string name = BaseName(task.argv[0]);
    if (Status st = WriteFileAtomic(dir + "/" + name, *script, 0700, false); !st.ok()) return st;
    spec.argv[0] = (mount == "/" ? "" : mount) + "/" + name;
  }
  std::string config = GenerateOciConfig(spec);
  if (bundle_config) {
    auto merged = MergeOciConfig(*bundle_config, spec, conf->disable_hooks_list);
    if (!merged.ok()) return merged.status();
    config = std::move(*merged);
  }
  if (Status st = WriteFileAtomic(dir + "/config.json", config, 0600, false); !st.ok()) return st;
  std::string env_file;
  if (conf->create_env_file) {
    env_file = dir + "/environment";
    std::string data;
    char sep = conf->create_env_file_mode == "newline" ? '\n' : '\0';
    for (const auto& e : env) data += e + sep;
    if (Status st = WriteFileAtomic(env_file, data, 0600, false); !st.ok()) return st;
  }

  OciPatternContext ctx;
  ctx.argv = spec.argv;
  ctx.bundle = dir;
  ctx.env_file = env_file;
  ctx.spool_dir = dir;
  ctx.node_name = task.node_name;
  ctx.rootfs = rootfs;
  ctx.user_name = task.user_name;
  ctx.job_id = task.job_id;
  ctx.step_id = task.step_id;
  ctx.task_id = task.task_id;
  ctx.uid = task.uid;

  OciLaunch out;
  out.dir = dir;
  out.cleanup = !conf->disable_cleanup;
  for (const auto& e : task.env)
    if (!Excluded(e, runtime_exclude)) out.runtime_env.push_back(e);
  auto expand = [&](const std::string& p) { return p.empty() ? p : ExpandOciPattern(p, ctx); };
  out.delete_cmd = expand(conf->runtime_delete);
  if (conf->runtime_run.empty()) {
    out.create_start = true;
    out.create_cmd = expand(conf->runtime_create);
    out.start_cmd = expand(conf->runtime_start);
    out.query_cmd = expand(conf->runtime_query);
    out.kill_cmd = expand(conf->runtime_kill);
    return out;
  }
  out.run_cmd = expand(conf->runtime_run);
  if (out.cleanup) {
    std::string del = out.delete_cmd.empty() ? "" : out.delete_cmd + " >/dev/null 2>&1; ";
    out.run_cmd += "\nrc=$?; " + del + "rm -rf " + ShellQuote(dir) + "; exit $rc";
  }
  return out;
}

namespace {

// Runs `cmd` through /bin/sh with `env` and the original signal mask; waits for it. With `out`,
// its stdout is captured and its stderr discarded (queries), else both go to the task's.
int RunRuntimeCommand(const std::string& cmd, const std::vector<std::string>& env,
                      const sigset_t& orig_mask, std::string* out) {
  int p[2] = {-1, -1};
  if (out && ::pipe2(p, O_CLOEXEC) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::sigprocmask(SIG_SETMASK, &orig_mask, nullptr);
    if (out) {
      ::dup2(p[1], 1);
      int devnull = ::open("/dev/null", O_WRONLY);
      if (devnull >= 0) ::dup2(devnull, 2);
    }
    std::vector<std::string> e = env;
    std::vector<char*> envp;
    for (auto& s : e) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string sh = "/bin/sh", dash_c = "-c", c = cmd;
    char* argv[] = {sh.data(), dash_c.data(), c.data(), nullptr};
    ::execve("/bin/sh", argv, envp.data());
    ::_exit(127);
  }
  if (out) {
    ::close(p[1]);
    if (pid > 0) {
      char chunk[4096];
      ssize_t n;
      while ((n = ::read(p[0], chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) out->append(chunk, static_cast<size_t>(n));
    }
    ::close(p[0]);
  }
  if (pid < 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

bool Succeeded(int status) { return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }

void Say(const std::string& text) {
  std::string line = "shoal-stepd: error: " + text + "\n";
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

}  // namespace

void RunOciCreateStart(const OciLaunch& l) {
  // Orphans are ours: the container's init, once the create command returns.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  sigset_t set, orig;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT, SIGALRM})
    sigaddset(&set, s);
  ::sigprocmask(SIG_BLOCK, &set, &orig);
  const auto& env = l.runtime_env;
  auto finish = [&](int wait_status) {
    if (!l.delete_cmd.empty()) {
      std::string ignored;
      RunRuntimeCommand(l.delete_cmd, env, orig, &ignored);
    }
    if (l.cleanup) RunRuntimeCommand("rm -rf " + ShellQuote(l.dir), env, orig, nullptr);
    if (wait_status >= 0 && WIFSIGNALED(wait_status)) {
      int sig = WTERMSIG(wait_status);
      ::signal(sig, SIG_DFL);
      sigset_t one;
      sigemptyset(&one);
      sigaddset(&one, sig);
      ::sigprocmask(SIG_UNBLOCK, &one, nullptr);
      ::kill(::getpid(), sig);
      ::_exit(128 + sig);
    }
    ::_exit(wait_status >= 0 && WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 1);
  };

  if (int st = RunRuntimeCommand(l.create_cmd, env, orig, nullptr); !Succeeded(st)) {
    Say("oci.conf RunTimeCreate failed");
    finish(1 << 8);
  }
  if (int st = RunRuntimeCommand(l.start_cmd, env, orig, nullptr); !Succeeded(st)) {
    Say("oci.conf RunTimeStart failed");
    finish(1 << 8);
  }
  using Clock = std::chrono::steady_clock;
  Clock::time_point next_query = Clock::now() + std::chrono::milliseconds(500);
  int64_t container_pid = 0;
  int stopped_seen = 0;
  // After a termination signal: RunTimeKill (SIGTERM, which a container's pid 1 may ignore),
  // then SIGKILL to the container just before KillWait ends and our own SIGKILL comes.
  std::optional<Clock::time_point> kill_at;
  for (;;) {
    int ws = 0;
    pid_t reaped;
    int exit_status = -1;
    while ((reaped = ::waitpid(-1, &ws, WNOHANG)) > 0)
      if (exit_status < 0) exit_status = ws;  // our only orphan: the container's init
    if (exit_status >= 0) finish(exit_status);
    if (Clock::now() >= next_query) {
      // Also for runtimes whose container is not our descendant: their state says it ended.
      next_query = Clock::now() + std::chrono::seconds(1);
      std::string out;
      int st = RunRuntimeCommand(l.query_cmd, env, orig, &out);
      OciState state = ParseOciState(out);
      if (state.pid > 0) container_pid = state.pid;
      bool gone = !Succeeded(st) || state.status == "stopped";
      stopped_seen = gone ? stopped_seen + 1 : 0;
      if (stopped_seen >= 2) finish(0);  // ended, status unknown to us
    }
    if (kill_at && Clock::now() >= *kill_at && container_pid > 0) {
      ::kill(static_cast<pid_t>(container_pid), SIGKILL);
      kill_at.reset();
    }
    timespec ts{0, 200 * 1000 * 1000};
    siginfo_t info{};
    int sig = ::sigtimedwait(&set, &info, &ts);
    if (sig <= 0 || sig == SIGCHLD) continue;
    bool terminate = sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
    if (terminate && !kill_at) {
      auto grace = l.kill_wait_s > 1 ? std::chrono::milliseconds(l.kill_wait_s * 1000 - 1000)
                                     : std::chrono::milliseconds(500);
      kill_at = Clock::now() + grace;
    }
    if (terminate && !l.kill_cmd.empty()) {
      std::string ignored;
      RunRuntimeCommand(l.kill_cmd, env, orig, &ignored);
    } else if (container_pid > 0) {
      ::kill(static_cast<pid_t>(container_pid), sig);
    }
  }
}

}  // namespace shoal::noded
