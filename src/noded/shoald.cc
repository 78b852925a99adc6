#include "noded/shoald.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <asio.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>

extern char** environ;

#include "common/auth.h"
#include "common/auth_agent.h"
#include "common/config_files.h"
#include "common/hostlist.h"
#include "common/rpc.h"
#include "common/slurm_conf.h"
#include "noded/cgroup/job_cgroup.h"
#include "noded/configless.h"
#include "noded/gpu_job_map.h"
#include "noded/gres_detect.h"
#include "noded/node_http.h"
#include "noded/node_resources.h"
#include "noded/node_scripts.h"
#include "noded/user_groups.h"
#include "noded/util.h"

namespace shoal::noded {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kMinBackoff{100};
constexpr milliseconds kMaxBackoff{2000};
constexpr seconds kConnectTimeout{5};
constexpr seconds kScanInterval{3};
constexpr seconds kStepdCallTimeout{5};
// A job directory without a live stepd and without done.pb is only declared lost after this
// long (the stepd may still be starting).
constexpr int64_t kLaunchGraceSeconds = 10;

std::string Strerror(int err) { return std::strerror(err); }

std::optional<passwd> LookupUid(uid_t uid, std::vector<char>& buf) {
  passwd pw{};
  passwd* found = nullptr;
  buf.resize(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr)
    return std::nullopt;
  return pw;
}

std::optional<uid_t> LookupUserUid(const std::string& name) {
  if (name.empty()) return std::nullopt;
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    char* end = nullptr;
    unsigned long v = std::strtoul(name.c_str(), &end, 10);
    if (*end == '\0') return static_cast<uid_t>(v);
    return std::nullopt;
  }
  return pw.pw_uid;
}

std::string SelfDir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

pb::Response Ok() { return pb::Response(); }

// Everything decided before the event loop starts (and before daemonizing, so configuration
// errors reach the terminal).
struct NodeSetup {
  ShoaldOptions opts;
  std::string conf_path;
  SlurmConf conf;
  std::string key_file;
  std::optional<ClusterKey> key;
  std::optional<uid_t> slurm_user_uid;
  std::string spool;
  std::vector<std::string> controllers;  // "addr:port" of each SlurmctldHost, primary first
  std::string stepd_path;
  std::string log_file;
  pb::NodeRegisterRequest registration;       // without running_job_ids
  std::shared_ptr<NodeCgroups> cgroups;       // null: cgroups not used
  std::vector<GresDevice> gres_devices;       // gres.conf / AutoDetect (saved in the spool)
  std::string gpu_job_map_dir;                // DCGM exporter's job mapping directory
  std::optional<ConfiglessSetup> configless;  // --conf-server: where the cache lives
};

Result<NodeSetup> Prepare(ShoaldOptions opts) {
  NodeSetup s;
  s.conf_path = opts.conf_path.empty() ? DefaultSlurmConfPath() : opts.conf_path;
  std::optional<ClusterKey> configless_key;
  if (!opts.conf_server.empty()) {
    // Configless: the files come from the controller, the key from --key (never fetched).
    auto setup = MakeConfiglessSetup(opts.conf_server, opts.conf_cache, opts.key_file);
    if (!setup) return setup.status();
    auto key = ClusterKey::Load(setup->key_path);
    if (!key) return key.status();
    auto path = FetchOrUseCache(*setup, *key);
    if (!path) return path.status();
    s.conf_path = *path;
    s.configless = std::move(*setup);
    configless_key = std::move(*key);
  }
  auto conf = LoadSlurmConf(s.conf_path);
  if (!conf) return conf.status();
  s.conf = std::move(*conf);
  for (const auto& w : s.conf.warnings) Log("warning: %s", w.c_str());

  std::string host = ShortHostname();
  std::string name = opts.node_name.empty() ? host : opts.node_name;

  if (s.configless) {
    s.key_file = s.configless->key_path;
    s.key = std::move(configless_key);
  } else {
    s.key_file = AuthPathsFor(s.conf_path, s.conf.Get("AuthInfo")).key_file;
    auto key = ClusterKey::Load(s.key_file);
    if (!key) return key.status();
    s.key = std::move(*key);
  }
  s.slurm_user_uid = LookupUserUid(s.conf.SlurmUser());

  if (s.conf.ControllerAddr().empty())
    return InvalidArgument(s.conf_path + ": SlurmctldHost is not set");
  s.controllers = s.conf.ControllerAddresses();

  // Resources.
  DetectedHardware hw = DetectHardware();
  NodeResources res;
  const NodeConf* nc = s.conf.FindNode(name);
  if (opts.dynamic) {
    std::vector<std::string> warnings;
    auto parsed = ParseNodeConfParams(opts.dyn_conf, &warnings);
    if (!parsed) return parsed.status();
    for (const auto& w : warnings) Log("warning: %s", w.c_str());
    res = std::move(*parsed);
    CompleteResources(res, hw.cpus, hw.memory_mb);
  } else if (nc != nullptr) {
    res = FromNodeConf(*nc);
    CompleteResources(res, 1, 1);
    if (res.cpus != hw.cpus || res.real_memory_mb > hw.memory_mb)
      Log("node %s configured with CPUs=%u RealMemory=%llu; found CPUs=%u RealMemory=%llu",
          name.c_str(), res.cpus, static_cast<unsigned long long>(res.real_memory_mb), hw.cpus,
          static_cast<unsigned long long>(hw.memory_mb));
  } else {
    Log("warning: node %s is not in %s and -Z was not given; reporting detected resources",
        name.c_str(), s.conf_path.c_str());
    CompleteResources(res, hw.cpus, hw.memory_mb);
  }
  // A dynamic node without NodeAddr= is reached at the address it registers from (the
  // controller records it), as in Slurm: its host name may resolve only locally (a pod's).
  if (res.addr.empty() && !opts.dynamic) res.addr = nc ? nc->addr : host;
  if (res.hostname.empty()) res.hostname = nc && !opts.dynamic ? nc->hostname : host;
  if (res.addr.empty() && !opts.dynamic) res.addr = host;
  if (res.hostname.empty()) res.hostname = host;
  if (res.port == 0) res.port = s.conf.SlurmdPort();

  s.spool = ExpandNodePath(s.conf.SlurmdSpoolDir(), name, host);
  while (s.spool.size() > 1 && s.spool.back() == '/') s.spool.pop_back();

  s.log_file = opts.log_file;
  if (s.log_file.empty() && !opts.foreground) {
    std::string conf_log = s.conf.Get("SlurmdLogFile");
    if (!conf_log.empty()) s.log_file = ExpandNodePath(conf_log, name, host);
  }

  const char* override_stepd = std::getenv("SHOAL_STEPD");
  s.stepd_path = override_stepd && *override_stepd ? override_stepd : SelfDir() + "/shoal-stepd";
  if (::access(s.stepd_path.c_str(), X_OK) != 0)
    return Error(ErrorCode::kIoError, s.stepd_path + ": " + Strerror(errno));
  // cgroup.conf: a malformed file stops the daemon, as it stops slurmd.
  std::string cg_note;
  auto cgroups = NodeCgroups::Open(s.conf_path, name, s.spool, &cg_note);
  if (!cgroups) return cgroups.status();
  if (!cg_note.empty()) Log("%s", cg_note.c_str());
  s.cgroups = std::shared_ptr<NodeCgroups>(std::move(*cgroups));

  utsname uts{};
  ::uname(&uts);
  pb::NodeRegisterRequest& r = s.registration;
  r.set_name(name);
  r.set_dynamic(opts.dynamic);
  r.set_cpus(res.cpus);
  r.set_real_memory_mb(res.real_memory_mb);
  for (const auto& f : res.features) r.add_features(f);
  r.set_gres(res.gres);
  r.set_addr(res.addr);
  r.set_port(res.port);
  r.set_hostname(res.hostname);
  if (auto stat = ReadWholeFile("/proc/stat")) r.set_boot_time(ParseBootTime(*stat));
  r.set_start_time(NowSeconds());
  r.set_version(kShoalVersion);
  r.set_sockets(res.sockets * res.boards);
  r.set_cores_per_socket(res.cores_per_socket);
  r.set_threads_per_core(res.threads_per_core);
  r.set_os(std::string(uts.sysname) + " " + uts.release);
  r.set_arch(uts.machine);
  // gres.conf and GPU autodetection: what is reported is what was found.
  auto gres = LoadNodeGres(s.conf_path, name, res.gres);
  if (!gres) return gres.status();
  for (const auto& m : gres->log) Log("%s", m.c_str());
  if (gres->detected) {
    r.set_gres(gres->gres);
    r.set_gres_detected(true);
  }
  s.gres_devices = std::move(gres->devices);
  s.gpu_job_map_dir = GpuJobMapDir(s.conf.Get("SlurmdParameters"), s.spool);
  // For the controller's registration checks: a node daemon alone on its host reports what it
  // found, as slurmd does. Several on one host (-N names other than the host's, like Slurm's
  // multiple-slurmd builds) or SlurmdParameters=config_overrides report their configuration.
  if (!opts.dynamic && nc != nullptr && name == host &&
      s.conf.Get("SlurmdParameters").find("config_overrides") == std::string::npos) {
    r.set_cpus(hw.cpus);
    r.set_real_memory_mb(hw.memory_mb);
    r.set_tmp_disk_mb(TmpDiskMb(s.conf.Get("TmpFS", "/tmp")));
  }
  s.opts = std::move(opts);
  return s;
}

