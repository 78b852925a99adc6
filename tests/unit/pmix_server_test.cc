// PmixServer: the pure parts (maps, validation), and end-to-end runs of real Open MPI programs
// (mpi4py) direct-launched under it. Each "node" is a forked process with its own PmixServer and
// asio loop (libpmix keeps one server per process), launching its ranks the way shoal-stepd does;
// the test process plays srun, relaying fences between the nodes over pipes. When root, the ranks
// run as nobody, so the rendezvous files' ownership is exercised too.
//
// The end-to-end tests need Open MPI and mpi4py: without them they are skipped, or fail when
// SHOAL_REQUIRE_MPI=1 (CI).
#include "noded/pmix_server.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

namespace shoal::noded {
namespace {

using namespace std::chrono_literals;

PmixStepInfo Layout(std::vector<std::vector<uint32_t>> ranks_by_node) {
  PmixStepInfo info;
  info.job_id = 7;
  info.step_id = 1;
  info.uid = ::getuid();
  info.gid = ::getgid();
  for (size_t i = 0; i < ranks_by_node.size(); ++i)
    info.nodes.push_back("n" + std::to_string(i + 1));
  info.ranks_by_node = std::move(ranks_by_node);
  return info;
}

// ---- pure parts ----------------------------------------------------------------------------

TEST(PmixPure, NamespaceName) {
  EXPECT_EQ(PmixNamespace(42, 0), "shoal.42.0");
  EXPECT_EQ(PmixNamespace(7, 4294967294u), "shoal.7.4294967294");
}

TEST(PmixPure, NodeListInNodeOrder) {
  PmixStepInfo info = Layout({{0, 1}, {2}, {3, 4}});
  info.nodes = {"gpu02", "gpu01", "cpu-1"};
  EXPECT_EQ(PmixNodeListString(info), "gpu02,gpu01,cpu-1");
}

TEST(PmixPure, ProcMapBlockAndCyclic) {
  EXPECT_EQ(PmixProcMapString(Layout({{0, 1}, {2}})), "0,1;2");
  EXPECT_EQ(PmixProcMapString(Layout({{0, 1, 2, 3}, {4, 5, 6, 7}})), "0,1,2,3;4,5,6,7");
  EXPECT_EQ(PmixProcMapString(Layout({{0, 2, 4}, {1, 3, 5}})), "0,2,4;1,3,5");
  EXPECT_EQ(PmixProcMapString(Layout({{5}})), "5");  // invalid as a step, but the map is verbatim
}

TEST(PmixPure, LocalRankAndNodeOfRank) {
  PmixStepInfo info = Layout({{0, 2, 4}, {1, 3}});
  EXPECT_EQ(PmixLocalRank(info, 0, 0), 0);
  EXPECT_EQ(PmixLocalRank(info, 0, 4), 2);
  EXPECT_EQ(PmixLocalRank(info, 1, 3), 1);
  EXPECT_EQ(PmixLocalRank(info, 1, 4), -1);
  EXPECT_EQ(PmixLocalRank(info, 9, 0), -1);
  EXPECT_EQ(PmixNodeOfRank(info, 3), 1);
  EXPECT_EQ(PmixNodeOfRank(info, 4), 0);
  EXPECT_EQ(PmixNodeOfRank(info, 5), -1);
}

TEST(PmixPure, Validation) {
  EXPECT_TRUE(ValidatePmixStepInfo(Layout({{0, 1}, {2}})).ok());
  EXPECT_TRUE(ValidatePmixStepInfo(Layout({{1, 3}, {0, 2}})).ok());
  EXPECT_FALSE(ValidatePmixStepInfo(Layout({})).ok());
  EXPECT_FALSE(ValidatePmixStepInfo(Layout({{}})).ok());           // no tasks
  EXPECT_FALSE(ValidatePmixStepInfo(Layout({{0, 1}, {1}})).ok());  // rank twice
  EXPECT_FALSE(ValidatePmixStepInfo(Layout({{0, 2}})).ok());       // gap
  PmixStepInfo bad = Layout({{0}, {1}});
  bad.node_id = 2;
  EXPECT_FALSE(ValidatePmixStepInfo(bad).ok());
  bad = Layout({{0}, {1}});
  bad.nodes[1] = "a,b";
  EXPECT_FALSE(ValidatePmixStepInfo(bad).ok());
  bad = Layout({{0}, {1}});
  bad.nodes.pop_back();
  EXPECT_FALSE(ValidatePmixStepInfo(bad).ok());
}

TEST(PmixPure, StubWithoutLibpmix) {
  if (PmixSupported()) GTEST_SKIP() << "built with libpmix";
  PmixStepInfo info = Layout({{0}});
  info.tmpdir = "/tmp";
  auto s = PmixServer::Start(info, PmixCallbacks{[](std::function<void()> f) { f(); }, {}, {}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "this build has no PMIx support (libpmix-dev missing)");
}

// ---- end to end ----------------------------------------------------------------------------

bool WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n) {
    ssize_t r = ::read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Wire between srun (the test) and a node process.
//   node -> srun: [seq][len][bytes]      fence contribution; seq kAbort: a rank aborted
//   srun -> node: [seq][n]{[len][bytes]}  fence result; n kFail: the fence failed;
//                 seq kAbort: kill the ranks
constexpr uint32_t kAbort = 0xFFFFFFFFu;
constexpr uint32_t kFail = 0xFFFFFFFFu;

struct Scenario {
  std::vector<std::vector<uint32_t>> ranks_by_node;
  std::vector<std::string> argv;       // of every rank
  std::vector<std::string> extra_env;  // KEY=VALUE for every rank
  bool answer_fences = true;           // false: srun never answers (server shut down pending)
  std::chrono::seconds deadline = 60s;
};

struct NodeReport {
  int exit_code = -1;  // of the node process
  std::string report;  // lines written by the node process
  std::string output;  // the ranks' stdout and stderr
};

// One node: PmixServer on an asio loop, ranks forked with TaskEnvironment. Never returns.
[[noreturn]] void RunNode(const Scenario& sc, PmixStepInfo info, uint32_t run_uid, uint32_t run_gid,
                          int up, int down, const std::string& dir) {
  const std::string node = info.nodes[info.node_id];
  FILE* report = std::fopen((dir + "/report." + node).c_str(), "w");
  std::setvbuf(report, nullptr, _IOLBF, 0);
  int out = ::open((dir + "/out." + node).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  asio::io_context io;
  std::map<pid_t, uint32_t> tasks;
  std::unique_ptr<PmixServer> server;

  PmixCallbacks cb;
  cb.post = [&io](std::function<void()> f) { asio::post(io, std::move(f)); };
  cb.fence = [&](uint32_t seq, std::string data) {
    std::fprintf(report, "fence %u %zu\n", seq, data.size());
    uint32_t h[2] = {seq, static_cast<uint32_t>(data.size())};
    WriteAll(up, h, sizeof h);
    WriteAll(up, data.data(), data.size());
    if (!sc.answer_fences) {
      // Shut down with the fence pending, as a supervisor does when the step is cancelled.
      for (auto& t : tasks) ::kill(t.first, SIGKILL);
    }
  };
  cb.abort = [&](uint32_t rank, int status, std::string msg) {
    std::fprintf(report, "abort rank=%u status=%d msg=%s\n", rank, status, msg.c_str());
    uint32_t h[2] = {kAbort, 0};
    WriteAll(up, h, sizeof h);
  };
  auto started = PmixServer::Start(info, cb);
  if (!started) {
    std::fprintf(report, "start-error %s\n", started.error().c_str());
    ::_exit(2);
  }
  server = std::move(*started);
  // libpmix allows one server per process.
  if (PmixServer::Start(info, cb).ok()) std::fprintf(report, "second-start-succeeded\n");

  asio::signal_set sigchld(io, SIGCHLD);
  for (uint32_t rank : info.ranks_by_node[info.node_id]) {
    auto env = server->TaskEnvironment(rank, run_uid, run_gid);
    if (!env) {
      std::fprintf(report, "env-error %s\n", env.error().c_str());
      ::_exit(2);
    }
    for (const auto& e : *env) std::fprintf(report, "env %u %s\n", rank, e.c_str());
    std::vector<std::string> full = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
                                     "HOME=" + dir, "SLURMD_NODENAME=" + node,
                                     "SLURM_PROCID=" + std::to_string(rank)};
    for (const auto& e : sc.extra_env) full.push_back(e);
    for (const auto& e : *env) full.push_back(e);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
      ::chdir(dir.c_str());
      if (run_uid != ::geteuid()) {
        if (::setgroups(0, nullptr) || ::setgid(run_gid) || ::setuid(run_uid)) ::_exit(126);
      }
      std::vector<char*> argv, envp;
      for (const auto& a : sc.argv) argv.push_back(const_cast<char*>(a.c_str()));
      for (const auto& e : full) envp.push_back(const_cast<char*>(e.c_str()));
      argv.push_back(nullptr);
      envp.push_back(nullptr);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    tasks[pid] = rank;
  }

  std::function<void()> reap = [&] {
    sigchld.async_wait([&](const asio::error_code& ec, int) {
      if (ec) return;
      int st;
      pid_t p;
      while ((p = ::waitpid(-1, &st, WNOHANG)) > 0) {
        auto it = tasks.find(p);
        if (it == tasks.end()) continue;
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        std::fprintf(report, "exit rank=%u code=%d\n", it->second, code);
        server->ClientExited(it->second);
        tasks.erase(it);
      }
      if (tasks.empty()) {
        io.stop();
      } else {
        reap();
      }
    });
  };
  reap();
  asio::steady_timer deadline(io, sc.deadline);
  deadline.async_wait([&](const asio::error_code& ec) {
    if (ec) return;
    std::fprintf(report, "node-deadline\n");
    for (auto& t : tasks) ::kill(t.first, SIGKILL);
  });

  // srun's answers, read on a thread and posted to the loop like any other event.
  std::thread([&io, &server, &tasks, down] {
    for (;;) {
      uint32_t h[2];
      if (!ReadAll(down, h, sizeof h)) return;
      if (h[0] == kAbort) {
        asio::post(io, [&tasks] {
          for (auto& t : tasks) ::kill(t.first, SIGKILL);
        });
        continue;
      }
      uint32_t seq = h[0];
      if (h[1] == kFail) {
        asio::post(io, [&server, seq] { server->FailFence(seq); });
        continue;
      }
      std::vector<std::string> all(h[1]);
      for (auto& d : all) {
        uint32_t len;
        if (!ReadAll(down, &len, sizeof len)) return;
        d.resize(len);
        if (len && !ReadAll(down, d.data(), len)) return;
      }
      asio::post(io, [&server, seq, all = std::move(all)] { server->CompleteFence(seq, all); });
    }
  }).detach();

  io.run();
  std::fprintf(report, "pending-fences %u\n", server->pending_fences());
  server.reset();  // PMIx_server_finalize, with or without pending fences
  std::fprintf(report, "finalized\n");
  // libpmix cannot host a second server in this process: refused, not a crash.
  auto again = PmixServer::Start(info, cb);
  std::fprintf(report, "restart %s\n", again.ok() ? "succeeded" : again.error().c_str());
  std::fclose(report);
  ::_exit(0);
}

// srun: starts one process per node, relays fences, kills the step on abort. Returns per node.
std::vector<NodeReport> RunStep(const Scenario& sc, const std::string& dir, uint32_t run_uid,
                                uint32_t run_gid) {
  PmixStepInfo info = Layout(sc.ranks_by_node);
  info.uid = run_uid;
  info.gid = run_gid;
  const size_t n_nodes = info.nodes.size();
  std::vector<int> ups(n_nodes), downs(n_nodes);
  std::vector<pid_t> pids(n_nodes);
  for (size_t n = 0; n < n_nodes; ++n) {
    int u[2], d[2];
    if (::pipe2(u, O_CLOEXEC) || ::pipe2(d, O_CLOEXEC)) return {};
    PmixStepInfo ni = info;
    ni.node_id = static_cast<uint32_t>(n);
    ni.tmpdir = dir + "/" + info.nodes[n];
    ::mkdir(ni.tmpdir.c_str(), 0700);  // root-owned and private, as shoal-stepd makes it
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(u[0]);
      ::close(d[1]);
      RunNode(sc, ni, run_uid, run_gid, u[1], d[0], dir);
    }
    ::close(u[1]);
    ::close(d[0]);
    ups[n] = u[0];
    downs[n] = d[1];
    pids[n] = pid;
  }
  auto send_all = [&](const std::vector<bool>& open, const void* p, size_t len) {
    for (size_t m = 0; m < n_nodes; ++m) {
      if (open[m]) WriteAll(downs[m], p, len);
    }
  };
  std::map<uint32_t, std::vector<std::optional<std::string>>> pending;
  std::vector<bool> open(n_nodes, true);
  size_t n_open = n_nodes;
  auto give_up = std::chrono::steady_clock::now() + sc.deadline + 10s;
  while (n_open) {
    if (std::chrono::steady_clock::now() > give_up) {
      ADD_FAILURE() << "step did not finish in time";
      for (pid_t p : pids) ::kill(p, SIGKILL);
      break;
    }
    std::vector<pollfd> pf;
    for (size_t n = 0; n < n_nodes; ++n) pf.push_back({open[n] ? ups[n] : -1, POLLIN, 0});
    if (::poll(pf.data(), pf.size(), 1000) <= 0) continue;
    for (size_t n = 0; n < n_nodes; ++n) {
      if (!open[n] || !(pf[n].revents & (POLLIN | POLLHUP))) continue;
      uint32_t h[2];
      if (!ReadAll(ups[n], h, sizeof h)) {
        open[n] = false;
        --n_open;
        ::close(downs[n]);
        // Fences that node never joined cannot complete.
        for (auto it = pending.begin(); it != pending.end();) {
          if (!it->second[n]) {
            uint32_t f[2] = {it->first, kFail};
            send_all(open, f, sizeof f);
            it = pending.erase(it);
          } else {
            ++it;
          }
        }
        continue;
      }
      if (h[0] == kAbort) {
        uint32_t k[2] = {kAbort, 0};
        send_all(open, k, sizeof k);
        continue;
      }
      std::string data(h[1], '\0');
      if (h[1] && !ReadAll(ups[n], data.data(), h[1])) continue;
      if (!sc.answer_fences) continue;
      if (n_open < n_nodes) {
        uint32_t f[2] = {h[0], kFail};
        WriteAll(downs[n], f, sizeof f);
        continue;
      }
      auto& contributions = pending[h[0]];
      contributions.resize(n_nodes);
      contributions[n] = std::move(data);
      bool complete = true;
      for (const auto& c : contributions) complete = complete && c.has_value();
      if (!complete) continue;
      std::string msg(8, '\0');
      uint32_t hh[2] = {h[0], static_cast<uint32_t>(n_nodes)};
      std::memcpy(msg.data(), hh, sizeof hh);
      for (const auto& c : contributions) {
        uint32_t len = static_cast<uint32_t>(c->size());
        msg.append(reinterpret_cast<const char*>(&len), sizeof len);
        msg.append(*c);
      }
      send_all(open, msg.data(), msg.size());
      pending.erase(h[0]);
    }
  }
  std::vector<NodeReport> reports(n_nodes);
  for (size_t n = 0; n < n_nodes; ++n) {
    int st = 0;
    ::waitpid(pids[n], &st, 0);
    ::close(ups[n]);
    if (open[n]) ::close(downs[n]);
    reports[n].exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    reports[n].report = ReadFile(dir + "/report." + info.nodes[n]);
    reports[n].output = ReadFile(dir + "/out." + info.nodes[n]);
  }
  return reports;
}

// Ranks that exited 0 per the node's report; -1 when one exited otherwise.
int RanksExitedZero(const std::string& report) {
  std::istringstream in(report);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.rfind("exit rank=", 0) != 0) continue;
    if (line.size() < 7 || line.substr(line.size() - 7) != " code=0") return -1;
    ++n;
  }
  return n;
}

