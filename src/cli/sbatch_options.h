// sbatch's option handling, as pure functions: command-line parsing (getopt_long-like: long and
// short forms, "--opt=value", "--opt value", "-tVALUE", "-t VALUE", clustered flags, unambiguous
// long-option prefixes, options end at the first non-option argument or "--"), #SBATCH directives,
// SBATCH_* input environment variables, --export filtering and the batch-script checks.
//
// Precedence (man sbatch): command line > SBATCH_* environment > #SBATCH directives.
//
// Nothing here does I/O, reads the clock or the environment: sbatch.cc gathers all of that into a
// SbatchContext. Every error is a Status whose message is the complete text to print on stderr
// (one or more lines, each with its "sbatch: ..." prefix, without the final newline).
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

// The outside world as sbatch sees it, gathered by sbatch.cc.
struct SbatchContext {
  std::vector<std::string> environment;  // sbatch's own environment, "KEY=VALUE"
  std::string cwd;                       // absolute
  std::string hostname;
  std::string user_name;
  uint32_t uid = 0;
  uint32_t gid = 0;
  int64_t now = 0;  // unix seconds, for --begin/--deadline
};

// One option occurrence, as given on the command line, in a directive or by an SBATCH_* variable:
// id (internal), name (canonical long name without dashes, for messages), value (absent for
// flags and omitted optional arguments).
using SbatchSetting = jobopt::OptionSetting;

enum class SbatchAction { kSubmit, kHelp, kUsage, kVersion };

struct SbatchCommandLine {
  SbatchAction action = SbatchAction::kSubmit;
  std::vector<SbatchSetting> settings;     // in the order given
  std::optional<std::string> script_path;  // first non-option argument
  std::vector<std::string> script_args;    // everything after it
  std::optional<std::string> wrap;         // --wrap (last one wins)
  std::optional<std::string> chdir;        // -D as given on the command line (script lookup)
};

// Parses argv[1..]. Errors read like getopt's plus Slurm's hint, e.g.
//   sbatch: unrecognized option '--foo'
//   Try "sbatch --help" for more information
Result<SbatchCommandLine> ParseSbatchCommandLine(const std::vector<std::string>& args);

// Everything sbatch.cc needs to submit and report.
struct SbatchRequest {
  pb::JobSpec spec;
  bool parsable = false;
  bool test_only = false;
  bool wait = false;
  bool quiet = false;
  int verbose = 0;
  std::vector<std::string> warnings;  // full lines ("sbatch: warning: ..."), printed unless quiet
};

// Builds the job from the command line, the script text (read from the file or stdin, or made by
// WrapScript) and the context. `script_text` is checked with CheckBatchScript first.
Result<SbatchRequest> BuildSbatchRequest(const SbatchCommandLine& cmdline,
                                         const std::string& script_text, const SbatchContext& ctx);

// The script --wrap submits.
std::string WrapScript(std::string_view command);

// Rejects empty scripts, scripts without "#!", DOS line breaks and NUL bytes, with Slurm's words.
Status CheckBatchScript(std::string_view script);

// The #SBATCH directives of a script, one word list per directive line (words split shell-like,
// a word starting with an unquoted '#' ends the line). Scanning stops at the first line that is
// neither blank nor a comment. `line_numbers`, when given, receives each directive's line
// (1-based).
Result<std::vector<std::vector<std::string>>> ExtractDirectives(
    std::string_view script, std::vector<int>* line_numbers = nullptr);

// Shell-like word splitting of the text after "#SBATCH": whitespace separates words, single and
// double quotes group, backslash escapes, an unquoted '#' at the start of a word ends the line.
// An unterminated quote runs to the end of the line (lenient, as scripts are not re-parsed by a
// shell).
std::vector<std::string> SplitDirectiveWords(std::string_view text);

// Applies --export to sbatch's environment (man sbatch): "ALL" (everything), "NONE" (SLURM_*
// only), "[ALL,]VAR[=value],...". Unquoted commas inside a value are kept when the next piece is
// not a variable name ("PATH=/a,/b").
Result<std::vector<std::string>> ApplyExport(std::string_view export_spec,
                                             const std::vector<std::string>& environment);

// Exit code of `sbatch --wait` from the job's records (one per array task, or just the job):
// the highest exit code; 1 for a job ended by a signal or that failed without an exit code.
int WaitExitCode(const std::vector<pb::JobRecord>& jobs);

// "sbatch: Job 12 to start at 2026-01-02T03:04:05 using 4 processors on nodes n[1-2] in
// partition debug" (the --test-only answer; `start` already formatted).
std::string TestOnlyMessage(uint32_t job_id, const std::string& start, uint32_t cpus,
                            const std::string& nodes, const std::string& partition);

// CPUs the spec asks for, for the --test-only message.
uint32_t RequestedCpus(const pb::JobSpec& spec);

// ErrorExitCode (SLURM_EXIT_ERROR, else 1) is declared in cli/job_options_common.h.

std::string SbatchHelpText();
std::string SbatchUsageText();

}  // namespace shoal::cli
