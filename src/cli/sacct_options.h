// sacct's command line: a pure parse of argv into display options and the AcctJobQuery sent to
// shoaldbd, with Slurm 22.05's defaults (time window, user filter, field list). No I/O: the
// caller passes the environment (uid, now, cluster, SACCT_FORMAT, user lookups).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acct.pb.h"
#include "common/result.h"

namespace shoal::cli {

// Slurm's default field lists.
inline constexpr char kSacctDefaultFields[] =
    "jobid,jobname,partition,account,alloccpus,state,exitcode";
inline constexpr char kSacctBriefFields[] = "jobid,state,exitcode";
inline constexpr char kSacctLongFields[] =
    "jobid,jobidraw,jobname,partition,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,"
    "maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,"
    "mincputask,avecpu,ntasks,alloccpus,elapsed,state,exitcode,avecpufreq,reqcpufreqmin,"
    "reqcpufreqmax,reqcpufreqgov,reqmem,consumedenergy,maxdiskread,maxdiskreadnode,"
    "maxdiskreadtask,avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,avediskwrite,"
    "reqtres,alloctres,tresusageinave,tresusageinmax,tresusageinmaxn,tresusageinmaxt,"
    "tresusageinmin,tresusageinminn,tresusageinmint,tresusageintot,tresusageoutmax,"
    "tresusageoutmaxn,tresusageoutmaxt,tresusageoutave,tresusageouttot";

// One -j item: "123", "123_4", "123.batch", "123_4.0".
struct SacctJobSelector {
  uint32_t job_id = 0;
  std::optional<uint32_t> task;  // array task
  std::optional<uint32_t> step;  // step id (kBatchStepId, kExternStepId, ... or a number)
};

struct SacctEnv {
  uint32_t uid = 0;
  std::string user_name;  // the caller's name (the default -u filter)
  int64_t now = 0;
  std::string cluster;       // ClusterName from slurm.conf
  std::string sacct_format;  // $SACCT_FORMAT ("" = unset)
  // -u item (name or number) -> user name; false when it does not resolve.
  std::function<bool(const std::string&, std::string*)> resolve_user;
};

enum class SacctAction { kList, kHelp, kUsage, kHelpFormat, kVersion };

struct SacctOptions {
  SacctAction action = SacctAction::kList;
  std::string fields;           // comma list with optional %width (already defaulted)
  bool no_header = false;       // -n
  int parsable = 0;             // 0; 1 = -p (trailing delimiter); 2 = -P
  std::string delimiter = "|";  // --delimiter
  bool json = false;
  bool allocations = false;  // -X
  bool truncate = false;     // -T
  bool noconvert = false;
  char units = 0;  // --units: 'K','M','G','T','P' or 0
  bool verbose = false;
  bool all_clusters = false;  // -L / -M all: no cluster filter
  std::vector<SacctJobSelector> jobs;
  int64_t start = 0;  // the window actually used (0 = epoch)
  int64_t end = 0;    // 0 = now
  pb::AcctJobQuery query;
};

// Parses argv (argv[0] ignored). Errors carry the complete text sacct prints on stderr (without
// the trailing newline), e.g. "sacct: fatal: unrecognized job state value 'XX'".
Result<SacctOptions> ParseSacctArgs(int argc, char** argv, const SacctEnv& env);

// -j list; error "sacct: fatal: Bad job/step specified: abc".
Result<std::vector<SacctJobSelector>> ParseSacctJobList(std::string_view text);

// -S/-E: Slurm's parse_time with past semantics (a date without a year that would be in the
// future means last year). Accepts everything ParseBeginTime does plus "now-N[unit]" and
// "midnight"/"today" as today 00:00. Error: "Invalid time specification (pos=0): <text>".
Result<int64_t> ParseSacctTime(std::string_view text, int64_t now);

// Midnight (00:00:00 local) of the day containing `t`.
int64_t LocalMidnight(int64_t t);

// The help texts sacct prints for -h and --usage.
const char* SacctHelpText();
const char* SacctUsageText();

}  // namespace shoal::cli