constexpr const char* kPingPong = R"(
import os, sys
from mpi4py import MPI
ROUNDS = int(os.environ.get("PING_PONG_ROUNDS", "300"))
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
local = comm.Split_type(MPI.COMM_TYPE_SHARED)
print(f"rank {rank} of {size} on {os.environ['SLURMD_NODENAME']} local {local.Get_rank()} of {local.Get_size()}", flush=True)
right, left = (rank + 1) % size, (rank - 1) % size
for r in range(ROUNDS):
    if rank == 0:
        comm.send({"round": r, "hits": 0}, dest=right, tag=7)
        ball = comm.recv(source=left, tag=7)
        if ball != {"round": r, "hits": size - 1}:
            print(f"rank 0: bad ball {ball} in round {r}", flush=True)
            comm.Abort(3)
    else:
        ball = comm.recv(source=left, tag=7)
        ball["hits"] += 1
        comm.send(ball, dest=right, tag=7)
comm.Barrier()
if rank == 0:
    print(f"ball went {ROUNDS} times around {size} ranks", flush=True)
)";

constexpr const char* kAbortScript = R"(
import time
from mpi4py import MPI
comm = MPI.COMM_WORLD
comm.Barrier()
if comm.Get_rank() == 1:
    comm.Abort(7)
time.sleep(60)
)";

