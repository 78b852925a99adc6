#include "dbd/assoc_admin.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "common/units.h"

namespace shoal::dbd {
namespace {

// ---- Small text helpers -----------------------------------------------------------------------

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// "a,b,,c" -> {"a","b","c"}; quotes the shell left in ('' for "empty") are dropped.
std::vector<std::string> Split(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string_view::npos) comma = s.size();
    std::string item = Trim(s.substr(start, comma - start));
    if (item == "''" || item == "\"\"") item.clear();
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

Status Fail(std::string msg) { return InvalidArgument(std::move(msg)); }

std::string Pad(std::string_view s, size_t width) {
  std::string out(s);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}
// printf's "%-N.Ns": padded and cut.
std::string PadCut(std::string_view s, size_t width) { return Pad(s.substr(0, width), width); }

template <typename T>
bool Contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

// ---- TRES -------------------------------------------------------------------------------------

namespace {

constexpr const char* kStdTres[] = {"cpu",     "mem",     "energy", "node",
                                    "billing", "fs/disk", "vmem",   "pages"};

int TresRank(const std::string& name) {
  for (int i = 0; i < 8; ++i) {
    if (name == kStdTres[i]) return i;
  }
  return 100;
}

bool ValidTresName(const std::string& name) {
  if (TresRank(name) < 100) return true;
  auto slash = name.find('/');
  if (slash == std::string::npos) return false;
  std::string type = name.substr(0, slash), rest = name.substr(slash + 1);
  if (type != "gres" && type != "license" && type != "bb") return false;
  if (rest.empty() || rest.size() > 64 || rest.front() == ':' || rest.back() == ':') return false;
  int colons = 0;
  for (char c : rest) {
    if (c == ':') {
      ++colons;
    } else if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return false;
    }
  }
  return colons <= 1;
}

using TresMap = std::map<std::string, std::string>;

Result<TresMap> ParseTresMap(std::string_view spec, bool minutes) {
  TresMap out;
  for (const std::string& item : Split(spec)) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      return Fail(" Invalid TRES: " + item);
    std::string name = Lower(item.substr(0, eq));
    std::string value = item.substr(eq + 1);
    if (!ValidTresName(name)) return Fail(" Invalid TRES: " + item);
    if (value == "-1") {
      out[name] = "-1";
    } else if (name == "mem" && !minutes) {
      auto mb = ParseMemoryMB(value);
      if (!mb) return Fail(" Invalid TRES: " + item);
      out[name] = FormatMemoryCompact(*mb);
    } else if (AllDigits(value) && value.size() <= 18) {
      out[name] = std::to_string(std::strtoull(value.c_str(), nullptr, 10));
    } else {
      return Fail(" Invalid TRES: " + item);
    }
  }
  return out;
}

std::string JoinTres(const TresMap& m) {
  std::vector<std::pair<std::string, std::string>> items(m.begin(), m.end());
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return TresRank(a.first) < TresRank(b.first);
  });
  std::string out;
  for (const auto& [k, v] : items) {
    if (!out.empty()) out += ",";
    out += k + "=" + v;
  }
  return out;
}

}  // namespace

bool ValidAcctName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '-') return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return false;
  }
  return true;
}

Result<std::string> NormalizeTres(std::string_view spec, bool minutes) {
  auto m = ParseTresMap(spec, minutes);
  if (!m) return m.status();
  return JoinTres(*m);
}

Result<std::string> MergeTres(const std::string& current, std::string_view spec, bool minutes) {
  if (Trim(spec) == "-1") return std::string();
  auto add = ParseTresMap(spec, minutes);
  if (!add) return add.status();
  auto cur = ParseTresMap(current, minutes);
  TresMap m = cur ? *cur : TresMap{};
  for (const auto& [k, v] : *add) {
    if (v == "-1") {
      m.erase(k);
    } else {
      m[k] = v;
    }
  }
  return JoinTres(m);
}

// ---- State lookups ----------------------------------------------------------------------------

namespace {

template <typename Vec>
auto* FindNamed(Vec& rows, std::string_view name, bool any) {
  for (auto& r : rows) {
    if (r.name() == name && (any || !r.deleted())) return &r;
  }
  return static_cast<decltype(&rows[0])>(nullptr);
}

pb::AcctCluster* FindCluster(AssocState& s, std::string_view n) {
  return FindNamed(s.clusters, n, false);
}
pb::AcctAccount* FindAccount(AssocState& s, std::string_view n) {
  return FindNamed(s.accounts, n, false);
}
pb::AcctUser* FindUser(AssocState& s, std::string_view n) { return FindNamed(s.users, n, false); }
pb::AcctQos* FindQos(AssocState& s, std::string_view n) { return FindNamed(s.qos, n, false); }
const pb::AcctQos* FindQos(const AssocState& s, std::string_view n) {
  return FindNamed(s.qos, n, false);
}
const pb::AcctUser* FindUser(const AssocState& s, std::string_view n) {
  return FindNamed(s.users, n, false);
}

template <typename State>
auto* FindAssoc(State& s, std::string_view cluster, std::string_view account, std::string_view user,
                std::string_view partition) {
  for (auto& a : s.assocs) {
    if (!a.deleted() && a.cluster() == cluster && a.account() == account && a.user() == user &&
        a.partition() == partition)
      return &a;
  }
  return static_cast<decltype(&s.assocs[0])>(nullptr);
}

std::vector<std::string> LiveClusters(const AssocState& s) {
  std::vector<std::string> out;
  for (const auto& c : s.clusters) {
    if (!c.deleted()) out.push_back(c.name());
  }
  return out;
}

// The association a row inherits from: a user's account association, an account's parent's.
const pb::AcctAssoc* ParentAssoc(const AssocState& s, const pb::AcctAssoc& a) {
  if (!a.user().empty()) return FindAssoc(s, a.cluster(), a.account(), "", "");
  if (a.parent_account().empty()) return nullptr;
  return FindAssoc(s, a.cluster(), a.parent_account(), "", "");
}

// QOS names an association may use: its own list, else its parents'.
std::vector<std::string> EffectiveQos(const AssocState& s, const pb::AcctAssoc& a) {
  const pb::AcctAssoc* cur = &a;
  for (int depth = 0; cur && depth < 64; ++depth) {
    if (cur->qos_size() > 0) return {cur->qos().begin(), cur->qos().end()};
    cur = ParentAssoc(s, *cur);
  }
  return {};
}

bool IsDefaultAssoc(const AssocState& s, const pb::AcctAssoc& a) {
  if (a.user().empty()) return false;
  const pb::AcctUser* u = FindUser(s, a.user());
  return u && u->default_account() == a.account();
}

pb::AcctAssoc& NewAssoc(AssocState& s, const std::string& cluster, const std::string& account,
                        const std::string& user, const std::string& partition,
                        const std::string& parent, int64_t now) {
  pb::AcctAssoc a;
  a.set_id(s.next_assoc_id++);
  a.set_cluster(cluster);
  a.set_account(account);
  a.set_user(user);
  a.set_partition(partition);
  a.set_parent_account(user.empty() ? parent : account);
  a.set_shares(1);
  a.set_priority(-1);
  a.set_modified(now);
  s.assocs.push_back(std::move(a));
  return s.assocs.back();
}

// Rows never disappear, so row i of `after` is row i of `before` or new.
template <typename Vec>
void DiffRows(const Vec& before, const Vec& after, Vec* out) {
  for (size_t i = 0; i < after.size(); ++i) {
    if (i >= before.size() || before[i].SerializeAsString() != after[i].SerializeAsString())
      out->push_back(after[i]);
  }
}

void Diff(const AssocState& before, const AssocState& after, AssocChanges* out) {
  if (!out) return;
  DiffRows(before.clusters, after.clusters, &out->clusters);
  DiffRows(before.accounts, after.accounts, &out->accounts);
  DiffRows(before.users, after.users, &out->users);
  DiffRows(before.assocs, after.assocs, &out->assocs);
  DiffRows(before.qos, after.qos, &out->qos);
}

// Slurm's object strings for associations in modify/delete answers.
std::string AssocObject(const pb::AcctAssoc& a) {
  std::string out = "C = " + Pad(a.cluster(), 10) + " A = " + Pad(a.account(), 20);
  if (!a.user().empty()) out += " U = " + Pad(a.user(), 9);
  if (!a.partition().empty()) out += " P = " + a.partition();
  return out;
}

}  // namespace

// ---- Cluster bootstrap ------------------------------------------------------------------------

void EnsureCluster(AssocState& state, const std::string& cluster_in, int64_t now,
                   AssocChanges* changes) {
  AssocState before = state;
  std::string cluster = Lower(cluster_in);
  if (pb::AcctCluster* c = FindNamed(state.clusters, cluster, true)) {
    c->set_deleted(false);
  } else {
    pb::AcctCluster row;
    row.set_name(cluster);
    row.set_registered_time(now);
    state.clusters.push_back(std::move(row));
  }
  if (!FindQos(state, "normal")) {
    pb::AcctQos q;
    q.set_id(state.next_qos_id++);
    q.set_name("normal");
    q.set_description("Normal QOS default");
    q.set_usage_factor(1.0);
    q.set_preempt_mode("cluster");
    state.qos.push_back(std::move(q));
  }
  if (!FindAccount(state, "root")) {
    pb::AcctAccount a;
    a.set_name("root");
    a.set_description("default root account");
    a.set_organization("root");
    if (pb::AcctAccount* old = FindNamed(state.accounts, "root", true)) {
      *old = std::move(a);
    } else {
      state.accounts.push_back(std::move(a));
    }
  }
  if (!FindAssoc(state, cluster, "root", "", "")) {
    NewAssoc(state, cluster, "root", "", "", "", now).add_qos("normal");
  }
  if (!FindUser(state, "root")) {
    pb::AcctUser u;
    u.set_name("root");
    u.set_default_account("root");
    u.set_admin_level("Administrator");
    if (pb::AcctUser* old = FindNamed(state.users, "root", true)) {
      *old = std::move(u);
    } else {
      state.users.push_back(std::move(u));
    }
  }
  if (!FindAssoc(state, cluster, "root", "root", "")) {
    NewAssoc(state, cluster, "root", "root", "", "root", now);
  }
  AssocChanges local;
  Diff(before, state, &local);
  if (!local.empty()) state.version++;
  if (changes) {
    auto append = [](auto& dst, auto& src) {
      for (auto& r : src) dst.push_back(std::move(r));
    };
    append(changes->clusters, local.clusters);
    append(changes->accounts, local.accounts);
    append(changes->users, local.users);
    append(changes->assocs, local.assocs);
    append(changes->qos, local.qos);
  }
}

// ---- Request vocabulary -----------------------------------------------------------------------

