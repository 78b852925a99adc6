// sreport: the command line and the reports (cluster Utilization, cluster
// AccountUtilizationByUser, user TopUsage) computed from an AcctUsageResponse and printed as
// Slurm 22.05 does. Pure: no I/O; the caller passes `now` and lookups.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "acct.pb.h"
#include "common/result.h"

namespace shoal::cli {

// Slurm's time formats, in its order (the values matter for widths: *_PER are wider).
enum class SreportTime { kSecs, kMins, kHours, kPercent, kSecsPer, kMinsPer, kHoursPer };

enum class SreportReport { kNone, kClusterUtilization, kClusterAccountByUser, kUserTop };

struct SreportOptions {
  SreportReport report = SreportReport::kNone;
  bool help = false, version = false;
  SreportTime time = SreportTime::kMins;
  bool no_header = false;
  int parsable = 0;  // 1 = -p, 2 = -P
  bool all_clusters = false;
  std::vector<std::string> clusters;  // -M / cluster=
  std::vector<std::string> users, accounts;
  std::string format;  // format= (comma list), "" = the report's default
  uint32_t top_count = 10;
  bool group = false;          // user top: one line per user, accounts merged
  int64_t start = 0, end = 0;  // after Slurm's defaults and rounding
};

// Parses "sreport [-npPt ...] cluster utilization start=... end=... format=...". Errors are the
// text to print on stderr.
Result<SreportOptions> ParseSreportArgs(int argc, char** argv, int64_t now);

// -t: "minutes", "Hours", "percent", "secper", ... (case-insensitive, abbreviations allowed).
Result<SreportTime> ParseSreportTime(std::string_view text);
const char* SreportTimeName(SreportTime t);  // "Minutes", "Percentage of Total", ...

// Usage of one cluster over the window, in CPU-seconds.
struct ClusterUsage {
  std::string cluster;
  uint64_t cpus = 0;
  uint64_t alloc = 0, down = 0, planned_down = 0, idle = 0, planned = 0, over = 0;
  uint64_t reported = 0;
};

// Allocated: jobs' allocated CPUs times their run time inside the window, plus the unused part
// of active (non-MAINT) reservations. Down: node events (DOWN, DRAIN, FAIL, ...: every node event
// the controller records, as slurmdbd's rollup counts them) times the node's CPUs. Planned down:
// MAINT reservations. Planned: eligible pending jobs' requested CPUs times their wait inside the
// window, capped by what is left. Idle: the rest. Reported: CPUs times the window.
std::vector<ClusterUsage> ComputeClusterUsage(const pb::AcctUsageResponse& usage, int64_t start,
                                              int64_t end);

struct SreportLookups {
  std::function<std::string(const std::string&)> proper_name;  // login -> GECOS name
};

// The whole report text (banner unless -n, header, rows). Errors: unknown format fields
// (" Unknown field 'x'").
Result<std::string> FormatSreport(const pb::AcctUsageResponse& usage, const SreportOptions& o,
                                  const SreportLookups& lookups);

}  // namespace shoal::cli