class NodeDaemon {
 public:
  const std::shared_ptr<NodeCgroups>& cgroups() const { return s_.cgroups; }
  NodeDaemon(asio::io_context& io, NodeSetup setup)
      : io_(io),
        s_(std::move(setup)),
        name_(s_.registration.name()),
        reconnect_timer_(io),
        connect_timer_(io),
        heartbeat_timer_(io),
        scan_timer_(io),
        child_signals_(io, SIGCHLD),
        scripts_(std::make_unique<NodeScripts>(io, s_.conf, s_.spool, name_)) {
    ReapChildren();
  }

  Status Start() {
    if (Status st = MakeDirs(s_.spool, 0755); !st.ok()) return st;
    ::chmod(s_.spool.c_str(), 0755);
    if (!SaveGresDevices(s_.spool, s_.gres_devices))
      Log("cannot write %s", GresDevicesPath(s_.spool).c_str());
    UpdateGpuJobMap();
    auto server = RpcServer::Listen(
        io_, "unix:" + s_.spool + "/" + kShoaldSocket,
        [this](const RpcConnectionPtr& conn, const pb::Credential& cred, const std::string& body,
               Responder respond) { HandleNotification(conn, cred, body, std::move(respond)); },
        0600);
    if (!server) return server.status();
    notify_server_ = std::move(*server);
    // srun reaches the node here to launch the tasks of a step (LaunchTasks).
    if (s_.registration.port() != 0) {
      // HTTP on the same port: /livez, /readyz, /healthz, /metrics (node_http.h).
      auto tcp = RpcServer::Listen(
          io_, "0.0.0.0:" + std::to_string(s_.registration.port()),
          [this](const RpcConnectionPtr& conn, const pb::Credential& cred, const std::string& body,
                 Responder respond) { HandleUserRequest(conn, cred, body, std::move(respond)); },
          0666, [this](const HttpRequest& req) { return NodeHttpAnswer(req, HttpState()); });
      // Batch jobs do not need it: a node whose port is taken still runs them, and says why
      // srun cannot reach it.
      if (tcp)
        user_server_ = std::move(*tcp);
      else
        Log("error: cannot listen on port %u (%s): srun cannot launch tasks on this node",
            s_.registration.port(), tcp.error().c_str());
    }
    if (!s_.opts.agent_socket.empty()) {
      const std::string& path = s_.opts.agent_socket;
      if (auto slash = path.rfind('/'); slash != std::string::npos && slash > 0)
        (void)MakeDirs(path.substr(0, slash), 0755);
      auto agent = RpcServer::Listen(
          io_, "unix:" + path,
          [this](const RpcConnectionPtr& c, const pb::Credential&, const std::string& body,
                 Responder respond) { respond(AnswerAuthAgent(*s_.key, *c, body, NowSeconds())); },
          0666);
      if (!agent) return agent.status();
      agent_server_ = std::move(*agent);
      Log("auth agent on %s", path.c_str());
    }
    Log("shoald %s started: node %s, spool %s, controller %s", kShoalVersion, name_.c_str(),
        s_.spool.c_str(), Controller().c_str());
    std::vector<uint32_t> known = RunningJobIds();
    if (!known.empty()) Log("found %zu job(s) in the spool", known.size());
    Connect();
    ScheduleScan();
    StartHealthChecks();
    return Status::Ok();
  }

 private:
  // ------------------------------------------------------------------------------------------
  // Controller stream
  // ------------------------------------------------------------------------------------------

  pb::Credential Sign(const pb::Request& req) const {
    return s_.key->Sign(0, 0, req.SerializeAsString(), NowSeconds());
  }

  void Connect() {
    uint64_t attempt = ++attempt_;
    connect_timer_.expires_after(kConnectTimeout);
    connect_timer_.async_wait([this, attempt](const asio::error_code& ec) {
      if (ec || attempt != attempt_ || conn_) return;
      ++attempt_;  // the late result of this attempt is dropped
      ConnectFailed("connect timed out");
    });
    RpcConnect(
        io_, Controller(),
        [this](const RpcConnectionPtr& conn, const pb::Credential& cred, const std::string& body,
               Responder respond) {
          HandleControllerRequest(conn, cred, body, std::move(respond));
        },
        [this, attempt](Result<RpcConnectionPtr> result) {
          if (attempt != attempt_) {
            if (result) (*result)->Close();
            return;
          }
          connect_timer_.cancel();
          if (!result) return ConnectFailed(result.error());
          OnConnected(*result);
        });
  }

  // The controller to try now; a failure or a standby answer moves on to the next (backups).
  const std::string& Controller() const {
    return s_.controllers[controller_index_ % s_.controllers.size()];
  }
  void NextController() { controller_index_ = (controller_index_ + 1) % s_.controllers.size(); }

  void ConnectFailed(const std::string& why) {
    NextController();
    auto now = Clock::now();
    if (!down_logged_ || now - last_down_log_ > seconds(60)) {
      Log("cannot reach the controller at %s: %s (retrying)", Controller().c_str(), why.c_str());
      down_logged_ = true;
      last_down_log_ = now;
    }
    ScheduleReconnect();
  }

  void ScheduleReconnect() {
    if (reconnect_pending_) return;
    reconnect_pending_ = true;
    reconnect_timer_.expires_after(backoff_);
    backoff_ = std::min(backoff_ * 2, kMaxBackoff);
    reconnect_timer_.async_wait([this](const asio::error_code& ec) {
      reconnect_pending_ = false;
      if (!ec) Connect();
    });
  }

  void OnConnected(const RpcConnectionPtr& conn) {
    conn_ = conn;
    registered_ = false;
    last_rx_ = Clock::now();
    std::weak_ptr<RpcConnection> weak = conn;
    conn->OnClose([this, weak] {
      auto c = weak.lock();
      if (c && c == conn_) OnDisconnected();
    });
    Register();
  }

  void OnDisconnected() {
    if (registered_) Log("lost the controller connection; reconnecting");
    conn_.reset();
    registered_ = false;
    heartbeat_timer_.cancel();
    ScheduleReconnect();
  }