namespace {

enum class K {
  kUnknown,
  kName,
  kCluster,
  kAccount,
  kUser,
  kPartition,
  kParent,
  kDescription,
  kOrganization,
  kAdminLevel,
  kDefaultAccount,
  kDefaultWckey,
  kFairshare,
  kGrpJobs,
  kGrpSubmit,
  kGrpTres,
  kGrpTresMins,
  kGrpTresRunMins,
  kGrpWall,
  kMaxJobs,
  kMaxSubmit,
  kMaxTres,
  kMaxTresPerNode,
  kMaxTresMins,
  kMaxWall,
  kPriority,
  kDefaultQos,
  kQos,
  kId,
  kPreempt,
  kPreemptMode,
  kPreemptExemptTime,
  kUsageFactor,
  kUsageThreshold,
  kFlags,
  kGraceTime,
  kMaxTresPerUser,
  kMaxJobsPerAccount,
  kMaxSubmitPerAccount,
  kMinTres,
  kRawUsage,
  kWithDeleted,
};

K KeyOf(std::string_view key) {
  static const std::map<std::string, K> kKeys = {
      {"name", K::kName},
      {"names", K::kName},
      {"cluster", K::kCluster},
      {"clusters", K::kCluster},
      {"account", K::kAccount},
      {"accounts", K::kAccount},
      {"acct", K::kAccount},
      {"accts", K::kAccount},
      {"user", K::kUser},
      {"users", K::kUser},
      {"partition", K::kPartition},
      {"partitions", K::kPartition},
      {"parent", K::kParent},
      {"description", K::kDescription},
      {"descr", K::kDescription},
      {"organization", K::kOrganization},
      {"org", K::kOrganization},
      {"adminlevel", K::kAdminLevel},
      {"admin", K::kAdminLevel},
      {"defaultaccount", K::kDefaultAccount},
      {"defaultacct", K::kDefaultAccount},
      {"defaultwckey", K::kDefaultWckey},
      {"fairshare", K::kFairshare},
      {"share", K::kFairshare},
      {"shares", K::kFairshare},
      {"grpjobs", K::kGrpJobs},
      {"grpsubmit", K::kGrpSubmit},
      {"grpsubmitjobs", K::kGrpSubmit},
      {"grptres", K::kGrpTres},
      {"grptresmins", K::kGrpTresMins},
      {"grptresrunmins", K::kGrpTresRunMins},
      {"grpwall", K::kGrpWall},
      {"maxjobs", K::kMaxJobs},
      {"maxjobsperuser", K::kMaxJobs},
      {"maxjobspu", K::kMaxJobs},
      {"maxsubmit", K::kMaxSubmit},
      {"maxsubmitjobs", K::kMaxSubmit},
      {"maxsubmitjobsperuser", K::kMaxSubmit},
      {"maxsubmitjobspu", K::kMaxSubmit},
      {"maxsubmitpu", K::kMaxSubmit},
      {"maxtres", K::kMaxTres},
      {"maxtresperjob", K::kMaxTres},
      {"maxtrespernode", K::kMaxTresPerNode},
      {"maxtresmins", K::kMaxTresMins},
      {"maxtresminsperjob", K::kMaxTresMins},
      {"maxwall", K::kMaxWall},
      {"maxwalldurationperjob", K::kMaxWall},
      {"priority", K::kPriority},
      {"defaultqos", K::kDefaultQos},
      {"defqos", K::kDefaultQos},
      {"qos", K::kQos},
      {"qoslevel", K::kQos},
      {"id", K::kId},
      {"ids", K::kId},
      {"preempt", K::kPreempt},
      {"preemptmode", K::kPreemptMode},
      {"preemptexempttime", K::kPreemptExemptTime},
      {"usagefactor", K::kUsageFactor},
      {"usagethreshold", K::kUsageThreshold},
      {"flags", K::kFlags},
      {"gracetime", K::kGraceTime},
      {"maxtrespu", K::kMaxTresPerUser},
      {"maxtresperuser", K::kMaxTresPerUser},
      {"maxjobspa", K::kMaxJobsPerAccount},
      {"maxjobsperaccount", K::kMaxJobsPerAccount},
      {"maxsubmitjobspa", K::kMaxSubmitPerAccount},
      {"maxsubmitpa", K::kMaxSubmitPerAccount},
      {"maxsubmitjobsperaccount", K::kMaxSubmitPerAccount},
      {"mintres", K::kMinTres},
      {"mintresperjob", K::kMinTres},
      {"rawusage", K::kRawUsage},
      {"withdeleted", K::kWithDeleted},
  };
  auto it = kKeys.find(Lower(Trim(key)));
  return it == kKeys.end() ? K::kUnknown : it->second;
}

bool IsAssocLimitKey(K k) {
  switch (k) {
    case K::kFairshare:
    case K::kGrpJobs:
    case K::kGrpSubmit:
    case K::kGrpTres:
    case K::kGrpTresMins:
    case K::kGrpTresRunMins:
    case K::kGrpWall:
    case K::kMaxJobs:
    case K::kMaxSubmit:
    case K::kMaxTres:
    case K::kMaxTresPerNode:
    case K::kMaxTresMins:
    case K::kMaxWall:
    case K::kPriority:
    case K::kDefaultQos:
    case K::kQos:
      return true;
    default:
      return false;
  }
}

bool IsQosKey(K k) {
  switch (k) {
    case K::kDescription:
    case K::kPriority:
    case K::kPreempt:
    case K::kPreemptMode:
    case K::kPreemptExemptTime:
    case K::kUsageFactor:
    case K::kUsageThreshold:
    case K::kFlags:
    case K::kGraceTime:
    case K::kGrpJobs:
    case K::kGrpSubmit:
    case K::kGrpTres:
    case K::kGrpTresMins:
    case K::kGrpTresRunMins:
    case K::kGrpWall:
    case K::kMaxJobs:
    case K::kMaxSubmit:
    case K::kMaxTres:
    case K::kMaxTresPerNode:
    case K::kMaxTresMins:
    case K::kMaxWall:
    case K::kMaxTresPerUser:
    case K::kMaxJobsPerAccount:
    case K::kMaxSubmitPerAccount:
    case K::kMinTres:
    case K::kRawUsage:
      return true;
    default:
      return false;
  }
}

std::string KvText(const pb::AcctKeyValue& kv) {
  return kv.key() + (kv.op().empty() ? "=" : kv.op()) + kv.value();
}

Status UnknownOption(const pb::AcctKeyValue& kv) {
  return Fail(" Unknown option: " + KvText(kv) + "\n Use keyword 'where' to modify condition");
}
Status UnknownCondition(const pb::AcctKeyValue& kv) {
  return Fail(" Unknown condition: " + KvText(kv) + "\n Use keyword 'set' to modify value");
}

std::string CanonEntity(std::string_view e) {
  std::string l = Lower(e);
  if (l.empty()) return l;
  auto is = [&](std::string_view full, size_t min) {
    return l.size() >= min && l.size() <= full.size() && full.substr(0, l.size()) == l;
  };
  if (is("accounts", 3) || l == "acct" || l == "accts") return "account";
  if (is("associations", 3)) return "association";
  if (is("clusters", 2)) return "cluster";
  if (is("coordinators", 2)) return "coordinator";
  if (is("qos", 1)) return "qos";
  if (is("users", 1)) return "user";
  if (is("tres", 2)) return "tres";
  return l;
}

// Lowered, validated names for something being created.
Status CheckNewName(const std::string& what, const std::string& name) {
  if (ValidAcctName(name)) return Status::Ok();
  return Fail(" Invalid " + what + " name '" + name +
              "': names may only contain letters, digits, '_', '-' and '.'");
}

// ---- Per-request context ----------------------------------------------------------------------

enum class Level { kNone, kOperator, kAdmin };

Level ParseAdminLevel(std::string_view v, bool* ok) {
  std::string l = Lower(v);
  *ok = true;
  if (l == "none") return Level::kNone;
  if (l == "operator") return Level::kOperator;
  if (l == "admin" || l == "administrator") return Level::kAdmin;
  *ok = false;
  return Level::kNone;
}

const char* LevelName(Level l) {
  switch (l) {
    case Level::kAdmin:
      return "Administrator";
    case Level::kOperator:
      return "Operator";
    default:
      return "None";
  }
}

struct Ctx {
  AssocState work;
  const pb::AcctAdminRequest& req;
  const AdminCaller& caller;
  int64_t now;
  std::string entity;
  pb::AcctAdminResponse resp;

  void Line(std::string s) { resp.add_lines(std::move(s)); }

  Level CallerLevel() const {
    if (caller.is_superuser) return Level::kAdmin;
    const pb::AcctUser* u = FindUser(work, Lower(caller.name));
    if (!u) return Level::kNone;
    bool ok = false;
    return ParseAdminLevel(u->admin_level(), &ok);
  }
  bool IsOperator() const { return CallerLevel() >= Level::kOperator; }

  // The caller coordinates `account` (or one of its ancestors) on `cluster`.
  bool Coordinates(const std::string& cluster, const std::string& account) const {
    const pb::AcctUser* u = FindUser(work, Lower(caller.name));
    if (!u || u->coordinator_of_size() == 0) return false;
    std::string cur = account;
    for (int depth = 0; !cur.empty() && depth < 64; ++depth) {
      if (Contains(std::vector<std::string>(u->coordinator_of().begin(), u->coordinator_of().end()),
                   cur))
        return true;
      const pb::AcctAssoc* a = FindAssoc(work, cluster, cur, "", "");
      if (!a) return false;
      cur = a->parent_account();
    }
    return false;
  }

