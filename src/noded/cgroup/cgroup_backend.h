// One interface over cgroup v1 and v2. Every path is relative to a root directory (the
// CgroupMountpoint) so unit tests run the backends against a temporary tree laid out like
// cgroupfs. The hierarchy of one node daemon (several may share a host, hence the node name):
//
//   <root>/shoal/<node>/job_<id>/step_<batch|extern|N>          (v2: processes only in leaves)
//   <root>/<controller>/shoal/<node>/job_<id>/step_<...>        (v1: one tree per controller)
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace shoal::noded {

// A device the job may not open: 'c' or 'b', major, minor.
struct DeviceRule {
  char type = 'c';
  uint32_t major = 0, minor = 0;
  bool operator==(const DeviceRule&) const = default;
};

// Constraints of a job (applied to the job cgroup and to each of its steps).
struct CgroupLimits {
  std::vector<int> cpus;         // real CPU ids; empty = not constrained
  uint64_t mem_bytes = 0;        // 0 = not constrained
  uint64_t mem_swap_bytes = 0;   // memory+swap; 0 = swap not constrained
  std::vector<DeviceRule> deny;  // device files the job may not reach
};

// What a step's cgroup says about it.
struct CgroupStats {
  uint64_t oom_kills = 0;
  uint64_t user_usec = 0, sys_usec = 0;
  bool has_cpu = false;
  uint64_t max_rss_bytes = 0;  // 0 = unknown
};

class CgroupBackend {
 public:
  virtual ~CgroupBackend() = default;
  virtual int version() const = 0;  // 1 or 2
  // Creates (idempotently) the job's cgroup with `limits`, then the step's below it.
  virtual Status CreateStep(uint32_t job_id, const std::string& step,
                            const CgroupLimits& limits) = 0;
  // Moves `pid` (0 = the caller) into the step's cgroup(s).
  virtual Status AddPid(uint32_t job_id, const std::string& step, pid_t pid) = 0;
  virtual CgroupStats Stats(uint32_t job_id, const std::string& step) = 0;
  // Pids in the step's cgroup (the tracking hierarchy).
  virtual std::vector<pid_t> Pids(uint32_t job_id, const std::string& step) = 0;
  // Kills every process of the step (of the whole job when `step` is empty) and waits, bounded,
  // until none is left; then removes the step's (job's) cgroups. True when all were removed.
  virtual bool KillAndRemove(uint32_t job_id, const std::string& step) = 0;
  // Job ids with a cgroup under this node.
  virtual std::vector<uint32_t> Jobs() = 0;
  virtual bool HasStep(uint32_t job_id, const std::string& step) = 0;
  // Removes <root>/shoal/<node> (and shoal/) when no job is left in them.
  virtual void RemoveNodeDirIfEmpty() = 0;
};

// `root` = CgroupMountpoint. v2 enables the controllers it finds; v1 uses the controllers
// mounted below root (cpuset, memory, devices, freezer, cpuacct, pids), freezer (else the
// first present) for tracking. Fails when the layout is not usable at all.
Result<std::unique_ptr<CgroupBackend>> MakeCgroupV1(const std::string& root,
                                                    const std::string& node);
Result<std::unique_ptr<CgroupBackend>> MakeCgroupV2(const std::string& root,
                                                    const std::string& node);

// Step directory names as Slurm names the steps.
std::string StepCgroupName(uint32_t step_id);  // "step_batch", "step_extern", "step_3"
inline constexpr uint32_t kCgBatchStep = 0xfffffffb;
inline constexpr uint32_t kCgExternStep = 0xfffffffc;

// Small file helpers shared by the backends (and tests).
Status WriteCgroupFile(const std::string& path, const std::string& value);
Result<std::string> ReadCgroupFile(const std::string& path);
// "key value" lines (memory.events, cpu.stat, memory.oom_control): the value of `key`, 0 if absent.
uint64_t KeyedValue(const std::string& text, const std::string& key);
std::vector<pid_t> ParsePids(const std::string& text);
std::string FormatCpuList(const std::vector<int>& cpus);  // "0-2,5"
// The subdirectories of `dir`, sorted (a cgroup's children).
std::vector<std::string> SubDirs(const std::string& dir);
// Every pid in the cgroup `dir` and its descendants.
void CollectPids(const std::string& dir, std::vector<pid_t>* out);
// Removes the cgroup `dir` and its descendants, deepest first. cgroupfs drops a directory's
// control files with it; a test tree (plain files) needs them unlinked first.
void RemoveTreeOfCgroups(const std::string& dir);

}  // namespace shoal::noded
