// cgroup v2 backend: one unified tree; controllers enabled down the path where they exist;
// device rules as a BPF program on the job's cgroup; cgroup.kill to end everything.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "noded/cgroup/bpf_devices.h"
#include "noded/cgroup/cgroup_backend.h"

namespace shoal::noded {
namespace {

Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return Status::Ok();
  return Error(ErrorCode::kIoError, "mkdir " + path + ": " + std::strerror(errno));
}

class CgroupV2 : public CgroupBackend {
 public:
  CgroupV2(std::string root, std::string node) : root_(std::move(root)), node_(std::move(node)) {
    auto text = ReadCgroupFile(root_ + "/cgroup.controllers");
    if (text) {
      for (const char* c : {"cpuset", "memory", "pids"})
        if (HasWord(*text, c)) controllers_.push_back(c);
    }
  }

  int version() const override { return 2; }

  Status CreateStep(uint32_t job_id, const std::string& step, const CgroupLimits& limits) override {
    // shoald's sweep may remove an empty node directory right between two mkdirs: once more.
    Status s = CreateStepOnce(job_id, step, limits);
    if (!s.ok() && s.message().find(std::strerror(ENOENT)) != std::string::npos)
      s = CreateStepOnce(job_id, step, limits);
    return s;
  }

  Status CreateStepOnce(uint32_t job_id, const std::string& step, const CgroupLimits& limits) {
    std::string base = root_;
    std::string job = JobPath(job_id);
    bool job_existed = ::access(job.c_str(), F_OK) == 0;
    for (const std::string& part : {std::string("shoal"), node_, "job_" + std::to_string(job_id)}) {
      EnableControllers(base);
      base += "/" + part;
      if (Status s = MakeDir(base); !s.ok()) return s;
    }
    EnableControllers(job);
    if (!job_existed) {
      ApplyLimits(job, limits);
      if (!limits.deny.empty()) {
        if (Status s = AttachDeviceProgram(job, limits.deny); !s.ok()) return s;
      }
    }
    std::string dir = job + "/" + step;
    if (Status s = MakeDir(dir); !s.ok()) return s;
    ApplyLimits(dir, limits);
    return Status::Ok();
  }

  Status AddPid(uint32_t job_id, const std::string& step, pid_t pid) override {
    return WriteCgroupFile(JobPath(job_id) + "/" + step + "/cgroup.procs", std::to_string(pid));
  }

  CgroupStats Stats(uint32_t job_id, const std::string& step) override {
    CgroupStats st;
    std::string dir = JobPath(job_id) + "/" + step;
    if (auto ev = ReadCgroupFile(dir + "/memory.events"))
      st.oom_kills = KeyedValue(*ev, "oom_kill");
    if (auto cpu = ReadCgroupFile(dir + "/cpu.stat")) {
      st.has_cpu = true;
      st.user_usec = KeyedValue(*cpu, "user_usec");
      st.sys_usec = KeyedValue(*cpu, "system_usec");
    }
    if (auto peak = ReadCgroupFile(dir + "/memory.peak"))
      st.max_rss_bytes = std::strtoull(peak->c_str(), nullptr, 10);
    return st;
  }

  std::vector<pid_t> Pids(uint32_t job_id, const std::string& step) override {
    std::vector<pid_t> out;
    CollectPids(step.empty() ? JobPath(job_id) : JobPath(job_id) + "/" + step, &out);
    return out;
  }

  bool KillAndRemove(uint32_t job_id, const std::string& step) override {
    std::string dir = step.empty() ? JobPath(job_id) : JobPath(job_id) + "/" + step;
    if (::access(dir.c_str(), F_OK) != 0) return true;
    bool have_kill = ::access((dir + "/cgroup.kill").c_str(), W_OK) == 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      std::vector<pid_t> pids;
      CollectPids(dir, &pids);
      if (pids.empty()) break;
      if (have_kill) {
        // Kills the whole subtree at once, including processes forking meanwhile.
        if (!WriteCgroupFile(dir + "/cgroup.kill", "1").ok()) have_kill = false;
      }
      if (!have_kill)
        for (pid_t p : pids) ::kill(p, SIGKILL);
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    RemoveTreeOfCgroups(dir);
    // The job's directory goes with its last step; the node's stays.
    return ::access(dir.c_str(), F_OK) != 0;
  }