  Status Denied() const {
    if (req.verb() == pb::AcctAdminRequest::ADD) {
      std::string what = entity == "qos" ? "QOS" : entity + "s";
      return Status(ErrorCode::kAccessDenied,
                    " Problem adding " + what + ": Access/permission denied");
    }
    return Status(ErrorCode::kAccessDenied, " Error with request: Access/permission denied");
  }
};

// Conditions of a where clause (and the positional names).
struct Cond {
  std::vector<std::string> names, clusters, accounts, users, partitions, parents, ids;
  std::vector<std::string> descriptions, organizations;
  std::optional<Level> admin_level;
  bool given = false;
};

void AddAll(std::vector<std::string>* dst, const std::string& value, bool lower) {
  for (const std::string& v : Split(value)) dst->push_back(lower ? Lower(v) : v);
}

// `name_key`: the key that means "name" for this entity (user= for users, ...).
Status ParseWhere(const Ctx& c, K name_key, const std::set<K>& allowed, Cond* out) {
  for (const std::string& n : c.req.names()) AddAll(&out->names, n, true);
  for (const auto& kv : c.req.where()) {
    K k = KeyOf(kv.key());
    if (k == name_key) k = K::kName;
    if (k != K::kName && !allowed.count(k)) return UnknownCondition(kv);
    switch (k) {
      case K::kName:
        AddAll(&out->names, kv.value(), true);
        break;
      case K::kCluster:
        AddAll(&out->clusters, kv.value(), true);
        break;
      case K::kAccount:
        AddAll(&out->accounts, kv.value(), true);
        break;
      case K::kUser:
        AddAll(&out->users, kv.value(), true);
        break;
      case K::kPartition:
        AddAll(&out->partitions, kv.value(), false);
        break;
      case K::kParent:
        AddAll(&out->parents, kv.value(), true);
        break;
      case K::kId:
        AddAll(&out->ids, kv.value(), false);
        break;
      case K::kDescription:
        out->descriptions.push_back(kv.value());
        break;
      case K::kOrganization:
        out->organizations.push_back(kv.value());
        break;
      case K::kAdminLevel: {
        bool ok = false;
        out->admin_level = ParseAdminLevel(kv.value(), &ok);
        if (!ok) return Fail(" Invalid AdminLevel: " + kv.value());
        break;
      }
      default:
        return UnknownCondition(kv);
    }
  }
  out->given = !out->names.empty() || !out->clusters.empty() || !out->accounts.empty() ||
               !out->users.empty() || !out->partitions.empty() || !out->parents.empty() ||
               !out->ids.empty() || !out->descriptions.empty() || !out->organizations.empty() ||
               out->admin_level.has_value();
  return Status::Ok();
}

bool Match(const std::vector<std::string>& filter, const std::string& v) {
  return filter.empty() || Contains(filter, v);
}

// ---- Values -----------------------------------------------------------------------------------

// Limits' numbers: "-1" clears (nullopt), otherwise 0..INT32_MAX.
Result<std::optional<int64_t>> ParseLimitNumber(const pb::AcctKeyValue& kv, int64_t max) {
  std::string v = Trim(kv.value());
  if (v == "-1") return std::optional<int64_t>();
  if (!AllDigits(v) || v.size() > 10 || std::strtoll(v.c_str(), nullptr, 10) > max)
    return Fail(" Bad " + kv.key() + " value: " + kv.value());
  return std::optional<int64_t>(std::strtoll(v.c_str(), nullptr, 10));
}

Result<std::optional<uint32_t>> ParseWall(const pb::AcctKeyValue& kv) {
  std::string v = Trim(kv.value());
  if (v == "-1") return std::optional<uint32_t>();
  auto t = ParseTimeLimit(v);
  if (!t) return Fail(" Bad " + kv.key() + " value: " + kv.value());
  if (*t == kTimeInfinite) return std::optional<uint32_t>();
  return std::optional<uint32_t>(*t);
}

// Assigns a TRES-list limit, merged with what is there (Slurm changes only the TRES named).
Status SetTres(std::string* field, const pb::AcctKeyValue& kv, bool minutes) {
  auto merged = MergeTres(*field, kv.value(), minutes);
  if (!merged) return merged.status();
  *field = *merged;
  return Status::Ok();
}

// A QOS name list with =, += or -= against `current`; names must exist.
Result<std::vector<std::string>> ApplyQosList(const AssocState& s, std::vector<std::string> current,
                                              const pb::AcctKeyValue& kv) {
  std::vector<std::string> names;
  for (const std::string& n : Split(kv.value())) {
    std::string l = Lower(n);
    if (l == "-1") continue;
    if (!FindQos(s, l)) return Fail(" Invalid QOS name: " + n);
    names.push_back(l);
  }
  std::vector<std::string> out;
  if (kv.op() == "+=") {
    out = std::move(current);
    for (auto& n : names) {
      if (!Contains(out, n)) out.push_back(n);
    }
  } else if (kv.op() == "-=") {
    for (auto& n : current) {
      if (!Contains(names, n)) out.push_back(n);
    }
  } else {
    out = std::move(names);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Applies one limit key to `a`'s limits and settings.
Status ApplyAssocKv(const AssocState& s, pb::AcctAssoc* a, const pb::AcctKeyValue& kv) {
  pb::AcctLimits* l = a->mutable_limits();
  K k = KeyOf(kv.key());
  auto num = [&](auto setter, auto clearer) -> Status {
    auto v = ParseLimitNumber(kv, 2147483647);
    if (!v) return v.status();
    if (v->has_value()) {
      setter(static_cast<int32_t>(**v));
    } else {
      clearer();
    }
    return Status::Ok();
  };
  auto wall = [&](auto setter, auto clearer) -> Status {
    auto v = ParseWall(kv);
    if (!v) return v.status();
    if (v->has_value()) {
      setter(**v);
    } else {
      clearer();
    }
    return Status::Ok();
  };
  switch (k) {
    case K::kFairshare: {
      std::string v = Lower(Trim(kv.value()));
      if (v == "parent") {
        a->set_shares(kSharesParent);
      } else if (v == "-1") {
        a->set_shares(1);
      } else if (AllDigits(v) && v.size() <= 9) {
        a->set_shares(static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10)));
      } else {
        return Fail(" Bad " + kv.key() + " value: " + kv.value());
      }
      return Status::Ok();
    }
    case K::kGrpJobs:
      return num([&](int32_t v) { l->set_grp_jobs(v); }, [&] { l->clear_grp_jobs(); });
    case K::kGrpSubmit:
      return num([&](int32_t v) { l->set_grp_submit_jobs(v); },
                 [&] { l->clear_grp_submit_jobs(); });
    case K::kMaxJobs:
      return num([&](int32_t v) { l->set_max_jobs(v); }, [&] { l->clear_max_jobs(); });
    case K::kMaxSubmit:
      return num([&](int32_t v) { l->set_max_submit_jobs(v); },
                 [&] { l->clear_max_submit_jobs(); });
    case K::kMaxJobsPerAccount:
      return num([&](int32_t v) { l->set_max_jobs_per_account(v); },
                 [&] { l->clear_max_jobs_per_account(); });
    case K::kMaxSubmitPerAccount:
      return num([&](int32_t v) { l->set_max_submit_jobs_per_account(v); },
                 [&] { l->clear_max_submit_jobs_per_account(); });
    case K::kGrpTres:
      return SetTres(l->mutable_grp_tres(), kv, false);
    case K::kGrpTresMins:
      return SetTres(l->mutable_grp_tres_mins(), kv, true);
    case K::kGrpTresRunMins:
      return SetTres(l->mutable_grp_tres_run_mins(), kv, true);
    case K::kMaxTres:
      return SetTres(l->mutable_max_tres_per_job(), kv, false);
    case K::kMaxTresPerNode:
      return SetTres(l->mutable_max_tres_per_node(), kv, false);
    case K::kMaxTresMins:
      return SetTres(l->mutable_max_tres_mins_per_job(), kv, true);
    case K::kMaxTresPerUser:
      return SetTres(l->mutable_max_tres_per_user(), kv, false);
    case K::kMinTres:
      return SetTres(l->mutable_min_tres_per_job(), kv, false);
    case K::kMaxWall:
      return wall([&](uint32_t v) { l->set_max_wall_minutes(v); },
                  [&] { l->clear_max_wall_minutes(); });
    case K::kGrpWall:
      return wall([&](uint32_t v) { l->set_grp_wall_minutes(v); },
                  [&] { l->clear_grp_wall_minutes(); });
    case K::kPriority: {
      auto v = ParseLimitNumber(kv, 2147483647);
      if (!v) return v.status();
      a->set_priority(v->has_value() ? static_cast<int32_t>(**v) : -1);
      return Status::Ok();
    }
    case K::kDefaultQos: {
      std::string v = Lower(Trim(kv.value()));
      if (v == "-1" || v.empty() || v == "''") {
        a->clear_default_qos();
        return Status::Ok();
      }
      if (!FindQos(s, v)) return Fail(" Invalid QOS name: " + kv.value());
      a->set_default_qos(v);
      return Status::Ok();
    }
    case K::kQos: {
      auto list = ApplyQosList(s, EffectiveQos(s, *a), kv);
      if (!list) return list.status();
      a->clear_qos();
      for (auto& n : *list) a->add_qos(n);
      return Status::Ok();
    }
    default:
      return UnknownOption(kv);
  }
}

// The lines Slurm prints for the limits being set (sacctmgr_print_assoc_limits).
void AssocLimitLines(Ctx& c, const std::vector<const pb::AcctKeyValue*>& kvs,
                     const pb::AcctAssoc& applied) {
  static const std::map<K, std::string> kNames = {
      {K::kFairshare, "Fairshare"},
      {K::kGrpJobs, "GrpJobs"},
      {K::kGrpSubmit, "GrpSubmitJobs"},
      {K::kGrpTres, "GrpTRES"},
      {K::kGrpTresMins, "GrpTRESMins"},
      {K::kGrpTresRunMins, "GrpTRESRunMins"},
      {K::kGrpWall, "GrpWall"},
      {K::kMaxJobs, "MaxJobs"},
      {K::kMaxSubmit, "MaxSubmitJobs"},
      {K::kMaxTres, "MaxTRESPerJob"},
      {K::kMaxTresPerNode, "MaxTRESPerNode"},
      {K::kMaxTresMins, "MaxTRESMinsPerJob"},
      {K::kMaxWall, "MaxWall"},
      {K::kPriority, "Priority"},
      {K::kDefaultQos, "Default QOS"},
      {K::kQos, "QOS"},
  };
  const pb::AcctLimits& l = applied.limits();
  for (const auto* kv : kvs) {
    K k = KeyOf(kv->key());
    auto it = kNames.find(k);
    if (it == kNames.end()) continue;
    std::string v;
    switch (k) {
      case K::kFairshare:
        v = applied.shares() == kSharesParent ? "parent" : std::to_string(applied.shares());
        break;
      case K::kGrpTres:
        v = l.grp_tres();
        break;
      case K::kGrpTresMins:
        v = l.grp_tres_mins();
        break;
      case K::kGrpTresRunMins:
        v = l.grp_tres_run_mins();
        break;
      case K::kMaxTres:
        v = l.max_tres_per_job();
        break;
      case K::kMaxTresPerNode:
        v = l.max_tres_per_node();
        break;
      case K::kMaxTresMins:
        v = l.max_tres_mins_per_job();
        break;
      case K::kMaxWall:
        v = l.has_max_wall_minutes() ? FormatTimeLimit(l.max_wall_minutes()) : "NONE";
        break;
      case K::kGrpWall:
        v = l.has_grp_wall_minutes() ? FormatTimeLimit(l.grp_wall_minutes()) : "NONE";
        break;
      case K::kDefaultQos:
        v = applied.default_qos();
        break;
      case K::kQos: {
        for (const auto& q : applied.qos()) v += (v.empty() ? "" : ",") + q;
        break;
      }
      default:
        v = Trim(kv->value()) == "-1" ? "NONE" : Trim(kv->value());
    }
    if (v.empty()) v = "NONE";
    c.Line("  " + Pad(it->second, 13) + " = " + v);
  }
}

}  // namespace

// ---- add --------------------------------------------------------------------------------------

