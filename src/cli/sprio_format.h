// sprio's output: the default/long/normalized layouts, the -o field codes, -S sorting and the
// -w "Weights" row, as Slurm 22.05 prints them. Pure: factor records, weights and options in,
// text out (no I/O).
//
// Notes on Slurm's behaviour that the man page does not spell out:
//   * '.' right-justifies a field (the man page says "left"; its own examples and the real
//     command right-justify), exactly as in squeue.
//   * Without -o/-l, a factor's column is left out when its PriorityWeight* is zero (age, assoc,
//     fairshare, job size, partition, QOS, TRES); JOBID, PARTITION, PRIORITY and SITE always stay,
//     NICE is only in -l. The TRES column is "%.20T" as the real command builds it (the man
//     page shows "%20T").
//   * -l always prints every column, whatever the weights.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "shoal.pb.h"

namespace shoal::cli {

// The layouts with every weight non-zero (what SprioDefaultFormat starts from).
inline constexpr char kSprioLongFormat[] =
    "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q %.11N %.20T";
inline constexpr char kSprioNormLongFormat[] =
    "%.15i %9r %.8u %10y %10a %10b %10f %10j %10p %10q %20t";
inline constexpr char kSprioDefaultSort[] = "i";

struct SprioFormatOptions {
  std::string format;           // -o or $SPRIO_FORMAT (used when has_format)
  bool has_format = false;      // an empty -o is a valid (empty) layout
  bool long_output = false;     // -l
  bool normalized = false;      // -n
  bool no_header = false;       // -h
  bool weights = false;         // -w: header plus one "Weights" row, no jobs
  bool user_column = false;     // -u given: the default layout gains USER
  bool cluster_column = false;  // --sibling without --local: the default layout gains CLUSTER
  std::string sort;             // -S; empty = "i"
  std::string cluster_name;     // %c
  // uid -> name; "" (or unset) prints "nobody", as Slurm's uid_to_string does.
  std::function<std::string(uint32_t)> user_name;
};

// The layout sprio uses when neither -o nor $SPRIO_FORMAT is given.
std::string SprioDefaultFormat(const SprioFormatOptions& options,
                               const pb::PriorityFactors& weights);

struct SprioOutput {
  // "Invalid job format specification: x" for each unknown -o code (printed as
  // "sprio: error: ..." before the output, which goes on without that field).
  std::vector<std::string> warnings;
  std::string text;  // stdout
  // Set on an invalid -S letter ("Invalid sort specification: x"): Slurm fails after printing
  // the header, so `text` holds the header and the caller prints the error and exits 1.
  std::string error;
};

// Formats `jobs` (already filtered; sorted here by options.sort). `weights` holds the
// configured PriorityWeight* values (tres_detail: PriorityWeightTRES as written).
SprioOutput FormatSprio(const std::vector<const pb::PriorityFactors*>& jobs,
                        const pb::PriorityFactors& weights, const SprioFormatOptions& options);

// -j list: comma separated positive job ids. Error: "Invalid job id: x".
Result<std::vector<uint32_t>> ParseSprioJobIds(std::string_view text);

struct SprioFilter {
  std::vector<uint32_t> job_ids;        // -j; empty = all
  std::vector<uint32_t> uids;           // -u; empty = all
  bool uids_given = false;              // -u named only unknown users: nothing matches
  std::vector<std::string> partitions;  // -p; empty = all
};
bool SprioJobMatches(const pb::PriorityFactors& job, const SprioFilter& filter);

}  // namespace shoal::cli