  void Register() {
    if (!conn_) return;
    pb::Request req;
    pb::NodeRegisterRequest* r = req.mutable_node_register();
    *r = s_.registration;
    for (uint32_t id : RunningJobIds()) r->add_running_job_ids(id);
    RpcConnectionPtr conn = conn_;
    conn->Send(req, Sign(req), [this, conn](Result<pb::Response> resp) {
      if (conn != conn_) return;
      if (!resp) return;  // the close handler reconnects
      last_rx_ = Clock::now();
      if (resp->rc() != 0) {
        Log("registration refused by the controller: %s (rc=%d)", resp->error().c_str(),
            resp->rc());
        if (resp->rc() == static_cast<int>(ErrorCode::kInStandby)) NextController();
        conn->Close();
        return;
      }
      const pb::NodeRegisterResponse& rr = resp->node_register();
      registered_ = true;
      backoff_ = kMinBackoff;
      down_logged_ = false;
      heartbeat_interval_ = seconds(rr.heartbeat_interval_s() ? rr.heartbeat_interval_s() : 5);
      Log("registered with the controller as %s (heartbeat %llds)", name_.c_str(),
          static_cast<long long>(heartbeat_interval_.count()));
      for (uint32_t id : rr.unknown_job_ids()) {
        Log("job %u: unknown to the controller; terminating it", id);
        pb::Request term;
        term.mutable_terminate_job()->set_job_id(id);
        term.mutable_terminate_job()->set_kill_wait_s(s_.conf.KillWait());
        ForwardToSteps(id, std::nullopt, term);
        if (!FileExists(JobDir(s_.spool, id))) continue;
        ForwardToStepd(id, term, [id](const pb::Response& r) {
          if (r.rc() != 0) Log("job %u: terminate failed: %s", id, r.error().c_str());
        });
      }
      ScheduleHeartbeat();
      ForwardCompletions();
    });
  }

  void ScheduleHeartbeat() {
    heartbeat_timer_.expires_after(heartbeat_interval_);
    heartbeat_timer_.async_wait([this](const asio::error_code& ec) {
      if (ec || !conn_ || !registered_) return;
      // A controller that stopped answering (host gone, stream wedged) is treated as lost.
      auto silence = Clock::now() - last_rx_;
      if (silence > std::max<Clock::duration>(heartbeat_interval_ * 4, seconds(20))) {
        Log("no answer from the controller for %llds; reconnecting",
            static_cast<long long>(std::chrono::duration_cast<seconds>(silence).count()));
        conn_->Close();
        return;
      }
      SendHeartbeat();
      ScheduleHeartbeat();
    });
  }

  void SendHeartbeat() {
    pb::Request req;
    pb::HeartbeatRequest* hb = req.mutable_heartbeat();
    hb->set_name(name_);
    for (uint32_t id : RunningJobIds()) hb->add_running_job_ids(id);
    if (auto load = ReadWholeFile("/proc/loadavg"))
      hb->set_cpu_load(static_cast<uint32_t>(std::strtod(load->c_str(), nullptr) * 100));
    if (auto mem = ReadWholeFile("/proc/meminfo"))
      hb->set_free_memory_mb(ParseMeminfoMB(*mem, "MemAvailable"));
    RpcConnectionPtr conn = conn_;
    conn->Send(req, Sign(req), [this, conn](Result<pb::Response> resp) {
      if (conn != conn_ || !resp) return;
      last_rx_ = Clock::now();
      if (resp->rc() == static_cast<int32_t>(ErrorCode::kInvalidNodeName)) {
        Log("controller does not know this node any more: registering again");
        registered_ = false;
        Register();
      } else if (resp->rc() != 0) {
        Log("heartbeat refused: %s", resp->error().c_str());
      }
    });
  }

  // ------------------------------------------------------------------------------------------
  // Commands from the controller
  // ------------------------------------------------------------------------------------------

  bool Authorized(const pb::Credential& cred, const std::string& body, std::string* why) const {
    Status st = s_.key->Verify(cred, body, NowSeconds());
    if (!st.ok()) {
      *why = st.message();
      return false;
    }
    if (cred.uid() == 0 || (s_.slurm_user_uid && cred.uid() == *s_.slurm_user_uid)) return true;
    *why = "uid " + std::to_string(cred.uid()) + " may not command nodes";
    return false;
  }

