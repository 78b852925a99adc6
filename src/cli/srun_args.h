// srun's and salloc's command lines turned into what their runtimes need (SrunInvocation,
// SallocInvocation). The option grammar itself lives in srun_options.h / salloc_options.h; this
// layer adds the context (environment, directory, user) and Slurm's defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/srun_run.h"
#include "common/result.h"
#include "common/slurm_conf.h"

namespace shoal::cli {

struct RunContext {
  std::vector<std::string> environment;
  std::string cwd, hostname, user_name, shell;
  uint32_t uid = 0, gid = 0, pid = 0;
  int64_t now = 0;
};

struct SallocInvocation {
  pb::JobSpec spec;
  std::string work_dir;                // -D: the command runs there
  std::vector<std::string> extra_env;  // added to the command's environment
  std::vector<std::string> command;    // empty: the user's shell
  bool no_shell = false;
  std::optional<uint32_t> immediate_s;
  bool quiet = false;
  bool kill_command = false;    // -K: signal the command when the allocation is revoked
  int kill_command_signal = 0;  // 0: SIGHUP on a terminal, else SIGTERM
};

struct ParsedSrun {
  bool text_only = false;  // --help, --usage, --version, --mpi=list: print `text` and exit 0
  std::string text;
  SrunInvocation srun;
};
struct ParsedSalloc {
  bool text_only = false;
  std::string text;
  SallocInvocation salloc;
};

// Errors: the complete text to print (with "srun: " prefixes); code kInvalidArgument for bad
// options (exit 255, as Slurm), anything else exits 1.
Result<ParsedSrun> ParseSrunArgs(const std::vector<std::string>& args, const RunContext& ctx);
Result<ParsedSalloc> ParseSallocArgs(const std::vector<std::string>& args, const RunContext& ctx);

// Settings that need slurm.conf (KillWait is read by the launcher itself; MpiDefault by srun).
void FinishSrunInvocation(SrunInvocation& inv, const SlurmConf& conf);

}  // namespace shoal::cli
