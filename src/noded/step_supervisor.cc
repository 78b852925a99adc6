#include "noded/step_supervisor.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <asio.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>

#include "common/auth.h"
#include "common/rpc.h"
#include "noded/cgroup/job_cgroup.h"
#include "noded/cpu_bind.h"
#include "noded/gpu_bind.h"
#include "noded/multi_prog.h"
#include "noded/oci_run.h"
#include "noded/output_pattern.h"
#include "noded/pmi_server.h"
#include "noded/pmix_server.h"
#include "noded/step_env.h"
#include "noded/task_binding.h"
#include "noded/task_prolog.h"
#include "noded/util.h"

namespace shoal::noded {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr size_t kReadChunk = 64 * 1024;
// Output is read no faster than srun takes it: above this much queued, reading pauses.
constexpr size_t kMaxQueuedOutput = 8u << 20;

std::string Errstr(int err) { return std::strerror(err); }

void WriteAllFd(int fd, const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// PATH lookup with the task's own PATH, as the user (after setuid), like execvp.
std::string FindExecutable(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : env)
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t colon = path.find(':', pos);
    std::string dir =
        path.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (::access(candidate.c_str(), X_OK) == 0 && ::stat(candidate.c_str(), &st) == 0 &&
        S_ISREG(st.st_mode))
      return candidate;
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  return "";
}

// One task of this node.
struct Task {
  uint32_t global_id = 0;
  uint32_t local_id = 0;
  pid_t pid = 0;
  bool started = false;
  bool exited = false;
  int status = 0;
  rusage usage{};
  std::unique_ptr<asio::posix::stream_descriptor> out, err, in, pmi;
  std::deque<std::string> stdin_queue;
  bool stdin_writing = false;
  bool stdin_eof = false;
  bool pty = false;
  std::vector<char> out_buf, err_buf, pmi_buf;
  std::deque<std::string> pmi_queue;
  bool pmi_writing = false;
};

class StepSupervisor {
 public:
  explicit StepSupervisor(StepdOptions opts)
      : opts_(std::move(opts)),
        dir_(StepDir(opts_.spool, opts_.job_id, opts_.step_id)),
        signals_(io_, SIGCHLD, SIGTERM, SIGINT),
        kill_timer_(io_),
        limit_timer_(io_),
        drain_timer_(io_),
        exit_timer_(io_) {}

  int Run() {
    if (!opts_.key_file.empty()) {
      if (auto key = ClusterKey::Load(opts_.key_file))
        key_ = std::move(*key);
      else
        Log("cannot load cluster key: %s", key.error().c_str());
    }
    WaitSignals();
    auto data = ReadWholeFile(dir_ + "/" + kLaunchFile);
    if (!data || !launch_.ParseFromString(*data) || !cred_.ParseFromString(launch_.cred().body())) {
      Log("step %u.%u: cannot read %s", opts_.job_id, opts_.step_id, kLaunchFile);
      return 1;
    }
    if (opts_.node_name.empty()) opts_.node_name = ShortHostname();
    for (uint32_t gid : launch_.global_task_ids()) {
      auto t = std::make_unique<Task>();
      t->global_id = gid;
      t->local_id = static_cast<uint32_t>(tasks_.size());
      tasks_.push_back(std::move(t));
    }
    auto server = RpcServer::Listen(
        io_, "unix:" + dir_ + "/" + kStepdSocket,
        [this](const RpcConnectionPtr& conn, const pb::Credential& cred, const std::string& body,
               Responder respond) { HandleShoald(conn, cred, body, std::move(respond)); },
        0600);
    if (server)
      server_ = std::move(*server);
    else
      Log("cannot serve %s: %s", kStepdSocket, server.error().c_str());
    ConnectToSrun();
    io_.run();
    ::unlink((dir_ + "/" + kStepdSocket).c_str());
    return 0;
  }

 private:
  // ------------------------------------------------------------------------------------------
  // srun's I/O stream
  // ------------------------------------------------------------------------------------------

  void ConnectToSrun() {
    RpcConnect(
        io_, launch_.io_address(),
        [this](const RpcConnectionPtr&, const pb::Credential&, const std::string& body, Responder) {
          HandleSrun(body);
        },
        [this](Result<RpcConnectionPtr> conn) {
          if (!conn) {
            Log("step %u.%u: cannot reach srun at %s: %s; nothing started", opts_.job_id,
                opts_.step_id, launch_.io_address().c_str(), conn.error().c_str());
            return Exit();
          }
          srun_ = *conn;
          srun_->OnClose([this] { SrunGone(); });
          pb::Request hello;
          auto* h = hello.mutable_io_hello();
          h->set_job_id(opts_.job_id);
          h->set_step_id(opts_.step_id);
          h->set_node_id(launch_.node_id());
          h->set_node_name(opts_.node_name);
          h->set_io_key(launch_.io_key());
          for (const auto& t : tasks_) h->add_task_ids(t->global_id);
          std::string error = SetUpMpi();
          if (!error.empty()) h->set_launch_error(error);
          srun_->Post(hello);
          if (!error.empty()) {
            Log("step %u.%u: %s", opts_.job_id, opts_.step_id, error.c_str());
            launch_failed_ = true;
            for (auto& t : tasks_) t->exited = true;
            MaybeFinish();
            return;
          }
          StartTasks();
          ArmLimits();
        });
  }

  void Post(const pb::Request& req) {
    if (srun_ && !srun_->closed()) srun_->Post(req);
  }