  void HandleControllerRequest(const RpcConnectionPtr& conn, const pb::Credential& cred,
                               const std::string& body, Responder respond) {
    last_rx_ = Clock::now();
    std::string why;
    if (!Authorized(cred, body, &why)) {
      Log("rejected a request from %s: %s", conn->peer().c_str(), why.c_str());
      respond(ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied"));
      return;
    }
    pb::Request req;
    if (!req.ParseFromString(body)) {
      respond(ErrorResponse(ErrorCode::kProtocol, "malformed request"));
      return;
    }
    switch (req.body_case()) {
      case pb::Request::kLaunchBatch:
        respond(Launch(req.launch_batch()));
        return;
      case pb::Request::kSignalJob:
      case pb::Request::kTerminateJob: {
        bool signal = req.body_case() == pb::Request::kSignalJob;
        uint32_t id = signal ? req.signal_job().job_id() : req.terminate_job().job_id();
        bool has_step = signal ? req.signal_job().has_step_id() : req.terminate_job().has_step_id();
        uint32_t step = signal ? req.signal_job().step_id() : req.terminate_job().step_id();
        // srun steps first (all of the job's, or the one named), then the batch script.
        bool any_step =
            ForwardToSteps(id, has_step ? std::optional<uint32_t>(step) : std::nullopt, req);
        if (!signal && !has_step) {
          ended_jobs_.insert(id);  // its cgroup may go (SweepCgroups)
          LeaveTerminateFor(id, req.terminate_job());
        }
        if (!signal && !has_step && scripts_->PrologRunning(id)) ended_in_prolog_.insert(id);
        if (has_step) {
          respond(Ok());
        } else if (!FileExists(JobDir(s_.spool, id)) && (any_step || !signal)) {
          respond(Ok());  // nothing of the batch script here (another node, or an allocation)
        } else {
          ForwardToStepd(id, req, std::move(respond));
        }
        return;
      }
      case pb::Request::kPing:
        respond(Ok());
        return;
      case pb::Request::kJobProlog:
        respond(Ok());
        RunJobScript(req.job_prolog());
        return;
      case pb::Request::kRebootNode:
        respond(RunRebootProgram(req.reboot_node()));
        return;
      case pb::Request::kReconfigureNode:
        respond(Reconfigure(req.reconfigure_node()));
        return;
      default:
        respond(ErrorResponse(ErrorCode::kNotSupported, "request not supported by shoald"));
        return;
    }
  }

  // scontrol reconfigure, pushed by the controller: configless nodes cache the new files
  // first; then slurm.conf is reread. Settings read per use (KillWait, RebootProgram, ...) take
  // effect now; Prolog/Epilog, cgroup and GRES set-up keep what the daemon started with (as
  // slurmd, which needs a restart for those). A changed definition of this node re-registers.
  pb::Response Reconfigure(const pb::ReconfigureNodeRequest& req) {
    if (s_.configless && req.has_files() && req.files().files_size() > 0) {
      Status st = WriteConfigCache(s_.configless->cache_dir, req.files(), s_.configless->key_path);
      if (!st.ok()) {
        Log("reconfigure: cannot cache the configuration: %s", st.message().c_str());
        return ErrorResponse(st.code(), st.message());
      }
    }
    auto conf = LoadSlurmConf(s_.conf_path);
    if (!conf) {
      Log("reconfigure: %s; keeping the configuration in force", conf.error().c_str());
      return ErrorResponse(conf.status().code(), conf.error());
    }
    const NodeConf* before = s_.conf.FindNode(name_);
    const NodeConf* after = conf->FindNode(name_);
    bool reregister = false;
    pb::NodeRegisterRequest& r = s_.registration;
    if (!r.dynamic() && after != nullptr) {
      std::vector<std::string> features(after->features.begin(), after->features.end());
      if (!std::equal(features.begin(), features.end(), r.features().begin(), r.features().end())) {
        r.clear_features();
        for (const auto& f : features) r.add_features(f);
        reregister = true;
      }
      // A daemon that reports its configuration (not its hardware) reports the new one.
      if (before != nullptr && r.cpus() == before->cpus &&
          r.real_memory_mb() == before->real_memory_mb &&
          (r.cpus() != after->cpus || r.real_memory_mb() != after->real_memory_mb)) {
        r.set_cpus(after->cpus);
        r.set_real_memory_mb(after->real_memory_mb);
        r.set_sockets(after->sockets * std::max<uint32_t>(after->boards, 1));
        r.set_cores_per_socket(after->cores_per_socket);
        r.set_threads_per_core(after->threads_per_core);
        reregister = true;
      }
    }
    s_.conf = std::move(*conf);
    Log("reconfigured from %s%s", s_.conf_path.c_str(),
        reregister ? "; registering the new node definition" : "");
    if (reregister) asio::post(io_, [this] { Register(); });
    return Ok();
  }

  // scontrol reboot: RebootProgram runs as root, detached (setsid, double fork) so that it may
  // stop this shoald and outlive it; the controller waits for the node to register again.
  pb::Response RunRebootProgram(const pb::RebootNodeRequest& req) {
    std::string program = req.reboot_program();
    if (program.empty()) program = s_.conf.Get("RebootProgram");
    if (program.empty())
      return ErrorResponse(ErrorCode::kInvalidArgument, "RebootProgram isn't defined");
    Log("reboot requested: running RebootProgram %s", program.c_str());
    pid_t pid = ::fork();
    if (pid < 0) return ErrorResponse(ErrorCode::kInternal, "fork: " + Strerror(errno));
    if (pid == 0) {
      ::setsid();
      if (::fork() != 0) ::_exit(0);
      ResetSignals();
      CloexecFrom3();
      int null = ::open("/dev/null", O_RDWR);
      if (null >= 0) {
        ::dup2(null, 0);
        ::dup2(null, 1);
      }
      ::execl("/bin/sh", "sh", "-c", program.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::waitpid(pid, nullptr, 0);
    return Ok();
  }

  pb::Response Launch(const pb::LaunchBatchRequest& launch) {
    const pb::JobRecord& job = launch.job();
    const pb::JobSpec& spec = job.spec();
    uint32_t id = job.job_id();
    if (id == 0) return ErrorResponse(ErrorCode::kInvalidJobId, "Invalid job id specified");
    std::string dir = JobDir(s_.spool, id);
    if (FileExists(dir)) return Ok();  // a retried launch: already here

    std::vector<char> pwbuf;
    auto pw = LookupUid(spec.uid(), pwbuf);
    if (!pw) {
      Log("job %u: uid %u not found on this node: launch refused", id, spec.uid());
      return ErrorResponse(ErrorCode::kInvalidArgument,
                           "User id " + std::to_string(spec.uid()) + " not found on node " + name_);
    }
    if (!spec.user_name().empty() && spec.user_name() != pw->pw_name)
      Log("job %u: user name %s does not match uid %u (%s) on this node; running as uid %u", id,
          spec.user_name().c_str(), spec.uid(), pw->pw_name, spec.uid());
    if (spec.script().empty())
      return ErrorResponse(ErrorCode::kInvalidArgument, "batch script is empty");

    if (::mkdir(dir.c_str(), 0700) != 0) {
      if (errno == EEXIST) return Ok();
      return ErrorResponse(ErrorCode::kIoError, "mkdir " + dir + ": " + Strerror(errno));
    }
    auto fail = [&](const std::string& what) {
      Log("job %u: launch failed: %s", id, what.c_str());
      (void)RemoveTree(dir);
      return ErrorResponse(ErrorCode::kIoError, what);
    };
    Status st = WriteFileAtomic(dir + "/" + kLaunchFile, launch.SerializeAsString(), 0600, false);
    if (!st.ok()) return fail(st.message());
    if (Status sc = WriteScript(dir + "/" + kScriptFile, spec); !sc.ok()) return fail(sc.message());
    // The user may execute the script (and nothing else) through the directory.
    if (::chmod(dir.c_str(), 0711) != 0) return fail("chmod " + dir + ": " + Strerror(errno));
    launched_at_[id] = NowSeconds();
    if (scripts_->has_prolog() && !scripts_->PrologRan(id)) {
      // The script starts once the Prolog succeeded; a failure is the job's result.
      scripts_->Prolog(job, [this, id](const ScriptResult& r) { PrologBeforeBatch(id, r); });
      return Ok();
    }
    if (Status sp = SpawnStepd(id, std::nullopt, std::make_pair(spec.uid(), spec.gid())); !sp.ok())
      return fail(sp.message());
    UpdateGpuJobMap();
    if (s_.opts.verbose > 0) Log("job %u: launched for uid %u", id, spec.uid());
    return Ok();
  }

  // Requests from users' commands on the node's TCP port: only srun's LaunchTasks.
  void HandleUserRequest(const RpcConnectionPtr& conn, const pb::Credential& cred,
                         const std::string& body, const Responder& respond) {
    if (Status st = s_.key->Verify(cred, body, NowSeconds()); !st.ok()) {
      Log("rejected a request from %s: %s", conn->peer().c_str(), st.message().c_str());
      respond(
          ErrorResponse(ErrorCode::kAuthFailure, "Protocol authentication error: " + st.message()));
      return;
    }
    pb::Request req;
    if (!req.ParseFromString(body)) {
      respond(ErrorResponse(ErrorCode::kProtocol, "malformed request"));
      return;
    }
    if (req.body_case() == pb::Request::kPing) {
      respond(Ok());
      return;
    }
    if (req.body_case() != pb::Request::kLaunchTasks) {
      respond(ErrorResponse(ErrorCode::kNotSupported, "request not supported by shoald"));
      return;
    }
    // The job's first step on this node runs its Prolog first (unless it ran already).
    pb::JobRecord prolog_job;
    pb::Response r = LaunchTasks(cred, *req.mutable_launch_tasks(), &prolog_job);
    if (r.rc() != 0 || prolog_job.job_id() == 0) {
      respond(r);
      return;
    }
    auto held = std::make_shared<pb::Request>(std::move(req));
    scripts_->Prolog(prolog_job, [this, cred, held, respond, prolog_job](const ScriptResult& res) {
      if (!res.ok()) {
        ReportJobScript(prolog_job.job_id(), false, res);
        respond(ErrorResponse(ErrorCode::kIoError, "Job prolog failed"));
        return;
      }
      respond(LaunchTasks(cred, *held->mutable_launch_tasks(), nullptr));
    });
  }

  // Starts this node's part of a step: only with a step credential the controller signed, for
  // its owner (or root), on a node the credential names.
  // With `prolog_job`, a launch that needs the job's Prolog first returns Ok with *prolog_job
  // filled in, and starts nothing.
  pb::Response LaunchTasks(const pb::Credential& cred, pb::LaunchTasksRequest& lt,
                           pb::JobRecord* prolog_job) {
    const pb::SignedStepCredential& signed_cred = lt.cred();
    pb::StepCredential sc;
    if (!s_.key->Verify(signed_cred.sig(), signed_cred.body(), NowSeconds()).ok() ||
        signed_cred.sig().uid() != 0 || !sc.ParseFromString(signed_cred.body())) {
      Log("refused a task launch from uid %u: invalid step credential", cred.uid());
      return ErrorResponse(ErrorCode::kAccessDenied, "Invalid job credential");
    }
    uint32_t job = sc.job_id(), step = sc.step_id();
    if (cred.uid() != sc.uid() && cred.uid() != 0) {
      Log("step %u.%u: launch refused: requested by uid %u, credential for uid %u", job, step,
          cred.uid(), sc.uid());
      return ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied");
    }
    if (lt.step().job_id() != job || lt.step().step_id() != step ||
        static_cast<int>(lt.node_id()) >= sc.nodes_size() || sc.nodes(lt.node_id()) != name_)
      return ErrorResponse(ErrorCode::kAccessDenied, "Invalid job credential");
    std::vector<char> pwbuf;
    auto pw = LookupUid(sc.uid(), pwbuf);
    if (!pw)
      return ErrorResponse(ErrorCode::kInvalidArgument,
                           "User id " + std::to_string(sc.uid()) + " not found on node " + name_);
    // Identity from the credential only.
    lt.mutable_step()->set_uid(sc.uid());
    lt.set_gid(sc.gid());
    lt.set_user_name(pw->pw_name);
    if (prolog_job && scripts_->has_prolog() && !scripts_->PrologRan(job)) {
      *prolog_job = JobForScripts(lt, sc);
      return Ok();
    }
    std::string dir = StepDir(s_.spool, job, step);
    if (::mkdir(dir.c_str(), 0700) != 0) {
      if (errno == EEXIST) return Ok();  // a retried launch
      return ErrorResponse(ErrorCode::kIoError, "mkdir " + dir + ": " + Strerror(errno));
    }
    Status st = WriteFileAtomic(dir + "/" + kLaunchFile, lt.SerializeAsString(), 0600, false);
    if (st.ok()) st = SpawnStepd(job, step, std::make_pair(sc.uid(), sc.gid()));
    if (!st.ok()) {
      Log("step %u.%u: launch failed: %s", job, step, st.message().c_str());
      (void)RemoveTree(dir);
      return ErrorResponse(ErrorCode::kIoError, st.message());
    }
    UpdateGpuJobMap();
    if (s_.opts.verbose > 0) Log("step %u.%u: launched for uid %u", job, step, sc.uid());
    return Ok();
  }

  // What the Prolog of a job known here only through a step launch sees of it.
  static pb::JobRecord JobForScripts(const pb::LaunchTasksRequest& lt,
                                     const pb::StepCredential& sc) {
    pb::JobRecord job;
    job.set_job_id(sc.job_id());
    job.mutable_spec()->set_uid(sc.uid());
    job.mutable_spec()->set_gid(sc.gid());
    job.mutable_spec()->set_user_name(sc.user_name());
    job.set_partition(lt.step().partition());
    std::string nodelist;
    for (const std::string& e : lt.environment()) {
      auto value = [&e](const char* key) -> std::optional<std::string> {
        size_t n = std::strlen(key);
        if (e.size() > n && e.compare(0, n, key) == 0 && e[n] == '=') return e.substr(n + 1);
        return std::nullopt;
      };
      if (auto v = value("SLURM_JOB_NODELIST")) nodelist = *v;
      if (auto v = value("SLURM_JOB_ACCOUNT")) job.mutable_spec()->set_account(*v);
      if (auto v = value("SLURM_JOB_NAME")) job.mutable_spec()->set_name(*v);
    }
    auto names = ExpandHostlist(nodelist);
    if (names && !names->empty()) {
      for (auto& n : *names) job.add_nodes(n);
    } else {
      for (const auto& n : sc.nodes()) job.add_nodes(n);
    }
    return job;
  }

  // Batch launch: the Prolog ended; start the script, or report the job failed to launch.
  void PrologBeforeBatch(uint32_t id, const ScriptResult& r) {
    std::string dir = JobDir(s_.spool, id);
    if (!FileExists(dir)) return;
    if (r.ok() && ended_in_prolog_.erase(id)) {
      // Terminated while its Prolog ran: the script never starts.
      pb::JobCompleteRequest done;
      done.set_node_name(name_);
      done.set_job_id(id);
      done.set_exit_status(SIGTERM);
      done.set_cancelled(true);
      done.set_end_time(NowSeconds());
      Status st = WriteFileAtomic(dir + "/" + kDoneFile, done.SerializeAsString(), 0600);
      if (!st.ok()) Log("job %u: %s", id, st.message().c_str());
      ForwardCompletion(id);
      return;
    }
    ended_in_prolog_.erase(id);
    if (r.ok()) {
      if (Status sp = SpawnStepd(id); sp.ok()) return;
    }
    pb::JobCompleteRequest done;
    done.set_node_name(name_);
    done.set_job_id(id);
    done.set_launch_failed(true);
    done.set_prolog_failed(!r.ok());
    done.set_exit_status(r.status < 0 ? (1 << 8) : r.status);
    done.set_failure(r.ok() ? "cannot start shoal-stepd" : "Job prolog failed");
    done.set_end_time(NowSeconds());
    Status st = WriteFileAtomic(dir + "/" + kDoneFile, done.SerializeAsString(), 0600);
    if (!st.ok()) Log("job %u: %s", id, st.message().c_str());
    ForwardCompletion(id);
  }

  // Controller -> node JobProlog: PrologFlags=Alloc's Prolog at allocation, or the Epilog of a
  // job that ended; the outcome goes back as NodePrologEpilog.
  void RunJobScript(const pb::JobPrologRequest& req) {
    uint32_t id = req.job().job_id();
    bool epilog = req.epilog();
    auto report = [this, id, epilog](const ScriptResult& r) {
      if (epilog) ended_jobs_.insert(id);  // the extern step's cgroup may go now
      ReportJobScript(id, epilog, r);
    };
    if (!epilog && scripts_->flags().contain && s_.cgroups) {
      // PrologFlags=Contain: the extern step exists before the Prolog runs, as in Slurm.
      Status st = CreateExternStep(s_.cgroups.get(), req.job(), name_);
      if (!st.ok()) Log("job %u: extern step: %s", id, st.message().c_str());
    }
    if (epilog)
      EpilogWhenJobGone(req.job(), report, 0);
    else
      scripts_->Prolog(req.job(), report);
  }

  // The Epilog runs once nothing of the job is left here (its steps and batch script end on
  // the same TerminateJob), or after KillWait and some slack.
  void EpilogWhenJobGone(const pb::JobRecord& job, ScriptDone done, int waited_ms) {
    uint32_t id = job.job_id();
    bool busy =
        StepdAlive(JobDir(s_.spool, id)) && !FileExists(JobDir(s_.spool, id) + "/" + kDoneFile);
    for (const StepDirId& s : ListStepDirs(s_.spool)) busy |= s.job_id == id;
    int limit_ms = static_cast<int>(s_.conf.KillWait() + 15) * 1000;
    if (!busy || waited_ms >= limit_ms) {
      scripts_->Epilog(job, std::move(done));
      return;
    }
    auto timer = std::make_shared<asio::steady_timer>(io_, milliseconds(200));
    timer->async_wait([this, timer, job, done, waited_ms](const asio::error_code&) {
      EpilogWhenJobGone(job, done, waited_ms + 200);
    });
  }

  void ReportJobScript(uint32_t id, bool epilog, const ScriptResult& r) {
    pb::Request req;
    auto* pe = req.mutable_prolog_epilog();
    pe->set_node_name(name_);
    pe->set_job_id(id);
    pe->set_epilog(epilog);
    pe->set_status(r.ok() ? 0 : (r.status <= 0 ? (1 << 8) : r.status));
    pe->set_output(r.output.substr(0, 4096));
    SendToController(req);
  }

  // Best effort with retries: a report lost with the connection is sent again (20 tries, 1 s
  // apart while the controller is away).
  void SendToController(const pb::Request& req, int tries = 0) {
    if (!conn_ || !registered_) {
      if (tries >= 20) return;
      auto timer = std::make_shared<asio::steady_timer>(io_, seconds(1));
      timer->async_wait(
          [this, timer, req, tries](const asio::error_code&) { SendToController(req, tries + 1); });
      return;
    }
    RpcConnectionPtr conn = conn_;
    conn->Send(req, Sign(req), [this, req, tries](Result<pb::Response> resp) {
      if (resp) {
        last_rx_ = Clock::now();
        if (resp->rc() != 0) Log("controller refused a report: %s", resp->error().c_str());
        return;
      }
      if (tries < 20) SendToController(req, tries + 1);
    });
  }

  // HealthCheckProgram: the node's state comes from the controller (asked only when
  // HealthCheckNodeState is not ANY); a failure drains the node through NodeDrain.
  void StartHealthChecks() {
    scripts_->StartHealthChecks(
        [this](std::function<void(std::optional<NodeStateForHealth>)> answer) {
          if (!conn_ || !registered_) return answer(std::nullopt);
          pb::Request req;
          req.mutable_node_query()->add_names(name_);
          RpcConnectionPtr conn = conn_;
          conn->Send(req, Sign(req), [answer](Result<pb::Response> resp) {
            if (!resp || resp->rc() != 0 || resp->node_query().nodes_size() == 0)
              return answer(std::nullopt);
            const pb::NodeRecord& n = resp->node_query().nodes(0);
            NodeStateForHealth st;
            st.idle = n.base_state() == pb::NODE_IDLE;
            st.alloc = n.base_state() == pb::NODE_ALLOCATED;
            st.mixed = n.base_state() == pb::NODE_MIXED;
            st.drain = n.drain();
            answer(st);
          });
        },
        [this](std::string reason) {
          pb::Request req;
          auto* d = req.mutable_node_drain();
          d->set_node_name(name_);
          d->set_reason(std::move(reason));
          d->set_health_check(true);
          SendToController(req);
        });
  }

  // Signal/terminate to the supervisors of a job's steps here (one step, or all). Best effort:
  // a supervisor that is gone has nothing left to signal. True when any step was found.
  bool ForwardToSteps(uint32_t job, std::optional<uint32_t> step, const pb::Request& req) {
    bool any = false;
    for (const StepDirId& id : ListStepDirs(s_.spool)) {
      if (id.job_id != job || (step && id.step_id != *step)) continue;
      any = true;
      std::string sock = StepDir(s_.spool, id.job_id, id.step_id) + "/" + kStepdSocket;
      RpcConnect(
          io_, "unix:" + sock,
          [](const RpcConnectionPtr&, const pb::Credential&, const std::string&, Responder r) {
            r(ErrorResponse(ErrorCode::kNotSupported, "not supported"));
          },
          [this, req, id](Result<RpcConnectionPtr> conn) {
            if (!conn) return;
            RpcConnectionPtr c = *conn;
            auto timer = std::make_shared<asio::steady_timer>(io_, kStepdCallTimeout);
            timer->async_wait([c](const asio::error_code& ec) {
              if (!ec) c->Close();
            });
            c->Send(req, Sign(req), [c, timer, id](Result<pb::Response> r) {
              timer->cancel();
              c->Close();
              if (!r || r->rc() != 0)
                Log("step %u.%u: supervisor did not take the request: %s", id.job_id, id.step_id,
                    r ? r->error().c_str() : r.error().c_str());
            });
          });
    }
    return any;
  }

  static Status WriteScript(const std::string& path, const pb::JobSpec& spec) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0500);
    if (fd < 0) return Error(ErrorCode::kIoError, "create " + path + ": " + Strerror(errno));
    const std::string& text = spec.script();
    size_t off = 0;
    while (off < text.size()) {
      ssize_t n = ::write(fd, text.data() + off, text.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = errno;
        ::close(fd);
        return Error(ErrorCode::kIoError, "write " + path + ": " + Strerror(err));
      }
      off += static_cast<size_t>(n);
    }
    if (::fchown(fd, spec.uid(), spec.gid()) != 0 || ::fchmod(fd, 0500) != 0) {
      int err = errno;
      ::close(fd);
      return Error(ErrorCode::kIoError, "chown " + path + ": " + Strerror(err));
    }
    ::close(fd);
    return Status::Ok();
  }

  // Starts shoal-stepd detached: posix_spawn (vfork-like, so the cost does not grow with
  // shoald's size) in a new session, default signal handling, stdio on /dev/null and no
  // inherited descriptors. Returns once it has exec'd; exec errors come back from posix_spawn.
  // shoald reaps its stepds (SIGCHLD); after a shoald restart they belong to init.
  // `owner` (uid, gid): the job's user, whose name and groups shoald resolves (cached) and hands
  // over, so the step need not load the name service; without it the step resolves them.
  Status SpawnStepd(uint32_t id, std::optional<uint32_t> step = std::nullopt,
                    std::optional<std::pair<uid_t, gid_t>> owner = std::nullopt) {
    std::vector<std::string> args = {s_.stepd_path,      "--spool", s_.spool,   "--job",
                                     std::to_string(id), "--node",  name_,      "--conf",
                                     s_.conf_path,       "--key",   s_.key_file};
    if (step) {
      args.push_back("--step");
      args.push_back(std::to_string(*step));
    }
    if (owner) {
      if (auto who = identities_.Get(owner->first, owner->second, NowSeconds())) {
        args.insert(args.end(), {"--user", who->user, "--home", who->home, "--shell", who->shell,
                                 "--groups", FormatGroupList(who->groups)});
      }
    }
    std::string cluster = s_.conf.ClusterName();
    if (!cluster.empty()) {
      args.push_back("--cluster");
      args.push_back(cluster);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    pid_t pid = 0;
    int rc = SpawnDetached(argv.data(), environ, -1, &pid);
    if (rc != 0) return Error(ErrorCode::kIoError, "exec " + s_.stepd_path + ": " + Strerror(rc));
    return Status::Ok();
  }

  void ReapChildren() {
    child_signals_.async_wait([this](const asio::error_code& ec, int) {
      if (ec) return;
      int status = 0;
      pid_t pid;
      while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) scripts_->OnChildExit(pid, status);
      ReapChildren();
    });
  }

  // A TerminateJob for a batch job whose stepd is still starting (its socket not served yet, on a
  // loaded node for seconds) is left in the job directory: the stepd reads it after it listens
  // and before it starts the script, so the request is taken either way.
  void LeaveTerminateFor(uint32_t id, const pb::TerminateJobRequest& term) {
    std::string dir = JobDir(s_.spool, id);
    if (!FileExists(dir) || FileExists(dir + "/" + kDoneFile)) return;
    Status st = WriteFileAtomic(dir + "/" + kTerminateFile, term.SerializeAsString(), 0600, false);
    if (!st.ok()) Log("job %u: %s", id, st.message().c_str());
  }

  // Delivers a SignalJob/TerminateJob to the job's stepd and answers with its response.
  void ForwardToStepd(uint32_t id, const pb::Request& req, Responder respond, int tries = 0) {
    std::string dir = JobDir(s_.spool, id);
    if (!FileExists(dir)) {
      respond(ErrorResponse(ErrorCode::kInvalidJobId, "Invalid job id specified"));
      return;
    }
    if (FileExists(dir + "/" + kDoneFile)) {
      respond(Ok());  // already finished
      return;
    }
    RpcConnect(
        io_, "unix:" + dir + "/" + kStepdSocket,
        [](const RpcConnectionPtr&, const pb::Credential&, const std::string&, Responder r) {
          r(ErrorResponse(ErrorCode::kNotSupported, "not supported"));
        },
        [this, id, req, respond, tries, dir](Result<RpcConnectionPtr> conn) {
          if (!conn) {
            if (FileExists(dir + "/" + kDoneFile)) return respond(Ok());
            if (!FileExists(dir))
              return respond(ErrorResponse(ErrorCode::kInvalidJobId, "Invalid job id specified"));
            if ((StepdAlive(dir) || RecentlyLaunched(id, dir)) && tries < 30) {
              // Still starting: its socket is not there yet.
              auto timer = std::make_shared<asio::steady_timer>(io_, milliseconds(100));
              timer->async_wait([this, timer, id, req, respond, tries](const asio::error_code&) {
                ForwardToStepd(id, req, respond, tries + 1);
              });
              return;
            }
            // Nothing left to terminate, or a stepd yet to start finds terminate.pb.
            if (req.has_terminate_job()) return respond(Ok());
            return respond(ErrorResponse(
                ErrorCode::kUnavailable,
                "job " + std::to_string(id) + ": shoal-stepd not reachable: " + conn.error()));
          }
          RpcConnectionPtr c = *conn;
          auto timer = std::make_shared<asio::steady_timer>(io_, kStepdCallTimeout);
          timer->async_wait([c](const asio::error_code& ec) {
            if (!ec) c->Close();
          });
          c->Send(req, Sign(req), [c, timer, respond, dir](Result<pb::Response> r) {
            timer->cancel();
            c->Close();
            if (r) return respond(*r);
            if (FileExists(dir + "/" + kDoneFile)) return respond(Ok());
            respond(ErrorResponse(ErrorCode::kUnavailable, "shoal-stepd: " + r.error()));
          });
        });
  }

  // ------------------------------------------------------------------------------------------
  // Completions
  // ------------------------------------------------------------------------------------------

  void HandleNotification(const RpcConnectionPtr& conn, const pb::Credential& cred,
                          const std::string& body, const Responder& respond) {
    if (conn->peer_uid() != 0 || !s_.key->Verify(cred, body, NowSeconds()).ok() ||
        cred.uid() != 0) {
      respond(ErrorResponse(ErrorCode::kAccessDenied, "Access/permission denied"));
      return;
    }
    pb::Request req;
    if (req.ParseFromString(body) && req.has_step_complete()) {
      respond(Ok());
      StepFinished(req);
      return;
    }
    if (!req.ParseFromString(body) || !req.has_job_complete()) {
      respond(ErrorResponse(ErrorCode::kProtocol, "expected a job completion"));
      return;
    }
    respond(Ok());
    uint32_t id = req.job_complete().job_id();
    if (s_.opts.verbose > 0) Log("job %u: finished (notified by shoal-stepd)", id);
    ForwardCompletion(id);
  }

  // A step's supervisor here is done: tell the controller (best effort: srun reports the step
  // too) and forget the step.
  void StepFinished(pb::Request req) {
    auto& sc = *req.mutable_step_complete();
    sc.set_node_name(name_);
    uint32_t job = sc.job_id(), step = sc.step_id();
    if (s_.opts.verbose > 0) Log("step %u.%u: finished here", job, step);
    if (conn_ && registered_) conn_->Send(req, Sign(req), nullptr);
    Status st = RemoveTree(StepDir(s_.spool, job, step));
    if (!st.ok()) Log("step %u.%u: %s", job, step, st.message().c_str());
    UpdateGpuJobMap();
  }

  void ForwardCompletions() {
    for (uint32_t id : ListJobDirs(s_.spool))
      if (FileExists(JobDir(s_.spool, id) + "/" + kDoneFile)) ForwardCompletion(id);
  }

  // DCGM exporter's GPU -> job files, from what runs here now.
  void UpdateGpuJobMap() {
    if (s_.gres_devices.empty()) return;
    SyncGpuJobMap(s_.gpu_job_map_dir, s_.gres_devices,
                  GpuJobMapFiles(s_.gres_devices, GpuJobsInSpool(s_.spool)));
  }

  void ForwardCompletion(uint32_t id) {
    if (!conn_ || !registered_ || in_flight_.count(id)) return;
    std::string dir = JobDir(s_.spool, id);
    auto data = ReadWholeFile(dir + "/" + kDoneFile);
    pb::Request req;
    if (!data || !req.mutable_job_complete()->ParseFromString(*data)) {
      Log("job %u: unreadable %s: %s", id, kDoneFile, data ? "malformed" : data.error().c_str());
      return;
    }
    req.mutable_job_complete()->set_node_name(name_);
    req.mutable_job_complete()->set_job_id(id);
    if (req.job_complete().launch_failed() && !reported_failures_.count(id)) {
      reported_failures_.insert(id);
      Log("job %u: launch failed: %s", id, req.job_complete().failure().c_str());
    }
    UpdateGpuJobMap();  // done.pb is there: the job no longer holds its GPUs
    in_flight_.insert(id);
    RpcConnectionPtr conn = conn_;
    conn->Send(req, Sign(req), [this, id, dir](Result<pb::Response> resp) {
      in_flight_.erase(id);
      if (!resp) return;  // retried after the next registration
      last_rx_ = Clock::now();
      auto rc = static_cast<ErrorCode>(resp->rc());
      if (rc == ErrorCode::kOk || rc == ErrorCode::kInvalidJobId || rc == ErrorCode::kAlreadyDone) {
        if (rc != ErrorCode::kOk)
          Log("job %u: controller answered the completion with: %s; dropping it", id,
              resp->error().c_str());
        Status st = RemoveTree(dir);
        if (!st.ok()) Log("job %u: %s", id, st.message().c_str());
        launched_at_.erase(id);
        reported_failures_.erase(id);
      } else {
        Log("job %u: completion not accepted yet: %s (rc=%d)", id, resp->error().c_str(),
            resp->rc());
      }
    });
  }

  // ------------------------------------------------------------------------------------------
  // Spool scanning
  // ------------------------------------------------------------------------------------------

  static bool StepdAlive(const std::string& dir) {
    return IsStepdProcess(ReadPidFile(dir + "/" + kStepdPidFile));
  }

  bool RecentlyLaunched(uint32_t id, const std::string& dir) const {
    int64_t now = NowSeconds();
    auto it = launched_at_.find(id);
    if (it != launched_at_.end() && now - it->second < kLaunchGraceSeconds) return true;
    struct stat st {};
    if (::stat((dir + "/" + kLaunchFile).c_str(), &st) == 0 &&
        now - st.st_mtime < kLaunchGraceSeconds)
      return true;
    return false;
  }

  // "The node knows this job": live supervisor, unacknowledged result, or just launched.
  // What the HTTP probes and /metrics report: registration, jobs and steps here, and each
  // job's cgroup CPU time and peak memory when cgroups are in use.
  NodeHttpState HttpState() {
    NodeHttpState st;
    st.node = name_;
    st.registered = registered_ && conn_ && !conn_->closed();
    st.start_time = s_.registration.start_time();
    std::vector<StepDirId> steps = ListStepDirs(s_.spool);
    st.steps = static_cast<uint32_t>(steps.size());
    for (uint32_t id : RunningJobIds()) {
      NodeJobUsage u;
      u.job_id = id;
      std::vector<uint32_t> step_ids = {kCgBatchStep};
      for (const StepDirId& sd : steps)
        if (sd.job_id == id) {
          ++u.steps;
          step_ids.push_back(sd.step_id);
        }
      if (s_.cgroups) {
        for (uint32_t step : step_ids) {
          CgroupStats cs = s_.cgroups->Stats(id, step);
          u.has_cpu = u.has_cpu || cs.has_cpu;
          u.cpu_usec += cs.user_usec + cs.sys_usec;
          u.max_rss_bytes = std::max(u.max_rss_bytes, cs.max_rss_bytes);
        }
      }
      st.jobs.push_back(u);
    }
    return st;
  }

  std::vector<uint32_t> RunningJobIds() const {
    std::vector<uint32_t> ids;
    for (uint32_t id : ListJobDirs(s_.spool)) {
      std::string dir = JobDir(s_.spool, id);
      if (FileExists(dir + "/" + kDoneFile) || StepdAlive(dir) || RecentlyLaunched(id, dir) ||
          scripts_->PrologRunning(id))
        ids.push_back(id);
    }
    // Steps too, so the controller can name the ones whose job is over.
    for (const StepDirId& s : ListStepDirs(s_.spool))
      if (std::find(ids.begin(), ids.end(), s.job_id) == ids.end()) ids.push_back(s.job_id);
    return ids;
  }

  void ScheduleScan() {
    scan_timer_.expires_after(kScanInterval);
    scan_timer_.async_wait([this](const asio::error_code& ec) {
      if (ec) return;
      Scan();
      ScheduleScan();
    });
  }

  // Job cgroups of jobs that are over here: no batch job or step directory left in the spool
  // (their supervisors end their own cgroups; this catches the rest), and, for a job with an
  // extern step (PrologFlags=Contain), only once the controller ended the job.
  void SweepCgroups() {
    if (!s_.cgroups) return;
    std::set<uint32_t> busy;
    for (uint32_t id : ListJobDirs(s_.spool)) busy.insert(id);
    for (const StepDirId& st : ListStepDirs(s_.spool)) busy.insert(st.job_id);
    s_.cgroups->Sweep([&](uint32_t id, bool has_extern) {
      if (busy.count(id) || (has_extern && !ended_jobs_.count(id))) return false;
      ended_jobs_.erase(id);
      return true;
    });
  }

  // Covers lost notifications, and supervisors that died without a result (killed, crashed):
  // those get a done.pb written here so the controller hears about the job.
  void Scan() {
    SweepCgroups();
    UpdateGpuJobMap();
    for (const StepDirId& s : ListStepDirs(s_.spool)) {
      std::string dir = StepDir(s_.spool, s.job_id, s.step_id);
      if (StepdAlive(dir)) continue;
      struct stat st {};
      if (::stat(dir.c_str(), &st) == 0 && NowSeconds() - st.st_mtime < kLaunchGraceSeconds)
        continue;
      Log("step %u.%u: supervisor gone; removing its spool directory", s.job_id, s.step_id);
      (void)RemoveTree(dir);
    }
    for (uint32_t id : ListJobDirs(s_.spool)) {
      std::string dir = JobDir(s_.spool, id);
      std::string done_path = dir + "/" + kDoneFile;
      if (FileExists(done_path)) {
        ForwardCompletion(id);
        continue;
      }
      if (StepdAlive(dir) || RecentlyLaunched(id, dir) || scripts_->PrologRunning(id)) continue;
      if (FileExists(done_path)) continue;  // finished in between
      Log("job %u: shoal-stepd is gone without a result; reporting the job as failed", id);
      pb::JobCompleteRequest done;
      done.set_node_name(name_);
      done.set_job_id(id);
      done.set_exit_status(SIGKILL);  // raw wait status: killed by SIGKILL
      done.set_failure("shoal-stepd exited without reporting the job's result");
      done.set_end_time(NowSeconds());
      Status st = WriteFileAtomic(done_path, done.SerializeAsString(), 0600);
      if (!st.ok()) {
        Log("job %u: %s", id, st.message().c_str());
        continue;
      }
      ForwardCompletion(id);
    }
  }

  asio::io_context& io_;
  NodeSetup s_;
  std::string name_;
  asio::steady_timer reconnect_timer_, connect_timer_, heartbeat_timer_, scan_timer_;
  asio::signal_set child_signals_;
  std::unique_ptr<NodeScripts> scripts_;  // Prolog/Epilog/HealthCheckProgram
  std::set<uint32_t> ended_in_prolog_;    // TerminateJob arrived while the Prolog ran
  std::unique_ptr<RpcServer> notify_server_;
  std::unique_ptr<RpcServer> user_server_;
  std::unique_ptr<RpcServer> agent_server_;  // --agent-socket
  RpcConnectionPtr conn_;
  bool registered_ = false;
  bool reconnect_pending_ = false;
  uint64_t attempt_ = 0;
  size_t controller_index_ = 0;
  milliseconds backoff_ = kMinBackoff;
  seconds heartbeat_interval_{5};
  Clock::time_point last_rx_ = Clock::now();
  bool down_logged_ = false;
  Clock::time_point last_down_log_{};
  std::set<uint32_t> in_flight_;
  std::map<uint32_t, int64_t> launched_at_;
  UserIdentityCache identities_;  // user names and group lists handed to shoal-stepd
  std::set<uint32_t> reported_failures_;
  std::set<uint32_t> ended_jobs_;  // TerminateJob for the whole job received
};

Status Daemonize() {
  pid_t pid = ::fork();
  if (pid < 0) return Error(ErrorCode::kInternal, "fork: " + Strerror(errno));
  if (pid > 0) ::_exit(0);
  ::setsid();
  int ignored = ::chdir("/");
  (void)ignored;
  int null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    ::dup2(null_fd, 0);
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    if (null_fd > 2) ::close(null_fd);
  }
  return Status::Ok();
}

