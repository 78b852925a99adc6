#include "sched/reservation.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <climits>
#include <ctime>
#include <set>

#include "common/hostlist.h"
#include "common/units.h"

namespace shoal::sched {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> SplitComma(std::string_view s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t c = s.find(',', pos);
    std::string_view item = s.substr(pos, c == std::string_view::npos ? s.size() - pos : c - pos);
    if (!item.empty()) out.emplace_back(item);
    if (c == std::string_view::npos) break;
    pos = c + 1;
  }
  return out;
}

std::string Join(const std::vector<std::string>& v, std::string_view prefix = "") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += prefix;
    out += v[i];
  }
  return out;
}

struct FlagName {
  uint64_t bit;
  const char* in;   // input spelling
  const char* out;  // printed spelling
  bool removable;   // "-=" allowed
};
// Input names; output order follows the enum.
constexpr std::array<FlagName, 22> kFlags = {{
    {kResvMaint, "MAINT", "MAINT", true},
    {kResvFlex, "FLEX", "FLEX", true},
    {kResvOverlap, "OVERLAP", "OVERLAP", false},
    {kResvIgnoreJobs, "IGNORE_JOBS", "IGNORE_JOBS", true},
    {kResvHourly, "HOURLY", "HOURLY", true},
    {kResvDaily, "DAILY", "DAILY", true},
    {kResvWeekday, "WEEKDAY", "WEEKDAY", true},
    {kResvWeekend, "WEEKEND", "WEEKEND", true},
    {kResvWeekly, "WEEKLY", "WEEKLY", true},
    {kResvSpecNodes, "SPEC_NODES", "SPEC_NODES", true},
    {kResvAllNodes, "ALL_NODES", "ALL_NODES", true},
    {kResvAnyNodes, "ANY_NODES", "ANY_NODES", true},
    {kResvAnyNodes, "LICENSE_ONLY", "ANY_NODES", true},
    {kResvFirstCores, "FIRST_CORES", "FIRST_CORES", false},
    {kResvStatic, "STATIC_ALLOC", "STATIC", true},
    {kResvPartNodes, "PART_NODES", "PART_NODES", true},
    {kResvTimeFloat, "TIME_FLOAT", "TIME_FLOAT", false},
    {kResvReplace, "REPLACE", "REPLACE", false},
    {kResvReplaceDown, "REPLACE_DOWN", "REPLACE_DOWN", false},
    {kResvPurgeComp, "PURGE_COMP", "PURGE_COMP", true},
    {kResvNoHoldJobsAfter, "NO_HOLD_JOBS_AFTER", "NO_HOLD_JOBS_AFTER_END", false},
    {kResvMagnetic, "MAGNETIC", "MAGNETIC", true},
}};

const FlagName* FindFlag(std::string_view name) {
  std::string up = Upper(name);
  if (up == "NO_HOLD_JOBS_AFTER_END") up = "NO_HOLD_JOBS_AFTER";
  if (up == "STATIC") up = "STATIC_ALLOC";
  for (const auto& f : kFlags)
    if (up == f.in) return &f;
  return nullptr;
}

// Canonical keys and the shortest abbreviation scontrol accepts (our choice where unknown).
struct KeyDef {
  const char* name;
  size_t min_len;
};
constexpr std::array<KeyDef, 19> kKeys = {{
    {"reservationname", 3}, {"starttime", 5},     {"endtime", 3},   {"duration", 3},
    {"nodes", 5},           {"nodecnt", 5},       {"corecnt", 5},   {"users", 4},
    {"accounts", 7},        {"partitionname", 9}, {"flags", 4},     {"licenses", 3},
    {"features", 7},        {"groups", 5},        {"tres", 4},      {"burstbuffer", 5},
    {"watts", 5},           {"maxstartdelay", 8}, {"partition", 9},
}};

std::string CanonicalKey(std::string_view key) {
  std::string k = Lower(key);
  if (k == "reservation") return "reservationname";
  if (k == "nodecount") return "nodecnt";
  for (const auto& d : kKeys) {
    std::string_view full = d.name;
    if (k.size() >= d.min_len && k.size() <= full.size() && full.substr(0, k.size()) == k) {
      return std::string(full) == "partition" ? "partitionname" : std::string(full);
    }
  }
  return "";
}

