// srun's option handling, as pure functions: the command line (getopt_long-like, see
// job_options_common.h; options end at the executable, whose own options are left alone), the
// SLURM_*/SRUN_* input environment variables, and the --multi-prog configuration file.
//
// Precedence (man srun): command line > environment. Inside an allocation (SLURM_JOB_ID or
// --jobid) srun inherits the job's SLURM_* variables and reads some of them as options, the way
// Slurm 22.05 does:
//   - SLURM_NTASKS (or SLURM_NPROCS) is -n, SLURM_JOB_NUM_NODES (or SLURM_NNODES) is -N,
//     SLURM_NTASKS_PER_NODE is --ntasks-per-node, SLURM_MEM_PER_NODE/_CPU/_GPU are the memory
//     options, SLURM_EXPORT_ENV is --export (SRUN_EXPORT_ENV overrides it); SLURM_CPUS_PER_TASK
//     is NOT read (only SRUN_CPUS_PER_TASK is);
//   - SLURM_JOB_NAME is ignored (each step is named after its executable unless -J);
//   - a task count (from anywhere) below the node count lowers the node count to it
//     (-N3 -n1 runs on one node; -N2-5 -n3 becomes 2-3), and --ntasks-per-node is dropped when
//     a node count and a task count are both known and disagree with it (ntasks-per-node x
//     nodes != ntasks), so `srun -n2` in a job of three one-task nodes runs two tasks on two.
//
// Nothing here does I/O, reads the clock or the environment: srun gathers all of that into an
// SrunContext. Errors are Status values whose message is the complete text for stderr (one or
// more lines, each with its "srun: ..." prefix, without the final newline); exit with
// ErrorExitCode(ctx.environment).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/job_options_common.h"
#include "common/result.h"
#include "shoal.pb.h"

namespace shoal::cli {

// The outside world as srun sees it.
struct SrunContext {
  std::vector<std::string> environment;  // srun's own environment, "KEY=VALUE"
  std::string cwd;                       // absolute
  std::string hostname;
  std::string user_name;
  uint32_t uid = 0;
  uint32_t gid = 0;
  int64_t now = 0;  // unix seconds, for --begin/--deadline
};

enum class SrunAction {
  kRun,
  kHelp,         // -h/--help: print SrunHelpText(), exit 0
  kUsage,        // --usage: print SrunUsageText(), exit 0
  kVersion,      // -V/--version
  kMpiList,      // --mpi=list: print SrunMpiListText() on stdout, exit 0
  kCpuBindHelp,  // --cpu-bind=help: print SrunCpuBindHelpText(), exit 0
  kBindHelp,     // --hint=help, --mem-bind=help: print SrunRequest.help_text, exit 0
};

// Where a standard stream goes (-i/-o/-e; man srun, "IO Redirection").
struct SrunIo {
  enum class Mode {
    kAll,   // default / "all": stdout+stderr of every task to srun; stdin broadcast to all tasks
    kNone,  // "none": nothing received (output discarded); stdin closed (/dev/null)
    kTask,  // "<task id>": only that task's output; stdin to that task only
    kFile,  // a file name pattern
  };
  Mode mode = Mode::kAll;
  uint32_t task = 0;     // kTask. A task id >= the step's task count is a file name instead
                         // (Slurm's rule): see SrunIoForTasks.
  std::string pattern;   // kFile: as given (%j %J %s %N %n %t %u %x %A %a %% and widths)
  bool on_node = false;  // kFile: the pattern names per-node or per-task files (%t/%n/%N):
                         // written/read on the task's node. Otherwise srun itself opens the one
                         // file (output: all tasks into it; input: read and broadcast).
  bool given = false;    // set on the command line or by SLURM_STD*MODE
};

// --cpu-bind=[{quiet|verbose},]<type> (also spelled --cpu_bind, as Open MPI < 4.1 passes it).
struct SrunCpuBind {
  enum class Type {
    kDefault,  // not given (or only quiet/verbose): node/partition default or auto binding
    kNone,
    kRank,
    kCores,
    kThreads,
    kSockets,
    kLdoms,
    kRankLdom,
    kMapCpu,    // list: CPU ids, decimal
    kMaskCpu,   // list: CPU masks, "0x..." hex
    kMapLdom,   // list: NUMA ids, decimal
    kMaskLdom,  // list: NUMA masks, "0x..." hex
  };
  Type type = Type::kDefault;
  bool verbose = false;
  std::vector<std::string> list;  // "*count" repetitions expanded; one entry per local task
  // Canonical text: "none", "cores", "verbose,cores", "map_cpu:0,0,3", "mask_cpu:0x3,0xf";
  // "" when not given. This is what StepCreateRequest/LaunchTasksRequest.cpu_bind carry.
  std::string text;
};

// Everything srun's runtime needs. Field comments say what the runtime does with each.
struct SrunRequest {
  SrunAction action = SrunAction::kRun;
  std::string help_text;  // kBindHelp

