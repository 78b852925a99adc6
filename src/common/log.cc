#include "common/log.h"

#include <sys/time.h>

#include <cstdarg>
#include <cstdio>
#include <ctime>

namespace shoal {
namespace {
LogLevel g_level = LogLevel::kInfo;
constexpr const char* kNames[] = {"error", "info", "debug"};
}  // namespace

void SetLogLevel(LogLevel level) { g_level = level; }

void LogAt(LogLevel level, const char* fmt, ...) {
  if (static_cast<int>(level) > static_cast<int>(g_level)) return;
  timeval tv{};
  ::gettimeofday(&tv, nullptr);
  tm local{};
  ::localtime_r(&tv.tv_sec, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &local);
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "[%s.%03ld] %s: %s\n", stamp, static_cast<long>(tv.tv_usec / 1000),
               kNames[static_cast<int>(level)], line);
  std::fflush(stderr);
}

}  // namespace shoal