class PmixE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PmixSupported()) GTEST_SKIP() << "built without libpmix";
    bool require =
        std::getenv("SHOAL_REQUIRE_MPI") && std::string(std::getenv("SHOAL_REQUIRE_MPI")) == "1";
    // The python that has mpi4py (a pyenv shim may come first in PATH without it).
    for (const char* py : {"/usr/bin/python3", "/usr/local/bin/python3"}) {
      std::string cmd = std::string(py) + " -c 'import mpi4py' >/dev/null 2>&1";
      if (::access(py, X_OK) == 0 && std::system(cmd.c_str()) == 0) {
        python_ = py;
        break;
      }
    }
    bool have_ompi = std::system("ompi_info --version >/dev/null 2>&1") == 0;
    if (python_.empty() || !have_ompi) {
      std::string why =
          python_.empty() ? "python3 with mpi4py not found" : "Open MPI (ompi_info) not found";
      if (require) FAIL() << why << " and SHOAL_REQUIRE_MPI=1";
      GTEST_SKIP() << why << " (set SHOAL_REQUIRE_MPI=1 to fail instead)";
    }
    char tmpl[] = "/tmp/shoal-pmix-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0711);
    uid_ = ::getuid();
    gid_ = ::getgid();
    if (::geteuid() == 0) {  // run the ranks as nobody: the server's files must be theirs
      uid_ = 65534;
      gid_ = 65534;
    }
  }
  void TearDown() override {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string Script(const char* name, const char* text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), 0644);
    return path;
  }
  Scenario Mpi(std::vector<std::vector<uint32_t>> layout, const std::string& script) {
    Scenario sc;
    sc.ranks_by_node = std::move(layout);
    sc.argv = {python_, script};
    // Open MPI 4.1 recognizes a direct launch by srun from these (its schizo/slurm component);
    // shoal-stepd sets them for every task anyway.
    sc.extra_env = {"SLURM_JOBID=7", "SLURM_JOB_ID=7", "SLURM_STEP_ID=1",
                    "SLURM_NODELIST=n[1-" + std::to_string(sc.ranks_by_node.size()) + "]",
                    // 2-core test machines run more busy-polling ranks than cores.
                    "OMPI_MCA_mpi_yield_when_idle=1"};
    return sc;
  }
  static std::string Dump(const std::vector<NodeReport>& r) {
    std::string s;
    for (size_t i = 0; i < r.size(); ++i) {
      s += "--- node " + std::to_string(i) + " exit " + std::to_string(r[i].exit_code) +
           "\nreport:\n" + r[i].report + "output:\n" + r[i].output;
    }
    return s;
  }

  std::string python_, dir_;
  uint32_t uid_ = 0, gid_ = 0;
};