  // --- where the step runs ---------------------------------------------------------------
  // --jobid, else SLURM_JOB_ID (or the vestigial SLURM_JOBID): run as a step of that job.
  // 0: outside any allocation: submit `spec` (interactive), wait for it (--immediate bounds the
  // wait), then run the step in it and release the job when the step ends.
  uint32_t job_id = 0;
  bool jobid_on_cmdline = false;  // --jobid given (not inherited)

  // --- the allocation request (used only when job_id == 0) ---------------------------------
  // interactive = true; name = -J, else SLURM_JOB_NAME, else the executable's basename;
  // time_limit (kTimeNoVal/kTimeInfinite sentinels), min/max_nodes, num_tasks, cpus_per_task,
  // ntasks_per_node, memory, gres/gpus, account, qos, partition, nodelist/exclude, constraint,
  // exclusive, reservation, dependency, begin_time, deadline, immediate_s, overcommit, signal,
  // environment (after --export), work_dir (-D resolved), submit_dir/host, user, command
  // (argv[0] as given) and argv (the arguments).
  pb::JobSpec spec;

  // --- the step ------------------------------------------------------------------------------
  std::string step_name;             // -J, else basename(argv[0]) (SLURM_JOB_NAME never)
  bool overlap = false;              // --overlap / SLURM_OVERLAP: share everything, hold nothing
  bool exact = false;                // --exact, --exclusive, or -c: only the CPUs the tasks need
  std::optional<uint32_t> relative;  // -r N: the step starts at node N of the allocation
  std::string mpi;                   // "none" | "pmi2" | "pmix"; "" = MpiDefault of slurm.conf
  std::string container;             // --container=<OCI bundle path>
  SrunCpuBind cpu_bind;
  std::string gpu_bind;      // --gpu-bind / SLURM_GPU_BIND as given (checked on the node)
  std::string distribution;  // canonical -m ("block", "cyclic:block", "plane=4", ...); "" = default
  bool label = false;        // -l: prefix each output line with "<task>: "
  bool unbuffered = false;   // -u (and --pty): no line buffering
  bool pty = false;          // --pty: task 0 on a pseudo-terminal; stdin goes to task 0 only;
                             // the other tasks' stdout/stderr go to /dev/null
  SrunIo input, output, error;  // error defaults to output (man srun -o)
  std::string step_gres;  // --gres, else SLURM_STEP_GRES, else SLURM_GRES; "" = all the job's,
                          // "none" = no GRES for the step
  bool open_mode_given = false;  // --open-mode; spec.open_mode_append has the value
  bool multi_prog = false;       // --multi-prog: argv[0] is the configuration file, argv[1..] are
                                 // appended to every task's arguments (ParseMultiProgConfig)
  std::optional<bool> kill_on_bad_exit;  // -K[0|1]: unset = KillOnBadExit of slurm.conf
  std::optional<uint32_t> wait_s;        // -W: seconds after the first task exits before the
                                         // rest are killed; 0 = no limit; unset = WaitTime
  std::string het_group;           // --het-group as given: the runtime answers "not supported"
  bool no_kill = false;            // -k: a node failure does not end the step
  bool disable_status = false;     // -X: one Ctrl-C forwards SIGINT at once
  bool quit_on_interrupt = false;  // --quit-on-interrupt: one Ctrl-C ends the step
  bool preserve_env = false;       // -E: pass SLURM_JOB_NUM_NODES/SLURM_NTASKS on unchanged
  bool test_only = false;          // --test-only: report when the job would start, run nothing
  bool quiet = false;              // -Q
  int verbose = 0;                 // -v count (plus one for SLURM_DEBUG=1)