  std::vector<uint32_t> Jobs() override {
    std::vector<uint32_t> ids;
    for (const auto& name : SubDirs(root_ + "/shoal/" + node_)) {
      if (name.rfind("job_", 0) != 0) continue;
      unsigned long id = std::strtoul(name.c_str() + 4, nullptr, 10);
      if (id > 0) ids.push_back(static_cast<uint32_t>(id));
    }
    return ids;
  }

  void RemoveNodeDirIfEmpty() override {
    ::rmdir((root_ + "/shoal/" + node_).c_str());
    ::rmdir((root_ + "/shoal").c_str());
  }

  bool HasStep(uint32_t job_id, const std::string& step) override {
    return ::access((JobPath(job_id) + "/" + step).c_str(), F_OK) == 0;
  }

 private:
  static bool HasWord(const std::string& text, const std::string& word) {
    size_t pos = 0;
    while ((pos = text.find(word, pos)) != std::string::npos) {
      bool start = pos == 0 || std::isspace(static_cast<unsigned char>(text[pos - 1]));
      size_t end = pos + word.size();
      bool stop = end >= text.size() || std::isspace(static_cast<unsigned char>(text[end]));
      if (start && stop) return true;
      pos = end;
    }
    return false;
  }

  std::string JobPath(uint32_t job_id) const {
    return root_ + "/shoal/" + node_ + "/job_" + std::to_string(job_id);
  }

  void EnableControllers(const std::string& dir) {
    if (controllers_.empty()) return;
    auto current = ReadCgroupFile(dir + "/cgroup.subtree_control");
    for (const auto& c : controllers_) {
      if (current && HasWord(*current, c)) continue;
      // One at a time: a controller that cannot be enabled here does not stop the others.
      (void)WriteCgroupFile(dir + "/cgroup.subtree_control", "+" + c);
    }
  }

  bool Has(const char* controller) const {
    return std::find(controllers_.begin(), controllers_.end(), controller) != controllers_.end();
  }

  void ApplyLimits(const std::string& dir, const CgroupLimits& limits) {
    if (Has("cpuset") && !limits.cpus.empty()) {
      (void)WriteCgroupFile(dir + "/cpuset.cpus", FormatCpuList(limits.cpus));
      if (auto mems = ReadCgroupFile(root_ + "/cpuset.mems.effective"); mems && !mems->empty())
        (void)WriteCgroupFile(dir + "/cpuset.mems", *mems);
    }
    if (Has("memory") && limits.mem_bytes > 0) {
      (void)WriteCgroupFile(dir + "/memory.max", std::to_string(limits.mem_bytes));
      uint64_t swap =
          limits.mem_swap_bytes > limits.mem_bytes ? limits.mem_swap_bytes - limits.mem_bytes : 0;
      if (limits.mem_swap_bytes > 0)
        (void)WriteCgroupFile(dir + "/memory.swap.max", std::to_string(swap));
    }
  }

  std::string root_, node_;
  std::vector<std::string> controllers_;
};

}  // namespace

Result<std::unique_ptr<CgroupBackend>> MakeCgroupV2(const std::string& root,
                                                    const std::string& node) {
  if (::access((root + "/cgroup.procs").c_str(), F_OK) != 0)
    return Error(ErrorCode::kIoError, root + " is not a cgroup v2 hierarchy");
  return std::unique_ptr<CgroupBackend>(new CgroupV2(root, node));
}

}  // namespace shoal::noded