Result<uint32_t> ParseCount(std::string_view text) {
  // "10", "2k" (x1024), "2k,2k" (summed).
  uint64_t total = 0;
  auto parts = SplitComma(text);
  if (parts.empty()) return InvalidArgument("Invalid node count " + std::string(text));
  for (std::string_view p : parts) {
    uint64_t mult = 1;
    if (!p.empty() && (p.back() == 'k' || p.back() == 'K')) {
      mult = 1024;
      p.remove_suffix(1);
    }
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (p.empty() || ec != std::errc() || ptr != p.data() + p.size())
      return InvalidArgument("Invalid node count " + std::string(text));
    total += v * mult;
  }
  if (total > UINT32_MAX) return InvalidArgument("Invalid node count " + std::string(text));
  return static_cast<uint32_t>(total);
}

int64_t AddLocalDays(int64_t t, int days) {
  time_t tt = static_cast<time_t>(t);
  struct tm tm {};
  localtime_r(&tt, &tm);
  tm.tm_mday += days;
  tm.tm_isdst = -1;
  return static_cast<int64_t>(mktime(&tm));
}

int LocalWeekday(int64_t t) {  // 0 = Sunday
  time_t tt = static_cast<time_t>(t);
  struct tm tm {};
  localtime_r(&tt, &tm);
  return tm.tm_wday;
}

bool DayMatches(const Reservation& r, int64_t start) {
  int wd = LocalWeekday(start);
  bool weekend = wd == 0 || wd == 6;
  if (r.Has(kResvWeekday)) return !weekend;
  if (r.Has(kResvWeekend)) return weekend;
  return true;
}

// Start of the window after the one starting at `s`.
int64_t NextStart(const Reservation& r, int64_t s) {
  if (r.Has(kResvHourly)) return s + 3600;
  if (r.Has(kResvDaily) || r.Has(kResvWeekday) || r.Has(kResvWeekend)) {
    int64_t n = AddLocalDays(s, 1);
    for (int i = 0; i < 7 && !DayMatches(r, n); ++i) n = AddLocalDays(n, 1);
    return n;
  }
  if (r.Has(kResvWeekly)) return AddLocalDays(s, 7);
  return INT64_MAX;
}

// Rough period, used to jump close to a far-away time without stepping window by window.
int64_t Period(const Reservation& r) {
  if (r.Has(kResvHourly)) return 3600;
  if (r.Has(kResvDaily) || r.Has(kResvWeekday) || r.Has(kResvWeekend)) return 86400;
  if (r.Has(kResvWeekly)) return 7 * 86400;
  return 0;
}

// First window start s (>= r.start) with s + duration > t.
int64_t FirstWindowEndingAfter(const Reservation& r, int64_t t) {
  int64_t s = r.start;
  int64_t period = Period(r);
  if (period == 0) return s;
  int64_t dur = r.end - r.start;
  if (t - dur > s + 2 * period) {
    // Jump whole periods (days via the calendar to keep the wall-clock time), staying behind.
    int64_t k = (t - dur - s) / period - 1;
    if (r.Has(kResvHourly)) {
      s += k * 3600;
    } else {
      s = AddLocalDays(s, static_cast<int>(k * (period / 86400)));
    }
    if (!DayMatches(r, s)) s = NextStart(r, s);
  }
  while (s + dur <= t || !DayMatches(r, s)) s = NextStart(r, s);
  return s;
}

std::string Suffix(bool update) {
  return update ? ".  No reservation update." : ".  No reservation created.";
}

bool HasNode(const Reservation& r, int node) {
  return std::binary_search(r.node_indexes.begin(), r.node_indexes.end(), node);
}

bool WindowsOverlap(const Reservation& a, const Reservation& b) {
  // Compare over a horizon long enough for any repetition pattern to show.
  int64_t to = std::max(a.end, b.end) + 8 * 86400;
  if (!(a.flags & kResvRecurring)) to = a.end;
  if (!(b.flags & kResvRecurring)) to = std::min(to, b.end);
  auto wa = Windows(a, std::min(a.start, b.start), to);
  auto wb = Windows(b, std::min(a.start, b.start), to);
  for (auto& x : wa)
    for (auto& y : wb)
      if (x.first < y.second && y.first < x.second) return true;
  return false;
}

bool ShareNodes(const Reservation& a, const Reservation& b) {
  for (int n : a.node_indexes)
    if (HasNode(b, n)) return true;
  return false;
}

