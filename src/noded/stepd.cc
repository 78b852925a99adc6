#include "noded/stepd.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "common/auth.h"
#include "common/rpc.h"
#include "noded/cgroup/job_cgroup.h"
#include "noded/gpu_bind.h"
#include "noded/job_env.h"
#include "noded/oci_run.h"
#include "noded/output_pattern.h"
#include "noded/step_supervisor.h"
#include "noded/task_binding.h"
#include "noded/task_prolog.h"
#include "noded/user_groups.h"
#include "noded/util.h"

namespace shoal::noded {
namespace {

constexpr uint32_t kNoArrayTaskId = 0xfffffffe;

// --- child side (after fork, before exec) ----------------------------------------------------

// Reports a setup failure to the parent through the close-on-exec pipe and exits.
[[noreturn]] void ChildFail(int err_fd, const std::string& message) {
  size_t off = 0;
  while (off < message.size()) {
    ssize_t n = ::write(err_fd, message.data() + off, message.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::_exit(127);
}

std::string Errstr(int err) { return std::strerror(err); }

int OpenOutput(const std::string& path, bool append) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  return ::open(path.c_str(), flags, 0666);
}

// Moves `fd` onto `target` (0, 1 or 2) without the close-on-exec flag.
bool MoveFd(int fd, int target) {
  if (fd == target) {
    int flags = ::fcntl(fd, F_GETFD);
    return flags >= 0 && ::fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) == 0;
  }
  return ::dup2(fd, target) == target;
}

mode_t UmaskFromEnv(const pb::JobSpec& spec) {
  for (const auto& entry : spec.environment()) {
    if (entry.rfind("SLURM_UMASK=", 0) != 0) continue;
    const char* text = entry.c_str() + 12;
    char* end = nullptr;
    long v = std::strtol(text, &end, 8);
    if (end != text && *end == '\0' && v >= 0 && v <= 0777) return static_cast<mode_t>(v);
  }
  return 022;
}

// Runs in the forked child: become the user, set up stdio and exec the script. Never returns.
[[noreturn]] void RunJobChild(const pb::LaunchBatchRequest& launch, const StepdOptions& opts,
                              const std::string& script_path, int err_fd, NodeCgroups* cg) {
  ResetSignals();
  CloexecFrom3();   // nothing of ours (sockets, epoll, log) leaks into the job
  ::setpgid(0, 0);  // own process group: signals for the job reach every task
  // Into the batch step's cgroup while still root, before exec: everything the script starts
  // is tracked from its first instruction.
  if (cg) {
    Status joined = cg->Join(launch.job().job_id(), kCgBatchStep, 0);
    if (!joined.ok()) ChildFail(err_fd, "cgroup: " + joined.message());
  }
  const pb::JobRecord& job = launch.job();
  const pb::JobSpec& spec = job.spec();
  uid_t uid = spec.uid();
  gid_t gid = spec.gid();

  // The identity shoald resolved (no name-service modules loaded here), else our own lookup.
  std::string user = opts.user_name, home = opts.home, shell = opts.shell;
  if (user.empty()) {
    passwd pw{};
    passwd* found = nullptr;
    std::vector<char> buf(16384);
    int rc = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
    if (rc != 0 || found == nullptr)
      ChildFail(err_fd, "user id " + std::to_string(uid) + " not found on node " + opts.node_name);
    user = pw.pw_name;
    home = pw.pw_dir ? pw.pw_dir : "";
    shell = pw.pw_shell ? pw.pw_shell : "";
  }

  if (::setgid(gid) != 0)
    ChildFail(err_fd, "setgid(" + std::to_string(gid) + "): " + Errstr(errno));
  if (!opts.groups.empty()) {
    if (::setgroups(opts.groups.size(), opts.groups.data()) != 0)
      ChildFail(err_fd, "setgroups(" + user + "): " + Errstr(errno));
  } else if (::initgroups(user.c_str(), gid) != 0) {
    ChildFail(err_fd, "initgroups(" + user + "): " + Errstr(errno));
  }
  if (::setuid(uid) != 0)
    ChildFail(err_fd, "setuid(" + std::to_string(uid) + "): " + Errstr(errno));
  if (::getuid() != uid || ::geteuid() != uid || ::getgid() != gid || ::getegid() != gid)
    ChildFail(err_fd, "failed to drop privileges to uid " + std::to_string(uid));
  if (uid != 0 && ::setuid(0) == 0) ChildFail(err_fd, "privileges could be regained: refusing");

  ::umask(UmaskFromEnv(spec));

  std::string chdir_error;
  const std::string& work_dir = spec.work_dir();
  if (work_dir.empty() || ::chdir(work_dir.c_str()) != 0) {
    int err = work_dir.empty() ? ENOENT : errno;
    chdir_error = "shoal-stepd: error: couldn't chdir to `" + work_dir + "': " + Errstr(err) +
                  ": going to /tmp instead\n";
    if (::chdir("/tmp") != 0) ChildFail(err_fd, "chdir(/tmp): " + Errstr(errno));
  }

  OutputPatternContext ctx;
  ctx.job_id = job.job_id();
  bool is_array = job.array_job_id() != 0 && job.array_task_id() != kNoArrayTaskId;
  ctx.array_job_id = is_array ? job.array_job_id() : job.job_id();
  ctx.array_task_id = is_array ? job.array_task_id() : kNoArrayTaskId;
  ctx.node_name = opts.node_name;
  ctx.node_index = NodeIndex(job, opts.node_name);
  ctx.user_name = user;
  ctx.job_name = spec.name();

  // stdin
  std::string in_path =
      spec.std_in().empty() ? "/dev/null" : ExpandOutputPattern(spec.std_in(), ctx);
  int in_fd = ::open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in_fd < 0) ChildFail(err_fd, "Could not open stdin file " + in_path + ": " + Errstr(errno));
  // stdout
  std::string out_pattern =
      spec.std_out().empty() ? DefaultOutputPattern(is_array) : spec.std_out();
  std::string out_path = ExpandOutputPattern(out_pattern, ctx);
  int out_fd = OpenOutput(out_path, spec.open_mode_append());
  if (out_fd < 0)
    ChildFail(err_fd, "Could not open stdout file " + out_path + ": " + Errstr(errno));
  // stderr: the stdout file unless given (and different)
  int err_out_fd = -1;
  if (!spec.std_err().empty()) {
    std::string err_path = ExpandOutputPattern(spec.std_err(), ctx);
    if (err_path != out_path) {
      err_out_fd = OpenOutput(err_path, spec.open_mode_append());
      if (err_out_fd < 0)
        ChildFail(err_fd, "Could not open stderr file " + err_path + ": " + Errstr(errno));
    }
  }
  // Move onto 0/1/2 in an order that cannot clobber a descriptor still needed.
  int fds[3] = {in_fd, out_fd, err_out_fd < 0 ? out_fd : err_out_fd};
  for (int& fd : fds) {
    if (fd <= 2) {
      int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
      if (moved < 0) ChildFail(err_fd, "dup: " + Errstr(errno));
      fd = moved;
    }
  }
  for (int target = 0; target < 3; ++target)
    if (!MoveFd(fds[target], target)) ChildFail(err_fd, "dup2: " + Errstr(errno));
  if (!chdir_error.empty()) {
    ssize_t ignored = ::write(2, chdir_error.data(), chdir_error.size());
    (void)ignored;
  }