Status RedirectLog(const std::string& log_file) {
  int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) return Error(ErrorCode::kIoError, log_file + ": " + Strerror(errno));
  ::dup2(fd, 2);
  ::close(fd);
  return Status::Ok();
}

const char kUsage[] =
    "Usage: shoald [OPTIONS]\n"
    "  -D              run in the foreground, log to stderr\n"
    "  -f FILE         read configuration from FILE\n"
    "  -N NODENAME     run as the node NODENAME\n"
    "  -Z              register as a dynamic node\n"
    "  --conf 'PARAMS' node parameters for -Z (\"CPUs=4 RealMemory=2000 Features=a,b\")\n"
    "  --conf-server HOST[:PORT][,HOST2[:PORT]]  fetch the configuration from the controller\n"
    "                  (configless; SlurmctldParameters=enable_configless)\n"
    "  --conf-cache DIR  where the fetched configuration is cached (default /run/shoal/conf)\n"
    "  --key FILE      cluster key when configless (default /etc/slurm/slurm.key)\n"
    "  --agent-socket PATH  serve the auth agent on PATH (mode 0666), so the commands of jobs\n"
    "                  on this node (srun, mpirun's srun, sbatch) get credentials for their uid\n"
    "                  (nodes whose host runs no shoalctld or shoalsackd, e.g. worker pods)\n"
    "  -L FILE         log to FILE\n"
    "  -v              more verbose logging (repeatable)\n"
    "  -V              print the version and exit\n"
    "  -h, --help      this help\n";

}  // namespace