TEST_F(PmixE2E, OneNodeTwoRanksPingPong) {
  auto r = RunStep(Mpi({{0, 1}}, Script("ping.py", kPingPong)), dir_, uid_, gid_);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].exit_code, 0) << Dump(r);
  EXPECT_NE(r[0].output.find("ball went 300 times around 2 ranks"), std::string::npos) << Dump(r);
  EXPECT_NE(r[0].output.find("rank 1 of 2 on n1 local 1 of 2"), std::string::npos) << Dump(r);
  EXPECT_EQ(RanksExitedZero(r[0].report), 2) << Dump(r);
  // Every rank is local: libpmix completes the fences itself, srun is not involved.
  EXPECT_EQ(r[0].report.find("fence "), std::string::npos) << Dump(r);
  EXPECT_EQ(r[0].report.find("second-start-succeeded"), std::string::npos) << Dump(r);
  EXPECT_NE(r[0].report.find("restart pmix: libpmix cannot start a second server"),
            std::string::npos)
      << Dump(r);
  EXPECT_NE(r[0].report.find("pending-fences 0\nfinalized"), std::string::npos) << Dump(r);
  // The environment a task gets.
  const std::string& rep = r[0].report;
  EXPECT_NE(rep.find("env 0 PMIX_NAMESPACE=shoal.7.1\n"), std::string::npos) << rep;
  EXPECT_NE(rep.find("env 1 PMIX_RANK=1\n"), std::string::npos) << rep;
  EXPECT_NE(rep.find("env 0 PMIX_SERVER_URI"), std::string::npos) << rep;
  EXPECT_NE(rep.find("env 0 PMIX_SERVER_TMPDIR=" + dir_ + "/n1/pmix\n"), std::string::npos) << rep;
  EXPECT_NE(rep.find("env 0 PMIX_HOSTNAME=n1\n"), std::string::npos) << rep;
  EXPECT_NE(rep.find("env 0 OMPI_MCA_btl_vader_backing_directory=/dev/shm/shoal-pmix.7.1.n1\n"),
            std::string::npos)
      << rep;
  // The server cleaned up after itself.
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/n1/pmix"));
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/shoal-pmix.7.1.n1"));
}