  NodeEnvInfo info;
  info.node_name = opts.node_name;
  info.conf_path = opts.conf_path;
  info.cluster_name = opts.cluster_name;
  info.task_pid = ::getpid();
  info.user_name = user;
  info.home = home;
  info.shell = shell;
  std::vector<std::string> env = BuildJobEnvironment(launch, info);
  // GPUs as this node numbers them: renumbered from 0 when the job only sees its own devices.
  uint32_t node_index = NodeIndex(job, opts.node_name);
  if (static_cast<int>(node_index) < job.gres_alloc_size()) {
    auto gpus = HeldDevices(LoadGresDevices(opts.spool), job.gres_alloc(node_index), "gpu");
    bool constrained = cg && cg->policy().constrain_devices;
    auto visible = BatchScriptGpus(spec.gpu_bind(), opts.node_name, gpus, constrained);
    OverrideEnv(env, GpuEnvironmentVars(gpus, visible, true, constrained));
  }
  // --cpu-bind / --hint / --mem-bind of the batch script (one task); verbose lines go to its
  // stderr, as in Slurm.
  if (std::string bind_error = BindBatchScript(spec, opts.node_name, &env); !bind_error.empty())
    ChildFail(err_fd, bind_error);
  RunTaskProlog(LoadTaskScripts(opts.conf_path).prolog, &env);  // as the user, may edit env