namespace {

// Splits an add request's options: names, clusters, etc. and the association limits.
struct AddSpec {
  std::vector<std::string> names, clusters, accounts, partitions;
  std::string parent, description, organization, default_account;
  std::optional<Level> admin_level;
  bool description_set = false, organization_set = false;
  std::vector<const pb::AcctKeyValue*> limits;  // association (or QOS) settings
  bool any_option = false;
};

Status ParseAdd(Ctx& c, AddSpec* spec) {
  for (const std::string& n : c.req.names()) AddAll(&spec->names, n, true);
  auto all = [&](const google::protobuf::RepeatedPtrField<pb::AcctKeyValue>& kvs) -> Status {
    for (const auto& kv : kvs) {
      K k = KeyOf(kv.key());
      const std::string& e = c.entity;
      // Keys naming the entity itself (add user name=bob, add account account=x).
      if ((e == "user" && k == K::kUser) || (e == "cluster" && k == K::kCluster)) k = K::kName;
      spec->any_option = spec->any_option || k != K::kName;
      bool qos = e == "qos";
      switch (k) {
        case K::kName:
          AddAll(&spec->names, kv.value(), true);
          continue;
        case K::kCluster:
          if (e == "account" || e == "user") {
            AddAll(&spec->clusters, kv.value(), true);
            continue;
          }
          break;
        case K::kAccount:
          if (e == "user" || e == "coordinator") {
            AddAll(&spec->accounts, kv.value(), true);
            continue;
          }
          break;
        case K::kPartition:
          if (e == "user") {
            AddAll(&spec->partitions, kv.value(), false);
            continue;
          }
          break;
        case K::kParent:
          if (e == "account") {
            spec->parent = Lower(Trim(kv.value()));
            continue;
          }
          break;
        case K::kDescription:
          if (e == "account" || qos) {
            spec->description = kv.value();
            spec->description_set = true;
            if (qos) spec->limits.push_back(&kv);
            continue;
          }
          break;
        case K::kOrganization:
          if (e == "account") {
            spec->organization = kv.value();
            spec->organization_set = true;
            continue;
          }
          break;
        case K::kDefaultAccount:
          if (e == "user") {
            spec->default_account = Lower(Trim(kv.value()));
            continue;
          }
          break;
        case K::kDefaultWckey:
          if (e == "user") continue;  // accepted, not tracked (no TrackWCKey)
          break;
        case K::kAdminLevel:
          if (e == "user") {
            bool ok = false;
            spec->admin_level = ParseAdminLevel(kv.value(), &ok);
            if (!ok) return Fail(" Invalid AdminLevel: " + kv.value());
            continue;
          }
          break;
        default:
          break;
      }
      if (qos ? IsQosKey(k) : (IsAssocLimitKey(k) && e != "coordinator")) {
        spec->limits.push_back(&kv);
        continue;
      }
      return UnknownOption(kv);
    }
    return Status::Ok();
  };
  Status st = all(c.req.set());
  if (!st.ok()) return st;
  return all(c.req.where());
}

Status AddAccounts(Ctx& c) {
  AddSpec spec;
  if (Status st = ParseAdd(c, &spec); !st.ok()) return st;
  if (spec.names.empty()) return Fail(" Need name of account to add.");
  for (const auto& n : spec.names) {
    if (Status st = CheckNewName("account", n); !st.ok()) return st;
  }
  std::string parent = spec.parent.empty() ? "root" : spec.parent;
  std::vector<std::string> clusters = spec.clusters.empty() ? LiveClusters(c.work) : spec.clusters;
  if (clusters.empty())
    return Fail(
        " Can't add accounts, no cluster defined yet.\n"
        " Please contact your administrator.");
  for (const auto& cl : clusters) {
    if (!FindCluster(c.work, cl))
      return Fail(" This cluster '" + cl +
                  "' doesn't exist.\n"
                  "        Contact your admin to add it to accounting.");
    if (!FindAssoc(c.work, cl, parent, "", ""))
      return Fail(" error: Parent account '" + parent + "' doesn't exist on cluster " + cl);
    if (!c.IsOperator() && !c.Coordinates(cl, parent)) return c.Denied();
  }
  // Validate the limits once on a scratch association.
  pb::AcctAssoc proto;
  proto.set_shares(1);
  proto.set_priority(-1);
  for (const auto* kv : spec.limits) {
    if (Status st = ApplyAssocKv(c.work, &proto, *kv); !st.ok()) return st;
  }
  std::vector<std::string> added_accts, assoc_lines;
  for (const auto& name : spec.names) {
    if (!FindAccount(c.work, name)) {
      pb::AcctAccount acct;
      acct.set_name(name);
      acct.set_description(spec.description_set ? spec.description : name);
      acct.set_organization(spec.organization_set ? spec.organization
                                                  : (parent != "root" ? parent : name));
      if (pb::AcctAccount* old = FindNamed(c.work.accounts, name, true)) {
        *old = std::move(acct);
      } else {
        c.work.accounts.push_back(std::move(acct));
      }
      added_accts.push_back(name);
    }
    for (const auto& cl : clusters) {
      if (FindAssoc(c.work, cl, name, "", "")) continue;
      pb::AcctAssoc& a = NewAssoc(c.work, cl, name, "", "", parent, c.now);
      for (const auto* kv : spec.limits) {
        if (Status st = ApplyAssocKv(c.work, &a, *kv); !st.ok()) return st;
      }
      assoc_lines.push_back("  A = " + PadCut(name, 10) + " C = " + PadCut(cl, 10));
    }
  }
  if (added_accts.empty() && assoc_lines.empty()) {
    c.Line(" Nothing new added.");
    return Status::Ok();
  }
  if (!added_accts.empty()) {
    c.Line(" Adding Account(s)");
    for (const auto& n : added_accts) c.Line("  " + n);
    c.Line(" Settings");
    c.Line("  Description     = " + (spec.description_set ? spec.description : "Account Name"));
    c.Line("  Organization    = " +
           (spec.organization_set ? spec.organization : "Parent/Account Name"));
  }
  c.Line(" Associations");
  for (auto& l : assoc_lines) c.Line(l);
  if (spec.any_option) {
    c.Line(" Settings");
    c.Line("  Parent        = " + parent);
    AssocLimitLines(c, spec.limits, proto);
  }
  return Status::Ok();
}

Status AddUsers(Ctx& c) {
  AddSpec spec;
  if (Status st = ParseAdd(c, &spec); !st.ok()) return st;
  if (spec.names.empty()) return Fail(" Need name of user to add.");
  for (const auto& n : spec.names) {
    if (Status st = CheckNewName("user", n); !st.ok()) return st;
  }
  std::vector<std::string> accounts = spec.accounts;
  if (!spec.default_account.empty() && !Contains(accounts, spec.default_account))
    accounts.insert(accounts.begin(), spec.default_account);
  if (accounts.empty()) return Fail(" Need name of account to add user to.");
  std::vector<std::string> clusters = spec.clusters.empty() ? LiveClusters(c.work) : spec.clusters;
  if (clusters.empty())
    return Fail(
        " Can't add users, no cluster defined yet.\n"
        " Please contact your administrator.");
  for (const auto& acct : accounts) {
    if (!FindAccount(c.work, acct))
      return Fail(" This account '" + acct +
                  "' doesn't exist.\n"
                  "        Contact your admin to add this account.");
  }
  bool op = c.IsOperator();
  if (spec.admin_level && !op) return c.Denied();
  if (spec.admin_level == Level::kAdmin && c.CallerLevel() != Level::kAdmin) return c.Denied();
  for (const auto& cl : clusters) {
    if (!FindCluster(c.work, cl))
      return Fail(" This cluster '" + cl +
                  "' doesn't exist.\n"
                  "        Contact your admin to add it to accounting.");
    for (const auto& acct : accounts) {
      if (!FindAssoc(c.work, cl, acct, "", ""))
        return Fail(" This account '" + acct + "' doesn't exist on cluster " + cl +
                    "\n"
                    "        Contact your admin to add this account.");
      if (!op && !c.Coordinates(cl, acct)) return c.Denied();
    }
  }
  pb::AcctAssoc proto;
  for (const auto* kv : spec.limits) {
    if (Status st = ApplyAssocKv(c.work, &proto, *kv); !st.ok()) return st;
  }
  std::vector<std::string> partitions = spec.partitions;
  if (partitions.empty()) partitions.push_back("");
  std::vector<std::string> added_users, assoc_lines;
  for (const auto& name : spec.names) {
    if (!FindUser(c.work, name)) {
      pb::AcctUser u;
      u.set_name(name);
      u.set_default_account(accounts.front());
      u.set_admin_level(LevelName(spec.admin_level.value_or(Level::kNone)));
      if (pb::AcctUser* old = FindNamed(c.work.users, name, true)) {
        *old = std::move(u);
      } else {
        c.work.users.push_back(std::move(u));
      }
      added_users.push_back(name);
    } else if (pb::AcctUser* u = FindUser(c.work, name); u->default_account().empty()) {
      u->set_default_account(accounts.front());
    }
    for (const auto& acct : accounts) {
      for (const auto& cl : clusters) {
        for (const auto& part : partitions) {
          if (FindAssoc(c.work, cl, acct, name, part)) continue;
          pb::AcctAssoc& a = NewAssoc(c.work, cl, acct, name, part, acct, c.now);
          for (const auto* kv : spec.limits) {
            if (Status st = ApplyAssocKv(c.work, &a, *kv); !st.ok()) return st;
          }
          std::string line =
              "  U = " + PadCut(name, 9) + " A = " + PadCut(acct, 10) + " C = " + PadCut(cl, 10);
          if (!part.empty()) line += " P = " + PadCut(part, 10);
          assoc_lines.push_back(std::move(line));
        }
      }
    }
  }
  if (added_users.empty() && assoc_lines.empty()) {
    c.Line(" Nothing new added.");
    return Status::Ok();
  }
  if (!added_users.empty()) {
    c.Line(" Adding User(s)");
    for (const auto& n : added_users) c.Line("  " + n);
    if (!spec.default_account.empty() || spec.admin_level) c.Line(" Settings =");
    if (!spec.default_account.empty()) c.Line("  Default Account = " + spec.default_account);
    if (spec.admin_level)
      c.Line(std::string("  Admin Level     = ") + LevelName(*spec.admin_level));
  }
  c.Line(" Associations =");
  for (auto& l : assoc_lines) c.Line(l);
  c.Line(" Non Default Settings");
  AssocLimitLines(c, spec.limits, proto);
  return Status::Ok();
}

Status AddClusters(Ctx& c) {
  AddSpec spec;
  if (Status st = ParseAdd(c, &spec); !st.ok()) return st;
  if (spec.names.empty()) return Fail(" You need to specify a cluster name to add.");
  if (!c.IsOperator()) return c.Denied();
  std::vector<std::string> added;
  for (const auto& name : spec.names) {
    if (Status st = CheckNewName("cluster", name); !st.ok()) return st;
    if (FindCluster(c.work, name)) {
      c.Line(" This cluster " + name + " already exists.  Not adding.");
      continue;
    }
    EnsureCluster(c.work, name, c.now, nullptr);
    pb::AcctAssoc* root = FindAssoc(c.work, name, "root", "", "");
    for (const auto* kv : spec.limits) {
      if (Status st = ApplyAssocKv(c.work, root, *kv); !st.ok()) return st;
    }
    added.push_back(name);
  }
  if (added.empty()) {
    c.Line(" Nothing new added.");
    return Status::Ok();
  }
  c.Line(" Adding Cluster(s)");
  for (const auto& n : added) c.Line("  Name           = " + n);
  return Status::Ok();
}

// The QOS settings (sacctmgr_print_qos_limits) after `kvs` were applied to `q`.
Status ApplyQosKv(const AssocState& s, pb::AcctQos* q, const pb::AcctKeyValue& kv) {
  K k = KeyOf(kv.key());
  std::string v = Trim(kv.value());
  switch (k) {
    case K::kDescription:
      q->set_description(kv.value());
      return Status::Ok();
    case K::kPriority: {
      auto n = ParseLimitNumber(kv, 4294967294LL);
      if (!n) return n.status();
      q->set_priority(n->has_value() ? static_cast<uint32_t>(**n) : 0);
      return Status::Ok();
    }
    case K::kPreempt: {
      std::vector<std::string> cur(q->preempt().begin(), q->preempt().end());
      auto list = ApplyQosList(s, cur, kv);
      if (!list) return list.status();
      if (Contains(*list, q->name())) return Fail(" QOS " + q->name() + " can't preempt itself");
      q->clear_preempt();
      for (auto& n : *list) q->add_preempt(n);
      return Status::Ok();
    }
    case K::kPreemptMode: {
      std::string out;
      for (const std::string& m : Split(Lower(v))) {
        static const std::set<std::string> kModes = {"cluster", "cancel", "requeue", "suspend",
                                                     "off",     "gang",   "within"};
        if (!kModes.count(m)) return Fail(" Unknown preempt mode: " + kv.value());
        out += (out.empty() ? "" : ",") + m;
      }
      q->set_preempt_mode(out.empty() || out == "off" ? "cluster" : out);
      return Status::Ok();
    }
    case K::kPreemptExemptTime: {
      if (v == "-1") {
        q->set_preempt_exempt_time_s(0);
        return Status::Ok();
      }
      auto d = ParseDurationSeconds(v);
      if (!d || *d < 0) return Fail(" Bad " + kv.key() + " value: " + kv.value());
      q->set_preempt_exempt_time_s(*d);
      return Status::Ok();
    }
    case K::kGraceTime: {
      if (v == "-1") {
        q->set_grace_time_s(0);
        return Status::Ok();
      }
      int64_t secs = -1;
      if (AllDigits(v) && v.size() <= 9) {
        secs = std::strtoll(v.c_str(), nullptr, 10);  // GraceTime is in seconds
      } else if (auto d = ParseDurationSeconds(v); d && *d >= 0) {
        secs = *d;
      }
      if (secs < 0) return Fail(" Bad " + kv.key() + " value: " + kv.value());
      q->set_grace_time_s(static_cast<uint32_t>(secs));
      return Status::Ok();
    }
    case K::kUsageFactor:
    case K::kUsageThreshold: {
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || (d < 0 && v != "-1"))
        return Fail(" Bad " + kv.key() + " value: " + kv.value());
      if (k == K::kUsageFactor) {
        q->set_usage_factor(v == "-1" ? 1.0 : d);
      } else {
        q->set_usage_threshold(v == "-1" ? 0.0 : d);
      }
      return Status::Ok();
    }
    case K::kFlags: {
      static const std::vector<std::string> kFlags = {
          "DenyOnLimit",         "EnforceUsageThreshold", "NoDecay",           "NoReserve",
          "OverPartQOS",         "PartitionMaxNodes",     "PartitionMinNodes", "PartitionTimeLimit",
          "RequiresReservation", "UsageFactorSafe"};
      std::vector<std::string> given;
      for (const std::string& f : Split(v)) {
        if (f == "-1" || Lower(f) == "none") continue;
        auto it = std::find_if(kFlags.begin(), kFlags.end(),
                               [&](const std::string& x) { return Lower(x) == Lower(f); });
        if (it == kFlags.end()) return Fail(" Unknown QOS flag: " + f);
        given.push_back(*it);
      }
      std::vector<std::string> cur(q->flags().begin(), q->flags().end()), out;
      if (kv.op() == "+=") {
        out = cur;
        for (auto& f : given) {
          if (!Contains(out, f)) out.push_back(f);
        }
      } else if (kv.op() == "-=") {
        for (auto& f : cur) {
          if (!Contains(given, f)) out.push_back(f);
        }
      } else {
        out = given;
      }
      q->clear_flags();
      for (const auto& f : kFlags) {
        if (Contains(out, f)) q->add_flags(f);
      }
      return Status::Ok();
    }
    case K::kRawUsage:
      if (v != "0") return Fail(" RawUsage can only be set to 0");
      return Status::Ok();
    default: {
      if (!IsQosKey(k)) return UnknownOption(kv);
      // The shared limits: reuse the association code on a scratch row.
      pb::AcctAssoc scratch;
      *scratch.mutable_limits() = q->limits();
      if (Status st = ApplyAssocKv(s, &scratch, kv); !st.ok()) return st;
      *q->mutable_limits() = scratch.limits();
      return Status::Ok();
    }
  }
}

