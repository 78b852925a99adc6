// srun/sbatch --container: prepares one task's OCI bundle and how to run it through oci.conf's
// runtime commands, as the user. Either RunTimeRun (one /bin/sh command that the task execs) or
// RunTimeCreate + RunTimeStart, supervised by RunOciCreateStart (RunTimeQuery polling for the
// end, RunTimeKill for termination signals, RunTimeDelete after).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace shoal::noded {

struct OciTask {
  std::string conf_path;  // slurm.conf: oci.conf is read from its directory
  std::string bundle;     // --container=<bundle>: a directory with rootfs/ (and config.json)
  std::vector<std::string> argv, env;
  std::string work_dir, node_name, user_name;
  uint32_t job_id = 0, step_id = 0, task_id = 0, uid = 0, gid = 0;
  // Batch job: argv[0] is the script on the host. It is copied into the container's spool
  // directory, which is mounted at MountSpoolDir, and run from there.
  bool batch_script = false;
};

struct OciLaunch {
  bool create_start = false;
  std::string run_cmd;  // RunTimeRun mode: the /bin/sh -c command (cleanup included)
  std::string create_cmd, start_cmd, query_cmd, kill_cmd, delete_cmd;  // create/start mode
  std::string dir;                       // the task's generated bundle (spool) directory
  bool cleanup = true;                   // remove `dir` after (not with DisableCleanup)
  std::vector<std::string> runtime_env;  // for the runtime commands: RunTimeEnvExclude applied
  uint32_t kill_wait_s = 30;  // KillWait: the container gets SIGKILL a little before we do
};

// Reads oci.conf, writes the task's config.json into a fresh private directory (ContainerPath,
// else /tmp) and says how to run it. Without oci.conf: "Container support is not configured"
// (Slurm's error). Runs as the user.
Result<OciLaunch> PrepareOciTask(const OciTask& task);

// Create/start mode, in the task's process (as the user): create, start, wait for the
// container's end (its init is reaped as our orphan: we are a child subreaper; else
// RunTimeQuery reports "stopped"), delete, clean up, then exit with the container's status.
[[noreturn]] void RunOciCreateStart(const OciLaunch& launch);

}  // namespace shoal::noded
