// cgroup.conf parsing, the CPU picker, the BPF device program, and both backends run against a
// temporary directory laid out like cgroupfs (files written, OOM and usage read back). The v2
// backend and the device program also run for real on a cgroup2 mount when one is writable.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "noded/cgroup/bpf_devices.h"
#include "noded/cgroup/cgroup_backend.h"
#include "noded/cgroup/cgroup_conf.h"
#include "noded/cgroup/cpu_alloc.h"

namespace shoal::noded {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}
void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/cgroup-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(CgroupConf, ParsesEveryKeyCaseInsensitively) {
  auto c = ParseCgroupConf(
      "# comment\n"
      "CgroupPlugin=cgroup/v2\n"
      "cgroupmountpoint=/sys/fs/cgroup/unified\n"
      "ConstrainCores=yes\nConstrainRAMSpace=yes\nAllowedRAMSpace=110\n"
      "MaxRAMPercent=90\nMinRAMSpace=64\nConstrainSwapSpace=yes\nAllowedSwapSpace=10%\n"
      "ConstrainDevices=yes\nIgnoreSystemd=yes  # trailing\n\n",
      "cgroup.conf");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(c->present);
  EXPECT_EQ(c->plugin, CgroupPluginKind::kV2);
  EXPECT_EQ(c->mountpoint, "/sys/fs/cgroup/unified");
  EXPECT_TRUE(c->constrain_cores && c->constrain_ram && c->constrain_swap && c->constrain_devices);
  EXPECT_DOUBLE_EQ(c->allowed_ram_percent, 110);
  EXPECT_DOUBLE_EQ(c->max_ram_percent, 90);
  EXPECT_EQ(c->min_ram_mb, 64u);
  EXPECT_DOUBLE_EQ(c->allowed_swap_percent, 10);
  EXPECT_TRUE(c->ignore_systemd);
}

TEST(CgroupConf, DefaultsAndAutodetect) {
  auto c = ParseCgroupConf("", "cgroup.conf");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->plugin, CgroupPluginKind::kAutodetect);
  EXPECT_EQ(c->mountpoint, "/sys/fs/cgroup");
  EXPECT_FALSE(c->constrain_cores || c->constrain_ram || c->constrain_devices);
  EXPECT_DOUBLE_EQ(c->allowed_ram_percent, 100);
}

TEST(CgroupConf, ErrorsNameFileLineAndKey) {
  auto bad_key = ParseCgroupConf("ConstrainCores=yes\nConstrainCPUs=yes\n", "/etc/cgroup.conf");
  ASSERT_FALSE(bad_key.ok());
  EXPECT_EQ(bad_key.error(), "/etc/cgroup.conf: line 2: unknown key 'ConstrainCPUs'");
  auto bad_value = ParseCgroupConf("\nAllowedRAMSpace=lots\n", "cgroup.conf");
  ASSERT_FALSE(bad_value.ok());
  EXPECT_EQ(bad_value.error(), "cgroup.conf: line 2: invalid value 'lots' for AllowedRAMSpace");
  EXPECT_FALSE(ParseCgroupConf("CgroupPlugin=cgroup/v3\n", "f").ok());
  EXPECT_FALSE(ParseCgroupConf("ConstrainCores\n", "f").ok());
  EXPECT_FALSE(ParseCgroupConf("ConstrainRAMSpace=maybe\n", "f").ok());
}

TEST(CgroupConf, PolicyNeedsTaskCgroupForConstraints) {
  CgroupConf c;
  c.constrain_cores = c.constrain_ram = c.constrain_devices = true;
  CgroupPolicy none = MakeCgroupPolicy("proctrack/linuxproc", "task/affinity", c);
  EXPECT_FALSE(none.any());
  CgroupPolicy track = MakeCgroupPolicy("", "", c);  // Slurm's default proctrack/cgroup
  EXPECT_TRUE(track.track);
  EXPECT_FALSE(track.constrain_cores || track.constrain_ram);
  CgroupPolicy all = MakeCgroupPolicy("proctrack/cgroup", "task/affinity, task/cgroup", c);
  EXPECT_TRUE(all.track && all.constrain_cores && all.constrain_ram && all.constrain_devices);
  EXPECT_FALSE(all.constrain_swap);
}

