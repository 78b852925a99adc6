// shoald + shoal-stepd against a fake controller (an RpcServer on loopback inside the test).
// Needs root (the daemons switch users); skipped otherwise.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/auth.h"
#include "common/rpc.h"
#include "noded/util.h"

namespace shoal {
namespace {

using namespace std::chrono_literals;

std::string BuildDir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  std::string exe(buf, n > 0 ? static_cast<size_t>(n) : 0);
  // <build>/tests/unit/<test>
  for (int i = 0; i < 3; ++i) exe = exe.substr(0, exe.rfind('/'));
  return exe;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The controller side of one node stream, driven from the test thread.
class FakeController {
 public:
  explicit FakeController(ClusterKey key) : key_(std::move(key)) {
    auto server = RpcServer::Listen(
        io_, "127.0.0.1:0",
        [this](const RpcConnectionPtr& conn, const pb::Credential& cred, const std::string& body,
               Responder respond) { Handle(conn, cred, body, std::move(respond)); });
    EXPECT_TRUE(server.ok()) << server.error();
    server_ = std::move(*server);
    thread_ = std::thread([this] {
      auto guard = asio::make_work_guard(io_);
      io_.run();
    });
  }
  ~FakeController() {
    asio::post(io_, [this] {
      server_->Stop();
      if (node_) node_->Close();
      io_.stop();
    });
    thread_.join();
  }

  uint16_t port() const { return server_->port(); }

  // Waits for a request the node sent whose body matches `pred`.
  bool WaitFor(const std::function<bool(const pb::Request&)>& pred, pb::Request* out,
               std::chrono::milliseconds timeout = 15s) {
    std::unique_lock lock(mu_);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      for (auto it = received_.begin(); it != received_.end(); ++it) {
        if (pred(*it)) {
          if (out) *out = *it;
          received_.erase(it);
          return true;
        }
      }
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) return false;
    }
  }

  bool WaitRegistered(pb::NodeRegisterRequest* reg = nullptr) {
    pb::Request r;
    if (!WaitFor([](const pb::Request& q) { return q.has_node_register(); }, &r)) return false;
    if (reg) *reg = r.node_register();
    return true;
  }

  bool WaitComplete(uint32_t job_id, pb::JobCompleteRequest* done) {
    pb::Request r;
    if (!WaitFor(
            [job_id](const pb::Request& q) {
              return q.has_job_complete() && q.job_complete().job_id() == job_id;
            },
            &r))
      return false;
    *done = r.job_complete();
    return true;
  }

  // Sends a command on the node's stream and waits for the answer.
  pb::Response Command(const pb::Request& req, uint32_t uid = 0) {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    pb::Response answer;
    asio::post(io_, [&] {
      auto finish = [&](pb::Response r) {
        std::lock_guard lock(mu);
        answer = std::move(r);
        done = true;
        cv.notify_all();
      };
      if (!node_) return finish(ErrorResponse(ErrorCode::kUnavailable, "no node"));
      std::string body = req.SerializeAsString();
      node_->Send(req, key_.Sign(uid, uid, body, ::time(nullptr)),
                  [finish](Result<pb::Response> r) {
                    finish(r ? *r : ErrorResponse(ErrorCode::kUnavailable, r.error()));
                  });
    });
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, 15s, [&] { return done; }))
      return ErrorResponse(ErrorCode::kUnavailable, "timeout");
    return answer;
  }

 private:
  void Handle(const RpcConnectionPtr& conn, const pb::Credential& cred, const std::string& body,
              Responder respond) {
    Status st = key_.Verify(cred, body, ::time(nullptr));
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(cred.uid(), 0u);
    pb::Request req;
    ASSERT_TRUE(req.ParseFromString(body));
    pb::Response resp;
    if (req.has_node_register()) {
      node_ = conn;
      resp.mutable_node_register()->set_node_name(req.node_register().name());
      resp.mutable_node_register()->set_heartbeat_interval_s(1);
    }
    respond(resp);
    std::lock_guard lock(mu_);
    received_.push_back(std::move(req));
    cv_.notify_all();
  }

  ClusterKey key_;
  asio::io_context io_;
  std::unique_ptr<RpcServer> server_;
  RpcConnectionPtr node_;  // io thread only
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<pb::Request> received_;
};

