#include "common/heap_tuning.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace shoal {
namespace {

constexpr char kTunable[] = "glibc.malloc.hugetlb";
constexpr char kMarker[] = "SHOAL_HEAP_REEXEC";

bool TransparentHugePagesAvailable() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  if (!std::getline(in, modes)) return false;
  return modes.find("[never]") == std::string::npos;
}

}  // namespace

void ReexecWithHugePageHeap(char** argv) {
  if (const char* before = std::getenv(kMarker)) {
    // Back from our own re-exec: the heap is set up; give children the environment we had.
    if (*before == '\0')
      ::unsetenv("GLIBC_TUNABLES");
    else
      ::setenv("GLIBC_TUNABLES", before + 1, 1);
    ::unsetenv(kMarker);
    return;
  }
  if (const char* opt = std::getenv("SHOAL_MALLOC_HUGETLB"); opt && std::strcmp(opt, "0") == 0)
    return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  // Already set (by us before the exec, or by the admin): never loop, never override.
  if (tunables != nullptr && std::strstr(tunables, kTunable) != nullptr) return;
  if (!TransparentHugePagesAvailable()) return;
  std::string value = std::string(kTunable) + "=1";
  if (tunables != nullptr && *tunables != '\0') value = std::string(tunables) + ":" + value;
  // The marker holds the previous value ("" for unset, "=..." otherwise) to restore after.
  std::string previous = tunables == nullptr ? "" : "=" + std::string(tunables);
  ::setenv(kMarker, previous.c_str(), 1);
  ::setenv("GLIBC_TUNABLES", value.c_str(), 1);
  ::execv("/proc/self/exe", argv);
  // Could not exec (no /proc): go on with the default heap and the environment as it was.
  if (tunables == nullptr)
    ::unsetenv("GLIBC_TUNABLES");
  else
    ::setenv("GLIBC_TUNABLES", previous.c_str() + 1, 1);
  ::unsetenv(kMarker);
}

}  // namespace shoal
