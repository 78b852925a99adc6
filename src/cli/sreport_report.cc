#include "cli/sreport_report.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>

#include "cli/format_fields.h"
#include "cli/sacct_options.h"
#include "common/units.h"

namespace shoal::cli {
namespace {

bool IPrefixN(std::string_view word, std::string_view full, size_t min_len) {
  // Slurm's xstrncasecmp(full, word, MAX(len(word), min_len)).
  size_t n = std::max(word.size(), min_len);
  if (n > full.size() || word.size() < n) return false;
  return fmt::Lower(word.substr(0, n)) == fmt::Lower(full.substr(0, n));
}

uint64_t Overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  int64_t lo = std::max(a0, b0), hi = std::min(a1, b1);
  return hi > lo ? static_cast<uint64_t>(hi - lo) : 0;
}

int64_t CpusOf(std::string_view tres) {
  for (const std::string& item : fmt::SplitList(tres)) {
    if (item.rfind("cpu=", 0) == 0) return std::strtoll(item.c_str() + 4, nullptr, 10);
  }
  return 0;
}

// Slurm's report window: rounded to the nearest hour, at least an hour long; defaults
// yesterday 00:00 to today 00:00.
int64_t RoundToHour(int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  if (!localtime_r(&tt, &tm)) return t;
  if (tm.tm_sec >= 30) tm.tm_min++;
  if (tm.tm_min >= 30) tm.tm_hour++;
  tm.tm_min = tm.tm_sec = 0;
  tm.tm_isdst = -1;
  return static_cast<int64_t>(std::mktime(&tm));
}

bool IsPer(SreportTime t) {
  return t == SreportTime::kSecsPer || t == SreportTime::kMinsPer || t == SreportTime::kHoursPer;
}

std::string TimeStr(uint64_t value, uint64_t total, SreportTime t) {
  double v = static_cast<double>(value);
  double pct = v / static_cast<double>(std::max<uint64_t>(total, 1)) * 100.0;
  char buf[96];
  switch (t) {
    case SreportTime::kSecs:
      std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(value));
      break;
    case SreportTime::kHours:
      std::snprintf(buf, sizeof buf, "%.0lf", v / 3600);
      break;
    case SreportTime::kPercent:
      std::snprintf(buf, sizeof buf, "%.2lf%%", pct);
      break;
    case SreportTime::kSecsPer:
      std::snprintf(buf, sizeof buf, "%llu(%.2lf%%)", static_cast<unsigned long long>(value), pct);
      break;
    case SreportTime::kMinsPer:
      std::snprintf(buf, sizeof buf, "%.0lf(%.2lf%%)", v / 60, pct);
      break;
    case SreportTime::kHoursPer:
      std::snprintf(buf, sizeof buf, "%.0lf(%.2lf%%)", v / 3600, pct);
      break;
    case SreportTime::kMins:
    default:
      std::snprintf(buf, sizeof buf, "%.0lf", v / 60);
      break;
  }
  return buf;
}

// Usage columns are as wide as the largest raw value needs: 8, plus one per digit past 8.
int UsageWidth(uint64_t max_secs, SreportTime t) {
  int w = 8;
  for (uint64_t order = 100000000; order < 10000000000000000000ull / 10 && max_secs >= order;
       order *= 10)
    ++w;
  return IsPer(t) ? w + 9 : w;
}

struct Col {
  int type;
  std::string name;
  int width;
};

void AppendCell(std::string& out, const std::string& v, int width, bool last, int parsable) {
  if (parsable) {
    out += v;
    if (!(last && parsable == 2)) out += '|';
    return;
  }
  int aw = width < 0 ? -width : width;
  std::string s = v;
  if (s.size() > static_cast<size_t>(aw)) {
    s.resize(static_cast<size_t>(aw));
    if (aw > 0) s.back() = '+';
  }
  std::string pad(static_cast<size_t>(aw) - s.size(), ' ');
  out += width < 0 ? s + pad : pad + s;
  out += ' ';
}