Result<ShoaldOptions> ParseShoaldArgs(const std::vector<std::string>& args) {
  ShoaldOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help") {
      o.help = true;
      continue;
    }
    if (a == "--version") {
      o.version = true;
      continue;
    }
    // Long options with a value: "--opt X" or "--opt=X".
    bool long_value = false;
    for (auto [flag, field] :
         {std::pair<const char*, std::string*>{"--conf-server", &o.conf_server},
          {"--conf-cache", &o.conf_cache},
          {"--key", &o.key_file},
          {"--agent-socket", &o.agent_socket}}) {
      std::string f = flag;
      if (a != f && a.rfind(f + "=", 0) != 0) continue;
      if (a.size() > f.size()) {
        *field = a.substr(f.size() + 1);
      } else {
        if (i + 1 >= args.size()) return InvalidArgument("option " + f + " needs a value");
        *field = args[++i];
      }
      long_value = true;
    }
    if (long_value) continue;
    if (a == "--conf" || a.rfind("--conf=", 0) == 0) {
      if (a.size() > 6) {
        o.dyn_conf = a.substr(7);
      } else {
        if (i + 1 >= args.size()) return InvalidArgument("option --conf needs a value");
        o.dyn_conf = args[++i];
      }
      continue;
    }
    if (a.size() < 2 || a[0] != '-' || a[1] == '-')
      return InvalidArgument("unrecognized argument '" + a + "'");
    for (size_t j = 1; j < a.size(); ++j) {
      char c = a[j];
      if (c == 'D') {
        o.foreground = true;
      } else if (c == 'Z') {
        o.dynamic = true;
      } else if (c == 'v') {
        ++o.verbose;
      } else if (c == 'V') {
        o.version = true;
      } else if (c == 'h') {
        o.help = true;
      } else if (c == 'f' || c == 'N' || c == 'L') {
        std::string value;
        if (j + 1 < a.size()) {
          value = a.substr(j + 1);
        } else if (i + 1 < args.size()) {
          value = args[++i];
        } else {
          return InvalidArgument(std::string("option -") + c + " needs a value");
        }
        if (c == 'f') o.conf_path = value;
        if (c == 'N') o.node_name = value;
        if (c == 'L') o.log_file = value;
        break;
      } else {
        return InvalidArgument(std::string("invalid option -- '") + c + "'");
      }
    }
  }
  return o;
}