void QosSettingLines(Ctx& c, const std::vector<const pb::AcctKeyValue*>& kvs,
                     const pb::AcctQos& q) {
  for (const auto* kv : kvs) {
    K k = KeyOf(kv->key());
    if (k == K::kDescription) continue;
    std::string name = kv->key(), v;
    const pb::AcctLimits& l = q.limits();
    switch (k) {
      case K::kPriority:
        name = "Priority";
        v = std::to_string(q.priority());
        break;
      case K::kPreempt: {
        name = "Preempt";
        for (const auto& p : q.preempt()) v += (v.empty() ? "" : ",") + p;
        break;
      }
      case K::kPreemptMode:
        name = "PreemptMode";
        v = q.preempt_mode();
        break;
      case K::kGraceTime:
        name = "GraceTime";
        v = std::to_string(q.grace_time_s());
        break;
      case K::kFlags: {
        name = "Flags";
        for (const auto& f : q.flags()) v += (v.empty() ? "" : ",") + f;
        break;
      }
      case K::kMaxWall:
        name = "MaxWall";
        v = l.has_max_wall_minutes() ? FormatTimeLimit(l.max_wall_minutes()) : "";
        break;
      case K::kGrpTres:
        name = "GrpTRES";
        v = l.grp_tres();
        break;
      case K::kMaxTres:
        name = "MaxTRESPerJob";
        v = l.max_tres_per_job();
        break;
      case K::kMaxTresPerUser:
        name = "MaxTRESPerUser";
        v = l.max_tres_per_user();
        break;
      default:
        v = Trim(kv->value());
        break;
    }
    if (v.empty() || v == "-1") v = "NONE";
    c.Line("  " + Pad(name, 24) + " = " + v);
  }
}

Status AddQos(Ctx& c) {
  AddSpec spec;
  if (Status st = ParseAdd(c, &spec); !st.ok()) return st;
  if (spec.names.empty()) return Fail(" Need name of QOS to add.");
  if (!c.IsOperator()) return c.Denied();
  std::vector<std::string> added;
  for (const auto& name : spec.names) {
    if (Status st = CheckNewName("QOS", name); !st.ok()) return st;
    if (FindQos(c.work, name)) continue;
    pb::AcctQos q;
    q.set_id(c.work.next_qos_id++);
    q.set_name(name);
    q.set_description(name);
    q.set_usage_factor(1.0);
    q.set_preempt_mode("cluster");
    c.work.qos.push_back(q);  // first, so Preempt may name a QOS added alongside
    for (const auto* kv : spec.limits) {
      if (Status st = ApplyQosKv(c.work, &c.work.qos.back(), *kv); !st.ok()) return st;
    }
    added.push_back(name);
  }
  if (added.empty()) {
    c.Line(" Nothing new added.");
    return Status::Ok();
  }
  c.Line(" Adding QOS(s)");
  for (const auto& n : added) c.Line("  " + n);
  c.Line(" Settings");
  c.Line("  Description    = " + (spec.description_set ? spec.description : added.front()));
  QosSettingLines(c, spec.limits, *FindQos(c.work, added.front()));
  return Status::Ok();
}

Status AddCoordinators(Ctx& c) {
  AddSpec spec;
  if (Status st = ParseAdd(c, &spec); !st.ok()) return st;
  if (spec.names.empty() || spec.accounts.empty())
    return Fail(" You need to specify a user list and account list here.");
  if (!c.IsOperator()) return c.Denied();
  for (const auto& a : spec.accounts) {
    if (!FindAccount(c.work, a)) return Fail(" Account '" + a + "' doesn't exist.");
  }
  std::vector<std::string> users;
  for (const auto& n : spec.names) {
    pb::AcctUser* u = FindUser(c.work, n);
    if (!u) return Fail(" User '" + n + "' doesn't exist.");
    bool changed = false;
    for (const auto& a : spec.accounts) {
      if (std::find(u->coordinator_of().begin(), u->coordinator_of().end(), a) ==
          u->coordinator_of().end()) {
        u->add_coordinator_of(a);
        changed = true;
      }
    }
    if (changed) users.push_back(n);
  }
  if (users.empty()) {
    c.Line(" Nothing new added.");
    return Status::Ok();
  }
  c.Line(" Adding Coordinator User(s)");
  for (const auto& n : users) c.Line("  " + n);
  c.Line(" To Account(s) and all sub-accounts");
  for (const auto& a : spec.accounts) c.Line("  " + a);
  return Status::Ok();
}

}  // namespace

// ---- modify -----------------------------------------------------------------------------------