Status ApplyList(const std::optional<ListEdit>& edit, std::vector<std::string>& list, bool& denied,
                 bool update) {
  if (!edit) return Status::Ok();
  std::vector<std::string> names;
  bool any_minus = false, any_plain = false;
  for (const auto& n : edit->names) {
    if (!n.empty() && n[0] == '-') {
      any_minus = true;
      names.push_back(n.substr(1));
    } else {
      any_plain = true;
      names.push_back(n);
    }
  }
  if (any_minus && any_plain) return InvalidArgument("mixed");
  switch (edit->op) {
    case ListOp::kSet:
      list = names;
      denied = any_minus;
      break;
    case ListOp::kAdd:
      for (auto& n : names)
        if (std::find(list.begin(), list.end(), n) == list.end()) list.push_back(n);
      break;
    case ListOp::kRemove:
      if (!update) {  // "Users-=a,b" on create: everyone but a and b
        list = names;
        denied = true;
        break;
      }
      for (auto& n : names) list.erase(std::remove(list.begin(), list.end(), n), list.end());
      if (list.empty()) denied = false;
      break;
  }
  return Status::Ok();
}

uint32_t CoreCount(const ResvCluster& c, const std::vector<int>& nodes) {
  uint32_t sum = 0;
  for (int n : nodes) sum += c.node_cpus.empty() ? 1 : c.node_cpus[static_cast<size_t>(n)];
  return sum;
}

bool Usable(const ResvCluster& c, int n) {
  return c.node_usable.empty() || c.node_usable[static_cast<size_t>(n)];
}

// Nodes a NodeCnt reservation may take: in the partition, usable, not busy past the start
// (unless IGNORE_JOBS/MAINT), not in an overlapping reservation (unless OVERLAP/MAINT).
std::vector<int> EligibleForCount(const Reservation& r, const std::vector<int>& pool,
                                  const ResvCluster& c) {
  // The caller's preference first, then the rest of the pool by index.
  std::vector<int> order = c.preferred_order;
  order.insert(order.end(), pool.begin(), pool.end());
  std::set<int> in_pool(pool.begin(), pool.end()), seen;
  std::vector<int> out;
  bool may_overlap = r.Has(kResvMaint) || r.Has(kResvOverlap);
  for (int n : order) {
    if (!in_pool.count(n) || !seen.insert(n).second || !Usable(c, n)) continue;
    if (!r.Has(kResvIgnoreJobs) && !r.Has(kResvMaint) && c.node_busy_until &&
        c.node_busy_until(n) > r.start)
      continue;
    bool taken = false;
    if (!may_overlap) {
      Reservation probe = r;
      probe.node_indexes = {n};
      for (const Reservation* o : c.existing) {
        if (o->name == r.name || !HasNode(*o, n)) continue;
        if (WindowsOverlap(probe, *o)) {
          taken = true;
          break;
        }
      }
    }
    if (!taken) out.push_back(n);
  }
  return out;
}

Status CheckConflicts(const Reservation& r, const ResvCluster& c) {
  bool may_overlap = r.Has(kResvMaint) || r.Has(kResvOverlap);
  if (!may_overlap) {
    for (const Reservation* o : c.existing) {
      if (o->name == r.name) continue;
      if (ShareNodes(r, *o) && WindowsOverlap(r, *o))
        return Error(ErrorCode::kNodesBusy,
                     "Requested reservation overlaps with another reservation");
    }
  }
  if (!r.Has(kResvIgnoreJobs) && !r.Has(kResvMaint) && c.node_busy_until) {
    for (int n : r.node_indexes)
      if (c.node_busy_until(n) > r.start)
        return Error(ErrorCode::kNodesBusy, "Requested nodes are busy");
  }
  return Status::Ok();
}

