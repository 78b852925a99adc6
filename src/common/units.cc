#include "common/units.h"

#include <cctype>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

namespace shoal {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

// Digits only, no sign; fails on overflow past `max`.
bool ParseUnsigned(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (max - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

// Splits `s` on `sep` into at most `max` fields; false if there are more.
int SplitFields(std::string_view s, char sep, std::string_view* fields, int max) {
  int n = 0;
  size_t pos = 0;
  while (true) {
    size_t at = s.find(sep, pos);
    if (n == max) return -1;
    if (at == std::string_view::npos) {
      fields[n++] = s.substr(pos);
      return n;
    }
    fields[n++] = s.substr(pos, at - pos);
    pos = at + 1;
  }
}

// Shared by ParseTimeLimit and ParseDurationSeconds: -1 means unlimited.
bool ParseTimeSeconds(std::string_view text, int64_t* seconds) {
  std::string_view s = Trim(text);
  if (s.empty()) return false;
  if (IEquals(s, "UNLIMITED") || IEquals(s, "INFINITE") || s == "-1") {
    *seconds = -1;
    return true;
  }
  constexpr uint64_t kMaxField = 1'000'000'000;  // keeps every product well inside int64
  uint64_t days = 0, hours = 0, minutes = 0, secs = 0;
  std::string_view rest = s;
  size_t dash = s.find('-');
  std::string_view f[3];
  if (dash != std::string_view::npos) {
    if (!ParseUnsigned(s.substr(0, dash), kMaxField, &days)) return false;
    rest = s.substr(dash + 1);
    int n = SplitFields(rest, ':', f, 3);
    if (n < 1) return false;
    uint64_t* dst[3] = {&hours, &minutes, &secs};
    for (int i = 0; i < n; ++i) {
      if (!ParseUnsigned(f[i], kMaxField, dst[i])) return false;
    }
  } else {
    int n = SplitFields(rest, ':', f, 3);
    if (n < 1) return false;
    uint64_t v[3];
    for (int i = 0; i < n; ++i) {
      if (!ParseUnsigned(f[i], kMaxField, &v[i])) return false;
    }
    if (n == 1) {
      minutes = v[0];
    } else if (n == 2) {
      minutes = v[0];
      secs = v[1];
    } else {
      hours = v[0];
      minutes = v[1];
      secs = v[2];
    }
  }
  *seconds = static_cast<int64_t>(((days * 24 + hours) * 60 + minutes) * 60 + secs);
  return true;
}

const char kBadTime[] = "Invalid time limit specification";

template <typename... Args>
void AppendFormat(std::string* out, const char* fmt, Args... args) {
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, fmt, args...);
  if (n > 0) out->append(buf, static_cast<size_t>(n));
}

}  // namespace

Result<uint32_t> ParseTimeLimit(std::string_view text) {
  int64_t secs = 0;
  if (!ParseTimeSeconds(text, &secs)) return InvalidArgument(kBadTime);
  if (secs < 0) return kTimeInfinite;
  int64_t minutes = (secs + 59) / 60;
  if (minutes >= static_cast<int64_t>(kTimeNoVal)) return InvalidArgument(kBadTime);
  return static_cast<uint32_t>(minutes);
}

Result<int64_t> ParseDurationSeconds(std::string_view text) {
  int64_t secs = 0;
  if (!ParseTimeSeconds(text, &secs)) return InvalidArgument(kBadTime);
  return secs;
}

std::string FormatTimeLimit(uint32_t minutes) {
  if (minutes == kTimeInfinite) return "UNLIMITED";
  if (minutes == kTimeNoVal) return "NONE";
  return FormatElapsed(static_cast<int64_t>(minutes) * 60);
}

std::string FormatElapsed(int64_t seconds) {
  if (seconds < 0) return "INVALID";
  long long days = seconds / 86400, hours = (seconds / 3600) % 24, mins = (seconds / 60) % 60,
            secs = seconds % 60;
  std::string out;
  if (days > 0) {
    AppendFormat(&out, "%lld-%02lld:%02lld:%02lld", days, hours, mins, secs);
  } else if (hours > 0) {
    AppendFormat(&out, "%lld:%02lld:%02lld", hours, mins, secs);
  } else {
    AppendFormat(&out, "%lld:%02lld", mins, secs);
  }
  return out;
}

std::string FormatHms(int64_t seconds) {
  if (seconds < 0) return "INVALID";
  long long days = seconds / 86400, hours = (seconds / 3600) % 24, mins = (seconds / 60) % 60,
            secs = seconds % 60;
  std::string out;
  if (days > 0) {
    AppendFormat(&out, "%lld-%02lld:%02lld:%02lld", days, hours, mins, secs);
  } else {
    AppendFormat(&out, "%02lld:%02lld:%02lld", hours, mins, secs);
  }
  return out;
}

Result<uint64_t> ParseMemoryMB(std::string_view text) {
  const char* kBad = "Invalid memory specification";
  std::string_view s = Trim(text);
  size_t digits = 0;
  while (digits < s.size() && IsDigit(s[digits])) ++digits;
  if (digits == 0) return InvalidArgument(kBad);
  std::string_view unit = s.substr(digits);
  uint64_t mult_kb = 1024;  // multiplier expressed in KiB so K can round up
  if (!unit.empty()) {
    switch (Lower(unit[0])) {
      case 'k':
        mult_kb = 1;
        break;
      case 'm':
        mult_kb = 1024;
        break;
      case 'g':
        mult_kb = 1024ull * 1024;
        break;
      case 't':
        mult_kb = 1024ull * 1024 * 1024;
        break;
      default:
        return InvalidArgument(kBad);
    }
    unit.remove_prefix(1);
    if (!unit.empty() && Lower(unit[0]) == 'b') unit.remove_prefix(1);
    if (!unit.empty()) return InvalidArgument(kBad);
  }
  uint64_t v = 0;
  const uint64_t kMax = std::numeric_limits<uint64_t>::max() / 2;
  if (!ParseUnsigned(s.substr(0, digits), kMax / mult_kb, &v)) return InvalidArgument(kBad);
  uint64_t kb = v * mult_kb;
  return (kb + 1023) / 1024;
}

std::string FormatMemoryCompact(uint64_t mb) {
  if (mb == 0) return "0";
  static const char kUnits[] = {'M', 'G', 'T', 'P', 'E'};
  size_t u = 0;
  while (mb % 1024 == 0 && u + 1 < sizeof kUnits) {
    mb /= 1024;
    ++u;
  }
  std::string out = std::to_string(mb);
  out.push_back(kUnits[u]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// --begin

namespace {

const char kBadBegin[] = "Invalid time specification";

bool LocalTm(int64_t t, std::tm* tm) {
  std::time_t tt = static_cast<std::time_t>(t);
  return localtime_r(&tt, tm) != nullptr;
}

int64_t MakeLocal(int year, int mon, int mday, int hour, int min, int sec) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon;
  tm.tm_mday = mday;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  tm.tm_isdst = -1;
  return static_cast<int64_t>(std::mktime(&tm));
}

// "HH:MM[:SS]" with an optional AM/PM suffix, or a named time of day.
bool ParseTimeOfDay(std::string_view s, int* h, int* m, int* sec) {
  if (IEquals(s, "midnight")) {
    *h = 0, *m = 0, *sec = 0;
    return true;
  }
  if (IEquals(s, "noon")) {
    *h = 12, *m = 0, *sec = 0;
    return true;
  }
  if (IEquals(s, "fika")) {
    *h = 15, *m = 0, *sec = 0;
    return true;
  }
  if (IEquals(s, "teatime")) {
    *h = 16, *m = 0, *sec = 0;
    return true;
  }
  int ampm = 0;  // 1 = AM, 2 = PM
  if (s.size() > 2) {
    std::string_view suf = s.substr(s.size() - 2);
    if (IEquals(suf, "am")) ampm = 1;
    if (IEquals(suf, "pm")) ampm = 2;
    if (ampm) s = Trim(s.substr(0, s.size() - 2));
  }
  std::string_view f[3];
  int n = SplitFields(s, ':', f, 3);
  if (n < 1 || (n == 1 && ampm == 0)) return false;
  uint64_t v[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    if (f[i].empty() || f[i].size() > 2 || !ParseUnsigned(f[i], 99, &v[i])) return false;
  }
  if (v[1] > 59 || v[2] > 59) return false;
  if (ampm) {
    if (v[0] < 1 || v[0] > 12) return false;
    v[0] %= 12;
    if (ampm == 2) v[0] += 12;
  } else if (v[0] > 23) {
    return false;
  }
  *h = static_cast<int>(v[0]);
  *m = static_cast<int>(v[1]);
  *sec = static_cast<int>(v[2]);
  return true;
}

bool ParseInt(std::string_view s, int lo, int hi, int* out) {
  uint64_t v = 0;
  if (!ParseUnsigned(s, 1'000'000, &v) || v < static_cast<uint64_t>(lo) ||
      v > static_cast<uint64_t>(hi)) {
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

int YearFrom(std::string_view s, bool* ok) {
  int y = 0;
  if (s.size() == 2 && ParseInt(s, 0, 99, &y)) return 2000 + y;
  if (s.size() == 4 && ParseInt(s, 1970, 9999, &y)) return y;
  *ok = false;
  return 0;
}

// Dates: "MMDD[YY]", "MM/DD[/YY]", "MM.DD[.YY]", "YYYY-MM-DD". year = -1 when not given.
bool ParseDate(std::string_view s, int* year, int* mon, int* mday) {
  *year = -1;
  bool ok = true;
  std::string_view f[3];
  if (s.find('-') != std::string_view::npos) {
    if (SplitFields(s, '-', f, 3) != 3 || f[0].size() != 4) return false;
    *year = YearFrom(f[0], &ok);
    return ok && f[1].size() <= 2 && f[2].size() <= 2 && ParseInt(f[1], 1, 12, mon) &&
           ParseInt(f[2], 1, 31, mday);
  }
  char sep = s.find('/') != std::string_view::npos   ? '/'
             : s.find('.') != std::string_view::npos ? '.'
                                                     : 0;
  if (sep) {
    int n = SplitFields(s, sep, f, 3);
    if (n < 2 || f[0].size() > 2 || f[1].size() > 2) return false;
    if (!ParseInt(f[0], 1, 12, mon) || !ParseInt(f[1], 1, 31, mday)) return false;
    if (n == 3) *year = YearFrom(f[2], &ok);
    return ok;
  }
  if (s.size() != 4 && s.size() != 6) return false;
  if (!ParseInt(s.substr(0, 2), 1, 12, mon) || !ParseInt(s.substr(2, 2), 1, 31, mday)) {
    return false;
  }
  if (s.size() == 6) *year = YearFrom(s.substr(4, 2), &ok);
  return ok;
}

bool ParseRelative(std::string_view s, int64_t now, int64_t* out) {
  // s is what follows "now": "", "+60", "+1hour", "+ 2 days".
  if (s.empty()) {
    *out = now;
    return true;
  }
  if (s[0] != '+') return false;
  s = Trim(s.substr(1));
  size_t d = 0;
  while (d < s.size() && IsDigit(s[d])) ++d;
  uint64_t count = 0;
  if (!ParseUnsigned(s.substr(0, d), 100'000'000'000ull, &count)) return false;
  std::string_view unit = Trim(s.substr(d));
  int64_t mult;
  auto is = [&](std::initializer_list<std::string_view> names) {
    for (std::string_view n : names) {
      if (IEquals(unit, n)) return true;
    }
    return false;
  };
  if (unit.empty() || is({"s", "sec", "secs", "second", "seconds"})) {
    mult = 1;
  } else if (is({"m", "min", "mins", "minute", "minutes"})) {
    mult = 60;
  } else if (is({"h", "hour", "hours"})) {
    mult = 3600;
  } else if (is({"d", "day", "days"})) {
    mult = 86400;
  } else if (is({"w", "week", "weeks"})) {
    mult = 7 * 86400;
  } else {
    return false;
  }
  *out = now + static_cast<int64_t>(count) * mult;
  return true;
}

}  // namespace

Result<int64_t> ParseBeginTime(std::string_view text, int64_t now) {
  std::string_view s = Trim(text);
  if (s.empty()) return InvalidArgument(kBadBegin);
  if (s.size() >= 3 && IEquals(s.substr(0, 3), "now")) {
    int64_t t = 0;
    if (ParseRelative(Trim(s.substr(3)), now, &t)) return t;
    return InvalidArgument(kBadBegin);
  }
  std::tm now_tm{};
  if (!LocalTm(now, &now_tm)) return InvalidArgument(kBadBegin);
  const int cy = now_tm.tm_year + 1900, cm = now_tm.tm_mon, cd = now_tm.tm_mday;
  if (IEquals(s, "today")) return MakeLocal(cy, cm, cd, 0, 0, 0);
  if (IEquals(s, "tomorrow")) return MakeLocal(cy, cm, cd + 1, 0, 0, 0);

  int h = 0, m = 0, sec = 0;
  if (ParseTimeOfDay(s, &h, &m, &sec)) {
    int64_t t = MakeLocal(cy, cm, cd, h, m, sec);
    if (t < now) t = MakeLocal(cy, cm, cd + 1, h, m, sec);
    return t;
  }

  // A date, optionally followed by "THH:MM[:SS]".
  std::string_view date = s, tod;
  size_t tpos = s.find_first_of("Tt");
  if (tpos != std::string_view::npos) {
    date = s.substr(0, tpos);
    tod = s.substr(tpos + 1);
    if (!ParseTimeOfDay(tod, &h, &m, &sec)) return InvalidArgument(kBadBegin);
  }
  int year = -1, mon = 0, mday = 0;
  if (!ParseDate(date, &year, &mon, &mday)) return InvalidArgument(kBadBegin);
  --mon;  // tm_mon is 0-based
  if (year < 0) {
    year = cy;
    // Without a year, a date already past this year means next year.
    if (mon < cm || (mon == cm && mday < cd)) ++year;
  }
  int64_t t = MakeLocal(year, mon, mday, h, m, sec);
  // Reject dates mktime had to normalise ("02/31").
  std::tm check{};
  if (t == -1 || !LocalTm(t, &check) || check.tm_mday != mday || check.tm_mon != mon) {
    return InvalidArgument(kBadBegin);
  }
  return t;
}

std::string FormatTimestamp(int64_t unix_seconds) {
  if (unix_seconds <= 0) return "Unknown";
  std::tm tm{};
  if (!LocalTm(unix_seconds, &tm)) return "Unknown";
  char buf[64];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(buf, n);
}

// ---------------------------------------------------------------------------------------------
// Signals

namespace {

struct SignalEntry {
  const char* name;
  int number;
};

// Canonical names first: SignalName returns the first match.
constexpr SignalEntry kSignals[] = {
    {"HUP", SIGHUP},
    {"INT", SIGINT},
    {"QUIT", SIGQUIT},
    {"ILL", SIGILL},
    {"TRAP", SIGTRAP},
    {"ABRT", SIGABRT},
    {"BUS", SIGBUS},
    {"FPE", SIGFPE},
    {"KILL", SIGKILL},
    {"USR1", SIGUSR1},
    {"SEGV", SIGSEGV},
    {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE},
    {"ALRM", SIGALRM},
    {"TERM", SIGTERM},
#ifdef SIGSTKFLT
    {"STKFLT", SIGSTKFLT},
#endif
    {"CHLD", SIGCHLD},
    {"CONT", SIGCONT},
    {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP},
    {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU},
    {"URG", SIGURG},
    {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM},
    {"PROF", SIGPROF},
    {"WINCH", SIGWINCH},
    {"IO", SIGIO},
#ifdef SIGPWR
    {"PWR", SIGPWR},
#endif
    {"SYS", SIGSYS},
    // Aliases.
    {"IOT", SIGABRT},
    {"CLD", SIGCHLD},
    {"POLL", SIGIO},
};

}  // namespace

Result<int> ParseSignal(std::string_view text) {
  const char* kBad = "Invalid signal specification";
  std::string_view s = Trim(text);
  if (s.empty()) return InvalidArgument(kBad);
  if (IsDigit(s[0])) {
    uint64_t v = 0;
    if (!ParseUnsigned(s, 1000, &v) || v < 1 || v > 64) return InvalidArgument(kBad);
    return static_cast<int>(v);
  }
  if (s.size() > 3 && IEquals(s.substr(0, 3), "SIG")) s.remove_prefix(3);
  for (const SignalEntry& e : kSignals) {
    if (IEquals(s, e.name)) return e.number;
  }
  return InvalidArgument(kBad);
}

std::string SignalName(int sig) {
  for (const SignalEntry& e : kSignals) {
    if (e.number == sig) return e.name;
  }
  return std::to_string(sig);
}

bool ParseGresCount(std::string_view s, uint64_t* out) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  uint64_t mult = 1;
  switch (std::toupper(static_cast<unsigned char>(s.back()))) {
    case 'K':
      mult = 1ull << 10;
      break;
    case 'M':
      mult = 1ull << 20;
      break;
    case 'G':
      mult = 1ull << 30;
      break;
    case 'T':
      mult = 1ull << 40;
      break;
    case 'P':
      mult = 1ull << 50;
      break;
    default:
      break;
  }
  if (mult != 1) s.remove_suffix(1);
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v > UINT64_MAX / mult) return false;
  *out = v * mult;
  return true;
}

}  // namespace shoal