void AppendHeader(std::string& out, const std::vector<Col>& cols, int parsable) {
  for (size_t i = 0; i < cols.size(); ++i) {
    bool last = i + 1 == cols.size();
    if (parsable) {
      out += cols[i].name;
      if (!(last && parsable == 2)) out += '|';
      continue;
    }
    int w = cols[i].width, aw = w < 0 ? -w : w;
    std::string n = cols[i].name.substr(0, static_cast<size_t>(aw));
    std::string pad(static_cast<size_t>(aw) - n.size(), ' ');
    out += w < 0 ? n + pad : pad + n;
    out += ' ';
  }
  out += '\n';
  if (parsable) return;
  for (const Col& c : cols) {
    out.append(static_cast<size_t>(c.width < 0 ? -c.width : c.width), '-');
    out += ' ';
  }
  out += '\n';
}

std::string Banner(const std::string& title, const SreportOptions& o, bool secs) {
  std::string line(80, '-');
  std::string out =
      line + "\n" + title + " " + FormatTimestamp(o.start) + " - " + FormatTimestamp(o.end - 1);
  if (secs) out += " (" + std::to_string(o.end - o.start) + " secs)";
  out += "\n";
  if (o.time == SreportTime::kPercent)
    out += std::string("Usage reported in ") + SreportTimeName(o.time) + "\n";
  else
    out += std::string("Usage reported in CPU ") + SreportTimeName(o.time) + "\n";
  return out + line + "\n";
}

enum CuField {
  kCuCluster,
  kCuCount,
  kCuAlloc,
  kCuDown,
  kCuIdle,
  kCuPdown,
  kCuOver,
  kCuPlan,
  kCuReported,
  kCuName,
  kCuEnergy
};

Result<std::vector<Col>> ClusterUtilCols(const std::string& format, SreportTime t) {
  std::vector<Col> cols;
  bool per = IsPer(t);
  for (std::string item : fmt::SplitList(format)) {
    int newlen = 0;
    size_t pct = item.find('%');
    if (pct != std::string::npos) {
      newlen = std::atoi(item.c_str() + pct + 1);
      item.resize(pct);
    }
    Col c{};
    if (IPrefixN(item, "allocated", 2))
      c = {kCuAlloc, "Allocated", per ? 20 : 12};
    else if (IPrefixN(item, "Cluster", 2))
      c = {kCuCluster, "Cluster", 9};
    else if (IPrefixN(item, "down", 1))
      c = {kCuDown, "Down", per ? 18 : 10};
    else if (IPrefixN(item, "idle", 1))
      c = {kCuIdle, "Idle", per ? 20 : 12};
    else if (IPrefixN(item, "overcommitted", 1))
      c = {kCuOver, "Over Comm", per ? 18 : 9};
    else if (IPrefixN(item, "PlannedDown", 2))
      c = {kCuPdown, "PLND Down", per ? 18 : 10};
    else if (IPrefixN(item, "reported", 3))
      c = {kCuReported, "Reported", per ? 20 : 12};
    else if (IPrefixN(item, "reserved", 3) || IPrefixN(item, "planned", 4))
      c = {kCuPlan, "Planned", per ? 18 : 9};
    else if (IPrefixN(item, "TresCount", 5) || IPrefixN(item, "cpucount", 2) ||
             IPrefixN(item, "count", 2))
      c = {kCuCount, "TRES Count", 10};
    else if (IPrefixN(item, "TresName", 5))
      c = {kCuName, "TRES Name", 14};
    else if (IPrefixN(item, "Energy", 1))
      c = {kCuEnergy, "Energy", per ? 18 : 10};
    else
      return InvalidArgument(" Unknown field '" + item + "'");
    if (newlen) c.width = newlen;
    cols.push_back(c);
  }
  return cols;
}