// Resolves Nodes=/NodeCnt=/PartitionName= into node indexes.
Status ResolveNodes(Reservation& r, const ReservationRequest& req, const ResvCluster& c,
                    bool keep_current) {
  std::vector<int> pool;
  if (!r.partition.empty() || !c.default_partition.empty()) {
    const std::string& p = r.partition.empty() ? c.default_partition : r.partition;
    if (c.partition_nodes) {
      auto nodes = c.partition_nodes(p);
      if (nodes) pool = *nodes;
    }
  }
  if (pool.empty() && !c.partition_nodes) {
    for (size_t i = 0; i < c.node_names.size(); ++i) pool.push_back(static_cast<int>(i));
  }
  std::sort(pool.begin(), pool.end());

  std::vector<int> nodes;
  bool explicit_nodes = req.nodes && !req.nodes->empty();
  if (explicit_nodes) {
    if (*req.nodes == "ALL") {
      if (r.Has(kResvPartNodes)) {
        nodes = pool;
      } else {
        for (size_t i = 0; i < c.node_names.size(); ++i) nodes.push_back(static_cast<int>(i));
      }
      r.flags |= kResvAllNodes;
    } else {
      auto names = ExpandHostlist(*req.nodes);
      if (!names) return Error(ErrorCode::kInvalidNodeName, "Invalid node name specified");
      for (const auto& name : *names) {
        auto it = std::find(c.node_names.begin(), c.node_names.end(), name);
        if (it == c.node_names.end())
          return Error(ErrorCode::kInvalidNodeName, "Invalid node name specified");
        nodes.push_back(static_cast<int>(it - c.node_names.begin()));
      }
      r.flags &= ~kResvAllNodes;
    }
    r.flags |= kResvSpecNodes;
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    // NodeCnt given as well: honoured, the list trimmed or topped up.
    if (req.node_cnt && *req.node_cnt != nodes.size()) {
      if (*req.node_cnt < nodes.size()) {
        nodes.resize(*req.node_cnt);
      } else {
        std::vector<int> more = EligibleForCount(r, pool, c);
        for (int n : more) {
          if (nodes.size() >= *req.node_cnt) break;
          if (!std::binary_search(nodes.begin(), nodes.end(), n)) nodes.push_back(n);
        }
        if (nodes.size() < *req.node_cnt)
          return Error(ErrorCode::kNodesBusy, "Requested nodes are busy");
        std::sort(nodes.begin(), nodes.end());
      }
    }
  } else if (req.node_cnt || (req.nodes && req.nodes->empty())) {
    uint32_t want = req.node_cnt ? *req.node_cnt : r.node_cnt;
    if (req.nodes) r.flags &= ~(kResvSpecNodes | kResvAllNodes);
    Reservation probe = r;
    probe.node_indexes.clear();
    auto picked = PickReservationNodes(EligibleForCount(probe, pool, c), want);
    if (!picked) return picked.status();
    nodes = *picked;
    std::sort(nodes.begin(), nodes.end());
  } else if (keep_current) {
    nodes = r.node_indexes;
  } else if (req.partition) {
    nodes = pool;  // the whole partition
  }
  r.node_indexes = nodes;
  r.node_names.clear();
  for (int n : nodes) r.node_names.push_back(c.node_names[static_cast<size_t>(n)]);
  r.node_cnt = static_cast<uint32_t>(nodes.size());
  r.core_cnt = CoreCount(c, nodes);
  return Status::Ok();
}

Status CheckUsersAccounts(const Reservation& r, const ResvCluster& c) {
  if (c.user_exists)
    for (const auto& u : r.users)
      if (!c.user_exists(u)) return InvalidArgument("Invalid user id");
  if (c.account_exists)
    for (const auto& a : r.accounts)
      if (!c.account_exists(a))
        return InvalidArgument("Invalid account or account/partition combination specified");
  return Status::Ok();
}

void NormalizeStart(Reservation& r) {
  // WEEKDAY/WEEKEND: the first window is the first matching day at the given time.
  if ((r.Has(kResvWeekday) || r.Has(kResvWeekend)) && !DayMatches(r, r.start)) {
    int64_t s = r.start;
    for (int i = 0; i < 7 && !DayMatches(r, s); ++i) s = AddLocalDays(s, 1);
    r.start = s;
    r.end = s + r.duration;
  }
}

}  // namespace

