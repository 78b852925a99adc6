// oci.conf (next to slurm.conf): how shoal-stepd runs a step's tasks or a batch script in an
// OCI container (srun/sbatch/salloc --container=<bundle>). Pure: parsing, % patterns and the
// generated config.json; the supervisor does the I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace shoal::noded {

struct OciConf {
  // Commands, run through /bin/sh -c as the job's user after % expansion: RunTimeRun, or
  // RunTimeCreate + RunTimeStart with RunTimeQuery polling (see oci_run.h).
  std::string runtime_query, runtime_create, runtime_start, runtime_kill, runtime_delete,
      runtime_run;
  std::vector<std::string> runtime_env_exclude;  // RunTimeEnvExclude=<regex> (kept as given)
  std::string env_exclude;                       // EnvExclude=<regex>: not passed to the task
  std::string mount_spool_dir;                   // MountSpoolDir= (default /var/run/slurm/)
  bool mount_spool_dir_set = false;              // given explicitly: tasks get it mounted too
  std::string container_path;                    // ContainerPath= (default: the step spool)
  bool create_env_file = false;                  // CreateEnvFile=true|null|newline
  std::string create_env_file_mode;              // "null" or "newline" (true = null)
  bool ignore_file_config_json = false;          // IgnoreFileConfigJson=true
  bool disable_hooks = false;                    // DisableHooks=<type,...> given
  std::string disable_hooks_list;
  bool disable_cleanup = false;  // DisableCleanup=true
  std::string debug;             // Debug=, SrunPath=, SrunArgs= are accepted
};

// Parses oci.conf text ("Key=Value" lines, '#' comments, values optionally double-quoted).
// Errors name the line: "oci.conf:3: unknown key Foo".
Result<OciConf> ParseOciConf(const std::string& text);

// What the % patterns stand for (Slurm's oci.conf): %% %, %@ all task arguments (each
// single-quoted), %b bundle path, %e environment file, %j job id, %m spool directory of the
// container, %n node name, %r rootfs path, %s step id, %t task id, %u user name, %U uid.
struct OciPatternContext {
  std::vector<std::string> argv;
  std::string bundle, env_file, spool_dir, node_name, rootfs, user_name;
  uint32_t job_id = 0, step_id = 0, task_id = 0, uid = 0;
};
std::string ExpandOciPattern(const std::string& pattern, const OciPatternContext& ctx);

// Single-quotes `s` for /bin/sh.
std::string ShellQuote(const std::string& s);

// A rootless config.json that runs `argv` with `env` in `cwd` inside the bundle's rootfs, as
// uid/gid mapped to 0 in a user namespace (the process sees itself as root of its container,
// the host sees the user). Host network (MPI needs it); pid, ipc, uts, mount namespaces.
struct OciProcessSpec {
  std::string rootfs;  // absolute path
  std::vector<std::string> argv, env;
  std::string cwd = "/";
  uint32_t uid = 0, gid = 0;
  std::string hostname;
  // Bind mounts (read-write) added after the standard ones: host source -> container path.
  std::vector<std::pair<std::string, std::string>> binds;
};
std::string GenerateOciConfig(const OciProcessSpec& spec);

// What RunTimeQuery printed (the OCI "state" JSON): "status" ("creating", "created", "running",
// "stopped") and "pid" (0 when absent). Tolerant: only those two fields are looked for.
struct OciState {
  std::string status;
  int64_t pid = 0;
};
OciState ParseOciState(const std::string& json);

// JSON string literal of `s` (quotes included).
std::string JsonString(const std::string& s);

}  // namespace shoal::noded
