// sacctmgr show/list output: the records of an AcctShowResponse as Slurm 22.05 lays them out.
// Pure: no I/O.
//
// Columns are right-justified in their width and followed by one space; a value longer than the
// width is cut and ends in '+' (headers are only cut). format=Name%N sets the width (%-N: left
// justified). -p prints "a|b|", -P "a|b". `tree` indents account names by depth (left-justified,
// width 20).
#pragma once

#include <string>
#include <vector>

#include "acct.pb.h"
#include "common/result.h"

namespace shoal::cli::sacctmgr {

struct Column {
  std::string key;     // canonical field ("account", "grptres", ...)
  std::string header;  // "Account", "Def QOS", ...
  int width = 10;      // negative: left-justified
};

struct RenderOptions {
  int parsable = 0;  // 0, 1 (-p), 2 (-P)
  bool noheader = false;
  bool tree = false;
};

// The columns for `entity` (canonical) from format= fields, or Slurm's default list.
// Error: "Unknown field 'foo'".
Result<std::vector<Column>> ResolveColumns(const std::string& entity,
                                           const std::vector<std::string>& format, bool with_assoc,
                                           bool tree, bool wolimits);

// The whole listing, header included, each line ending in '\n'.
std::string RenderShow(const std::string& entity, const pb::AcctShowResponse& resp,
                       const std::vector<Column>& columns, const RenderOptions& opts);

// Minutes as sacctmgr shows limits: 30 -> "00:30:00", 1500 -> "1-01:00:00".
std::string MinutesText(uint64_t minutes);

}  // namespace shoal::cli::sacctmgr
