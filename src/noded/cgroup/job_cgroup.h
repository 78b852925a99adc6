// The node's use of cgroups for jobs (proctrack/cgroup + task/cgroup): what shoald, shoal-stepd
// and the step supervisor call. Opens the backend cgroup.conf asks for (autodetect: v2 when the
// mountpoint is a cgroup2 filesystem), computes each job's limits (CPUs picked on the node,
// memory, denied GRES devices) and degrades to "no cgroups" with one log line when the host has
// none usable, unless the configuration demands constraints (then a step fails to start, as in
// Slurm).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "noded/cgroup/cgroup_backend.h"
#include "noded/cgroup/cgroup_conf.h"

namespace shoal::pb {
class JobRecord;
}

namespace shoal::noded {

// The job's allocation on this node.
struct JobOnNode {
  uint32_t job_id = 0;
  uint32_t cpus = 0;       // CPUs allocated here (0 = unknown: not constrained)
  uint64_t mem_mb = 0;     // memory allocated here (0 = unknown: the node's RealMemory)
  std::string gres_alloc;  // "gpu:0,1" (JobRecord.gres_alloc entry of this node)
};
JobOnNode JobOnNodeFrom(const pb::JobRecord& job, const std::string& node);

class NodeCgroups {
 public:
  // Reads slurm.conf (ProctrackType, TaskPlugin, the node's CPUs/RealMemory) and cgroup.conf
  // beside it. Returns null when cgroups are not used (not configured, or not available: then
  // `*note` says why, for one log line). An error only for a malformed cgroup.conf.
  static Result<std::unique_ptr<NodeCgroups>> Open(const std::string& slurm_conf_path,
                                                   const std::string& node,
                                                   const std::string& spool, std::string* note);

  // Creates the job's cgroup (once) and the step's. `cpus` gets the real CPU ids the job may
  // use when cores are constrained (else stays empty).
  Status SetupStep(const JobOnNode& job, uint32_t step_id, std::vector<int>* cpus);
  // Moves `pid` (0: the caller) into the step's cgroup.
  Status Join(uint32_t job_id, uint32_t step_id, pid_t pid);
  CgroupStats Stats(uint32_t job_id, uint32_t step_id);
  // Kills everything left in the step and removes its cgroup.
  void EndStep(uint32_t job_id, uint32_t step_id);
  // Kills everything in the job (every step), removes its cgroups and frees its CPUs.
  void EndJob(uint32_t job_id);
  // shoald's sweep: ends every job cgroup here for which `gone(job_id)` is true.
  void Sweep(const std::function<bool(uint32_t job_id, bool has_extern)>& gone);
  // Removes this node's own directory when no job cgroup is left (the sweep, and shoald's exit:
  // a node daemon that stops leaves nothing behind).
  void RemoveNodeDirIfIdle();

  const CgroupPolicy& policy() const { return policy_; }
  CgroupBackend& backend() { return *backend_; }

  NodeCgroups(CgroupPolicy policy, CgroupConf conf, std::unique_ptr<CgroupBackend> backend,
              std::string spool, uint32_t node_cpus, uint64_t node_mem_mb);

 private:
  Result<std::vector<int>> AllocateCpus(uint32_t job_id, uint32_t count);
  void ReleaseCpus(uint32_t job_id);

  CgroupPolicy policy_;
  CgroupConf conf_;
  std::unique_ptr<CgroupBackend> backend_;
  std::string spool_;
  uint32_t node_cpus_ = 0;
  uint64_t node_mem_mb_ = 0;
};

// "slurmstepd: error: Detected 1 oom_kill event in StepId=123.batch. Some of the step tasks have
// been OOM Killed.\n" (Slurm's wording; `step` is "123.batch" or "123.0").
std::string OomMessage(uint64_t oom_kills, const std::string& step);

// The wait status reported for a task (or batch step) the OOM killer ended: "signal 125", which
// sacct shows as ExitCode 0:125 and srun as "Out Of Memory".
inline constexpr int kOomTaskStatus = 125;

// PrologFlags=Contain: the job's extern step on this node (an empty step_extern cgroup that
// keeps the job's cgroup, and processes adopted into it, until the job ends here). For shoald,
// when a job starts on the node. No-op when cgroups are not used.
Status CreateExternStep(NodeCgroups* cgroups, const pb::JobRecord& job, const std::string& node);

}  // namespace shoal::noded