int ShoaldMain(int argc, char** argv) {
  auto opts = ParseShoaldArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!opts) {
    std::fprintf(stderr, "shoald: error: %s\n%s", opts.error().c_str(), kUsage);
    return 1;
  }
  if (opts->help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (opts->version) {
    std::printf("shoal %s\n", kShoalVersion);
    return 0;
  }
  if (::geteuid() != 0) std::fprintf(stderr, "shoald: warning: not running as root\n");
  bool foreground = opts->foreground;
  auto setup = Prepare(std::move(*opts));
  if (!setup) {
    std::fprintf(stderr, "shoald: error: %s\n", setup.error().c_str());
    return 1;
  }
  if (!foreground) {
    if (Status st = Daemonize(); !st.ok()) {
      std::fprintf(stderr, "shoald: error: %s\n", st.message().c_str());
      return 1;
    }
  }
  if (!setup->log_file.empty()) {
    if (Status st = RedirectLog(setup->log_file); !st.ok()) {
      std::fprintf(stderr, "shoald: error: %s\n", st.message().c_str());
      if (foreground) return 1;
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);

  asio::io_context io;
  asio::signal_set stop(io, SIGTERM, SIGINT);
  stop.async_wait([&io](const asio::error_code& ec, int sig) {
    if (ec) return;
    Log("caught signal %d: shutting down (jobs keep running)", sig);
    io.stop();
  });
  NodeDaemon daemon(io, std::move(*setup));
  if (Status st = daemon.Start(); !st.ok()) {
    Log("fatal: %s", st.message().c_str());
    return 1;
  }
  io.run();
  if (auto cg = daemon.cgroups()) cg->RemoveNodeDirIfIdle();
  return 0;
}

}  // namespace shoal::noded
