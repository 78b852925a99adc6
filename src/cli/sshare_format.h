// sshare's output as Slurm 22.05 prints it: the default and long layouts (Fair Tree adds
// LevelFS to -l), -o field lists, -p/-P, -n, -m and -U. Pure: share rows and options in, text
// out (no I/O).
//
// Behaviour observed on Slurm 22.05.8 that the man page leaves out:
//   * Columns: Account -20 (left), User 10, RawShares 10, NormShares 11, RawUsage 11,
//     NormUsage 11, EffectvUsage 13, FairShare 10, LevelFS 10, GrpTRESMins/GrpTRESRaw/
//     TRESRunMins 30, Partition 12, Cluster 10, ID 6 (right unless negative); each followed by
//     a space, the last one too. Too long strings end in '+'; numbers too wide for "%*f" fall
//     back to "%*.*e" with a narrower width (0.2 in 5 columns: "2.000000e-01").
//   * -o items are case-insensitive prefixes of the field names, tried in alphabetical order
//     ("A" = Account, "Fair" = FairShare, "Norm" = NormShares), "name%N" sets the width
//     (negative: left-justified). An unknown item: 'Invalid field requested: "item"' (lower
//     case). -o wins over -l; several -o lists add up.
//   * Accounts are indented one space per shown ancestor row (ShareRecord.depth), also in
//     parsable output; -U (users only) prints them without indentation.
//   * Blank: RawShares of root, NaN values (root's NormUsage, Fair Tree accounts' FairShare,
//     LevelFS of Fairshare=parent), ID and GrpTRESRaw (not in ShareRecord).
#pragma once

#include <string>

#include "common/result.h"
#include "shoal.pb.h"

namespace shoal::cli {

struct SshareFormatOptions {
  std::string format;  // -o lists joined with ','; used when has_format
  bool has_format = false;
  bool long_output = false;  // -l
  bool partitions = false;   // -m: Partition after User
  bool users_only = false;   // -U
  bool no_header = false;    // -n
  int parsable = 0;          // 0, 1 (-p: trailing '|'), 2 (-P: none)
  std::string cluster_name;  // the Cluster field
};

// The layout used without -o (depends on Fair Tree and -l/-m), as an -o list.
std::string SshareDefaultFormat(const SshareFormatOptions& options, bool fair_tree);

// The whole stdout of sshare. Error (nothing printed): Invalid field requested: "x".
Result<std::string> FormatSshare(const pb::ShareQueryResponse& response,
                                 const SshareFormatOptions& options);

// --helpformat: the field names, four per line.
std::string SshareHelpFormat();

}  // namespace shoal::cli