  std::vector<std::string> args;
  args.push_back(script_path);
  for (const auto& a : spec.argv()) args.push_back(a);
  std::string exe = script_path;
  if (!spec.container().empty()) {
    // sbatch --container: the script runs inside the OCI bundle (oci.conf's runtime).
    OciTask oci;
    oci.conf_path = opts.conf_path;
    oci.bundle = spec.container();
    oci.argv = args;
    oci.env = env;
    oci.work_dir = work_dir;
    oci.node_name = opts.node_name;
    oci.user_name = user;
    oci.job_id = job.job_id();
    oci.step_id = kCgBatchStep;
    oci.uid = uid;
    oci.gid = gid;
    oci.batch_script = true;
    auto plan = PrepareOciTask(oci);
    if (!plan.ok()) ChildFail(err_fd, plan.error());
    if (plan->create_start) {
      plan->kill_wait_s = launch.kill_wait_s();
      ::close(err_fd);  // launched: what follows is the job's own outcome
      RunOciCreateStart(*plan);
    }
    exe = "/bin/sh";
    args = {"/bin/sh", "-c", plan->run_cmd};
    env = plan->runtime_env;
  }
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  ::execve(exe.c_str(), argv.data(), envp.data());
  int err = errno;
  ChildFail(err_fd, "execve(" + exe + "): " + Errstr(err));
}

// --- the supervisor ----------------------------------------------------------------------------

class Stepd {
 public:
  explicit Stepd(StepdOptions opts)
      : opts_(std::move(opts)),
        job_dir_(JobDir(opts_.spool, opts_.job_id)),
        signals_(io_, SIGCHLD, SIGTERM, SIGINT),
        kill_timer_(io_),
        exit_timer_(io_) {}

  int Run() {
    if (!opts_.key_file.empty()) {
      auto key = ClusterKey::Load(opts_.key_file);
      if (key)
        key_ = std::move(*key);
      else
        Log("cannot load cluster key: %s", key.error().c_str());
    }
    WaitSignals();
    auto data = ReadWholeFile(job_dir_ + "/" + kLaunchFile);
    if (!data || !launch_.ParseFromString(*data)) {
      std::string why = data ? "malformed " + std::string(kLaunchFile) : data.error();
      LaunchFailed("cannot read launch request: " + why);
    } else {
      if (opts_.node_name.empty()) opts_.node_name = launch_.job().batch_host();
      if (opts_.node_name.empty()) opts_.node_name = ShortHostname();
      auto server = RpcServer::Listen(
          io_, "unix:" + job_dir_ + "/" + kStepdSocket,
          [this](const RpcConnectionPtr& conn, const pb::Credential& cred, const std::string& body,
                 Responder respond) { HandleRequest(conn, cred, body, std::move(respond)); },
          0600);
      if (server)
        server_ = std::move(*server);
      else
        Log("cannot serve %s: %s", kStepdSocket, server.error().c_str());
      // Read only now that the socket is served: a TerminateJob that shoald left before this
      // point is seen here, one after it reaches us through the socket.
      if (auto term = ReadWholeFile(job_dir_ + "/" + kTerminateFile)) {
        pb::TerminateJobRequest req;
        (void)req.ParseFromString(*term);
        EndedBeforeStart(req.reason());
      } else {
        StartJob();
      }
    }
    io_.run();
    ::unlink((job_dir_ + "/" + kStepdSocket).c_str());
    return 0;
  }

