// PLACEHOLDER: replaced by the sacct implementation (issue 6, in progress).
#include <cstdio>

#include "cli/commands.h"

namespace shoal::cli {

int SacctMain(int, char**) {
  std::fprintf(stderr, "sacct: not implemented yet\n");
  return 1;
}

}  // namespace shoal::cli
