// Pure logic of Prolog/Epilog, TaskProlog and HealthCheck (slurm.conf keys PrologFlags,
// HealthCheckNodeState, TaskProlog output): parsing and decisions, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "shoal.pb.h"

namespace shoal {

// PrologFlags=Alloc,Contain,NoHold,Serial,... (case-insensitive; unknown flags are errors).
struct PrologFlags {
  bool alloc = false;    // run the Prolog on every node at allocation (Contain, X11 imply it)
  bool contain = false;  // an "extern" step on every node for the job's life
  bool nohold = false;   // salloc does not wait for the prologs (needs Alloc)
  bool serial = false;   // prologs and epilogs on a node run one at a time
  bool x11 = false;
  bool run_in_job = false;   // RunInJob: accepted, runs like the default here
  bool defer_batch = false;  // DeferBatch: accepted
};
Result<PrologFlags> ParsePrologFlags(std::string_view text);

// HealthCheckNodeState=ANY|IDLE|ALLOC|MIXED|NONDRAINED_IDLE|CYCLE|START_ONLY, comma-separated.
struct HealthCheckStates {
  bool idle = false, alloc = false, mixed = false;
  bool nondrained_idle = false;
  bool cycle = false;       // spread over the interval (accepted; runs at the interval here)
  bool start_only = false;  // only when shoald starts
};
Result<HealthCheckStates> ParseHealthCheckNodeState(std::string_view text);

// What the node is, as the controller reports it to the node.
struct NodeStateForHealth {
  bool idle = false, alloc = false, mixed = false, drain = false;
};
// Whether the periodic check runs now (`at_start`: the run when shoald starts, always done).
bool HealthCheckShouldRun(const HealthCheckStates& s, const NodeStateForHealth& n, bool at_start);

// First non-empty line of a program's output, trimmed; `fallback` when there is none.
std::string FirstLineTrimmed(std::string_view output, std::string_view fallback);

// TaskProlog's standard output: "export NAME=value" sets, "unset NAME" removes, "print text"
// writes the text to the task's standard output; other lines are ignored.
struct TaskPrologOutput {
  std::vector<std::pair<std::string, std::string>> exports;  // in order
  std::vector<std::string> unsets;
  std::string print;  // lines to print, each ending in '\n'
};
TaskPrologOutput ParseTaskPrologOutput(std::string_view text);
// Applies exports/unsets (in their order of appearance) to a "NAME=value" environment.
void ApplyTaskPrologOutput(std::string_view text, std::vector<std::string>* env);

// Slurm's drain reasons for a node that registers with less than its configuration.
std::string LowCpusReason(uint32_t reported, uint32_t configured);
std::string LowMemoryReason(uint64_t reported_mb, uint64_t configured_mb);
std::string LowTmpDiskReason(uint64_t reported_mb, uint64_t configured_mb);
std::string LowGresReason(std::string_view name, uint64_t reported, uint64_t configured);

// The environment of Prolog/Epilog (slurmd) and PrologSlurmctld/EpilogSlurmctld: the job's
// SLURM_* variables as documented for each context ("prolog_slurmd", "epilog_slurmd",
// "prolog_slurmctld", "epilog_slurmctld").
struct ScriptJobInfo {
  uint32_t job_id = 0;
  std::string job_name, user, account, partition, nodelist, constraints, cluster, work_dir;
  std::string std_out, std_err, comment, reservation, qos;
  uint32_t uid = 0, gid = 0;
  uint32_t array_job_id = 0, array_task_id = 0;
  bool is_array = false;
  std::string node_name;   // SLURMD_NODENAME (node scripts)
  std::string gpus;        // allocated GPU indexes on this node ("0,1"), may be empty
  int32_t exit_code = -1;  // epilog_slurmctld: SLURM_JOB_EXIT_CODE/2 when >= 0
  std::string derived_ec;
};
std::vector<std::string> BuildScriptEnv(const ScriptJobInfo& job, std::string_view context);
// The fields above from a job record; `node_name` picks the GPUs allocated on that node ("" =
// all of the job's).
ScriptJobInfo ScriptInfoFromJob(const pb::JobRecord& job, const std::string& node_name,
                                const std::string& cluster);

}  // namespace shoal
