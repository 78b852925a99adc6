// PLACEHOLDER: replaced by the sshare implementation (issue 6, in progress).
#include <cstdio>

#include "cli/commands.h"

namespace shoal::cli {

int SshareMain(int, char**) {
  std::fprintf(stderr, "sshare: not implemented yet\n");
  return 1;
}

}  // namespace shoal::cli