 private:
  void WaitSignals() {
    signals_.async_wait([this](const asio::error_code& ec, int sig) {
      if (ec) return;
      if (sig == SIGCHLD) {
        Reap();
      } else if (!finished_ && job_pid_ > 0) {
        Log("got signal %d: terminating the job", sig);
        Terminate("", launch_.kill_wait_s());
      }
      WaitSignals();
    });
  }

  // cgroups (proctrack/cgroup, task/cgroup): the job's cgroup and its batch step. False when
  // the configuration demands constraints that could not be set up (the launch fails).
  bool SetupCgroup() {
    std::string note;
    auto cg = NodeCgroups::Open(opts_.conf_path, opts_.node_name, opts_.spool, &note);
    if (!cg) {
      Log("job %u: %s", opts_.job_id, cg.error().c_str());
      return true;
    }
    if (!note.empty()) Log("job %u: %s", opts_.job_id, note.c_str());
    if (!*cg) return true;
    Status s =
        (*cg)->SetupStep(JobOnNodeFrom(launch_.job(), opts_.node_name), kCgBatchStep, nullptr);
    if (!s.ok()) {
      const CgroupPolicy& p = (*cg)->policy();
      if (p.constrain_cores || p.constrain_ram || p.constrain_devices) {
        LaunchFailed("cgroup setup failed: " + s.message());
        return false;
      }
      Log("job %u: cgroup setup failed, running without: %s", opts_.job_id, s.message().c_str());
      return true;
    }
    cg_ = std::move(*cg);
    return true;
  }

  // Reads the batch step's cgroup (OOM kills, CPU time, peak memory), then kills everything
  // left in the job's cgroup (every step: the job is over on this node) and removes it.
  void EndCgroup() {
    if (!cg_ || cg_ended_) return;
    cg_ended_ = true;
    cg_stats_ = cg_->Stats(opts_.job_id, kCgBatchStep);
    cg_->EndJob(opts_.job_id);
    if (cg_stats_.oom_kills > 0) {
      std::string msg = OomMessage(cg_stats_.oom_kills, std::to_string(opts_.job_id) + ".batch");
      Log("job %u: %s", opts_.job_id, msg.c_str());
      AppendToJobStderr(msg);
    }
  }

  // The job's stderr file (stdout's when not separate), appended to as the user: the path is
  // the user's to choose, so root never opens it.
  void AppendToJobStderr(const std::string& text) {
    const pb::JobRecord& job = launch_.job();
    const pb::JobSpec& spec = job.spec();
    passwd pw{};
    passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (::getpwuid_r(spec.uid(), &pw, buf.data(), buf.size(), &found) != 0 || !found) return;
    OutputPatternContext ctx;
    ctx.job_id = job.job_id();
    bool is_array = job.array_job_id() != 0 && job.array_task_id() != kNoArrayTaskId;
    ctx.array_job_id = is_array ? job.array_job_id() : job.job_id();
    ctx.array_task_id = is_array ? job.array_task_id() : kNoArrayTaskId;
    ctx.node_name = opts_.node_name;
    ctx.node_index = NodeIndex(job, opts_.node_name);
    ctx.user_name = pw.pw_name;
    ctx.job_name = spec.name();
    std::string pattern = !spec.std_err().empty()   ? spec.std_err()
                          : !spec.std_out().empty() ? spec.std_out()
                                                    : DefaultOutputPattern(is_array);
    std::string path = ExpandOutputPattern(pattern, ctx);
    if (!path.empty() && path[0] != '/') path = spec.work_dir() + "/" + path;
    pid_t pid = ::fork();
    if (pid == 0) {
      if (::setgid(spec.gid()) != 0 || ::setuid(spec.uid()) != 0) ::_exit(1);
      int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
      if (fd >= 0) {
        ssize_t n = ::write(fd, text.data(), text.size());
        (void)n;
      }
      ::_exit(0);
    }
    if (pid > 0) {
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  }

  void StartJob() {
    const pb::JobRecord& job = launch_.job();
    std::string script = job_dir_ + "/" + kScriptFile;
    if (!SetupCgroup()) return;
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) {
      LaunchFailed("pipe: " + Errstr(errno));
      return;
    }
    pid_t pid = ForkSignalsBlocked();
    if (pid < 0) {
      ::close(pipefd[0]);
      ::close(pipefd[1]);
      LaunchFailed("fork: " + Errstr(errno));
      return;
    }
    if (pid == 0) {
      ::close(pipefd[0]);
      RunJobChild(launch_, opts_, script, pipefd[1], cg_.get());
    }
    ::close(pipefd[1]);
    job_pid_ = pid;
    ::setpgid(pid, pid);  // also here, so signals sent right away reach the group
    (void)WriteFileAtomic(job_dir_ + "/job.pid", std::to_string(pid) + "\n", 0600, false);
    Log("job %u: started pid %d for uid %u", job.job_id(), static_cast<int>(pid), job.spec().uid());
    // The pipe reaches EOF when exec succeeds; otherwise it carries the failure text.
    pipe_ = std::make_unique<asio::posix::stream_descriptor>(io_, pipefd[0]);
    ReadPipe();
  }

