// Small I/O helpers shared by shoald and shoal-stepd: spool paths, atomic files, liveness checks
// and a plain-file logger.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/files.h"
#include "common/result.h"

namespace shoal::noded {

// <spool>/job<ID> and the files inside it (see docs/architecture.md, "Spool layout").
std::string JobDir(const std::string& spool, uint32_t job_id);
inline constexpr const char* kLaunchFile = "launch.pb";
inline constexpr const char* kScriptFile = "script";
inline constexpr const char* kStepdSocket = "stepd.sock";
inline constexpr const char* kStepdPidFile = "stepd.pid";
inline constexpr const char* kDoneFile = "done.pb";
// TerminateJobRequest left by shoald for a stepd that may not serve its socket yet: a stepd that
// finds it before starting the script never starts it (a terminate is never lost to start-up).
inline constexpr const char* kTerminateFile = "terminate.pb";
inline constexpr const char* kStepdLog = "stepd.log";
inline constexpr const char* kShoaldSocket = "shoald.sock";

// Job ids of the "job<digits>" directories in the spool, sorted.
std::vector<uint32_t> ListJobDirs(const std::string& spool);

// <spool>/step<JOB>.<STEP>: one srun step's part on this node (launch.pb, stepd.sock, ...).
std::string StepDir(const std::string& spool, uint32_t job_id, uint32_t step_id);
struct StepDirId {
  uint32_t job_id = 0;
  uint32_t step_id = 0;
};
// The "step<job>.<step>" directories in the spool, sorted.
std::vector<StepDirId> ListStepDirs(const std::string& spool);

// Replaces "%n" with the node name and "%h" with the host name (SlurmdSpoolDir, SlurmdLogFile).
std::string ExpandNodePath(std::string_view pattern, std::string_view node, std::string_view host);

// WriteFileAtomic and ReadWholeFile: common/files.h.
bool FileExists(const std::string& path);
// Removes a directory tree (no symlink following). Errors are ignored except the final rmdir.
Status RemoveTree(const std::string& path);
// mkdir -p with `mode` for the created components.
Status MakeDirs(const std::string& path, mode_t mode);

// Reads a pid file; 0 when missing or malformed.
pid_t ReadPidFile(const std::string& path);
// True when `pid` exists and its command line mentions shoal-stepd.
bool IsStepdProcess(pid_t pid);

// Marks every descriptor >= 3 close-on-exec (close_range, else /proc/self/fd). Async-signal-safe
// enough for a forked child of a single-threaded process.
void CloexecFrom3();
// For a child subreaper (shoal-stepd): SIGKILLs every child still there (and its process group),
// reaps them, and repeats while new ones are re-parented to us. Bounded: about 200 ms at most.
void KillReparentedChildren();

// Restores default signal dispositions and an empty signal mask (before exec'ing a job).
void ResetSignals();
// fork() with every signal blocked across it: a signal sent to the child before it reached
// ResetSignals() stays pending until the defaults are back (instead of running the parent's
// handlers in the child and being lost, e.g. an early SIGTERM, leaving only KillWait's SIGKILL).
// The parent's mask is restored; the child starts with all signals blocked.
pid_t ForkSignalsBlocked();

std::string Hostname();  // full gethostname()
std::string ShortHostname();
int64_t NowSeconds();

// Timestamped lines on stderr ("[2026-01-02T03:04:05.678] text"); daemons point stderr at their
// log file.
void Log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace shoal::noded