// Two "nodes" on this one host, 2 + 1 ranks: the fences go through srun, the two local ranks
// talk through shared memory, the third over TCP.
TEST_F(PmixE2E, TwoNodesThreeRanksPingPong) {
  auto r = RunStep(Mpi({{0, 1}, {2}}, Script("ping.py", kPingPong)), dir_, uid_, gid_);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].exit_code, 0) << Dump(r);
  EXPECT_EQ(r[1].exit_code, 0) << Dump(r);
  std::string out = r[0].output + r[1].output;
  EXPECT_NE(out.find("ball went 300 times around 3 ranks"), std::string::npos) << Dump(r);
  EXPECT_NE(out.find("rank 1 of 3 on n1 local 1 of 2"), std::string::npos) << Dump(r);
  EXPECT_NE(out.find("rank 2 of 3 on n2 local 0 of 1"), std::string::npos) << Dump(r);
  EXPECT_EQ(RanksExitedZero(r[0].report), 2) << Dump(r);
  EXPECT_EQ(RanksExitedZero(r[1].report), 1) << Dump(r);
  for (const auto& n : r) {
    EXPECT_NE(n.report.find("pending-fences 0\nfinalized"), std::string::npos) << Dump(r);
  }
}

// Both nodes have a local rank 0 and 1: their shared-memory segments must not collide.
TEST_F(PmixE2E, TwoNodesTwoRanksEach) {
  auto r = RunStep(Mpi({{0, 1}, {2, 3}}, Script("ping.py", kPingPong)), dir_, uid_, gid_);
  ASSERT_EQ(r.size(), 2u);
  std::string out = r[0].output + r[1].output;
  EXPECT_NE(out.find("ball went 300 times around 4 ranks"), std::string::npos) << Dump(r);
  EXPECT_NE(out.find("rank 3 of 4 on n2 local 1 of 2"), std::string::npos) << Dump(r);
  EXPECT_EQ(RanksExitedZero(r[0].report), 2) << Dump(r);
  EXPECT_EQ(RanksExitedZero(r[1].report), 2) << Dump(r);
}

