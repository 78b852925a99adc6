// Daemon logging: one line per event, "[2026-11-22T03:33:26.123] level: message", to stderr
// (which the daemons point at their log file). printf-style so call sites stay cheap.
#pragma once

namespace shoal {

enum class LogLevel { kError = 0, kInfo = 1, kDebug = 2 };

void SetLogLevel(LogLevel level);
void LogAt(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

#define LogError(...) ::shoal::LogAt(::shoal::LogLevel::kError, __VA_ARGS__)
#define LogInfo(...) ::shoal::LogAt(::shoal::LogLevel::kInfo, __VA_ARGS__)
#define LogDebug(...) ::shoal::LogAt(::shoal::LogLevel::kDebug, __VA_ARGS__)

}  // namespace shoal