  // Frames from srun after the hello: stdin, signals, fence answers, window size.
  void HandleSrun(const std::string& body) {
    pb::Request req;
    if (!req.ParseFromString(body)) return;
    switch (req.body_case()) {
      case pb::Request::kIoData: {
        const auto& d = req.io_data();
        for (auto& t : tasks_) {
          if (t->global_id != d.task_id() || !t->in) continue;
          if (!d.data().empty()) t->stdin_queue.push_back(d.data());
          if (d.eof()) t->stdin_eof = true;
          WriteStdin(*t);
        }
        return;
      }
      case pb::Request::kStepSignal: {
        const auto& s = req.step_signal();
        if (s.terminate())
          Terminate(launch_.kill_wait_s());
        else
          SignalTasks(s.signal());
        return;
      }
      case pb::Request::kFenceOut: {
        const auto& f = req.fence_out();
        std::vector<std::string> all(f.data().begin(), f.data().end());
        if (pmix_) {
          pmix_->CompleteFence(f.seq(), all);
        } else if (pmi_) {
          pmi_->CompleteFence(all);
          FlushPmiReplies();
          CheckPmiEvents();  // a rank may already wait in the next fence
        }
        return;
      }
      case pb::Request::kPtyResize: {
        for (auto& t : tasks_) {
          if (!t->pty || !t->in) continue;
          winsize ws{};
          ws.ws_row = static_cast<unsigned short>(req.pty_resize().rows());
          ws.ws_col = static_cast<unsigned short>(req.pty_resize().cols());
          ::ioctl(t->in->native_handle(), TIOCSWINSZ, &ws);
        }
        return;
      }
      default:
        return;
    }
  }

  void SrunGone() {
    if (done_) return;
    Log("step %u.%u: lost srun; terminating the step", opts_.job_id, opts_.step_id);
    srun_lost_ = true;
    Terminate(launch_.kill_wait_s());
    MaybeFinish();
  }

  // ------------------------------------------------------------------------------------------
  // Requests from shoald (scancel, job end, time limit)
  // ------------------------------------------------------------------------------------------

  void HandleShoald(const RpcConnectionPtr& conn, const pb::Credential& cred,
                    const std::string& body, const Responder& respond) {
    if (conn->peer_uid() != 0 ||
        (key_ && (!key_->Verify(cred, body, NowSeconds()).ok() || cred.uid() != 0))) {
      respond(ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied"));
      return;
    }
    pb::Request req;
    if (!req.ParseFromString(body)) {
      respond(ErrorResponse(ErrorCode::kProtocol, "malformed request"));
      return;
    }
    if (req.has_signal_job()) {
      SignalTasks(req.signal_job().signal());
    } else if (req.has_terminate_job()) {
      cancelled_ = true;
      Terminate(req.terminate_job().kill_wait_s());
    } else if (!req.has_ping()) {
      respond(ErrorResponse(ErrorCode::kNotSupported, "request not supported by shoal-stepd"));
      return;
    }
    respond(pb::Response());
  }

  // ------------------------------------------------------------------------------------------
  // MPI
  // ------------------------------------------------------------------------------------------

  // Returns an error text when the requested MPI support cannot be set up.
  std::string SetUpMpi() {
    const std::string& mpi = launch_.step().mpi();
    std::vector<std::vector<uint32_t>> ranks_by_node;
    uint32_t next = 0;
    for (uint32_t n : launch_.step().tasks_per_node()) {
      std::vector<uint32_t> ranks;
      for (uint32_t i = 0; i < n; ++i) ranks.push_back(next++);
      ranks_by_node.push_back(std::move(ranks));
    }
    if (mpi == "pmi2" || mpi == "pmi1") {
      PmiStepInfo info;
      info.job_id = opts_.job_id;
      info.step_id = opts_.step_id;
      info.size = launch_.step().num_tasks();
      info.tasks_per_node.assign(launch_.step().tasks_per_node().begin(),
                                 launch_.step().tasks_per_node().end());
      info.node_id = launch_.node_id();
      for (const auto& t : tasks_) info.local_ranks.push_back(t->global_id);
      info.node_ranks = ranks_by_node;
      pmi_ = std::make_unique<PmiServer>(std::move(info));
      return "";
    }
    if (mpi.rfind("pmix", 0) == 0) {
      PmixStepInfo info;
      info.job_id = opts_.job_id;
      info.step_id = opts_.step_id;
      info.uid = launch_.step().uid();
      info.gid = launch_.gid();
      info.nodes.assign(launch_.step().nodes().begin(), launch_.step().nodes().end());
      info.ranks_by_node = ranks_by_node;
      info.node_id = launch_.node_id();
      info.tmpdir = dir_;
      PmixCallbacks cb;
      cb.post = [this](std::function<void()> fn) { asio::post(io_, std::move(fn)); };
      cb.fence = [this](uint32_t seq, std::string data) {
        pb::Request req;
        req.mutable_fence_in()->set_seq(seq);
        req.mutable_fence_in()->set_data(std::move(data));
        Post(req);
      };
      cb.abort = [this](uint32_t rank, int status, std::string message) {
        ReportAbort(rank, status, message);
      };
      auto server = PmixServer::Start(info, std::move(cb));
      if (!server) return "PMIx: " + server.error();
      pmix_ = std::move(*server);
      return "";
    }
    return "";
  }

  void ReportAbort(uint32_t rank, int code, const std::string& message) {
    Log("step %u.%u: rank %u aborted (%d): %s", opts_.job_id, opts_.step_id, rank, code,
        message.c_str());
    pb::Request req;
    auto* a = req.mutable_step_abort();
    a->set_task_id(rank);
    a->set_exit_code(code);
    a->set_message(message);
    Post(req);
  }

  void ReadPmi(Task& t) {
    t.pmi_buf.resize(4096);
    t.pmi->async_read_some(asio::buffer(t.pmi_buf),
                           [this, &t](const asio::error_code& ec, size_t n) {
                             if (ec) {
                               pmi_->OnClosed(t.global_id);
                               asio::error_code ignored;
                               t.pmi->close(ignored);
                               CheckPmiEvents();
                               return;
                             }
                             pmi_->OnBytes(t.global_id, std::string_view(t.pmi_buf.data(), n));
                             // Replies first (a rank may finalize and close at once), then aborts
                             // and fences.
                             FlushPmiReplies();
                             CheckPmiEvents();
                             if (pmi_->Broken(t.global_id)) {
                               // It broke the protocol: it is no longer served, and must not wait
                               // forever.
                               asio::error_code ignored;
                               t.pmi->close(ignored);
                               return;
                             }
                             if (t.pmi && t.pmi->is_open()) ReadPmi(t);
                           });
  }

  void CheckPmiEvents() {
    while (auto abort = pmi_->TakeAbort())
      ReportAbort(abort->rank, abort->exit_code, abort->message);
    if (pmi_->FenceReady()) {
      pb::Request req;
      req.mutable_fence_in()->set_seq(++pmi_fence_seq_);
      req.mutable_fence_in()->set_data(pmi_->TakeFenceContribution());
      Post(req);
    }
  }

  void FlushPmiReplies() {
    for (auto& t : tasks_) {
      if (!t->pmi || !t->pmi->is_open()) continue;
      std::string out = pmi_->TakeReplies(t->global_id);
      if (out.empty()) continue;
      t->pmi_queue.push_back(std::move(out));
      WritePmi(*t);
    }
  }

  void WritePmi(Task& t) {
    if (t.pmi_writing || t.pmi_queue.empty() || !t.pmi || !t.pmi->is_open()) return;
    t.pmi_writing = true;
    asio::async_write(*t.pmi, asio::buffer(t.pmi_queue.front()),
                      [this, &t](const asio::error_code& ec, size_t) {
                        t.pmi_writing = false;
                        if (ec) {
                          t.pmi_queue.clear();
                          return;
                        }
                        t.pmi_queue.pop_front();
                        if (t.pmi_queue.empty()) {
                          // Replies held back while this rank's socket was full.
                          std::string more = pmi_->TakeReplies(t.global_id);
                          if (!more.empty()) t.pmi_queue.push_back(std::move(more));
                        }
                        WritePmi(t);
                      });
  }

  // ------------------------------------------------------------------------------------------
  // Tasks
  // ------------------------------------------------------------------------------------------

  void StartTasks() {
    uid_t uid = launch_.step().uid();
    if (!opts_.user_name.empty()) {  // as shoald resolved it (user_groups.h)
      user_ = opts_.user_name;
      home_ = opts_.home;
      shell_ = opts_.shell;
    } else {
      std::vector<char> buf(16384);
      passwd pw{};
      passwd* found = nullptr;
      if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || !found) {
        FailAll("user id " + std::to_string(uid) + " not found on node " + opts_.node_name);
        return;
      }
      user_ = pw.pw_name;
      home_ = pw.pw_dir ? pw.pw_dir : "";
      shell_ = pw.pw_shell ? pw.pw_shell : "";
    }
    if (!SetupCgroup()) return;
    cpu_masks_ = TaskCpuMasks(CpuBind(), static_cast<uint32_t>(tasks_.size()),
                              launch_.cpus_per_task(), CpusOfThisProcess());
    SetupGpuBinding();
    for (auto& t : tasks_) StartTask(*t);
    Log("step %u.%u: started %zu task(s) for uid %u", opts_.job_id, opts_.step_id, tasks_.size(),
        uid);
    MaybeFinish();
  }