std::string ClusterUtilization(const pb::AcctUsageResponse& usage, const SreportOptions& o,
                               std::vector<Col> cols) {
  std::vector<ClusterUsage> rows = ComputeClusterUsage(usage, o.start, o.end);
  ClusterUsage mx;
  for (const ClusterUsage& r : rows) {
    mx.alloc = std::max(mx.alloc, r.alloc);
    mx.down = std::max(mx.down, r.down);
    mx.idle = std::max(mx.idle, r.idle);
    mx.planned = std::max(mx.planned, r.planned);
    mx.over = std::max(mx.over, r.over);
    mx.planned_down = std::max(mx.planned_down, r.planned_down);
    mx.reported = std::max(mx.reported, r.reported);
  }
  // Column widths follow the largest value, as Slurm sizes them.
  for (Col& c : cols) {
    switch (c.type) {
      case kCuAlloc:
        c.width = UsageWidth(mx.alloc, o.time);
        break;
      case kCuDown:
        c.width = UsageWidth(mx.down, o.time);
        break;
      case kCuIdle:
        c.width = UsageWidth(mx.idle, o.time);
        break;
      case kCuPlan:
        c.width = UsageWidth(mx.planned, o.time);
        break;
      case kCuOver:
        c.width = UsageWidth(mx.over, o.time);
        break;
      case kCuPdown:
        c.width = UsageWidth(mx.planned_down, o.time);
        break;
      case kCuReported:
        c.width = UsageWidth(mx.reported, o.time);
        break;
      case kCuEnergy:
        c.width = UsageWidth(mx.alloc, o.time);
        break;
      default:
        break;
    }
  }
  std::string out;
  if (!o.no_header) {
    out += Banner("Cluster Utilization", o, false);
    AppendHeader(out, cols, o.parsable);
  }
  uint64_t window = static_cast<uint64_t>(o.end - o.start);
  for (const ClusterUsage& r : rows) {
    for (size_t i = 0; i < cols.size(); ++i) {
      std::string v;
      uint64_t total = r.reported;
      switch (cols[i].type) {
        case kCuCluster:
          v = r.cluster;
          break;
        case kCuCount:
          v = std::to_string(r.cpus);
          break;
        case kCuName:
          v = "cpu";
          break;
        case kCuAlloc:
          v = TimeStr(r.alloc, total, o.time);
          break;
        case kCuDown:
          v = TimeStr(r.down, total, o.time);
          break;
        case kCuIdle:
          v = TimeStr(r.idle, total, o.time);
          break;
        case kCuPlan:
          v = TimeStr(r.planned, total, o.time);
          break;
        case kCuOver:
          v = TimeStr(r.over, total, o.time);
          break;
        case kCuPdown:
          v = TimeStr(r.planned_down, total, o.time);
          break;
        case kCuReported:
          v = TimeStr(r.reported, window * r.cpus, o.time);
          break;
        case kCuEnergy:
          v = TimeStr(0, 0, o.time);
          break;
      }
      AppendCell(out, v, cols[i].width, i + 1 == cols.size(), o.parsable);
    }
    out += '\n';
  }
  return out;
}

enum UtField { kUtAccount, kUtCluster, kUtEnergy, kUtLogin, kUtProper, kUtName, kUtUsed };

Result<std::vector<Col>> UserCols(const std::string& format, SreportTime t) {
  std::vector<Col> cols;
  bool per = IsPer(t);
  for (std::string item : fmt::SplitList(format)) {
    int newlen = 0;
    size_t pct = item.find('%');
    if (pct != std::string::npos) {
      newlen = std::atoi(item.c_str() + pct + 1);
      item.resize(pct);
    }
    Col c{};
    if (IPrefixN(item, "Accounts", 1))
      c = {kUtAccount, "Account", 15};
    else if (IPrefixN(item, "Cluster", 1))
      c = {kUtCluster, "Cluster", 9};
    else if (IPrefixN(item, "Energy", 1))
      c = {kUtEnergy, "Energy", per ? 18 : 10};
    else if (IPrefixN(item, "Login", 1))
      c = {kUtLogin, "Login", 9};
    else if (IPrefixN(item, "Proper", 1))
      c = {kUtProper, "Proper Name", 15};
    else if (IPrefixN(item, "TresName", 5))
      c = {kUtName, "TRES Name", 14};
    else if (IPrefixN(item, "Used", 1))
      c = {kUtUsed, "Used", per ? 18 : 10};
    else
      return InvalidArgument(" Unknown field '" + item + "'");
    if (newlen) c.width = newlen;
    cols.push_back(c);
  }
  return cols;
}

