// sinfo's output: node/partition filtering, grouping of nodes that print alike into one line
// with a compressed hostlist, sorting and the -o/-O/-l/-N/-s/-R layouts, as Slurm 22.05 prints
// them. Pure: records, options and `now` in, text out (no I/O).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "shoal.pb.h"

namespace shoal::cli {

inline constexpr char kSinfoDefaultFormat[] = "%#P %.5a %.10l %.6D %.6t %N";
inline constexpr char kSinfoLongFormat[] = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
inline constexpr char kSinfoNodeFormat[] = "%#N %.6D %#P %6t";
inline constexpr char kSinfoNodeLongFormat[] =
    "%#N %.6D %#P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E";
inline constexpr char kSinfoSummarizeFormat[] = "%#P %.5a %.10l %.16F  %N";
inline constexpr char kSinfoReasonFormat[] = "%20E %9u %19H %N";
inline constexpr char kSinfoReasonLongFormat[] = "%20E %12U %19H %6t %N";

struct SinfoFormatOptions {
  std::string format;          // -o; empty = chosen from the flags below
  std::string long_format;     // -O; used when format is empty
  bool long_output = false;    // -l
  bool node_oriented = false;  // -N: one line per node and partition
  bool summarize = false;      // -s
  bool list_reasons = false;   // -R
  bool exact = false;          // -e: CPUs/memory/disk must match to share a line
  bool no_header = false;      // -h
  std::string sort;            // -S; empty = "#P,-t" (or "N" with -N)
  // uid -> name for %u/%U; "" (or unset) prints the number.
  std::function<std::string(uint32_t)> user_name;
};

// -t: states separated by ',' (any) or '&' (all). Names Shoal never produces are accepted and
// match nothing.
struct SinfoStateFilter {
  std::vector<std::vector<std::string>> any_of;  // lower-case names; inner list = all of
};

struct SinfoFilter {
  std::vector<std::string> partitions;  // -p
  std::vector<std::string> nodes;       // -n, expanded
  std::optional<SinfoStateFilter> states;
  bool responding_only = false;  // -r
  bool dead_only = false;        // -d
  bool all_partitions = false;   // -a: hidden partitions too
};

// Parses -t. Error text (after "sinfo: error: "): "Bad state string: \"x\"" and the list of
// valid states on a second "sinfo: error: " line.
Result<SinfoStateFilter> ParseSinfoStates(std::string_view text);

// The chosen -o string for the flags (format when given).
std::string SinfoFormatString(const SinfoFormatOptions& options);

// Formats with header (unless no_header). Fails on an unknown -O field ("Invalid job format
// specification: Foo", Slurm's wording); unknown -o letters print nothing.
Result<std::string> FormatSinfo(const pb::NodeQueryResponse& data,
                                const SinfoFormatOptions& options, const SinfoFilter& filter,
                                int64_t now);

// --json: a slurmrestd v0.0.44 "openapi_nodes_resp"-shaped document (nodes that pass the
// filter).
std::string FormatSinfoJson(const pb::NodeQueryResponse& data, const SinfoFilter& filter,
                            int64_t now, std::string_view cluster_name);

// Exposed for tests: whether a node passes -t/-r/-d/-n (not -p).
bool SinfoNodeMatches(const pb::NodeRecord& node, const SinfoFilter& filter);

}  // namespace shoal::cli
