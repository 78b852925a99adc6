// cgroup v1 backend: the same job/step path in each controller's hierarchy; the freezer
// hierarchy tracks processes (freeze, kill, thaw ends them without a race against fork).
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "noded/cgroup/cgroup_backend.h"

namespace shoal::noded {
namespace {

bool IsDir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class CgroupV1 : public CgroupBackend {
 public:
  CgroupV1(std::string root, std::string node, std::vector<std::string> controllers)
      : root_(std::move(root)), node_(std::move(node)), controllers_(std::move(controllers)) {}

  int version() const override { return 1; }

  Status CreateStep(uint32_t job_id, const std::string& step, const CgroupLimits& limits) override {
    // shoald's sweep may remove an empty node directory right between two mkdirs: once more.
    Status s = CreateStepOnce(job_id, step, limits);
    if (!s.ok() && s.message().find(std::strerror(ENOENT)) != std::string::npos)
      s = CreateStepOnce(job_id, step, limits);
    return s;
  }

  Status CreateStepOnce(uint32_t job_id, const std::string& step, const CgroupLimits& limits) {
    for (const auto& c : controllers_) {
      std::string base = root_ + "/" + c;
      std::string job_rel = "shoal/" + node_ + "/job_" + std::to_string(job_id);
      bool job_existed = IsDir(base + "/" + job_rel);
      std::string path = base;
      for (const std::string& part :
           {std::string("shoal"), node_, "job_" + std::to_string(job_id), step}) {
        std::string parent = path;
        path += "/" + part;
        if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
          return Error(ErrorCode::kIoError, "mkdir " + path + ": " + std::strerror(errno));
        // A new cpuset has no CPUs or memory nodes: tasks cannot join until it gets some.
        if (c == "cpuset") InheritCpuset(parent, path);
        // Limits top-down: a v1 cpuset must stay within its parent's.
        if ((part == step) || (!job_existed && path == base + "/" + job_rel))
          Apply(c, path, limits);
      }
    }
    return Status::Ok();
  }

  Status AddPid(uint32_t job_id, const std::string& step, pid_t pid) override {
    Status first;
    for (const auto& c : controllers_) {
      Status s = WriteCgroupFile(StepPath(c, job_id, step) + "/cgroup.procs", std::to_string(pid));
      if (!s.ok() && first.ok()) first = s;
    }
    return first;
  }

  CgroupStats Stats(uint32_t job_id, const std::string& step) override {
    CgroupStats st;
    if (Has("memory")) {
      std::string dir = StepPath("memory", job_id, step);
      if (auto oc = ReadCgroupFile(dir + "/memory.oom_control"))
        st.oom_kills = KeyedValue(*oc, "oom_kill");
      if (auto peak = ReadCgroupFile(dir + "/memory.max_usage_in_bytes"))
        st.max_rss_bytes = std::strtoull(peak->c_str(), nullptr, 10);
    }
    if (Has("cpuacct")) {
      std::string dir = StepPath("cpuacct", job_id, step);
      auto user = ReadCgroupFile(dir + "/cpuacct.usage_user");
      auto sys = ReadCgroupFile(dir + "/cpuacct.usage_sys");
      if (user && sys) {
        st.has_cpu = true;  // nanoseconds
        st.user_usec = std::strtoull(user->c_str(), nullptr, 10) / 1000;
        st.sys_usec = std::strtoull(sys->c_str(), nullptr, 10) / 1000;
      }
    }
    return st;
  }

  std::vector<pid_t> Pids(uint32_t job_id, const std::string& step) override {
    std::vector<pid_t> out;
    std::string dir =
        step.empty() ? JobPath(tracker_(), job_id) : StepPath(tracker_(), job_id, step);
    CollectPids(dir, &out);
    return out;
  }

  bool KillAndRemove(uint32_t job_id, const std::string& step) override {
    std::string track =
        step.empty() ? JobPath(tracker_(), job_id) : StepPath(tracker_(), job_id, step);
    bool freezer = Has("freezer");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (int round = 0;; ++round) {
      std::vector<pid_t> pids;
      CollectPids(track, &pids);
      if (pids.empty()) break;
      // Frozen processes cannot fork while we kill them; SIGKILL takes effect once thawed. Only
      // from the second round (something forked under the first): whoever dies between FROZEN
      // and THAWED (this process, killed with its node) leaves the job frozen, unkillable.
      bool freeze = freezer && round > 0;
      if (freeze) FreezeTree(track, "FROZEN");
      for (pid_t p : pids) ::kill(p, SIGKILL);
      if (freeze) FreezeTree(track, "THAWED");
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    bool all = true;
    for (const auto& c : controllers_) {
      std::string dir = step.empty() ? JobPath(c, job_id) : StepPath(c, job_id, step);
      RemoveTreeOfCgroups(dir);
      if (IsDir(dir)) all = false;
    }
    return all;
  }

  std::vector<uint32_t> Jobs() override {
    std::vector<uint32_t> ids;
    for (const auto& name : SubDirs(root_ + "/" + tracker_() + "/shoal/" + node_)) {
      if (name.rfind("job_", 0) != 0) continue;
      unsigned long id = std::strtoul(name.c_str() + 4, nullptr, 10);
      if (id > 0) ids.push_back(static_cast<uint32_t>(id));
    }
    return ids;
  }

  void RemoveNodeDirIfEmpty() override {
    for (const auto& c : controllers_) {
      ::rmdir((root_ + "/" + c + "/shoal/" + node_).c_str());
      ::rmdir((root_ + "/" + c + "/shoal").c_str());
    }
  }

  bool HasStep(uint32_t job_id, const std::string& step) override {
    return IsDir(StepPath(tracker_(), job_id, step));
  }

 private:
  const std::string& tracker_() const {
    for (const auto& c : controllers_)
      if (c == "freezer") return c;
    return controllers_.front();
  }
  bool Has(const std::string& c) const {
    return std::find(controllers_.begin(), controllers_.end(), c) != controllers_.end();
  }
  std::string JobPath(const std::string& c, uint32_t job_id) const {
    return root_ + "/" + c + "/shoal/" + node_ + "/job_" + std::to_string(job_id);
  }
  std::string StepPath(const std::string& c, uint32_t job_id, const std::string& step) const {
    return JobPath(c, job_id) + "/" + step;
  }

  static void InheritCpuset(const std::string& parent, const std::string& dir) {
    for (const char* f : {"cpuset.cpus", "cpuset.mems"}) {
      auto mine = ReadCgroupFile(dir + "/" + f);
      if (mine && !Trimmed(*mine).empty()) continue;
      auto theirs = ReadCgroupFile(parent + "/" + f);
      if (theirs && !Trimmed(*theirs).empty())
        (void)WriteCgroupFile(dir + "/" + f, Trimmed(*theirs));
    }
  }

  static void Apply(const std::string& c, const std::string& dir, const CgroupLimits& limits) {
    if (c == "cpuset" && !limits.cpus.empty()) {
      (void)WriteCgroupFile(dir + "/cpuset.cpus", FormatCpuList(limits.cpus));
    } else if (c == "memory" && limits.mem_bytes > 0) {
      // memsw must stay >= the limit: raise memsw first when it grows, the limit first otherwise.
      (void)WriteCgroupFile(dir + "/memory.limit_in_bytes", std::to_string(limits.mem_bytes));
      if (limits.mem_swap_bytes > 0)
        (void)WriteCgroupFile(dir + "/memory.memsw.limit_in_bytes",
                              std::to_string(limits.mem_swap_bytes));
    } else if (c == "devices") {
      for (const DeviceRule& r : limits.deny)
        (void)WriteCgroupFile(dir + "/devices.deny", std::string(1, r.type) + " " +
                                                         std::to_string(r.major) + ":" +
                                                         std::to_string(r.minor) + " rwm");
    }
  }

  static void FreezeTree(const std::string& dir, const char* state) {
    // Freezing a parent freezes its children; writing each level keeps test trees honest too.
    (void)WriteCgroupFile(dir + "/freezer.state", state);
  }

  std::string root_, node_;
  std::vector<std::string> controllers_;
};

}  // namespace

Result<std::unique_ptr<CgroupBackend>> MakeCgroupV1(const std::string& root,
                                                    const std::string& node) {
  std::vector<std::string> found;
  for (const char* c : {"freezer", "cpuset", "memory", "devices", "cpuacct", "pids"})
    if (IsDir(root + "/" + c)) found.push_back(c);
  if (found.empty())
    return Error(ErrorCode::kIoError, "no cgroup v1 controller is mounted under " + root);
  return std::unique_ptr<CgroupBackend>(new CgroupV1(root, node, std::move(found)));
}

}  // namespace shoal::noded
