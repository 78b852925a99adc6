// sacct's output: job and step rows in Slurm 22.05's fixed-width, parsable and JSON forms.
// Pure: records, options and `now` in, text out (no I/O).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "acct.pb.h"
#include "cli/sacct_options.h"
#include "common/result.h"

namespace shoal::cli {

// One output column: an index into Slurm's field table, with the width in use (negative = left
// aligned, as Slurm writes it).
struct SacctColumn {
  int field = 0;
  int width = 0;
};

// Parses "jobid,jobname%30,state%-12" (case-insensitive prefixes, first match in Slurm's table
// order; "ALL" or any prefix of it selects every field). Error text:
// "sacct: error: Invalid field requested: \"foo\"".
Result<std::vector<SacctColumn>> ParseSacctFields(std::string_view list);

struct SacctFormatOptions {
  std::vector<SacctColumn> columns;
  bool no_header = false;
  int parsable = 0;  // 1 = -p, 2 = -P
  std::string delimiter = "|";
  bool allocations = false;  // -X: no step rows
  bool truncate = false;     // -T: clip start/end to [window_start, window_end]
  int64_t window_start = 0;
  int64_t window_end = 0;  // 0 = now
  bool noconvert = false;
  char units = 0;
  std::vector<SacctJobSelector> selectors;  // -j: a step selector hides its job row
  // uid/gid -> name when the record carries none ("" = print the number).
  std::function<std::string(uint32_t)> user_name;
  std::function<std::string(uint32_t)> group_name;
};

// The header (unless no_header) and one row per job and step, jobs ordered by submit time.
std::string FormatSacct(std::vector<pb::AcctJob> jobs, const SacctFormatOptions& options,
                        int64_t now);

// --json: {"jobs":[...]} shaped like slurmrestd's v0.0.44 slurmdb job list.
std::string FormatSacctJson(const std::vector<pb::AcctJob>& jobs, const SacctFormatOptions& options,
                            int64_t now);

// sacct -e: the field names, four to a line.
std::string SacctHelpFormat();

// Helpers exposed for tests.
std::string SacctJobId(const pb::AcctJob& job);                             // "123", "123_4"
std::string SacctStepId(const pb::AcctJob& job, const pb::AcctStep& step);  // "123.batch"
// Slurm's convert_num_unit with CONVERT_NUM_UNIT_EXACT: value in `unit` (0 = none, 1 = K,
// 2 = M, ...) -> "1234K", "1.50G", "500M".
std::string SacctConvertUnits(double value, int unit, char to_units, bool noconvert);
// "[D-]HH:MM:SS", or "MM:SS.mmm" below an hour when there are microseconds.
std::string SacctCpuTime(uint64_t usec);

}  // namespace shoal::cli
