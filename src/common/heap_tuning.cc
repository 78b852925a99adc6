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

// The running program's file, or "" when it cannot be exec'ed again by name (no /proc, or
// replaced on disk since it started: never start another version).
std::string ProgramPath() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  if (path.size() > 10 && path.compare(path.size() - 10, 10, " (deleted)") == 0) return "";
  return path;
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
  std::string self = ProgramPath();
  if (self.empty()) return;
  std::string value = std::string(kTunable) + "=1";
  if (tunables != nullptr && *tunables != '\0') value = std::string(tunables) + ":" + value;
  // The marker holds the previous value ("" for unset, "=..." otherwise) to restore after.
  std::string previous = tunables == nullptr ? "" : "=" + std::string(tunables);
  ::setenv(kMarker, previous.c_str(), 1);
  ::setenv("GLIBC_TUNABLES", value.c_str(), 1);
  // By the program's own path: exec'ing /proc/self/exe would rename the process "exe" (ps,
  // pgrep and the kernel's comm go by the exec'd file name).
  ::execv(self.c_str(), argv);
  // Could not exec: go on with the default heap and the environment as it was.
  if (tunables == nullptr)
    ::unsetenv("GLIBC_TUNABLES");
  else
    ::setenv("GLIBC_TUNABLES", previous.c_str() + 1, 1);
  ::unsetenv(kMarker);
}

}  // namespace shoal