Result<ReservationRequest> ParseReservationArgs(const std::vector<std::string>& args, bool update,
                                                int64_t now) {
  ReservationRequest req;
  req.update = update;
  const std::string sfx = Suffix(update);
  std::set<std::string> seen;
  for (const std::string& arg : args) {
    if (Lower(arg) == "skip") {
      if (!update) return InvalidArgument("Unknown parameter " + arg + sfx);
      req.skip = true;
      continue;
    }
    size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0)
      return InvalidArgument("Unknown parameter " + arg + sfx);
    std::string_view key(arg.data(), eq);
    std::string value = arg.substr(eq + 1);
    char sign = 0;
    if (key.back() == '+' || key.back() == '-') {
      sign = key.back();
      key.remove_suffix(1);
    }
    std::string canon = CanonicalKey(key);
    if (canon.empty()) return InvalidArgument("Unknown parameter " + arg + sfx);
    if (!seen.insert(canon).second)
      return InvalidArgument("Parameter " + arg + " specified more than once");
    if (sign && canon != "users" && canon != "accounts" && canon != "groups" && canon != "flags")
      return InvalidArgument("Unknown parameter " + arg + sfx);

    if (canon == "reservationname") {
      req.name = value;
    } else if (canon == "starttime" || canon == "endtime") {
      auto t = ParseBeginTime(value, now);
      if (!t) {
        return InvalidArgument(
            std::string(canon == "starttime" ? "Invalid start time " : "Invalid end time ") + arg +
            sfx);
      }
      (canon == "starttime" ? req.start : req.end) = *t;
    } else if (canon == "duration") {
      auto d = ParseDurationSeconds(value);
      if (!d) return InvalidArgument("Invalid duration " + arg + sfx);
      int64_t secs = *d < 0 ? kResvUnlimitedSeconds : ((*d + 59) / 60) * 60;  // whole minutes
      req.duration = secs;
    } else if (canon == "nodes") {
      req.nodes = value;  // "ALL" is case-sensitive: "all" is an unknown node
    } else if (canon == "nodecnt") {
      auto n = ParseCount(value);
      if (!n) return n.status();
      req.node_cnt = *n;
    } else if (canon == "corecnt") {
      auto n = ParseCount(value);
      if (!n) return InvalidArgument("Invalid core count " + value);
      req.core_cnt = *n;
    } else if (canon == "partitionname") {
      req.partition = value;
    } else if (canon == "users" || canon == "accounts" || canon == "groups") {
      ListEdit e;
      e.op = sign == '+' ? ListOp::kAdd : sign == '-' ? ListOp::kRemove : ListOp::kSet;
      e.names = SplitComma(value);
      (canon == "users" ? req.users : canon == "accounts" ? req.accounts : req.groups) = e;
    } else if (canon == "flags") {
      req.flags_given = true;
      std::string shown;  // the flags as scontrol echoes them in its error
      bool bad = false;
      for (std::string item : SplitComma(value)) {
        char s = sign;
        if (!item.empty() && (item[0] == '+' || item[0] == '-')) {
          s = item[0];
          item.erase(0, 1);
        }
        if (!shown.empty()) shown += ',';
        if (s) shown += s;
        shown += item;
        std::string fname = item;
        std::optional<int64_t> purge;
        if (size_t e2 = item.find('='); e2 != std::string::npos) {
          fname = item.substr(0, e2);
          auto d = ParseDurationSeconds(item.substr(e2 + 1));
          if (!d || *d < 0) {
            bad = true;
            continue;
          }
          purge = *d;
        }
        const FlagName* f = FindFlag(fname);
        if (!f || (purge && f->bit != kResvPurgeComp) || (s == '-' && (!update || !f->removable))) {
          bad = true;
          continue;
        }
        if (f->bit == kResvPurgeComp) req.purge_comp_seconds = purge ? *purge : 300;
        if (s == '-') {
          req.flags_remove |= f->bit;
        } else if (s == '+') {
          req.flags_add |= f->bit;
        } else {
          req.flags_set |= f->bit;
        }
      }
      if (bad) return InvalidArgument("Error parsing flags " + shown + sfx);
    } else if (canon == "licenses") {
      req.licenses = value;
    } else if (canon == "features") {
      req.features = value;
    } else if (canon == "tres") {
      req.tres = value;
    } else {
      // BurstBuffer, Watts, MaxStartDelay: accepted, not modelled.
    }
  }

  if (update) {
    if (!req.name) return InvalidArgument("Reservation must be given.  No reservation update.");
    if (req.start && req.end && *req.start > *req.end)
      return InvalidArgument("Start time cannot be after end time" + sfx);
    return req;
  }
  if (!req.start) return InvalidArgument("A start time must be given" + sfx);
  if (!req.end && !req.duration)
    return InvalidArgument("An end time or duration must be given" + sfx);
  if (!req.nodes && !req.node_cnt && !req.core_cnt && !req.licenses && !req.tres)
    return InvalidArgument(
        "CoreCnt, Nodes, NodeCnt, BurstBuffer, Licenses or Watts must be specified" + sfx);
  if ((!req.users || req.users->names.empty()) && (!req.accounts || req.accounts->names.empty()) &&
      (!req.groups || req.groups->names.empty()))
    return InvalidArgument("Either Users/Groups and/or Accounts must be specified" + sfx);
  if (req.end && *req.start > *req.end)
    return InvalidArgument("Start time cannot be after end time" + sfx);
  uint64_t all_flags = req.flags_set | req.flags_add;
  if ((all_flags & kResvPartNodes) && (!req.partition || !req.nodes || *req.nodes != "ALL"))
    return InvalidArgument("PART_NODES flag requires specifying a Partition and ALL nodes" + sfx);
  return req;
}