struct UserUse {
  std::string user;
  std::vector<std::string> accounts;
  uint64_t secs = 0;
};

// Per cluster: usage by (user, account), or by user with Group.
std::map<std::string, std::vector<UserUse>> UserUsage(const pb::AcctUsageResponse& usage,
                                                      const SreportOptions& o) {
  std::map<std::string, std::map<std::string, UserUse>> by;
  int64_t now_end = o.end;
  for (const pb::AcctJob& j : usage.jobs()) {
    if (j.start_time() <= 0) continue;
    int64_t end = j.end_time() > 0 ? j.end_time() : now_end;
    uint64_t secs = Overlap(j.start_time(), end, o.start, o.end) * j.alloc_cpus();
    std::string user = j.user().empty() ? std::to_string(j.uid()) : j.user();
    std::string key = o.group ? user : user + "\n" + j.account();
    UserUse& u = by[j.cluster()][key];
    u.user = user;
    if (std::find(u.accounts.begin(), u.accounts.end(), j.account()) == u.accounts.end())
      u.accounts.push_back(j.account());
    u.secs += secs;
  }
  std::map<std::string, std::vector<UserUse>> out;
  for (auto& [cluster, m] : by) {
    std::vector<UserUse>& v = out[cluster];
    for (auto& [k, u] : m) v.push_back(u);
    std::stable_sort(v.begin(), v.end(),
                     [](const UserUse& a, const UserUse& b) { return a.secs > b.secs; });
  }
  return out;
}

std::string UserTop(const pb::AcctUsageResponse& usage, const SreportOptions& o,
                    std::vector<Col> cols, const SreportLookups& lk) {
  auto per_cluster = UserUsage(usage, o);
  uint64_t max_used = 0;
  for (auto& [c, v] : per_cluster)
    for (const UserUse& u : v) max_used = std::max(max_used, u.secs);
  for (Col& c : cols) {
    if (c.type == kUtUsed) c.width = UsageWidth(max_used, o.time);
    if (c.type == kUtEnergy) c.width = UsageWidth(0, o.time);
  }
  std::string out;
  if (!o.no_header) {
    out += Banner("Top " + std::to_string(o.top_count) + " Users", o, true);
    AppendHeader(out, cols, o.parsable);
  }
  for (auto& [cluster, v] : per_cluster) {
    // Percentages are of the cluster's capacity over the window.
    uint64_t total = 0;
    for (const pb::AcctCluster& cl : usage.clusters())
      if (cl.name() == cluster)
        total = static_cast<uint64_t>(std::max<int64_t>(0, CpusOf(cl.tres()))) *
                static_cast<uint64_t>(o.end - o.start);
    uint32_t count = 0;
    for (const UserUse& u : v) {
      if (count++ >= o.top_count) break;
      for (size_t i = 0; i < cols.size(); ++i) {
        std::string val;
        switch (cols[i].type) {
          case kUtAccount:
            for (size_t a = 0; a < u.accounts.size(); ++a) val += (a ? ", " : "") + u.accounts[a];
            break;
          case kUtCluster:
            val = cluster;
            break;
          case kUtEnergy:
            val = TimeStr(0, total, o.time);
            break;
          case kUtLogin:
            val = u.user;
            break;
          case kUtProper:
            val = lk.proper_name ? lk.proper_name(u.user) : "";
            break;
          case kUtName:
            val = "cpu";
            break;
          case kUtUsed:
            val = TimeStr(u.secs, total, o.time);
            break;
        }
        AppendCell(out, val, cols[i].width, i + 1 == cols.size(), o.parsable);
      }
      out += '\n';
    }
  }
  return out;
}

}  // namespace

Result<SreportTime> ParseSreportTime(std::string_view text) {
  if (IPrefixN(text, "SecPer", 6)) return SreportTime::kSecsPer;
  if (IPrefixN(text, "MinPer", 6)) return SreportTime::kMinsPer;
  if (IPrefixN(text, "HourPer", 6)) return SreportTime::kHoursPer;
  if (IPrefixN(text, "Seconds", 1)) return SreportTime::kSecs;
  if (IPrefixN(text, "Minutes", 1)) return SreportTime::kMins;
  if (IPrefixN(text, "Hours", 1)) return SreportTime::kHours;
  if (IPrefixN(text, "Percent", 1)) return SreportTime::kPercent;
  return InvalidArgument("unknown time format " + std::string(text));
}

