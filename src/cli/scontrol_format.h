// scontrol's text: `show job|node|partition|config`, hostlist helpers and command-line parsing.
// Pure functions: records (and the current time, and name look-ups passed in) -> text. No I/O.
//
// Layouts follow Slurm 22.05's `scontrol show` byte for byte, including its quirks: every line of
// a record ends with the separator ("\n   " normally, " " with -o), so a multi-line record ends
// with "\n   \n\n" (a line of three spaces, then a blank line) and a one-line record with " \n";
// some lines keep a trailing space ("NodeName=n1 Arch=x86_64 CoresPerSocket=2 ").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "shoal.pb.h"

namespace shoal::cli {

// uid/gid -> name. Empty result (or an unset function) prints the number instead.
struct NameLookup {
  std::function<std::string(uint32_t)> user;
  std::function<std::string(uint32_t)> group;
};

struct ShowOptions {
  bool one_liner = false;  // -o / --oneliner
  bool details = false;    // -d / --details
};

// ---- show job --------------------------------------------------------------------------------

// One job record as `scontrol show job` prints it (terminated as described above).
std::string FormatJob(const pb::JobRecord& job, int64_t now, const ShowOptions& opts,
                      const NameLookup& names);

// Minimal `--json` rendering of jobs: {"jobs": [{...}, ...]}.
std::string FormatJobsJson(const std::vector<pb::JobRecord>& jobs, int64_t now,
                           const NameLookup& names);

// RunTime as Slurm computes it: 0 while pending, now-start (less suspended time) while running,
// end-start once finished.
int64_t JobRunSeconds(const pb::JobRecord& job, int64_t now);

// Expands a StdOut/StdErr/StdIn pattern as scontrol shows it: %A %a %j %u %x and "%%" left as
// written are handled like Slurm 22.05 (only %A %a %j %u %x are replaced); a relative path is
// prefixed with WorkDir. An empty pattern gives Slurm's default ("slurm-%j.out", "slurm-%A_%a.out"
// for array tasks; /dev/null for stdin).
enum class StdStream { kIn, kOut, kErr };
std::string ExpandStdPath(const pb::JobRecord& job, StdStream which, std::string_view user);

// ---- show node / partition -------------------------------------------------------------------

std::string FormatNode(const pb::NodeRecord& node, int64_t now, const ShowOptions& opts,
                       const NameLookup& names);
std::string FormatNodesJson(const std::vector<pb::NodeRecord>& nodes, const NameLookup& names);

// `nodes` are the cluster's nodes (for TotalCPUs and TRES); those not in the partition are ignored.
std::string FormatPartition(const pb::PartitionRecord& part,
                            const std::vector<pb::NodeRecord>& nodes, const ShowOptions& opts);

// ---- show config -----------------------------------------------------------------------------

// "Configuration data as of <time>\n" then "Key                     = Value\n" for each pair.
std::string FormatConfig(const pb::ConfigQueryResponse& config);
std::string FormatConfigLine(std::string_view key, std::string_view value);

// ---- units as scontrol shows them ------------------------------------------------------------

// Memory in MB as MinMemoryNode shows it: 1000 -> "1000M", 1536 -> "1.50G", 4096 -> "4G".
std::string FormatMemoryScontrol(uint64_t mb);
// Memory in MB as TRES strings show it (exact units only): 2000 -> "2000M", 4096 -> "4G".
std::string FormatTresMemory(uint64_t mb);
// Minutes as TimeLimit/DefaultTime show them: "01:00:00", "2-00:00:00", "UNLIMITED".
// `no_val` is what kTimeNoVal prints ("Partition_Limit" for jobs, "NONE" for partitions).
std::string FormatLimitMinutes(uint32_t minutes, std::string_view no_val);
// ExitCode=<code>:<signal> from a raw wait status.
std::string FormatExitCode(int32_t wait_status);

// ---- hostlists -------------------------------------------------------------------------------

// `show hostlist`: compresses in the given order, keeping duplicates ("n3,n1,n2,n1,a5" ->
// "n[3,1-2,1],a5").
std::string HostlistInOrder(const std::vector<std::string>& hosts);
// `show hostlistsorted`: sorts first, keeping duplicates ("n3,n1,n2,n1,a5" -> "a5,n[1,1-3]").
std::string HostlistSorted(std::vector<std::string> hosts);

// ---- command-line parsing --------------------------------------------------------------------

// Splits an interactive input line into words, honouring single and double quotes
// (`update NodeName=n1 Reason="bad disk"` -> 3 words, quotes removed).
std::vector<std::string> SplitCommandLine(std::string_view line);

// Splits "Key=Value" (no '=' -> value empty, has_value false).
struct KeyValue {
  std::string key;
  std::string value;
  bool has_value = false;
};
KeyValue SplitKeyValue(std::string_view word);

// `scontrol update JobId=... Key=Value ...` / `update JobName=x ...`. Field keys are normalized
// to Slurm's spelling (jobname -> Name, timelimit -> TimeLimit). Errors are the full text to
// print on stderr (e.g. "Update of this parameter is not supported: Foo=1\nRequest aborted").
struct JobUpdate {
  std::vector<std::string> job_ids;    // from JobId=a,b (may be empty when by_name is set)
  std::optional<std::string> by_name;  // JobName=x used to identify jobs (no JobId given)
  std::map<std::string, std::string> fields;
};
Result<JobUpdate> ParseJobUpdate(const std::vector<std::string>& words);

// `scontrol update NodeName=<list> State=... Reason=...`.
struct NodeUpdate {
  std::string node_names;
  std::string state;  // upper case, "" when not given
  std::string reason;
  std::map<std::string, std::string> fields;
};
Result<NodeUpdate> ParseNodeUpdate(const std::vector<std::string>& words);

// A job id argument of hold/release/...: "123", "123_4", "123_[1-3]", comma-separated lists.
// Returns the ids, or an error "Invalid job id specified for job <word>".
Result<std::vector<std::string>> ParseJobIdList(const std::vector<std::string>& words);
bool IsValidJobIdArg(std::string_view id);

}  // namespace shoal::cli