class NodedE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    char tmpl[] = "/tmp/shoal-noded-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);
    work_ = dir_ + "/work";
    ASSERT_EQ(::mkdir(work_.c_str(), 0777), 0);
    ::chmod(work_.c_str(), 0777);
    key_path_ = dir_ + "/slurm.key";
    ASSERT_TRUE(ClusterKey::Generate(key_path_).ok());
    auto key = ClusterKey::Load(key_path_);
    ASSERT_TRUE(key.ok()) << key.error();
    ctl_ = std::make_unique<FakeController>(*key);
    conf_path_ = dir_ + "/slurm.conf";
    std::ofstream conf(conf_path_);
    conf << "ClusterName=e2e\n"
         << "SlurmctldHost=localhost\n"
         << "SlurmctldPort=" << ctl_->port() << "\n"
         << "SlurmdSpoolDir=" << dir_ << "/spool/%n\n"
         << "NodeName=n1 CPUs=2 RealMemory=1000 Features=f1\n"
         << "PartitionName=debug Nodes=n1 Default=YES\n";
    conf.close();
    spool_ = dir_ + "/spool/n1";
    StartShoald();
    ASSERT_TRUE(ctl_->WaitRegistered(&reg_)) << ReadFile(dir_ + "/shoald.log");
  }

  void TearDown() override {
    StopShoald(SIGTERM);
    ctl_.reset();
    // SHOAL_TEST_KEEP=1 keeps the directory (logs, spool) for inspection.
    if (!dir_.empty() && !::testing::Test::HasFailure() && !std::getenv("SHOAL_TEST_KEEP"))
      (void)noded::RemoveTree(dir_);
  }

  void StartShoald() {
    std::string shoald = BuildDir() + "/sbin/shoald";
    std::string log = dir_ + "/shoald.log";
    pid_ = ::fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 2);
      ::dup2(fd, 1);
      ::execl(shoald.c_str(), shoald.c_str(), "-D", "-v", "-f", conf_path_.c_str(), "-N", "n1",
              nullptr);
      ::_exit(127);
    }
  }

  void StopShoald(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = 0;
  }

  pb::Request LaunchReq(uint32_t id, const std::string& script, uint32_t uid = 0,
                        uint32_t gid = 0) {
    pb::Request req;
    pb::LaunchBatchRequest* l = req.mutable_launch_batch();
    pb::JobRecord* job = l->mutable_job();
    job->set_job_id(id);
    job->add_nodes("n1");
    job->add_cpus_per_node(1);
    job->set_batch_host("n1");
    job->set_array_task_id(0xfffffffe);
    pb::JobSpec* spec = job->mutable_spec();
    spec->set_name("e2e");
    spec->set_script(script);
    spec->set_work_dir(work_);
    spec->set_uid(uid);
    spec->set_gid(gid);
    spec->add_environment("PATH=/usr/bin:/bin");
    l->set_kill_wait_s(1);
    return req;
  }

  bool JobDirGone(uint32_t id, std::chrono::milliseconds timeout = 5s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!noded::FileExists(noded::JobDir(spool_, id))) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  std::string dir_, work_, key_path_, conf_path_, spool_;
  std::unique_ptr<FakeController> ctl_;
  pb::NodeRegisterRequest reg_;
  pid_t pid_ = 0;
};

TEST_F(NodedE2E, RegistersWithConfiguredResources) {
  EXPECT_EQ(reg_.name(), "n1");
  EXPECT_EQ(reg_.cpus(), 2u);
  EXPECT_EQ(reg_.real_memory_mb(), 1000u);
  ASSERT_EQ(reg_.features_size(), 1);
  EXPECT_EQ(reg_.features(0), "f1");
  EXPECT_FALSE(reg_.dynamic());
  EXPECT_GT(reg_.boot_time(), 0);
  EXPECT_EQ(reg_.os().rfind("Linux ", 0), 0u);
  EXPECT_TRUE(reg_.running_job_ids().empty());
  pb::Request hb;
  EXPECT_TRUE(ctl_->WaitFor([](const pb::Request& q) { return q.has_heartbeat(); }, &hb));
  EXPECT_EQ(hb.heartbeat().name(), "n1");
}

TEST_F(NodedE2E, RunsEchoAsRoot) {
  pb::Response r = ctl_->Command(LaunchReq(1, "#!/bin/sh\necho hi\n"));
  ASSERT_EQ(r.rc(), 0) << r.error();
  pb::JobCompleteRequest done;
  ASSERT_TRUE(ctl_->WaitComplete(1, &done)) << ReadFile(dir_ + "/shoald.log");
  EXPECT_EQ(done.exit_status(), 0);
  EXPECT_EQ(done.node_name(), "n1");
  EXPECT_FALSE(done.launch_failed()) << done.failure();
  EXPECT_EQ(ReadFile(work_ + "/slurm-1.out"), "hi\n");
  EXPECT_TRUE(JobDirGone(1));
  // A repeated launch of a finished-and-acknowledged job is a new directory; a repeated launch
  // of a running job is accepted without a second run (checked in TerminatesOnRequest).
}