const char* SreportTimeName(SreportTime t) {
  switch (t) {
    case SreportTime::kSecs:
      return "Seconds";
    case SreportTime::kHours:
      return "Hours";
    case SreportTime::kPercent:
      return "Percentage of Total";
    case SreportTime::kSecsPer:
      return "Seconds/Percentage of Total";
    case SreportTime::kMinsPer:
      return "Minutes/Percentage of Total";
    case SreportTime::kHoursPer:
      return "Hours/Percentage of Total";
    case SreportTime::kMins:
    default:
      return "Minutes";
  }
}

Result<SreportOptions> ParseSreportArgs(int argc_in, char** argv_in, int64_t now) {
  SreportOptions o;
  // Options may come anywhere, as getopt permutes them (`sreport cluster utilization -t
  // percent`): move them in front of the report words, keeping each order.
  std::vector<std::string> options, words;
  for (int k = 1; k < argc_in; ++k) {
    std::string a = argv_in[k];
    if (a == "--") {
      for (++k; k < argc_in; ++k) words.emplace_back(argv_in[k]);
      break;
    }
    if (a.size() > 1 && a[0] == '-') {
      options.push_back(a);
      bool takes_value = a == "-t" || a == "-M" || a == "-T" || a == "--cluster" ||
                         a == "--clusters" || a == "--time" || a == "--tres";
      if (takes_value && k + 1 < argc_in) options.emplace_back(argv_in[++k]);
    } else {
      words.push_back(a);
    }
  }
  std::vector<std::string> ordered = {argv_in[0]};
  ordered.insert(ordered.end(), options.begin(), options.end());
  ordered.insert(ordered.end(), words.begin(), words.end());
  std::vector<char*> args;
  for (auto& a : ordered) args.push_back(a.data());
  args.push_back(nullptr);
  int argc = static_cast<int>(ordered.size());
  char** argv = args.data();
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a.empty() || a[0] != '-') break;
    auto need = [&](const std::string& opt) -> Result<std::string> {
      if (i + 1 >= argc)
        return InvalidArgument("sreport: option requires an argument -- '" + opt + "'");
      return std::string(argv[++i]);
    };
    if (a == "-n" || a == "--noheader") {
      o.no_header = true;
    } else if (a == "-p" || a == "--parsable") {
      o.parsable = 1;
    } else if (a == "-P" || a == "--parsable2") {
      o.parsable = 2;
    } else if (a == "-a" || a == "--all_clusters") {
      o.all_clusters = true;
    } else if (a == "-h" || a == "--help" || a == "--usage") {
      o.help = true;
    } else if (a == "-V" || a == "--version") {
      o.version = true;
    } else if (a == "-Q" || a == "--quiet" || a == "-v" || a == "--verbose" || a == "--local" ||
               a == "--federation") {
    } else if (a == "-t" || a.rfind("-t", 0) == 0 || a.rfind("--time=", 0) == 0) {
      std::string v;
      if (a == "-t") {
        auto n = need("t");
        if (!n.ok()) return n.status();
        v = *n;
      } else {
        v = a.rfind("--time=", 0) == 0 ? a.substr(7) : a.substr(2);
      }
      auto t = ParseSreportTime(v);
      if (!t.ok()) return t.status();
      o.time = *t;
    } else if (a == "-M" || a.rfind("--cluster", 0) == 0 || a.rfind("-M", 0) == 0) {
      std::string v;
      if (a == "-M" || a == "--cluster" || a == "--clusters") {
        auto n = need("M");
        if (!n.ok()) return n.status();
        v = *n;
      } else {
        size_t eq = a.find('=');
        v = eq != std::string::npos ? a.substr(eq + 1) : a.substr(2);
      }
      for (const std::string& c : fmt::SplitList(v)) o.clusters.push_back(c);
    } else if (a == "-T" || a.rfind("--tres", 0) == 0) {
      if (a == "-T" && !need("T").ok())
        return InvalidArgument("sreport: option requires an argument -- 'T'");
    } else {
      return InvalidArgument("sreport: unrecognized option '" + a +
                             "'\nTry \"sreport --help\" for more information");
    }
  }
  if (o.help || o.version) return o;
  if (i >= argc)
    return InvalidArgument("sreport: interactive mode is not supported; give a report");
  std::string kind = argv[i++];
  std::string report = i < argc ? argv[i++] : "";
  if (IPrefixN(kind, "cluster", 2)) {
    if (IPrefixN(report, "Utilization", 2))
      o.report = SreportReport::kClusterUtilization;
    else if (IPrefixN(report, "AccountUtilizationByUser", 1))
      o.report = SreportReport::kClusterAccountByUser;
  } else if (IPrefixN(kind, "user", 1)) {
    if (IPrefixN(report, "TopUsage", 1)) o.report = SreportReport::kUserTop;
  }
  if (o.report == SreportReport::kNone)
    return InvalidArgument("Not valid report " + report + "\nValid " + kind +
                           " reports are, \"AccountUtilizationByUser\", \"Utilization\" and "
                           "\"TopUsage\"");
  bool start_set = false, end_set = false;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    std::string key = a.substr(0, eq), val = eq == std::string::npos ? "" : a.substr(eq + 1);
    bool has_val = eq != std::string::npos;
    if (!has_val && IPrefixN(key, "all_clusters", 1)) {
      o.all_clusters = true;
    } else if (!has_val && IPrefixN(key, "group", 1)) {
      o.group = true;
    } else if (!has_val && IPrefixN(key, "Tree", 4)) {
    } else if (has_val && IPrefixN(key, "Clusters", 1)) {
      for (const std::string& c : fmt::SplitList(val)) o.clusters.push_back(c);
    } else if (has_val && (IPrefixN(key, "Accounts", 2) || IPrefixN(key, "Acct", 4))) {
      for (const std::string& c : fmt::SplitList(val)) o.accounts.push_back(c);
    } else if (has_val && IPrefixN(key, "End", 1)) {
      auto t = ParseSacctTime(val, now);
      if (!t.ok()) return t.status();
      o.end = *t;
      end_set = true;
    } else if (has_val && IPrefixN(key, "Start", 1)) {
      auto t = ParseSacctTime(val, now);
      if (!t.ok()) return t.status();
      o.start = *t;
      start_set = true;
    } else if (has_val && IPrefixN(key, "Format", 1)) {
      o.format += (o.format.empty() ? "" : ",") + val;
    } else if (has_val && IPrefixN(key, "TopCount", 1)) {
      char* endp = nullptr;
      long n = std::strtol(val.c_str(), &endp, 10);
      if (val.empty() || *endp || n < 0)
        return InvalidArgument("Invalid value for TopCount (" + val + ")");
      o.top_count = static_cast<uint32_t>(n);
    } else if (!has_val || IPrefixN(key, "Users", 1)) {
      for (const std::string& c : fmt::SplitList(has_val ? val : key)) o.users.push_back(c);
    } else {
      return InvalidArgument(" Unknown condition: " + a + "\nUse keyword set to modify value");
    }
  }
  int64_t midnight = LocalMidnight(now);
  // An end at or past now ends now, exactly (rounding it to an hour would drop or invent the
  // minutes of the current hour); other ends are rounded to the hour as Slurm's are.
  o.end = !end_set ? midnight : o.end >= now ? now : RoundToHour(o.end);
  if (start_set) {
    o.start = RoundToHour(o.start);
  } else {
    std::time_t tt = static_cast<std::time_t>(midnight);
    std::tm tm{};
    localtime_r(&tt, &tm);
    tm.tm_mday -= 1;
    tm.tm_isdst = -1;
    o.start = static_cast<int64_t>(std::mktime(&tm));
  }
  if (o.end - o.start < 3600) o.end = o.start + 3600;
  return o;
}