  // The command: argv[0] is the executable (resolved by the runtime: "./x" and "/x" as given,
  // else PATH, else the working directory) or, with --multi-prog, the configuration file.
  std::vector<std::string> argv;

  // The step's environment (srun's, after --export; the runtime adds the step's SLURM_*).
  std::vector<std::string> environment;

  std::vector<std::string> warnings;  // full lines ("srun: warning: ..."), printed unless quiet
};

// Parses argv[1..] with the environment, as srun does at start-up. Errors read like Slurm's:
//   srun: unrecognized option '--foo'
//   Try "srun --help" for more information
//   srun: error: Invalid numeric value "abc" for --ntasks.
//   srun: fatal: No command given to execute.
Result<SrunRequest> ParseSrunCommandLine(const std::vector<std::string>& args,
                                         const SrunContext& ctx);

// --cpu-bind values (case-insensitive; comma-separated; a map_/mask_ list runs to the end).
Result<SrunCpuBind> ParseCpuBind(std::string_view value);

// --mpi values, as Slurm spells them: none, pmi2, pmix, pmix_v2..pmix_v5 (-> "pmix"), openmpi
// (-> "none", as Slurm maps it). "list" is an action, not a type, and is refused here.
Result<std::string> ParseMpiType(std::string_view value);

// The step request for a run inside an allocation (job_id != 0): counts, nodes, memory
// (--mem per node only), time limit (kTimeNoVal = the job's), argv, mpi, cpu_bind, work_dir,
// gres, overlap/exclusive, relative. srun_host/srun_pid are the runtime's to fill.
pb::StepCreateRequest MakeStepCreateRequest(const SrunRequest& req);

// LaunchTasksRequest.stdin_mode / stdout_pattern / stderr_pattern for a step of `ntasks`
// tasks: "all" | "none" | "<task id>" | the pattern ("" never: the default is "all", stdin
// broadcast to every task, per man srun). A task id >= ntasks reads as a file name (Slurm's rule).
std::string SrunIoForTasks(const SrunIo& io, uint32_t ntasks);

// --multi-prog configuration (man srun, MULTIPLE PROGRAM CONFIGURATION). Each line:
//   <ranks> <program> [<arguments>...]
// ranks: "0-3,5" (ascending ranges; empty items skipped; "4-" reads as 4, as in Slurm) or "*"
// (every task not yet given one; only last: a numbered line after it is an error). "#" as the
// first non-blank character starts a comment; blank lines are skipped; a trailing backslash
// continues a line. In the program and its arguments,
// "%t" is the task id and "%o" its offset within the line's ranks (for "*", among the tasks it
// covers); single quotes group and suppress substitution, double quotes group. `extra_args`
// (the command-line arguments after the file) are appended to every task's arguments.
// Returns one argv per task, 0..ntasks-1. Errors as srun prints them, e.g.
//   srun: error: Invalid task id, 9 >= ntasks
//   srun: error: Line 1 of configuration file prog.conf invalid
Result<std::vector<std::vector<std::string>>> ParseMultiProgConfig(
    std::string_view text, std::string_view file_name, uint32_t ntasks,
    const std::vector<std::string>& extra_args = {});

// The task count a --multi-prog file implies when -n was not given: the highest rank it
// names plus one (1 when it names only "*"; 0 for a file without records).
uint32_t MultiProgTaskCount(std::string_view text);

std::string SrunHelpText();
std::string SrunUsageText();
std::string SrunMpiListText();
std::string SrunCpuBindHelpText();

}  // namespace shoal::cli
