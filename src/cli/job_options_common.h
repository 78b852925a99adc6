// Option handling shared by the job-submitting commands (sbatch, srun, salloc), as pure functions:
//   - a getopt_long-like scanner driven by an option table (long and short forms, "--opt=value",
//     "--opt value", "-tVALUE", "-t VALUE", clustered flags, unambiguous long-option prefixes,
//     options end at the first non-option argument or "--"), with glibc's error texts;
//   - small text and environment helpers;
//   - the value parsers whose wording Slurm shares between its commands (node counts, numeric
//     values, --signal, --export, --distribution, --mail-type);
//   - the job-allocation options srun and salloc have in common (ApplyAllocationOption), applied
//     to a pb::JobSpec in Slurm's precedence: environment first, then the command line.
//
// Nothing here does I/O, reads the clock or the environment. Errors are Status values whose
// message is the complete text to print on stderr ("<prog>: error: ..."), without the final
// newline.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "shoal.pb.h"

namespace shoal::cli {

// SLURM_EXIT_ERROR from the environment, else 1 (the exit code of a failed sbatch/srun/salloc).
int ErrorExitCode(const std::vector<std::string>& environment);

namespace jobopt {

// ---------------------------------------------------------------------------------------------
// getopt_long-like scanning
// ---------------------------------------------------------------------------------------------

enum class OptArg { kNone, kRequired, kOptional };

struct OptionDef {
  std::string_view name;  // long name without "--"
  char short_name;        // 0 = none
  OptArg arg;
  int id;              // distinct options may share an id (say, all the ignored ones)
  bool alias = false;  // another spelling of the option listed first with this id
                       // (cpu_bind for cpu-bind): settings and messages use that name
};

// One option occurrence, as given on the command line, in a directive or by a variable.
struct OptionSetting {
  int id = 0;
  std::string name;                  // canonical long name without dashes ("time"), for messages
  std::optional<std::string> value;  // absent for flags and omitted optional arguments
};

struct ParsedOptions {
  std::vector<OptionSetting> settings;  // in the order given
  size_t rest = 0;                      // index of the first non-option argument
  int stopped_by = 0;                   // id from `stop_ids` that ended the scan; 0 = none
};

// Scans `args` (argv[1..]). An option whose id is in `stop_ids` (--help, --usage, --version)
// ends the scan at once; it is the last setting. Errors carry glibc's text without the program
// prefix: "unrecognized option '--foo'", "invalid option -- 'y'", "option '--ntasks' requires an
// argument", "option requires an argument -- 'n'", "option '--label' doesn't allow an argument",
// "option '--cpu' is ambiguous; possibilities: '--cpu-bind' '--cpu-freq'" (an alias and the
// option it spells count once).
Result<ParsedOptions> ParseOptions(const std::vector<std::string>& args,
                                   std::span<const OptionDef> table,
                                   std::span<const int> stop_ids = {});

// A scanning error as the command prints it:
//   srun: unrecognized option '--foo'
//   Try "srun --help" for more information
Status UsageError(std::string_view prog, const std::string& getopt_message);

const OptionDef* FindOptionById(std::span<const OptionDef> table, int id);

// ---------------------------------------------------------------------------------------------
// Text and environment helpers
// ---------------------------------------------------------------------------------------------

bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool IsSpace(char c);
std::string_view Trim(std::string_view s);
std::vector<std::string_view> Split(std::string_view s, char sep);
std::string Lower(std::string_view s);

// Unsigned decimal, whole string, no sign, no overflow past `max`.
std::optional<uint64_t> ParseUnsigned(std::string_view s, uint64_t max = 0xffffffffu);
// Signed decimal, whole string, optional leading '+' or '-'.
std::optional<int64_t> ParseSigned(std::string_view s);

bool IsVarName(std::string_view s);
std::string_view VarName(std::string_view entry);  // "A=b" -> "A"
// The entry "NAME=value" of `env`, or nullptr (entries without '=' do not count).
const std::string* FindEnv(const std::vector<std::string>& env, std::string_view name);
std::optional<std::string> EnvValue(const std::vector<std::string>& env, std::string_view name);
// A flag variable (man srun/sbatch, INPUT ENVIRONMENT VARIABLES) is set when empty, "yes" or a
// non-zero number; any other value leaves the option unset.
bool EnvFlagSet(std::string_view v);

std::string Basename(std::string_view path);
// Joins a relative path onto `base` and removes "." components and doubled slashes.
std::string ResolvePath(std::string_view base, std::string_view path);

// ---------------------------------------------------------------------------------------------
// Value parsers shared by the commands (errors already carry "<prog>: error: ")
// ---------------------------------------------------------------------------------------------

Status ProgError(std::string_view prog, const std::string& text);  // "<prog>: error: <text>"
// "<prog>: error: Invalid numeric value "<value>" for --<option>."
Status BadNumber(std::string_view prog, const std::string& value, std::string_view option);
// Positive 32-bit count, or BadNumber.
Result<uint32_t> PositiveCount(std::string_view prog, const std::string& value,
                               std::string_view option);
// -N/--nodes: "min[-max]" with k/m suffixes; sets spec.min_nodes/max_nodes (max 0 = no limit).
Status ParseNodes(std::string_view prog, const std::string& value, pb::JobSpec& spec);
// --signal=[{R|B}:]<sig_num>[@sig_time]: sets warn_signal/warn_time/warn_batch_only.
Status ParseSignalSpec(std::string_view prog, const std::string& value, pb::JobSpec& spec);
// --switches=count[@max-time]: sets switches/switches_wait_s.
Status ParseSwitches(std::string_view prog, const std::string& value, pb::JobSpec& spec);

// --gpu-bind=[verbose,]closest|single:N|per_task:N|map_gpu:L|mask_gpu:L|none, checked for its
// shape only (the node reads the lists). sbatch/salloc store it in JobSpec.gpu_bind.
bool ValidGpuBind(std::string_view value);
bool ValidMailType(std::string_view s);
// -m/--distribution: {*|block|cyclic|arbitrary|plane=<size>}[:{*|block|cyclic|fcyclic}
// [:{*|block|cyclic|fcyclic}]][,{Pack|NoPack}], case-insensitive. Returns the canonical
// lower-case form with '*' resolved ("*:*:*" -> "block:cyclic:cyclic"); "plane" without a size
// takes `plane_size_env` (SLURM_DIST_PLANESIZE) when given.
Result<std::string> ParseDistribution(std::string_view prog, std::string_view value,
                                      std::optional<std::string> plane_size_env = std::nullopt);

// --export (man sbatch/srun): "ALL" (everything), "NONE" (SLURM_* only), "[ALL,]VAR[=value],...".
// Unquoted commas inside a value are kept when the next piece is not a variable name
// ("PATH=/a,/b"). With ALL the caller's own values win over explicit ones.
Result<std::vector<std::string>> ApplyExport(std::string_view prog, std::string_view export_spec,
                                             const std::vector<std::string>& environment);

// ---------------------------------------------------------------------------------------------
// Job-allocation options shared by srun and salloc
// ---------------------------------------------------------------------------------------------

// Option ids both commands use for the same job-allocation options. Command-specific ids start
// at kFirstCommandOption.
enum AllocOpt : int {
  kAllocAccount = 1,
  kAllocBegin,
  kAllocChdir,
  kAllocComment,
  kAllocConstraint,
  kAllocCpusPerGpu,
  kAllocCpusPerTask,
  kAllocDeadline,
  kAllocDependency,
  kAllocDistribution,
  kAllocExclude,
  kAllocExclusive,
  kAllocGpus,
  kAllocGpusPerNode,
  kAllocGpusPerTask,
  kAllocGres,
  kAllocHold,
  kAllocImmediate,
  kAllocJobName,
  kAllocLicenses,
  kAllocMailType,
  kAllocMailUser,
  kAllocMem,
  kAllocMemPerCpu,
  kAllocMemPerGpu,
  kAllocMincpus,
  kAllocNice,
  kAllocNoKill,
  kAllocNodelist,
  kAllocNodes,
  kAllocNtasks,
  kAllocNtasksPerNode,
  kAllocOvercommit,
  kAllocOversubscribe,
  kAllocPartition,
  kAllocQos,
  kAllocQuiet,
  kAllocReservation,
  kAllocSignal,
  kAllocSwitches,
  kAllocTime,
  kAllocTimeMin,
  kAllocVerbose,
  kAllocWckey,
  kAllocHelp,
  kAllocUsage,
  kAllocVersion,
  kAllocUnsupported,  // accepted and ignored with a warning
  kAllocIgnored,      // accepted and ignored (tuning that has no meaning here)
  kFirstCommandOption = 100,
};

enum class OptSource { kEnv = 0, kCmdline = 1 };

// What the shared options leave behind, besides the spec.
struct AllocationState {
  std::string_view prog;  // "srun" / "salloc": message prefix
  int64_t now = 0;        // for --begin/--deadline
  pb::JobSpec spec;       // time_limit/time_min start at kTimeNoVal
  bool name_given = false;
  std::optional<std::string> chdir;           // -D as given (resolve against the cwd)
  std::optional<std::string> gpus_per_node;   // folded into spec.gres by FinishAllocation
  std::optional<std::string> distribution;    // canonical -m value
  std::optional<std::string> plane_size_env;  // SLURM_DIST_PLANESIZE
  bool no_kill = false;                       // -k/--no-kill
  bool nodes_given = false;
  bool ntasks_given = false;
  bool cpus_per_task_given = false;
  bool ntasks_per_node_given = false;
  bool quiet = false;
  int verbose = 0;
  // --mem, --mem-per-cpu, --mem-per-gpu by source; resolved by FinishAllocation.
  std::optional<uint64_t> mem[2][3];
  std::vector<std::string> warnings;  // full lines ("srun: warning: ..."), printed unless quiet
};

// A fresh state: spec.time_limit = spec.time_min = kTimeNoVal, requeue = -1, interactive.
AllocationState NewAllocationState(std::string_view prog, int64_t now);

// Applies one shared option (an AllocOpt id). Returns with *handled = false, and changes
// nothing, for any other id.
Status ApplyAllocationOption(AllocationState& st, const OptionSetting& s, OptSource source,
                             bool* handled);

// After all settings: resolves --mem/--mem-per-cpu/--mem-per-gpu (the command line replaces the
// environment; two at one level are an error, in Slurm's words, which name the SLURM_MEM_*
// variables for salloc's SALLOC_MEM_* too), rejects -v with -Q, and folds --gpus-per-node into
// spec.gres.
Status FinishAllocation(AllocationState& st);

}  // namespace jobopt
}  // namespace shoal::cli