Result<std::vector<int>> PickReservationNodes(const std::vector<int>& eligible, uint32_t count) {
  if (count == 0 || eligible.size() < count)
    return Error(ErrorCode::kNodesBusy, "Requested nodes are busy");
  return std::vector<int>(eligible.begin(), eligible.begin() + count);
}

Result<CreatedReservation> CreateReservation(const ReservationRequest& req, const ResvCluster& c,
                                             uint32_t next_id) {
  Reservation r;
  r.flags = req.flags_set | req.flags_add;
  if ((r.flags & kResvTimeFloat) && (r.flags & kResvRecurring))
    return Error(ErrorCode::kNotSupported, "Requested operation not supported on this system");
  r.start = *req.start;
  if (req.end) {
    r.end = *req.end;
  } else {
    r.end = r.start + *req.duration;
  }
  if (req.end && req.duration) r.end = r.start + *req.duration;  // Duration wins, as Slurm does
  r.duration = r.end - r.start;
  if (r.start < c.now - 60) return InvalidArgument("Invalid time specified");
  if (req.purge_comp_seconds) r.purge_comp_seconds = *req.purge_comp_seconds;
  if (req.partition) {
    if (c.partition_nodes && !c.partition_nodes(*req.partition))
      return Error(ErrorCode::kInvalidPartition, "Invalid partition name specified");
    r.partition = *req.partition;
  }
  if (!ApplyList(req.users, r.users, r.users_denied, false).ok())
    return InvalidArgument("Invalid user id");
  if (!ApplyList(req.accounts, r.accounts, r.accounts_denied, false).ok())
    return InvalidArgument("Invalid account or account/partition combination specified");
  bool groups_denied = false;
  if (!ApplyList(req.groups, r.groups, groups_denied, false).ok() || groups_denied)
    return InvalidArgument("Invalid group id");
  if (Status s = CheckUsersAccounts(r, c); !s.ok()) return s;
  if (req.features) r.features = *req.features;
  if (req.licenses) r.licenses = *req.licenses;
  NormalizeStart(r);

  uint32_t id = next_id == 0 ? 1 : next_id;
  if (req.name && !req.name->empty()) {
    r.name = *req.name;
  } else {
    std::string base = !r.users.empty()      ? r.users[0]
                       : !r.accounts.empty() ? r.accounts[0]
                                             : r.groups[0];
    r.name = base + "_" + std::to_string(id);
  }
  for (const Reservation* o : c.existing)
    if (o->name == r.name) return InvalidArgument("Duplicate reservation name");

  if (Status s = ResolveNodes(r, req, c, false); !s.ok()) return s;
  if (Status s = CheckConflicts(r, c); !s.ok()) return s;
  return CreatedReservation{std::move(r), id + 1};
}

