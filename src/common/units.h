// Slurm's time, memory and date formats: parsing user input and formatting output.
// Pure functions, no I/O (the current time is always passed in).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace shoal {

inline constexpr uint32_t kTimeNoVal = 0xfffffffe;     // "not given"
inline constexpr uint32_t kTimeInfinite = 0xffffffff;  // UNLIMITED / INFINITE
inline constexpr uint32_t kNoArrayTask = 0xfffffffe;
// Step ids with a meaning of their own (Slurm's values): "123.batch", "123.extern", ...
inline constexpr uint32_t kInteractiveStepId = 0xfffffffa;
inline constexpr uint32_t kBatchStepId = 0xfffffffb;
inline constexpr uint32_t kExternStepId = 0xfffffffc;
inline constexpr uint32_t kPendingStepId = 0xfffffffd;
// Accounting: an association whose Fairshare is "parent"; a record nobody cancelled (requid).
inline constexpr uint32_t kSharesParent = 0x7fffffff;
inline constexpr uint32_t kNoUid = 0xffffffff;

// Time limits: "mm", "mm:ss", "hh:mm:ss", "d-hh", "d-hh:mm", "d-hh:mm:ss", "UNLIMITED",
// "INFINITE" (case-insensitive), "-1" = UNLIMITED. Result in minutes, seconds rounded up
// ("0:30" -> 1). Error text: "Invalid time limit specification". "0" returns 0: callers that
// follow sbatch's "a time limit of zero requests that no time limit be imposed" map it themselves.
Result<uint32_t> ParseTimeLimit(std::string_view text);

// Same formats, result in seconds (used for --signal @time and durations); a bare number is
// minutes, as in ParseTimeLimit. UNLIMITED/INFINITE/-1 return -1.
Result<int64_t> ParseDurationSeconds(std::string_view text);

// Time-limit display as squeue/scontrol show it: minutes -> "UNLIMITED", "5:00", "1:00:00",
// "2-00:00:00"; kTimeNoVal -> "NONE"... (scontrol uses "UNLIMITED"/"NONE"; sinfo "infinite").
std::string FormatTimeLimit(uint32_t minutes);

// Elapsed seconds as squeue's TIME column: "0:00", "5:07", "1:02:03", "3-01:02:03"
// (negative -> "INVALID").
std::string FormatElapsed(int64_t seconds);

// Elapsed/limit as scontrol show job's RunTime/TimeLimit: "00:00:05", "1-02:03:04".
std::string FormatHms(int64_t seconds);

// Memory sizes: "500" (MB), "500K", "4G", "1T", "100M", "2048MB" -> megabytes (K rounds up).
// Error text: "Invalid memory specification".
Result<uint64_t> ParseMemoryMB(std::string_view text);

// A GRES count: "4", "1K", "2M", "1G" (binary K/M/G/T/P multipliers, as slurm.conf's Gres= and
// gres.conf's Count= take them). False on anything else or on overflow.
bool ParseGresCount(std::string_view text, uint64_t* out);

// Megabytes for output: 4096 -> "4G" (sinfo-style compact) and plain "4096" (scontrol).
// FormatMemoryCompact: 0 -> "0"; otherwise the largest unit (M, G, T, P, E) that divides exactly:
// 500 -> "500M", 1536 -> "1536M", 1024 -> "1G", 1048576 -> "1T". For the plain form use
// std::to_string.
std::string FormatMemoryCompact(uint64_t mb);

// --begin / StartTime forms: "now", "now+60" (seconds), "now+1hour" (units seconds, minutes,
// hours, days, weeks), "HH:MM[:SS]" (today, or tomorrow if past), "midnight", "noon",
// "fika" (15:00), "teatime" (16:00), "today", "tomorrow", "MMDD[YY]", "MM/DD[/YY]",
// "YYYY-MM-DD[THH:MM[:SS]]". Returns unix seconds in local time. Error text:
// "Invalid time specification". Also accepted: "MM.DD[.YY]", 4-digit years in "MM/DD/YYYY",
// AM/PM suffixes ("4pm", "10:30AM"), "now + 2 days" with spaces, unit abbreviations
// (s/sec, m/min, h, d, w). A date without a year that is already past (by date) means next year.
Result<int64_t> ParseBeginTime(std::string_view text, int64_t now);

// Unix seconds -> "2026-11-22T03:33:26" in local time; 0 -> "Unknown"; kind of "N/A" is left to
// callers.
std::string FormatTimestamp(int64_t unix_seconds);  // negative -> "Unknown" as well

// Signal names for --signal, scancel -s, etc: "USR1", "SIGUSR1", "10", "KILL". Returns the number.
// Case-insensitive; numbers 1..64. Error text: "Invalid signal specification". SignalName gives
// the number as text for signals without a name.
Result<int> ParseSignal(std::string_view text);
std::string SignalName(int sig);  // 10 -> "USR1"

}  // namespace shoal