  // srun's --cpu-bind, else what the controller put in the step (the job's --hint).
  const std::string& CpuBind() const {
    return launch_.cpu_bind().empty() ? launch_.step().cpu_bind() : launch_.cpu_bind();
  }

  void FailAll(const std::string& why) {
    for (auto& t : tasks_) {
      pb::Request req;
      req.mutable_task_exit()->add_task_ids(t->global_id);
      req.mutable_task_exit()->set_status(1 << 8);
      req.mutable_task_exit()->set_error(why);
      Post(req);
      t->exited = true;
      t->status = 1 << 8;
    }
    launch_failed_ = true;
    MaybeFinish();
  }

  // Which tasks read srun's stdin: all by default (as Slurm does), none, or the one given.
  bool TakesStdin(const Task& t) const {
    const std::string& mode = launch_.stdin_mode();
    if (mode.empty() || mode == "all") return !launch_.pty() || t.global_id == 0;
    if (mode == "none") return false;
    char* end = nullptr;
    unsigned long id = std::strtoul(mode.c_str(), &end, 10);
    if (end != mode.c_str() && *end == '\0') return id == t.global_id;
    return false;  // a file: opened by the task itself
  }

  OutputPatternContext PatternContext(const Task& t) const {
    OutputPatternContext ctx;
    ctx.job_id = opts_.job_id;
    ctx.array_job_id = opts_.job_id;
    ctx.step = std::to_string(opts_.step_id);
    ctx.node_name = opts_.node_name;
    ctx.node_index = launch_.node_id();
    ctx.task_id = t.global_id;
    ctx.user_name = user_;
    ctx.job_name = launch_.step().name();
    return ctx;
  }

  // argv for a task: the step's command, or its line of the --multi-prog configuration.
  std::vector<std::string> TaskArgv(const Task& t, std::string* error) const {
    std::vector<std::string> argv(launch_.step().argv().begin(), launch_.step().argv().end());
    if (launch_.multi_prog().empty()) return argv;
    auto line = MultiProgArgv(launch_.multi_prog(), t.global_id, t.local_id);
    if (!line) {
      *error = line.error();
      return {};
    }
    return *line;
  }