TEST_F(NodedE2E, EnvironmentPatternsAndExitCode) {
  pb::Request req = LaunchReq(
      7,
      "#!/bin/bash\necho \"$SLURM_JOB_ID $SLURMD_NODENAME $SLURM_NODEID $SLURM_CPUS_ON_NODE "
      "$SLURM_JOB_NODELIST $SLURM_CLUSTER_NAME $USER\"\npwd\necho err >&2\nexit 3\n");
  req.mutable_launch_batch()->mutable_job()->mutable_spec()->set_std_out("%x-%j-%N.out");
  req.mutable_launch_batch()->mutable_job()->mutable_spec()->set_std_err(work_ + "/%u.err");
  ASSERT_EQ(ctl_->Command(req).rc(), 0);
  pb::JobCompleteRequest done;
  ASSERT_TRUE(ctl_->WaitComplete(7, &done));
  EXPECT_TRUE(WIFEXITED(done.exit_status()));
  EXPECT_EQ(WEXITSTATUS(done.exit_status()), 3);
  EXPECT_EQ(ReadFile(work_ + "/e2e-7-n1.out"), "7 n1 0 1 n1 e2e root\n" + work_ + "\n");
  EXPECT_EQ(ReadFile(work_ + "/root.err"), "err\n");
}

TEST_F(NodedE2E, RunsAsTheUser) {
  pb::Response r = ctl_->Command(LaunchReq(2, "#!/bin/sh\nid -u\nid -g\n", 65534, 65534));
  ASSERT_EQ(r.rc(), 0) << r.error();
  pb::JobCompleteRequest done;
  ASSERT_TRUE(ctl_->WaitComplete(2, &done));
  EXPECT_EQ(done.exit_status(), 0) << done.failure();
  EXPECT_EQ(ReadFile(work_ + "/slurm-2.out"), "65534\n65534\n");
  struct stat st {};
  ASSERT_EQ(::stat((work_ + "/slurm-2.out").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
}

TEST_F(NodedE2E, RefusesUnknownUid) {
  pb::Response r = ctl_->Command(LaunchReq(3, "#!/bin/sh\necho no\n", 3999999, 3999999));
  EXPECT_NE(r.rc(), 0);
  EXPECT_FALSE(noded::FileExists(noded::JobDir(spool_, 3)));
}

TEST_F(NodedE2E, BadWorkDirFallsBackToTmp) {
  pb::Request req = LaunchReq(4, "#!/bin/sh\npwd\n");
  req.mutable_launch_batch()->mutable_job()->mutable_spec()->set_work_dir(dir_ + "/missing");
  req.mutable_launch_batch()->mutable_job()->mutable_spec()->set_std_out(work_ + "/o4");
  ASSERT_EQ(ctl_->Command(req).rc(), 0);
  pb::JobCompleteRequest done;
  ASSERT_TRUE(ctl_->WaitComplete(4, &done));
  EXPECT_EQ(done.exit_status(), 0);
  std::string out = ReadFile(work_ + "/o4");
  EXPECT_NE(out.find("couldn't chdir"), std::string::npos) << out;
  EXPECT_NE(out.find("/tmp\n"), std::string::npos) << out;
}

TEST_F(NodedE2E, UnwritableOutputIsALaunchFailure) {
  pb::Request req = LaunchReq(5, "#!/bin/sh\necho x\n", 65534, 65534);
  req.mutable_launch_batch()->mutable_job()->mutable_spec()->set_std_out(dir_ + "/nope.out");
  ASSERT_EQ(ctl_->Command(req).rc(), 0);
  pb::JobCompleteRequest done;
  ASSERT_TRUE(ctl_->WaitComplete(5, &done));
  EXPECT_TRUE(done.launch_failed());
  EXPECT_NE(done.failure().find("Could not open stdout file"), std::string::npos) << done.failure();
}

TEST_F(NodedE2E, TerminatesOnRequest) {
  ASSERT_EQ(ctl_->Command(LaunchReq(10, "#!/bin/sh\nsleep 100 &\nsleep 100\n")).rc(), 0);
  // Idempotent launch.
  ASSERT_EQ(ctl_->Command(LaunchReq(10, "#!/bin/sh\nexit 9\n")).rc(), 0);
  std::this_thread::sleep_for(300ms);
  pb::Request sig;
  sig.mutable_signal_job()->set_job_id(10);
  sig.mutable_signal_job()->set_signal(SIGCONT);
  EXPECT_EQ(ctl_->Command(sig).rc(), 0);
  pb::Request term;
  term.mutable_terminate_job()->set_job_id(10);
  term.mutable_terminate_job()->set_kill_wait_s(1);
  term.mutable_terminate_job()->set_reason("cancelled");
  pb::Response r = ctl_->Command(term);
  EXPECT_EQ(r.rc(), 0) << r.error();
  pb::JobCompleteRequest done;
  ASSERT_TRUE(ctl_->WaitComplete(10, &done));
  EXPECT_TRUE(done.cancelled());
  EXPECT_FALSE(done.timed_out());
  EXPECT_TRUE(WIFSIGNALED(done.exit_status()));
  EXPECT_EQ(WTERMSIG(done.exit_status()), SIGTERM);
  // Unknown job afterwards.
  EXPECT_TRUE(JobDirGone(10));
  sig.mutable_signal_job()->set_job_id(999);
  EXPECT_EQ(ctl_->Command(sig).rc(), static_cast<int>(ErrorCode::kInvalidJobId));
}

// A TerminateJob that arrives while shoal-stepd is still starting (longer than shoald waits for
// its socket, as on a loaded node) is not lost: the script never starts and the job ends
// cancelled. Before terminate.pb, the script ran on and the job stayed COMPLETING.
TEST_F(NodedE2E, TerminateBeforeTheStepdListensIsKept) {
  std::string slow = dir_ + "/slow-shoal-stepd";
  {
    std::ofstream w(slow);
    w << "#!/bin/sh\nsleep 4\nexec " << BuildDir() << "/sbin/shoal-stepd \"$@\"\n";
  }
  ASSERT_EQ(::chmod(slow.c_str(), 0755), 0);
  StopShoald(SIGTERM);
  ::setenv("SHOAL_STEPD", slow.c_str(), 1);
  StartShoald();
  ::unsetenv("SHOAL_STEPD");
  ASSERT_TRUE(ctl_->WaitRegistered());
  std::string ran = work_ + "/ran";
  ASSERT_EQ(ctl_->Command(LaunchReq(15, "#!/bin/sh\ntouch " + ran + "\nsleep 100\n")).rc(), 0);
  pb::Request term;
  term.mutable_terminate_job()->set_job_id(15);
  term.mutable_terminate_job()->set_kill_wait_s(1);
  term.mutable_terminate_job()->set_reason("cancelled");
  EXPECT_EQ(ctl_->Command(term).rc(), 0);
  pb::JobCompleteRequest done;
  ASSERT_TRUE(ctl_->WaitComplete(15, &done)) << ReadFile(dir_ + "/shoald.log");
  EXPECT_TRUE(done.cancelled());
  EXPECT_FALSE(done.launch_failed()) << done.failure();
  EXPECT_TRUE(WIFSIGNALED(done.exit_status()));
  EXPECT_EQ(WTERMSIG(done.exit_status()), SIGTERM);
  EXPECT_FALSE(noded::FileExists(ran)) << "the script started after its job was terminated";
  EXPECT_TRUE(JobDirGone(15));
}

TEST_F(NodedE2E, SurvivesKill9AndReportsAfterRestart) {
  ASSERT_EQ(ctl_->Command(LaunchReq(20, "#!/bin/sh\nsleep 2\necho late\n")).rc(), 0);
  std::this_thread::sleep_for(300ms);
  StopShoald(SIGKILL);
  StartShoald();
  pb::NodeRegisterRequest reg;
  ASSERT_TRUE(ctl_->WaitRegistered(&reg));
  ASSERT_EQ(reg.running_job_ids_size(), 1);
  EXPECT_EQ(reg.running_job_ids(0), 20u);
  pb::JobCompleteRequest done;
  ASSERT_TRUE(ctl_->WaitComplete(20, &done)) << ReadFile(dir_ + "/shoald.log");
  EXPECT_EQ(done.exit_status(), 0);
  EXPECT_EQ(ReadFile(work_ + "/slurm-20.out"), "late\n");
  EXPECT_TRUE(JobDirGone(20));
}

TEST_F(NodedE2E, CompletionWhileShoaldIsDownIsDeliveredLater) {
  ASSERT_EQ(ctl_->Command(LaunchReq(30, "#!/bin/sh\nsleep 0.5\n")).rc(), 0);
  StopShoald(SIGTERM);
  std::this_thread::sleep_for(1500ms);
  EXPECT_TRUE(noded::FileExists(noded::JobDir(spool_, 30) + "/done.pb"));
  StartShoald();
  pb::NodeRegisterRequest reg;
  ASSERT_TRUE(ctl_->WaitRegistered(&reg));
  ASSERT_EQ(reg.running_job_ids_size(), 1);
  pb::JobCompleteRequest done;
  ASSERT_TRUE(ctl_->WaitComplete(30, &done));
  EXPECT_EQ(done.exit_status(), 0);
  EXPECT_TRUE(JobDirGone(30));
}

TEST_F(NodedE2E, KillsLeftoverDaemons) {
  std::string pidfile = work_ + "/daemon.pid";
  ASSERT_EQ(ctl_->Command(LaunchReq(40, "#!/bin/sh\nsetsid sh -c 'echo $$ > " + pidfile +
                                            "; exec sleep 100' &\nsleep 0.3\n"))
                .rc(),
            0);
  pb::JobCompleteRequest done;
  ASSERT_TRUE(ctl_->WaitComplete(40, &done));
  pid_t daemon = std::atoi(ReadFile(pidfile).c_str());
  ASSERT_GT(daemon, 0);
  std::this_thread::sleep_for(100ms);
  EXPECT_NE(::kill(daemon, 0), 0) << "leftover process " << daemon << " still alive";
}

TEST_F(NodedE2E, JobInheritsNoDaemonDescriptors) {
  ASSERT_EQ(ctl_->Command(LaunchReq(50,
                                    "#!/bin/sh\nfor f in /proc/$$/fd/*; do readlink $f; "
                                    "done | grep -c -e socket -e pipe -e anon_inode\n"))
                .rc(),
            0);
  pb::JobCompleteRequest done;
  ASSERT_TRUE(ctl_->WaitComplete(50, &done));
  EXPECT_EQ(ReadFile(work_ + "/slurm-50.out"), "0\n");
}

TEST_F(NodedE2E, RefusesCommandsFromUsers) {
  pb::Response r = ctl_->Command(LaunchReq(60, "#!/bin/sh\ntrue\n"), 1000);
  EXPECT_EQ(r.rc(), static_cast<int>(ErrorCode::kAccessDenied));
  EXPECT_FALSE(noded::FileExists(noded::JobDir(spool_, 60)));
}

TEST_F(NodedE2E, DynamicNodeRegistersItsOwnResources) {
  std::string shoald = BuildDir() + "/sbin/shoald";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fd = ::open((dir_ + "/dyn.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 2);
    ::execl(shoald.c_str(), shoald.c_str(), "-D", "-Z", "--conf",
            "CPUs=3 RealMemory=1500 Features=a,b Gres=gpu:2", "-f", conf_path_.c_str(), "-N",
            "dyn1", nullptr);
    ::_exit(127);
  }
  pb::NodeRegisterRequest reg;
  bool got = ctl_->WaitRegistered(&reg);
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(got) << ReadFile(dir_ + "/dyn.log");
  EXPECT_EQ(reg.name(), "dyn1");
  EXPECT_TRUE(reg.dynamic());
  EXPECT_EQ(reg.cpus(), 3u);
  EXPECT_EQ(reg.real_memory_mb(), 1500u);
  ASSERT_EQ(reg.features_size(), 2);
  EXPECT_EQ(reg.features(1), "b");
  EXPECT_EQ(reg.gres(), "gpu:2");
  EXPECT_TRUE(noded::FileExists(dir_ + "/spool/dyn1/shoald.sock"));
}

TEST_F(NodedE2E, ManyShortJobs) {
  constexpr uint32_t kJobs = 50;
  auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < kJobs; ++i) {
    pb::Request req = LaunchReq(100 + i, "#!/bin/sh\ntrue\n");
    req.mutable_launch_batch()->mutable_job()->mutable_spec()->set_std_out("/dev/null");
    ASSERT_EQ(ctl_->Command(req).rc(), 0);
  }
  auto launched = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < kJobs; ++i) {
    pb::JobCompleteRequest done;
    ASSERT_TRUE(ctl_->WaitComplete(100 + i, &done)) << i;
    EXPECT_EQ(done.exit_status(), 0);
  }
  auto finished = std::chrono::steady_clock::now();
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  std::printf("%u jobs: launches acked in %lld us (%.2f ms each), all complete after %lld us\n",
              kJobs, static_cast<long long>(duration_cast<microseconds>(launched - start).count()),
              duration_cast<microseconds>(launched - start).count() / 1000.0 / kJobs,
              static_cast<long long>(duration_cast<microseconds>(finished - start).count()));
  for (uint32_t i = 0; i < kJobs; ++i) EXPECT_TRUE(JobDirGone(100 + i));
}

}  // namespace
}  // namespace shoal