TEST(CgroupConf, MemoryLimits) {
  CgroupConf c;
  EXPECT_EQ(RamLimitBytes(c, 100, 2000), 100ull << 20);
  c.allowed_ram_percent = 150;
  EXPECT_EQ(RamLimitBytes(c, 100, 2000), 150ull << 20);
  c.max_ram_percent = 5;  // 5% of 2000 MB = 100 MB caps it
  EXPECT_EQ(RamLimitBytes(c, 100, 2000), 100ull << 20);
  c = CgroupConf{};
  EXPECT_EQ(RamLimitBytes(c, 10, 2000), 30ull << 20);  // MinRAMSpace
  c.allowed_swap_percent = 50;
  EXPECT_EQ(RamSwapLimitBytes(c, 100, 2000), 150ull << 20);
}

TEST(CpuAlloc, FirstFreeIdsThenLeastUsed) {
  EXPECT_EQ(PickCpuIds(4, 1, {}), (std::vector<int>{0}));
  EXPECT_EQ(PickCpuIds(4, 2, {{0}}), (std::vector<int>{1, 2}));
  EXPECT_EQ(PickCpuIds(4, 1, {{0, 1}, {3}}), (std::vector<int>{2}));
  EXPECT_EQ(PickCpuIds(2, 1, {{0}, {1}, {0}}), (std::vector<int>{1}));  // oversubscribed
  EXPECT_EQ(PickCpuIds(2, 5, {}), (std::vector<int>{0, 1}));
  EXPECT_TRUE(PickCpuIds(0, 1, {}).empty());
  EXPECT_EQ(HostCpus({0, 1, 2, 3}, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(HostCpus({3}, 2), (std::vector<int>{1}));
  EXPECT_EQ(ParseCpuIds(FormatCpuIds({0, 2, 5})), (std::vector<int>{0, 2, 5}));
  EXPECT_TRUE(ParseCpuIds("x").empty());
  EXPECT_EQ(FormatCpuList({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
}

TEST(CgroupFiles, KeyedValuesAndPids) {
  EXPECT_EQ(KeyedValue("low 0\nhigh 0\nmax 3\noom 2\noom_kill 1\n", "oom_kill"), 1u);
  EXPECT_EQ(KeyedValue("oom_kill_disable 0\nunder_oom 0\n", "oom_kill"), 0u);
  EXPECT_EQ(ParsePids("12\n34\n"), (std::vector<pid_t>{12, 34}));
}

TEST(BpfDevices, ProgramDeniesListedDevicesOnly) {
  auto p = BuildDeviceProgram({{'c', 1, 3}, {'b', 8, 0}});
  ASSERT_EQ(p.size(), 4u + 2 * 5 + 2);
  EXPECT_EQ(p[4].imm, 2);             // char
  EXPECT_EQ(p[5].imm, 1);             // major 1
  EXPECT_EQ(p[6].imm, 3);             // minor 3
  EXPECT_EQ(p[9].imm, 1);             // block
  EXPECT_EQ(p.back().code, 0x95);     // exit
  EXPECT_EQ(p[p.size() - 2].imm, 1);  // allow by default
}

// --- v2 against a fake tree ----------------------------------------------------------------

TEST(CgroupV2Fake, WritesLimitsAndReadsStats) {
  TempDir t;
  Write(t.path() / "cgroup.procs", "");
  Write(t.path() / "cgroup.controllers", "cpuset cpu io memory pids");
  Write(t.path() / "cpuset.mems.effective", "0");
  auto b = MakeCgroupV2(t.path(), "n1");
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ((*b)->version(), 2);
  CgroupLimits limits;
  limits.cpus = {1};
  limits.mem_bytes = 100 << 20;
  limits.mem_swap_bytes = 150 << 20;
  ASSERT_TRUE((*b)->CreateStep(7, "step_batch", limits).ok());
  fs::path job = t.path() / "shoal/n1/job_7";
  fs::path step = job / "step_batch";
  ASSERT_TRUE(fs::is_directory(step));
  // The last write of subtree_control on each level enables the last controller found.
  EXPECT_EQ(Read(t.path() / "cgroup.subtree_control"), "+pids");
  EXPECT_EQ(Read(job / "cgroup.subtree_control"), "+pids");
  EXPECT_EQ(Read(step / "cpuset.cpus"), "1");
  EXPECT_EQ(Read(step / "cpuset.mems"), "0");
  EXPECT_EQ(Read(job / "memory.max"), std::to_string(100 << 20));
  EXPECT_EQ(Read(step / "memory.swap.max"), std::to_string(50 << 20));
  ASSERT_TRUE((*b)->AddPid(7, "step_batch", 4242).ok());
  EXPECT_EQ(Read(step / "cgroup.procs"), "4242");

  Write(step / "memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n");
  Write(step / "cpu.stat", "usage_usec 3000\nuser_usec 2000\nsystem_usec 1000\n");
  Write(step / "memory.peak", "104857600\n");
  CgroupStats st = (*b)->Stats(7, "step_batch");
  EXPECT_EQ(st.oom_kills, 1u);
  EXPECT_TRUE(st.has_cpu);
  EXPECT_EQ(st.user_usec, 2000u);
  EXPECT_EQ(st.sys_usec, 1000u);
  EXPECT_EQ(st.max_rss_bytes, 104857600u);
  EXPECT_EQ((*b)->Jobs(), (std::vector<uint32_t>{7}));

  Write(step / "cgroup.procs", "");  // nobody left
  EXPECT_TRUE((*b)->KillAndRemove(7, ""));
  EXPECT_FALSE(fs::exists(job));
  EXPECT_TRUE(fs::is_directory(t.path() / "shoal/n1"));
}

TEST(CgroupV2Fake, RefusesANonCgroupDirectory) {
  TempDir t;
  EXPECT_FALSE(MakeCgroupV2(t.path(), "n1").ok());
}

// --- v1 against a fake tree ----------------------------------------------------------------

TEST(CgroupV1Fake, SamePathInEachHierarchy) {
  TempDir t;
  for (const char* c : {"cpuset", "memory", "devices", "freezer", "cpuacct"})
    fs::create_directories(t.path() / c);
  Write(t.path() / "cpuset/cpuset.cpus", "0-1");
  Write(t.path() / "cpuset/cpuset.mems", "0");
  auto b = MakeCgroupV1(t.path(), "n2");
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ((*b)->version(), 1);
  CgroupLimits limits;
  limits.cpus = {0};
  limits.mem_bytes = 1 << 20;
  limits.mem_swap_bytes = 2 << 20;
  limits.deny = {{'c', 1, 3}, {'c', 1, 5}};
  ASSERT_TRUE((*b)->CreateStep(9, "step_3", limits).ok());
  fs::path rel = "shoal/n2/job_9";
  EXPECT_EQ(Read(t.path() / "cpuset" / "shoal/cpuset.cpus"), "0-1");  // inherited
  EXPECT_EQ(Read(t.path() / "cpuset" / rel / "cpuset.cpus"), "0");
  EXPECT_EQ(Read(t.path() / "cpuset" / rel / "step_3/cpuset.cpus"), "0");
  EXPECT_EQ(Read(t.path() / "cpuset" / rel / "step_3/cpuset.mems"), "0");
  EXPECT_EQ(Read(t.path() / "memory" / rel / "memory.limit_in_bytes"), "1048576");
  EXPECT_EQ(Read(t.path() / "memory" / rel / "step_3/memory.memsw.limit_in_bytes"), "2097152");
  // One write per rule; the file keeps the last (cgroupfs appends each to the list).
  EXPECT_EQ(Read(t.path() / "devices" / rel / "step_3/devices.deny"), "c 1:5 rwm");
  ASSERT_TRUE((*b)->AddPid(9, "step_3", 555).ok());
  for (const char* c : {"cpuset", "memory", "devices", "freezer", "cpuacct"})
    EXPECT_EQ(Read(t.path() / c / rel / "step_3/cgroup.procs"), "555") << c;

  Write(t.path() / "memory" / rel / "step_3/memory.oom_control",
        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  Write(t.path() / "memory" / rel / "step_3/memory.max_usage_in_bytes", "2048\n");
  Write(t.path() / "cpuacct" / rel / "step_3/cpuacct.usage_user", "5000000\n");
  Write(t.path() / "cpuacct" / rel / "step_3/cpuacct.usage_sys", "1000\n");
  CgroupStats st = (*b)->Stats(9, "step_3");
  EXPECT_EQ(st.oom_kills, 2u);
  EXPECT_EQ(st.max_rss_bytes, 2048u);
  EXPECT_EQ(st.user_usec, 5000u);
  EXPECT_EQ(st.sys_usec, 1u);

  for (const char* c : {"cpuset", "memory", "devices", "freezer", "cpuacct"})
    Write(t.path() / c / rel / "step_3/cgroup.procs", "");
  EXPECT_TRUE((*b)->KillAndRemove(9, "step_3"));
  EXPECT_FALSE(fs::exists(t.path() / "memory" / rel / "step_3"));
  EXPECT_TRUE(fs::exists(t.path() / "memory" / rel));
  EXPECT_TRUE((*b)->KillAndRemove(9, ""));
  EXPECT_FALSE(fs::exists(t.path() / "freezer" / rel));
}

// --- v2 for real ---------------------------------------------------------------------------

constexpr long kCgroup2Magic = 0x63677270;
const char* RealCgroup2() {
  for (const char* p : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    struct statfs s {};
    if (::statfs(p, &s) == 0 && s.f_type == kCgroup2Magic && ::access(p, W_OK) == 0) return p;
  }
  return nullptr;
}

// Kills whatever the test left in the job's cgroup, also when an assertion returned early: a
// leaked daemon would keep the test's output pipe open and ctest would wait for it forever.
class JobCgroupGuard {
 public:
  JobCgroupGuard(CgroupBackend* backend, std::string root, std::string node)
      : backend_(backend), root_(std::move(root)), node_(std::move(node)) {}
  ~JobCgroupGuard() {
    backend_->KillAndRemove(1, "");
    ::rmdir((root_ + "/shoal/" + node_).c_str());
    ::rmdir((root_ + "/shoal").c_str());  // unless another node still uses it
  }

 private:
  CgroupBackend* backend_;
  std::string root_, node_;
};

TEST(CgroupV2Real, TracksKillsAndDeniesDevices) {
  const char* root = RealCgroup2();
  if (root == nullptr || ::geteuid() != 0) GTEST_SKIP() << "no writable cgroup2 mount (root)";
  std::string node = "unit" + std::to_string(::getpid());
  auto b = MakeCgroupV2(root, node);
  ASSERT_TRUE(b.ok()) << b.error();
  JobCgroupGuard guard((*b).get(), root, node);
  // A fake GPU: the device numbers of /dev/null, denied to the job.
  TempDir t;
  std::string dev = (t.path() / "nvidia0").string();
  ASSERT_EQ(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  CgroupLimits limits;
  limits.deny = {{'c', 1, 3}};
  Status s = (*b)->CreateStep(1, "step_0", limits);
  ASSERT_TRUE(s.ok()) << s.message();

  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  if (child == 0) {
    // Join, then report whether the denied device opens; a double-forked, setsid'ed daemon.
    ::close(ready[0]);
    if (!(*b)->AddPid(1, "step_0", 0).ok()) ::_exit(3);
    int fd = ::open(dev.c_str(), O_WRONLY);
    char r = fd < 0 && errno == EPERM ? 'D' : 'A';
    int zero = ::open("/dev/zero", O_RDONLY);
    if (zero < 0) r = 'Z';
    if (::fork() == 0) {
      ::setsid();
      if (::fork() == 0) {
        // The daemon holds nothing of the test's: no stdio, only its end of the pipe.
        for (int std_fd : {0, 1, 2}) ::close(std_fd);
        ::write(ready[1], &r, 1);
        ::close(ready[1]);
        ::pause();
        ::_exit(0);
      }
      ::_exit(0);
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  char r = 0;
  ASSERT_EQ(::read(ready[0], &r, 1), 1);
  ::close(ready[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(r, 'D') << "the denied device opened (A) or /dev/zero did not (Z)";
  // The intermediate process may still be exiting (slowly under ASan, which unmaps a large
  // shadow): wait until only the daemon is left in the cgroup.
  std::vector<pid_t> pids;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    pids = (*b)->Pids(1, "step_0");
    if (pids.size() == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(pids.size(), 1u);  // the daemon, escaped from its parents but not from the cgroup
  pid_t daemon = pids[0];
  EXPECT_TRUE((*b)->KillAndRemove(1, ""));
  // Gone, or a zombie waiting for init to reap it.
  std::string state = Read("/proc/" + std::to_string(daemon) + "/stat");
  EXPECT_TRUE(state.empty() || state.find(") Z ") != std::string::npos) << state;
  EXPECT_FALSE(fs::exists(fs::path(root) / "shoal" / node / "job_1"));
}

}  // namespace
}  // namespace shoal::noded