namespace {

// Applies `kvs` to `a`; true when it changed (its `modified` stamp is then refreshed).
Result<bool> ModifyAssoc(Ctx& c, pb::AcctAssoc* a,
                         const std::vector<const pb::AcctKeyValue*>& kvs) {
  std::string before = a->SerializeAsString();
  for (const auto* kv : kvs) {
    if (Status st = ApplyAssocKv(c.work, a, *kv); !st.ok()) return st;
  }
  if (a->SerializeAsString() == before) return false;
  a->set_modified(c.now);
  return true;
}

// Moves an account association under `parent` (modify account set parent=).
Status Reparent(Ctx& c, pb::AcctAssoc* a, const std::string& parent) {
  if (a->account() == "root") return Fail(" The root account can't have a parent");
  if (!FindAssoc(c.work, a->cluster(), parent, "", ""))
    return Fail(" error: Parent account '" + parent + "' doesn't exist on cluster " + a->cluster());
  // Refuse cycles: `parent` must not be `a` or below it.
  std::string cur = parent;
  for (int depth = 0; !cur.empty() && depth < 64; ++depth) {
    if (cur == a->account())
      return Fail(" Can't set parent of " + a->account() + " to " + parent +
                  ": it is one of its sub-accounts");
    const pb::AcctAssoc* p = FindAssoc(c.work, a->cluster(), cur, "", "");
    cur = p ? p->parent_account() : "";
  }
  a->set_parent_account(parent);
  return Status::Ok();
}

// Validates `kvs` on a scratch association so bad values fail even when nothing matches.
Status CheckAssocKvs(Ctx& c, const std::vector<const pb::AcctKeyValue*>& kvs) {
  pb::AcctAssoc scratch;
  for (const auto* kv : kvs) {
    if (Status st = ApplyAssocKv(c.work, &scratch, *kv); !st.ok()) return st;
  }
  return Status::Ok();
}

Status NeedSet(const Ctx& c) {
  if (c.req.set_size() == 0) return Fail(" You didn't give me anything to set");
  return Status::Ok();
}

Status ModifyUsers(Ctx& c) {
  if (Status st = NeedSet(c); !st.ok()) return st;
  Cond cond;
  std::set<K> where = {K::kCluster, K::kAccount, K::kPartition, K::kAdminLevel, K::kDefaultAccount};
  if (Status st = ParseWhere(c, K::kUser, where, &cond); !st.ok()) return st;
  if (cond.names.empty() && !cond.given)
    return Fail(" No conditions given to modify, not executing.");
  std::optional<Level> new_level;
  std::string new_default;
  std::vector<const pb::AcctKeyValue*> limits;
  for (const auto& kv : c.req.set()) {
    K k = KeyOf(kv.key());
    if (k == K::kAdminLevel) {
      bool ok = false;
      new_level = ParseAdminLevel(kv.value(), &ok);
      if (!ok) return Fail(" Invalid AdminLevel: " + kv.value());
    } else if (k == K::kDefaultAccount) {
      new_default = Lower(Trim(kv.value()));
    } else if (k == K::kDefaultWckey) {
      continue;
    } else if (IsAssocLimitKey(k)) {
      limits.push_back(&kv);
    } else {
      return UnknownOption(kv);
    }
  }
  if (Status st = CheckAssocKvs(c, limits); !st.ok()) return st;
  bool op = c.IsOperator();
  if (new_level && !op) return c.Denied();
  if (new_level == Level::kAdmin && c.CallerLevel() != Level::kAdmin) return c.Denied();

  std::vector<std::string> modified_users;
  if (new_level || !new_default.empty()) {
    std::vector<std::string> missing;
    for (auto& u : c.work.users) {
      if (u.deleted() || !Match(cond.names, u.name())) continue;
      bool ok = false;
      if (cond.admin_level && ParseAdminLevel(u.admin_level(), &ok) != *cond.admin_level) continue;
      std::string before = u.SerializeAsString();
      if (new_level) {
        if (!op) return c.Denied();
        if (ParseAdminLevel(u.admin_level(), &ok) == Level::kAdmin &&
            c.CallerLevel() != Level::kAdmin)
          return c.Denied();
        u.set_admin_level(LevelName(*new_level));
      }
      if (!new_default.empty()) {
        bool has = false, allowed = op;
        for (const auto& a : c.work.assocs) {
          if (a.deleted() || a.user() != u.name() || a.account() != new_default) continue;
          has = true;
          allowed = allowed || c.Coordinates(a.cluster(), a.account());
        }
        if (!has) {
          missing.push_back(u.name());
          continue;
        }
        if (!allowed) return c.Denied();
        u.set_default_account(new_default);
      }
      if (u.SerializeAsString() != before) modified_users.push_back(u.name());
    }
    if (!missing.empty()) {
      std::string msg =
          " Can't modify because these users aren't associated with new default "
          "account '" +
          new_default + "'...";
      for (const auto& m : missing) msg += "\n  U = " + m;
      return Fail(msg);
    }
  }
  std::vector<std::string> modified_assocs;
  if (!limits.empty()) {
    for (auto& a : c.work.assocs) {
      if (a.deleted() || a.user().empty()) continue;
      if (!Match(cond.names, a.user()) || !Match(cond.clusters, a.cluster()) ||
          !Match(cond.accounts, a.account()) || !Match(cond.partitions, a.partition()))
        continue;
      if (!op && !c.Coordinates(a.cluster(), a.account())) return c.Denied();
      auto changed = ModifyAssoc(c, &a, limits);
      if (!changed) return changed.status();
      if (*changed) modified_assocs.push_back(AssocObject(a));
    }
  }
  if (modified_users.empty() && modified_assocs.empty()) {
    c.Line(" Nothing modified");
    return Status::Ok();
  }
  if (!modified_users.empty()) {
    c.Line(" Modified users...");
    for (const auto& n : modified_users) c.Line("  " + n);
  }
  if (!modified_assocs.empty()) {
    c.Line(" Modified user associations...");
    for (const auto& n : modified_assocs) c.Line("  " + n);
  }
  return Status::Ok();
}

Status ModifyAccounts(Ctx& c) {
  if (Status st = NeedSet(c); !st.ok()) return st;
  Cond cond;
  std::set<K> where = {K::kCluster, K::kParent, K::kDescription, K::kOrganization};
  if (Status st = ParseWhere(c, K::kAccount, where, &cond); !st.ok()) return st;
  if (!cond.given) return Fail(" No conditions given to modify, not executing.");
  std::optional<std::string> descr, org, parent;
  std::vector<const pb::AcctKeyValue*> limits;
  for (const auto& kv : c.req.set()) {
    K k = KeyOf(kv.key());
    if (k == K::kDescription)
      descr = kv.value();
    else if (k == K::kOrganization)
      org = kv.value();
    else if (k == K::kParent)
      parent = Lower(Trim(kv.value()));
    else if (IsAssocLimitKey(k))
      limits.push_back(&kv);
    else
      return UnknownOption(kv);
  }
  if (Status st = CheckAssocKvs(c, limits); !st.ok()) return st;
  bool op = c.IsOperator();
  std::vector<std::string> modified_accts, modified_assocs;
  if (descr || org) {
    for (auto& a : c.work.accounts) {
      if (a.deleted() || !Match(cond.names, a.name()) ||
          !Match(cond.descriptions, a.description()) ||
          !Match(cond.organizations, a.organization()))
        continue;
      if (!op) return c.Denied();
      std::string before = a.SerializeAsString();
      if (descr) a.set_description(*descr);
      if (org) a.set_organization(*org);
      if (a.SerializeAsString() != before) modified_accts.push_back(a.name());
    }
  }
  if (!limits.empty() || parent) {
    for (auto& a : c.work.assocs) {
      if (a.deleted() || !a.user().empty() || !Match(cond.names, a.account()) ||
          !Match(cond.clusters, a.cluster()) || !Match(cond.parents, a.parent_account()))
        continue;
      if (!op && !c.Coordinates(a.cluster(), a.parent_account())) return c.Denied();
      std::string before = a.SerializeAsString();
      if (parent) {
        if (!op && !c.Coordinates(a.cluster(), *parent)) return c.Denied();
        if (Status st = Reparent(c, &a, *parent); !st.ok()) return st;
      }
      auto changed = ModifyAssoc(c, &a, limits);
      if (!changed) return changed.status();
      if (a.SerializeAsString() != before) {
        a.set_modified(c.now);
        modified_assocs.push_back(AssocObject(a));
      }
    }
  }
  if (modified_accts.empty() && modified_assocs.empty()) {
    c.Line(" Nothing modified");
    return Status::Ok();
  }
  if (!modified_accts.empty()) {
    c.Line(" Modified accounts...");
    for (const auto& n : modified_accts) c.Line("  " + n);
  }
  if (!modified_assocs.empty()) {
    c.Line(" Modified account associations...");
    for (const auto& n : modified_assocs) c.Line("  " + n);
  }
  return Status::Ok();
}

Status ModifyAssocs(Ctx& c) {
  if (Status st = NeedSet(c); !st.ok()) return st;
  Cond cond;
  std::set<K> where = {K::kCluster, K::kAccount, K::kUser, K::kPartition, K::kId};
  if (Status st = ParseWhere(c, K::kId, where, &cond); !st.ok()) return st;
  if (!cond.given) return Fail(" No conditions given to modify, not executing.");
  std::vector<const pb::AcctKeyValue*> limits;
  for (const auto& kv : c.req.set()) {
    if (!IsAssocLimitKey(KeyOf(kv.key()))) return UnknownOption(kv);
    limits.push_back(&kv);
  }
  if (Status st = CheckAssocKvs(c, limits); !st.ok()) return st;
  bool op = c.IsOperator();
  std::vector<std::string> modified;
  for (auto& a : c.work.assocs) {
    if (a.deleted() || !Match(cond.names, std::to_string(a.id())) ||
        !Match(cond.clusters, a.cluster()) || !Match(cond.accounts, a.account()) ||
        !Match(cond.users, a.user()) || !Match(cond.partitions, a.partition()))
      continue;
    std::string scope = a.user().empty() ? a.parent_account() : a.account();
    if (!op && !c.Coordinates(a.cluster(), scope)) return c.Denied();
    auto changed = ModifyAssoc(c, &a, limits);
    if (!changed) return changed.status();
    if (*changed) modified.push_back(AssocObject(a));
  }
  if (modified.empty()) {
    c.Line(" Nothing modified");
    return Status::Ok();
  }
  c.Line(" Modified associations...");
  for (const auto& n : modified) c.Line("  " + n);
  return Status::Ok();
}

Status ModifyClusters(Ctx& c) {
  if (Status st = NeedSet(c); !st.ok()) return st;
  Cond cond;
  if (Status st = ParseWhere(c, K::kCluster, {}, &cond); !st.ok()) return st;
  if (!cond.given) return Fail(" No conditions given to modify, not executing.");
  std::vector<const pb::AcctKeyValue*> limits;
  for (const auto& kv : c.req.set()) {
    if (!IsAssocLimitKey(KeyOf(kv.key()))) return UnknownOption(kv);
    limits.push_back(&kv);
  }
  if (Status st = CheckAssocKvs(c, limits); !st.ok()) return st;
  if (!c.IsOperator()) return c.Denied();
  std::vector<std::string> modified;
  for (const auto& name : cond.names) {
    pb::AcctAssoc* root = FindAssoc(c.work, name, "root", "", "");
    if (!root) continue;
    auto changed = ModifyAssoc(c, root, limits);
    if (!changed) return changed.status();
    if (*changed) modified.push_back(name);
  }
  if (modified.empty()) {
    c.Line(" Nothing modified");
    return Status::Ok();
  }
  c.Line(" Modified cluster...");
  for (const auto& n : modified) c.Line("  " + n);
  return Status::Ok();
}

Status ModifyQos(Ctx& c) {
  if (Status st = NeedSet(c); !st.ok()) return st;
  Cond cond;
  if (Status st = ParseWhere(c, K::kName, {K::kId, K::kDescription}, &cond); !st.ok()) return st;
  if (!cond.given) return Fail(" No conditions given to modify, not executing.");
  for (const auto& kv : c.req.set()) {
    if (!IsQosKey(KeyOf(kv.key()))) return UnknownOption(kv);
  }
  pb::AcctQos scratch;  // validate first
  for (const auto& kv : c.req.set()) {
    if (Status st = ApplyQosKv(c.work, &scratch, kv); !st.ok()) return st;
  }
  if (!c.IsOperator()) return c.Denied();
  std::vector<std::string> modified;
  for (auto& q : c.work.qos) {
    if (q.deleted() || !Match(cond.names, q.name()) || !Match(cond.ids, std::to_string(q.id())) ||
        !Match(cond.descriptions, q.description()))
      continue;
    std::string before = q.SerializeAsString();
    for (const auto& kv : c.req.set()) {
      if (Status st = ApplyQosKv(c.work, &q, kv); !st.ok()) return st;
    }
    if (q.SerializeAsString() != before) modified.push_back(q.name());
  }
  if (modified.empty()) {
    c.Line(" Nothing modified");
    return Status::Ok();
  }
  c.Line(" Modified qos...");
  for (const auto& n : modified) c.Line("  " + n);
  return Status::Ok();
}

// ---- delete -----------------------------------------------------------------------------------

Status NeedConditions(const Cond& cond) {
  if (!cond.given) return Fail(" No conditions given to remove, not executing.");
  return Status::Ok();
}

// Marks `doomed` (association indexes) deleted, refusing to remove a user's default account
// while the user keeps other associations (Slurm's ESLURM_NO_REMOVE_DEFAULT_ACCOUNT).
Status RemoveAssocs(Ctx& c, const std::set<size_t>& doomed) {
  std::vector<std::string> offending;
  for (size_t i : doomed) {
    const pb::AcctAssoc& a = c.work.assocs[i];
    if (a.user().empty() || !IsDefaultAssoc(c.work, a)) continue;
    bool keeps_other = false;
    for (size_t j = 0; j < c.work.assocs.size(); ++j) {
      const pb::AcctAssoc& b = c.work.assocs[j];
      if (!b.deleted() && b.user() == a.user() && !doomed.count(j) && b.cluster() == a.cluster())
        keeps_other = true;
    }
    if (keeps_other) offending.push_back(AssocObject(a));
  }
  if (!offending.empty()) {
    std::string msg = " Error with request: You can not remove the default account of a user";
    for (const auto& o : offending) msg += "\n  " + o;
    msg +=
        "\n You must change the default account of these users or remove all their "
        "associations before removing these";
    return Fail(msg);
  }
  for (size_t i : doomed) {
    c.work.assocs[i].set_deleted(true);
    c.work.assocs[i].set_modified(c.now);
  }
  // A user left without any association on an account loses it as default (as Slurm shows).
  for (auto& u : c.work.users) {
    if (u.deleted() || u.default_account().empty()) continue;
    bool has = false;
    for (const auto& a : c.work.assocs) {
      if (!a.deleted() && a.user() == u.name() && a.account() == u.default_account()) has = true;
    }
    if (!has) u.clear_default_account();
  }
  return Status::Ok();
}

// Every association below account `acct` on `cluster` (users and sub-accounts, recursively).
void CollectSubtree(const AssocState& s, const std::string& cluster, const std::string& acct,
                    std::set<size_t>* out, int depth = 0) {
  if (depth > 64) return;
  for (size_t i = 0; i < s.assocs.size(); ++i) {
    const pb::AcctAssoc& a = s.assocs[i];
    if (a.deleted() || a.cluster() != cluster) continue;
    if (a.user().empty() && a.account() == acct) {
      out->insert(i);
    } else if (!a.user().empty() && a.account() == acct) {
      out->insert(i);
    } else if (a.user().empty() && a.parent_account() == acct && !out->count(i)) {
      CollectSubtree(s, cluster, a.account(), out, depth + 1);
    }
  }
}

Status DeleteAccounts(Ctx& c) {
  Cond cond;
  if (Status st = ParseWhere(c, K::kAccount,
                             {K::kCluster, K::kParent, K::kDescription, K::kOrganization}, &cond);
      !st.ok())
    return st;
  if (Status st = NeedConditions(cond); !st.ok()) return st;
  if (!c.IsOperator()) return c.Denied();
  std::vector<std::string> names;
  std::set<size_t> doomed;
  for (const auto& acct : c.work.accounts) {
    if (acct.deleted() || !Match(cond.names, acct.name()) ||
        !Match(cond.descriptions, acct.description()) ||
        !Match(cond.organizations, acct.organization()))
      continue;
    if (acct.name() == "root") return Fail(" You can't remove the root account");
    bool any = false;
    for (const auto& a : c.work.assocs) {
      if (a.deleted() || !a.user().empty() || a.account() != acct.name() ||
          !Match(cond.clusters, a.cluster()) || !Match(cond.parents, a.parent_account()))
        continue;
      CollectSubtree(c.work, a.cluster(), acct.name(), &doomed);
      any = true;
    }
    if (any || (cond.clusters.empty() && cond.parents.empty())) names.push_back(acct.name());
  }
  if (names.empty()) {
    c.Line(" Nothing deleted");
    return Status::Ok();
  }
  if (Status st = RemoveAssocs(c, doomed); !st.ok()) return st;
  for (auto& acct : c.work.accounts) {
    if (acct.deleted() || !Contains(names, acct.name())) continue;
    bool live = false;
    for (const auto& a : c.work.assocs) live = live || (!a.deleted() && a.account() == acct.name());
    if (!live) acct.set_deleted(true);  // no cluster keeps it
  }
  std::sort(names.begin(), names.end());
  c.Line(" Deleting accounts...");
  for (const auto& n : names) c.Line("  " + n);
  return Status::Ok();
}

Status DeleteUsers(Ctx& c) {
  Cond cond;
  if (Status st = ParseWhere(
          c, K::kUser,
          {K::kCluster, K::kAccount, K::kPartition, K::kAdminLevel, K::kDefaultAccount}, &cond);
      !st.ok())
    return st;
  if (Status st = NeedConditions(cond); !st.ok()) return st;
  bool op = c.IsOperator();
  bool partial = !cond.clusters.empty() || !cond.accounts.empty() || !cond.partitions.empty();
  std::set<size_t> doomed;
  std::vector<std::string> users, objects;
  for (const auto& u : c.work.users) {
    if (u.deleted() || !Match(cond.names, u.name())) continue;
    bool ok = false;
    if (cond.admin_level && ParseAdminLevel(u.admin_level(), &ok) != *cond.admin_level) continue;
    bool any = false;
    for (size_t i = 0; i < c.work.assocs.size(); ++i) {
      const pb::AcctAssoc& a = c.work.assocs[i];
      if (a.deleted() || a.user() != u.name() || !Match(cond.clusters, a.cluster()) ||
          !Match(cond.accounts, a.account()) || !Match(cond.partitions, a.partition()))
        continue;
      if (!op && !c.Coordinates(a.cluster(), a.account())) return c.Denied();
      doomed.insert(i);
      objects.push_back(AssocObject(a));
      any = true;
    }
    if (!partial) {
      if (!op) return c.Denied();
      users.push_back(u.name());
    } else if (!any) {
      continue;
    }
  }
  if (users.empty() && doomed.empty()) {
    c.Line(" Nothing deleted");
    return Status::Ok();
  }
  if (partial) {
    if (Status st = RemoveAssocs(c, doomed); !st.ok()) return st;
    c.Line(" Deleting user associations...");
    for (const auto& o : objects) c.Line("  " + o);
    return Status::Ok();
  }
  for (size_t i : doomed) {
    c.work.assocs[i].set_deleted(true);
    c.work.assocs[i].set_modified(c.now);
  }
  for (auto& u : c.work.users) {
    if (!u.deleted() && Contains(users, u.name())) u.set_deleted(true);
  }
  c.Line(" Deleting users...");
  for (const auto& n : users) c.Line("  " + n);
  return Status::Ok();
}

Status DeleteQos(Ctx& c) {
  Cond cond;
  if (Status st = ParseWhere(c, K::kName, {K::kId, K::kDescription}, &cond); !st.ok()) return st;
  if (Status st = NeedConditions(cond); !st.ok()) return st;
  if (!c.IsOperator()) return c.Denied();
  std::vector<std::string> names;
  for (auto& q : c.work.qos) {
    if (q.deleted() || !Match(cond.names, q.name()) || !Match(cond.ids, std::to_string(q.id())) ||
        !Match(cond.descriptions, q.description()))
      continue;
    q.set_deleted(true);
    names.push_back(q.name());
  }
  if (names.empty()) {
    c.Line(" Nothing deleted");
    return Status::Ok();
  }
  // Nothing may keep naming a deleted QOS.
  auto scrub = [&](auto* list) {
    std::vector<std::string> keep;
    for (const auto& n : *list) {
      if (!Contains(names, n)) keep.push_back(n);
    }
    if (keep.size() == static_cast<size_t>(list->size())) return;
    list->Clear();
    for (auto& n : keep) *list->Add() = n;
  };
  for (auto& a : c.work.assocs) {
    scrub(a.mutable_qos());
    if (Contains(names, a.default_qos())) a.clear_default_qos();
  }
  for (auto& q : c.work.qos) scrub(q.mutable_preempt());
  c.Line(" Deleting QOS(s)...");
  for (const auto& n : names) c.Line("  " + n);
  return Status::Ok();
}

Status DeleteClusters(Ctx& c) {
  Cond cond;
  if (Status st = ParseWhere(c, K::kCluster, {}, &cond); !st.ok()) return st;
  if (Status st = NeedConditions(cond); !st.ok()) return st;
  if (!c.IsOperator()) return c.Denied();
  std::vector<std::string> names;
  for (auto& cl : c.work.clusters) {
    if (cl.deleted() || !Match(cond.names, cl.name())) continue;
    cl.set_deleted(true);
    names.push_back(cl.name());
    for (auto& a : c.work.assocs) {
      if (!a.deleted() && a.cluster() == cl.name()) {
        a.set_deleted(true);
        a.set_modified(c.now);
      }
    }
  }
  if (names.empty()) {
    c.Line(" Nothing deleted");
    return Status::Ok();
  }
  c.Line(" Deleting clusters...");
  for (const auto& n : names) c.Line("  " + n);
  return Status::Ok();
}

Status DeleteCoordinators(Ctx& c) {
  Cond cond;
  if (Status st = ParseWhere(c, K::kUser, {K::kAccount}, &cond); !st.ok()) return st;
  if (Status st = NeedConditions(cond); !st.ok()) return st;
  if (!c.IsOperator()) return c.Denied();
  std::vector<std::string> objects;
  for (auto& u : c.work.users) {
    if (u.deleted() || !Match(cond.names, u.name())) continue;
    std::vector<std::string> keep;
    for (const auto& a : u.coordinator_of()) {
      if (Match(cond.accounts, a)) {
        objects.push_back("U = " + Pad(u.name(), 9) + " A = " + a);
      } else {
        keep.push_back(a);
      }
    }
    u.clear_coordinator_of();
    for (auto& a : keep) u.add_coordinator_of(a);
  }
  if (objects.empty()) {
    c.Line(" Nothing deleted");
    return Status::Ok();
  }
  c.Line(" Removed Coordinators (sub accounts not listed)...");
  for (const auto& o : objects) c.Line("  " + o);
  return Status::Ok();
}

}  // namespace

