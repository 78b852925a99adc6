// salloc's option handling, as pure functions: the command line (getopt_long-like, see
// job_options_common.h; options end at the command, whose own options are left alone) and the
// SALLOC_* input environment variables (man salloc). Precedence: command line > environment.
//
// Nothing here does I/O, reads the clock or the environment: salloc gathers all of that into a
// SallocContext. Errors are Status values whose message is the complete text for stderr (one or
// more lines, each with its "salloc: ..." prefix, without the final newline); exit with
// ErrorExitCode(ctx.environment).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/job_options_common.h"
#include "common/result.h"
#include "shoal.pb.h"

namespace shoal::cli {

struct SallocContext {
  std::vector<std::string> environment;  // salloc's own environment, "KEY=VALUE"
  std::string cwd;                       // absolute
  std::string hostname;
  std::string user_name;
  uint32_t uid = 0;
  uint32_t gid = 0;
  int64_t now = 0;  // unix seconds, for --begin/--deadline
};

enum class SallocAction { kAllocate, kHelp, kUsage, kVersion };

// When salloc rings the terminal bell (only ever when stdout is a terminal).
enum class SallocBell {
  kAuto,    // when the allocation was pending for more than ten seconds
  kAlways,  // --bell
  kNever,   // --no-bell
};

// Everything salloc's runtime needs.
struct SallocRequest {
  SallocAction action = SallocAction::kAllocate;

  // The allocation: interactive = true; name = -J, else the command's basename, else
  // "interactive" (no command: the shell); time limit (kTimeNoVal/kTimeInfinite), node and task
  // counts, memory, gres/gpus, account, qos, partition, nodelist/exclude, constraint, exclusive,
  // reservation, dependency, begin_time, deadline, hold, immediate_s (-I: give up when not
  // allocated within that many seconds; 0 = wait for ever), signal, work_dir (-D resolved: the
  // command runs there), environment (salloc's whole environment: salloc has no --export),
  // submit_dir/host, user, command (argv[0] as given) and argv (its arguments).
  pb::JobSpec spec;

  // The command to run once allocated; empty = the user's shell. Runs locally, with the job's
  // output environment (SLURM_JOB_ID, SLURM_JOB_NODELIST, ...), in spec.work_dir.
  std::vector<std::string> argv;
  bool no_shell = false;  // --no-shell: exit once allocated, leaving the job to run (no command
                          // is run even if one was given)
  SallocBell bell = SallocBell::kAuto;
  // -K/--kill-command[=signal]: signal the command when the allocation is revoked (scancel,
  // time limit). 0 = the default signal: SIGHUP when salloc runs on a terminal, else SIGTERM.
  bool kill_command = false;
  int kill_command_signal = 0;
  std::optional<bool> wait_all_nodes;  // --wait-all-nodes=0|1: start the command only once
                                       // every node is ready; unset = SchedulerParameters
  bool no_kill = false;                // -k: a node failure does not revoke the allocation
  std::string distribution;            // -m, canonical: exported as SLURM_DISTRIBUTION to the
                                       // command so that its sruns use it
  bool quiet = false;                  // -Q: only errors
  int verbose = 0;                     // -v count (plus SALLOC_DEBUG=1)
  std::vector<std::string> warnings;   // full lines ("salloc: warning: ..."), unless quiet
};

// Parses argv[1..] with the environment, as salloc does at start-up. Errors read like Slurm's:
//   salloc: unrecognized option '--foo'
//   Try "salloc --help" for more information
//   salloc: error: "abc" is not a valid node count
Result<SallocRequest> ParseSallocCommandLine(const std::vector<std::string>& args,
                                             const SallocContext& ctx);

std::string SallocHelpText();
std::string SallocUsageText();

}  // namespace shoal::cli
