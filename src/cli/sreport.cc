// PLACEHOLDER: replaced by the sreport implementation (issue 6, in progress).
#include <cstdio>

#include "cli/commands.h"

namespace shoal::cli {

int SreportMain(int, char**) {
  std::fprintf(stderr, "sreport: not implemented yet\n");
  return 1;
}

}  // namespace shoal::cli
