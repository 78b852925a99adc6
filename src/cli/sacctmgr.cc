// PLACEHOLDER: replaced by the sacctmgr implementation (issue 6, in progress).
#include <cstdio>

#include "cli/commands.h"

namespace shoal::cli {

int SacctmgrMain(int, char**) {
  std::fprintf(stderr, "sacctmgr: not implemented yet\n");
  return 1;
}

}  // namespace shoal::cli
