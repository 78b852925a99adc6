// scancel's command line, parsed without I/O (the environment is passed in) so it can be tested.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "shoal.pb.h"

namespace shoal::cli {

struct ScancelOptions {
  std::vector<std::string> job_ids;  // as given: "123", "123_4", "123_[1-3]", "123.0"
  std::optional<int> signal;         // -s/--signal
  bool batch = false;                // -b
  bool full = false;                 // -f
  bool interactive = false;          // -i
  bool quiet = false;                // -Q
  int verbose = 0;                   // -v (repeatable)
  bool hurry = false;                // -H (accepted, no effect)
  bool me = false;                   // --me
  std::string user;                  // -u: name or uid, resolved by the caller
  std::string name;                  // -n/--name/--jobname
  std::vector<pb::JobState> states;  // -t
  std::string partition;             // -p
  std::string nodelist;              // -w (a hostlist, or a file name when it has a '/')
  std::string account;               // -A
  std::string qos;                   // -q
  std::string reservation;           // -R (not in the request yet; filters nothing)
  std::string wckey;                 // --wckey (same)
  bool help = false, usage = false, version = false;
};

// Reads SCANCEL_* variables (ACCOUNT BATCH FULL HURRY INTERACTIVE NAME PARTITION QOS STATE USER
// VERBOSE WCKEY); command-line options override them.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Parses argv[1..]. Errors carry the exact text to print on stderr (without "scancel: error: "
// prefix where Slurm has none), e.g. "Unknown job signal: FOO" or "scancel: error: Invalid job
// id abc"; the caller prints them as they are and exits 1.
Result<ScancelOptions> ParseScancelArgs(const std::vector<std::string>& args,
                                        const EnvLookup& env = nullptr);

// True when any of -u/--me/-n/-t/-p/-w/-A/-q/-R/--wckey was given.
bool HasFilters(const ScancelOptions& opts);

// A job id argument as scancel accepts it: 123, 123_4, 123_[1-3], 123.0, 123_4.0.
bool IsScancelJobId(std::string_view id);
// The step part of "123.4" / "123_5.4" (empty when none).
std::string_view StepPart(std::string_view id);

// Builds the request; `uid` is the resolved -u/--me user when one was given.
pb::CancelJobRequest BuildCancelRequest(const ScancelOptions& opts, std::optional<uint32_t> uid,
                                        const std::vector<std::string>& nodes);

// "Cancel job_id=<id> name=<name> partition=<p> [y/n]? "
std::string CancelPrompt(const pb::JobRecord& job);

std::string ScancelUsage();
std::string ScancelHelp();

}  // namespace shoal::cli