  void StartTask(Task& t) {
    bool pty = launch_.pty() && t.global_id == 0;
    bool file_out = !launch_.stdout_pattern().empty();
    bool file_err = !launch_.stderr_pattern().empty();
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, in_pipe[2] = {-1, -1},
        pmi_pair[2] = {-1, -1};
    int pty_master = -1;
    std::string pty_slave;
    auto close_all = [&] {
      for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], in_pipe[0], in_pipe[1],
                     pmi_pair[0], pmi_pair[1], pty_master})
        if (fd >= 0) ::close(fd);
    };
    bool ok = true;
    if (pty) {
      pty_master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (pty_master < 0 || ::grantpt(pty_master) != 0 || ::unlockpt(pty_master) != 0) {
        ok = false;
      } else {
        char name[128];
        if (::ptsname_r(pty_master, name, sizeof(name)) != 0) ok = false;
        pty_slave = name;
        winsize ws{};
        ws.ws_row = static_cast<unsigned short>(launch_.pty_rows() ? launch_.pty_rows() : 24);
        ws.ws_col = static_cast<unsigned short>(launch_.pty_cols() ? launch_.pty_cols() : 80);
        ::ioctl(pty_master, TIOCSWINSZ, &ws);
      }
    } else {
      if (!file_out && ::pipe2(out_pipe, O_CLOEXEC) != 0) ok = false;
      if (!file_err && ::pipe2(err_pipe, O_CLOEXEC) != 0) ok = false;
      if (TakesStdin(t) && ::pipe2(in_pipe, O_CLOEXEC) != 0) ok = false;
    }
    if (pmi_ && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pmi_pair) != 0) ok = false;
    if (!ok) {
      close_all();
      TaskFailed(t, "cannot set up task I/O: " + Errstr(errno));
      return;
    }
    std::vector<std::string> extra;
    if (pmi_) {
      for (auto& e : pmi_->TaskEnvironment(t.global_id, pmi_pair[1])) extra.push_back(e);
    }
    if (pmix_) {
      auto env = pmix_->TaskEnvironment(t.global_id, launch_.step().uid(), launch_.gid());
      if (!env) {
        close_all();
        TaskFailed(t, "PMIx: " + env.error());
        return;
      }
      for (auto& e : *env) extra.push_back(e);
    }
    for (const auto& g : GpuEnvironment(t)) extra.push_back(g);
    std::string argv_error;
    std::vector<std::string> argv = TaskArgv(t, &argv_error);

    pid_t pid = ForkSignalsBlocked();
    if (pid < 0) {
      close_all();
      TaskFailed(t, "fork: " + Errstr(errno));
      return;
    }
    if (pid == 0) {
      RunTaskChild(t, argv, argv_error, extra, pty ? pty_slave : "", out_pipe[1], err_pipe[1],
                   in_pipe[0], pmi_pair[1]);
    }
    ::setpgid(pid, pid);
    t.pid = pid;
    t.started = true;
    // Parent ends.
    for (int fd : {out_pipe[1], err_pipe[1], in_pipe[0], pmi_pair[1]})
      if (fd >= 0) ::close(fd);
    if (pty) {
      t.pty = true;
      t.out = std::make_unique<asio::posix::stream_descriptor>(io_, pty_master);
      int dup = ::fcntl(pty_master, F_DUPFD_CLOEXEC, 3);
      t.in = std::make_unique<asio::posix::stream_descriptor>(io_, dup);
      ReadOutput(t, 1);
    } else {
      if (out_pipe[0] >= 0) {
        t.out = std::make_unique<asio::posix::stream_descriptor>(io_, out_pipe[0]);
        ReadOutput(t, 1);
      }
      if (err_pipe[0] >= 0) {
        t.err = std::make_unique<asio::posix::stream_descriptor>(io_, err_pipe[0]);
        ReadOutput(t, 2);
      }
      if (in_pipe[1] >= 0) t.in = std::make_unique<asio::posix::stream_descriptor>(io_, in_pipe[1]);
    }
    if (pmi_pair[0] >= 0) {
      t.pmi = std::make_unique<asio::posix::stream_descriptor>(io_, pmi_pair[0]);
      ReadPmi(t);
    }
  }

  // The step's GPUs here (the node's device list from shoald) and --gpu-bind's choice per task.
  void SetupGpuBinding() {
    uint32_t node = launch_.node_id();
    if (static_cast<int>(node) >= cred_.gres_alloc_size()) return;
    step_gpus_ = HeldDevices(LoadGresDevices(opts_.spool), cred_.gres_alloc(node), "gpu");
    gpus_constrained_ = cg_ && cg_->policy().constrain_devices;
    std::string err;
    if (!ParseGpuBind(launch_.step().gpu_bind(), gpu_bind_, &err)) {
      Log("step %u.%u: %s", opts_.job_id, opts_.step_id, err.c_str());
      return;
    }
    std::vector<std::vector<int>> task_cpus;
    for (const auto& m : cpu_masks_) {
      std::vector<int> cpus;
      unsigned long long bits = std::strtoull(m.c_str(), nullptr, 16);
      for (int c = 0; c < 64; ++c)
        if ((bits >> c) & 1ULL) cpus.push_back(c);
      task_cpus.push_back(std::move(cpus));
    }
    task_gpus_ = TaskGpus(gpu_bind_, static_cast<uint32_t>(tasks_.size()), step_gpus_, task_cpus,
                          gpus_constrained_);
  }

  // GPUs of the job on this node, as a task of the step sees them.
  std::vector<std::string> GpuEnvironment(const Task& t) const {
    std::vector<std::string> env;
    if (step_gpus_.empty()) {
      // No device list here (no gres.conf): the indexes the controller booked, as given.
      uint32_t node = launch_.node_id();
      if (static_cast<int>(node) >= cred_.gres_alloc_size()) return env;
      auto held = ParseGresAllocEntry(cred_.gres_alloc(node));  // "gpu:0,1"
      auto it = held.find("gpu");
      if (it == held.end() || it->second.empty()) return env;
      std::string ids;
      for (uint32_t i : it->second) ids += (ids.empty() ? "" : ",") + std::to_string(i);
      env.push_back("CUDA_VISIBLE_DEVICES=" + ids);
      env.push_back("SLURM_STEP_GPUS=" + ids);
      return env;
    }
    static const std::vector<size_t> kAll;
    const auto& visible = t.local_id < task_gpus_.size() ? task_gpus_[t.local_id] : kAll;
    return GpuEnvironmentVars(step_gpus_, visible, false, gpus_constrained_);
  }

  [[noreturn]] void RunTaskChild(const Task& t, const std::vector<std::string>& argv,
                                 const std::string& argv_error,
                                 const std::vector<std::string>& extra,
                                 const std::string& pty_slave, int out_fd, int err_fd, int in_fd,
                                 int pmi_fd) {
    ResetSignals();
    CloexecFrom3();
    auto fail = [&](const std::string& msg, int code) {
      std::string line = "shoal-stepd-" + opts_.node_name + ": error: " + msg + "\n";
      WriteAllFd(2, line);
      ::_exit(code);
    };
    bool stdin_file = false;
    if (!pty_slave.empty()) {
      ::setsid();
      int slave = ::open(pty_slave.c_str(), O_RDWR);
      if (slave < 0) ::_exit(126);
      ::ioctl(slave, TIOCSCTTY, 0);
      ::dup2(slave, 0);
      ::dup2(slave, 1);
      ::dup2(slave, 2);
      if (slave > 2) ::close(slave);
    } else {
      ::setpgid(0, 0);
      // stdin: srun's stream, a file, or /dev/null.
      int in = in_fd;
      const std::string& mode = launch_.stdin_mode();
      bool is_file = in < 0 && !mode.empty() && mode != "all" && mode != "none" &&
                     mode.find_first_not_of("0123456789") != std::string::npos;
      // A stdin file is opened later, as the user; until then /dev/null.
      stdin_file = is_file;
      if (in < 0) in = ::open("/dev/null", O_RDONLY);
      int out = out_fd, err = err_fd;
      // Per-task files (-o/-e) are opened as the user, below.
      if (in != 0) ::dup2(in, 0);
      if (out >= 0 && out != 1) ::dup2(out, 1);
      if (err >= 0 && err != 2) ::dup2(err, 2);
    }
    if (pmi_fd >= 0) {
      int flags = ::fcntl(pmi_fd, F_GETFD);
      ::fcntl(pmi_fd, F_SETFD, flags & ~FD_CLOEXEC);
    }
    // Into the step's cgroup while still root, before any CPU mask (a cpuset resets it).
    if (cg_) {
      Status joined = cg_->Join(opts_.job_id, opts_.step_id, 0);
      if (!joined.ok()) fail("cgroup: " + joined.message(), 1);
    }
    // Become the user.
    uid_t uid = launch_.step().uid();
    gid_t gid = launch_.gid();
    if (::setgid(gid) != 0) fail("setgid: " + Errstr(errno), 1);
    // The groups shoald resolved for this step (see user_groups.h), else the name service.
    if (!opts_.groups.empty()) {
      if (::setgroups(opts_.groups.size(), opts_.groups.data()) != 0)
        fail("setgroups: " + Errstr(errno), 1);
    } else if (::initgroups(user_.c_str(), gid) != 0) {
      fail("initgroups: " + Errstr(errno), 1);
    }
    if (::setuid(uid) != 0) fail("setuid: " + Errstr(errno), 1);
    if (uid != 0 && ::setuid(0) == 0) fail("privileges could be regained: refusing", 1);
    ::umask(022);
    for (const auto& e : launch_.environment()) {
      if (e.rfind("SLURM_UMASK=", 0) != 0) continue;
      long v = std::strtol(e.c_str() + 12, nullptr, 8);
      if (v >= 0 && v <= 0777) ::umask(static_cast<mode_t>(v));
    }
    const std::string& work_dir = launch_.work_dir();
    if (work_dir.empty() || ::chdir(work_dir.c_str()) != 0) {
      WriteAllFd(2, "shoal-stepd: error: couldn't chdir to `" + work_dir + "': " +
                        Errstr(work_dir.empty() ? ENOENT : errno) + ": going to /tmp instead\n");
      if (::chdir("/tmp") != 0) ::_exit(1);
    }
    // Files, as the user, relative to the working directory.
    if (stdin_file) {
      std::string path = ExpandOutputPattern(launch_.stdin_mode(), PatternContext(t));
      int fd = ::open(path.c_str(), O_RDONLY);
      if (fd < 0) fail("Could not open stdin file " + path + ": " + Errstr(errno), 1);
      ::dup2(fd, 0);
      ::close(fd);
    }
    if (pty_slave.empty()) {
      int flags = O_WRONLY | O_CREAT | (launch_.open_mode_append() ? O_APPEND : O_TRUNC);
      std::string out_path;
      if (!launch_.stdout_pattern().empty()) {
        out_path = ExpandOutputPattern(launch_.stdout_pattern(), PatternContext(t));
        int fd = ::open(out_path.c_str(), flags, 0666);
        if (fd < 0) fail("Could not open stdout file " + out_path + ": " + Errstr(errno), 1);
        ::dup2(fd, 1);
        if (launch_.stderr_pattern().empty() ||
            launch_.stderr_pattern() == launch_.stdout_pattern())
          ::dup2(fd, 2);  // one file, one offset: the two streams never overwrite each other
        ::close(fd);
      }
      if (!launch_.stderr_pattern().empty() &&
          launch_.stderr_pattern() != launch_.stdout_pattern()) {
        std::string path = ExpandOutputPattern(launch_.stderr_pattern(), PatternContext(t));
        int fd = ::open(path.c_str(), flags, 0666);
        if (fd < 0) fail("Could not open stderr file " + path + ": " + Errstr(errno), 1);
        ::dup2(fd, 2);
        ::close(fd);
      }
    }
    {
      TaskBindRequest bind;
      bind.cpu_bind = CpuBind();
      if (t.local_id < cpu_masks_.size()) bind.cpu_mask = cpu_masks_[t.local_id];
      bind.mem_bind = launch_.step().mem_bind();
      bind.node = opts_.node_name;
      bind.global_task = t.global_id;
      bind.local_task = t.local_id;
      bind.local_tasks = static_cast<uint32_t>(tasks_.size());
      std::string bind_error = ApplyTaskBinding(bind);
      if (!bind_error.empty()) fail(bind_error, 1);
    }
    if (gpu_bind_.verbose && !step_gpus_.empty()) {
      std::vector<size_t> all;
      for (size_t i = 0; i < step_gpus_.size(); ++i) all.push_back(i);
      std::string line =
          GpuBindVerboseLine(opts_.node_name, t.global_id, step_gpus_,
                             t.local_id < task_gpus_.size() ? task_gpus_[t.local_id] : all);
      ssize_t ignored = ::write(2, line.data(), line.size());
      (void)ignored;
    }

    TaskEnvInfo info;
    info.node_name = opts_.node_name;
    info.conf_path = opts_.conf_path;
    info.cluster_name = opts_.cluster_name;
    info.global_task_id = t.global_id;
    info.local_task_id = t.local_id;
    info.task_pid = ::getpid();
    info.user_name = user_;
    info.home = home_;
    info.shell = shell_;
    info.extra = extra;
    info.cpu_masks = cpu_masks_;
    std::vector<std::string> env = BuildTaskEnvironment(launch_, info);
    if (!argv_error.empty()) fail(argv_error, 1);
    if (argv.empty()) fail("no command given", 1);
    RunTaskProlog(LoadTaskScripts(opts_.conf_path).prolog, &env);  // as the user, may edit env
    std::vector<std::string> args = argv;
    if (!launch_.step().container().empty()) {
      // srun --container: the task runs inside the bundle through oci.conf's runtime.
      OciTask oci{opts_.conf_path,
                  launch_.step().container(),
                  argv,
                  env,
                  work_dir,
                  opts_.node_name,
                  user_,
                  launch_.step().job_id(),
                  launch_.step().step_id(),
                  t.global_id,
                  launch_.step().uid(),
                  launch_.gid(),
                  false};
      auto plan = PrepareOciTask(oci);
      if (!plan.ok()) fail(plan.error(), 1);
      if (plan->create_start) {
        plan->kill_wait_s = launch_.kill_wait_s();
        RunOciCreateStart(*plan);  // never returns
      }
      args = {"/bin/sh", "-c", plan->run_cmd};
      env = plan->runtime_env;
    }
    std::string exe = FindExecutable(args[0], env);
    if (exe.empty()) fail("execve(): " + args[0] + ": No such file or directory", 2);
    std::vector<char*> cargv, cenv;
    for (auto& a : args) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    for (auto& e : env) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    ::execve(exe.c_str(), cargv.data(), cenv.data());
    int err = errno;
    fail("execve(): " + argv[0] + ": " + Errstr(err), err);  // exit code = errno, as Slurm
    ::_exit(127);
  }

  void TaskFailed(Task& t, const std::string& why) {
    Log("step %u.%u: task %u: %s", opts_.job_id, opts_.step_id, t.global_id, why.c_str());
    t.exited = true;
    t.status = 1 << 8;
    pb::Request req;
    req.mutable_task_exit()->add_task_ids(t.global_id);
    req.mutable_task_exit()->set_status(t.status);
    req.mutable_task_exit()->set_error(why);
    Post(req);
  }

  void ReadOutput(Task& t, int stream) {
    auto& sd = stream == 1 ? t.out : t.err;
    auto& buf = stream == 1 ? t.out_buf : t.err_buf;
    if (!sd) return;
    if (srun_ && srun_->pending_write_bytes() > kMaxQueuedOutput) {
      // srun is slow to take output: let the task block on its pipe for a moment.
      auto timer = std::make_shared<asio::steady_timer>(io_, milliseconds(5));
      timer->async_wait(
          [this, &t, stream, timer](const asio::error_code&) { ReadOutput(t, stream); });
      return;
    }
    buf.resize(kReadChunk);
    sd->async_read_some(asio::buffer(buf),
                        [this, &t, stream](const asio::error_code& ec, size_t n) {
                          auto& sd = stream == 1 ? t.out : t.err;
                          auto& buf = stream == 1 ? t.out_buf : t.err_buf;
                          if (ec) {
                            asio::error_code ignored;
                            if (sd) sd->close(ignored);
                            sd.reset();
                            if (t.pty && t.in) t.in->close(ignored), t.in.reset();
                            MaybeFinish();
                            return;
                          }
                          pb::Request req;
                          auto* d = req.mutable_io_data();
                          d->set_task_id(t.global_id);
                          d->set_stream(static_cast<uint32_t>(stream));
                          d->set_data(buf.data(), n);
                          Post(req);
                          ReadOutput(t, stream);
                        });
  }

  void WriteStdin(Task& t) {
    if (t.stdin_writing || !t.in) return;
    if (t.stdin_queue.empty()) {
      if (t.stdin_eof && !t.pty) {
        asio::error_code ignored;
        t.in->close(ignored);
        t.in.reset();
      } else if (t.stdin_eof && t.pty) {
        // End of input on a terminal: ^D, as a user would type it.
        t.stdin_queue.push_back(std::string(1, '\x04'));
        t.stdin_eof = false;
        WriteStdin(t);
      }
      return;
    }
    t.stdin_writing = true;
    asio::async_write(*t.in, asio::buffer(t.stdin_queue.front()),
                      [this, &t](const asio::error_code& ec, size_t) {
                        t.stdin_writing = false;
                        if (ec) {
                          t.stdin_queue.clear();
                          asio::error_code ignored;
                          if (t.in) t.in->close(ignored);
                          t.in.reset();
                          return;
                        }
                        t.stdin_queue.pop_front();
                        WriteStdin(t);
                      });
  }

  void SignalTasks(int sig) {
    for (auto& t : tasks_)
      if (t->started && !t->exited) ::kill(-t->pid, sig);
  }

  void Terminate(uint32_t kill_wait_s) {
    if (done_) return;
    if (terminating_) {
      if (kill_wait_s == 0) KillTasks();
      return;
    }
    terminating_ = true;
    SignalTasks(SIGCONT);
    SignalTasks(SIGTERM);
    kill_timer_.expires_after(seconds(kill_wait_s ? kill_wait_s : 30));
    kill_timer_.async_wait([this](const asio::error_code& ec) {
      if (!ec) KillTasks();
    });
  }

  void KillTasks() { SignalTasks(SIGKILL); }

  // The job's end (and the step's own --time) bound the step even without the controller.
  void ArmLimits() {
    int64_t end = cred_.job_end_time();
    uint32_t limit = launch_.step().time_limit();
    if (limit != 0 && limit < 0xfffffffe) {
      int64_t step_end = NowSeconds() + int64_t(limit) * 60;
      if (end == 0 || step_end < end) end = step_end;
    }
    if (end == 0) return;
    limit_timer_.expires_after(seconds(std::max<int64_t>(end - NowSeconds(), 0)));
    limit_timer_.async_wait([this](const asio::error_code& ec) {
      if (ec || done_) return;
      Log("step %u.%u: time limit reached", opts_.job_id, opts_.step_id);
      timed_out_ = true;
      Terminate(launch_.kill_wait_s());
    });
  }

  void WaitSignals() {
    signals_.async_wait([this](const asio::error_code& ec, int sig) {
      if (ec) return;
      if (sig == SIGCHLD)
        Reap();
      else
        Terminate(launch_.kill_wait_s());
      WaitSignals();
    });
  }

  void Reap() {
    // Tasks reaped together with the same status go to srun in one message.
    std::map<int, std::vector<uint32_t>> by_status;
    for (;;) {
      int status = 0;
      rusage ru{};
      pid_t pid = ::wait4(-1, &status, WNOHANG, &ru);
      if (pid <= 0) break;
      if (OomKilled(status)) {
        status = kOomTaskStatus;
        PostOomMessage();  // before the task's exit, so srun prints it first (as Slurm)
      }
      for (auto& t : tasks_) {
        if (t->pid != pid || t->exited) continue;
        t->exited = true;
        t->status = status;
        t->usage = ru;
        if (pmix_) pmix_->ClientExited(t->global_id);
        by_status[status].push_back(t->global_id);
      }
    }
    for (const auto& [status, ids] : by_status) {
      pb::Request req;
      for (uint32_t id : ids) req.mutable_task_exit()->add_task_ids(id);
      req.mutable_task_exit()->set_status(status);
      Post(req);
    }
    if (AllExited() && !leftovers_killed_) {
      // Whatever the tasks started and left behind goes with them (and releases their pipes).
      leftovers_killed_ = true;
      KillLeftovers();
    }
    MaybeFinish();
  }

  // A task SIGKILLed while its step cgroup counts OOM kills was the OOM killer's victim: srun
  // says "Out Of Memory" and the step's ExitCode reads 0:125, as in Slurm.
  bool OomKilled(int status) {
    if (!cg_ || cg_ended_ || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) return false;
    return cg_->Stats(opts_.job_id, opts_.step_id).oom_kills > 0;
  }

  void PostOomMessage() {
    if (oom_message_sent_ || tasks_.empty()) return;
    oom_message_sent_ = true;
    uint64_t kills = std::max<uint64_t>(cg_->Stats(opts_.job_id, opts_.step_id).oom_kills, 1);
    pb::Request msg;
    auto* io = msg.mutable_io_data();
    io->set_task_id(tasks_.front()->global_id);
    io->set_stream(2);
    io->set_data(
        OomMessage(kills, std::to_string(opts_.job_id) + "." + std::to_string(opts_.step_id)));
    Post(msg);
  }

  bool AllExited() const {
    for (const auto& t : tasks_)
      if (!t->exited) return false;
    return true;
  }

  void KillLeftovers() {
    for (auto& t : tasks_)
      if (t->pid > 0) ::kill(-t->pid, SIGKILL);
    KillReparentedChildren();
    EndCgroup();
  }

  // cgroups (proctrack/cgroup, task/cgroup): the step's cgroup below the job's, with the job's
  // CPUs, memory and devices. False when the configuration demands constraints that failed.
  bool SetupCgroup() {
    std::string note;
    auto cg = NodeCgroups::Open(opts_.conf_path, opts_.node_name, opts_.spool, &note);
    if (!cg) {
      Log("step %u.%u: %s", opts_.job_id, opts_.step_id, cg.error().c_str());
      return true;
    }
    if (!note.empty()) Log("step %u.%u: %s", opts_.job_id, opts_.step_id, note.c_str());
    if (!*cg) return true;
    JobOnNode job;
    job.job_id = opts_.job_id;
    uint32_t node = launch_.node_id();
    if (static_cast<int>(node) < cred_.cpus_per_node_size()) job.cpus = cred_.cpus_per_node(node);
    job.mem_mb = cred_.mem_per_node_mb();
    if (static_cast<int>(node) < cred_.gres_alloc_size()) job.gres_alloc = cred_.gres_alloc(node);
    std::vector<int> cpus;
    Status s = (*cg)->SetupStep(job, opts_.step_id, &cpus);
    if (!s.ok()) {
      Log("step %u.%u: cgroup setup failed: %s", opts_.job_id, opts_.step_id, s.message().c_str());
      const CgroupPolicy& p = (*cg)->policy();
      if (p.constrain_cores || p.constrain_ram || p.constrain_devices) {
        FailAll("cgroup setup failed: " + s.message());
        return false;
      }
      return true;  // tracking only: run without
    }
    cg_ = std::move(*cg);
    // The supervisor is not in the step's cgroup (killing the cgroup must not kill it), so it
    // takes the job's CPUs itself: --cpu-bind masks are computed from CpusOfThisProcess().
    if (!cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : cpus) CPU_SET(c, &set);
      ::sched_setaffinity(0, sizeof(set), &set);
    }
    return true;
  }

  // Reads what the cgroup knows (OOM kills, CPU time, peak memory), then kills what is left in
  // it and removes it. Once.
  void EndCgroup() {
    if (!cg_ || cg_ended_) return;
    cg_ended_ = true;
    cg_stats_ = cg_->Stats(opts_.job_id, opts_.step_id);
    cg_->EndStep(opts_.job_id, opts_.step_id);
    if (cg_stats_.oom_kills > 0)
      Log("step %u.%u: Detected %llu oom_kill event%s", opts_.job_id, opts_.step_id,
          static_cast<unsigned long long>(cg_stats_.oom_kills),
          cg_stats_.oom_kills == 1 ? "" : "s");
  }

  void MaybeFinish() {
    if (done_ || !AllExited()) return;
    for (const auto& t : tasks_)
      if (t->out || t->err) return;  // output still draining
    Finish();
  }

  // TaskEpilog (slurm.conf): as the user, once per task with the task's environment, after every
  // task of this node ended and before the step reports its end (srun waits for it meanwhile).
  void RunTaskEpilogs() {
    std::string program = LoadTaskScripts(opts_.conf_path).epilog;
    if (program.empty()) return;
    for (const auto& t : tasks_) {
      if (!t->started) continue;
      TaskEnvInfo info;
      info.node_name = opts_.node_name;
      info.conf_path = opts_.conf_path;
      info.cluster_name = opts_.cluster_name;
      info.global_task_id = t->global_id;
      info.local_task_id = t->local_id;
      info.task_pid = t->pid;
      info.user_name = user_;
      info.home = home_;
      info.shell = shell_;
      info.cpu_masks = cpu_masks_;
      RunTaskEpilog(program, launch_.step().uid(), launch_.gid(),
                    BuildTaskEnvironment(launch_, info), launch_.work_dir(), 60);
    }
  }

  void Finish() {
    done_ = true;
    kill_timer_.cancel();
    limit_timer_.cancel();
    RunTaskEpilogs();
    if (!leftovers_killed_) KillLeftovers();
    pb::Request req;
    auto* d = req.mutable_node_done();
    uint64_t user = 0, sys = 0, rss = 0;
    uint32_t rss_task = 0;
    int32_t worst = 0;
    for (const auto& t : tasks_) {
      user += uint64_t(t->usage.ru_utime.tv_sec) * 1000000 + t->usage.ru_utime.tv_usec;
      sys += uint64_t(t->usage.ru_stime.tv_sec) * 1000000 + t->usage.ru_stime.tv_usec;
      if (uint64_t(t->usage.ru_maxrss) > rss) {
        rss = t->usage.ru_maxrss;
        rss_task = t->global_id;
      }
      worst = std::max(worst, t->status);
    }
    if (cg_stats_.has_cpu) {  // the whole step, daemons included
      user = cg_stats_.user_usec;
      sys = cg_stats_.sys_usec;
    }
    if (cg_stats_.max_rss_bytes > 0) rss = cg_stats_.max_rss_bytes / 1024;
    bool oom = cg_stats_.oom_kills > 0;
    if (oom && !tasks_.empty() && !oom_message_sent_) {
      // Slurm's words, on srun's stderr.
      pb::Request msg;
      auto* io = msg.mutable_io_data();
      io->set_task_id(tasks_.front()->global_id);
      io->set_stream(2);
      io->set_data(OomMessage(cg_stats_.oom_kills,
                              std::to_string(opts_.job_id) + "." + std::to_string(opts_.step_id)));
      Post(msg);
    }
    d->set_oom(oom);
    d->set_user_cpu_usec(user);
    d->set_sys_cpu_usec(sys);
    d->set_max_rss_kb(rss);
    d->set_max_rss_task(rss_task);
    Post(req);
    Log("step %u.%u: done here%s%s", opts_.job_id, opts_.step_id, srun_lost_ ? " (srun lost)" : "",
        timed_out_ ? " (time limit)" : "");
    // Tell shoald (which tells the controller), then leave once srun has our last frames.
    pb::Request note;
    auto* sc = note.mutable_step_complete();
    sc->set_job_id(opts_.job_id);
    sc->set_step_id(opts_.step_id);
    sc->set_exit_status(worst);
    sc->set_user_cpu_usec(user);
    sc->set_sys_cpu_usec(sys);
    sc->set_max_rss_kb(rss);
    sc->set_cancelled(cancelled_ || srun_lost_);
    sc->set_oom(oom);
    NotifyShoald(note);
    exit_timer_.expires_after(seconds(10));
    exit_timer_.async_wait([this](const asio::error_code& ec) {
      if (!ec) Exit();
    });
    DrainThenExit();
  }

  void DrainThenExit() {
    if (!srun_ || srun_->closed() || srun_->pending_write_bytes() == 0) {
      if (notified_) return Exit();
    }
    drain_timer_.expires_after(milliseconds(5));
    drain_timer_.async_wait([this](const asio::error_code& ec) {
      if (!ec) DrainThenExit();
    });
  }

  void NotifyShoald(const pb::Request& req) {
    std::string body = req.SerializeAsString();
    pb::Credential cred;
    if (key_) cred = key_->Sign(0, 0, body, NowSeconds());
    RpcConnect(
        io_, "unix:" + opts_.spool + "/" + kShoaldSocket,
        [](const RpcConnectionPtr&, const pb::Credential&, const std::string&, Responder r) {
          r(ErrorResponse(ErrorCode::kNotSupported, "not supported"));
        },
        [this, req, cred](Result<RpcConnectionPtr> conn) {
          if (!conn) {
            notified_ = true;  // shoald finds the directory on its next scan
            return;
          }
          notify_conn_ = *conn;
          notify_conn_->Send(req, cred, [this](Result<pb::Response>) { notified_ = true; });
        });
  }

  void Exit() {
    if (exiting_) return;
    exiting_ = true;
    if (server_) server_->Stop();
    if (srun_) srun_->Close();
    if (notify_conn_) notify_conn_->Close();
    for (auto& t : tasks_) {
      asio::error_code ignored;
      if (t->out) t->out->close(ignored);
      if (t->err) t->err->close(ignored);
      if (t->in) t->in->close(ignored);
      if (t->pmi) t->pmi->close(ignored);
    }
    pmix_.reset();
    exit_timer_.cancel();
    drain_timer_.cancel();
    io_.stop();
  }

  StepdOptions opts_;
  std::string dir_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::steady_timer kill_timer_, limit_timer_, drain_timer_, exit_timer_;
  std::unique_ptr<RpcServer> server_;
  RpcConnectionPtr srun_, notify_conn_;
  std::optional<ClusterKey> key_;
  pb::LaunchTasksRequest launch_;
  pb::StepCredential cred_;
  std::vector<std::unique_ptr<Task>> tasks_;
  std::vector<std::string> cpu_masks_;
  std::vector<GresDevice> step_gpus_;           // the step's GPUs here, index order
  std::vector<std::vector<size_t>> task_gpus_;  // --gpu-bind: positions per local task
  GpuBind gpu_bind_;
  bool gpus_constrained_ = false;  // ConstrainDevices: tasks see their GPUs renumbered from 0
  std::unique_ptr<PmiServer> pmi_;
  std::unique_ptr<PmixServer> pmix_;
  uint32_t pmi_fence_seq_ = 0;
  std::string user_, home_, shell_;
  bool done_ = false, exiting_ = false, terminating_ = false, cancelled_ = false;
  bool srun_lost_ = false, timed_out_ = false, launch_failed_ = false;
  bool leftovers_killed_ = false, notified_ = false;
  std::unique_ptr<NodeCgroups> cg_;
  bool cg_ended_ = false;
  bool oom_message_sent_ = false;
  CgroupStats cg_stats_;
};

}  // namespace

int RunStepSupervisor(const StepdOptions& opts) {
  StepSupervisor supervisor(opts);
  return supervisor.Run();
}

}  // namespace shoal::noded