  void ReadPipe() {
    pipe_->async_read_some(asio::buffer(pipe_buf_), [this](const asio::error_code& ec, size_t n) {
      if (!ec) {
        setup_error_.append(pipe_buf_, n);
        if (setup_error_.size() < 4096) return ReadPipe();
      }
      asio::error_code ignored;
      pipe_->close(ignored);
      pipe_done_ = true;
      if (!setup_error_.empty()) {
        Log("job %u: launch failed: %s", opts_.job_id, setup_error_.c_str());
        launch_failed_ = true;
        failure_ = setup_error_;
      }
      MaybeFinish();
    });
  }

  void Reap() {
    for (;;) {
      int status = 0;
      rusage ru{};
      pid_t pid = ::wait4(-1, &status, WNOHANG, &ru);
      if (pid <= 0) break;
      if (pid == job_pid_ && !job_exited_) {
        job_exited_ = true;
        wait_status_ = status;
        usage_ = ru;  // the batch shell and every descendant it waited for
        Log("job %u: batch shell exited, wait status 0x%x", opts_.job_id,
            static_cast<unsigned>(status));
      }
    }
    MaybeFinish();
  }

  void MaybeFinish() {
    if (job_exited_ && pipe_done_ && !finished_) Finish();
  }

  void HandleRequest(const RpcConnectionPtr& conn, const pb::Credential& cred,
                     const std::string& body, const Responder& respond) {
    if (conn->peer_uid() != 0) {
      respond(ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied"));
      return;
    }
    if (key_) {
      Status s = key_->Verify(cred, body, NowSeconds());
      if (!s.ok() || cred.uid() != 0) {
        respond(ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied"));
        return;
      }
    }
    pb::Request req;
    if (!req.ParseFromString(body)) {
      respond(ErrorResponse(ErrorCode::kProtocol, "malformed request"));
      return;
    }
    pb::Response ok;
    switch (req.body_case()) {
      case pb::Request::kSignalJob: {
        const auto& sig = req.signal_job();
        if (!finished_ && !job_exited_ && job_pid_ > 0) {
          pid_t target = sig.batch_only() ? job_pid_ : -job_pid_;
          if (::kill(target, sig.signal()) != 0 && errno != ESRCH) {
            respond(ErrorResponse(ErrorCode::kInvalidArgument,
                                  "kill(" + std::to_string(sig.signal()) + "): " + Errstr(errno)));
            return;
          }
          Log("job %u: signal %d sent to %s", opts_.job_id, sig.signal(),
              sig.batch_only() ? "the batch shell" : "the job");
        }
        respond(ok);
        return;
      }
      case pb::Request::kTerminateJob: {
        const auto& term = req.terminate_job();
        Terminate(term.reason(), term.kill_wait_s());
        respond(ok);
        return;
      }
      case pb::Request::kPing:
        respond(ok);
        return;
      default:
        respond(ErrorResponse(ErrorCode::kNotSupported, "request not supported by shoal-stepd"));
        return;
    }
  }

  void Terminate(const std::string& reason, uint32_t kill_wait_s) {
    if (finished_ || job_exited_ || job_pid_ <= 0) return;
    if (terminating_) {
      if (kill_wait_s == 0) KillJob();
      return;
    }
    terminating_ = true;
    term_reason_ = reason;
    if (kill_wait_s == 0) kill_wait_s = launch_.kill_wait_s();  // not given: KillWait at launch
    Log("job %u: terminating (%s), KillWait %us", opts_.job_id,
        reason.empty() ? "no reason" : reason.c_str(), kill_wait_s);
    ::kill(-job_pid_, SIGCONT);
    ::kill(-job_pid_, SIGTERM);
    kill_timer_.expires_after(std::chrono::seconds(kill_wait_s));
    kill_timer_.async_wait([this](const asio::error_code& ec) {
      if (!ec) KillJob();
    });
  }

  void KillJob() {
    if (job_pid_ > 0 && !job_exited_) ::kill(-job_pid_, SIGKILL);
  }

  // Kills whatever the job left behind: its process group, then any descendant that was
  // re-parented to us (we are a child subreaper), which also catches setsid() daemons as long as
  // they stay below us. Bounded: at most ~200 ms of sweeping.
  void KillLeftovers() {
    if (job_pid_ > 0) ::kill(-job_pid_, SIGKILL);
    KillReparentedChildren();
  }

  // Terminated (cancelled, timed out, ...) before the script started: it never does, and the
  // job ends as if killed by SIGTERM.
  void EndedBeforeStart(const std::string& reason) {
    Log("job %u: terminated (%s) before its script started", opts_.job_id,
        reason.empty() ? "no reason" : reason.c_str());
    never_started_ = true;
    term_reason_ = reason;
    wait_status_ = SIGTERM;
    job_exited_ = true;
    pipe_done_ = true;
    asio::post(io_, [this] { MaybeFinish(); });
  }

  void LaunchFailed(const std::string& why) {
    Log("job %u: launch failed: %s", opts_.job_id, why.c_str());
    launch_failed_ = true;
    failure_ = why;
    job_exited_ = true;
    pipe_done_ = true;
    // Report from the loop so Run() has set everything up.
    asio::post(io_, [this] { MaybeFinish(); });
  }

  // TaskEpilog after the batch script, as the user, with the job's environment.
  void RunBatchTaskEpilog() {
    if (launch_failed_ || never_started_) return;
    std::string program = LoadTaskScripts(opts_.conf_path).epilog;
    if (program.empty()) return;
    const pb::JobSpec& spec = launch_.job().spec();
    std::vector<std::string> env(spec.environment().begin(), spec.environment().end());
    for (const auto& e : launch_.extra_env()) env.push_back(e);
    env.push_back("SLURMD_NODENAME=" + opts_.node_name);
    RunTaskEpilog(program, spec.uid(), spec.gid(), env, spec.work_dir(), 60);
  }

  void Finish() {
    finished_ = true;
    kill_timer_.cancel();
    KillLeftovers();
    RunBatchTaskEpilog();
    EndCgroup();
    pb::JobCompleteRequest done;
    done.set_node_name(opts_.node_name);
    done.set_job_id(opts_.job_id);
    done.set_exit_status(launch_failed_ && wait_status_ == 0 ? (1 << 8) : wait_status_);
    done.set_timed_out(term_reason_ == "timeout");
    done.set_cancelled(term_reason_ == "cancelled");
    done.set_launch_failed(launch_failed_);
    done.set_failure(failure_);
    done.set_end_time(NowSeconds());
    done.set_user_cpu_usec(uint64_t(usage_.ru_utime.tv_sec) * 1000000 + usage_.ru_utime.tv_usec);
    done.set_sys_cpu_usec(uint64_t(usage_.ru_stime.tv_sec) * 1000000 + usage_.ru_stime.tv_usec);
    done.set_max_rss_kb(static_cast<uint64_t>(usage_.ru_maxrss));
    if (cg_stats_.has_cpu) {  // the whole batch step, daemons included
      done.set_user_cpu_usec(cg_stats_.user_usec);
      done.set_sys_cpu_usec(cg_stats_.sys_usec);
    }
    if (cg_stats_.max_rss_bytes > 0) done.set_max_rss_kb(cg_stats_.max_rss_bytes / 1024);
    done.set_oom(cg_stats_.oom_kills > 0);
    // Slurm shows an OOM-killed batch step as ExitCode 0:125 whatever the shell returned.
    if (done.oom() && !launch_failed_) done.set_exit_status(125);
    // Atomic, not fsynced: done.pb hands the result to shoald across a shoald restart, which the
    // page cache covers. A power loss ends the job's node anyway; shoald's scan then reports the
    // job failed (as for any supervisor gone without a result). Two fsyncs on every job's
    // critical path bought nothing else.
    Status s = WriteFileAtomic(job_dir_ + "/" + kDoneFile, done.SerializeAsString(), 0600,
                               /*sync=*/false);
    if (!s.ok()) Log("job %u: cannot write %s: %s", opts_.job_id, kDoneFile, s.message().c_str());
    Log("job %u: done, exit status 0x%x%s%s%s", opts_.job_id,
        static_cast<unsigned>(done.exit_status()), done.timed_out() ? " (timeout)" : "",
        done.cancelled() ? " (cancelled)" : "", launch_failed_ ? " (launch failed)" : "");
    Notify(done);
  }

  // Best effort: if shoald is down it finds done.pb when it scans the spool.
  void Notify(const pb::JobCompleteRequest& done) {
    exit_timer_.expires_after(std::chrono::seconds(3));
    exit_timer_.async_wait([this](const asio::error_code& ec) {
      if (!ec) Exit();
    });
    pb::Request req;
    *req.mutable_job_complete() = done;
    std::string body = req.SerializeAsString();
    pb::Credential cred;
    if (key_) cred = key_->Sign(0, 0, body, NowSeconds());
    RpcConnect(
        io_, "unix:" + opts_.spool + "/" + kShoaldSocket,
        [](const RpcConnectionPtr&, const pb::Credential&, const std::string&, Responder respond) {
          respond(ErrorResponse(ErrorCode::kNotSupported, "not supported"));
        },
        [this, req, cred](Result<RpcConnectionPtr> conn) {
          if (!conn) {
            Log("shoald not reachable (%s); it will find %s later", conn.error().c_str(),
                kDoneFile);
            return Exit();
          }
          notify_conn_ = *conn;
          notify_conn_->Send(req, cred, [this](Result<pb::Response> r) {
            if (!r || r->rc() != 0)
              Log("shoald did not take the completion: %s",
                  r ? r->error().c_str() : r.error().c_str());
            Exit();
          });
        });
  }

  void Exit() {
    if (exiting_) return;
    exiting_ = true;
    if (server_) server_->Stop();
    if (notify_conn_) notify_conn_->Close();
    exit_timer_.cancel();
    io_.stop();
  }

  StepdOptions opts_;
  std::string job_dir_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::steady_timer kill_timer_;
  asio::steady_timer exit_timer_;
  std::unique_ptr<RpcServer> server_;
  std::unique_ptr<asio::posix::stream_descriptor> pipe_;
  char pipe_buf_[512];
  RpcConnectionPtr notify_conn_;
  std::optional<ClusterKey> key_;
  pb::LaunchBatchRequest launch_;
  pid_t job_pid_ = 0;
  bool job_exited_ = false;
  bool pipe_done_ = false;
  bool finished_ = false;
  bool exiting_ = false;
  bool terminating_ = false;
  bool never_started_ = false;  // terminate.pb was there before the script started
  int wait_status_ = 0;
  rusage usage_{};
  std::string term_reason_;
  bool launch_failed_ = false;
  std::string failure_;
  std::string setup_error_;
  std::unique_ptr<NodeCgroups> cg_;
  bool cg_ended_ = false;
  CgroupStats cg_stats_;
};

}  // namespace

Result<StepdOptions> ParseStepdArgs(const std::vector<std::string>& args) {
  StepdOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& out) -> bool {
      if (i + 1 >= args.size()) return false;
      out = args[++i];
      return true;
    };
    std::string v;
    bool ok = true;
    if (a == "--spool") {
      ok = value(o.spool);
    } else if (a == "--job") {
      ok = value(v);
      if (ok) {
        char* end = nullptr;
        unsigned long id = std::strtoul(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || id == 0 || id > 0xffffffffUL)
          return InvalidArgument("invalid job id '" + v + "'");
        o.job_id = static_cast<uint32_t>(id);
      }
    } else if (a == "--node") {
      ok = value(o.node_name);
    } else if (a == "--conf") {
      ok = value(o.conf_path);
    } else if (a == "--key") {
      ok = value(o.key_file);
    } else if (a == "--cluster") {
      ok = value(o.cluster_name);
    } else if (a == "--step") {
      ok = value(v);
      if (ok) {
        char* end = nullptr;
        unsigned long id = std::strtoul(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || id > 0xffffffffUL)
          return InvalidArgument("invalid step id '" + v + "'");
        o.has_step = true;
        o.step_id = static_cast<uint32_t>(id);
      }
    } else if (a == "--user") {
      ok = value(o.user_name);
    } else if (a == "--home") {
      ok = value(o.home);
    } else if (a == "--shell") {
      ok = value(o.shell);
    } else if (a == "--groups") {
      ok = value(v);
      if (ok) {
        auto groups = ParseGroupList(v);
        if (!groups) return groups.status();
        o.groups = std::move(*groups);
      }
    } else {
      return InvalidArgument("unknown argument '" + a + "'");
    }
    if (!ok) return InvalidArgument("option " + a + " needs a value");
  }
  if (o.spool.empty() || o.job_id == 0) return InvalidArgument("--spool and --job are required");
  if (o.user_name.empty() != o.groups.empty())
    return InvalidArgument("--user and --groups go together");
  return o;
}

int StepdMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto opts = ParseStepdArgs(args);
  if (!opts) {
    std::fprintf(stderr,
                 "shoal-stepd: error: %s\nusage: shoal-stepd --spool DIR --job ID [--node NAME] "
                 "[--conf PATH] [--key PATH] [--cluster NAME]\n",
                 opts.error().c_str());
    return 2;
  }
  ::setsid();  // fails harmlessly when shoald already made us a session leader
  ::umask(022);
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);
  std::string job_dir = opts->has_step ? StepDir(opts->spool, opts->job_id, opts->step_id)
                                       : JobDir(opts->spool, opts->job_id);
  int log_fd =
      ::open((job_dir + "/" + kStepdLog).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd >= 0) {
    ::dup2(log_fd, 2);
    ::close(log_fd);
  }
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    ::dup2(null_fd, 0);
    ::dup2(null_fd, 1);
    if (null_fd > 2) ::close(null_fd);
  }
  Status s = WriteFileAtomic(job_dir + "/" + kStepdPidFile, std::to_string(::getpid()) + "\n", 0600,
                             false);
  if (!s.ok()) Log("cannot write %s: %s", kStepdPidFile, s.message().c_str());
  // Orphaned descendants of the job are re-parented to us, so none escapes the final sweep.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  if (opts->has_step) return RunStepSupervisor(*opts);
  Stepd stepd(std::move(*opts));
  return stepd.Run();
}

}  // namespace shoal::noded