std::vector<ClusterUsage> ComputeClusterUsage(const pb::AcctUsageResponse& usage, int64_t start,
                                              int64_t end) {
  std::vector<ClusterUsage> out;
  uint64_t window = end > start ? static_cast<uint64_t>(end - start) : 0;
  for (const pb::AcctCluster& cl : usage.clusters()) {
    ClusterUsage u;
    u.cluster = cl.name();
    u.cpus = static_cast<uint64_t>(std::max<int64_t>(0, CpusOf(cl.tres())));
    u.reported = u.cpus * window;
    std::map<std::string, uint64_t> resv_used;  // reservation name -> job CPU-seconds inside it
    for (const pb::AcctJob& j : usage.jobs()) {
      if (j.cluster() != cl.name()) continue;
      if (j.start_time() > 0) {
        int64_t jend = j.end_time() > 0 ? j.end_time() : end;
        uint64_t secs = Overlap(j.start_time(), jend, start, end) * j.alloc_cpus();
        u.alloc += secs;
        if (!j.reservation().empty()) resv_used[j.reservation()] += secs;
      }
      // Time eligible jobs spent waiting inside the window.
      if (j.eligible_time() > 0) {
        int64_t until =
            j.start_time() > 0 ? j.start_time() : (j.end_time() > 0 ? j.end_time() : end);
        uint32_t cpus = j.req_cpus() ? j.req_cpus() : 1;
        u.over += Overlap(j.eligible_time(), until, start, end) * cpus;
      }
    }
    for (const pb::AcctEvent& e : usage.events()) {
      if (e.cluster() != cl.name() || e.node_name().empty()) continue;
      int64_t eend = e.time_end() > 0 ? e.time_end() : end;
      u.down += Overlap(e.time_start(), eend, start, end) *
                static_cast<uint64_t>(std::max<int64_t>(0, CpusOf(e.tres())));
    }
    for (const pb::AcctReservation& r : usage.reservations()) {
      if (r.cluster() != cl.name()) continue;
      std::string flags = fmt::Upper(r.flags());
      if (flags.find("IGNORE_JOBS") != std::string::npos) continue;
      uint64_t secs = Overlap(r.time_start(), r.time_end() > 0 ? r.time_end() : end, start, end) *
                      static_cast<uint64_t>(std::max<int64_t>(0, CpusOf(r.tres())));
      if (flags.find("MAINT") != std::string::npos) {
        u.planned_down += secs;
      } else {
        uint64_t used = resv_used[r.name()];
        if (secs > used) u.alloc += secs - used;  // an idle reservation counts as allocated
      }
    }
    // Nothing may exceed what the cluster had.
    u.alloc = std::min(u.alloc, u.reported);
    u.down = std::min(u.down, u.reported - u.alloc);
    u.planned_down = std::min(u.planned_down, u.reported - u.alloc - u.down);
    uint64_t left = u.reported - u.alloc - u.down - u.planned_down;
    u.planned = std::min(u.over, left);
    u.over = u.over > u.planned ? u.over - u.planned : 0;
    u.idle = left - u.planned;
    out.push_back(u);
  }
  return out;
}

Result<std::string> FormatSreport(const pb::AcctUsageResponse& usage, const SreportOptions& o,
                                  const SreportLookups& lookups) {
  switch (o.report) {
    case SreportReport::kClusterUtilization: {
      auto cols =
          ClusterUtilCols(o.format.empty() ? "Cl,al,d,planned,i,res,rep" : o.format, o.time);
      if (!cols.ok()) return cols.status();
      return ClusterUtilization(usage, o, *cols);
    }
    case SreportReport::kUserTop: {
      auto cols = UserCols(o.format.empty() ? "Cl,L,P,A,U,Energy" : o.format, o.time);
      if (!cols.ok()) return cols.status();
      return UserTop(usage, o, *cols, lookups);
    }
    case SreportReport::kClusterAccountByUser:
      return InvalidArgument("sreport: cluster AccountUtilizationByUser is not supported yet");
    default:
      return InvalidArgument("sreport: no report given");
  }
}

}  // namespace shoal::cli