// ---- Dispatch ---------------------------------------------------------------------------------

Result<pb::AcctAdminResponse> ApplyAdmin(AssocState& state, const pb::AcctAdminRequest& req,
                                         const AdminCaller& caller, int64_t now,
                                         AssocChanges* changes) {
  Ctx c{state, req, caller, now, CanonEntity(req.entity()), {}};
  const std::string& e = c.entity;
  Status st;
  switch (req.verb()) {
    case pb::AcctAdminRequest::ADD:
      if (e == "account")
        st = AddAccounts(c);
      else if (e == "user")
        st = AddUsers(c);
      else if (e == "qos")
        st = AddQos(c);
      else if (e == "cluster")
        st = AddClusters(c);
      else if (e == "coordinator")
        st = AddCoordinators(c);
      else
        st = Fail(
            "No valid entity in add command\nInput line must include \"Account\", "
            "\"Cluster\", \"Coordinator\", \"Federation\", \"QOS\", \"Resource\", or "
            "\"User\"");
      break;
    case pb::AcctAdminRequest::MODIFY:
      if (e == "account")
        st = ModifyAccounts(c);
      else if (e == "user")
        st = ModifyUsers(c);
      else if (e == "qos")
        st = ModifyQos(c);
      else if (e == "cluster")
        st = ModifyClusters(c);
      else if (e == "association")
        st = ModifyAssocs(c);
      else
        st = Fail(
            "No valid entity in modify command\nInput line must include \"Account\", "
            "\"Association\", \"Cluster\", \"QOS\", or \"User\"");
      break;
    case pb::AcctAdminRequest::DELETE:
      if (e == "account")
        st = DeleteAccounts(c);
      else if (e == "user")
        st = DeleteUsers(c);
      else if (e == "qos")
        st = DeleteQos(c);
      else if (e == "cluster")
        st = DeleteClusters(c);
      else if (e == "coordinator")
        st = DeleteCoordinators(c);
      else
        st = Fail(
            "No valid entity in delete command\nInput line must include \"Account\", "
            "\"Cluster\", \"Coordinator\", \"QOS\", or \"User\"");
      break;
    default:
      st = Fail(" Unknown request");
  }
  if (!st.ok()) return st;
  AssocChanges local;
  Diff(state, c.work, &local);
  c.resp.set_changed(static_cast<uint32_t>(local.clusters.size() + local.accounts.size() +
                                           local.users.size() + local.assocs.size() +
                                           local.qos.size()));
  if (!local.empty() && !req.dry_run()) {
    c.work.version = state.version + 1;
    state = std::move(c.work);
    if (changes) *changes = std::move(local);
  }
  return std::move(c.resp);
}