Result<Reservation> UpdateReservation(const Reservation& current, const ReservationRequest& req,
                                      const ResvCluster& c) {
  Reservation r = current;
  if (req.flags_given) {
    r.flags |= req.flags_set | req.flags_add;
    r.flags &= ~req.flags_remove;
    if (req.purge_comp_seconds) r.purge_comp_seconds = *req.purge_comp_seconds;
  }
  if ((r.flags & kResvTimeFloat) && (r.flags & kResvRecurring))
    return Error(ErrorCode::kNotSupported, "Requested operation not supported on this system");
  bool active = IsActive(current, c.now);
  if (req.start) {
    if (active && *req.start != current.start) return InvalidArgument("Invalid time specified");
    r.start = *req.start;
    if (!req.end && !req.duration) r.end = r.start + current.duration;
  }
  if (req.end) r.end = *req.end;
  if (req.duration) r.end = r.start + *req.duration;
  if (r.end <= r.start || (req.start && r.start < c.now - 60))
    return InvalidArgument("Invalid time specified");
  r.duration = r.end - r.start;
  if (req.skip) {
    if (!(r.flags & kResvRecurring)) return InvalidArgument("Reservation is not recurring");
    int64_t s = NextStart(r, r.start);
    r.start = s;
    r.end = s + r.duration;
  }
  if (req.partition) {
    if (c.partition_nodes && !c.partition_nodes(*req.partition))
      return Error(ErrorCode::kInvalidPartition, "Invalid partition name specified");
    r.partition = *req.partition;
  }
  if (!ApplyList(req.users, r.users, r.users_denied, true).ok())
    return InvalidArgument("Invalid user id");
  if (!ApplyList(req.accounts, r.accounts, r.accounts_denied, true).ok())
    return InvalidArgument("Invalid account or account/partition combination specified");
  bool groups_denied = false;
  if (!ApplyList(req.groups, r.groups, groups_denied, true).ok() || groups_denied)
    return InvalidArgument("Invalid group id");
  if (r.users.empty() && r.accounts.empty() && r.groups.empty())
    return InvalidArgument("Either Users/Groups and/or Accounts must be specified");
  if (Status s = CheckUsersAccounts(r, c); !s.ok()) return s;
  if (req.features) r.features = *req.features;
  if (req.licenses) r.licenses = *req.licenses;
  if (req.nodes || req.node_cnt || req.partition) {
    if (Status s = ResolveNodes(r, req, c, true); !s.ok()) return s;
  }
  if (Status s = CheckConflicts(r, c); !s.ok()) return s;
  return r;
}

std::vector<std::pair<int64_t, int64_t>> Windows(const Reservation& r, int64_t t0, int64_t t1) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t dur = r.end - r.start;
  if (!(r.flags & kResvRecurring)) {
    if (r.start < t1 && t0 < r.end) out.emplace_back(r.start, r.end);
    return out;
  }
  int64_t s = FirstWindowEndingAfter(r, t0);
  while (s < t1 && s != INT64_MAX) {
    out.emplace_back(s, s + dur);
    s = NextStart(r, s);
  }
  return out;
}

bool RollForward(Reservation& r, int64_t now) {
  if (!(r.flags & kResvRecurring) || r.end > now) return false;
  int64_t s = FirstWindowEndingAfter(r, now);
  int64_t dur = r.end - r.start;
  r.start = s;
  r.end = s + dur;
  return true;
}

bool IsExpired(const Reservation& r, int64_t now) {
  return !(r.flags & kResvRecurring) && r.end <= now;
}

bool IsActive(const Reservation& r, int64_t now) { return !Windows(r, now, now + 1).empty(); }

bool CanUse(const Reservation& r, const ResvJob& job) {
  auto in = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  bool user_ok = true;
  if (!r.users.empty()) {
    user_ok = r.users_denied ? !in(r.users, job.user) : in(r.users, job.user);
  } else if (!r.groups.empty()) {
    user_ok = false;
    for (const auto& g : job.groups)
      if (in(r.groups, g)) user_ok = true;
  }
  bool acct_ok = true;
  if (!r.accounts.empty())
    acct_ok = r.accounts_denied ? !in(r.accounts, job.account) : in(r.accounts, job.account);
  return user_ok && acct_ok;
}

bool Blocks(const Reservation& r, int node, int64_t t0, int64_t t1, const ResvJob& job) {
  if (job.reservation == r.name) return false;
  if (!HasNode(r, node)) return false;
  if (r.Has(kResvAnyNodes) && r.node_indexes.empty()) return false;
  return !Windows(r, t0, t1).empty();
}

std::vector<int> ReservedNodes(const Reservation& r, const std::vector<int>& candidates) {
  if (r.Has(kResvFlex) || r.Has(kResvAnyNodes)) return candidates;
  std::vector<int> out;
  for (int n : candidates)
    if (HasNode(r, n)) out.push_back(n);
  return out;
}