TEST_F(PmixE2E, MpiAbortReachesTheAbortCallback) {
  auto r = RunStep(Mpi({{0, 1}, {2}}, Script("abort.py", kAbortScript)), dir_, uid_, gid_);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NE(r[0].report.find("abort rank=1 status=7"), std::string::npos) << Dump(r);
  EXPECT_EQ(r[1].report.find("abort"), std::string::npos) << Dump(r);
  // srun killed the step everywhere, long before the ranks' sleep ended.
  EXPECT_NE(r[1].report.find("exit rank=2 code=137"), std::string::npos) << Dump(r);
  EXPECT_EQ(r[0].report.find("node-deadline"), std::string::npos) << Dump(r);
  EXPECT_NE(r[0].report.find("finalized"), std::string::npos) << Dump(r);
}

// srun never answers: the supervisor kills the ranks and destroys the server with the fence
// still pending.
TEST_F(PmixE2E, ShutdownWithAPendingFence) {
  Scenario sc = Mpi({{0}, {1}}, Script("ping.py", kPingPong));
  sc.answer_fences = false;
  auto r = RunStep(sc, dir_, uid_, gid_);
  ASSERT_EQ(r.size(), 2u);
  for (const auto& n : r) {
    EXPECT_EQ(n.exit_code, 0) << Dump(r);
    EXPECT_NE(n.report.find("fence 0 "), std::string::npos) << Dump(r);
    EXPECT_NE(n.report.find("pending-fences 1\nfinalized"), std::string::npos) << Dump(r);
  }
}

}  // namespace
}  // namespace shoal::noded