// ---- show -------------------------------------------------------------------------------------

namespace {

// Association indexes in Slurm's lft order: per cluster, each account, then its users, then its
// sub-accounts; rows not reachable from a root come last.
std::vector<size_t> HierOrder(const AssocState& s, bool with_deleted) {
  std::vector<size_t> out;
  std::set<size_t> seen;
  auto live = [&](const pb::AcctAssoc& a) { return with_deleted || !a.deleted(); };
  std::function<void(const std::string&, size_t, int)> walk = [&](const std::string& cl, size_t idx,
                                                                  int depth) {
    if (depth > 64 || seen.count(idx)) return;
    out.push_back(idx);
    seen.insert(idx);
    const std::string& acct = s.assocs[idx].account();
    std::vector<size_t> users, subs;
    for (size_t i = 0; i < s.assocs.size(); ++i) {
      const auto& a = s.assocs[i];
      if (!live(a) || a.cluster() != cl || seen.count(i)) continue;
      if (!a.user().empty() && a.account() == acct) users.push_back(i);
      if (a.user().empty() && a.parent_account() == acct && a.account() != acct) subs.push_back(i);
    }
    std::sort(users.begin(), users.end(), [&](size_t x, size_t y) {
      return std::tie(s.assocs[x].user(), s.assocs[x].partition()) <
             std::tie(s.assocs[y].user(), s.assocs[y].partition());
    });
    std::sort(subs.begin(), subs.end(),
              [&](size_t x, size_t y) { return s.assocs[x].account() < s.assocs[y].account(); });
    for (size_t u : users) {
      out.push_back(u);
      seen.insert(u);
    }
    for (size_t sub : subs) walk(cl, sub, depth + 1);
  };
  std::vector<std::string> clusters;
  for (const auto& a : s.assocs) {
    if (live(a) && !Contains(clusters, a.cluster())) clusters.push_back(a.cluster());
  }
  std::sort(clusters.begin(), clusters.end());
  for (const auto& cl : clusters) {
    for (size_t i = 0; i < s.assocs.size(); ++i) {
      const auto& a = s.assocs[i];
      if (live(a) && a.cluster() == cl && a.user().empty() && a.parent_account().empty())
        walk(cl, i, 0);
    }
  }
  for (size_t i = 0; i < s.assocs.size(); ++i) {
    if (live(s.assocs[i]) && !seen.count(i)) out.push_back(i);
  }
  return out;
}

// Fills what a row inherits from its parents (Slurm shows these unless WOPLimits).
void Inherit(const AssocState& s, pb::AcctAssoc* a) {
  pb::AcctLimits* l = a->mutable_limits();
  const pb::AcctAssoc* p = ParentAssoc(s, *a);
  for (int depth = 0; p && depth < 64; ++depth, p = ParentAssoc(s, *p)) {
    const pb::AcctLimits& pl = p->limits();
    if (!l->has_max_jobs() && pl.has_max_jobs()) l->set_max_jobs(pl.max_jobs());
    if (!l->has_max_submit_jobs() && pl.has_max_submit_jobs())
      l->set_max_submit_jobs(pl.max_submit_jobs());
    if (!l->has_max_wall_minutes() && pl.has_max_wall_minutes())
      l->set_max_wall_minutes(pl.max_wall_minutes());
    if (l->max_tres_per_job().empty()) l->set_max_tres_per_job(pl.max_tres_per_job());
    if (l->max_tres_per_node().empty()) l->set_max_tres_per_node(pl.max_tres_per_node());
    if (l->max_tres_mins_per_job().empty())
      l->set_max_tres_mins_per_job(pl.max_tres_mins_per_job());
    if (a->qos_size() == 0) *a->mutable_qos() = p->qos();
    if (a->default_qos().empty()) a->set_default_qos(p->default_qos());
    if (a->priority() < 0 && p->priority() >= 0) a->set_priority(p->priority());
  }
}

}  // namespace

Result<pb::AcctShowResponse> ShowAdmin(const AssocState& state, const pb::AcctShowRequest& req) {
  std::string e = CanonEntity(req.entity());
  bool with_deleted = req.with_deleted();
  Cond cond;
  bool only_defaults = false, wop = false;
  for (const std::string& n : req.names()) AddAll(&cond.names, n, true);
  for (const auto& kv : req.where()) {
    std::string key = Lower(Trim(kv.key()));
    K k = KeyOf(key);
    if ((e == "user" && k == K::kUser) || (e == "account" && k == K::kAccount) ||
        (e == "cluster" && k == K::kCluster))
      k = K::kName;
    if (key == "onlydefaults") {
      only_defaults = true;
      continue;
    }
    if (key == "woplimits" || key == "wopinfo") {
      wop = true;
      continue;
    }
    if (key == "wolimits" || key == "tree" || key == "withassoc" || key == "withsubaccounts" ||
        key == "withcoord" || key == "withrawqoslevel")
      continue;
    switch (k) {
      case K::kName:
        AddAll(&cond.names, kv.value(), true);
        break;
      case K::kCluster:
        AddAll(&cond.clusters, kv.value(), true);
        break;
      case K::kAccount:
        AddAll(&cond.accounts, kv.value(), true);
        break;
      case K::kUser:
        AddAll(&cond.users, kv.value(), true);
        break;
      case K::kPartition:
        AddAll(&cond.partitions, kv.value(), false);
        break;
      case K::kParent:
        AddAll(&cond.parents, kv.value(), true);
        break;
      case K::kId:
        AddAll(&cond.ids, kv.value(), false);
        break;
      case K::kDescription:
        cond.descriptions.push_back(kv.value());
        break;
      case K::kOrganization:
        cond.organizations.push_back(kv.value());
        break;
      case K::kWithDeleted:
        with_deleted = true;
        break;
      case K::kDefaultAccount:
        break;
      case K::kAdminLevel: {
        bool ok = false;
        cond.admin_level = ParseAdminLevel(kv.value(), &ok);
        if (!ok) return Fail(" Invalid AdminLevel: " + kv.value());
        break;
      }
      default:
        return UnknownCondition(kv);
    }
  }
  pb::AcctShowResponse resp;
  auto alive = [&](const auto& row) { return with_deleted || !row.deleted(); };
  // The associations matching the association conditions, in hierarchical order.
  auto assocs = [&](const std::vector<std::string>& accounts, const std::vector<std::string>& users,
                    bool users_only) {
    for (size_t i : HierOrder(state, with_deleted)) {
      pb::AcctAssoc a = state.assocs[i];
      if (!Match(cond.clusters, a.cluster()) || !Match(accounts, a.account()) ||
          !Match(cond.partitions, a.partition()) || !Match(cond.parents, a.parent_account()) ||
          !Match(cond.ids, std::to_string(a.id())))
        continue;
      if (!users.empty() && (a.user().empty() || !Contains(users, a.user()))) continue;
      if (users_only && a.user().empty()) continue;
      a.set_is_default(IsDefaultAssoc(state, a));
      if (only_defaults && !a.is_default()) continue;
      if (!wop) Inherit(state, &a);
      *resp.add_assocs() = std::move(a);
    }
  };
  if (e == "cluster") {
    for (const auto& c : state.clusters) {
      if (alive(c) && Match(cond.names, c.name())) *resp.add_clusters() = c;
    }
    for (const auto& a : state.assocs) {  // the root associations carry the cluster limits
      if (!a.deleted() && a.account() == "root" && a.user().empty() &&
          Match(cond.names, a.cluster()))
        *resp.add_assocs() = a;
    }
  } else if (e == "account") {
    std::vector<std::string> names;
    for (const auto& a : state.accounts) {
      if (!alive(a) || !Match(cond.names, a.name()) || !Match(cond.descriptions, a.description()) ||
          !Match(cond.organizations, a.organization()))
        continue;
      *resp.add_accounts() = a;
      names.push_back(a.name());
    }
    std::sort(resp.mutable_accounts()->begin(), resp.mutable_accounts()->end(),
              [](const auto& x, const auto& y) { return x.name() < y.name(); });
    if (req.with_assoc() && !names.empty()) assocs(names, cond.users, false);
  } else if (e == "user") {
    std::vector<std::string> names;
    for (const auto& u : state.users) {
      bool ok = false;
      if (!alive(u) || !Match(cond.names, u.name())) continue;
      if (cond.admin_level && ParseAdminLevel(u.admin_level(), &ok) != *cond.admin_level) continue;
      *resp.add_users() = u;
      names.push_back(u.name());
    }
    std::sort(resp.mutable_users()->begin(), resp.mutable_users()->end(),
              [](const auto& x, const auto& y) { return x.name() < y.name(); });
    if (req.with_assoc() && !names.empty()) assocs(cond.accounts, names, true);
  } else if (e == "qos") {
    for (const auto& q : state.qos) {
      if (alive(q) && Match(cond.names, q.name()) && Match(cond.ids, std::to_string(q.id())))
        *resp.add_qos() = q;
    }
  } else if (e == "association") {
    std::vector<std::string> users = cond.users;
    for (const auto& n : cond.names) users.push_back(n);  // bare words name users
    assocs(cond.accounts, users, false);
  } else if (e == "tres") {
    std::set<std::string> extra;
    auto scan = [&](const std::string& spec) {
      for (const std::string& item : Split(spec)) {
        std::string name = Lower(item.substr(0, item.find('=')));
        if (TresRank(name) == 100 && ValidTresName(name)) extra.insert(name);
      }
    };
    auto scan_limits = [&](const pb::AcctLimits& l) {
      for (const std::string* s :
           {&l.grp_tres(), &l.grp_tres_mins(), &l.grp_tres_run_mins(), &l.max_tres_per_job(),
            &l.max_tres_per_node(), &l.max_tres_mins_per_job(), &l.max_tres_per_user(),
            &l.min_tres_per_job()})
        scan(*s);
    };
    for (const auto& c : state.clusters) scan(c.tres());
    for (const auto& a : state.assocs) scan_limits(a.limits());
    for (const auto& q : state.qos) scan_limits(q.limits());
    for (const char* t : kStdTres) resp.add_tres(t);
    for (const auto& t : extra) resp.add_tres(t);
  } else {
    return Fail("sacctmgr show " + req.entity() + " is not supported by shoaldbd");
  }
  return resp;
}

// ---- Snapshot ---------------------------------------------------------------------------------

pb::AssocSnapshot SnapshotFor(const AssocState& state, const std::string& cluster_in) {
  std::string cluster = Lower(cluster_in);
  pb::AssocSnapshot snap;
  snap.set_version(state.version);
  for (const auto& a : state.assocs) {
    if (a.deleted() || a.cluster() != cluster) continue;
    pb::AcctAssoc* out = snap.add_assocs();
    *out = a;
    out->set_is_default(IsDefaultAssoc(state, a));
  }
  for (const auto& u : state.users) {
    if (!u.deleted()) *snap.add_users() = u;
  }
  for (const auto& a : state.accounts) {
    if (!a.deleted()) *snap.add_accounts() = a;
  }
  for (const auto& q : state.qos) {
    if (!q.deleted()) *snap.add_qos() = q;
  }
  return snap;
}

}  // namespace shoal::dbd