std::optional<int64_t> EarliestStartInReservation(const Reservation& r, int64_t now,
                                                  int64_t run_seconds) {
  if (r.Has(kResvFlex)) return now;
  int64_t dur = r.end - r.start;
  if (run_seconds > dur) return std::nullopt;
  // Look a little over one repetition ahead.
  int64_t horizon = (r.flags & kResvRecurring) ? now + 15 * 86400 : r.end;
  for (auto [s, e] : Windows(r, now, std::max(horizon, now + 1))) {
    int64_t begin = std::max(s, now);
    if (begin + run_seconds <= e) return begin;
  }
  return std::nullopt;
}

bool NodeInMaint(const std::vector<const Reservation*>& resvs, int node, int64_t now) {
  for (const Reservation* r : resvs)
    if (r->Has(kResvMaint) && HasNode(*r, node) && IsActive(*r, now)) return true;
  return false;
}

bool NodeReserved(const std::vector<const Reservation*>& resvs, int node, int64_t now) {
  for (const Reservation* r : resvs)
    if (HasNode(*r, node) && IsActive(*r, now)) return true;
  return false;
}

std::string FlagsString(const Reservation& r) {
  std::string out;
  uint64_t done = 0;
  for (const auto& f : kFlags) {
    if (!(r.flags & f.bit) || (done & f.bit)) continue;
    done |= f.bit;
    if (!out.empty()) out += ',';
    out += f.out;
    if (f.bit == kResvPurgeComp) out += "=" + FormatHms(r.purge_comp_seconds);
  }
  return out;
}

namespace {
std::string NullIfEmpty(const std::string& s) { return s.empty() ? "(null)" : s; }
std::string NodesString(const Reservation& r) { return CompressHostlist(r.node_names); }
std::string ListString(const std::vector<std::string>& v, bool denied) {
  return v.empty() ? "(null)" : Join(v, denied ? "-" : "");
}
}  // namespace

std::string FormatReservation(const Reservation& r, int64_t now) {
  std::string s;
  s += "ReservationName=" + r.name + " StartTime=" + FormatTimestamp(r.start) +
       " EndTime=" + FormatTimestamp(r.end) + " Duration=" + FormatHms(r.end - r.start) + "\n";
  s += "   Nodes=" + NodesString(r) + " NodeCnt=" + std::to_string(r.node_cnt) +
       " CoreCnt=" + std::to_string(r.core_cnt) + " Features=" + NullIfEmpty(r.features) +
       " PartitionName=" + NullIfEmpty(r.partition) + " Flags=" + FlagsString(r) + "\n";
  s += "   TRES=cpu=" + std::to_string(r.core_cnt) + "\n";
  s += "   Users=" + ListString(r.users, r.users_denied) +
       " Groups=" + ListString(r.groups, false) +
       " Accounts=" + ListString(r.accounts, r.accounts_denied) +
       " Licenses=" + NullIfEmpty(r.licenses) +
       " State=" + (IsActive(r, now) ? "ACTIVE" : "INACTIVE") + " BurstBuffer=(null) Watts=n/a\n";
  s += "   MaxStartDelay=(null)\n";
  return s;
}

std::string FormatReservationTable(const std::vector<const Reservation*>& resvs, int64_t now) {
  size_t w = 9;  // "RESV_NAME"
  for (const Reservation* r : resvs) w = std::max(w, r->name.size());
  auto pad_left = [](const std::string& s, size_t width) {
    return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
  };
  auto pad_right = [](const std::string& s, size_t width) {
    return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
  };
  std::string out = pad_right("RESV_NAME", w) + "  " + pad_left("STATE", 8) + "  " +
                    pad_left("START_TIME", 19) + "  " + pad_left("END_TIME", 19) + "  " +
                    pad_left("DURATION", 11) + "  NODELIST\n";
  for (const Reservation* r : resvs) {
    out += pad_right(r->name, w) + "  " + pad_left(IsActive(*r, now) ? "ACTIVE" : "INACTIVE", 8) +
           "  " + pad_left(FormatTimestamp(r->start), 19) + "  " +
           pad_left(FormatTimestamp(r->end), 19) + "  " +
           pad_left(FormatHms(r->end - r->start), 11) + "  " + NodesString(*r) + "\n";
  }
  return out;
}

}  // namespace shoal::sched
