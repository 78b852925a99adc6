#include "cli/step_launch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <asio.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "common/hostlist.h"
#include "common/name_service.h"
#include "common/rpc.h"
#include "common/states.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr auto kHelloTimeout = seconds(30);
constexpr auto kLaunchTimeout = seconds(20);

std::string RandomKey() {
  std::string key(32, '\0');
  size_t got = 0;
  while (got < key.size()) {
    ssize_t n = ::getrandom(key.data() + got, key.size() - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  return key;
}

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// "0-3,5" for a sorted id list.
std::string Ranges(std::vector<uint32_t> ids) {
  std::sort(ids.begin(), ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

// Terminal raw mode for --pty, restored at exit.
class RawTerminal {
 public:
  RawTerminal() {
    if (::isatty(0) && ::tcgetattr(0, &saved_) == 0) {
      termios raw = saved_;
      ::cfmakeraw(&raw);
      active_ = ::tcsetattr(0, TCSANOW, &raw) == 0;
    }
  }
  ~RawTerminal() {
    if (active_) ::tcsetattr(0, TCSANOW, &saved_);
  }

 private:
  termios saved_{};
  bool active_ = false;
};

class StepRunner {
 public:
  StepRunner(const ClientContext& ctx, const StepLaunchOptions& o, pb::StepCompleteRequest* end)
      : ctx_(ctx),
        o_(o),
        end_(end),
        signals_(io_, SIGINT, SIGTERM, SIGHUP),
        more_signals_(io_, SIGQUIT, SIGUSR1, SIGUSR2),
        winch_(io_, SIGWINCH),
        hello_timer_(io_),
        wait_timer_(io_),
        status_timer_(io_) {}

  int Run() {
    if (!CreateStep()) return 1;
    // The I/O listener first: supervisors connect as soon as their launch is accepted.
    auto server =
        RpcServer::Listen(io_, "0.0.0.0:0",
                          [this](const RpcConnectionPtr& conn, const pb::Credential&,
                                 const std::string& body, Responder) { OnFrame(conn, body); });
    if (!server) {
      Error("cannot open the I/O listener: " + server.error());
      CompleteStep(1 << 8, true);
      return 1;
    }
    server_ = std::move(*server);
    io_key_ = RandomKey();
    io_address_ =
        LocalAddressToward(ctx_.conf.ControllerAddr()) + ":" + std::to_string(server_->port());
    int nodes = step_.nodes_size();
    node_state_.resize(nodes);
    uint32_t next = 0;
    for (int i = 0; i < nodes; ++i) {
      for (uint32_t k = 0; k < step_.tasks_per_node(i); ++k) {
        node_state_[i].tasks.push_back(next);
        task_node_[next] = i;
        ++next;
      }
    }
    task_status_.assign(step_.num_tasks(), -1);
    if (!ResolveIo()) {
      CompleteStep(1 << 8, true);
      return 1;
    }
    std::unique_ptr<RawTerminal> raw;
    if (o_.pty && ::isatty(0)) raw = std::make_unique<RawTerminal>();
    WaitSignals();
    WaitMoreSignals();
    WaitWinch();
    LaunchAll();
    hello_timer_.expires_after(kHelloTimeout);
    hello_timer_.async_wait([this](const asio::error_code& ec) {
      if (ec) return;
      for (size_t i = 0; i < node_state_.size(); ++i) {
        if (!node_state_[i].hello && !node_state_[i].done) {
          Error("StepId=" + StepIdText() + " on node " + step_.nodes(static_cast<int>(i)) +
                ": no response from the node's supervisor");
          NodeLost(static_cast<int>(i));
        }
      }
    });
    StartStdin();
    WatchJob();
    io_.run();
    raw.reset();
    int rc = ExitCode();
    CompleteStep(WorstStatus(), cancelled_);
    return rc;
  }

 private:
  struct NodeState {
    std::vector<uint32_t> tasks;
    RpcConnectionPtr conn;
    bool launched = false;
    bool hello = false;
    bool done = false;
    uint64_t user_usec = 0, sys_usec = 0, max_rss_kb = 0;
    uint32_t max_rss_task = 0;
    bool oom = false;  // the node's cgroup saw an OOM kill
  };

  std::string StepIdText() const {
    return std::to_string(step_.job_id()) + "." + std::to_string(step_.step_id());
  }

  void Error(const std::string& msg) const {
    std::fprintf(stderr, "%s: error: %s\n", o_.prog.c_str(), msg.c_str());
  }
  void Info(const std::string& msg) const {
    if (!o_.quiet) std::fprintf(stderr, "%s: %s\n", o_.prog.c_str(), msg.c_str());
  }

  // --- I/O redirection -----------------------------------------------------------------------

  // -i/-o/-e for this step's task count: what the nodes do (per-task files, /dev/null) and what
  // srun does itself (one file for every task, one task's output only).
  bool ResolveIo() {
    uint32_t n = step_.num_tasks();
    auto local_file = [&](const SrunIo& io) {
      return io.mode == SrunIo::Mode::kFile && !io.on_node;
    };
    std::string user;
    for (const auto& e : o_.environment)
      if (e.rfind("USER=", 0) == 0) user = e.substr(5);
    auto expand = [&](const std::string& pattern) {
      std::string out;
      for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '%' || i + 1 >= pattern.size()) {
          out.push_back(pattern[i]);
          continue;
        }
        char c = pattern[++i];
        if (c == 'j' || c == 'A')
          out += std::to_string(step_.job_id());
        else if (c == 'J')
          out += StepIdText();
        else if (c == 's')
          out += std::to_string(step_.step_id());
        else if (c == 'u')
          out += user;
        else if (c == 'x')
          out += step_.name();
        else if (c == '%')
          out.push_back('%');
        else
          out += std::string("%") + c;
      }
      if (!out.empty() && out[0] != '/') out = o_.work_dir + "/" + out;
      return out;
    };
    // stdin
    if (local_file(o_.input)) {
      std::string path = expand(o_.input.pattern);
      input_fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (input_fd_ < 0) {
        Error("Could not open stdin file " + path + ": " + std::strerror(errno));
        return false;
      }
      stdin_mode_ = "all";
    } else {
      stdin_mode_ = SrunIoForTasks(o_.input, n);
      // srun's stdin is /dev/null (batch scripts, daemons): the tasks get theirs from the node,
      // without a pipe and an end-of-file message per task.
      struct stat st {};
      if (stdin_mode_ == "all" && !o_.pty && ::fstat(0, &st) == 0 && S_ISCHR(st.st_mode) &&
          st.st_rdev == makedev(1, 3))
        stdin_mode_ = "none";
    }
    auto output = [&](const SrunIo& io, int std_fd, std::string* node_pattern, int* fd,
                      int* only_task) -> bool {
      *fd = std_fd;
      if (io.mode == SrunIo::Mode::kNone) {
        *node_pattern = "/dev/null";
      } else if (io.mode == SrunIo::Mode::kTask && io.task < n) {
        *only_task = static_cast<int>(io.task);
      } else if (local_file(io)) {
        std::string path = expand(io.pattern);
        int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (o_.open_mode_append ? O_APPEND : O_TRUNC);
        *fd = ::open(path.c_str(), flags, 0666);
        if (*fd < 0) {
          Error("Could not open output file " + path + ": " + std::strerror(errno));
          return false;
        }
      } else if (io.mode != SrunIo::Mode::kAll) {
        *node_pattern = SrunIoForTasks(io, n);
      }
      return true;
    };
    if (!output(o_.output, 1, &stdout_pattern_, &out_fd_, &out_task_)) return false;
    bool same = o_.error.mode == o_.output.mode && o_.error.pattern == o_.output.pattern &&
                o_.error.task == o_.output.task;
    if (same && out_fd_ != 1) {
      err_fd_ = out_fd_;
      err_task_ = out_task_;
    } else if (!output(o_.error, 2, &stderr_pattern_, &err_fd_, &err_task_)) {
      return false;
    }
    return true;
  }

  // --- controller ----------------------------------------------------------------------------

  bool CreateStep() {
    pb::Request req;
    *req.mutable_step_create() = o_.create;
    bool told = false;
    for (;;) {
      auto resp = CallControllerRaw(ctx_, req);
      if (!resp) {
        Error("Unable to create step for job " + std::to_string(o_.create.job_id()) + ": " +
              resp.error());
        return false;
      }
      if (resp->rc() == 0) {
        created_ = resp->step_create();
        step_ = created_.step();
        if (told) Info("Step created for StepId=" + StepIdText());
        return true;
      }
      auto code = static_cast<ErrorCode>(resp->rc());
      if (code == ErrorCode::kInvalidJobId) {
        Error("Unable to confirm allocation for job " + std::to_string(o_.create.job_id()) + ": " +
              resp->error());
        return false;
      }
      if (code != ErrorCode::kStepBusy) {
        Error("Unable to create step for job " + std::to_string(o_.create.job_id()) + ": " +
              resp->error());
        return false;
      }
      if (!told) {
        Info("Job " + std::to_string(o_.create.job_id()) +
             " step creation temporarily disabled, retrying (" + resp->error() + ")");
        told = true;
      }
      std::this_thread::sleep_for(milliseconds(500));
    }
  }

  void CompleteStep(int32_t status, bool cancelled) {
    if (!created_.has_step()) return;
    pb::Request req;
    auto* c = req.mutable_step_complete();
    c->set_job_id(step_.job_id());
    c->set_step_id(step_.step_id());
    c->set_exit_status(status);
    c->set_cancelled(cancelled);
    uint64_t user = 0, sys = 0, rss = 0;
    for (size_t i = 0; i < node_state_.size(); ++i) {
      const auto& n = node_state_[i];
      user += n.user_usec;
      sys += n.sys_usec;
      if (n.oom) c->set_oom(true);
      if (n.max_rss_kb > rss) {
        rss = n.max_rss_kb;
        c->set_max_rss_node(step_.nodes(static_cast<int>(i)));
        c->set_max_rss_task(n.max_rss_task);
      }
    }
    c->set_user_cpu_usec(user);
    c->set_sys_cpu_usec(sys);
    c->set_max_rss_kb(rss);
    if (end_) {
      *end_ = *c;
      return;
    }
    (void)CallControllerRaw(ctx_, req);
  }

  // --- launch --------------------------------------------------------------------------------

  void LaunchAll() {
    // Every node at once: the requests go out together and are answered in any order.
    for (int i = 0; i < step_.nodes_size(); ++i) {
      pb::Request req;
      auto* lt = req.mutable_launch_tasks();
      *lt->mutable_cred() = created_.cred();
      *lt->mutable_step() = step_;
      lt->set_node_id(static_cast<uint32_t>(i));
      for (uint32_t t : node_state_[i].tasks) lt->add_global_task_ids(t);
      for (const auto& e : o_.environment) lt->add_environment(e);
      lt->set_work_dir(o_.work_dir);
      lt->set_io_address(io_address_);
      lt->set_io_key(io_key_);
      lt->set_pty(o_.pty);
      winsize ws{};
      if (o_.pty && ::ioctl(0, TIOCGWINSZ, &ws) == 0) {
        lt->set_pty_rows(ws.ws_row);
        lt->set_pty_cols(ws.ws_col);
      }
      lt->set_stdin_mode(stdin_mode_);
      lt->set_stdout_pattern(stdout_pattern_);
      lt->set_stderr_pattern(stderr_pattern_);
      lt->set_open_mode_append(o_.open_mode_append);
      lt->set_kill_on_bad_exit(o_.kill_on_bad_exit);
      lt->set_multi_prog(o_.multi_prog);
      lt->set_kill_wait_s(static_cast<uint32_t>(ctx_.conf.KillWait()));
      lt->set_unbuffered(o_.unbuffered);
      // The controller's word (it adds the job's --hint to a bare "verbose"), else ours.
      lt->set_cpu_bind(!step_.cpu_bind().empty() ? step_.cpu_bind() : o_.create.cpu_bind());
      // srun's own binding options, else what the step got from its job (sbatch/salloc).
      if (!o_.create.gpu_bind().empty()) lt->mutable_step()->set_gpu_bind(o_.create.gpu_bind());
      if (!o_.create.mem_bind().empty()) lt->mutable_step()->set_mem_bind(o_.create.mem_bind());
      lt->set_cpus_per_task(step_.cpus_per_task());
      lt->mutable_tasks_per_node()->CopyFrom(step_.tasks_per_node());
      std::string body = req.SerializeAsString();
      auto cred = SignForCaller(ctx_, body);
      if (!cred) {
        LaunchFailed(i, cred.error());
        continue;
      }
      const pb::NodeAddress& addr = created_.nodes(i);
      std::string where = addr.addr() + ":" + std::to_string(addr.port());
      auto timer = std::make_shared<asio::steady_timer>(io_, kLaunchTimeout);
      RpcConnect(
          io_, where,
          [](const RpcConnectionPtr&, const pb::Credential&, const std::string&, Responder r) {
            r(ErrorResponse(ErrorCode::kNotSupported, "not supported"));
          },
          [this, i, req, c = *cred, timer](Result<RpcConnectionPtr> conn) {
            if (!conn) return LaunchFailed(i, conn.error());
            RpcConnectionPtr cp = *conn;
            timer->async_wait([cp](const asio::error_code& ec) {
              if (!ec) cp->Close();
            });
            cp->Send(req, c, [this, i, cp, timer](Result<pb::Response> r) {
              timer->cancel();
              cp->Close();
              if (!r) return LaunchFailed(i, r.error());
              if (r->rc() != 0) return LaunchFailed(i, r->error());
              node_state_[i].launched = true;
            });
          });
    }
  }

  void LaunchFailed(int node, const std::string& why) {
    Error("Task launch for StepId=" + StepIdText() + " failed on node " + step_.nodes(node) + ": " +
          why);
    launch_failed_ = true;
    for (uint32_t t : node_state_[node].tasks)
      if (task_status_[t] < 0) task_status_[t] = 1 << 8;
    node_state_[node].done = true;
    TerminateStep();
    MaybeDone();
  }

  // --- the I/O stream ------------------------------------------------------------------------

  void OnFrame(const RpcConnectionPtr& conn, const std::string& body) {
    pb::Request req;
    if (!req.ParseFromString(body)) return conn->Close();
    auto it = conn_node_.find(conn.get());
    if (it == conn_node_.end()) {
      // The first frame must be a hello that proves the launch reached the node.
      const auto* h = req.has_io_hello() ? &req.io_hello() : nullptr;
      if (!h || h->io_key() != io_key_ || h->job_id() != step_.job_id() ||
          h->step_id() != step_.step_id() || h->node_id() >= node_state_.size() ||
          node_state_[h->node_id()].hello)
        return conn->Close();
      int node = static_cast<int>(h->node_id());
      conn_node_[conn.get()] = node;
      auto& n = node_state_[node];
      n.hello = true;
      n.conn = conn;
      std::weak_ptr<RpcConnection> weak = conn;
      conn->OnClose([this, node] {
        if (!node_state_[node].done) NodeLost(node);
      });
      if (!h->launch_error().empty()) {
        Error("Task launch for StepId=" + StepIdText() + " failed on node " + step_.nodes(node) +
              ": " + h->launch_error());
        launch_failed_ = true;
        for (uint32_t t : n.tasks)
          if (task_status_[t] < 0) task_status_[t] = 1 << 8;
      }
      if (terminating_) SendSignal(node, 0, true);
      if (o_.pty) SendWindowSize();
      FlushStdin();
      return;
    }
    int node = it->second;
    switch (req.body_case()) {
      case pb::Request::kIoData:
        Output(req.io_data());
        return;
      case pb::Request::kTaskExit: {
        std::vector<uint32_t> fresh;
        for (uint32_t t : req.task_exit().task_ids())
          if (TaskExited(node, t, req.task_exit())) fresh.push_back(t);
        ReportExit(node, fresh, req.task_exit().status());
        return;
      }
      case pb::Request::kFenceIn:
        FenceIn(node, req.fence_in());
        return;
      case pb::Request::kStepAbort: {
        const auto& a = req.step_abort();
        if (!a.message().empty()) Error(a.message());
        aborted_ = true;
        TerminateStep();
        return;
      }
      case pb::Request::kNodeDone: {
        auto& n = node_state_[node];
        n.user_usec = req.node_done().user_cpu_usec();
        n.sys_usec = req.node_done().sys_cpu_usec();
        n.max_rss_kb = req.node_done().max_rss_kb();
        n.max_rss_task = req.node_done().max_rss_task();
        n.oom = req.node_done().oom();
        n.done = true;
        FlushLabelled();
        MaybeDone();
        return;
      }
      default:
        return;
    }
  }

  void Output(const pb::StepIoData& d) {
    int only = d.stream() == 2 ? err_task_ : out_task_;
    if (only >= 0 && d.task_id() != static_cast<uint32_t>(only)) return;
    int fd = d.stream() == 2 ? err_fd_ : out_fd_;
    if ((o_.unbuffered || o_.pty) && !o_.label) {
      WriteAll(fd, d.data().data(), d.data().size());
      return;
    }
    // Output goes out a whole line at a time (tasks never interleave inside a line), with
    // "N: " in front under -l.
    std::string& partial = partial_[{d.task_id(), fd}];
    partial += d.data();
    size_t start = 0;
    for (;;) {
      size_t nl = partial.find('\n', start);
      if (nl == std::string::npos) break;
      std::string line =
          (o_.label ? Label(d.task_id()) : std::string()) + partial.substr(start, nl - start + 1);
      WriteAll(fd, line.data(), line.size());
      start = nl + 1;
    }
    partial.erase(0, start);
  }

  std::string Label(uint32_t task) const {
    int width =
        static_cast<int>(std::to_string(std::max<uint32_t>(step_.num_tasks(), 1) - 1).size());
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%*u: ", width, task);
    return buf;
  }

  void FlushLabelled() {
    for (auto& [key, partial] : partial_) {
      if (partial.empty()) continue;
      std::string line = (o_.label ? Label(key.first) + partial + "\n" : partial);
      WriteAll(key.second, line.data(), line.size());
      partial.clear();
    }
  }

  // The node reports a task the OOM killer ended as killed by "signal 125" (Slurm's convention,
  // ExitCode 0:125).
  static constexpr int kOomSignal = 125;

  // "srun: error: n1: tasks 0-1: Exited with exit code 1": one line per node and outcome, as
  // tasks end.
  void ReportExit(int node, const std::vector<uint32_t>& tasks, int status) {
    if (tasks.empty() || (WIFEXITED(status) && WEXITSTATUS(status) == 0)) return;
    std::string what;
    if (WIFEXITED(status))
      what = "Exited with exit code " + std::to_string(WEXITSTATUS(status));
    else if (WIFSIGNALED(status) && WTERMSIG(status) == kOomSignal)
      what = "Out Of Memory";
    else if (WIFSIGNALED(status))
      what = std::string(strsignal(WTERMSIG(status)));
    if (!terminating_ || !WIFSIGNALED(status))
      Error(step_.nodes(node) + (tasks.size() > 1 ? ": tasks " : ": task ") + Ranges(tasks) + ": " +
            what);
    if (o_.kill_on_bad_exit && !terminating_) TerminateStep();
  }

  // Records a task's end; false when it was already known.
  bool TaskExited(int node, uint32_t task, const pb::StepTaskExit& e) {
    if (task >= task_status_.size() || task_status_[task] >= 0) return false;
    int status = e.status();
    task_status_[task] = status;
    if (!e.error().empty())
      Error(step_.nodes(node) + ": task " + std::to_string(task) + ": " + e.error());
    if (o_.wait_s && !wait_armed_) {
      wait_armed_ = true;
      wait_timer_.expires_after(seconds(o_.wait_s));
      wait_timer_.async_wait([this](const asio::error_code& ec) {
        if (ec) return;
        for (int32_t s : task_status_) {
          if (s < 0) {
            Error("First task exited " + std::to_string(o_.wait_s) +
                  "s ago; terminating the remaining tasks");
            TerminateStep();
            break;
          }
        }
      });
    }
    return true;
  }

  void NodeLost(int node) {
    auto& n = node_state_[node];
    if (n.done) return;
    n.done = true;
    std::vector<uint32_t> lost;
    for (uint32_t t : n.tasks)
      if (task_status_[t] < 0) {
        task_status_[t] = SIGKILL;
        lost.push_back(t);
      }
    if (!lost.empty() && !terminating_)
      Error(step_.nodes(node) + ": tasks " + Ranges(lost) + ": unknown status (node lost)");
    MaybeDone();
  }

  void MaybeDone() {
    for (const auto& n : node_state_)
      if (!n.done) return;
    FlushLabelled();
    Stop();
  }

  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    hello_timer_.cancel();
    wait_timer_.cancel();
    status_timer_.cancel();
    if (server_) server_->Stop();
    for (auto& n : node_state_)
      if (n.conn) n.conn->Close();
    io_.stop();
  }

  // --- fences --------------------------------------------------------------------------------

  void FenceIn(int node, const pb::StepFenceIn& f) {
    auto& slot = fences_[f.seq()];
    if (slot.empty()) slot.resize(node_state_.size());
    slot[node] = f.data();
    auto& got = fence_count_[f.seq()];
    got.insert(node);
    if (got.size() < node_state_.size()) return;
    pb::Request out;
    out.mutable_fence_out()->set_seq(f.seq());
    for (auto& d : slot) out.mutable_fence_out()->add_data(std::move(d));
    fences_.erase(f.seq());
    fence_count_.erase(f.seq());
    for (auto& n : node_state_)
      if (n.conn && !n.conn->closed()) n.conn->Post(out);
  }

  // --- signals and stdin ---------------------------------------------------------------------

  void SendSignal(int node, int sig, bool terminate) {
    auto& n = node_state_[node];
    if (!n.conn || n.conn->closed()) return;
    pb::Request req;
    req.mutable_step_signal()->set_signal(sig);
    req.mutable_step_signal()->set_terminate(terminate);
    n.conn->Post(req);
  }

  void SignalAll(int sig) {
    for (size_t i = 0; i < node_state_.size(); ++i) SendSignal(static_cast<int>(i), sig, false);
  }

  void TerminateStep() {
    if (terminating_) return;
    terminating_ = true;
    for (size_t i = 0; i < node_state_.size(); ++i) SendSignal(static_cast<int>(i), 0, true);
  }

  // Ctrl-C twice, SIGTERM: the step's tasks are killed (SIGKILL), as Slurm's srun does.
  void ForceTermination() {
    if (cancelled_) return;
    cancelled_ = true;
    Info("forcing job termination");
    Info("Job step aborted: Waiting up to " + std::to_string(ctx_.conf.KillWait() + 2) +
         " seconds for job step to finish.");
    SignalAll(SIGKILL);
    TerminateStep();
  }

  // The job may end under the step (scancel, time limit, a node failure): a node whose daemon
  // is gone cannot tell us, so the controller is asked now and then.
  void WatchJob() {
    status_timer_.expires_after(seconds(2));
    status_timer_.async_wait([this](const asio::error_code& ec) {
      if (ec || stopped_) return;
      pb::Request req;
      req.mutable_job_query()->add_job_ids(step_.job_id());
      req.mutable_job_query()->set_include_finished(true);
      req.mutable_job_query()->set_omit_script(true);
      auto resp = CallControllerRaw(ctx_, req);
      if (resp && resp->rc() == 0) {
        const auto& jobs = resp->job_query().jobs();
        bool over = jobs.empty() || jobs[0].state() != pb::JOB_RUNNING || jobs[0].completing();
        if (over && jobs.size() > 0 && jobs[0].state() == pb::JOB_SUSPENDED) over = false;
        if (over) return JobEnded(jobs.empty() ? "" : JobStateName(jobs[0].state()));
      }
      WatchJob();
    });
  }

  void JobEnded(const std::string& state) {
    Error("Job " + std::to_string(step_.job_id()) + " ended" +
          (state.empty() ? "" : " (" + state + ")") + ": the step is aborted");
    cancelled_ = true;
    TerminateStep();
    // Nodes that can still answer get KillWait to report; the others are given up.
    status_timer_.expires_after(seconds(ctx_.conf.KillWait() + 2));
    status_timer_.async_wait([this](const asio::error_code& ec) {
      if (ec) return;
      for (size_t i = 0; i < node_state_.size(); ++i) NodeLost(static_cast<int>(i));
    });
  }

  void WaitSignals() {
    signals_.async_wait([this](const asio::error_code& ec, int sig) {
      if (ec) return;
      if (sig == SIGINT) {
        auto now = Clock::now();
        if (last_interrupt_ && now - *last_interrupt_ < seconds(1)) {
          Info("sending Ctrl-C to StepId=" + StepIdText());
          SignalAll(SIGINT);
          ForceTermination();
        } else {
          last_interrupt_ = now;
          Info("interrupt (one more within 1 sec to abort)");
          PrintStatus();
        }
      } else {
        // SIGTERM/SIGHUP end the step, as in Slurm.
        ForceTermination();
      }
      WaitSignals();
    });
  }

  void WaitMoreSignals() {
    more_signals_.async_wait([this](const asio::error_code& ec, int sig) {
      if (ec) return;
      SignalAll(sig);
      WaitMoreSignals();
    });
  }

  void WaitWinch() {
    winch_.async_wait([this](const asio::error_code& ec, int) {
      if (ec) return;
      SendWindowSize();
      WaitWinch();
    });
  }

  void PrintStatus() {
    std::vector<uint32_t> running, done;
    for (uint32_t t = 0; t < task_status_.size(); ++t)
      (task_status_[t] < 0 ? running : done).push_back(t);
    if (!running.empty())
      Info("StepId=" + StepIdText() + " tasks " + Ranges(running) + ": running");
    if (!done.empty()) Info("StepId=" + StepIdText() + " tasks " + Ranges(done) + ": exited");
  }

  void SendWindowSize() {
    winsize ws{};
    if (::ioctl(0, TIOCGWINSZ, &ws) != 0) return;
    pb::Request req;
    req.mutable_pty_resize()->set_rows(ws.ws_row);
    req.mutable_pty_resize()->set_cols(ws.ws_col);
    auto it = task_node_.find(0);
    if (it != task_node_.end() && node_state_[it->second].conn)
      node_state_[it->second].conn->Post(req);
  }

  // Tasks that read srun's stdin.
  std::vector<uint32_t> StdinTasks() const {
    std::vector<uint32_t> out;
    const std::string& mode = stdin_mode_;
    if (o_.pty || mode == "0") {
      out.push_back(0);
    } else if (mode.empty() || mode == "all") {
      for (uint32_t t = 0; t < step_.num_tasks(); ++t) out.push_back(t);
    } else if (mode != "none" && mode.find_first_not_of("0123456789") == std::string::npos) {
      out.push_back(static_cast<uint32_t>(std::strtoul(mode.c_str(), nullptr, 10)));
    }
    return out;
  }

  // stdin is read by a thread (it may be a terminal, a pipe or a plain file, which epoll
  // refuses) and handed to the event loop.
  void StartStdin() {
    stdin_tasks_ = StdinTasks();
    if (stdin_tasks_.empty()) return;
    int in = input_fd_ >= 0 ? input_fd_ : 0;
    struct stat st {};
    if (::fstat(in, &st) != 0) return;
    std::thread([this, in] {
      char buf[16384];
      for (;;) {
        ssize_t n = ::read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        std::string data = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
        bool eof = n <= 0;
        asio::post(io_, [this, data = std::move(data), eof] {
          stdin_pending_.push_back({data, eof});
          FlushStdin();
        });
        if (eof) return;
      }
    }).detach();
  }

  void FlushStdin() {
    while (!stdin_pending_.empty()) {
      for (uint32_t t : stdin_tasks_) {
        auto it = task_node_.find(t);
        if (it == task_node_.end()) continue;
        if (!node_state_[it->second].hello && !node_state_[it->second].done) return;  // later
      }
      auto [data, eof] = stdin_pending_.front();
      stdin_pending_.pop_front();
      for (uint32_t t : stdin_tasks_) {
        auto it = task_node_.find(t);
        if (it == task_node_.end()) continue;
        auto& n = node_state_[it->second];
        if (!n.conn || n.conn->closed()) continue;
        pb::Request req;
        auto* d = req.mutable_io_data();
        d->set_task_id(t);
        d->set_stream(0);
        d->set_data(data);
        d->set_eof(eof);
        n.conn->Post(req);
      }
    }
  }

  // --- result --------------------------------------------------------------------------------

  int32_t WorstStatus() const {
    int32_t worst = 0;
    int best_rc = 0;
    for (int32_t s : task_status_) {
      int rc = s < 0 ? 1 : RcOf(s);
      if (rc > best_rc) {
        best_rc = rc;
        worst = s < 0 ? (1 << 8) : s;
      }
    }
    return worst;
  }

  static int RcOf(int32_t status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
  }

  int ExitCode() const {
    int rc = 0;
    for (int32_t s : task_status_) rc = std::max(rc, s < 0 ? 1 : RcOf(s));
    if (rc == 0 && (launch_failed_ || aborted_)) rc = 1;
    return rc;
  }

  const ClientContext& ctx_;
  const StepLaunchOptions& o_;
  pb::StepCompleteRequest* end_;
  asio::io_context io_;
  asio::signal_set signals_, more_signals_, winch_;
  asio::steady_timer hello_timer_, wait_timer_, status_timer_;
  std::unique_ptr<RpcServer> server_;
  pb::StepCreateResponse created_;
  pb::StepRecord step_;
  std::string io_key_, io_address_;
  std::vector<NodeState> node_state_;
  std::map<uint32_t, int> task_node_;
  std::map<const RpcConnection*, int> conn_node_;
  std::vector<int32_t> task_status_;
  std::map<std::pair<uint32_t, int>, std::string> partial_;
  std::map<uint32_t, std::vector<std::string>> fences_;
  std::map<uint32_t, std::set<int>> fence_count_;
  std::vector<uint32_t> stdin_tasks_;
  std::string stdin_mode_, stdout_pattern_, stderr_pattern_;
  int input_fd_ = -1, out_fd_ = 1, err_fd_ = 2, out_task_ = -1, err_task_ = -1;
  std::deque<std::pair<std::string, bool>> stdin_pending_;
  std::optional<Clock::time_point> last_interrupt_;
  bool terminating_ = false, cancelled_ = false, launch_failed_ = false, aborted_ = false;
  bool wait_armed_ = false, stopped_ = false;
};

}  // namespace

std::string LocalAddressToward(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  std::string out = "127.0.0.1";
  if (::getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || !res) {
    auto addr = HostAddressFallback(host);  // a static command: getent for other sources
    hints.ai_flags = AI_NUMERICHOST;
    if (!addr || ::getaddrinfo(addr->c_str(), "9", &hints, &res) != 0 || !res) return out;
  }
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    char buf[INET_ADDRSTRLEN];
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, buf, sizeof(buf)))
      out = buf;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  return out;
}

int RunStep(const ClientContext& ctx, const StepLaunchOptions& options,
            pb::StepCompleteRequest* end) {
  StepRunner runner(ctx, options, end);
  return runner.Run();
}

}  // namespace shoal::cli
